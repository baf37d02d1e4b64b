"""Reading one session: the reader base class each host's format extends (which entries are
messages, who said them, when), the tree nodes the branch walk follows, and what reading one
source yields (its messages and its report).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from assembler.transcripts.message import Message, Summary, ZoneSeen


@dataclass
class SourceReport:
    """What reading one transcript file yielded, for the frontmatter's `sources`."""

    path: str
    format: str  # the detected or forced format
    messages: int = 0  # messages taken from this file
    bad_lines: int = 0  # lines skipped as corrupt, truncated, of unknown shape or impossible time
    error: str | None = None  # set when the file could not be read at all (a warning, not a crash)
    bytes_read: int = 0  # bytes read (SQLite: event payload sizes): follows the tail, not the size


# Files (or database sessions) that yield no message, such as OpenClaw's isolated cron and
# heartbeat sessions that only say HEARTBEAT_OK, do not count towards `max_files`; this many
# times `max_files` may be opened looking for ones that do, so a folder full of them stays cheap.
OPEN_FACTOR = 4


@dataclass
class Outcome:
    """What reading one source produced."""

    report: SourceReport
    units: list[Unit] = field(default_factory=list)


def mtime_ns(path: Path) -> int:
    """The time a file was last written, -1 when it cannot be told. An SQLite database in WAL
    mode is written through its `-wal` file: the database file's own time lags behind."""
    try:
        written = path.stat().st_mtime_ns
    except OSError:
        return -1  # read anyway, so the report says what is wrong with it
    try:
        return max(written, Path(f"{path}-wal").stat().st_mtime_ns)
    except OSError:
        return written


def mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(max(mtime_ns(path), 0) / 1e9, UTC)


def failed(path: Path, fmt: str, error: str) -> Outcome:
    return Outcome(SourceReport(path=str(path), format=fmt, error=error))


# A transcript format's name: "auto", or one a host writes (its `formats`).
Format = str

# The first bytes of every SQLite database: such a file is a host's store, never JSONL.
SQLITE_MAGIC: Final = b"SQLite format 3\x00"


@dataclass
class Unit:
    """The messages of one session (a file, or one session of a database), oldest first."""

    messages: list[Message]
    fallback_time: datetime  # the file's mtime, for a session without any timestamp
    human: bool = True  # whether a human spoke in it (in the window read)
    summaries: list[Summary] = field(default_factory=list)  # oldest first
    zone: ZoneSeen | None = None  # the newest zone stamped on a turn of the host's


@dataclass(frozen=True, slots=True)
class Node:
    """One entry of a transcript tree, as far as the walk needs it."""

    key: str | None  # its id, if it has one
    parent: str | None  # the id of the entry before it on its branch
    linear: bool  # with no parent: True = the preceding line comes before it, False = a root
    value: dict[str, Any]
    can_lead: bool = True  # may be the newest entry of the active branch


Verdict = Node | Literal["bad", "ignore"]


class Reader(ABC):
    """Collects the messages of one session while the walk takes its entries, newest first.

    The formats tell three kinds of user turn apart: the human's words (`_said`), a prompt the
    host wrote in the human's place (`_host_turn`: a heartbeat poll, a cron job), and neither (a
    tool result, a command's output). Replies are held until the turn they answer is known, so
    that the host's prompts take their replies with them.
    """

    def __init__(
        self,
        source: str,
        cutoff: datetime | None,
        limit: int,
        session_id: str | None,
        until: datetime | None = None,
    ) -> None:
        self.source = source
        self.cutoff = cutoff
        # Nothing stamped after this was said yet by the clock of the run (`--now` in the past).
        self.until = until
        self.limit = limit
        self.session_id = session_id
        self.cwd: str | None = None
        self.found: list[Message] = []  # newest first
        self.summaries: list[Summary] = []  # newest first
        # Messages skipped for an impossible time (year 1 at +14:00, 1e300): corrupt lines. They
        # are skipped when taken, not refused by `node()`, so that the links of the tree through
        # them still hold and the walk does not search the file for a parent it refused.
        self.bad_lines = 0
        self.human = False  # the human spoke in the window
        self.zone: ZoneSeen | None = None  # the newest zone a host turn was stamped with
        self._replies: list[Message] = []  # replies to a turn not yet met, newest first
        # JSONL only: where the entry being taken starts, and where entry number N starts (pi's
        # version 1 compactions count entries from the top of the file).
        self.line_start: int | None = None
        self.entry_offset: Callable[[int], int | None] | None = None
        self.bytes_scanned = 0

    def header(self, value: dict[str, Any]) -> None:  # noqa: B027 (most formats have none)
        """Take what the first line says about the whole session (a format with a header)."""

    # Whether `zone_of` can find a zone in lines the window leaves out (the format stamps one).
    stamps_zones: bool = False
    # Bytes that mark, beside user turns, the lines `zone_of` reads (the scan parses no other).
    zone_line_keys: tuple[bytes, ...] = ()

    def zone_of(self, value: dict[str, Any]) -> ZoneSeen | None:
        """Given a line older than the window, return the human's zone it shows (an envelope's
        stamp), if the format stamps one: where the window itself shows none, the session's
        newest such line still tells the human's clock (`jsonl.read_jsonl`)."""
        return None

    @abstractmethod
    def node(self, value: object) -> Verdict:
        """Given a parsed line, return it as a node of the session's tree, "bad" for a line
        of the format that is corrupt, or "ignore" for one that is not part of the tree."""

    @abstractmethod
    def take(self, value: dict[str, Any]) -> bool:
        """Given an entry on the active branch, collect it; return False when done walking."""

    def finish(self) -> None:
        """Note that the walk is over: replies whose turn was never met (it is older than the
        window, or was summarised) are kept."""
        self._flush()

    def unit(self, fallback_time: datetime) -> Unit:
        """The session read, oldest first."""
        return Unit(
            list(reversed(self.found)),
            fallback_time,
            human=self.human,
            summaries=list(reversed(self.summaries)),
            zone=self.zone,
        )

    def _reply(self, message: Message) -> bool:
        """Hold an assistant message; return False when done walking."""
        if self._later(message.timestamp):
            return True  # not written yet by the run's clock
        if self._older(message):
            return False  # the branch only gets older from here
        if len(self._replies) < self.limit:
            self._replies.append(message)
        return True

    def _said(self, message: Message) -> bool:
        """Keep a human message and the replies to it; return False when done walking."""
        if self._later(message.timestamp):
            return True
        if self._older(message):
            self._flush()
            return False
        self.human = True
        return self._flush() and self._add(message)

    def _host_turn(self) -> None:
        """Drop the replies held: they answer the host's prompt, not the human."""
        self._replies.clear()

    def _flush(self) -> bool:
        replies, self._replies = self._replies, []
        return all(self._add(reply) for reply in replies)

    def _later(self, at: datetime | None) -> bool:
        """Whether something stamped `at` was written after the run's clock (plus the skew)."""
        return self.until is not None and at is not None and at > self.until

    def _older(self, message: Message) -> bool:
        return (
            self.cutoff is not None
            and message.timestamp is not None
            and message.timestamp < self.cutoff
        )

    def _add(self, message: Message) -> bool:
        """Keep `message` unless it is outside the window; return False when done walking."""
        if len(self.found) >= self.limit:
            return False
        if self._older(message):
            return False  # the branch only gets older from here
        self.found.append(message)
        return len(self.found) < self.limit
