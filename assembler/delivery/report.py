"""The delivery state of a workspace: for each session of a host whose hook ran there (the
hook's record, `delivery.sent`), its turns as the host recorded them, set beside what the hook
handed over (`delivery.turns`); what `assemble check` says of it."""

from __future__ import annotations

import glob
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from assembler.delivery.sent import SENT_NAME, Sent, read_sent
from assembler.delivery.turns import SessionDeliveries, Turn, session_deliveries

# A set-up host whose newest turns, this many in a row, got no block is reported as missed.
MISSED_AFTER = 1


class DeliveryHost(Protocol):
    """What the report asks of a host: its name, the sessions the hooks served here, and their
    turns as it recorded them (None where it keeps no record of what a hook added)."""

    label: str

    def delivery_sources(
        self, workspace: Path, state_dir: Path, environ: Mapping[str, str]
    ) -> list[str]: ...

    def delivery_turns(self, path: Path) -> tuple[str, list[Turn]] | None: ...


@dataclass(frozen=True)
class DeliveryReport:
    """The sessions the hooks served, the one with the newest turn last."""

    sessions: list[SessionDeliveries]

    @property
    def missed(self) -> list[SessionDeliveries]:
        """The sessions whose newest `MISSED_AFTER` turns in a row got no block."""
        return [s for s in self.sessions if s.missed_last >= MISSED_AFTER]


def has_record(state_dir: Path) -> bool:
    """Whether a hook recorded a prompt in this state folder (a cheap look, no parsing)."""
    return (state_dir / SENT_NAME).is_file()


def delivery_report(
    workspace: Path, state_dir: Path, hosts: Sequence[DeliveryHost], environ: Mapping[str, str]
) -> DeliveryReport:
    """Given the workspace, its state folder, the hosts and the environment, return the
    delivery state of each session a hook served (see the module's docstring)."""
    runs = read_sent(state_dir)
    by_session: dict[str, list[Sent]] = {}
    for run in runs:
        by_session.setdefault(run.session, []).append(run)
    found: list[SessionDeliveries] = []
    for host in hosts:
        for pattern in host.delivery_sources(workspace, state_dir, environ):
            for name in glob.glob(pattern):
                read = host.delivery_turns(Path(name))
                if read is None or read[0] not in by_session or not read[1]:
                    continue
                session, turns = read
                found.append(session_deliveries(host.label, session, turns, by_session[session]))
    found.sort(key=lambda s: s.last_turn)
    return DeliveryReport(found)


def describe(session: SessionDeliveries) -> str:
    """Given a session's delivery state, return `check`'s line about it."""
    last = session.last_delivery
    when = f", last delivered {last.astimezone():%Y-%m-%d %H:%M}" if last else ", none delivered"
    line = (
        f"deliveries, {session.host} session {session.session[:8]}: {session.carried}/"
        f"{session.turns} turns carried the block{when}"
    )
    if session.missed:
        line += f"; {session.missed} missed"
    if session.upgraded:
        before, after = session.upgraded
        line += (
            f"; {session.host} went from {before} to {after} since the last turn that carried "
            "it: the upgrade may have changed how its hooks run (assemble doctor)"
        )
    return line
