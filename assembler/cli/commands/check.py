"""`assemble check`: whether SCRATCHPAD.md is fresh, as the exit code (0 fresh, 1 stale, 2 missing
or unreadable)."""

from __future__ import annotations

import argparse

from assembler.cli.common import load, parse_now
from assembler.errors import ConfigError, WorkspaceError
from assembler.file.freshness import check_freshness


def run(args: argparse.Namespace) -> int:
    try:
        config = load(args)
    except (WorkspaceError, ConfigError) as error:
        # Monitoring reads 1 as "stale"; a file that cannot even be located is "missing" (2).
        lines = str(error).splitlines()
        print(f"missing or unreadable: {' '.join(line.strip() for line in lines)}")
        return 2
    result = check_freshness(config.output_path, parse_now(args.now, config))
    print(result.message)
    return result.code
