"""The links of a host whose command hooks carry the block (Claude Code's settings.json,
Codex's hooks.json): the hooks that run `assemble hook HOST` for this workspace are in the
settings the host reads, and the program they run exists. A host none of whose hooks is there
and whose hook never ran here is not set up here: no link."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from assembler.errors import AssemblerError
from assembler.fsutil import load_json, read_regular
from assembler.hosts.command_hooks import our_handlers
from assembler.hosts.links import Link
from assembler.hosts.removal import SETTINGS_MAX_BYTES


def _hooks_of(path: Path) -> object:
    try:
        data = read_regular(path, limit=SETTINGS_MAX_BYTES, follow_links=True).data
        value = load_json(data) if data is not None else None
    except (AssemblerError, OSError, ValueError):
        return None
    return value.get("hooks") if isinstance(value, dict) else None


def hook_links(
    label: str,
    host: str,
    settings: Sequence[Path],
    workspace: Path | None,
    *,
    ran_here: bool,
    fix: str,
) -> list[Link]:
    """Given the host's label and its name on the hook's command line, the settings files it
    reads, the workspace (None: every project), whether its hook ever ran here, and the
    command that sets it up, return the links: the hooks in its settings, and the program they
    run."""
    found = [
        (path, event, hook["command"])
        for path in settings
        for event, _, hook in our_handlers(_hooks_of(path), host, workspace)
    ]
    if not found:
        if not ran_here:
            return []
        where = ", ".join(str(path) for path in settings)
        return [
            Link(
                f"{label} hooks",
                False,
                f"no hook in {where} runs assemble hook {host} for this workspace, though it "
                "ran here before",
                fix,
            )
        ]
    events = sorted({event for _, event, _ in found})
    files = sorted({str(path) for path, _, _ in found})
    links = [Link(f"{label} hooks", True, f"{', '.join(events)} in {', '.join(files)}")]
    programs = sorted({shlex.split(command)[0] for _, _, command in found})
    missing = [p for p in programs if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        links.append(
            Link(
                f"the program the {label} hooks run",
                False,
                f"{', '.join(missing)} is not an executable file (moved, or the install is gone)",
                fix,
            )
        )
    else:
        links.append(Link(f"the program the {label} hooks run", True, ", ".join(programs)))
    return links
