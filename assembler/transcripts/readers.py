"""The transcript readers of each host's format (OpenClaw, Claude Code, generic JSONL): which
entries are messages, who said them and when, and the text kept of each. `assembler.transcripts.read`
finds the files and reads them from the end; the hosts' own names and conventions are in
`transcripts_openclaw` and `transcripts_claude`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

from assembler.hosts.claude_code import turns as claude
from assembler.hosts.openclaw import turns as openclaw

Format = Literal["auto", "openclaw", "openclaw-sqlite", "claude-code", "generic"]

Role = Literal["user", "assistant"]

# How far past the clock a message may be stamped and still count as said by then: the hosts
# and the assembler read one machine's clock, so this only covers a write racing the read.
CLOCK_SKEW: Final = timedelta(seconds=30)


@dataclass(frozen=True)
class Message:
    """One human or assistant utterance, as the text the model saw.

    No thinking, tool calls or tool results. `text` is for analysis: of a message longer than
    TEXT_HEAD_CHARS + TEXT_TAIL_CHARS (a pasted log) it holds only the head and the tail.
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


@dataclass
class Unit:
    """The messages of one session (a file, or one session of a database), oldest first."""

    messages: list[Message]
    fallback_time: datetime  # the file's mtime, for a session without any timestamp
    human: bool = True  # whether a human spoke in it (in the window read)
    summaries: list[Summary] = field(default_factory=list)  # oldest first


@dataclass(frozen=True, slots=True)
class Node:
    """One entry of a transcript tree, as far as the walk needs it."""

    key: str | None  # its id, if it has one
    parent: str | None  # the id of the entry before it on its branch
    linear: bool  # with no parent: True = the preceding line comes before it, False = a root
    value: dict[str, Any]
    can_lead: bool = True  # may be the newest entry of the active branch


Verdict = Node | Literal["bad", "ignore"]


# Housekeeping replies of OpenClaw's silent turns and heartbeat, possibly decorated.
_SILENT_REPLY = re.compile(r"^\W*NO_REPLY\W*$")


_HEARTBEAT_REPLY = re.compile(r"^\W*HEARTBEAT_OK\W*$")


_OPENCLAW_ROLES = frozenset({"user", "assistant"})


_SENDER_KEYS = ("senderName", "sender", "from")


class Reader:
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
        self._replies: list[Message] = []  # replies to a turn not yet met, newest first
        # JSONL only: where the entry being taken starts, and where entry number N starts (pi's
        # version 1 compactions count entries from the top of the file).
        self.line_start: int | None = None
        self.entry_offset: Callable[[int], int | None] | None = None
        self.bytes_scanned = 0

    def header(self, value: dict[str, Any]) -> None:
        """Take what the first line says about the whole session (OpenClaw only)."""

    def node(self, value: object) -> Verdict:
        raise NotImplementedError

    def take(self, value: dict[str, Any]) -> bool:
        """Given an entry on the active branch, collect it; return False when done walking."""
        raise NotImplementedError

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


