"""The CLI's commands of the agent's sections: `pad` (write, append, read, clear), `tool` (a
JSON tool call), `section` (sections other programs write) and `guidance`. The listing of all
sections and the guidance render templates, so they are imported by the commands that print
them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from assembler.cli.common import EXIT_USER_ERROR, load, print_answer, read_stdin, read_text
from assembler.config.schema import parse_duration
from assembler.errors import AssemblerError
from assembler.pad.journal import DEFAULT_SECTION
from assembler.pad.publish import scratchpad_with_ready
from assembler.pad.tool_calls import parse_call


def _cmd_pad(args: argparse.Namespace) -> int:
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
        from assembler.pad.guidance import listing_for

        sys.stdout.write(listing_for(config, pad.state()))
    else:
        print(answer.message, file=sys.stderr)
    return 0


def _cmd_tool(args: argparse.Namespace) -> int:
    call = parse_call(read_stdin("tool") if args.call == "-" else args.call)
    if call.ok:
        pad = scratchpad_with_ready(load(args))
        args_ = call.data["call"]
        answer = pad.session_call(args_) if args.session else pad.tool_call(args_)
    else:
        answer = call
    print(answer.to_json())
    return 0 if answer.ok else EXIT_USER_ERROR


def _cmd_section(args: argparse.Namespace) -> int:
    pad = scratchpad_with_ready(load(args))
    if args.section_command == "rm":
        return print_answer(pad.remove_section(args.name, source="cli"), args.json)
    ttl = None
    if args.ttl is not None:
        try:
            ttl = parse_duration(args.ttl)
        except ValueError as error:
            raise AssemblerError(f"--ttl: {error}") from error
    text = read_text(args.text, "section set")
    return print_answer(pad.set_section(args.name, text, ttl=ttl, source=args.source), args.json)


def _cmd_guidance(args: argparse.Namespace) -> int:
    from assembler.pad.guidance import guidance_for

    sys.stdout.write(guidance_for(load(args)))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "pad": _cmd_pad,
    "tool": _cmd_tool,
    "section": _cmd_section,
    "guidance": _cmd_guidance,
}
