"""What every host's transcripts come down to: the messages the human and the assistant said,
the summaries and titles hosts write about a session, whose words a user turn holds, and the
host-neutral parsing of times and content blocks.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal
from zoneinfo import ZoneInfo

from assembler.redact import REDACTION_MARKER, redact
from assembler.valid_text import valid_text

Role = Literal["user", "assistant"]


# How far past the clock a message may be stamped and still count as said by then: the hosts
# and the assembler read one machine's clock, so this only covers a write racing the read.
CLOCK_SKEW: Final = timedelta(seconds=30)


@dataclass(frozen=True)
class Message:
    """One human or assistant utterance, as the text the model saw.

    No thinking, tool calls or tool results. `text` is for analysis: its secrets and personal
    data are already redacted (`[redacted GitHub token]`, a marker that `redact.scan` counts as
    a finding of its kind), and of a message longer than TEXT_HEAD_CHARS + TEXT_TAIL_CHARS (a
    pasted log) it holds only the head and the tail.
    """

    role: Role
    text: str
    timestamp: datetime | None  # timezone-aware (UTC) when the source has one
    source: str  # the file (or database) it came from
    speaker: str | None = None  # the human's name/id in a group chat; None for a single human
    session_id: str | None = None
    cwd: str | None = None  # the working directory the host recorded, when it did
    # The whole message's length in characters when `text` is only its head and tail (see
    # `clip_middle`); None when `text` is the whole message.
    original_length: int | None = None
    # The human's clock as the host stamped the message (an envelope's "09:45 GMT+8"): the
    # offset from UTC and the zone's name as written; None when the host stamps no local time.
    utc_offset: timedelta | None = None
    zone: str | None = None

    def __post_init__(self) -> None:
        # Whatever the reader: its text is valid Unicode from here on (`valid_text`).
        for name in ("text", "speaker", "session_id", "cwd"):
            value = getattr(self, name)
            if value is not None and valid_text(value) is not value:
                object.__setattr__(self, name, valid_text(value))

    @property
    def length(self) -> int:
        """The length of the whole message in characters, clipped or not."""
        return self.original_length if self.original_length is not None else len(self.text)


# What a message's `text` keeps of a long message: its first and last this many characters.
# People paste logs, files and dumps into chats; every analysis of the text (mood, topics,
# routing, memory queries) costs at least its length and some of them its square, while the
# human's own words are before and after the paste. A message longer than this keeps a
# representative head and tail, so one 50 MB paste costs what a 10 KB one does. Only the
# analysis reads `Message.text`: nothing stored or shown to the agent is clipped.
TEXT_HEAD_CHARS = 5000


TEXT_TAIL_CHARS = 5000


# Where a clipped text's middle was left out: no word in it, so it adds no topic or query term.
ELISION = "\n[…]\n"


# A cut moves back (head) or forward (tail) to whitespace this close, so no word is halved.
_CUT_SLACK = 64


_WHITESPACE = " \t\n\r"


@dataclass(frozen=True)
class Summary:
    """What a host wrote about a session: a compaction summary, or a session title."""

    text: str
    timestamp: datetime | None  # when it was written (a title: its last message's time)
    kind: Literal["compaction", "title"] = "compaction"


def text_of(content: object) -> str:
    """Given message content (a string or blocks), return its plain text, blocks joined.

    Only `text` blocks count; thinking, tool calls, tool results and images are not what was
    said.
    """
    # Stripped once: a pasted piece can be megabytes, and each strip copies it.
    stripped = (piece.strip() for piece in text_blocks(content))
    return "\n".join(piece for piece in stripped if piece)


def clip_middle(text: str, head: int, tail: int) -> str:
    """Given a text and two sizes, return its first `head` and last `tail` characters joined by
    `ELISION`, or the text itself when that would not be shorter.

    Each cut moves to whitespace within a few characters, so no word is cut in half. Clipping
    a clipped text with the same sizes returns it unchanged.
    """
    if len(text) <= head + len(ELISION) + tail:
        return text
    end = _head_end(text, head)
    start = _tail_start(text, len(text) - tail) if tail > 0 else len(text)
    return text[:end].rstrip() + ELISION + text[start:].lstrip()


def _head_end(text: str, head: int) -> int:
    """Given a text and a size, return where a head of about that size ends: at whitespace a
    few characters before, when there is some."""
    if head <= 0:
        return head
    space = max(text.rfind(c, max(head - _CUT_SLACK, 0), head + 1) for c in _WHITESPACE)
    return space if space > 0 else head


def _tail_start(text: str, start: int) -> int:
    """Given a text and where a tail would start, return where it starts: after whitespace a
    few characters on, when there is some."""
    found = [i for c in _WHITESPACE if (i := text.find(c, start - 1, start + _CUT_SLACK)) >= 0]
    return min(found) + 1 if found else start


# How much more than it keeps each end of a long message is redacted with, so that a secret
# across the cut is seen whole (a private key is 1.7 to 3.3K characters; one with no END is
# redacted to the end of its body, however long).
_REDACT_MARGIN = 8000


# When redaction shrinks an end by more than the margin (several keys), its kept part could
# reach the raw cut, where a token may be cut in half and so missed: up to this much text
# unredacted beside the raw cut is left out. No token the detectors know is longer.
_SPLIT_GUARD = 512


def message_text(text: str) -> tuple[str, int | None]:
    """Given a message's whole text, return what `Message.text` keeps and `original_length`:
    the text with its secrets and personal data redacted (`redact.redact`), and of a long one
    only its head and tail (about TEXT_HEAD_CHARS and TEXT_TAIL_CHARS, as `clip_middle` cuts
    them). A cut never halves a redaction marker, so the head or tail may run a marker's
    length longer; the markers of what was cut away follow the elision, once each, so the
    routing hint still counts every kind that was read. Only the ends are redacted, each with
    a margin: a 50 MB paste costs what a 30K one does."""
    longest = TEXT_HEAD_CHARS + len(ELISION) + TEXT_TAIL_CHARS
    unread = ""
    if len(text) <= longest + 2 * _REDACT_MARGIN:
        clean = redact(text)
        if len(clean) <= longest:
            return clean, None
        if clean == text:
            return clip_middle(text, TEXT_HEAD_CHARS, TEXT_TAIL_CHARS), len(text)
        head = tail = clean
        head_guard = tail_guard = 0
    else:
        head = redact(text[: TEXT_HEAD_CHARS + _REDACT_MARGIN])
        tail = redact(text[-(TEXT_TAIL_CHARS + _REDACT_MARGIN) :])
        # Only text left as it was can hold half a token: what follows the last marker.
        ends = [marker.end() for marker in REDACTION_MARKER.finditer(head)]
        first = REDACTION_MARKER.search(tail)
        head_guard = min(_SPLIT_GUARD, len(head) - (ends[-1] if ends else 0))
        tail_guard = min(_SPLIT_GUARD, first.start() if first else len(tail))
        middle = (TEXT_HEAD_CHARS + _REDACT_MARGIN, len(text) - TEXT_TAIL_CHARS - _REDACT_MARGIN)
        if any(text.find(word, *middle) >= 0 for word in _KEY_WORDS):
            unread = _KEY_MARKER
    end = _head_end(head, min(TEXT_HEAD_CHARS, len(head) - head_guard))
    end = _outside_marker(head, end, forward=True)
    start = _tail_start(tail, max(len(tail) - TEXT_TAIL_CHARS, tail_guard))
    start = _outside_marker(tail, start, forward=False)
    if head is tail:
        start = max(start, end)  # a marker kept whole at both cuts of a short text
        cut = [head[end:start]]
    else:
        cut = [head[end:], tail[:start]]
    kept_head, kept_tail = head[:end].rstrip(), tail[start:].lstrip()
    markers = dict.fromkeys(m.group(0) for part in cut for m in REDACTION_MARKER.finditer(part))
    if unread:
        markers[unread] = None
    said = " ".join(m for m in markers if m not in kept_head and m not in kept_tail)
    return kept_head + ELISION + (said + "\n" if said else "") + kept_tail, len(text)


# The middle of a long paste is never read; a private key is what a pasted credentials file
# holds, and these plain searches (as fast as copying the text) find one there, so that the
# routing hint still says a key was seen.
_KEY_WORDS = ("PRIVATE KEY", "private_key")


_KEY_MARKER = "[redacted private key block]"


def _outside_marker(text: str, at: int, *, forward: bool) -> int:
    """Given a cut in a redacted text, return it moved past the redaction marker it falls in
    (to its end when `forward`, else to its start), so the marker is kept whole and still
    counts as a finding; else the cut itself."""
    for marker in REDACTION_MARKER.finditer(text, max(at - 100, 0), at + 100):
        if marker.start() < at < marker.end():
            return marker.end() if forward else marker.start()
    return at


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


# The instants a message may have: datetime's range less a day at each end, so that every
# time taken can be shown in any time zone (an offset is less than a day) without overflowing.
# A time outside it is an impossible one: the line is corrupt.
_EARLIEST: Final = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)


_LATEST: Final = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)


class _Impossible(enum.Enum):
    """A timestamp field that is a time, but one that cannot exist."""

    TIME = enum.auto()


_IMPOSSIBLE: Final = _Impossible.TIME


def parse_time(value: object) -> datetime | None:
    """Given an ISO string or Unix seconds/milliseconds, return an aware UTC datetime or None.

    None also for an impossible time (see `impossible_time`: the readers skip a message with
    one and count its line as bad).
    """
    when = _read_time(value)
    return when if isinstance(when, datetime) else None


def impossible_time(value: object) -> bool:
    """Given a timestamp field, return True if it is a time (an ISO string or a number) that
    names no instant a message can have: out of datetime's range, or not a finite number."""
    return _read_time(value) is _IMPOSSIBLE