class OpenClawReader(Reader):
    """OpenClaw / pi session entries (JSONL lines or SQLite rows), session versions 1 to 4."""

    def __init__(
        self,
        source: str,
        cutoff: datetime | None,
        limit: int,
        session_id: str | None,
        until: datetime | None = None,
    ) -> None:
        super().__init__(source, cutoff, limit, session_id, until)
        self._compacted = False
        self._first_kept: str | None = None
        self._keep_from: int | None = None  # version 1: the offset of the first kept entry
        # Set by a HEARTBEAT_OK reply: the user message it answers (newer-first walk: the next
        # user message taken) is the host's heartbeat or cron prompt, not the human. NO_REPLY
        # is the agent choosing silence after a real human message (a group chat): only the
        # reply is dropped, the human's message stays.
        self._skip_prompt = False

    def header(self, value: dict[str, Any]) -> None:
        if value.get("type") != "session":
            return
        if isinstance(value.get("id"), str) and value["id"]:
            self.session_id = value["id"]
        if isinstance(value.get("cwd"), str):
            self.cwd = value["cwd"]

    def node(self, value: object) -> Verdict:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return "bad"
        kind = value["type"]
        if kind == "session":
            return "ignore"
        if kind == "message":
            message = value.get("message")
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                return "bad"
            if message["role"] in _OPENCLAW_ROLES and not isinstance(
                message.get("content"), str | list
            ):
                return "bad"
        key = value.get("id")
        parent = value.get("parentId")
        if not isinstance(key, str):
            # Version 1 sessions had no ids: their entries simply follow each other.
            return Node(None, None, True, value)
        if kind == "leaf":
            # Version 4 moves the active branch with leaf entries: what follows continues from
            # `targetId` (null: from nothing, the branch was rewound to the start).
            target = value.get("targetId")
            return Node(key, target if isinstance(target, str) else None, False, value)
        # A side entry (version 4) is written beside the branch without moving it.
        side = value.get("appendMode") == "side"
        return Node(key, parent if isinstance(parent, str) else None, False, value, not side)

    def take(self, value: dict[str, Any]) -> bool:
        if self._keep_from is not None and (self.line_start or 0) < self._keep_from:
            return False  # before the first entry a version 1 compaction kept
        kind = value["type"]
        if value.get("appendMode") == "side":
            return True
        if kind in ("compaction", "reset") and self._later(parse_time(value.get("timestamp"))):
            return True  # not made yet by the run's clock: the entries before it were live
        if kind in ("compaction", "reset") and not self._compacted:
            # Only the newest compaction (or reset, version 4) on the branch defines the live
            # context: entries from its first kept one on.
            self._compacted = True
            summary = value.get("summary")
            if kind == "compaction" and isinstance(summary, str) and summary.strip():
                self.summaries.append(Summary(summary, parse_time(value.get("timestamp"))))
            first_kept = value.get("firstKeptEntryId")
            index = value.get("firstKeptEntryIndex")
            if isinstance(first_kept, str):
                self._first_kept = first_kept
            elif isinstance(index, int) and not isinstance(index, bool) and self.entry_offset:
                offset = self.entry_offset(index)
                self.bytes_scanned += offset or 0
                if offset is None:
                    return False
                self._keep_from = offset
            else:
                return False
        elif kind == "message":
            body: dict[str, Any] = value["message"]
            if body["role"] == "assistant":
                reply = self._assistant(value, body)
                if reply is not None:
                    self._skip_prompt = False
                    if not self._reply(reply):
                        return False
            elif body["role"] == "user" and not self._user(value, body):
                return False
        return not (self._first_kept is not None and value.get("id") == self._first_kept)

    def _assistant(self, entry: dict[str, Any], body: dict[str, Any]) -> Message | None:
        if openclaw.is_host_assistant(body):
            return None  # a copy of delivered text, or the gateway's own notice
        text = _text_of(body.get("content"))
        if _HEARTBEAT_REPLY.match(text):
            self._skip_prompt = True
            return None
        if not text or _SILENT_REPLY.match(text):
            return None
        if _impossible_time(body.get("timestamp")) or _impossible_time(entry.get("timestamp")):
            self.bad_lines += 1
            return None
        return self._message("assistant", text, entry, body, None)

    def _user(self, entry: dict[str, Any], body: dict[str, Any]) -> bool:
        """Take a user message; return False when done walking."""
        turn = openclaw.user_turn(body, _text_of(body.get("content")))
        if turn.said == "none":
            return True
        if turn.said == "host" or self._skip_prompt:
            self._skip_prompt = False
            self._host_turn()
            return True
        if _impossible_time(body.get("timestamp")) or _impossible_time(entry.get("timestamp")):
            self.bad_lines += 1
            return True
        speaker = _sender(entry, body) or turn.speaker
        return self._said(self._message("user", turn.text, entry, body, speaker))

    def _message(
        self,
        role: Role,
        text: str,
        entry: dict[str, Any],
        body: dict[str, Any],
        speaker: str | None,
    ) -> Message:
        kept, length = _message_text(text)
        return Message(
            role=role,
            text=kept,
            timestamp=parse_time(body.get("timestamp")) or parse_time(entry.get("timestamp")),
            source=self.source,
            speaker=speaker,
            session_id=self.session_id,
            cwd=self.cwd,
            original_length=length,
        )


