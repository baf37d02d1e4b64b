"""The clock, for people and for the file: the local time, aware times, how long ago, and the
time zone the human's times are shown in."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo


def local_now() -> datetime:
    """Return the current local time, aware."""
    return datetime.now().astimezone()


def aware(moment: datetime) -> datetime:
    """Given a time, return it aware (a naive one is local time)."""
    # A naive datetime is local time by Python's convention.
    return moment if moment.tzinfo is not None else moment.astimezone()


def local_time(moment: datetime) -> str:
    """Given a time, return it for people: local time, to the second, with its offset."""
    return aware(moment).astimezone().isoformat(timespec="seconds")


def format_duration(delta: timedelta) -> str:
    """Given a duration, return it compactly: '45m', '2h 10m', '3d 4h'.

    A negative duration (a message stamped ahead of our clock) is '0m', as a future time
    counts as now everywhere else.
    """
    minutes = max(delta // timedelta(minutes=1), 0)  # exact: a float loses minutes past years
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m"


# How far a record's own `updated` may be ahead of the clock: its seconds, rounded.
CLOCK_SLACK = timedelta(seconds=5)


def fresh_until(
    updated: datetime, expires: datetime, ttl: timedelta, now: datetime
) -> datetime | None:
    """Given a record's `updated` and `expires` (a file, a ready block, an answer: all of them
    the agent can write), the TTL configured and the clock, return until when it is fresh: its
    `expires`, but never later than `updated` + the TTL; None when `updated` is later than the
    clock, which no record of ours can be (a time the agent wrote, or a run told another
    `--now`)."""
    if updated > now + CLOCK_SLACK:
        return None
    return min(expires, updated + ttl)


def local_timezone(configured: str | None) -> tzinfo:
    """Given the configured time zone's name (`time.timezone`, None or "" when unset), return
    that zone, else this machine's."""
    if configured:
        return ZoneInfo(configured)
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone
