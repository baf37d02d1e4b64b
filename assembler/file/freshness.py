"""Whether SCRATCHPAD.md is fresh, as `assemble check` reports it to heartbeat scripts and
monitoring."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from assembler.clock import format_duration
from assembler.errors import ScratchpadError
from assembler.file.codec import read_scratchpad


@dataclass(frozen=True)
class Freshness:
    """What `check` reports: 0 fresh, 1 stale, 2 missing or unreadable."""

    code: int
    message: str


def check_freshness(path: Path, now: datetime, ttl: timedelta) -> Freshness:
    """Given the path of SCRATCHPAD.md, the clock and the TTL configured, return whether it is
    fresh, and a line saying so (for heartbeat scripts and monitoring). Its `expires` counts no
    later than `updated` + the TTL, and a file `updated` later than the clock is stale: the
    agent can write the frontmatter (`clock.fresh_until`).
    """
    try:
        pad = read_scratchpad(path)
    except ScratchpadError as error:
        return Freshness(2, f"missing or unreadable: {error}")
    until = pad.page.fresh_until(ttl, now)
    if until is None:
        made = pad.updated.isoformat()
        return Freshness(1, f"stale: {path} says it was updated at {made}, later than the clock")
    if now < until:
        left = format_duration(until - now)
        return Freshness(0, f"fresh: {path} valid until {until.isoformat()} ({left} left)")
    ago = format_duration(now - until)
    return Freshness(1, f"stale: {path} expired at {until.isoformat()} ({ago} ago)")
