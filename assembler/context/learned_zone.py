"""The human's zone as the workspace last saw it, kept in the state folder
(`.scratchpad/human-zone.json`): a window whose messages carry no stamp (a Claude Code
session, a quiet stretch, a channel that stamps nothing) still knows the human's clock.

Written by a run that read the zone from a transcript, only when it changed; read by any run.
The agent can write the state folder, so the record is a hint checked like input: an offset
that is not a whole quarter hour within ±14 h, a name that is not a zone's, a record too large
or not this version's is no record (and the worst a forged one does is name a wrong zone,
which the next stamped message replaces).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from assembler.fsutil import atomic_write, read_state_file, real_dir

log = logging.getLogger(__name__)

ZONE_NAME: Final = "human-zone.json"
_VERSION: Final = 1
_LIMIT: Final = 4096
_WIDEST_MINUTES: Final = 14 * 60
_NAME: Final = re.compile(r"\A[A-Za-z][A-Za-z0-9+:/_-]{0,39}\Z")


@dataclass(frozen=True)
class LearnedZone:
    """An offset from UTC and the zone's name as a host wrote it, and when it was seen."""

    offset: timedelta
    name: str | None
    seen: datetime


def zone_path(state_dir: Path) -> Path:
    return state_dir / ZONE_NAME


def read_learned_zone(state_dir: Path | None) -> LearnedZone | None:
    """Given the state folder, return the zone it keeps, or None (no folder, no record, or a
    record this version does not write). Never raise."""
    if state_dir is None:
        return None
    try:
        data = read_state_file(zone_path(state_dir), limit=_LIMIT).data
        value: Any = json.loads(data) if data is not None else None
    except (OSError, ValueError, RecursionError):
        return None
    return _from_dict(value)


def remember_zone(state_dir: Path | None, zone: LearnedZone) -> bool:
    """Given the state folder and the zone a transcript showed, keep it unless the folder
    already says the same offset and name; return whether it was written. A folder that cannot
    be written is logged, never raised: the zone is a convenience."""
    if state_dir is None or not _valid(zone.offset, zone.name):
        return False
    kept = read_learned_zone(state_dir)
    if kept is not None and (kept.offset, kept.name) == (zone.offset, zone.name):
        return False
    record = {
        "version": _VERSION,
        "offset_minutes": int(zone.offset.total_seconds() // 60),
        "name": zone.name,
        "seen": zone.seen.astimezone(UTC).isoformat(),
    }
    try:
        atomic_write(zone_path(real_dir(state_dir)), json.dumps(record) + "\n", durable=False)
    except OSError as error:
        log.warning("cannot keep the human's zone in %s: %s", state_dir, error)
        return False
    return True


def _from_dict(value: object) -> LearnedZone | None:
    if not isinstance(value, dict) or value.get("version") != _VERSION:
        return None
    minutes, name, seen = value.get("offset_minutes"), value.get("name"), value.get("seen")
    if not isinstance(minutes, int) or isinstance(minutes, bool) or not isinstance(seen, str):
        return None
    if name is not None and not isinstance(name, str):
        return None
    offset = timedelta(minutes=minutes)
    try:
        when = datetime.fromisoformat(seen)
    except ValueError:
        return None
    if when.tzinfo is None or not _valid(offset, name):
        return None
    return LearnedZone(offset, name, when.astimezone(UTC))


def _valid(offset: timedelta, name: str | None) -> bool:
    minutes = offset.total_seconds() / 60
    if minutes != int(minutes) or int(minutes) % 15 or abs(minutes) > _WIDEST_MINUTES:
        return False
    return name is None or _NAME.match(name) is not None
