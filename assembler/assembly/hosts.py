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


Hosts = Sequence[Host]


def section_entries(
    hosts: Hosts, config: Config, sources: Sequence[SourceReport], now: datetime
) -> list[ExternalEntries]:
    """Given the hosts, the config, the transcript sources read and the clock, return the
    scratchpad entries the hosts' sessions hold for the agent's sections."""
    found = (host.section_entries(config, sources, now) for host in hosts)
    return [entries for entries in found if entries is not None]
