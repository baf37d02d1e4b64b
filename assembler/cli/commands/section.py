"""`assemble section`: a section set or removed by another program (alerts, calendar)."""

from __future__ import annotations

import argparse

from assembler.cli.common import load, print_answer, read_text
from assembler.config.schema import parse_duration
from assembler.errors import AssemblerError
from assembler.pad.publish import scratchpad_with_ready


def run(args: argparse.Namespace) -> int:
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
