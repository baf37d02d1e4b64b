"""What reading transcripts asks of the agent hosts it is given: where each keeps a workspace's
sessions, which files and database rows are sessions, which format a line belongs to and a
reader for it. The host-neutral code never lists the hosts: its callers pass them in (the
program passes `assembler.hosts.registry.HOSTS`), in the order their formats are told apart,
the first that claims a line winning and the last reading what no other claims.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from assembler.errors import TranscriptError
from assembler.transcripts.reader import Outcome, Reader

# Given a session database, the window's cutoff and clock, the message limit and the number
# of sessions wanted, return their messages and a report of what was read.
StoreReader = Callable[[Path, "datetime | None", datetime, int, int], Outcome]


class SessionHost(Protocol):
    """One agent host, as reading its sessions uses it."""

    label: str  # its name in messages: "OpenClaw"
    formats: tuple[str, ...]  # the transcript formats it writes (`transcripts.format`)
    store_formats: tuple[str, ...]  # those of them that are databases
    # What reads one session file of its formats, given the window (`make_reader`).
    reader_class: type[Reader]

    def sources(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        """Given the workspace, its state folder and the environment, return globs (each
        matching only itself) of the places where the host keeps this workspace's sessions;
        only places that exist."""
        ...

    def looked(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        """Given the same, return where the host looked beyond `sources` and why each place
        was skipped, a line each, for --explain (none for most hosts)."""
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

    def names_project(self, cwd: str) -> bool:
        """Given the working folder the host recorded for a session, return whether it names
        the human's project (rather than the host's own folder)."""
        ...


Hosts = Sequence[SessionHost]


def formats(hosts: Hosts) -> list[str]:
    """Given the hosts, return the formats `transcripts.format` may name: "auto" (each file's
    own, told from its lines), then each host's."""
    return ["auto", *(fmt for host in hosts for fmt in host.formats)]


def check_format(hosts: Hosts, fmt: str) -> None:
    """Given the hosts and the format the config forces, return if one of them writes it.
    Raise TranscriptError naming the setting and the formats there are if none does."""
    known = formats(hosts)
    if fmt not in known:
        raise TranscriptError(
            f"At 'transcripts.format': expected one of {', '.join(map(repr, known))}, "
            f"got {fmt!r}; fix it in the config file"
        )


def classify(hosts: Hosts, value: object) -> str | None:
    """Given the hosts and one parsed transcript line, return the format it belongs to, if it
    tells."""
    if not isinstance(value, dict):
        return None
    for host in hosts:
        fmt = host.claims(value)
        if fmt is not None:
            return fmt
    return None


def make_reader(
    hosts: Hosts,
    fmt: str,
    source: str,
    cutoff: datetime | None,
    limit: int,
    session_id: str | None,
    until: datetime | None = None,
) -> Reader:
    """Given the hosts and a format, return its reader (the last host's for a format none
    writes): messages older than `cutoff` end the walk, messages stamped after `until` are not
    taken, at most `limit` are kept."""
    host = next((host for host in hosts if fmt in host.formats), hosts[-1])
    return host.reader_class(source, cutoff, limit, session_id, until)


def host_sources(
    hosts: Hosts, workspace: Path, state_dir: Path, environ: Mapping[str, str]
) -> list[str]:
    """Given the hosts, the workspace, its state folder and the environment, return where the
    hosts keep its transcripts, for a config that names none: only places that exist, as globs
    that match only themselves."""
    return [source for host in hosts for source in host.sources(workspace, state_dir, environ)]


def is_side_file(hosts: Hosts, folder: Path, name: str, cache: dict[Any, Any]) -> bool:
    """Given the hosts, a file a transcript glob matched and a cache for one matching, return
    whether a host wrote it beside its sessions without it being one the human speaks in."""
    return any(host.is_side_file(folder, name, cache) for host in hosts)


def store_reader(hosts: Hosts, path: Path, magic: bytes, fmt: str) -> StoreReader | None:
    """Given the hosts, a path, its first bytes and the format asked for, return how to read it
    if it is a database of a host's sessions, else None."""
    for host in hosts:
        reader = host.store_reader(path, magic, fmt)
        if reader is not None:
            return reader
    return None


def store_formats(hosts: Hosts) -> list[str]:
    """Given the hosts, return the formats of their session databases."""
    return [fmt for host in hosts for fmt in host.store_formats]


def names_project(hosts: Hosts, cwd: str) -> bool:
    """Given the hosts and a session's recorded working folder, return whether it names the
    human's project rather than a host's own folder."""
    return all(host.names_project(cwd) for host in hosts)


def host_names(hosts: Hosts) -> str:
    """Given the hosts, return the names of those whose transcripts are recognised, for
    messages: "A, B or C"."""
    labels = [host.label for host in hosts]
    if len(labels) == 1:
        return labels[0]
    return ", ".join(labels[:-1]) + " or " + labels[-1]