class ClaudeCodeReader(Reader):
    """Claude Code project transcript lines (1.x and 2.x).

    Besides the messages it collects the session titles Claude Code writes as `summary` lines
    (`{"type": "summary", "summary": ..., "leafUuid": ...}`), dated by the message they end at.
    """

    def __init__(
        self,
        source: str,
        cutoff: datetime | None,
        limit: int,
        session_id: str | None,
        until: datetime | None = None,
    ) -> None:
        super().__init__(source, cutoff, limit, session_id, until)
        self._titles: dict[str, str | None] = {}  # title -> the uuid of its last message
        self._stamps: dict[str, datetime] = {}  # uuid -> time, of the lines walked

    def header(self, value: dict[str, Any]) -> None:
        self._title(value)  # resumed sessions open with the titles of what they continue

    def unit(self, fallback_time: datetime) -> Unit:
        unit = super().unit(fallback_time)
        titles: list[Summary] = []
        for title, leaf in self._titles.items():
            at = self._stamps.get(leaf) if leaf is not None else None
            if not self._later(at):
                titles.append(Summary(title, at, "title"))
        unit.summaries = sorted(
            [*unit.summaries, *titles],
            key=lambda s: s.timestamp or datetime.min.replace(tzinfo=UTC),
        )
        return unit

    def _title(self, value: dict[str, Any]) -> None:
        title = value.get("summary")
        if value.get("type") == "summary" and isinstance(title, str) and title.strip():
            leaf = value.get("leafUuid")
            self._titles.setdefault(title.strip(), leaf if isinstance(leaf, str) else None)

    def node(self, value: object) -> Verdict:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return "bad"
        kind = value["type"]
        self._title(value)
        key = value.get("uuid")
        when = parse_time(value.get("timestamp"))
        if isinstance(key, str) and when is not None:
            self._stamps[key] = when
        if value.get("isSidechain") is True:
            return "ignore"  # subagent traffic has its own tree
        if kind in ("user", "assistant"):
            message = value.get("message")
            if not isinstance(message, dict):
                return "bad"
            content = message.get("content")
            if not isinstance(content, str | list):
                return "bad"
            if (
                isinstance(content, list)
                and content
                and not any(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content)
            ):
                return "bad"
        if not isinstance(key, str) and kind not in ("user", "assistant"):
            return "ignore"  # summaries, file-history snapshots: not part of the tree
        parent = value.get("parentUuid")
        if not isinstance(parent, str):
            # A compaction starts a new root but remembers where it came from.
            logical = value.get("logicalParentUuid")
            parent = logical if isinstance(logical, str) else None
        return Node(
            key if isinstance(key, str) else None,
            parent,
            True,
            value,
            can_lead=kind in ("user", "assistant"),
        )

    def take(self, value: dict[str, Any]) -> bool:
        kind = value["type"]
        if kind not in ("user", "assistant"):
            return True  # attachments, system lines: links of the tree, not messages
        body: dict[str, Any] = value["message"]
        if value.get("isCompactSummary") is True:
            summary = _text_of(body.get("content"))
            at = parse_time(value.get("timestamp"))
            if summary and not self._later(at):
                self.summaries.append(Summary(summary, at))
            return True
        role = body.get("role") if body.get("role") in ("user", "assistant") else kind
        if role == "assistant":
            if body.get("model") == "<synthetic>":
                return True  # errors and notices Claude Code writes itself
            text = _text_of(body.get("content"))
            if not text or self._bad_time(value):
                return True
            return self._reply(self._message("assistant", text, value, None))
        turn = claude.user_turn(value)
        if turn.said == "host":
            self._host_turn()
            return True
        if turn.said == "none" or self._bad_time(value):
            return True
        return self._said(self._message("user", turn.text, value, turn.speaker))

    def _bad_time(self, value: dict[str, Any]) -> bool:
        if _impossible_time(value.get("timestamp")):
            self.bad_lines += 1
            return True
        return False

    def _message(
        self, role: Role, text: str, value: dict[str, Any], speaker: str | None
    ) -> Message:
        kept, length = _message_text(text)
        return Message(
            role=role,
            text=kept,
            timestamp=parse_time(value.get("timestamp")),
            source=self.source,
            speaker=speaker,
            session_id=_str_or_none(value.get("sessionId")) or self.session_id,
            cwd=_str_or_none(value.get("cwd")),
            original_length=length,
        )


