"""The defaults of an agent host (`PlainHost`: what the core asks of a host,
`assembler.assembly.hosts.Host`, answered for one that lacks it) and the home folder the hosts'
settings name. The core sees generic messages and entries, never a host's name; the hosts are
listed in `assembler.hosts.registry` and passed in to the code that reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.transcripts.hosts import StoreReader

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.delivery.turns import Turn
    from assembler.pad.sections import ExternalEntries
    from assembler.transcripts.reader import SourceReport


class PlainHost:
    """The answers of a host that keeps no session database, writes nothing beside its
    sessions, holds no scratchpad entries for the agent's sections and records working folders
    as they are: the defaults a host overrides where it differs."""

    store_formats: tuple[str, ...] = ()

    def looked(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        return []

    def is_side_file(self, folder: Path, name: str, cache: dict[Any, Any]) -> bool:
        return False

    def store_reader(self, path: Path, magic: bytes, fmt: str) -> StoreReader | None:
        return None

    def section_entries(
        self, config: Config, sources: Sequence[SourceReport], now: datetime
    ) -> ExternalEntries | None:
        return None

    def names_project(self, cwd: str) -> bool:
        return True

    def workspaces(self, environ: Mapping[str, str]) -> list[Path]:
        return []

    def project_notes(self, root: Path, environ: Mapping[str, str]) -> list[Path]:
        return []

    if TYPE_CHECKING:  # each host's own (`SessionHost.sources`)

        def sources(
            self, workspace: Path, state_dir: Path, environ: Mapping[str, str]
        ) -> list[str]: ...

    def delivery_sources(
        self, workspace: Path, state_dir: Path, environ: Mapping[str, str]
    ) -> list[str]:
        return self.sources(workspace, state_dir, environ)

    def delivery_turns(self, path: Path) -> tuple[str, list[Turn]] | None:
        return None


def user_home(environ: Mapping[str, str]) -> str:
    """Given the environment a host runs with, return the user's home: `$HOME`, else what `~`
    is for this process."""
    return environ.get("HOME", "").strip() or os.path.expanduser("~")


def expand_home(path: str, environ: Mapping[str, str]) -> str:
    """Given a path from a host's setting and that environment, return it with a leading `~`
    (the user's own home only: "~" or "~/...") put as that environment's home."""
    if path == "~" or path.startswith("~/"):
        return user_home(environ) + path[1:]
    return path
