"""`assemble status`: every workspace known on this machine, the daemon that serves it and its
file's freshness (exit 1 when a served, awake workspace's file is stale or missing)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assembler.cli.common import parse_now
from assembler.config.files import load_config, user_state_dir
from assembler.config.projects import (
    announced_projects,
    project_config,
    registered_workspaces,
)
from assembler.daemon.fleet import read_fleet_record
from assembler.daemon.lock import lock_holder
from assembler.errors import AssemblerError
from assembler.file.freshness import check_freshness


@dataclass(frozen=True)
class Known:
    """One workspace as the status lists it."""

    workspace: str
    kind: str  # "set up", "project", or the host whose config names it
    served_by: str  # "daemon --all (pid N)", "daemon (pid N)", or "no daemon"
    resting: bool
    freshness: str  # `assemble check`'s line
    code: int  # `assemble check`'s exit code: 0 fresh, 1 stale, 2 missing


def _known(args: argparse.Namespace) -> tuple[list[Known], dict[str, Any] | None, list[Any]]:
    now = parse_now(getattr(args, "now", None), None)
    fleet_pid = lock_holder(user_state_dir())
    record = read_fleet_record() if fleet_pid else None
    served: dict[str, dict[str, Any]] = {
        os.path.realpath(entry["workspace"]): entry
        for entry in (record or {}).get("workspaces", [])
        if isinstance(entry, dict) and isinstance(entry.get("workspace"), str)
    }
    wanted: dict[str, tuple[Path, str]] = {}
    for folder in registered_workspaces():
        wanted.setdefault(os.path.realpath(folder), (folder, "set up"))
    for folder in announced_projects():
        wanted.setdefault(os.path.realpath(folder), (folder, "project"))
    for key, listed in served.items():
        wanted.setdefault(key, (Path(listed["workspace"]), str(listed.get("kind", ""))))
    known = []
    for key, (folder, kind) in wanted.items():
        entry: dict[str, Any] | None = served.get(key)
        try:
            if kind == "project":
                config = project_config(folder, args.config)
            else:
                config = load_config(folder, args.config)
        except AssemblerError as error:
            line = str(error).splitlines()[0]
            known.append(Known(str(folder), kind, "no daemon", False, f"not served: {line}", 2))
            continue
        if entry is not None:
            by = f"daemon --all (pid {fleet_pid})"
        elif pid := lock_holder(config.state_dir):
            by = f"daemon (pid {pid})"
        else:
            by = "no daemon"
        result = check_freshness(config.output_path, now, config.output.ttl)
        resting = bool(entry and entry.get("resting"))
        known.append(Known(str(folder), kind, by, resting, result.message, result.code))
    left_out = (record or {}).get("left_out", [])
    return known, record if fleet_pid else None, left_out if isinstance(left_out, list) else []


def run(args: argparse.Namespace) -> int:
    known, record, left_out = _known(args)
    failing = any(k.code != 0 and k.served_by != "no daemon" and not k.resting for k in known)
    if args.json:
        print(
            json.dumps(
                {
                    "daemon_all": record,
                    "workspaces": [asdict(k) for k in known],
                    "left_out": left_out,
                },
                indent=1,
            )
        )
        return 1 if failing else 0
    if record is not None:
        count = len(record.get("workspaces", []))
        pid, since = record.get("pid"), record.get("started")
        print(f"daemon --all: pid {pid}, since {since}, {count} served")
    else:
        print("daemon --all: not running (start it with: assemble daemon --all)")
    if not known:
        print("no workspaces known: set one up with assemble setup HOST (--all-projects)")
    for item in known:
        rest = ", resting" if item.resting else ""
        print(f"{item.workspace} ({item.kind}; {item.served_by}{rest}): {item.freshness}")
    for entry in left_out:
        if isinstance(entry, dict):
            print(f"left out {entry.get('workspace')}: {entry.get('why')}")
    return 1 if failing else 0
