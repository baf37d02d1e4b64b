"""Transcript readers: the recent messages of an agent's sessions, read from the end of each file.
Each host's format is read by `assembler.transcripts.readers`.

INTERFACE (fixed; the readers implement it):
- `Message`, `SourceReport`, `TranscriptRead` dataclasses.
- `read_recent(sources, *, base, now, max_messages, lookback, max_files, fmt) -> TranscriptRead`.
- `default_sources(workspace, state_dir) -> list[str]`: where the hosts keep this workspace's
  transcripts, for an empty `transcripts.sources`.
- `resolve_explicit_sources(patterns, cwd) -> list[str]` for `--transcripts`.
- `clip_middle(text, head, tail) -> str`: the head and tail of a long text, as `Message.text`
  keeps them (`TEXT_HEAD_CHARS`, `TEXT_TAIL_CHARS`).
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO, Final

from assembler.errors import TranscriptError
from assembler.fsutil import allowed_root, resolves_within
from assembler.hosts.claude_code import turns as claude
from assembler.hosts.openclaw import turns as openclaw
from assembler.transcripts.readers import CLOCK_SKEW as CLOCK_SKEW

# Part of the interface above, defined with the readers (`as`: re-exported).
from assembler.transcripts.readers import ELISION as ELISION
from assembler.transcripts.readers import TEXT_HEAD_CHARS as TEXT_HEAD_CHARS
from assembler.transcripts.readers import TEXT_TAIL_CHARS as TEXT_TAIL_CHARS
from assembler.transcripts.readers import (
    Format,
    Node,
    OpenClawReader,
    Reader,
    Unit,
    make_reader,
    parse_time,
)
from assembler.transcripts.readers import Message as Message
from assembler.transcripts.readers import Summary as Summary
from assembler.transcripts.readers import clip_middle as clip_middle


@dataclass
class SourceReport:
    """What reading one transcript file yielded, for the frontmatter's `sources`."""

    path: str
    format: str  # the detected or forced format
    messages: int = 0  # messages taken from this file
    bad_lines: int = 0  # lines skipped as corrupt, truncated, of unknown shape or impossible time
    error: str | None = None  # set when the file could not be read at all (a warning, not a crash)
    bytes_read: int = 0  # bytes read (SQLite: event payload sizes): follows the tail, not the size


@dataclass
class TranscriptRead:
    """The messages of all sources, oldest first, and what each source yielded."""

    messages: list[Message] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)
    # What the hosts wrote about the sessions (compaction summaries on the active branch,
    # session titles), oldest first.
    summaries: list[Summary] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Reading: the public entry point.
# --------------------------------------------------------------------------------------------

# The first block read from the end of a file; later blocks double up to the maximum, so a
# short tail costs one small read and a long walk back few system calls.
_FIRST_BLOCK = 64 * 1024
_MAX_BLOCK = 1024 * 1024
# The header line is read separately for format detection; a longer first line is left to the
# backward scan (Claude Code files can open with a huge pasted message).
_HEAD_LIMIT = 64 * 1024
# How many lines from the end may be looked at to detect a format the first line did not settle.
_DETECT_LINES = 1000
# When an entry's parent is not where the walk expects it (a branch, or a parent that was lost),
# how many bytes may be read looking for it before treating it as missing. Without a bound a
# single dangling parentId would make every run read the whole file.
_PARENT_SEARCH_BYTES = 32 * 1024 * 1024
# Rows fetched per query from the SQLite store, newest first.
_SQLITE_PAGE = 256
# The host holds write locks briefly; waiting longer would stall the daemon.
_SQLITE_TIMEOUT_S = 2.0
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_SUFFIXES = frozenset({".sqlite", ".sqlite3", ".db"})
# Files (or database sessions) that yield no message, such as OpenClaw's isolated cron and
# heartbeat sessions that only say HEARTBEAT_OK, do not count towards `max_files`; this many
# times `max_files` may be opened looking for ones that do, so a folder full of them stays cheap.
_OPEN_FACTOR = 4


