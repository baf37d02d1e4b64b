"""Host upgrades that broke delivery, said once: a session whose host's version changed since
the last turn that carried the block, and whose newest turns missed it since. An upgrade that
renames a hook's event or field stops the block reaching the model while every part still
looks healthy; the daemon says so in its log the first time it sees it, and `assemble check`
names it on every run (`report.describe`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from assembler.delivery.report import DeliveryHost, delivery_report, has_record

# How often the daemon reads the hosts' records for it: each read is the newest part of each
# session a hook served.
CHECK_EVERY = timedelta(minutes=1)


class UpgradeWatch:
    """What a daemon has said of host upgrades: each (host, session, version before, after)
    once for as long as it runs."""

    def __init__(self, every: timedelta = CHECK_EVERY) -> None:
        self.every = every
        self._said: set[tuple[str, str, str, str]] = set()
        self._last: datetime | None = None

    def new_notices(
        self,
        workspace: Path,
        state_dir: Path,
        hosts: Sequence[DeliveryHost],
        environ: Mapping[str, str],
        now: datetime,
    ) -> list[str]:
        """Given the workspace, its state folder, the hosts, the environment and the clock,
        return a line for each upgrade that broke delivery not said before; none when no hook
        ran here, or when the last look was less than `every` ago."""
        if not has_record(state_dir):
            return []
        if self._last is not None and now - self._last < self.every:
            return []
        self._last = now
        lines = []
        for session in delivery_report(workspace, state_dir, hosts, environ).missed:
            if session.upgraded is None:
                continue
            before, after = session.upgraded
            key = (session.host, session.session, before, after)
            if key in self._said:
                continue
            self._said.add(key)
            lines.append(
                f"{session.host} went from {before} to {after} in session "
                f"{session.session[:8]}, and its newest {session.missed_last} turn(s) got no "
                "scratchpad since: the upgrade may have changed how the host runs its hooks "
                "(assemble doctor names the broken link)"
            )
        return lines