def _read_time(value: object) -> datetime | _Impossible | None:
    """Given a timestamp field, return its instant in UTC, None when it is absent or not a time
    ("yesterday", a boolean, an object), or `_IMPOSSIBLE`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                return None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)  # hosts write UTC when they omit the offset
            try:
                # Year 1 at +14:00 or year 9999 at -12:00 is outside datetime's range in UTC.
                parsed = parsed.astimezone(UTC)
            except OverflowError:
                return _IMPOSSIBLE
            return parsed if _EARLIEST <= parsed <= _LATEST else _IMPOSSIBLE
        return _read_time(number)
    if isinstance(value, int | float):
        try:
            seconds = float(value)  # an integer of hundreds of digits overflows a float
        except OverflowError:
            return _IMPOSSIBLE
        # Seconds, milliseconds and microseconds since 1970 differ by orders of magnitude.
        if abs(seconds) >= 1e14:
            seconds /= 1_000_000
        elif abs(seconds) >= 1e11:
            seconds /= 1000
        try:
            parsed = datetime.fromtimestamp(seconds, UTC)  # NaN and infinities raise too
        except (OverflowError, OSError, ValueError):
            return _IMPOSSIBLE
        return parsed if _EARLIEST <= parsed <= _LATEST else _IMPOSSIBLE
    return None


def text_blocks(content: object) -> Iterator[str]:
    """Given message content (a string or content blocks, as Claude Code, OpenClaw and pi
    write it), yield the text of each `text` block; thinking, tool calls, tool results and
    images are not what was said."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                yield block["text"]


