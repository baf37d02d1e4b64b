"""`assemble check`: whether SCRATCHPAD.md is fresh, as the exit code (0 fresh, 1 stale, 2 missing
or unreadable), and whether it reached the model: a line per session a hook served, and exit 4
when the newest turn of a fresh file's session got no block (a missed delivery); with
--explain, which turns missed and why."""

from __future__ import annotations

import argparse
import os

from assembler.cli.common import load, parse_now
from assembler.delivery.report import delivery_report, describe, has_record
from assembler.errors import ConfigError, WorkspaceError
from assembler.file.freshness import check_freshness

EXIT_MISSED = 4
# The sessions `check` names, the newest ones.
SHOWN_SESSIONS = 3
# The missed turns `check --explain` names in each, the newest ones.
SHOWN_MISSED = 10


def run(args: argparse.Namespace) -> int:
    try:
        config = load(args)
    except (WorkspaceError, ConfigError) as error:
        # Monitoring reads 1 as "stale"; a file that cannot even be located is "missing" (2).
        lines = str(error).splitlines()
        print(f"missing or unreadable: {' '.join(line.strip() for line in lines)}")
        return 2
    result = check_freshness(config.output_path, parse_now(args.now, config), config.output.ttl)
    print(result.message)
    if not has_record(config.state_dir):  # no hook ran here: nothing more to read
        return result.code
    # Here, not at the top: the hosts' readers are loaded only where a hook ran.
    from assembler.hosts.registry import HOSTS

    report = delivery_report(config.workspace, config.state_dir, HOSTS, os.environ)
    for session in report.sessions[-SHOWN_SESSIONS:]:
        print(describe(session))
        if args.explain:
            for mark in session.missed_marks[-SHOWN_MISSED:]:
                print(f"  missed {mark.at.astimezone():%Y-%m-%d %H:%M:%S}: {mark.why}")
    newest = report.sessions[-1] if report.sessions else None
    if result.code == 0 and newest is not None and newest in report.missed:
        print(
            f"missed delivery: the newest {newest.missed_last} turn(s) of the {newest.host} "
            "session got no scratchpad while the file was fresh; is the hook still in the "
            "host's settings? (assemble setup HOST prints it)"
        )
        return EXIT_MISSED
    return result.code
