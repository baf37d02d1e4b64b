"""`assemble hook HOST`: what a host's hook adds before a prompt (the host's `hook` module)."""

from __future__ import annotations

import argparse
import sys

from assembler.cli.common import read_stdin
from assembler.hosts import registry


def run(args: argparse.Namespace) -> int:
    hook = registry.plugin(args.host).load("hook")
    # Only when asked: a host's hook that serves one workspace need not know the option.
    extra = {"all_projects": True} if args.all_projects else {}
    output = hook.run_hook(
        read_stdin(f"hook {args.host}"), workspace=args.workspace, config_path=args.config, **extra
    )
    sys.stdout.write(output)
    return 0
