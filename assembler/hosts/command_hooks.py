"""Command hooks in the shape of settings that two hosts share, `{event: [{"matcher"?,
"hooks": [{"type": "command", "command": "..."}]}]}`: their command lines, whether one is the
hook `assemble setup` prints for a workspace, and taking those out. Where the hooks live and
what goes with them is the host's own setup module's knowledge.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def hook_commands(hooks: Any) -> Iterator[str]:
    """Given the hooks of a settings file (any JSON value), yield the command lines of its
    command hooks; nothing where it is not in the shape above."""
    if not isinstance(hooks, dict):
        return
    for groups in hooks.values():
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str):
                    yield command


def _is_ours(hook: Any, host: str, workspace: Path) -> bool:
    """Whether a hook is the one setup prints for the host and the workspace."""
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (
        len(words) == 5
        and Path(words[0]).name == "assemble"
        and words[1:4] == ["hook", host, "--workspace"]
        and os.path.realpath(words[4]) == os.path.realpath(workspace)
    )


def strip_our_hooks(hooks: dict[Any, Any], host: str, workspace: Path) -> None:
    """Given the hooks of a settings file, the host's name and the workspace, delete from them
    the hooks of ours (the hook setup prints, `<...>/assemble hook HOST --workspace W` for
    this workspace, and nothing more), and each matcher group and event that held only those.
    Everything else stays as it was."""
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = [_without_ours(group, host, workspace) for group in groups]
        kept = [group for group in kept if group is not None]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def _without_ours(group: Any, host: str, workspace: Path) -> Any:
    """A matcher group without our hooks; None when it held only ours."""
    inner = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(inner, list):
        return group
    kept = [hook for hook in inner if not _is_ours(hook, host, workspace)]
    if len(kept) == len(inner):
        return group
    return {**group, "hooks": kept} if kept else None
