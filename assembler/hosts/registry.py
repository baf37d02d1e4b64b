"""The hosts this program knows, in the order their formats are told apart (the first that
claims a line wins), and the questions the core asks of all of them at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.hosts.claude_code.host import ClaudeCode
from assembler.hosts.codex.host import Codex
from assembler.hosts.generic import Generic
from assembler.hosts.host import Host, StoreReader
from assembler.hosts.openclaw.host import OpenClaw

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.pad.sections import ExternalEntries
    from assembler.transcripts.reader import Reader, SourceReport

HOSTS: Final[tuple[Host, ...]] = (OpenClaw(), ClaudeCode(), Codex(), Generic())
# The last host reads what no other claims, when a format is forced on it.
_FALLBACK: Final = HOSTS[-1]


def classify(value: object) -> str | None:
    """Given one parsed transcript line, return the format it belongs to, if it tells."""
    if not isinstance(value, dict):
        return None
    for host in HOSTS:
        fmt = host.claims(value)
        if fmt is not None:
            return fmt
    return None


def make_reader(
    fmt: str,
    source: str,
    cutoff: datetime | None,
    limit: int,
    session_id: str | None,
    until: datetime | None = None,
) -> Reader:
    """Given a format, return its reader: messages older than `cutoff` end the walk, messages
    stamped after `until` are not taken, at most `limit` are kept."""
    host = next((host for host in HOSTS if fmt in host.formats), _FALLBACK)
    return host.reader_class(source, cutoff, limit, session_id, until)


def default_sources(workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
    """Given the workspace, its state folder and the environment, return where the hosts keep
    its transcripts, for a config that names none: only places that exist, as globs that match
    only themselves."""
    return [source for host in HOSTS for source in host.sources(workspace, state_dir, environ)]


def is_side_file(folder: Path, name: str, cache: dict[Any, Any]) -> bool:
    """Given a file a transcript glob matched and a cache for one matching, return whether a
    host wrote it beside its sessions without it being one the human speaks in."""
    return any(host.is_side_file(folder, name, cache) for host in HOSTS)


def store_reader(path: Path, magic: bytes, fmt: str) -> StoreReader | None:
    """Given a path, its first bytes and the format asked for, return how to read it if it is
    a database of a host's sessions, else None."""
    for host in HOSTS:
        reader = host.store_reader(path, magic, fmt)
        if reader is not None:
            return reader
    return None


def store_formats() -> list[str]:
    """The formats of the hosts' session databases."""
    return [fmt for host in HOSTS for fmt in host.store_formats]


def section_entries(
    config: Config, sources: Sequence[SourceReport], now: datetime
) -> list[ExternalEntries]:
    """Given the config, the transcript sources read and the clock, return the scratchpad
    entries the hosts' sessions hold for the agent's sections."""
    found = (host.section_entries(config, sources, now) for host in HOSTS)
    return [entries for entries in found if entries is not None]


def names_project(cwd: str) -> bool:
    """Given a session's recorded working folder, return whether it names the human's project
    rather than a host's own folder."""
    return all(host.names_project(cwd) for host in HOSTS)


def host_names() -> str:
    """The hosts whose transcripts are recognised, for messages: "A, B or C"."""
    labels = [host.label for host in HOSTS]
    return ", ".join(labels[:-1]) + " or " + labels[-1]