def read_recent(
    sources: Sequence[str],
    *,
    base: Path,
    now: datetime,
    max_messages: int,
    lookback: timedelta | None,
    max_files: int = 10,
    fmt: Format = "auto",
    skew: timedelta = CLOCK_SKEW,
) -> TranscriptRead:
    """Given transcript glob patterns, return the newest human and assistant messages in them,
    as they stood at `now`.

    Patterns expand `~`, resolve relative ones against `base` and support `**`. What a glob
    matches that the hosts write beside their sessions (OpenClaw's run traces, checkpoint
    copies, archives and index) is not read, nor are the sessions OpenClaw's `sessions.json`
    gives to its cron jobs, subagents and hooks. Matching files are read from their end, newest
    (by mtime) first, until `max_files` of them yielded a human message: a session in which only
    the host speaks (heartbeat polls, cron prompts) does not count and its messages are not
    kept, and reading stops after `4 x max_files` files or at the first file last written
    before `now - lookback`. Their messages are merged oldest first and the newest
    `max_messages` kept, none older than `now - lookback` (`lookback=None`: no age limit).
    `fmt` forces one format instead of detecting it per file. Nothing stamped after `now +
    skew` is read: no message, no compaction (the entries it replaced are read instead), no
    summary or title; `now` is a clock, and a run with a past `now` sees what was there then.

    Raise nothing for unreadable sources: a pattern that matches nothing becomes a warning, a
    file that cannot be read gets a `SourceReport.error`, and corrupt lines (a message whose
    time cannot exist, such as year 1 at +14:00, is one) are counted in
    `SourceReport.bad_lines`. A long message's `text` is its head and tail (`clip_middle`).
    """
    result = TranscriptRead()
    # A naive `now` is local time by Python's convention; everything below compares in UTC.
    now_utc = now.astimezone(UTC)
    cutoff = now_utc - lookback if lookback is not None else None
    until = now_utc + skew
    limit = max(max_messages, 0)

    paths, warnings, refused = _match_sources(sources, base)
    result.warnings.extend(warnings)
    result.sources.extend(refused)
    wanted = max(max_files, 0)

    units: list[Unit] = []
    with_messages = 0
    for opened, path in enumerate(_newest_first(paths)[: wanted * _OPEN_FACTOR]):
        if with_messages >= wanted:
            break
        if opened >= wanted and cutoff is not None and _mtime(path) < cutoff:
            break  # last written before the window: neither it nor older files have a message
        outcome = _read_source(path, fmt, cutoff, until, limit, max(max_files, 1))
        for unit in outcome.units:
            if not unit.human:
                # Only the host spoke (a cron run, a heartbeat): its replies are not the
                # conversation either.
                unit.messages, unit.summaries = [], []
        useful = any(unit.messages for unit in outcome.units)
        with_messages += useful
        report = outcome.report
        # Past the first `max_files`, an empty file is only listed when something is wrong with
        # it: twenty heartbeat sessions would otherwise crowd the frontmatter's `sources`.
        if opened < wanted or useful or report.error or report.bad_lines:
            result.sources.append(report)
        units.extend(outcome.units)

    result.messages = _merge(units, limit)
    taken = Counter(message.source for message in result.messages)
    for report in result.sources:
        report.messages = taken.get(report.path, 0)
    # Summaries are listed oldest first, like the messages; undated ones (a title whose last
    # message was not read) first of all. Sessions were read newest first: on equal times the
    # older session's comes first.
    for unit in reversed(units):
        result.summaries.extend(unit.summaries)
    result.summaries.sort(key=lambda s: s.timestamp or datetime.min.replace(tzinfo=UTC))
    return result


