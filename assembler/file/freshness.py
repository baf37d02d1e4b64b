"""Whether SCRATCHPAD.md is fresh, as `assemble check` reports it to heartbeat scripts and
monitoring."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from assembler.clock import format_duration
from assembler.errors import ScratchpadError
from assembler.file.codec import read_scratchpad


@dataclass(frozen=True)
class Freshness:
    """What `check` reports: 0 fresh, 1 stale, 2 missing or unreadable."""

    code: int
    message: str


def check_freshness(path: Path, now: datetime) -> Freshness:
    """Given the path of SCRATCHPAD.md and the clock, return whether it is fresh, and a line
    saying so (for heartbeat scripts and monitoring).
    """
    try:
        pad = read_scratchpad(path)
    except ScratchpadError as error:
        return Freshness(2, f"missing or unreadable: {error}")
    if pad.is_fresh(now):
        left = format_duration(pad.expires - now)
        return Freshness(0, f"fresh: {path} valid until {pad.expires.isoformat()} ({left} left)")
    ago = format_duration(now - pad.expires)
    return Freshness(1, f"stale: {path} expired at {pad.expires.isoformat()} ({ago} ago)")
