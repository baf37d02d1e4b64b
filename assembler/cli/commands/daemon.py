"""`assemble daemon`: the workspace's daemon, until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse

from assembler.cli.commands.once import explicit_transcripts
from assembler.cli.common import load
from assembler.daemon.service import configure_logging, run_daemon
from assembler.hosts.registry import HOSTS


def run(args: argparse.Namespace) -> int:
    config = load(args)
    globs = explicit_transcripts(args)
    configure_logging(args.verbose, args.quiet)
    run_daemon(config, hosts=HOSTS, transcript_globs=globs)
    return 0
