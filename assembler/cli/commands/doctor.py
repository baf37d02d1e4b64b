"""`assemble doctor`: every link of the chain that carries the block to the model, a line each,
with the command that fixes a broken one; exit 0 only when every link holds."""

from __future__ import annotations

import argparse
import json

from assembler.cli.common import load, parse_now
from assembler.daemon.systemd import assemble_executable
from assembler.hosts.doctor import chain

_MARKS = {True: "ok  ", False: "FAIL", None: "--  "}


def run(args: argparse.Namespace) -> int:
    config = load(args)
    links = chain(config, assemble_executable(), parse_now(args.now, config))
    broken = [link for link in links if link.holds is False]
    if args.json:
        print(json.dumps({"ok": not broken, "links": [link.to_json() for link in links]}, indent=1))
        return 1 if broken else 0
    for link in links:
        print(f"{_MARKS[link.holds]} {link.name}: {link.state}")
        if link.holds is False and link.fix:
            print(f"     fix: {link.fix}")
    print(
        "every link holds"
        if not broken
        else f"{len(broken)} link(s) broken: {broken[0].name} first"
    )
    return 1 if broken else 0
