"""Command hooks in the shape of settings that two hosts share, `{event: [{"matcher"?,
"hooks": [{"type": "command", "command": "..."}]}]}`: their command lines, whether one is the
hook `assemble setup` prints for a workspace (or for every project, `--all-projects`), adding
ours without a second copy, and taking them out. Where the hooks live and what goes with them
is the host's own setup module's knowledge.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The flag of the hook that serves every project (`assemble hook HOST --all-projects`).
ALL_PROJECTS_FLAG = "--all-projects"


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


def _is_ours(hook: Any, host: str, workspace: Path | None) -> bool:
    """Whether a hook is the one setup prints for the host and the workspace (None: the one
    that serves every project, `hook HOST --all-projects`), run by any `assemble`."""
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words or Path(words[0]).name != "assemble":
        return False
    if workspace is None:
        return words[1:] == ["hook", host, ALL_PROJECTS_FLAG]
    return (
        len(words) == 5
        and words[1:4] == ["hook", host, "--workspace"]
        and os.path.realpath(words[4]) == os.path.realpath(workspace)
    )


def our_handlers(hooks: Any, host: str, workspace: Path | None) -> Iterator[tuple[str, Any, Any]]:
    """Given the hooks of a settings file (any JSON value), the host's name and the workspace
    (None: every project), yield each hook of ours as (event, its matcher group, the hook)."""
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                if _is_ours(hook, host, workspace):
                    yield event, group, hook


def strip_our_hooks(hooks: dict[Any, Any], host: str, workspace: Path | None) -> None:
    """Given the hooks of a settings file, the host's name and the workspace (None: every
    project), delete from them the hooks of ours (the hook setup prints, `<...>/assemble hook
    HOST --workspace W` for this workspace, or `<...>/assemble hook HOST --all-projects`, and
    nothing more), and each matcher group and event that held only those. Everything else
    stays as it was."""
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


def strip_settings_hooks(value: Any, host: str, workspace: Path | None) -> Any:
    """Given a settings file's JSON (its hooks under "hooks"), the host's name and the
    workspace (None: every project), return it without our hooks (`strip_our_hooks`), and
    without "hooks" when it held only those. Everything else stays as it was."""
    hooks = value.get("hooks") if isinstance(value, dict) else None
    if isinstance(hooks, dict) and hooks:
        strip_our_hooks(hooks, host, workspace)
        if len(hooks) == 0:
            del value["hooks"]
    return value


def _without_ours(group: Any, host: str, workspace: Path | None) -> Any:
    """A matcher group without our hooks; None when it held only ours."""
    inner = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(inner, list):
        return group
    kept = [hook for hook in inner if not _is_ours(hook, host, workspace)]
    if len(kept) == len(inner):
        return group
    return {**group, "hooks": kept} if kept else None


@dataclass(frozen=True)
class Placed:
    """Where a hook of ours is in a settings file's hooks after `add_hooks`: its event, the
    index of its matcher group in the event's list and its own in the group's, and whether
    `add_hooks` put it there (else it was there already)."""

    event: str
    group: int
    handler: int
    added: bool


def add_hooks(
    hooks: dict[str, Any], groups: Mapping[str, Sequence[dict[str, Any]]]
) -> list[Placed]:
    """Given the hooks of a settings file (changed in place) and matcher groups to add, each of
    one command hook, by event, append each group to its event's list unless a hook with the
    same command line is in that event already; return where each one is, in the order given.
    Everything else stays as it was. Raise ValueError if an event's entry is not a list."""
    placed = []
    for event, adding in groups.items():
        listed = hooks.setdefault(event, [])
        if not isinstance(listed, list):
            raise ValueError(f'"hooks.{event}" is not a list of matcher groups')
        for group in adding:
            [hook] = group["hooks"]
            found = _find(listed, hook["command"])
            if found is not None:
                placed.append(Placed(event, *found, added=False))
                continue
            listed.append(group)
            placed.append(Placed(event, len(listed) - 1, 0, added=True))
    return placed


def _find(groups: list[Any], command: str) -> tuple[int, int] | None:
    """The place (group, hook) of the first command hook of that command line, if any."""
    for at, group in enumerate(groups):
        inner = group.get("hooks") if isinstance(group, dict) else None
        for index, hook in enumerate(inner if isinstance(inner, list) else ()):
            if isinstance(hook, dict) and hook.get("command") == command:
                return at, index
    return None
