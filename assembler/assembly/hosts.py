"""What an assembly asks of the agent hosts it is given: what reading their sessions asks
(`assembler.transcripts.hosts`), and the entries their sessions hold for the agent's sections.
The assembly never lists the hosts; its callers pass them in (`assembler.hosts.registry`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from assembler.transcripts.hosts import SessionHost

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.delivery.turns import Turn
    from assembler.pad.sections import ExternalEntries
    from assembler.transcripts.reader import SourceReport


class Host(SessionHost, Protocol):
    """One agent host, as the transcripts, the assembly and the daemon use it."""

    def section_entries(
        self, config: Config, sources: Sequence[SourceReport], now: datetime
    ) -> ExternalEntries | None:
        """Given the config, the transcript sources read and the clock, return the scratchpad
        entries the host's sessions hold for the agent's sections (written by `now`), or None
        when it keeps none or the config turns their import off."""
        ...

    def workspaces(self, environ: Mapping[str, str]) -> list[Path]:
        """Given the environment, return the workspaces the host's own config names (each of
        its agents'), for a daemon that serves them all."""
        ...

    def project_notes(self, root: Path, environ: Mapping[str, str]) -> list[Path]:
        """Given a project's folder and the environment, return the folders of the notes the
        host keeps for that project (none when it keeps none)."""
        ...

    def delivery_sources(
        self, workspace: Path, state_dir: Path, environ: Mapping[str, str]
    ) -> list[str]:
        """Given what `sources` is given, return the sessions whose delivery receipts are read:
        those of `sources`, and those the hook served here that no longer count as the
        workspace's once the hooks are gone (most hosts: `sources`)."""
        ...

    def delivery_turns(self, path: Path) -> tuple[str, list[Turn]] | None:
        """Given one of the host's session files, return its session's id and its turns,
        each with what hooks added to it by the host's own record (None: the host keeps no
        such record, or the file cannot be read)."""
        ...


Hosts = Sequence[Host]


def section_entries(
    hosts: Hosts, config: Config, sources: Sequence[SourceReport], now: datetime
) -> list[ExternalEntries]:
    """Given the hosts, the config, the transcript sources read and the clock, return the
    scratchpad entries the hosts' sessions hold for the agent's sections."""
    found = (host.section_entries(config, sources, now) for host in hosts)
    return [entries for entries in found if entries is not None]