Said = Literal["human", "host", "none"]


@dataclass(frozen=True)
class UserTurn:
    """What a user entry holds: the human's words (`human`), a prompt the host wrote (`host`:
    the replies to it are the host's too), or nothing to read (`none`: a picture alone)."""

    said: Said
    text: str = ""
    speaker: str | None = None
    # The local time the host stamped on the turn (naive, minutes) and the zone it named.
    stamp: LocalStamp | None = None


@dataclass(frozen=True)
class ZoneSeen:
    """A zone a host stamped on a turn that is not the human's words (a relayed cron report):
    it is the zone the host stamps the human's messages in too."""

    at: datetime | None  # when the turn was written (UTC)
    offset: timedelta
    name: str | None


@dataclass(frozen=True)
class LocalStamp:
    """A local time as a host writes it beside a message ("2026-02-09 09:45 GMT+8")."""

    local: datetime  # naive: the wall clock of the zone
    zone: str  # the zone as written: "GMT+8", "EST", "+08:00"


# How far a stamp may lie from the message's own UTC time, beyond whole zone offsets, and still
# date it: the stamp is written to the minute, as the message arrives.
_STAMP_SLACK: Final = timedelta(minutes=3)
_OFFSET_STEP: Final = timedelta(minutes=15)
_MAX_OFFSET: Final = timedelta(hours=14)
# A zone written as an offset: "GMT+8", "UTC-05:00", "+0530".
_OFFSET_ZONE = re.compile(r"^(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
# Zone abbreviations with one meaning (CST, IST and BST have several and are left out).
_ABBREVIATIONS: Final = {
    "UTC": 0, "GMT": 0, "WET": 0, "WEST": 60, "CET": 60, "CEST": 120, "EET": 120,
    "EEST": 180, "MSK": 180, "EST": -300, "EDT": -240, "CDT": -300, "MST": -420, "MDT": -360,
    "PST": -480, "PDT": -420, "AKST": -540, "AKDT": -480, "HST": -600, "JST": 540,
    "KST": 540, "HKT": 480, "SGT": 480, "AWST": 480, "ACST": 570, "ACDT": 630, "AEST": 600,
    "AEDT": 660, "NZST": 720, "NZDT": 780,
}  # fmt: skip


def stamp_offset(stamp: LocalStamp, at: datetime | None) -> timedelta | None:
    """Given a host's local stamp and the message's UTC time (None if it has none), return the
    human's offset from UTC: the one the zone's name says ("GMT+8", "PDT"), else, for a name
    with several meanings or none, the difference of the two times when it lies within a few
    minutes of a whole quarter hour; None otherwise."""
    named = zone_offset(stamp.zone)
    if named is not None:
        return named
    if at is None:
        return None
    difference = stamp.local - at.astimezone(UTC).replace(tzinfo=None)
    offset = _OFFSET_STEP * round(difference / _OFFSET_STEP)
    if abs(offset) <= _MAX_OFFSET and abs(difference - offset) <= _STAMP_SLACK:
        return offset
    return None


def zone_offset(name: str) -> timedelta | None:
    """Given a zone's name as a host writes it, return its offset from UTC when the name says
    it ("GMT+8", "UTC-05:00", "+0530") or is an abbreviation with one meaning ("PDT"), else
    None."""
    written = _OFFSET_ZONE.match(name)
    if written is not None:
        sign = -1 if written.group(1) == "-" else 1
        offset = timedelta(hours=int(written.group(2)), minutes=int(written.group(3) or 0)) * sign
        return offset if abs(offset) <= _MAX_OFFSET else None
    minutes = _ABBREVIATIONS.get(name.upper())
    return timedelta(minutes=minutes) if minutes is not None else None


# A zone database name as hosts write it ("America/Los_Angeles", "UTC"): no path climbing.
_ZONE_KEY: Final = re.compile(r"\A[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2}\Z")


def named_zone(name: object, at: datetime | None) -> ZoneSeen | None:
    """Given a zone's name from the zone database ("Europe/Vienna", as a host's settings name
    it) and when it was written, return the zone with its offset and abbreviation then; None
    for anything that is not a name the database has, or without a time."""
    if not isinstance(name, str) or not _ZONE_KEY.match(name) or at is None:
        return None
    try:
        zone = ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # not in the database (ZoneInfoNotFoundError)
        return None
    local = at.astimezone(zone)
    offset = local.utcoffset()
    return ZoneSeen(at, offset, local.tzname()) if offset is not None else None


def is_offset_name(name: str) -> bool:
    """Whether a zone's name is only its offset ("GMT+8"), not a name people use ("PDT")."""
    return bool(_OFFSET_ZONE.match(name))


HOST: Final = UserTurn("host")


NOTHING: Final = UserTurn("none")
