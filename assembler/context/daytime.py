"""The time of day as the human lives it: the local time, the part of the day, and the advice
that goes with it (late night: suggest deferring non-urgent work)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from assembler.transcripts.message import Message, ZoneSeen, is_offset_name


@dataclass
class TimeContext:
    local: datetime
    part_of_day: str
    late_night: bool
    note: str
    # Whether the zone is the human's (stamped in the transcript, or configured); when it is
    # only the machine's, no part of day is claimed.
    known: bool = True


@dataclass(frozen=True)
class HumanZone:
    """The zone the human's times are read in, and where it came from."""

    zone: tzinfo
    source: str  # "transcript", "config" or "machine" (a guess)

    @property
    def known(self) -> bool:
        return self.source != "machine"


def human_zone(
    messages: Sequence[Message], configured: str | None, host_stamped: ZoneSeen | None = None
) -> HumanZone:
    """Given the window's messages, the configured zone's name (`time.timezone`, None or ""
    when unset) and the zone the host stamped on its own turns, return the human's zone: as
    the newest human message's host stamp shows it, else the host's own turns' stamps, else
    the configured one, else this machine's (a guess)."""
    for message in reversed(messages):
        if message.role == "user" and message.utc_offset is not None:
            return HumanZone(_fixed_zone(message.utc_offset, message.zone), "transcript")
    if host_stamped is not None:
        return HumanZone(_fixed_zone(host_stamped.offset, host_stamped.name), "transcript")
    if configured:
        return HumanZone(ZoneInfo(configured), "config")
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return HumanZone(zone, "machine")


def _fixed_zone(offset: timedelta, name: str | None) -> tzinfo:
    """Given an offset from UTC and the zone's name as the host wrote it, return the zone,
    named as people name it ("PDT"), or "UTC+08:00" for a name that is only an offset."""
    if name and not is_offset_name(name):
        return timezone(offset, name)
    return timezone(offset)


def time_context(
    now: datetime,
    tz: tzinfo,
    *,
    late_night_start: int,
    late_night_end: int,
    morning_end: int,
    known: bool = True,
) -> TimeContext:
    """Given the clock, the time zone and the hour bounds, return the local time, the part of
    the day and the note for the agent (late night: suggest deferral). When the zone is not
    known to be the human's (`known` False), the time is given without a part of day or note.
    """
    local = now.astimezone(tz)
    if not known:
        return TimeContext(local=local, part_of_day="", late_night=False, note="", known=False)
    hour = local.hour
    if late_night_start <= late_night_end:
        late = late_night_start <= hour < late_night_end
    else:
        late = hour >= late_night_start or hour < late_night_end
    if late:
        part, note = "late night", "suggest deferring non-urgent work"
    elif hour < morning_end:
        part, note = "morning", "a fresh start, good for complex work"
    elif hour < 17:
        part, note = "afternoon" if hour >= 12 else "late morning", ""
    else:
        part, note = "evening", "keep it focused, wind down long tasks"
    return TimeContext(local=local, part_of_day=part, late_night=late, note=note)
