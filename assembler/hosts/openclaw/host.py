"""OpenClaw as the core sees it: its session folders and store, its formats, and the
scratchpad entries its own tool keeps in the sessions."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.hosts.host import PlainHost
from assembler.hosts.openclaw.entries import scratchpad_entries
from assembler.hosts.openclaw.reader import OpenClawReader
from assembler.hosts.openclaw.receipts import openclaw_turns
from assembler.hosts.openclaw.sessions import (
    host_session_files,
    is_session_artifact,
    openclaw_sources,
    openclaw_workspaces,
)
from assembler.hosts.openclaw.store import SQLITE_SUFFIXES, read_store
from assembler.transcripts.reader import SQLITE_MAGIC

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.delivery.turns import Turn
    from assembler.pad.sections import ExternalEntries
    from assembler.transcripts.hosts import StoreReader
    from assembler.transcripts.reader import Reader, SourceReport

# Its formats' names, as `transcripts.format` names them: the session files, and the store.
OPENCLAW: Final = "openclaw"
OPENCLAW_STORE: Final = "openclaw-sqlite"


# OpenClaw's state folders (and its earlier names'), and the workspace folders in them.
_STATE_FOLDER = re.compile(r"\A\.(?:openclaw|clawdbot|moltbot)(?:[-_.][\w.-]+)?\Z")
_WORKSPACE_FOLDER = re.compile(r"\Aworkspace(?:[-_][\w.-]+)?\Z")


class OpenClaw(PlainHost):
    """OpenClaw 2026.3 to 2026.9, and pi, whose session files it shares."""

    label = "OpenClaw"
    formats: tuple[str, ...] = (OPENCLAW, OPENCLAW_STORE)
    # Where `sources` finds a workspace's sessions, as the docs' table of the hosts says it.
    sessions_at = (
        "the session files and the SQLite store (`~/.openclaw/agents/<id>/`) of the agents "
        "whose workspace it is in OpenClaw's config (every agent when it names none)"
    )
    store_formats: tuple[str, ...] = (OPENCLAW_STORE,)
    reader_class: type[Reader] = OpenClawReader

    def sources(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        return openclaw_sources(workspace, environ)

    def claims(self, line: Mapping[str, Any]) -> str | None:
        kind = line.get("type")
        if kind == "session" or (kind == "message" and isinstance(line.get("message"), dict)):
            return OPENCLAW
        if isinstance(kind, str) and "id" in line and "parentId" in line:
            return OPENCLAW
        return None

    def is_side_file(self, folder: Path, name: str, cache: dict[Any, Any]) -> bool:
        if is_session_artifact(name):
            return True
        if not name.endswith(".jsonl"):
            return False
        key = ("openclaw host sessions", str(folder))
        if key not in cache:
            cache[key] = host_session_files(folder)
        return name in cache[key]

    def store_reader(self, path: Path, magic: bytes, fmt: str) -> StoreReader | None:
        database = magic == SQLITE_MAGIC or path.suffix.lower() in SQLITE_SUFFIXES
        if fmt == OPENCLAW_STORE or (fmt == "auto" and database):
            return read_store
        return None

    def section_entries(
        self, config: Config, sources: Sequence[SourceReport], now: datetime
    ) -> ExternalEntries | None:
        if not config.agent.import_openclaw:
            return None
        paths = [Path(s.path) for s in sources if s.format in self.formats and not s.error]
        return scratchpad_entries(paths, now) if paths else None

    def delivery_turns(self, path: Path) -> tuple[str, list[Turn]] | None:
        """The session's turns, with what plugins added before each prompt by the host's own
        trace of what it submitted (for a store, its newest session a human speaks in)."""
        return openclaw_turns(path)

    def workspaces(self, environ: Mapping[str, str]) -> list[Path]:
        """Every agent's workspace that OpenClaw's config names."""
        return openclaw_workspaces(environ)

    def names_project(self, cwd: str) -> bool:
        # OpenClaw records its workspace as the cwd of every session (`~/.openclaw/workspace`,
        # `workspace-<agent>`, under any state folder: `.openclaw-dev`, a profile's, the older
        # `.clawdbot`): that names no project.
        parts = [part.lower() for part in re.split(r"[\\/]+", cwd) if part]
        if any(_STATE_FOLDER.match(part) for part in parts[:-1]):
            return False
        return not (parts and _WORKSPACE_FOLDER.match(parts[-1]))


HOST: Final = OpenClaw()
