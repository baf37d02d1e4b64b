"""`assemble tool`: one JSON scratchpad tool call, answered in JSON."""

from __future__ import annotations

import argparse

from assembler.cli.common import EXIT_USER_ERROR, load, read_stdin
from assembler.pad.publish import scratchpad_with_ready
from assembler.pad.tool_calls import parse_call


def run(args: argparse.Namespace) -> int:
    call = parse_call(read_stdin("tool") if args.call == "-" else args.call)
    if call.ok:
        pad = scratchpad_with_ready(load(args))
        args_ = call.data["call"]
        answer = pad.session_call(args_) if args.session else pad.tool_call(args_)
    else:
        answer = call
    print(answer.to_json())
    return 0 if answer.ok else EXIT_USER_ERROR
