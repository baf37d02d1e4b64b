"""The time of day as the human lives it: the local time, the part of the day, and the advice
that goes with it (late night: suggest deferring non-urgent work)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo


@dataclass
class TimeContext:
    local: datetime
    part_of_day: str
    late_night: bool
    note: str


def time_context(
    now: datetime, tz: tzinfo, *, late_night_start: int, late_night_end: int, morning_end: int
) -> TimeContext:
    """Given the clock, the time zone and the hour bounds, return the local time, the part of
    the day and the note for the agent (late night: suggest deferral).
    """
    local = now.astimezone(tz)
    hour = local.hour
    if late_night_start <= late_night_end:
        late = late_night_start <= hour < late_night_end
    else:
        late = hour >= late_night_start or hour < late_night_end
    if late:
        part, note = "late night", "Late night: suggest deferring non-urgent work"
    elif hour < morning_end:
        part, note = "morning", "Morning: fresh start, good for complex work"
    elif hour < 17:
        part, note = "afternoon" if hour >= 12 else "late morning", "Active hours"
    else:
        part, note = "evening", "Evening: keep it focused, wind down long tasks"
    return TimeContext(local=local, part_of_day=part, late_night=late, note=note)
