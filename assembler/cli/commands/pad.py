"""`assemble pad`: the agent's own sections, written, appended, read or cleared."""

from __future__ import annotations

import argparse
import sys

from assembler.cli.common import load, print_answer, read_text
from assembler.pad.guidance import listing_for
from assembler.pad.journal import DEFAULT_SECTION
from assembler.pad.publish import scratchpad_with_ready


def run(args: argparse.Namespace) -> int:
    config = load(args)
    pad = scratchpad_with_ready(config)
    action = args.pad_command
    if action in ("write", "append"):
        text = read_text(args.text, f"pad {action}")
        store = pad.write if action == "write" else pad.append
        section = DEFAULT_SECTION if args.section is None else args.section
        return print_answer(store(text, section=section, source="cli"), args.json)
    if action == "clear":
        return print_answer(pad.clear(args.section, source="cli"), args.json)
    answer = pad.read(args.section)
    if args.json or not answer.ok:
        return print_answer(answer, args.json)
    if args.section is not None:
        sys.stdout.write(answer.data["content"])  # exactly as written, nothing added
        if not answer.data["content"]:
            print(answer.message, file=sys.stderr)  # else an empty section looks like a failure
    elif answer.data["sections"] or answer.data["subsystem"]:
        sys.stdout.write(listing_for(config, pad.state()))
    else:
        print(answer.message, file=sys.stderr)
    return 0
