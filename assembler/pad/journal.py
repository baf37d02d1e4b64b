"""The sections journal: where the agent's and the subsystems' sections live between renders.

The source of truth is `.scratchpad/sections.jsonl`, an append-only journal of events
(`write`, `append`, `clear` by agents; `set`, `rm` by subsystems). Folding the events in file
order gives the current sections; compaction rewrites the journal to one event per section
without changing what it folds to. Writers in several processes take `<journal>.lock` (an flock)
around reading the state, checking the caps and appending, so no append is lost or interleaved.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

from assembler.clock import aware, local_now
from assembler.errors import SectionError
from assembler.fsutil import (
    FileLock,
    atomic_write,
    load_json,
    open_nofollow,
    read_all,
    read_regular,
    read_state_file,
    real_dir,
    write_all,
)
from assembler.section_names import NAME_RULE, is_valid_section_name

JOURNAL_NAME: Final = "sections.jsonl"


AGENT_SECTIONS: Final = ("goal", "findings", "artifacts", "errors", "main")


DEFAULT_SECTION: Final = "main"


EVENT_ACTIONS: Final = ("write", "append", "clear", "set", "rm")


COMPACT_MAX_EVENTS: Final = 1000


COMPACT_MAX_BYTES: Final = 1024 * 1024


LOCK_TIMEOUT_S: Final = 10.0


_MAX_TTL: Final = 100 * 365 * 86400.0  # seconds; a longer TTL in the journal is corrupt

EventAction = Literal["write", "append", "clear", "set", "rm"]


SectionKind = Literal["agent", "subsystem"]


def journal_path(state_dir: Path) -> Path:
    """Given the workspace's state folder (`.scratchpad/`), return the sections journal's path."""
    return state_dir / JOURNAL_NAME


# --------------------------------------------------------------------------------------------
# Names and order.
# --------------------------------------------------------------------------------------------


def validate_section_name(name: object) -> str:
    """Given a section name, return it. Raise SectionError, stating the rule, if it is invalid."""
    if not is_valid_section_name(name):
        raise SectionError(f"Section name {name!r} is not valid: {NAME_RULE}")
    assert isinstance(name, str)
    return name


def section_title(name: str) -> str:
    """Given a section name, return its heading text: 'findings' -> 'Findings'."""
    return name.replace("_", " ").replace("-", " ").capitalize()


@dataclass(frozen=True)
class SectionState:
    """One section as the journal folds it."""

    name: str
    content: str
    updated: datetime
    source: str
    kind: SectionKind
    expires: datetime | None = None


def order_key(state: SectionState) -> tuple[int, int, str]:
    """Given a section, return its place in the display order (see `ordered`)."""
    if state.kind == "subsystem":
        return (2, 0, state.name)
    if state.name in AGENT_SECTIONS:
        return (0, AGENT_SECTIONS.index(state.name), "")
    return (1, 0, state.name)


def ordered(states: Iterable[SectionState]) -> list[SectionState]:
    """Given section states, return them in display order.

    The order is goal, findings, artifacts, errors, main, then custom agent sections
    alphabetically, then subsystem sections alphabetically.
    """
    return sorted(states, key=order_key)


# --------------------------------------------------------------------------------------------
# Events and folding.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One line of the journal."""

    time: datetime
    section: str
    action: EventAction
    content: str = ""
    source: str = ""
    ttl_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the event as the JSON object stored in the journal."""
        return {
            "time": aware(self.time).isoformat(),
            "section": self.section,
            "action": self.action,
            "content": self.content,
            "source": self.source,
            "ttl_seconds": self.ttl_seconds,
        }

    def to_line(self) -> str:
        """Return the event as one journal line, newline included, always encodable as UTF-8."""
        data = self.to_dict()
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (from a JSON "\ud800" escape) survive only as escapes.
            line = json.dumps(data, separators=(",", ":"))
        return line + "\n"

    @classmethod
    def from_obj(cls, value: object) -> Event | None:
        """Given a parsed journal line, return the event, or None if it is not a valid one."""
        if not isinstance(value, dict):
            return None
        time, section, action = value.get("time"), value.get("section"), value.get("action")
        content, source = value.get("content", ""), value.get("source", "")
        ttl = value.get("ttl_seconds")
        if not (isinstance(time, str) and isinstance(section, str) and action in EVENT_ACTIONS):
            return None
        # The agent can write the journal itself: a name the commands would refuse (a quote
        # that would end up inside the file's markers) is a bad line, not a section.
        if not is_valid_section_name(section):
            return None
        if not isinstance(content, str) or not isinstance(source, str):
            return None
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 <= ttl <= _MAX_TTL
        ):
            return None  # also NaN and Infinity, which json.loads lets through
        try:
            moment = datetime.fromisoformat(time)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return cls(moment, section, action, content, source, None if ttl is None else float(ttl))


def _expiry(time: datetime, ttl_seconds: float | None) -> datetime | None:
    if ttl_seconds is None:
        return None
    try:
        return time + timedelta(seconds=ttl_seconds)
    except OverflowError:
        return None  # past year 9999: as good as never


def fold_events(events: Iterable[Event], now: datetime) -> dict[str, SectionState]:
    """Given journal events in file order and the current time, return the current sections.

    `write` and `set` replace a section, `append` adds a line to an agent section (or starts
    it), `clear` and `rm` remove it. Subsystem sections whose TTL has run out by `now` are
    absent. The result is keyed by name, in display order.
    """
    state: dict[str, SectionState] = {}
    for event in events:
        if event.action == "write":
            state[event.section] = SectionState(
                event.section, event.content, event.time, event.source, "agent"
            )
        elif event.action == "append":
            old = state.get(event.section)
            if old is not None and old.kind == "agent" and old.content:
                content = f"{old.content}\n{event.content}"
            else:
                content = event.content
            state[event.section] = SectionState(
                event.section, content, event.time, event.source, "agent"
            )
        elif event.action == "set":
            expires = _expiry(event.time, event.ttl_seconds)
            state[event.section] = SectionState(
                event.section, event.content, event.time, event.source, "subsystem", expires
            )
        else:
            state.pop(event.section, None)
    moment = aware(now)
    live = (s for s in state.values() if s.expires is None or s.expires > moment)
    return {s.name: s for s in ordered(live)}


def in_zone(states: Mapping[str, SectionState], now: datetime) -> dict[str, SectionState]:
    """Given folded sections and the clock, return them with expiry times in the clock's zone
    (the journal keeps the offset of whoever wrote the event).
    """
    return {
        name: replace(s, expires=s.expires.astimezone(now.tzinfo)) if s.expires else s
        for name, s in states.items()
    }


def last_changes(events: Iterable[Event]) -> dict[str, datetime]:
    """Given journal events, return for each section name the time of its last event."""
    return {event.section: event.time for event in events}


def compacted_events(events: Sequence[Event], now: datetime) -> list[Event]:
    """Given journal events and the current time, return the fewest events that fold the same.

    Each live section becomes one `write` (agent) or `set` (subsystem, with the TTL that ends
    at the same moment). An agent section whose last event is a `clear` keeps that event as a
    tombstone: it folds to nothing, but keeps the time of the clear, so an older OpenClaw
    scratchpad entry cannot bring the section back.
    """
    state = fold_events(events, now)
    last: dict[str, Event] = {event.section: event for event in events}
    tombstones = [
        Event(event.time, name, "clear", "", event.source)
        for name, event in last.items()
        if name not in state and event.action == "clear"
    ]
    live = []
    for section in state.values():
        if section.kind == "agent":
            live.append(
                Event(section.updated, section.name, "write", section.content, section.source)
            )
        else:
            ttl = None
            if section.expires is not None:
                ttl = (section.expires - section.updated).total_seconds()
            live.append(
                Event(section.updated, section.name, "set", section.content, section.source, ttl)
            )
    return sorted(tombstones, key=lambda e: e.time) + sorted(live, key=lambda e: e.time)


# --------------------------------------------------------------------------------------------
# The journal file.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JournalRead:
    """The valid events of the journal, in file order, and the lines that were skipped."""

    events: list[Event]
    bad_lines: int = 0
    bad: tuple[bytes, ...] = ()  # the skipped lines themselves, for the quarantine file


def _parse_journal(data: bytes) -> JournalRead:
    events: list[Event] = []
    bad: list[bytes] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            # Bounded depth: a line nested thousands deep would raise RecursionError.
            event = Event.from_obj(load_json(raw))
        except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
            event = None
        if event is None:
            bad.append(raw)  # a line cut short by a crash, or one written by hand
        else:
            events.append(event)
    return JournalRead(events, len(bad), tuple(bad))


class Journal:
    """The append-only sections journal, with an inter-process lock on `<journal>.lock`."""

    def __init__(
        self,
        path: Path | str,
        *,
        now: Callable[[], datetime] = local_now,
        max_events: int = COMPACT_MAX_EVENTS,
        max_bytes: int = COMPACT_MAX_BYTES,
        lock_timeout: float = LOCK_TIMEOUT_S,
    ) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.now = now
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.lock_timeout = lock_timeout
        self._lock = FileLock(self.lock_path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the journal's inter-process lock for the block (re-entrant in one process).

        Raise SectionError if another process holds it longer than `lock_timeout` seconds, or
        if the state folder or the lock file is a link (the agent could plant one).
        """
        with contextlib.ExitStack() as stack:
            try:
                real_dir(self.path.parent)
                stack.enter_context(self._lock.hold(self.lock_timeout))
            except TimeoutError as error:
                raise SectionError(
                    f"Another process has held {self.lock_path} for more than "
                    f"{self.lock_timeout:g} seconds; retry when it has finished"
                ) from error
            except OSError as error:
                raise SectionError(f"Cannot lock the sections journal: {error}") from error
            yield

    def record(self, event: Event) -> None:
        """Given an event, append it to the journal as one line, under the lock, and fsync.

        Raise SectionError if the lock cannot be had, OSError if the file cannot be written.
        """
        self.record_many([event])

    def record_many(self, events: Sequence[Event]) -> None:
        """Given events, append them in one write under the lock, and fsync.

        Raise SectionError if the lock cannot be had, OSError if the file cannot be written.
        """
        if not events:
            return
        data = "".join(event.to_line() for event in events).encode("utf-8")
        with self.locked():
            fd = open_nofollow(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                size = os.fstat(fd).st_size
                if size:
                    os.lseek(fd, size - 1, os.SEEK_SET)
                    if os.read(fd, 1) != b"\n":
                        # A crash left half a line; end it so it stays one skipped line.
                        data = b"\n" + data
                write_all(fd, data)  # O_APPEND: at the end, whatever the offset
                os.fsync(fd)
            finally:
                os.close(fd)

    def read(self) -> JournalRead:
        """Return the journal's valid events in file order and the number of bad lines skipped.

        A missing journal has no events. Raise SectionError if it exists but cannot be read.
        """
        try:
            data = read_state_file(self.path).data
        except OSError as error:
            raise SectionError(
                f"Cannot read the sections journal {self.path} ({error}); check its permissions"
            ) from error
        return _parse_journal(data or b"")

    def events(self) -> list[Event]:
        """Return the journal's valid events in file order (bad lines are skipped)."""
        return self.read().events

    def fold(self, now: datetime | None = None) -> dict[str, SectionState]:
        """Given the current time (default: the journal's clock), return the current sections."""
        return fold_events(self.events(), now if now is not None else self.now())

    def compact(self, *, force: bool = False, now: datetime | None = None) -> bool:
        """Rewrite the journal to the fewest events that fold the same, if it has grown large.

        It is rewritten when it has more than `max_events` lines or `max_bytes` bytes (or when
        `force`), atomically (temp file and rename) under the lock. Return whether it was
        rewritten. Raise SectionError if the lock cannot be had.
        """
        with self.locked():
            data = read_regular(self.path).data
            if data is None:
                return False
            large = data.count(b"\n") > self.max_events or len(data) > self.max_bytes
            if not (force or large):
                return False
            read = _parse_journal(data)
            events = compacted_events(read.events, now if now is not None else self.now())
            if not force and read.bad_lines == 0 and len(events) == len(read.events):
                return False  # already minimal: its sections alone are this large
            if read.bad:
                # Compaction must not destroy what it cannot read: the lines go aside, first.
                self._quarantine(read.bad)
            atomic_write(self.path, "".join(event.to_line() for event in events))
            return True

    @property
    def quarantine_path(self) -> Path:
        """The file where compaction keeps the journal lines it could not read."""
        return self.path.with_name(self.path.name + ".bad")

    def _quarantine(self, lines: Sequence[bytes]) -> None:
        """Append the lines to the quarantine file, except those it holds already: a compaction
        killed after quarantining and before rewriting the journal finds them again."""
        fd = open_nofollow(self.quarantine_path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            held = Counter(read_all(fd).split(b"\n"))
            new = []
            for line in lines:
                if held[line] > 0:
                    held[line] -= 1
                else:
                    new.append(line)
            write_all(fd, b"".join(line + b"\n" for line in new))
            os.fsync(fd)
        finally:
            os.close(fd)
