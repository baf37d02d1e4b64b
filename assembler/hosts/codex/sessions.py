"""Where Codex keeps a workspace's sessions: its rollout files,
`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` (`~/.codex` without CODEX_HOME).

A rollout belongs to the workspace when the working folder Codex recorded for it (`cwd` in
its first line, the `session_meta`; else in its first `turn_context`) is the workspace or a
folder inside it. The walk is bounded: it never follows a link to a folder, looks at the
newest rollouts only (by when they were last written: a resumed session is appended to its
own file), reads only each file's head, and returns a rollout only when it resolves inside
the sessions folder.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from assembler.config.projects import project_root
from assembler.fsutil import is_within, read_head, resolves_within
from assembler.hosts.host import expand_home, user_home
from assembler.hosts.session_cwd import HeadCwds, literal_cwd, named_cwd

# The rollouts whose heads are looked at, newest first, and the most returned.
MAX_CHECKED: Final = 256
MAX_SOURCES: Final = 32
# The most files the walk of the sessions folder lists before it stops (a huge history).
MAX_LISTED: Final = 20_000
# How much of a rollout's head is read for its working folder: `session_meta` comes first and
# names it before the host's long instructions, so the start of the first line tells.
_HEAD_BYTES: Final = 256 * 1024
_LINE_PARSED_BYTES: Final = 64 * 1024
# A line's start that says it is a `session_meta` or `turn_context` (its keys before the
# payload are short), and `"cwd":"<string>"` in its payload before any nested value.
_KIND_BYTES: Final = 512
_KIND = re.compile(rb'^\{[^{}\[\]]*"type"\s*:\s*"(?:session_meta|turn_context)"')
_PAYLOAD_CWD = re.compile(rb'"payload"\s*:\s*\{[^{}\[\]]*?"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_ROLLOUT = re.compile(r"^rollout-.*\.jsonl$")
_CWDS: Final = HeadCwds()


def codex_home(environ: Mapping[str, str]) -> Path:
    """Given the environment, return Codex's own folder: `$CODEX_HOME`, else `~/.codex`."""
    configured = environ.get("CODEX_HOME", "").strip()
    if configured:
        return Path(os.path.abspath(expand_home(configured, environ)))
    return Path(user_home(environ)) / ".codex"


def sessions_dir(environ: Mapping[str, str]) -> Path:
    """Given the environment, return the folder of Codex's rollouts."""
    return codex_home(environ) / "sessions"


def codex_sources(
    workspace: Path, environ: Mapping[str, str], *, own_project: bool = False
) -> list[str]:
    """Given the workspace, the environment and whether the workspace is a project of the
    all-projects setup, return the rollouts of Codex sessions whose working folder is the
    workspace or inside it (for a project: inside it and not in a repository nested in it,
    which is a project of its own), newest first, as globs that match only themselves (see
    the module's docstring for the bounds)."""
    root = sessions_dir(environ)
    try:
        real_root = Path(os.path.realpath(root))
        if not real_root.is_dir():
            return []
    except OSError:
        return []
    found: list[tuple[int, str]] = []
    for path in _rollouts(str(root)):
        try:
            found.append((os.stat(path).st_mtime_ns, path))
        except OSError:
            continue
    found.sort(reverse=True)
    workspace_real = os.path.realpath(workspace)
    sources: list[str] = []
    for _, path in found[:MAX_CHECKED]:
        if not resolves_within(Path(path), real_root):
            continue
        cwd = rollout_cwd(Path(path))
        if (
            cwd is not None
            and os.path.isabs(cwd)
            and is_within(os.path.realpath(cwd), workspace_real)
            and (not own_project or str(project_root(cwd)) == workspace_real)
        ):
            sources.append(glob.escape(path))
            if len(sources) >= MAX_SOURCES:
                break
    return sources


def _rollouts(root: str) -> Iterator[str]:
    """Given the sessions folder, yield its rollout files (at most MAX_LISTED), walking its
    folders without following a link to one."""
    listed = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif _ROLLOUT.match(entry.name) and entry.is_file():
                    listed += 1
                    if listed > MAX_LISTED:
                        return
                    yield entry.path
            except OSError:
                continue


def rollout_cwd(path: Path) -> str | None:
    """Given a rollout, return the working folder its `session_meta` (else its first
    `turn_context`) names, or None when its head names none or it cannot be read."""
    return _CWDS.get(path, _head_cwd)


def _head_cwd(path: Path) -> str | None:
    """Given a rollout, return the `cwd` of its first `session_meta` or `turn_context` line
    within its first bytes."""
    # Not blocking, and only a regular file: a named pipe there would stop every run.
    head, _ = read_head(path, _HEAD_BYTES)
    *complete, last = head.split(b"\n")
    for line in complete:
        line = line.strip()
        if len(line) <= _LINE_PARSED_BYTES:
            try:
                value: Any = json.loads(line) if line else None
            except (ValueError, RecursionError):
                continue
            cwd = _value_cwd(value)
        else:  # a long line: its start names the folder
            cwd = _start_cwd(line)
        if cwd is not None:
            return cwd
    return _start_cwd(last.strip())  # cut by the head's end


def _value_cwd(value: Any) -> str | None:
    if not isinstance(value, dict) or value.get("type") not in ("session_meta", "turn_context"):
        return None
    payload = value.get("payload")
    return named_cwd(payload.get("cwd")) if isinstance(payload, dict) else None


def _start_cwd(line: bytes) -> str | None:
    """Given the start of a long line, return the `cwd` of its payload, when the line is a
    `session_meta` or `turn_context` one and names it before any nested value."""
    start = line[:_LINE_PARSED_BYTES]
    if not _KIND.match(start[:_KIND_BYTES]):
        return None
    found = _PAYLOAD_CWD.search(start)
    return literal_cwd(found.group(1)) if found is not None else None