_GENERIC_ROLES: Final[dict[str, Role]] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "agent": "assistant",
    "ai": "assistant",
}


class GenericReader(Reader):
    """One `{"role", "content", "timestamp", "speaker"?}` object per line, in order."""

    def node(self, value: object) -> Verdict:
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("role"), str)
            or not isinstance(value.get("content"), str | list)
        ):
            return "bad"
        return Node(None, None, True, value)

    def take(self, value: dict[str, Any]) -> bool:
        role = _GENERIC_ROLES.get(value["role"].strip().lower())
        if role is None:
            return True  # system prompts, tool output: not a party of the conversation
        text = _text_of(value["content"])
        if not text:
            return True
        if _impossible_time(value.get("timestamp")):
            self.bad_lines += 1
            return True
        kept, length = _message_text(text)
        message = Message(
            role=role,
            text=kept,
            timestamp=parse_time(value.get("timestamp")),
            source=self.source,
            speaker=_str_or_none(value.get("speaker")) if role == "user" else None,
            session_id=_str_or_none(value.get("session_id") or value.get("sessionId"))
            or self.session_id,
            cwd=_str_or_none(value.get("cwd")),
            original_length=length,
        )
        return self._said(message) if role == "user" else self._reply(message)


def make_reader(
    fmt: Format,
    source: str,
    cutoff: datetime | None,
    limit: int,
    session_id: str | None,
    until: datetime | None = None,
) -> Reader:
    """Given a format, return its reader: messages older than `cutoff` end the walk, messages
    stamped after `until` are not taken, at most `limit` are kept."""
    if fmt in ("openclaw", "openclaw-sqlite"):
        return OpenClawReader(source, cutoff, limit, session_id, until)
    if fmt == "claude-code":
        return ClaudeCodeReader(source, cutoff, limit, session_id, until)
    return GenericReader(source, cutoff, limit, session_id, until)


def _text_of(content: object) -> str:
    """Given message content (a string or blocks), return its plain text, blocks joined.

    Only `text` blocks count; thinking, tool calls, tool results and images are not what was
    said.
    """
    # Stripped once: a pasted piece can be megabytes, and each strip copies it.
    stripped = (piece.strip() for piece in claude.text_blocks(content))
    return "\n".join(piece for piece in stripped if piece)


def clip_middle(text: str, head: int, tail: int) -> str:
    """Given a text and two sizes, return its first `head` and last `tail` characters joined by
    `ELISION`, or the text itself when that would not be shorter.

    Each cut moves to whitespace within a few characters, so no word is cut in half. Clipping
    a clipped text with the same sizes returns it unchanged.
    """
    if len(text) <= head + len(ELISION) + tail:
        return text
    end = head
    if head > 0:
        space = max(text.rfind(c, max(head - _CUT_SLACK, 0), head + 1) for c in _WHITESPACE)
        end = space if space > 0 else head
    start = len(text) - tail
    if tail > 0:
        found = [i for c in _WHITESPACE if (i := text.find(c, start - 1, start + _CUT_SLACK)) >= 0]
        start = min(found) + 1 if found else start
    return text[:end].rstrip() + ELISION + text[start:].lstrip()


def _message_text(text: str) -> tuple[str, int | None]:
    """Given a message's whole text, return what `Message.text` keeps and `original_length`."""
    kept = clip_middle(text, TEXT_HEAD_CHARS, TEXT_TAIL_CHARS)
    return kept, (len(text) if kept is not text else None)


def _sender(entry: dict[str, Any], body: dict[str, Any]) -> str | None:
    """Given a user entry, return who spoke in a group chat, if the host recorded it."""
    for holder in (entry, body):
        for key in _SENDER_KEYS:
            value = holder.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, dict):
                for name_key in ("name", "displayName", "username", "id"):
                    name = value.get(name_key)
                    if isinstance(name, str | int) and not isinstance(name, bool) and str(name):
                        return str(name)
    return None


def _str_or_none(value: object) -> str | None:
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

    None also for an impossible time (see `_impossible_time`: the readers skip a message with
    one and count its line as bad).
    """
    when = _read_time(value)
    return when if isinstance(when, datetime) else None


def _impossible_time(value: object) -> bool:
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
