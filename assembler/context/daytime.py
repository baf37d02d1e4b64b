"""The time of day as the human lives it: the local time, the part of the day, and the advice
that goes with it (late night: suggest deferring non-urgent work)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

from assembler.context.learned_zone import LearnedZone
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
    source: str  # "transcript", "config", "learned" (the state folder's) or "machine" (a guess)

    @property
    def known(self) -> bool:
        return self.source != "machine"


def human_zone(
    messages: Sequence[Message],
    configured: str | None,
    host_stamped: ZoneSeen | None = None,
    learned: LearnedZone | None = None,
) -> HumanZone:
    """Given the window's messages, the configured zone's name (`time.timezone`, None or ""
    when unset), the zone the host stamped on its own turns (in the window, or the session's
    newest before it) and the zone the workspace last saw (`learned_zone`), return the human's
    zone: as the newest human message's host stamp shows it, else the host's own turns'
    stamps, else the configured one, else the learned one. A stamp in UTC is the human's zone
    only when none of the others says otherwise: hosts stamp in UTC when set to, or when they
    know no other zone. Else this machine's zone, which is a guess."""
    stamped: tuple[timedelta, str | None] | None = None
    for message in reversed(messages):
        if message.role == "user" and message.utc_offset is not None:
            stamped = (message.utc_offset, message.zone)
            break
    if stamped is None and host_stamped is not None:
        stamped = (host_stamped.offset, host_stamped.name)
    if stamped is not None and stamped[0]:
        return HumanZone(_fixed_zone(*stamped), "transcript")
    if configured:
        return HumanZone(ZoneInfo(configured), "config")
    if learned is not None and (learned.offset or stamped is None):
        return HumanZone(_fixed_zone(learned.offset, learned.name), "learned")
    if stamped is not None:
        return HumanZone(_fixed_zone(*stamped), "transcript")
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