def default_sources(
    workspace: Path, state_dir: Path, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Given the workspace and its state folder, return where the hosts keep its transcripts,
    for a config that names none.

    OpenClaw (state folder `$OPENCLAW_STATE_DIR`, else `~/.openclaw`): the session JSONL files
    and the SQLite store of each agent whose configured workspace is this one (every agent when
    its config cannot be read or names none). Claude Code: the transcripts the hook recorded in
    `<state_dir>/claude-code-sessions.json`, those inside Claude Code's projects folder only.
    Only places that exist are returned, as globs that match only themselves.
    `environ` defaults to the process environment.
    """
    env = os.environ if environ is None else environ
    return [
        *openclaw.openclaw_sources(workspace, env),
        *claude.claude_code_sources(state_dir, env),
    ]


@dataclass
class _Outcome:
    """What reading one source produced."""

    report: SourceReport
    units: list[Unit] = field(default_factory=list)


def _match_sources(
    sources: Sequence[str], base: Path
) -> tuple[list[Path], list[str], list[SourceReport]]:
    """Given glob patterns, return the distinct paths they match, a warning per empty one, and
    a failed report per match that resolves outside the folder its pattern points into (a link
    the agent planted among the transcripts: see `fsutil.allowed_root`); those are not read.

    A glob's matches leave out what OpenClaw writes beside its sessions without it being one
    (`transcripts_openclaw.is_session_artifact`) and the sessions its index gives to the host;
    a path named without a glob is read whatever it is.
    """
    paths: list[Path] = []
    seen: set[str] = set()
    warnings: list[str] = []
    refused: list[SourceReport] = []
    host_files: dict[str, frozenset[str]] = {}
    for pattern in sources:
        root = allowed_root(pattern, base)
        expanded = os.path.expanduser(pattern)
        if not os.path.isabs(expanded):
            # The base folder's own name may contain glob characters; only the pattern may glob.
            expanded = os.path.join(glob.escape(str(base)), expanded)
        matches = sorted(glob.glob(expanded, recursive=True))
        if not matches:
            # Also reached by --transcripts globs in a daemon when their files go away.
            warnings.append(
                f"Transcript source {pattern!r} matched no files in {base}; check the pattern "
                "(in 'transcripts.sources' or --transcripts)."
            )
        globbed = glob.has_magic(expanded)
        for match in matches:
            key = os.path.normpath(match)
            if key in seen:
                continue
            seen.add(key)
            folder, name = os.path.split(key)
            if globbed and openclaw.is_session_artifact(name):
                continue
            if globbed and name.endswith(".jsonl"):
                if folder not in host_files:
                    host_files[folder] = openclaw.host_session_files(Path(folder))
                if name in host_files[folder]:
                    continue
            if not resolves_within(Path(key), root):
                error = (
                    f"Transcript {key} is a link to {os.path.realpath(key)}, outside {root}, so "
                    "it is not read; remove the link or name its target in your own config."
                )
                refused.append(SourceReport(path=key, format="unknown", error=error))
                continue
            paths.append(Path(key))
    return paths, warnings, refused


def resolve_explicit_sources(patterns: Sequence[str], cwd: Path) -> list[str]:
    """Given `--transcripts` globs and the current folder, return them as absolute patterns.

    A user types these paths in a shell, so a relative glob means the current folder, not the
    workspace (as in the config); `~` is expanded and an absolute glob kept as it is.
    Raise TranscriptError naming the glob and the folder it was resolved against if a glob
    matches no file: an explicit source that reads nothing would write an empty scratchpad.
    """
    resolved: list[str] = []
    for pattern in patterns:
        expanded = os.path.expanduser(pattern)
        if not os.path.isabs(expanded):
            # The folder's own name may contain glob characters; only the pattern may glob.
            expanded = os.path.join(glob.escape(str(cwd)), expanded)
        if not glob.glob(expanded, recursive=True):
            raise TranscriptError(
                f"--transcripts {pattern!r} matches no file (resolved against {cwd}); "
                "check the path, relative to the current folder or absolute"
            )
        resolved.append(expanded)
    return resolved


def _newest_first(paths: list[Path]) -> list[Path]:
    """Given paths, return them by modification time, newest first (unstat-able ones last)."""
    return sorted(paths, key=lambda path: (-_mtime_ns(path), str(path)))


def _mtime_ns(path: Path) -> int:
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


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(max(_mtime_ns(path), 0) / 1e9, UTC)


def _read_source(
    path: Path,
    fmt: Format,
    cutoff: datetime | None,
    until: datetime,
    limit: int,
    max_sessions: int,
) -> _Outcome:
    """Given one matched path, return its messages, or a report whose `error` says what to do."""
    try:
        if path.is_dir():
            return _failed(
                path,
                fmt,
                f"Transcript source {path} is a directory; use a pattern that matches "
                f"the files in it, such as '{path}/*.jsonl'.",
            )
        with path.open("rb") as file:
            magic = file.read(len(_SQLITE_MAGIC))
        is_sqlite = magic == _SQLITE_MAGIC
        if fmt == "openclaw-sqlite" or (
            fmt == "auto" and (is_sqlite or path.suffix.lower() in _SQLITE_SUFFIXES)
        ):
            return _read_sqlite(path, cutoff, until, limit, max_sessions)
        if is_sqlite:
            return _failed(
                path,
                fmt,
                f"{path} is an SQLite database but 'transcripts.format' forces {fmt!r}; "
                "set it to 'openclaw-sqlite' or 'auto'.",
            )
        return _read_jsonl(path, fmt, cutoff, until, limit)
    except PermissionError:
        return _failed(
            path,
            fmt,
            f"Cannot read transcript {path}: permission denied; make it readable by this user "
            "or remove it from 'transcripts.sources'.",
        )
    except OSError as exc:
        return _failed(
            path,
            fmt,
            f"Cannot read transcript {path}: {exc.strerror or exc}; check the file "
            "or remove it from 'transcripts.sources'.",
        )


def _failed(path: Path, fmt: str, error: str) -> _Outcome:
    return _Outcome(SourceReport(path=str(path), format=fmt, error=error))


def _merge(units: list[Unit], limit: int) -> list[Message]:
    """Given the sessions read, return their newest `limit` messages, oldest first.

    A message without a timestamp sorts with the next timestamped message of its session (else
    the previous one, else the file's mtime): it is never older than its neighbours and it keeps
    its place in the file. A message read twice (the same session, role, time and text: a
    session OpenClaw imported into its database while its file is still there) is kept once.
    """
    keyed: list[tuple[datetime, int, int, Message]] = []
    seen: set[tuple[str, str, datetime, str]] = set()
    for unit_index, unit in enumerate(units):
        times = _effective_times(unit)
        for position, (message, when) in enumerate(zip(unit.messages, times, strict=True)):
            if message.session_id is not None and message.timestamp is not None:
                identity = (message.session_id, message.role, message.timestamp, message.text)
                if identity in seen:
                    continue
                seen.add(identity)
            # Units come newest file first; on equal times the older file's message goes first.
            keyed.append((when, -unit_index, position, message))
    keyed.sort(key=lambda item: item[:3])
    kept = keyed[-limit:] if limit > 0 else []
    return [item[3] for item in kept]


def _effective_times(unit: Unit) -> list[datetime]:
    times: list[datetime | None] = [message.timestamp for message in unit.messages]
    following: datetime | None = None
    for index in range(len(times) - 1, -1, -1):
        if times[index] is None:
            times[index] = following
        else:
            following = times[index]
    previous: datetime | None = None
    result: list[datetime] = []
    for when in times:
        if when is None:
            when = previous or unit.fallback_time
        previous = when
        result.append(when)
    return result


# --------------------------------------------------------------------------------------------
# Reading JSONL from the end.
# --------------------------------------------------------------------------------------------

_BAD: Final = object()  # a line that is not JSON (corrupt, or being written)
_BLANK: Final = object()  # an empty line, which is not an error


def _parse_line(raw: bytes | str) -> object:
    """Given one raw line, return its JSON value, `_BLANK`, or `_BAD` if it does not parse."""
    if not raw.strip():
        return _BLANK
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return _BAD


class _BackwardLines:
    """The lines of a binary file from its end back to its start, read in growing blocks.

    The size is fixed when reading starts: what the host appends meanwhile is left for the next
    run, and a last line still being written shows up as a line that does not parse.
    """

    def __init__(self, file: BinaryIO, end: int) -> None:
        self._file = file
        self._end = end
        self.bytes_read = 0
        self.line_start = end  # where the line yielded last starts in the file

    def __iter__(self) -> Iterator[bytes]:
        position = self._end
        block = _FIRST_BLOCK
        pieces: list[bytes] = []  # the start of the file's last unfinished line, newest first
        while position > 0:
            size = min(block, position)
            position -= size
            self._file.seek(position)
            chunk = self._file.read(size)
            self.bytes_read += len(chunk)
            if len(chunk) < size:
                # The file shrank under us (rewritten or truncated): what is left is not a
                # consistent tail, so stop here rather than stitch unrelated bytes together.
                return
            block = min(block * 2, _MAX_BLOCK)
            parts = chunk.split(b"\n")
            if len(parts) == 1:
                pieces.append(chunk)  # a line longer than the block: keep going back
                continue
            pieces.append(parts[-1])
            line, pieces = b"".join(reversed(pieces)), [parts[0]]
            start = position + len(chunk) - len(parts[-1])
            self.line_start = start
            yield line
            # A pasted line can be many megabytes: hold neither its pieces while it is parsed
            # nor the line itself while the lines after it are.
            del line
            for part in reversed(parts[1:-1]):
                start -= len(part) + 1
                self.line_start = start
                yield part
        self.line_start = 0
        yield b"".join(reversed(pieces))


def _read_head(file: BinaryIO, size: int) -> bytes | None:
    """Given an open file, return its first line, or None if it is longer than `_HEAD_LIMIT`."""
    file.seek(0)
    data = file.read(min(size, _HEAD_LIMIT))
    newline = data.find(b"\n")
    if newline >= 0:
        return data[:newline]
    return data if len(data) == size else None


def _classify(value: object) -> Format | None:
    """Given one parsed line, return the transcript format it belongs to, if it tells."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "session" or (kind == "message" and isinstance(value.get("message"), dict)):
        return "openclaw"
    if isinstance(kind, str) and "id" in value and "parentId" in value:
        return "openclaw"
    if kind in ("user", "assistant", "system", "summary"):
        message = value.get("message")
        if (isinstance(message, dict) and "role" in message) or any(
            key in value for key in ("uuid", "sessionId", "leafUuid")
        ):
            return "claude-code"
    if "uuid" in value and "sessionId" in value:
        return "claude-code"
    if "role" in value and "content" in value:
        return "generic"
    return None


def _read_jsonl(
    path: Path, fmt: Format, cutoff: datetime | None, until: datetime, limit: int
) -> _Outcome:
    """Given a JSONL transcript, return the messages on its active branch, read from the end."""
    report = SourceReport(path=str(path), format=fmt)
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        head = _read_head(file, size)
        head_value = _parse_line(head) if head is not None else _BAD
        head_bytes = min(size, _HEAD_LIMIT)
        backward = _BackwardLines(file, size)
        lines = iter(backward)

        # Lines looked at for detection are kept and replayed, so nothing is parsed twice.
        peeked: list[tuple[object, int, int]] = []
        chosen: Format | None = fmt if fmt != "auto" else _classify(head_value)
        if chosen is None:
            for raw in lines:
                value = _parse_line(raw)
                peeked.append((value, len(raw) + 1, backward.line_start))
                chosen = _classify(value)
                if chosen is not None or len(peeked) >= _DETECT_LINES:
                    break
        if chosen is None:
            report.bytes_read = head_bytes + backward.bytes_read
            if head_value is _BLANK and all(value is _BLANK for value, _, _ in peeked):
                report.format = "unknown"  # empty: the host has not written to it yet
                return _Outcome(report)
            report.error = (
                f"{path} is not a recognised transcript (OpenClaw, Claude Code or generic "
                "JSONL); set 'transcripts.format' or remove it from 'transcripts.sources'."
            )
            return _Outcome(report)

        report.format = chosen
        session_id = path.stem
        reader = make_reader(chosen, str(path), cutoff, limit, session_id, until)
        if isinstance(head_value, dict):
            reader.header(head_value)
        reader.entry_offset = lambda index: _entry_offset(file, index)

        def items() -> Iterator[tuple[object, int]]:
            for value, size, start in peeked:
                reader.line_start = start
                yield value, size
            for raw in lines:
                reader.line_start = backward.line_start
                yield _parse_line(raw), len(raw) + 1

        report.bad_lines = _walk(items(), reader)
        report.bytes_read = head_bytes + backward.bytes_read + reader.bytes_scanned
    return _Outcome(report, units=[reader.unit(_mtime(path))])


def _entry_offset(file: BinaryIO, index: int) -> int | None:
    """Given an open JSONL file and an entry number, return where that entry starts, counting
    entries as pi did in version 1 sessions: every non-blank line that parses, the header 0."""
    file.seek(0)
    offset = 0
    count = 0
    for raw in file:
        if raw.strip() and _parse_line(raw) is not _BAD:
            if count == index:
                return offset
            count += 1
        offset += len(raw)
    return None


# --------------------------------------------------------------------------------------------
# Walking the active branch backwards.
# --------------------------------------------------------------------------------------------


def _walk(items: Iterable[tuple[object, int]], reader: Reader) -> int:
    """Given parsed lines newest first and a format reader, feed it the active branch.

    Return the number of bad lines met (including the messages the reader skipped as
    corrupt). Stop as soon as the reader has what it needs.
    """
    bad = 0
    walker = _Walker(reader)
    for value, size in items:
        if walker.done:
            break
        if value is _BLANK:
            continue
        if value is _BAD:
            bad += 1
            continue
        verdict = reader.node(value)
        if verdict == "bad":
            bad += 1
        elif isinstance(verdict, Node):
            walker.feed(verdict, size)
    else:
        walker.reached_start()
    reader.finish()
    return bad + reader.bad_lines


class _Walker:
    """Follows the parent links from the newest entry back, given the entries newest first.

    Files are append-only, so a parent always comes before its children: an entry passed over
    while looking for the wanted parent can never be on the active branch later. Such entries
    are held as pending until the parent turns up (they were an abandoned branch) or is found
    missing (then they were the preceding lines of a linear stretch and are taken in order).
    """

    def __init__(self, reader: Reader) -> None:
        self._reader = reader
        self._started = False
        self._linear = False
        self._want: str | None = None
        self._pending: list[Node] = []
        self._pending_bytes = 0
        self.done = False

    def feed(self, node: Node, size: int) -> None:
        if self.done:
            return
        if not self._started:
            if node.can_lead:
                self._take(node)
            return
        if self._linear or (node.key is not None and node.key == self._want):
            self._pending.clear()
            self._pending_bytes = 0
            self._take(node)
            return
        self._pending.append(node)
        self._pending_bytes += size
        if self._pending_bytes > _PARENT_SEARCH_BYTES:
            self._parent_missing()

    def reached_start(self) -> None:
        """Note that the start was reached: a parent still wanted does not exist in this file."""
        if not self.done and self._pending:
            self._parent_missing()

    def _take(self, node: Node) -> None:
        self._started = True
        if not self._reader.take(node.value):
            self.done = True
        elif node.parent is not None:
            self._want, self._linear = node.parent, False
        elif node.linear:
            self._linear = True
        else:
            self.done = True

    def _parent_missing(self) -> None:
        """Replay the pending entries, continuing linearly wherever a wanted parent is absent."""
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        ahead = Counter(node.key for node in pending if node.key is not None)
        for node in pending:
            if self.done:
                return
            wanted_ahead = self._want is not None and ahead[self._want] > 0
            if self._linear or node.key == self._want or not wanted_ahead:
                self._take(node)
            if node.key is not None:
                ahead[node.key] -= 1


# --------------------------------------------------------------------------------------------
# The formats: which lines are entries, and which entries are messages.
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# OpenClaw's SQLite store.
# --------------------------------------------------------------------------------------------


def _read_sqlite(
    path: Path, cutoff: datetime | None, until: datetime, limit: int, max_sessions: int
) -> _Outcome:
    """Given an OpenClaw agent database, return the messages of its newest sessions.

    The database is opened read-only while the host may be writing; each session is read by
    `seq` from the newest row back, a page at a time.
    """
    report = SourceReport(path=str(path), format="openclaw-sqlite")
    outcome = _Outcome(report)
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=_SQLITE_TIMEOUT_S)
    except sqlite3.Error as exc:
        report.error = _sqlite_error(path, exc)
        return outcome
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(transcript_events)")}
        if not {"session_id", "seq", "event_json"} <= columns:
            report.error = (
                f"{path} has no transcript_events table, so it is not an OpenClaw agent "
                "database; remove it from 'transcripts.sources'."
            )
            return outcome
        # Before schema 23 there is no compressed column; select NULL in its place.
        zstd_column = "event_zstd" if "event_zstd" in columns else "NULL"
        mtime = _mtime(path)
        with_messages = 0
        # As with files, sessions in which no human speaks (isolated cron runs) do not count.
        sessions = _newest_sessions(connection, max_sessions * _OPEN_FACTOR)
        for opened, (session_id, last) in enumerate(sessions):
            if with_messages >= max_sessions:
                break
            if opened >= max_sessions and cutoff is not None and last is not None and last < cutoff:
                break  # last written before the window, and so are the sessions after it
            reader = OpenClawReader(str(path), cutoff, limit, session_id, until)
            head = connection.execute(
                f"SELECT event_json, {zstd_column} FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq ASC LIMIT 1",
                (session_id,),
            ).fetchone()
            if head is not None:
                value, size = _decode_event(head[0], head[1])
                report.bytes_read += size
                if isinstance(value, dict):
                    reader.header(value)
                    reader.session_id = session_id  # the row key is the session's identity
            report.bad_lines += _walk(
                _session_rows(connection, session_id, zstd_column, report), reader
            )
            unit = reader.unit(mtime)
            outcome.units.append(unit)
            with_messages += unit.human and bool(unit.messages)
    except sqlite3.Error as exc:
        report.error = _sqlite_error(path, exc)
        outcome.units.clear()
    finally:
        connection.close()
    return outcome


def _newest_sessions(
    connection: sqlite3.Connection, count: int
) -> list[tuple[str, datetime | None]]:
    """Given a connection, return up to `count` sessions, newest first, with the time each was
    last written (None when unknown); not those the host runs (see
    `transcripts_openclaw.is_host_session_key`) when the store says which they are."""
    tables = {
        str(row[0])
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if "session_windows" in tables:
        # The host's own record of its sessions (schema 20 on): a key per session window, and
        # when its transcript was last written.
        columns = {row[1] for row in connection.execute("PRAGMA table_info(session_windows)")}
        if {"session_id", "session_key", "updated_at"} <= columns:
            written = (
                "COALESCE(transcript_updated_at, updated_at)"
                if "transcript_updated_at" in columns
                else "updated_at"
            )
            found: list[tuple[str, datetime | None]] = []
            for session_id, key, last in connection.execute(
                f"SELECT session_id, session_key, {written} AS written FROM session_windows "
                "ORDER BY written DESC, session_id"
            ):
                if isinstance(key, str) and openclaw.is_host_session_key(key):
                    continue
                found.append((str(session_id), parse_time(last)))
                if len(found) >= count:
                    break
            return found
    # A loose index scan: one seek on the (session_id, seq) key per session instead of reading
    # every row, so finding the sessions costs what the number of sessions costs.
    rows = connection.execute(
        """
        WITH RECURSIVE sessions(id) AS (
            SELECT MIN(session_id) FROM transcript_events
            UNION ALL
            SELECT (SELECT MIN(session_id) FROM transcript_events WHERE session_id > sessions.id)
            FROM sessions WHERE sessions.id IS NOT NULL
        )
        SELECT id, (SELECT created_at FROM transcript_events
                    WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1) AS last
        FROM sessions WHERE id IS NOT NULL
        ORDER BY last DESC, id LIMIT ?
        """,
        (count,),
    ).fetchall()
    return [(str(row[0]), parse_time(row[1])) for row in rows]


def _session_rows(
    connection: sqlite3.Connection, session_id: str, zstd_column: str, report: SourceReport
) -> Iterator[tuple[object, int]]:
    """Given a session, yield its decoded rows from the newest back, a page per query."""
    before: int | None = None
    while True:
        if before is None:
            rows = connection.execute(
                f"SELECT seq, event_json, {zstd_column} FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, _SQLITE_PAGE),
            ).fetchall()
        else:
            rows = connection.execute(
                f"SELECT seq, event_json, {zstd_column} FROM transcript_events "
                "WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (session_id, before, _SQLITE_PAGE),
            ).fetchall()
        for seq, event_json, event_zstd in rows:
            value, size = _decode_event(event_json, event_zstd)
            report.bytes_read += size
            yield value, size
            before = seq
        if len(rows) < _SQLITE_PAGE:
            return


def _decode_event(event_json: object, event_zstd: object) -> tuple[object, int]:
    """Given a row's columns, return the entry (or `_BAD`) and the bytes it took."""
    if isinstance(event_json, str) and event_json.strip():
        return _parse_line(event_json), len(event_json)
    if isinstance(event_json, bytes) and event_json.strip():
        return _parse_line(event_json), len(event_json)
    if isinstance(event_zstd, bytes) and event_zstd:
        import zstandard  # only databases need it

        try:
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(event_zstd)
        except zstandard.ZstdError:
            return _BAD, len(event_zstd)
        return _parse_line(raw), len(event_zstd)
    return _BAD, 0


def store_custom_entries(path: Path, custom_type: str, *, newest_rows: int = 500) -> list[object]:
    """Given an OpenClaw agent database and a `customType` prefix, return the custom entries of
    that type, oldest first: every plain row that names the type, and the compressed rows among
    the newest `newest_rows` (compressed rows cannot be searched without being decoded).
    Return [] when the database cannot be read (the transcript read reports that).
    """
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=_SQLITE_TIMEOUT_S)
    except sqlite3.Error:
        return []
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(transcript_events)")}
        if "event_json" not in columns:
            return []
        zstd = "event_zstd" if "event_zstd" in columns else "NULL"
        rows = connection.execute(
            f"SELECT rowid, event_json, {zstd} FROM transcript_events WHERE event_json LIKE ? "
            f"UNION SELECT * FROM (SELECT rowid, event_json, {zstd} FROM transcript_events "
            f"WHERE {zstd} IS NOT NULL ORDER BY rowid DESC LIMIT ?) ORDER BY 1",
            (f"%{custom_type}%", newest_rows),
        ).fetchall()
    except sqlite3.Error:
        return []
    finally:
        connection.close()
    found: list[object] = []
    for _, event_json, event_zstd in rows:
        value, _ = _decode_event(event_json, event_zstd)
        kind = value.get("customType") if isinstance(value, dict) else None
        if isinstance(kind, str) and kind.startswith(custom_type):
            found.append(value)
    return found


def _sqlite_error(path: Path, exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (
            f"Cannot read {path}: the database is locked ({text}); it is retried on the next run."
        )
    return (
        f"Cannot read {path} as an OpenClaw agent database ({text}); check the file "
        "or remove it from 'transcripts.sources'."
    )
