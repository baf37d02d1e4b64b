"""Agent-written sections: the journal they live in, the caps they are held to, and the markers
that carry them through SCRATCHPAD.md unchanged.

The source of truth is `.scratchpad/sections.jsonl`, an append-only journal of events
(`write`, `append`, `clear` by agents; `set`, `rm` by subsystems). Folding the events in file
order gives the current sections; compaction rewrites the journal to one event per section
without changing what it folds to. Writers in several processes take `<journal>.lock` (an flock)
around reading the state, checking the caps and appending, so no append is lost or interleaved.

Marker and escape scheme (what `encode_sections` writes and `decode_sections` reads):

    <!-- scratchpad:agent-sections begin -->
    ## Findings
    <!-- scratchpad:begin section="findings" -->
    ...the section's text, escaped...
    <!-- scratchpad:end section="findings" -->
    <!-- scratchpad:agent-sections end -->

The text between a section's begin and end lines is exactly its content after escaping. The
escape works on lines, split at every line boundary that `str.splitlines` knows (so a `\\r` or
U+2028 cannot smuggle a marker past a reader that splits differently). A line is *dangerous* when,
after any leading backslashes, it starts like a marker (`<!-- scratchpad:`, any spacing or case)
or is a frontmatter fence (three or more `-`, then only whitespace). A dangerous line gets one
more leading backslash; decoding removes one backslash from a dangerous line that starts with a
backslash. Every other line, including an ordinary line that starts with a backslash, passes
untouched, so encode then decode returns any text unchanged. It is also Markdown's own escape:
`\\---` displays as `---` and `\\<!--` shows the text instead of hiding a comment.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from assembler.errors import AssemblerError
from assembler.fsutil import (
    FileLock,
    Snapshot,
    atomic_write,
    check_dir,
    fsync_folder,
    open_nofollow,
    read_regular,
    read_state_file,
    real_dir,
    remove_stale_temps,
)
from assembler.tokens import TokenCounter, estimate_tokens

if TYPE_CHECKING:
    from assembler.config import Config


log = logging.getLogger(__name__)


class SectionError(AssemblerError):
    """A section name, the journal or its lock cannot be used."""


JOURNAL_NAME: Final = "sections.jsonl"
AGENT_SECTIONS: Final = ("goal", "findings", "artifacts", "errors", "main")
DEFAULT_SECTION: Final = "main"
TOOL_ACTIONS: Final = ("write", "append", "read", "clear")
EVENT_ACTIONS: Final = ("write", "append", "clear", "set", "rm")
OPENCLAW_SCRATCHPAD_TYPE: Final = "openclaw:scratchpad"
DEFAULT_AGENT_CAP: Final = 2000
COMPACT_MAX_EVENTS: Final = 1000
COMPACT_MAX_BYTES: Final = 1024 * 1024
LOCK_TIMEOUT_S: Final = 10.0

NAME_RULE: Final = (
    "a section is goal, findings, artifacts, errors, main, or a custom name of 1 to 32 "
    "characters: a lowercase letter, then lowercase letters, digits, '-' or '_' "
    "(e.g. 'api-notes')"
)
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_NO_CAPS: Mapping[str, int] = MappingProxyType({})
_MAX_TTL: Final = 100 * 365 * 86400.0  # seconds; a longer TTL in the journal is corrupt

EventAction = Literal["write", "append", "clear", "set", "rm"]
SectionKind = Literal["agent", "subsystem"]


def _local_now() -> datetime:
    return datetime.now().astimezone()


def _aware(moment: datetime) -> datetime:
    # A naive datetime is local time by Python's convention.
    return moment if moment.tzinfo is not None else moment.astimezone()


def _local_time(moment: datetime) -> str:
    """Given a time, return it for people: local time, to the second, with its offset."""
    return _aware(moment).astimezone().isoformat(timespec="seconds")


def journal_path(state_dir: Path) -> Path:
    """Given the workspace's state folder (`.scratchpad/`), return the sections journal's path."""
    return state_dir / JOURNAL_NAME


# --------------------------------------------------------------------------------------------
# Names and order.
# --------------------------------------------------------------------------------------------


def is_valid_section_name(name: object) -> bool:
    """Given any value, return whether it is a usable section name."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


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


