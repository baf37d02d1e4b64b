"""What the core asks of an agent host: where it keeps a workspace's sessions, which of its
files and database rows are sessions, a reader for its format, and the section entries its
sessions hold. The core sees generic messages and entries, never a host's name; the hosts are
listed in `assembler.hosts.registry`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.pad.sections import ExternalEntries
    from assembler.transcripts.reader import Outcome, Reader, SourceReport


# Given a session database, the window's cutoff and clock, the message limit and the number
# of sessions wanted, return their messages and a report of what was read.
StoreReader = Callable[["Path", "datetime | None", "datetime", int, int], "Outcome"]


class Host(Protocol):
    """One agent host, as the transcripts, the assembly and the daemon use it."""

    label: str  # its name in messages: "OpenClaw"
    formats: tuple[str, ...]  # the transcript formats it writes (`transcripts.format`)
    store_formats: tuple[str, ...]  # those of them that are databases
    # What reads one session file of its formats, given the window (`registry.make_reader`).
    reader_class: type[Reader]

    def sources(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        """Given the workspace, its state folder and the environment, return globs (each
        matching only itself) of the places where the host keeps this workspace's sessions;
        only places that exist."""
        ...

    def claims(self, line: Mapping[str, Any]) -> str | None:
        """Given a parsed transcript line, return the host's format it belongs to, or None."""
        ...

    def is_side_file(self, folder: Path, name: str, cache: dict[Any, Any]) -> bool:
        """Given a file a transcript glob matched (its folder and name) and a cache that lives
        for one matching, return whether the host wrote it beside its sessions without it
        being one the human speaks in (run traces, copies, the host's own sessions)."""
        ...

    def store_reader(self, path: Path, magic: bytes, fmt: str) -> StoreReader | None:
        """Given a path, its first bytes and the format asked for, return how to read it if it
        is a database of the host's sessions, else None (it is read as a JSONL file)."""
        ...

    def section_entries(
        self, config: Config, sources: Sequence[SourceReport], now: datetime
    ) -> ExternalEntries | None:
        """Given the config, the transcript sources read and the clock, return the scratchpad
        entries the host's sessions hold for the agent's sections (written by `now`), or None
        when it keeps none or the config turns their import off."""
        ...

    def names_project(self, cwd: str) -> bool:
        """Given the working folder the host recorded for a session, return whether it names
        the human's project (rather than the host's own folder)."""
        ...


class PlainHost:
    """The answers of a host that keeps no session database, writes nothing beside its
    sessions, holds no scratchpad entries for the agent's sections and records working folders
    as they are: the defaults a host overrides where it differs."""

    store_formats: tuple[str, ...] = ()

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
