"""`assemble serve`: the local status page of a workspace."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from assembler.cli.common import load, parse_now
from assembler.clock import local_timezone
from assembler.serve.app import StatusServer, is_loopback


def run(args: argparse.Namespace) -> int:
    config = load(args)
    tz = local_timezone(config.time.timezone)
    fixed = parse_now(args.now, config) if args.now else None

    def clock() -> datetime:
        return fixed if fixed is not None else datetime.now(tz)

    if not is_loopback(args.host):
        print(
            f"assemble: warning: serving on {args.host}, reachable from other machines; the "
            "page shows what the human said and felt, and only the token guards it (plain "
            "HTTP, no TLS)",
            file=sys.stderr,
        )
    server = StatusServer(config, host=args.host, port=args.port, clock=clock)
    print(f"Status page of {config.workspace}:\n  {server.url}", flush=True)
    if server.everywhere:
        print(
            f"  (also reachable from other machines: this machine's address, port {server.port},"
            " with the same token)",
            flush=True,
        )
    print("(Ctrl-C stops it)", flush=True)
    server.run()
    return 0
