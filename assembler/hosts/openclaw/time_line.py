"""The human's zone in the time lines OpenClaw writes: the zone its user is configured in
(`agents.defaults.userTimezone`, else the gateway machine's), named as configured.

OpenClaw's own code writes the time with that zone into text a session keeps:
- the `session_status` tool's result: `🕒 Time: Tuesday, February 17th, 2026 — 10:17 AM (UTC)`
  (`🕒 Time zone: UTC` when the time cannot be formatted), 2026.1.24 to 2026.3.31; no time line
  2026.4.1 to 2026.6.x; from 2026.7.1 `Current time: Tuesday, February 17th, 2026 - 11:17 AM
  (Europe/Vienna)` and `Reference UTC: 2026-02-17 10:17 UTC`;
- the prompts it sends in the human's place, which end with the same `Current time: ...
  (zone)` line: a cron job's isolated turn (2026.1.24 on), the heartbeat, exec and cron event
  prompts and the memory flush before a compaction (from 2026.2.17), the `/new` and `/reset`
  greeting and the refresh after a compaction (from 2026.3.13).

The zone is the configured text as OpenClaw accepted it: an IANA name ("Europe/Vienna"),
"UTC", an alias ("US/Eastern", "EST"). Its offset at the line's time comes from the zone
database; a name the database lacks gives its offset only when the name says it ("GMT+1").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from assembler.transcripts.message import ZoneSeen, named_zone, zone_offset

_TIME_LINE: Final = re.compile(
    r"^(?:🕒 Time|Current time): [^\n]{8,80}? \(([A-Za-z][A-Za-z0-9_+:/-]{0,63})\)"
    r"(?: / \d{4}-\d\d-\d\d \d\d:\d\d UTC)?[ \t]*$"
    r"|^🕒 Time zone: ([A-Za-z][A-Za-z0-9_+:/-]{0,63})[ \t]*$",
    re.MULTILINE,
)
# OpenClaw's tool that reports the session's state, the time among it.
STATUS_TOOL: Final = "session_status"


def time_line_zone(text: str, at: datetime | None) -> ZoneSeen | None:
    """Given a text OpenClaw wrote (a prompt in the human's place, a `session_status` result)
    and when it was written, return the zone of its newest time line, or None when it has no
    time line or names a zone that cannot be read."""
    lines = list(_TIME_LINE.finditer(text))
    if not lines:
        return None
    return _zone(lines[-1].group(1) or lines[-1].group(2), at)


def _zone(name: str, at: datetime | None) -> ZoneSeen | None:
    named = named_zone(name, at)
    if named is not None:
        return named
    offset = zone_offset(name)
    return ZoneSeen(at, offset, name) if offset is not None else None