def _order_key(state: SectionState) -> tuple[int, int, str]:
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
    return sorted(states, key=_order_key)


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
            "time": _aware(self.time).isoformat(),
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
    moment = _aware(now)
    live = (s for s in state.values() if s.expires is None or s.expires > moment)
    return {s.name: s for s in ordered(live)}


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
# The journal.
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
            event = Event.from_obj(json.loads(raw))
        except ValueError:  # includes JSONDecodeError and UnicodeDecodeError
            event = None
        if event is None:
            bad.append(raw)  # a line cut short by a crash, or one written by hand
        else:
            events.append(event)
    return JournalRead(events, len(bad), tuple(bad))


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Journal:
    """The append-only sections journal, with an inter-process lock on `<journal>.lock`."""

    def __init__(
        self,
        path: Path | str,
        *,
        now: Callable[[], datetime] = _local_now,
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
                _write_all(fd, data)  # O_APPEND: at the end, whatever the offset
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
            held = Counter(_read_all(fd).split(b"\n"))
            new = []
            for line in lines:
                if held[line] > 0:
                    held[line] -= 1
                else:
                    new.append(line)
            _write_all(fd, b"".join(line + b"\n" for line in new))
            os.fsync(fd)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------------------------
# Answers and budgets.
# --------------------------------------------------------------------------------------------


@dataclass
class Answer:
    """The result of a scratchpad call: whether it was done, what to tell the caller, details."""

    ok: bool
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """Return the answer as a JSON object with `ok`, `message` and `data`."""
        return json.dumps(
            {"ok": self.ok, "message": self.message, "data": self.data}, ensure_ascii=False
        )


@dataclass(frozen=True)
class _Budget:
    section_cap: int | None  # the section's own cap, if it has one
    others: int  # tokens of the other agent sections
    agent_cap: int

    @property
    def room(self) -> int:
        return self.agent_cap - self.others

    @property
    def limit(self) -> int:
        if self.section_cap is None:
            return self.room
        return min(self.section_cap, self.room)

    @property
    def binding(self) -> Literal["section", "agent part"]:
        if self.section_cap is not None and self.section_cap <= self.room:
            return "section"
        return "agent part"


@dataclass(frozen=True)
class _Stored:
    """What a write or append did, with the numbers the messages need."""

    outcome: Literal["stored", "truncated", "rejected", "no_room", "conflict", "empty"]
    budget: _Budget
    tokens: int = 0  # the section's tokens after the call
    original: int = 0  # tokens of the content given to a write
    current: int = 0  # the section's tokens before an append
    added: int = 0  # how many tokens the append adds
    over: Literal["section", "agent part"] | None = None
    conflict: SectionState | None = None


def truncate_to_tokens(text: str, limit: int, count: TokenCounter = estimate_tokens) -> str:
    """Given a text, a token limit and a counter, return the longest prefix within the limit.

    The cut is at a character boundary; a line end, else a word end, is preferred when it keeps
    at least 80% of the prefix.
    """
    if count(text) <= limit:
        return text
    if limit <= 0:
        return ""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    floor = (low * 4) // 5
    for separators in (("\n",), ("\n", " ", "\t")):
        at = max(text.rfind(sep, 0, low + 1) for sep in separators)
        if at >= floor and at > 0:
            candidate = text[:at].rstrip(" \t\r")
            if candidate and count(candidate) <= limit:
                return candidate
    return text[:low]


# --------------------------------------------------------------------------------------------
# The scratchpad: the operations agents and subsystems call.
# --------------------------------------------------------------------------------------------

_TOOL_KEYS: Final = ("action", "section", "content")
_ACTION_ALIASES: Final = ("op", "operation", "cmd", "command", "method", "mode", "type", "verb")
_CONTENT_ALIASES: Final = tuple("text value note notes message data body contents entry".split())
_SECTION_ALIASES: Final = ("name", "category", "key", "title", "sections", "section_name")
# Words agents use for an action; the answer names the action they meant.
_ACTION_SYNONYMS: Final = {
    **dict.fromkeys("save set replace overwrite update put store".split(), "write"),
    **dict.fromkeys("add insert push".split(), "append"),
    **dict.fromkeys("get show list view load".split(), "read"),
    **dict.fromkeys("delete remove reset erase wipe".split(), "clear"),
}
_ACTION_PURPOSE: Final = {
    "write": "overwrite a section",
    "append": "add to a section",
    "read": "read sections",
    "clear": "erase sections",
}


def _tokens(count: int) -> str:
    """Given a number of tokens, return it for a message: '1 token', '2 tokens'."""
    return f"{count} token" if count == 1 else f"{count} tokens"


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _looks_like_text(value: str) -> bool:
    """Whether a value reads as prose rather than a keyword: spaces, length or punctuation."""
    return (
        any(ch.isspace() for ch in value)
        or len(value) > 24
        or any(not (ch.isalnum() or ch in "_-") for ch in value)
    )


def _call(action: str, section: str | None = None, content: str | None = None) -> str:
    call: dict[str, str] = {"action": action}
    if section is not None:
        call["section"] = section
    if content is not None:
        call["content"] = content
    return json.dumps(call, ensure_ascii=False)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _json_value(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


_SESSION_KEYS: Final = ("content", "mode")


def _session_call_text(content: object, mode: object) -> str:
    """Given what a seed 000 call had, return the right call, keeping its text and mode."""
    text = _preview(content) if isinstance(content, str) and content else "## Plan\n1. ..."
    right = mode if mode in ("replace", "append") else "replace"
    return json.dumps({"content": text, "mode": right}, ensure_ascii=False)


def _mistake(mistake: str, message: str) -> Answer:
    return Answer(False, message, {"mistake": mistake})


class Scratchpad:
    """Agent and subsystem sections over a journal, held to per-section and agent-part caps.

    Calls that an agent can get wrong return an Answer with `ok=False` and a message that says
    what to do; only programming errors raise.
    """

    def __init__(
        self,
        journal: Journal,
        *,
        agent_cap: int = DEFAULT_AGENT_CAP,
        section_caps: Mapping[str, int] = _NO_CAPS,
        count: TokenCounter = estimate_tokens,
        now: Callable[[], datetime] | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        if agent_cap <= 0:
            raise ValueError(f"agent_cap must be positive, got {agent_cap}")
        for name, cap in section_caps.items():
            if cap <= 0:
                raise ValueError(f"the cap of section {name!r} must be positive, got {cap}")
        self.journal = journal
        self.agent_cap = agent_cap
        self.section_caps = dict(section_caps)
        self.count = count
        self.now = now if now is not None else journal.now
        self.on_change = on_change  # called after each change is recorded

    # -- reading -------------------------------------------------------------------------------

    def state(self) -> dict[str, SectionState]:
        """Return the current sections (agent and live subsystem ones) in display order."""
        return self.journal.fold(_aware(self.now()))

    def cap_of(self, section: str) -> int | None:
        """Given a section name, return its own token cap (main: the agent cap), or None."""
        if section in self.section_caps:
            return self.section_caps[section]
        return self.agent_cap if section == DEFAULT_SECTION else None

    def agent_tokens(self, state: Mapping[str, SectionState]) -> int:
        """Given folded sections, return the tokens of the agent part (sum over sections)."""
        return sum(self.count(s.content) for s in state.values() if s.kind == "agent")

    def read(self, section: str | None = None) -> Answer:
        """Given a section name, or None for all, return its text as written.

        One section: `data["content"]` is its text exactly (empty if it has none). All:
        `data["sections"]` maps agent sections to their text, `data["subsystem"]` the live
        subsystem sections, in display order.
        """
        state = self.state()
        total = self.agent_tokens(state)
        if section is None:
            agent = {n: s.content for n, s in state.items() if s.kind == "agent"}
            subsystem = {n: s.content for n, s in state.items() if s.kind == "subsystem"}
            if agent:
                message = (
                    f"{len(agent)} section{'s' if len(agent) != 1 else ''} "
                    f"({total}/{self.agent_cap} tokens used): {', '.join(agent)}."
                )
            else:
                message = "The scratchpad is empty."
            return Answer(
                True,
                message,
                {
                    "action": "read",
                    "sections": agent,
                    "subsystem": subsystem,
                    "tokens": {n: self.count(s.content) for n, s in state.items()},
                    "agent_tokens": total,
                    "agent_cap": self.agent_cap,
                },
            )
        problem = self._check_section(section)
        if problem is not None:
            return problem
        found = state.get(section)
        if found is None:
            present = [n for n, s in state.items() if s.kind == "agent"]
            others = f" Sections with content: {', '.join(present)}." if present else ""
            return Answer(
                True,
                f"Section '{section}' is empty.{others}",
                {"action": "read", "section": section, "content": "", "tokens": 0},
            )
        tokens = self.count(found.content)
        when = f"updated {_local_time(found.updated)} by {found.source or 'unknown'}"
        return Answer(
            True,
            f"Section '{section}' ({_tokens(tokens)}, {when})."
            if found.content
            else f"Section '{section}' is empty ({when}).",
            {
                "action": "read",
                "section": section,
                "content": found.content,
                "tokens": tokens,
                "kind": found.kind,
                "updated": found.updated.isoformat(),
                "source": found.source,
                "expires": found.expires.isoformat() if found.expires else None,
            },
        )

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[tuple[datetime, dict[str, SectionState]]]:
        # The caps are checked against the state read under the same lock as the append, so
        # two processes cannot both fit into the same room.
        with self.journal.locked():
            now = _aware(self.now())
            yield now, fold_events(self.journal.events(), now)

    def _commit(self, events: Sequence[Event], now: datetime) -> None:
        if not events:
            return  # nothing recorded: no reason to read the journal again for compaction
        self.journal.record_many(events)
        self.journal.compact(now=now)
        if self.on_change is not None:
            self.on_change()

    def _budget(self, state: Mapping[str, SectionState], section: str) -> _Budget:
        others = sum(
            self.count(s.content) for s in state.values() if s.kind == "agent" and s.name != section
        )
        return _Budget(self.cap_of(section), others, self.agent_cap)

    def _store(
        self, section: str, content: str, mode: Literal["write", "append"], source: str
    ) -> _Stored:
        with self._transaction() as (now, state):
            budget = self._budget(state, section)
            existing = state.get(section)
            if existing is not None and existing.kind == "subsystem":
                return _Stored("conflict", budget, conflict=existing)
            current_text = existing.content if existing is not None else ""
            current = self.count(current_text)
            if mode == "append":
                if not content:
                    return _Stored("empty", budget, tokens=current, current=current)
                combined = f"{current_text}\n{content}" if current_text else content
                after = self.count(combined)
                over: Literal["section", "agent part"] | None = None
                if budget.section_cap is not None and after > budget.section_cap:
                    over = "section"
                elif budget.others + after > budget.agent_cap:
                    over = "agent part"
                if over is None:
                    self._commit([Event(now, section, "append", content, source)], now)
                return _Stored(
                    "stored" if over is None else "rejected",
                    budget,
                    tokens=after if over is None else current,
                    current=current,
                    added=after - current,
                    over=over,
                )
            original = self.count(content)
            if original <= budget.limit:
                self._commit([Event(now, section, "write", content, source)], now)
                return _Stored("stored", budget, tokens=original, original=original)
            if budget.limit <= 0:
                return _Stored("no_room", budget, tokens=current, original=original)
            kept = truncate_to_tokens(content, budget.limit, self.count)
            self._commit([Event(now, section, "write", kept, source)], now)
            return _Stored(
                "truncated",
                budget,
                tokens=self.count(kept),
                original=original,
                over=budget.binding,
            )

    def _check_section(self, section: object) -> Answer | None:
        if is_valid_section_name(section):
            return None
        return _mistake("section-name", f"Section name {section!r} is not valid: {NAME_RULE}.")

    @staticmethod
    def _conflict_message(section: str, owner: SectionState) -> str:
        return (
            f"Section '{section}' is written by a subsystem ({owner.source or 'unknown'}) and "
            f"cannot be changed by an agent; use another section, e.g. "
            f"{_call('write', 'findings', 'your text')}"
        )

    def _usage(self, result: _Stored) -> str:
        total = result.budget.others + result.tokens
        cap = result.budget.section_cap
        own = f"{result.tokens}/{cap} tokens" if cap is not None else _tokens(result.tokens)
        return f"{own}; agent part {total}/{self.agent_cap} tokens used"

    def _data(self, action: str, section: str, result: _Stored) -> dict[str, Any]:
        return {
            "action": action,
            "section": section,
            "tokens": result.tokens,
            "section_cap": result.budget.section_cap,
            "agent_tokens": result.budget.others + result.tokens,
            "agent_cap": self.agent_cap,
            "truncated": result.outcome == "truncated",
        }

    def write(
        self, content: str, *, section: str = DEFAULT_SECTION, source: str = "agent"
    ) -> Answer:
        """Given text and a section (default main), replace the section's text with it.

        Over the section's cap or the agent-part cap the text is truncated to fit and the
        answer gives both sizes; when the agent part has no room left the write is rejected.
        """
        problem = self._check_section(section)
        if problem is not None:
            return problem
        result = self._store(section, content, "write", source)
        data = self._data("write", section, result)
        budget = result.budget
        if result.outcome == "conflict":
            assert result.conflict is not None
            return Answer(False, self._conflict_message(section, result.conflict), data)
        if result.outcome == "no_room":
            return Answer(
                False,
                f"No room for section '{section}': the other agent sections use {budget.others} "
                f"of the {self.agent_cap} token agent part, and the text has "
                f"{_tokens(result.original)}. Clear or shorten another section first.",
                data,
            )
        if result.outcome == "truncated":
            if result.over == "section":
                message = (
                    f"Section '{section}' truncated to {_tokens(result.tokens)}, within its "
                    f"section cap of {budget.limit} (original: {result.original}). Consider "
                    "summarizing."
                )
            else:
                message = (
                    f"Section '{section}' truncated to {_tokens(result.tokens)}, within the "
                    f"{budget.limit} left (original: {result.original}): the agent part cap is "
                    f"{self.agent_cap} tokens and the other sections use {budget.others}. "
                    "Consider summarizing, or clear sections you no longer need."
                )
            return Answer(True, message, data | {"original_tokens": result.original})
        return Answer(True, f"Wrote section '{section}' ({self._usage(result)}).", data)

    def append(
        self, content: str, *, section: str = DEFAULT_SECTION, source: str = "agent"
    ) -> Answer:
        """Given text and a section (default main), add the text as a new line of the section.

        If the result would exceed the section's cap or the agent-part cap the append is
        rejected, the section is left as it was, and the answer gives current, added and cap.
        """
        problem = self._check_section(section)
        if problem is not None:
            return problem
        result = self._store(section, content, "append", source)
        data = self._data("append", section, result)
        budget = result.budget
        if result.outcome == "conflict":
            assert result.conflict is not None
            return Answer(False, self._conflict_message(section, result.conflict), data)
        if result.outcome == "empty":
            return Answer(False, "Nothing to append: `content` is empty.", data)
        if result.outcome == "rejected":
            data |= {"current_tokens": result.current, "append_tokens": result.added}
            if result.over == "section":
                message = (
                    f"Append would exceed the {budget.section_cap} token cap of section "
                    f"'{section}' (current: {result.current}, append: {result.added}). Use "
                    "write to rewrite the section, or reduce content."
                )
            else:
                message = (
                    f"Append would exceed the {self.agent_cap} token cap of the agent part "
                    f"(current: {budget.others + result.current}, append: {result.added}). "
                    "Rewrite a section shorter with write, clear sections you no longer need, "
                    "or reduce content."
                )
            return Answer(False, message, data)
        return Answer(True, f"Appended to section '{section}' ({self._usage(result)}).", data)

    def clear(self, section: str | None = None, *, source: str = "agent") -> Answer:
        """Given a section name, or None for all agent sections, erase it.

        Subsystem sections are left alone (they are removed with `remove_section`).
        """
        if section is not None:
            problem = self._check_section(section)
            if problem is not None:
                return problem
        with self._transaction() as (now, state):
            if section is None:
                names = [n for n, s in state.items() if s.kind == "agent"]
                self._commit([Event(now, n, "clear", "", source) for n in names], now)
                if not names:
                    return Answer(
                        True,
                        "The scratchpad was already empty.",
                        {"action": "clear", "cleared": []},
                    )
                plural = "s" if len(names) != 1 else ""
                return Answer(
                    True,
                    f"Cleared {len(names)} section{plural}: {', '.join(names)}.",
                    {"action": "clear", "cleared": names},
                )
            found = state.get(section)
            if found is None:
                return Answer(
                    True,
                    f"Section '{section}' was already empty.",
                    {"action": "clear", "cleared": []},
                )
            if found.kind == "subsystem":
                return Answer(
                    False,
                    self._conflict_message(section, found),
                    {"action": "clear", "cleared": []},
                )
            self._commit([Event(now, section, "clear", "", source)], now)
        return Answer(
            True, f"Cleared section '{section}'.", {"action": "clear", "cleared": [section]}
        )

    def session_tool(
        self, content: object, mode: object = "replace", *, source: str = "agent"
    ) -> Answer:
        """Given seed 000's `{content, mode}` call, replace or append to section main.

        The budget is main's cap (default: the agent cap), less what the other agent sections
        use. `replace` over budget is truncated, `append` over budget is rejected and main left
        unchanged; the messages are the seed's.
        """
        if mode not in ("replace", "append"):
            word = mode.strip().lower() if isinstance(mode, str) else ""
            meant = _ACTION_SYNONYMS.get(word, word)
            right = "append" if meant == "append" else "replace"
            return _mistake(
                "mode",
                f"`mode` must be 'replace' (overwrite the scratchpad) or 'append' (add to it), "
                f"got {_json_value(mode)}. Use {_session_call_text(content, right)}",
            )
        if not isinstance(content, str):
            return _mistake(
                "content-type",
                f"`content` must be a string (the text to save), got {_json_type(content)}.",
            )
        action: Literal["write", "append"] = "append" if mode == "append" else "write"
        result = self._store(DEFAULT_SECTION, content, action, source)
        budget = result.budget
        data = self._data(mode, DEFAULT_SECTION, result) | {"budget": max(budget.limit, 0)}
        shared = ""
        main_cap = self.cap_of(DEFAULT_SECTION)
        if main_cap is not None and budget.limit < main_cap and budget.others:
            shared = (
                f" Other agent sections use {budget.others} of the {self.agent_cap} tokens of "
                "the agent part."
            )
        if result.outcome == "conflict":
            assert result.conflict is not None
            return Answer(False, self._conflict_message(DEFAULT_SECTION, result.conflict), data)
        if result.outcome == "empty":
            return Answer(False, "Nothing to append: `content` is empty.", data)
        if result.outcome == "no_room":
            return Answer(
                False,
                f"No room in the scratchpad budget: other agent sections use {budget.others} of "
                f"the {self.agent_cap} tokens of the agent part. Clear or shorten them first.",
                data,
            )
        if result.outcome == "truncated":
            return Answer(
                True,
                f"Scratchpad truncated to {_tokens(result.tokens)}, within its {budget.limit} "
                f"token budget (original: {result.original}). Consider summarizing.{shared}",
                data | {"original_tokens": result.original},
            )
        if result.outcome == "rejected":
            return Answer(
                False,
                f"Append would exceed {budget.limit} token budget (current: {result.current}, "
                f"append: {result.added}). Use mode 'replace' to rewrite, or reduce content."
                f"{shared}",
                data | {"current_tokens": result.current, "append_tokens": result.added},
            )
        verb = "appended" if mode == "append" else "updated"
        return Answer(
            True, f"Scratchpad {verb} ({result.tokens}/{budget.limit} tokens used).{shared}", data
        )

    def session_call(self, args: Mapping[str, Any], *, source: str = "tool") -> Answer:
        """Given seed 000's call as a JSON object `{"content", "mode"?}`, carry it out.

        A call without `content` is answered naming the keys it has instead (the text put in
        `text`, say) and showing the right call; so is a key the call does not take. Otherwise
        see `session_tool`.
        """
        extra = [k for k in args if k not in _SESSION_KEYS]
        if "content" not in args:
            alias = next(
                (k for k in extra if isinstance(k, str) and k.lower() in _CONTENT_ALIASES), None
            )
            text = args[alias] if alias is not None else None
            seen = ", ".join(f"`{k}`" for k in extra)
            got = f"; the call has {seen} instead" if seen else ""
            return _mistake(
                "missing-content",
                f"Missing `content`: the text to save goes in `content`{got}. Use "
                f"{_session_call_text(text, args.get('mode', 'replace'))}",
            )
        if extra:
            names = ", ".join(f"`{k}`" for k in extra)
            plural = "s" if len(extra) != 1 else ""
            return _mistake(
                "unknown-key",
                f"Unknown parameter{plural} {names}: the call takes only `content` and `mode`, "
                f"e.g. {_session_call_text(args['content'], args.get('mode', 'replace'))}",
            )
        return self.session_tool(args["content"], args.get("mode", "replace"), source=source)

    # -- the seed 004 JSON tool ----------------------------------------------------------------

    def tool_call(self, args: Mapping[str, Any], source: str = "tool") -> Answer:
        """Given seed 004's JSON call `{"action", "section"?, "content"?}`, carry it out.

        Each common mistake (missing `content`, `op` instead of `action`, text as the action,
        text in `section`, unknown keys, wrong types, unknown actions) is answered with
        `ok=False`, a message naming the mistake and the right call, and `data["mistake"]`.
        """
        checked = _check_tool_call(args)
        if isinstance(checked, Answer):
            return checked
        action, section, content = checked
        if action == "write":
            assert content is not None
            return self.write(content, section=section or DEFAULT_SECTION, source=source)
        if action == "append":
            assert content is not None
            return self.append(content, section=section or DEFAULT_SECTION, source=source)
        if action == "read":
            return self.read(section)
        return self.clear(section, source=source)

    # -- subsystem sections --------------------------------------------------------------------

    def set_section(
        self,
        name: str,
        content: str,
        *,
        ttl: timedelta | None = None,
        source: str = "subsystem",
    ) -> Answer:
        """Given a name, text, a TTL (None: no expiry) and a source, set a subsystem section.

        The section disappears from the folded state when the TTL runs out. Names of agent
        sections are refused, and a configured cap for the name truncates the text.
        """
        problem = self._check_section(name)
        if problem is not None:
            return problem
        if name in AGENT_SECTIONS:
            return _mistake(
                "agent-section",
                f"Section '{name}' is an agent section; give the subsystem section its own "
                "name, e.g. 'alerts'.",
            )
        if ttl is not None and ttl.total_seconds() <= 0:
            return _mistake("ttl", f"The TTL must be positive, got {ttl}; e.g. 2h.")
        cap = self.section_caps.get(name)
        original = self.count(content)
        kept = content
        if cap is not None and original > cap:
            kept = truncate_to_tokens(content, cap, self.count)
        with self._transaction() as (now, state):
            found = state.get(name)
            if found is not None and found.kind == "agent":
                return _mistake(
                    "agent-section",
                    f"Section '{name}' is an agent section (written by "
                    f"{found.source or 'an agent'}); give the subsystem section another name.",
                )
            seconds = ttl.total_seconds() if ttl is not None else None
            self._commit([Event(now, name, "set", kept, source, seconds)], now)
            expires = now + ttl if ttl is not None else None
        tokens = self.count(kept)
        until = f"expires {_local_time(expires)}" if expires else "no expiry"
        data: dict[str, Any] = {
            "action": "set",
            "section": name,
            "tokens": tokens,
            "expires": expires.isoformat() if expires else None,
            "truncated": kept != content,
        }
        if kept != content:
            return Answer(
                True,
                f"Section '{name}' truncated to {_tokens(tokens)}, within its section cap of "
                f"{cap} (original: {original}); {until}.",
                data | {"original_tokens": original},
            )
        return Answer(True, f"Section '{name}' set ({_tokens(tokens)}, {until}).", data)

    def remove_section(self, name: str, *, source: str = "subsystem") -> Answer:
        """Given a subsystem section's name, remove it. Agent sections are refused."""
        problem = self._check_section(name)
        if problem is not None:
            return problem
        with self._transaction() as (now, state):
            found = state.get(name)
            if found is None:
                return Answer(True, f"Section '{name}' was not set.", {"removed": False})
            if found.kind == "agent":
                return _mistake(
                    "agent-section",
                    f"Section '{name}' is an agent section; clear it with "
                    f"{_call('clear', name)} or `assemble pad clear --section {name}`.",
                )
            self._commit([Event(now, name, "rm", "", source)], now)
        return Answer(True, f"Removed section '{name}'.", {"removed": True})

    # -- imports -------------------------------------------------------------------------------

    def import_file_edits(
        self, edited: Mapping[str, str | None], source: str = "file-edit"
    ) -> Answer:
        """Given agent sections found in an edited SCRATCHPAD.md (None: deleted), journal them.

        Changed sections get a `write` with the text as found (no cap cuts it: nothing the
        agent wrote is lost), deleted ones a `clear`; unchanged ones nothing. Names that are
        invalid or belong to subsystem sections are skipped. Pass only the sections whose text
        differs from what was rendered (see `file_edits`): a section the render shortened would
        otherwise be imported shortened. `data` lists `written`, `cleared` and `skipped`.
        """
        written: list[str] = []
        cleared: list[str] = []
        skipped: list[str] = []
        with self._transaction() as (now, state):
            events = []
            for name, content in edited.items():
                found = state.get(name)
                if not is_valid_section_name(name) or (
                    found is not None and found.kind == "subsystem"
                ):
                    skipped.append(name)
                elif content is None:
                    if found is not None:
                        events.append(Event(now, name, "clear", "", source))
                        cleared.append(name)
                elif (found is None and content) or (
                    found is not None and found.content != content
                ):
                    events.append(Event(now, name, "write", content, source))
                    written.append(name)
            self._commit(events, now)
        parts = []
        if written:
            parts.append(f"wrote {', '.join(written)}")
        if cleared:
            parts.append(f"cleared {', '.join(cleared)}")
        message = f"Imported edits: {'; '.join(parts)}." if parts else "No edits to import."
        if skipped:
            message += f" Skipped {', '.join(repr(n) for n in skipped)} (not agent sections)."
        return Answer(True, message, {"written": written, "cleared": cleared, "skipped": skipped})

    def import_openclaw_entries(
        self, entries: Iterable[Mapping[str, Any]], *, source: str = "openclaw"
    ) -> Answer:
        """Given OpenClaw session entries, import the newest scratchpad entry as section main.

        Entries count when they are `custom` entries whose `customType` starts with
        `openclaw:scratchpad` and that have a timestamp and text (`data` as a string, or its
        `content` or `text`). The newest one is written to main (with its own time) only if its
        text differs from main's and it is newer than main's last change (a write or a clear).
        """
        candidates: list[tuple[datetime, int, str]] = []
        for index, entry in enumerate(entries):
            if not is_openclaw_scratchpad_entry(entry):
                continue
            text = openclaw_entry_text(entry)
            moment = openclaw_entry_time(entry)
            if text is not None and moment is not None:
                candidates.append((moment, index, text))
        if not candidates:
            return Answer(True, "No OpenClaw scratchpad entries to import.", {"imported": False})
        moment, _, text = max(candidates)
        with self._transaction() as (now, state):
            main = state.get(DEFAULT_SECTION)
            changed = last_changes(self.journal.events()).get(DEFAULT_SECTION)
            data: dict[str, Any] = {"imported": False, "entry_time": moment.isoformat()}
            if main is not None and main.content == text:
                return Answer(True, "Section main already holds the newest entry.", data)
            if changed is not None and moment <= changed:
                return Answer(
                    True,
                    f"Section main changed at {changed.isoformat()}, after the newest OpenClaw "
                    f"scratchpad entry ({moment.isoformat()}); kept main.",
                    data,
                )
            self._commit([Event(moment, DEFAULT_SECTION, "write", text, source)], now)
        return Answer(
            True,
            f"Imported the OpenClaw scratchpad entry of {moment.isoformat()} into section main.",
            data | {"imported": True},
        )


def _check_tool_call(args: object) -> Answer | tuple[str, str | None, str | None]:
    """Given a seed 004 call, return (action, section, content), or the Answer for a mistake."""
    if not isinstance(args, Mapping):
        return _mistake(
            "not-an-object",
            f"The call must be a JSON object, e.g. {_call('write', 'findings', 'your text')}",
        )
    content_given = args.get("content")
    preview = _preview(content_given) if isinstance(content_given, str) else "your text"

    if "action" not in args:
        alias = next((k for k in args if isinstance(k, str) and k.lower() in _ACTION_ALIASES), None)
        if alias is not None:
            value = args[alias]
            action = value if value in TOOL_ACTIONS else "write"
            section = args.get("section") if is_valid_section_name(args.get("section")) else None
            content = preview if action in ("write", "append") else None
            return _mistake(
                "action-alias",
                f"The parameter is called `action`, not `{alias}`: "
                f"{_call(action, section, content)}",
            )
        return _mistake(
            "missing-action",
            "Missing `action`: say what to do, one of write, append, read, clear. Use "
            f"{_call('write', None, preview)}",
        )

    unknown = [k for k in args if k not in _TOOL_KEYS]
    if unknown:
        key = unknown[0]
        lowered = key.lower() if isinstance(key, str) else ""
        action = args["action"] if args["action"] in TOOL_ACTIONS else "write"
        if lowered in _CONTENT_ALIASES:
            value = args[key]
            text = _preview(value) if isinstance(value, str) else "your text"
            section = args.get("section") if is_valid_section_name(args.get("section")) else None
            if action not in ("write", "append"):
                action = "write"
            return _mistake(
                "content-alias",
                f"The text goes in `content`, not `{key}`: {_call(action, section, text)}",
            )
        if lowered in _SECTION_ALIASES:
            value = args[key]
            name = value if is_valid_section_name(value) else "findings"
            content = preview if action in ("write", "append") else None
            return _mistake(
                "section-alias",
                f"The section name goes in `section`, not `{key}`: {_call(action, name, content)}",
            )
        names = ", ".join(f"`{k}`" for k in unknown)
        plural = "s" if len(unknown) != 1 else ""
        return _mistake(
            "unknown-key",
            f"Unknown parameter{plural} {names}: the call takes only `action`, `section` and "
            f"`content`, e.g. {_call('write', 'findings', 'your text')}",
        )

    action = args["action"]
    if not isinstance(action, str):
        return _mistake(
            "action-type",
            f"`action` must be a string, one of write, append, read, clear; got "
            f"{_json_type(action)}. Use {_call('write', None, preview)}",
        )
    if action not in TOOL_ACTIONS:
        word = action.strip().lower()
        if word in TOOL_ACTIONS:
            return _mistake(
                "action-case",
                f"Unknown action {action!r}: actions are lowercase. Use "
                f"{_call(word, None, preview if word in ('write', 'append') else None)}",
            )
        if word in _ACTION_SYNONYMS:
            meant = _ACTION_SYNONYMS[word]
            content = preview if meant in ("write", "append") else None
            return _mistake(
                "action-synonym",
                f"Unknown action {action!r}: use '{meant}' to {_ACTION_PURPOSE[meant]}: "
                f"{_call(meant, None, content)}",
            )
        if _looks_like_text(action):
            return _mistake(
                "action-is-text",
                "Passing text as the action value is wrong. Use "
                f"{_call('write', None, _preview(action))}",
            )
        return _mistake(
            "unknown-action",
            f"Unknown action {action!r}: use one of write, append, read, clear, e.g. "
            f"{_call('write', 'findings', 'your text')}",
        )

    section = args.get("section")
    if section is not None:
        if not isinstance(section, str):
            return _mistake(
                "section-type",
                f'`section` must be a string naming the category, e.g. "findings"; got '
                f"{_json_type(section)}.",
            )
        if not is_valid_section_name(section):
            lowered = section.strip().lower()
            content = preview if action in ("write", "append") else None
            if is_valid_section_name(lowered):
                return _mistake(
                    "section-case",
                    f"Section names are lowercase: use {_call(action, lowered, content)}",
                )
            if _looks_like_text(section):
                text = content_given if isinstance(content_given, str) else section
                right = _call(
                    action,
                    "findings",
                    _preview(text) if action in ("write", "append") else None,
                )
                return _mistake(
                    "section-is-text",
                    "`section` is the category name (goal, findings, artifacts, errors, main, "
                    'or a short custom name like "api-notes"), `content` is the text. It '
                    f"looks like you put text in `section`; use {right}",
                )
            return _mistake(
                "section-name",
                f"Section name {section!r} is not valid: {NAME_RULE}. Use "
                f"{_call(action, 'findings', content)}",
            )

    content = args.get("content")
    if action in ("write", "append"):
        if content is None:
            return _mistake(
                "missing-content",
                f"Missing `content`: {action} needs the text to save. Use "
                f"{_call(action, section, 'your text')}",
            )
        if not isinstance(content, str):
            hint = (
                " (turn it into text first, e.g. one item per line)"
                if isinstance(content, list | tuple | Mapping)
                else ""
            )
            return _mistake(
                "content-type",
                f"`content` must be a string (the text to save), got {_json_type(content)}"
                f"{hint}. Use {_call(action, section, 'your text')}",
            )
    elif content not in (None, ""):
        return _mistake(
            "content-not-allowed",
            f"`content` is only for write and append; {action} takes none. Use "
            f"{_call(action, section)}",
        )
    return action, section, content if isinstance(content, str) else None


def file_edits(rendered: Mapping[str, str], found: Mapping[str, str]) -> dict[str, str | None]:
    """Given the agent sections as rendered and as found in the file now, return the edits.

    A section whose text differs is mapped to the new text, one that is gone to None; the
    result is what `Scratchpad.import_file_edits` takes.
    """
    edits: dict[str, str | None] = {n: t for n, t in found.items() if rendered.get(n) != t}
    edits.update({name: None for name in rendered if name not in found})
    return edits


def section_caps_of(config: Config) -> dict[str, int]:
    """Given a loaded config, return the caps of agent and subsystem sections by name (the
    `caps.sections` entries that name no auto-generated section)."""
    from assembler.config import AUTO_SECTIONS

    return {n: c for n, c in config.caps.sections.items() if n not in AUTO_SECTIONS}


def scratchpad_for(
    config: Config, *, now: Callable[[], datetime] | None = None, refresh_ready: bool = False
) -> Scratchpad:
    """Given a loaded config, return the workspace's Scratchpad with its caps and counter.

    With `refresh_ready` (the agent's and subsystems' own calls), every change also rewrites
    the ready block hosts inject (`assembler.ready`), so the next turn has it without waiting
    for an assembly.
    """
    from assembler.tokens import get_counter

    clock = now if now is not None else _local_now

    def refresh() -> None:
        from assembler.ready import refresh_ready as write

        try:
            write(config, _aware(clock()))
        except Exception:  # the journal has the change; the next assembly writes the block
            log.exception("cannot refresh the ready block")

    journal = Journal(journal_path(config.state_dir), now=clock)
    caps = section_caps_of(config)
    return Scratchpad(
        journal,
        agent_cap=config.caps.agent,
        section_caps=caps,
        count=get_counter(config.tokens.counter),
        now=clock,
        on_change=refresh if refresh_ready else None,
    )


# --------------------------------------------------------------------------------------------
# OpenClaw session entries.
# --------------------------------------------------------------------------------------------


def is_openclaw_scratchpad_entry(entry: object) -> bool:
    """Given a session entry, return whether it is a custom `openclaw:scratchpad*` entry."""
    if not isinstance(entry, Mapping):
        return False
    kind = entry.get("customType")
    return (
        entry.get("type", "custom") == "custom"
        and isinstance(kind, str)
        and kind.startswith(OPENCLAW_SCRATCHPAD_TYPE)
    )


def openclaw_entry_text(entry: Mapping[str, Any]) -> str | None:
    """Given a scratchpad entry, return its text (`data`, `data.content` or `data.text`)."""
    data = entry.get("data")
    if isinstance(data, str):
        return data
    if isinstance(data, Mapping):
        for key in ("content", "text"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return None


def _parse_time(value: object) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if abs(seconds) >= 1e11:  # milliseconds, as OpenClaw writes them
            seconds /= 1000
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return None


def openclaw_entry_time(entry: Mapping[str, Any]) -> datetime | None:
    """Given a session entry, return its timestamp (the entry's, else `data.timestamp`)."""
    moment = _parse_time(entry.get("timestamp"))
    data = entry.get("data")
    if moment is None and isinstance(data, Mapping):
        moment = _parse_time(data.get("timestamp"))
    return moment


def read_openclaw_scratchpad_entries(
    paths: Iterable[Path | str], *, tail_bytes: int | None = None
) -> list[dict[str, Any]]:
    """Given OpenClaw session JSONL files (or agent databases, `.sqlite`), return their
    `openclaw:scratchpad*` custom entries.

    With `tail_bytes`, only the last that many bytes of each file are read (from the first
    whole line in them), so the cost follows the tail, not the file. Entries come in file
    order, files in the order given. Unreadable files and bad lines are skipped.
    """
    needle = OPENCLAW_SCRATCHPAD_TYPE.encode()
    found: list[dict[str, Any]] = []
    for path in paths:
        if str(path).endswith(".sqlite"):  # OpenClaw's store (2026.9 and later)
            from assembler.transcripts import store_custom_entries

            for value in store_custom_entries(Path(path), OPENCLAW_SCRATCHPAD_TYPE):
                if isinstance(value, dict) and is_openclaw_scratchpad_entry(value):
                    found.append(value)
            continue
        try:
            with open(path, "rb") as handle:
                if tail_bytes is not None:
                    size = os.fstat(handle.fileno()).st_size
                    if size > tail_bytes:
                        handle.seek(size - tail_bytes - 1)
                        handle.readline()  # the rest of a line cut by the seek
                for raw in handle:
                    if needle not in raw:
                        continue  # most lines are messages; skip them unparsed
                    try:
                        value = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(value, dict) and is_openclaw_scratchpad_entry(value):
                        found.append(value)
        except OSError:
            continue
    return found


# --------------------------------------------------------------------------------------------
# Markers: agent sections in SCRATCHPAD.md.
# --------------------------------------------------------------------------------------------

REGION_BEGIN: Final = "<!-- scratchpad:agent-sections begin -->"
REGION_END: Final = "<!-- scratchpad:agent-sections end -->"

# Every line boundary str.splitlines knows; "\r\n" first so it stays one boundary.
_BOUNDARY = re.compile("(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")
_MARKER_LIKE = re.compile(r"\s*<!--\s*scratchpad:", re.IGNORECASE)
_FENCE_LIKE = re.compile(r"-{3,}\s*")
_SECTION_MARKER = re.compile(
    r'\s*<!--\s*scratchpad:(begin|end)\s+section\s*=\s*"([^"]*)"\s*-->\s*', re.IGNORECASE
)
_REGION_MARKER = re.compile(r"\s*<!--\s*scratchpad:agent-sections\s+(begin|end)\s*-->\s*", re.I)


def begin_marker(name: str) -> str:
    """Given a section name, return the line that opens its text."""
    return f'<!-- scratchpad:begin section="{name}" -->'


def end_marker(name: str) -> str:
    """Given a section name, return the line that closes its text."""
    return f'<!-- scratchpad:end section="{name}" -->'


def _dangerous(line: str) -> bool:
    core = line.lstrip("\\")
    return _MARKER_LIKE.match(core) is not None or _FENCE_LIKE.fullmatch(core) is not None


def escape_text(text: str) -> str:
    """Given any text, return it with marker-like and fence-like lines escaped (see module doc)."""
    parts = _BOUNDARY.split(text)
    for index in range(0, len(parts), 2):
        if _dangerous(parts[index]):
            parts[index] = "\\" + parts[index]
    return "".join(parts)


def unescape_text(text: str) -> str:
    """Given text made by `escape_text` (or edited by hand), return the original text."""
    parts = _BOUNDARY.split(text)
    for index in range(0, len(parts), 2):
        if parts[index].startswith("\\") and _dangerous(parts[index]):
            parts[index] = parts[index][1:]
    return "".join(parts)


def encode_sections(states: Iterable[SectionState], *, heading_level: int = 2) -> str:
    """Given section states, return the agent region: each as a heading and its marked text.

    Sections come in display order; the region ends with a newline.
    """
    blocks = [
        f"{'#' * heading_level} {section_title(s.name)}\n{begin_marker(s.name)}\n"
        f"{escape_text(s.content)}\n{end_marker(s.name)}"
        for s in ordered(states)
    ]
    inner = "\n\n".join(blocks) + "\n" if blocks else ""
    return f"{REGION_BEGIN}\n{inner}{REGION_END}\n"


def find_agent_region(body: str) -> str | None:
    """Given a SCRATCHPAD.md text, return the text inside its agent region, or None if absent.

    The region starts after the last region-begin line (anything quoted above it in the auto
    part is ignored) and ends before the next region-end line, or at the end of the text.
    """
    lines = body.split("\n")
    begin, end = _region_lines(lines)
    if begin is None:
        return None
    return "\n".join(lines[begin + 1 : end])


def _region_lines(lines: Sequence[str]) -> tuple[int | None, int]:
    """Given a body's lines, return the index of the region-begin line (None if there is none)
    and of the region-end line that closes it (len(lines) if there is none).
    """
    begin = None
    for index, line in enumerate(lines):
        match = _REGION_MARKER.fullmatch(line)
        if match is not None and match.group(1).lower() == "begin":
            begin = index
    if begin is None:
        return None, len(lines)
    for index in range(begin + 1, len(lines)):
        match = _REGION_MARKER.fullmatch(lines[index])
        if match is not None and match.group(1).lower() == "end":
            return begin, index
    return begin, len(lines)


def decode_sections(text: str) -> dict[str, str]:
    """Given a SCRATCHPAD.md text (or just its agent region), return each section's content.

    Only the agent region is read when the text has one. The content of a section is exactly
    what was encoded. A section whose end line was lost ends at the next marker or the end.
    """
    region = find_agent_region(text)
    sections: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    for line in (region if region is not None else text).split("\n"):
        match = _SECTION_MARKER.fullmatch(line)
        if match is None:
            if name is not None:
                lines.append(line)
            continue
        if name is not None:
            sections[name] = unescape_text("\n".join(lines))
            name = None
        if match.group(1).lower() == "begin":
            name, lines = match.group(2), []
    if name is not None:
        sections[name] = unescape_text("\n".join(lines))
    return sections


# --------------------------------------------------------------------------------------------
# The agent part of SCRATCHPAD.md: what is shown under the caps, and hand edits coming back.
# --------------------------------------------------------------------------------------------

# Below this many tokens a preview says too little to be worth its note; only the note stays.
_MIN_PREVIEW: Final = 16
# Only this much of the end of each OpenClaw transcript is searched for scratchpad entries; an
# older entry was imported by an earlier run (they run every few minutes) or is outdated.
OPENCLAW_TAIL_BYTES: Final = 4 * 1024 * 1024
CONFLICTS_DIR: Final = "conflicts"


def text_hash(text: str) -> str:
    """Given a section's text, return the short hash the frontmatter records for it."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def read_command(name: str) -> str:
    """Given a section name, return the command that prints its full text."""
    return f"assemble pad read --section {name}"


@dataclass(frozen=True)
class ShownSection:
    """One section as the agent part of SCRATCHPAD.md shows it (the template's context)."""

    name: str
    title: str
    kind: SectionKind
    text: str  # escaped: the whole text, or a preview when `omitted`
    plain: str  # the same, as written (for listings that are never parsed back)
    tokens: int  # of the whole text
    shown_tokens: int  # of the text shown
    source: str
    expires: datetime | None
    # Only a section shown whole sits between markers: a hand edit of a preview would cut
    # off the text that was left out.
    editable: bool
    begin: str
    end: str
    read_command: str

    @property
    def omitted(self) -> bool:
        return self.shown_tokens < self.tokens

    @property
    def left_out(self) -> int:
        return self.tokens - self.shown_tokens


AgentRender = Callable[[Mapping[str, Any]], str]


@dataclass
class AgentPart:
    """The agent part of one render: its Markdown, its real token count, what it left out."""

    text: str
    tokens: int
    sections: list[ShownSection] = field(default_factory=list)
    # The frontmatter's record of the sections shown whole: name -> text_hash of the text.
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def omitted(self) -> list[dict[str, Any]]:
        """Return the frontmatter's `agent_omitted`: each section that is not shown whole."""
        return [
            {
                "section": s.name,
                "tokens": s.tokens,
                "shown": s.shown_tokens,
                "left_out": s.left_out,
                "read": s.read_command,
            }
            for s in self.sections
            if s.omitted
        ]


def _shown(state: SectionState, limit: int | None, count: TokenCounter) -> ShownSection:
    tokens = count(state.content)
    text = state.content
    if limit is not None and tokens > limit:
        text = truncate_to_tokens(state.content, limit, count) if limit >= _MIN_PREVIEW else ""
    shown = tokens if text is state.content else count(text)
    return ShownSection(
        name=state.name,
        title=section_title(state.name),
        kind=state.kind,
        text=escape_text(text),
        plain=text,
        tokens=tokens,
        shown_tokens=shown,
        source=state.source,
        expires=state.expires,
        editable=state.kind == "agent" and text is state.content,
        begin=begin_marker(state.name),
        end=end_marker(state.name),
        read_command=read_command(state.name),
    )


def agent_context(
    sections: Sequence[ShownSection],
    *,
    markers: bool = True,
    stray: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Given the sections to show, whether they sit between markers (the file) or not (plain
    listings and the prefix block), and what became of text typed outside the markers (see
    `FileSync.notice`), return the context of `agent_sections.md.j2`.
    """
    return {
        "sections": list(sections),
        "markers": markers,
        "stray": dict(stray) if stray else None,
        "region_begin": REGION_BEGIN,
        "region_end": REGION_END,
    }


def plan_agent_part(
    states: Mapping[str, SectionState],
    *,
    render: AgentRender,
    count: TokenCounter,
    agent_cap: int,
    limit: int,
    markers: bool = True,
    stray: Mapping[str, Any] | None = None,
) -> AgentPart:
    """Given the folded sections, a renderer, a counter and the caps, return the agent part.

    With `markers` (the file) the sections sit between their markers, escaped, under the
    region's intro and the `stray` notice; without (the prefix block), as written. The agent
    sections' text is held to `agent_cap` (as `assemble pad` counts it) and the
    rendered part, markup included, to `limit` tokens. Nothing is cut silently: over a cap the
    largest section still shown whole becomes a preview (or, below a few tokens, no text), and
    its note says how much was left out and the command that prints it all. Sections come in
    display order.
    """
    states_in_order = ordered(states.values())
    limits: dict[str, int | None] = {s.name: None for s in states_in_order}

    def build() -> tuple[list[ShownSection], str]:
        shown = [_shown(s, limits[s.name], count) for s in states_in_order]
        return shown, render(agent_context(shown, markers=markers, stray=stray))

    shown, text = build()
    # Each round cuts one section (never back up), so this ends; the bound is a safety net.
    for _ in range(4 * len(states_in_order) + 4):
        agent_over = sum(s.shown_tokens for s in shown if s.kind == "agent") - agent_cap
        region_over = count(text) - limit
        if agent_over <= 0 and region_over <= 0:
            break
        pool = [s for s in shown if s.shown_tokens > 0 and (region_over > 0 or s.kind == "agent")]
        if not pool:
            break  # only the notes are left; the frontmatter shows the part is over
        victim = max(pool, key=lambda s: (s.shown_tokens, _order_key(states[s.name])))
        # A new note costs some tokens of its own; take them too, in one go.
        note = 0 if victim.omitted else 40
        excess = max(agent_over, region_over + note if region_over > 0 else 0)
        limits[victim.name] = max(victim.shown_tokens - excess, 0)
        shown, text = build()
    hashes = {s.name: text_hash(states[s.name].content) for s in shown if s.editable}
    return AgentPart(text, count(text), shown, hashes)


# -- hand edits ----------------------------------------------------------------------------------


@dataclass
class FileSync:
    """What `sync_file_edits` found in SCRATCHPAD.md and did about it."""

    edited: bool = False  # the body changed since the last render
    written: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # kept in the journal; file text saved
    merged: list[str] = field(default_factory=list)  # changed in both, the changes combined
    auto_edited: bool = False  # the auto part was changed by hand (it is regenerated)
    # Text typed outside the sections' markers: {"appended_to": "main", "tokens": n}, or
    # {"saved": path, "why": reason} when it could not be appended.
    stray: dict[str, Any] | None = None
    problems: list[dict[str, str]] = field(default_factory=list)  # for `degraded`
    failure: str | None = None  # why the journal could not take the edits (none were)
    at: datetime | None = None  # when the file was edited (its mtime)
    # The previous render's agent region and hashes, carried over when the journal is down.
    region: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any] | None:
        """Return the frontmatter's `file_edits`, or None when the file was not edited."""
        if not self.edited:
            return None
        return {
            "at": self.at.isoformat(timespec="seconds") if self.at else None,
            "imported": self.written,
            "cleared": self.cleared,
            "conflicts": self.conflicts,
            "merged": self.merged,
            "stray": self.stray,
            "auto_overwritten": self.auto_edited,
        }

    def notice(self, now: datetime) -> dict[str, Any] | None:
        """Given the clock, return the template's `stray` notice (what became of the text typed
        outside the markers, and when it was typed), or None when there was none.
        """
        if self.stray is None:
            return None
        at = self.at.astimezone(_aware(now).tzinfo) if self.at else _aware(now)
        return {"appended_to": None, "saved": None, "why": None, **self.stray, "at": f"{at:%H:%M}"}


def normalise_line_ends(text: str) -> str:
    """Given a file's text, return it with CRLF line ends turned into LF when every line of it
    ends in CRLF (a Windows editor saved it), else unchanged: a lone `\\r` or a `\\r\\n` the agent
    wrote into a section is text, and the rendered file's own line ends are LF.
    """
    lf = text.count("\n")
    if lf and text.count("\r\n") == lf:
        return text.replace("\r\n", "\n")
    return text


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Given a file's text, return its YAML frontmatter (None if it has none) and the body."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 3)
    if end < 0:
        return None, text
    return text[4:end], text[end + 5 :]


def auto_part(body: str) -> str:
    """Given a SCRATCHPAD.md body, return what precedes its agent region (all, if none)."""
    lines = body.split("\n")
    begin, _ = _region_lines(lines)
    return body if begin is None else "\n".join(lines[:begin])


def auto_hash(body: str) -> str:
    """Given a SCRATCHPAD.md body, return the hash of its auto part (frontmatter `auto_sha256`)."""
    return text_hash(auto_part(body).strip())


def _load_meta(yaml_text: str | None) -> dict[str, Any] | None:
    if yaml_text is None:
        return None
    import yaml

    # libyaml's loader when PyYAML was built with it: ten times faster, and a daemon reads
    # the frontmatter on every cycle.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        meta = yaml.load(yaml_text, Loader=loader)  # a safe loader either way
    except yaml.YAMLError:
        return None
    return meta if isinstance(meta, dict) else None


INVALID_NAME: Final = "unnamed-section"  # the conflict file name of a section badly named


def save_conflict(state_dir: Path, name: str, text: str, moment: datetime) -> Path:
    """Given the state folder, a section name, text that could not go into the journal and
    when it was written, save the text under `conflicts/` and return the file's path.

    The file is `<time>-<name>.md`, or `<time>-<name>-<n>.md` when that exists (nothing is
    written over). A name that is not a valid section name (it came from a hand-edited marker)
    never reaches the path: the file is then named `<time>-unnamed-section.md`. Raise OSError
    (UnsafePathError for a link) if the folder cannot be written.
    """
    folder = real_dir(real_dir(state_dir) / CONFLICTS_DIR)
    safe = name if is_valid_section_name(name) else INVALID_NAME
    stem = f"{moment.strftime('%Y%m%dT%H%M%S')}-{safe}"
    data = text.encode("utf-8", "surrogatepass")
    for number in range(1, 10_000):
        path = folder / (f"{stem}.md" if number == 1 else f"{stem}-{number}.md")
        try:
            fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_folder(folder)
        return path
    raise OSError(f"{folder} has 10,000 conflict files named {stem}; clear it out")


def _save_conflict(pad: Scratchpad, name: str, text: str, moment: datetime) -> Path:
    return save_conflict(pad.journal.path.parent, name, text, moment)


# -- text typed outside the sections' markers ----------------------------------------------------

RENDERED_NAME: Final = "rendered.md"
RENDERED_DIR: Final = "rendered"  # the copies of the last renders, by body hash
KEPT_RENDERS: Final = 8
STRAY_NAME: Final = "outside-markers"  # the conflicts file name of text that could not be kept


def rendered_path(state_dir: Path) -> Path:
    """Given the state folder, return where the copy of the last SCRATCHPAD.md written is kept."""
    return state_dir / RENDERED_NAME


def remember_render(state_dir: Path, text: str) -> bool:
    """Given the state folder and the text of the SCRATCHPAD.md just written, keep a copy.

    The next run compares the file with it to tell what the agent typed from what the program
    rendered. The last KEPT_RENDERS copies are also kept by body hash (`rendered/`), so that an
    edit an agent made on an older copy of the file is still merged against the render it
    started from. Return whether the copy was written; without it the next run still imports
    the sections' edits and keeps the text after the region's end marker, so an error is no
    reason to fail a run whose file was written.
    """
    from assembler.render import body_hash

    try:
        atomic_write(rendered_path(real_dir(state_dir)), text)
        folder = real_dir(state_dir / RENDERED_DIR)
        remove_stale_temps(folder)  # each copy has a name of its own, written once
        atomic_write(folder / f"{body_hash(split_frontmatter(text)[1])[:16]}.md", text)
        copies = sorted(folder.glob("*.md"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in copies[KEPT_RENDERS:]:
            old.unlink(missing_ok=True)
    except (OSError, UnicodeError):
        return False
    return True


def _owned_lines(lines: Sequence[str]) -> set[int]:
    """Given a body's lines, return the indices of the lines the region's parsing accounts
    for: the region markers, each section's markers and the text between them (as
    `decode_sections` reads it), and a heading right above a begin marker (a section added by
    hand comes with its heading).
    """
    begin, end = _region_lines(lines)
    if begin is None:
        return set()
    owned = {begin, end}
    inside = False
    for index in range(begin + 1, end):
        match = _SECTION_MARKER.fullmatch(lines[index])
        if match is None:
            if inside:
                owned.add(index)
            continue
        owned.add(index)
        inside = match.group(1).lower() == "begin"
        if inside and index - 1 > begin and lines[index - 1].startswith("#"):
            owned.add(index - 1)
    return owned


def stray_lines(body: str, rendered: str | None) -> list[int]:
    """Given a SCRATCHPAD.md body and the body as last rendered (None if unknown), return the
    indices of the body's lines the agent typed outside the sections' markers.

    With the render to compare with, these are the lines added or changed after the auto part
    (edits of the auto part are overwritten, as documented) that no section's markers hold:
    text after the region, between sections, in a subsystem section or a preview. The
    program's own headings and notes are in the render, so they never count. Without it, only
    the lines after the region's end marker count (the program renders nothing there).
    """
    lines = body.split("\n")
    owned = _owned_lines(lines)
    if rendered is None:
        begin, end = _region_lines(lines)
        candidates: Iterable[int] = range(end + 1, len(lines)) if begin is not None else ()
    else:
        old = rendered.split("\n")
        old_begin, _ = _region_lines(old)
        if old_begin is None:  # no region: the auto part ends at its last line of text
            old_begin = max((i + 1 for i, line in enumerate(old) if line.strip()), default=0)
        import difflib

        matcher = difflib.SequenceMatcher(None, old, lines, autojunk=False)
        candidates = [
            j
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if (tag == "insert" and i1 >= old_begin) or (tag == "replace" and i2 > old_begin)
            for j in range(j1, j2)
        ]
    return [j for j in candidates if j not in owned and lines[j].strip()]


def stray_text(body: str, indices: Sequence[int]) -> str:
    """Given a body and the indices of its stray lines, return them as one text: each run of
    stray lines as typed, runs joined by a newline (the blank lines around them dropped).
    """
    lines = body.split("\n")
    runs: list[list[str]] = []
    previous = None
    for index in indices:
        if previous is None or index != previous + 1:
            runs.append([])
        runs[-1].append(lines[index])
        previous = index
    return "\n".join("\n".join(run) for run in runs)


def _rendered_body(pad: Scratchpad, meta: Mapping[str, Any] | None) -> str | None:
    """Given the file's frontmatter, return the body of the render that wrote the file (the
    last render's copy, else one of the copies kept by hash), or None when there is none.
    """
    if meta is None or not isinstance(meta.get("body_sha256"), str):
        return None
    from assembler.render import body_hash

    wanted = meta["body_sha256"]
    state = pad.journal.path.parent
    try:
        check_dir(state)
    except OSError:
        return None
    for path in (rendered_path(state), state / RENDERED_DIR / f"{wanted[:16]}.md"):
        try:
            data = read_state_file(path).data
        except OSError:
            continue
        if data is None:
            continue
        _, body = split_frontmatter(data.decode("utf-8", "replace"))
        if body_hash(body) == wanted:
            return body
    return None


def _keep_stray(
    pad: Scratchpad, sync: FileSync, text: str, moment: datetime, why_not: str | None
) -> None:
    """Given text typed outside the markers, append it to section main, or save it under
    `.scratchpad/conflicts/` when `why_not` says it cannot be appended or the append is
    refused; record which in `sync.stray`.
    """
    if why_not is None:
        try:
            current = pad.state().get(DEFAULT_SECTION)
            # A run whose file was not written (a dry run) appended it already: not twice.
            if current is not None and current.content.endswith(text):
                sync.stray = {"appended_to": DEFAULT_SECTION, "tokens": pad.count(text)}
                return
            answer = pad.append(text, section=DEFAULT_SECTION, source="file-edit")
        except (SectionError, OSError) as error:
            why_not = str(error)
        else:
            if answer.ok:
                sync.stray = {"appended_to": DEFAULT_SECTION, "tokens": pad.count(text)}
                return
            why_not = answer.message
    saved = _save_conflict(pad, STRAY_NAME, text, moment)
    sync.stray = {"saved": str(saved), "why": why_not}
    sync.problems.append(
        {
            "what": "text outside the section markers",
            "why": f"not added to section {DEFAULT_SECTION} ({why_not}); saved in {saved}",
        }
    )


def sync_file_edits(pad: Scratchpad, path: Path, seen: Snapshot | None = None) -> FileSync:
    """Given the scratchpad and SCRATCHPAD.md, import hand edits of its agent sections.

    The file counts as edited when its body no longer matches `body_sha256` (a file saved with
    CRLF line ends throughout is read as LF). A section whose text differs from the hash
    recorded at the render is written to the journal (source `file-edit`), one whose markers
    are gone is cleared, one added between new markers is written. When the journal changed
    the same section since the render, the journal wins and the file's text is saved under
    `.scratchpad/conflicts/`. Text typed outside the sections' markers (see `stray_lines`) is
    appended to section main, or saved under `.scratchpad/conflicts/` when it does not fit or
    the region's markers are gone. A file whose region markers are gone imports no section
    (the sections stay). `seen` is the file as the caller read it (else it is read here), so
    that the caller can check before replacing the file that nobody wrote to it since.
    Problems never raise: they are returned for `degraded`.
    """
    sync = FileSync()
    try:
        snapshot = seen if seen is not None else read_regular(path)
    except OSError as error:
        sync.problems.append(
            {"what": "hand edits", "why": f"cannot read {path} ({error}); edits not imported"}
        )
        return sync
    if snapshot.data is None:
        return sync
    raw = snapshot.data
    mtime = datetime.fromtimestamp(snapshot.mtime or 0).astimezone()
    text = normalise_line_ends(raw.decode("utf-8", "replace"))
    yaml_text, body = split_frontmatter(text)
    meta = _load_meta(yaml_text)
    recorded = meta.get("agent_sections") if meta is not None else None
    sync.region = find_agent_region(body)
    if isinstance(recorded, Mapping):
        sync.hashes = {str(k): str(v) for k, v in recorded.items()}
    from assembler.render import body_hash

    carried = meta is not None and meta.get("agent_carried") is True
    if meta is not None and meta.get("body_sha256") == body_hash(body) and not carried:
        return sync
    sync.edited, sync.at = True, mtime
    rendered = _rendered_body(pad, meta)
    stray = stray_lines(body, rendered)
    found_stray = stray_text(body, stray)
    # Text added after the auto part is no edit of it, even where no region follows it.
    dropped = set(stray)
    without = "\n".join(line for i, line in enumerate(body.split("\n")) if i not in dropped)
    if meta is not None and meta.get("auto_sha256") not in (None, auto_hash(without)):
        sync.auto_edited = True
    if meta is None:
        sync.problems.append(
            {
                "what": "hand edits",
                "why": f"the frontmatter of {path} was broken by an edit; agent sections were "
                "compared with the journal instead, and no section was cleared",
            }
        )
    if sync.region is None:
        if isinstance(recorded, Mapping) and not recorded:
            # The last render showed no agent sections: text added after it is the agent's.
            if found_stray:
                _keep_stray(pad, sync, found_stray, mtime, None)
            return sync
        sync.auto_edited = True
        sync.problems.append(
            {
                "what": "hand edits",
                "why": f"the agent-section markers are gone from {path}; nothing imported and no "
                "section cleared (clear sections with 'assemble pad clear')",
            }
        )
        if found_stray:
            _keep_stray(pad, sync, found_stray, mtime, "the agent-section markers are gone")
        return sync
    try:
        base = decode_sections(rendered) if rendered is not None else {}
        _import_sections(pad, sync, decode_sections(sync.region), recorded, mtime, base)
    except (SectionError, OSError) as error:
        sync.failure = str(error)
        if found_stray:  # the journal is down: the text goes aside before the file is rewritten
            _keep_stray(pad, sync, found_stray, mtime, str(error))
        return sync
    if found_stray:
        _keep_stray(pad, sync, found_stray, mtime, None)
    return sync


def _merged(
    name: str,
    old: SectionState | None,
    content: str,
    recorded: object,
    base: Mapping[str, str] | None,
) -> str | None:
    """Given a section changed in the file while the journal changed it too, return the two
    changes combined, or None when they cannot be (no rendered text to merge against, a
    subsystem section, overlapping changes)."""
    if old is None or old.kind != "agent" or not base or not isinstance(recorded, Mapping):
        return None
    rendered = base.get(name)
    if rendered is None or text_hash(rendered) != recorded.get(name):
        return None
    if text_hash(old.content) == recorded.get(name):
        return None  # only the file changed: a plain edit, not a merge
    return merge_texts(rendered, old.content, content)


def merge_texts(base: str, ours: str, theirs: str) -> str | None:
    """Given a text and two changed versions of it, return both changes combined, line by
    line, or None when they touch the same lines differently.

    Lines inserted by both at the same place are combined: when one insertion starts with the
    other (an agent that appended twice, the second time to a copy that had the first) the
    longer one is taken, otherwise ours then those of theirs that ours does not have, so
    nothing either side added is lost or doubled.
    """
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    lines = base.split("\n")
    changes = sorted(
        [(*change, 0) for change in _line_changes(lines, ours.split("\n"))]
        + [(*change, 1) for change in _line_changes(lines, theirs.split("\n"))],
        key=lambda change: (change[0], change[1], change[3]),
    )
    out: list[str] = []
    position = index = 0
    while index < len(changes):
        start, end = changes[index][0], changes[index][1]
        group = [changes[index]]
        index += 1
        # Overlapping changes, or insertions at the same place, are decided together.
        while index < len(changes) and (
            changes[index][0] < end or changes[index][0] == start == end
        ):
            group.append(changes[index])
            end = max(end, changes[index][1])
            index += 1
        out.extend(lines[position:start])
        sides = [[c for c in group if c[3] == side] for side in (0, 1)]
        if not sides[0] or not sides[1]:
            replaced = _apply(lines, start, end, sides[0] or sides[1])
        else:
            mine, yours = (_apply(lines, start, end, side) for side in sides)
            if mine == yours:
                replaced = mine
            elif start != end:
                return None  # both changed the same lines, differently
            elif yours[: len(mine)] == mine:
                replaced = yours
            elif mine[: len(yours)] == yours:
                replaced = mine
            else:
                # A line both inserted here is one edit that reached both sides: once.
                replaced = mine + [line for line in yours if line not in mine]
        out.extend(replaced)
        position = end
    out.extend(lines[position:])
    return "\n".join(out)


def _line_changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """The changes that turn `base` into `other`: (start, end, new lines) over base lines."""
    import difflib

    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        (i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def _apply(
    base: list[str], start: int, end: int, changes: Sequence[tuple[int, int, list[str], int]]
) -> list[str]:
    """The lines start..end of base with one side's changes (which never overlap) applied."""
    out: list[str] = []
    position = start
    for change_start, change_end, new, _ in changes:
        out.extend(base[position:change_start])
        out.extend(new)
        position = change_end
    out.extend(base[position:end])
    return out


def _import_sections(
    pad: Scratchpad,
    sync: FileSync,
    found: Mapping[str, str],
    recorded: object,
    mtime: datetime,
    base: Mapping[str, str] | None = None,
) -> None:
    """Given the sections found in the edited file, the hashes recorded at the render and the
    sections as rendered (`base`, from the copy of the last render, when there is one),
    journal the edits (see `sync_file_edits`) and record them in `sync`.

    A section changed both in the file and through the journal since the render is merged
    line by line against what was rendered (`merge_texts`) when the changes do not overlap;
    only when they do is the journal kept and the file's text saved aside.
    """
    with pad.journal.locked():
        state = pad.state()
        edits: dict[str, str | None] = {}
        for name, content in found.items():
            if not is_valid_section_name(name):
                # A marker typed by hand with a bad name: its text is kept aside, and the name
                # is never used to build a path.
                if content.strip():
                    saved = _save_conflict(pad, name, content, mtime)
                    sync.problems.append(
                        {
                            "what": "hand-added section",
                            "why": f"{_preview(name, 40)!r} is not a valid section name "
                            f"({NAME_RULE}); its text was saved in {saved}",
                        }
                    )
                continue
            old = state.get(name)
            if isinstance(recorded, Mapping):
                shown = recorded.get(name)
                changed = shown != text_hash(content)
                # The journal moved on since the render too (a pad call): both changed.
                journal_moved = (old is None and shown is not None) or (
                    old is not None and text_hash(old.content) != shown
                )
            else:
                changed = old is None or old.content != content
                journal_moved = old is not None and old.updated > mtime
            if not changed or (old is not None and old.content == content):
                continue
            merged = _merged(name, old, content, recorded, base)
            if merged is not None:
                if merged != (old.content if old is not None else None):
                    edits[name] = merged
                    sync.merged.append(name)
                continue
            if journal_moved or (old is not None and old.kind == "subsystem"):
                saved = _save_conflict(pad, name, content, mtime)
                sync.conflicts.append(name)
                sync.problems.append(
                    {
                        "what": f"hand edit of section {name}",
                        "why": f"the section also changed through the journal since the last "
                        f"render; the journal's text was kept and the file's saved in {saved}",
                    }
                )
                continue
            edits[name] = content
        if isinstance(recorded, Mapping):
            for name, digest in recorded.items():
                old = state.get(str(name))
                if name in found or old is None or old.kind != "agent":
                    continue
                if text_hash(old.content) == digest:
                    edits[str(name)] = None
                else:
                    sync.conflicts.append(str(name))
                    sync.problems.append(
                        {
                            "what": f"hand edit of section {name}",
                            "why": "deleted from the file but changed through the journal since "
                            "the last render; the journal's text was kept",
                        }
                    )
        answer = pad.import_file_edits(edits)
    sync.written = list(answer.data["written"])
    sync.cleared = list(answer.data["cleared"])


# -- one render's agent sections -------------------------------------------------------------


@dataclass
class AgentInputs:
    """The agent sections one render shows, and what happened on the way to them."""

    states: dict[str, SectionState] | None  # None: the journal could not be read
    sync: FileSync
    degraded: list[dict[str, str]] = field(default_factory=list)
    now: datetime | None = None  # the render's clock, for the times the file shows


def in_zone(states: Mapping[str, SectionState], now: datetime) -> dict[str, SectionState]:
    """Given folded sections and the clock, return them with expiry times in the clock's zone
    (the journal keeps the offset of whoever wrote the event).
    """
    from dataclasses import replace

    return {
        name: replace(s, expires=s.expires.astimezone(now.tzinfo)) if s.expires else s
        for name, s in states.items()
    }


def import_into_journal(
    config: Config, *, now: datetime, seen: Snapshot, openclaw_files: Sequence[Path] = ()
) -> tuple[FileSync, list[dict[str, str]]]:
    """Given a loaded config, the clock, SCRATCHPAD.md as just read and the OpenClaw
    transcripts read, journal the hand edits of the file and the newest OpenClaw scratchpad
    entry (each when the config asks for it); return what the file sync found and the problems.

    This is the step before a render that writes: a dry run skips it. Nothing here raises for
    bad data; when the journal cannot take the edits, `FileSync.failure` says why and the
    render carries the file's agent region over unchanged (a later run imports it).
    """
    try:
        pad = scratchpad_for(config, now=lambda: now)
    except AssemblerError as error:  # a broken tokens.counter is reported by the auto part
        sync = region_of(seen)
        sync.failure = str(error)
        return sync, [{"what": "agent sections", "why": f"{error}; {_KEPT}"}]
    degraded: list[dict[str, str]] = []
    sync = FileSync()
    try:
        if config.agent.import_edits:
            sync = sync_file_edits(pad, config.output_path, seen)
        degraded += sync.problems
        if sync.failure is not None:
            raise SectionError(sync.failure)
        if config.agent.import_openclaw and openclaw_files:
            entries = read_openclaw_scratchpad_entries(
                openclaw_files, tail_bytes=OPENCLAW_TAIL_BYTES
            )
            if entries:
                pad.import_openclaw_entries(entries)
    except (SectionError, OSError) as error:
        if sync.region is None and not sync.hashes:
            sync = region_of(seen)
        sync.failure = str(error)
        degraded.append({"what": "agent sections", "why": f"{error}; {_KEPT}"})
    return sync, degraded


_KEPT = "the agent sections of the previous render were kept as they were"


def read_agent_inputs(
    config: Config, *, now: datetime, seen: Snapshot, sync: FileSync | None = None
) -> AgentInputs:
    """Given a loaded config, the clock, SCRATCHPAD.md as read and what importing its edits
    found (None: nothing was imported, as on a dry run), return the sections to render, as the
    journal folds them now. Reads only.

    When the journal cannot be read (or could not take the edits), the file's agent region is
    carried over unchanged, so a render loses nothing.
    """
    sync = sync if sync is not None else region_of(seen)
    if sync.failure is not None:
        return AgentInputs(None, sync, [])
    try:
        pad = scratchpad_for(config, now=lambda: now)
        read = pad.journal.read()
    except (AssemblerError, OSError) as error:
        if sync.region is None and not sync.hashes:
            sync = region_of(seen)
        return AgentInputs(None, sync, [{"what": "agent sections", "why": f"{error}; {_KEPT}"}])
    moment = _aware(now)
    states = in_zone(fold_events(read.events, moment), moment)
    degraded = []
    if read.bad_lines:
        quarantine = pad.journal.quarantine_path.name
        plural = "s" if read.bad_lines != 1 else ""
        degraded.append(
            {
                "what": "sections journal",
                "why": f"{read.bad_lines} unreadable line{plural} in {pad.journal.path} skipped "
                f"(kept there, and moved to {quarantine} when the journal is compacted)",
            }
        )
    return AgentInputs(states, sync, degraded, moment)


def region_of(seen: Snapshot) -> FileSync:
    """Given SCRATCHPAD.md as read, return its agent region and recorded hashes, importing
    nothing (what a render carries over when the journal is unavailable)."""
    sync = FileSync()
    if seen.data is None:
        return sync
    # Bytes, decoded here: a text read would turn a lone "\r" in a section into a line end.
    text = normalise_line_ends(seen.data.decode("utf-8", "replace"))
    yaml_text, body = split_frontmatter(text)
    meta = _load_meta(yaml_text) or {}
    sync.region = find_agent_region(body)
    recorded = meta.get("agent_sections")
    if isinstance(recorded, Mapping):
        sync.hashes = {str(k): str(v) for k, v in recorded.items()}
    return sync


def carried_part(sync: FileSync, count: TokenCounter) -> AgentPart:
    """Given the previous render's region (the journal being unavailable), return it as the
    agent part, unchanged, so that no agent text is lost by the new render.
    """
    text = "" if sync.region is None else f"{REGION_BEGIN}\n{sync.region}\n{REGION_END}\n"
    return AgentPart(text, count(text), [], dict(sync.hashes))


def render_agent_part(
    inputs: AgentInputs,
    *,
    render: AgentRender,
    count: TokenCounter,
    agent_cap: int,
    limit: int,
) -> AgentPart:
    """Given the gathered sections, return the agent part (see `plan_agent_part`), or the
    previous render's region unchanged when the journal could not be read.
    """
    if inputs.states is None:
        return carried_part(inputs.sync, count)
    return plan_agent_part(
        inputs.states,
        render=render,
        count=count,
        agent_cap=agent_cap,
        limit=limit,
        stray=inputs.sync.notice(inputs.now) if inputs.now is not None else None,
    )


def guidance_context(config: Config) -> dict[str, Any]:
    """Given a loaded config, return the context of `guidance.md.j2`: the budgets and names."""
    caps = section_caps_of(config)
    return {
        "agent_cap": config.caps.agent,
        "total_cap": config.caps.total,
        "section_caps": caps,
        "main_cap": caps.get(DEFAULT_SECTION, config.caps.agent),
        "sections": AGENT_SECTIONS,
        "default_section": DEFAULT_SECTION,
        "output": config.output.path,
        "region_begin": REGION_BEGIN,
        "name_rule": NAME_RULE,
    }


# -- for the commands: tool calls, listings, the prefix block, the guidance -------------------


def parse_call(text: str) -> Answer:
    """Given the text of a JSON tool call, return an Answer whose `data["call"]` is the object,
    or the mistake (not JSON, not an object) with the right form.
    """
    try:
        value = json.loads(text)
    except ValueError as error:
        return _mistake(
            "not-json",
            f"The call is not valid JSON ({error}); give one object, e.g. "
            f"{_call('write', 'findings', 'your text')}",
        )
    if not isinstance(value, dict):
        return _mistake(
            "not-an-object",
            f"The call must be a JSON object, e.g. {_call('write', 'findings', 'your text')}",
        )
    return Answer(True, "", {"call": value})


def _renderer(config: Config) -> Any:
    from assembler.render import renderer_for

    return renderer_for(config)


def listing_for(config: Config, states: Mapping[str, SectionState]) -> str:
    """Given a config and folded sections, return them whole as plain Markdown (pad read)."""
    from assembler.tokens import get_counter

    count = get_counter(config.tokens.counter)
    shown = [_shown(s, None, count) for s in ordered(states.values())]
    text: str = _renderer(config).agent_part(agent_context(shown, markers=False))
    return text


def plain_region(region: str) -> str:
    """Given the text inside a file's agent region, return it as written: without the marker
    lines and the notes above the first heading (the intro), section text unescaped.
    """
    kept: list[str] = []
    block: list[str] | None = None  # the escaped lines of the section being read
    for line in region.split("\n"):
        match = _SECTION_MARKER.fullmatch(line)
        if match is not None:
            if block is not None:
                kept.append(unescape_text("\n".join(block)))
            block = [] if match.group(1).lower() == "begin" else None
        elif block is not None:
            block.append(line)
        elif kept or not line.startswith(">"):
            kept.append(line)
    if block is not None:
        kept.append(unescape_text("\n".join(block)))
    return "\n".join(kept).strip()


def guidance_for(config: Config) -> str:
    """Given a config, return the system-prompt guidance from `guidance.md.j2`."""
    template = _renderer(config).env.get_template("guidance.md.j2")
    text: str = template.render(**guidance_context(config))
    return text


@dataclass(frozen=True)
class PrefixParts:
    """What the prefix block is made of: SCRATCHPAD.md's auto part ('' when the file is stale
    or missing) and the agent sections as written; and the file's expiry (None: no file)."""

    auto: str
    agent: str
    expires: datetime | None
    fresh: bool


def prefix_parts(config: Config, now: datetime) -> PrefixParts:
    """Given a config and the clock, return the parts of the block hosts prepend to each
    message: the auto part of SCRATCHPAD.md while the file is fresh, and the agent sections as
    the journal holds them now, even when the file is stale (under the same caps as the file,
    as written: no markers, escapes or editing intro, since a message cannot be edited).
    """
    from assembler.errors import ScratchpadError
    from assembler.render import read_scratchpad
    from assembler.tokens import get_counter

    try:
        page = read_scratchpad(config.output_path)
        fresh = page.is_fresh(now)
    except ScratchpadError:
        page, fresh = None, False
    auto = auto_part(page.body).strip() if page is not None and fresh else ""
    count = get_counter(config.tokens.counter)
    try:
        states = in_zone(scratchpad_for(config, now=lambda: now).state(), now)
        agent = ""
        if states:
            part = plan_agent_part(
                states,
                render=_renderer(config).agent_part,
                count=count,
                agent_cap=config.caps.agent,
                limit=config.caps.total - count(auto) - 1,
                markers=False,
            )
            agent = part.text.strip()
    except SectionError:
        # The journal cannot be read: the sections as last rendered are the best there is.
        region = find_agent_region(page.body) if page is not None and fresh else None
        agent = plain_region(region) if region is not None else ""
    return PrefixParts(auto, agent, page.expires if page is not None else None, fresh)


def prefix_for(config: Config, now: datetime, *, fresh_only: bool = False) -> str | None:
    """Given a config and the clock, return the block hosts prepend to each message (seed 000)
    from `prefix_parts`: empty when neither part has anything. With `fresh_only`, return None
    when the file is stale or missing.
    """
    from assembler.render import prefix_text

    parts = prefix_parts(config, now)
    if fresh_only and not parts.fresh:
        return None
    return prefix_text([parts.auto, parts.agent])
