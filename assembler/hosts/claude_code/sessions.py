"""Where Claude Code keeps a workspace's transcripts: its projects folder, and the sessions
the hook recorded in the state folder (only those inside the projects folder are read).
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from assembler.fsutil import read_regular, resolves_within

# What the hook keeps in the state folder: {"<session id>": {"transcript_path", "cwd", "seen"}}.
HOOK_SESSIONS_NAME: Final = "claude-code-sessions.json"


_HOOK_SESSIONS_MAX_BYTES = 4 * 1024 * 1024


def projects_dir(environ: Mapping[str, str]) -> Path:
    """Given the environment, return Claude Code's transcript folder:
    `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    configured = environ.get("CLAUDE_CONFIG_DIR", "").strip()
    home = environ.get("HOME", "").strip() or os.path.expanduser("~")
    if configured:
        base = home + configured[1:] if configured.startswith("~") else configured
        return Path(os.path.abspath(base)) / "projects"
    return Path(home) / ".claude" / "projects"


def claude_code_sources(state_dir: Path, environ: Mapping[str, str]) -> list[str]:
    """Given the workspace's state folder and the environment, return the Claude Code
    transcripts the hook recorded there that exist and resolve inside Claude Code's projects
    folder; the agent can write the state folder, so a path leading anywhere else is ignored."""
    path = state_dir / HOOK_SESSIONS_NAME
    try:
        if os.lstat(path).st_size > _HOOK_SESSIONS_MAX_BYTES:
            return []
        snapshot = read_regular(path)
    except OSError:
        return []
    data = snapshot.data
    if data is None:
        return []
    try:
        sessions = json.loads(data)
    except (ValueError, RecursionError):
        return []
    if not isinstance(sessions, dict):
        return []
    root = Path(os.path.realpath(projects_dir(environ)))
    sources: list[str] = []
    for entry in sessions.values():
        transcript = entry.get("transcript_path") if isinstance(entry, dict) else None
        if not isinstance(transcript, str) or not os.path.isabs(transcript):
            continue
        candidate = Path(os.path.normpath(transcript))
        if (
            candidate.suffix == ".jsonl"
            and resolves_within(candidate, root)
            and candidate.is_file()
        ):
            sources.append(glob.escape(str(candidate)))
    return list(dict.fromkeys(sources))
