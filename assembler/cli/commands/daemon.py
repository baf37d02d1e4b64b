"""`assemble daemon`: the workspace's daemon (`--all`: every workspace's), until SIGTERM or
Ctrl-C."""

from __future__ import annotations

import argparse
import os

from assembler.cli.commands.once import explicit_transcripts
from assembler.cli.common import load
from assembler.daemon.fleet import run_fleet
from assembler.daemon.service import configure_logging, run_daemon
from assembler.errors import AssemblerError
from assembler.hosts.registry import HOSTS


def run(args: argparse.Namespace) -> int:
    if args.all:
        if args.workspace is not None or getattr(args, "transcripts", None):
            raise AssemblerError(
                "assemble daemon --all serves every workspace: leave out --workspace and "
                "--transcripts (or run assemble daemon --workspace W for one)"
            )
        configure_logging(args.verbose, args.quiet)
        run_fleet(HOSTS, args.config, os.environ)
        return 0
    config = load(args)
    globs = explicit_transcripts(args)
    configure_logging(args.verbose, args.quiet)
    run_daemon(config, hosts=HOSTS, transcript_globs=globs)
    return 0
