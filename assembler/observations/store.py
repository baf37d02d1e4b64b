"""Parked observations: a large tool output goes into a store, the agent sees a
head+tail summary and an id, and reads slices of it on demand: `ObservationStore` stores, finds
and reads them, and `assembler.observations.slices` turns what it reads into slices.

The store is SQLite at `.scratchpad/observations.sqlite`. Table `entries` has the observation's
columns (id, turn_id, step_num, executor_name, content_kind, size_bytes, summary, created_at,
expires_at) plus what reads need (length, line count, the content's field name, metadata,
sha256). The content itself is in the `blocks` table: the content split into blocks of
BLOCK_UNITS characters (text) or bytes (binary), each zstd-compressed when that saves space,
with its offset, length and newline counts. A slice of a 50 MB observation decompresses only
the one or two blocks it overlaps; a line number is found from the newline counts without
reading the blocks before it.

Characters are Unicode code points (Python's `str` indexing), so a slice never splits a
character (code point) and blocks are cut on code points, never inside a UTF-8 sequence; a
sequence of several code points (an emoji with ZWJ, a flag, a letter with a combining accent)
can be split like any other text.

Observations under the threshold pass through to the caller unchanged; the ones that come with
a step number are still recorded (whole, with no summary: `summary` is NULL) so that
`{{stepN.field}}` references to them resolve. Recorded entries are not listed as parked.

`grep` runs the `regex` module with a time limit, so a pattern that backtracks exponentially
(`(a|aa)+$`) gets a clear error instead of pinning the process (or an MCP worker thread).

Lifecycle: each entry expires after its TTL (default 1 h) and is invisible from then on; `gc`
deletes expired entries and is run at the start of every turn (`start_turn`) and by command.
An entry is visible only to the turn that stored it unless a read asks for any turn.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.errors import ObservationError
from assembler.fsutil import check_not_link, real_dir
from assembler.observations.slices import (
    DEFAULT_CONTEXT,
    DEFAULT_MAX_MATCHES,
    Block,
    Entry,
    Kind,
    Slice,
    char_span,
    check_read,
    check_size,
    from_stamp,
    grep,
    joined,
    line_range,
    slice_of,
    to_stamp,
)
from assembler.state_db import (
    bound_statements,
    check_schema,
    expected_objects,
    schema_statements,
)

if TYPE_CHECKING:
    from assembler.config.schema import Config


STORE_NAME: Final = "observations.sqlite"
NOTE: Final = (
    "Large observation saved in scratchpad. To read it in full or partially, "
    "use the scratchpad_read tool."
)
# For an observation parked on request although it is under the threshold (MCP scratchpad_put,
# `obs put --force`): the usual note would call it large.
SMALL_NOTE: Final = (
    "Observation saved in scratchpad as asked (it is under the {threshold}-byte threshold, "
    "small enough to keep in context). To read it in full or partially, use the "
    "scratchpad_read tool."
)
DEFAULT_THRESHOLD_BYTES: Final = 4096
DEFAULT_TTL: Final = timedelta(hours=1)
SUMMARY_CHARS: Final = 500
BLOCK_UNITS: Final = 1 << 20  # characters (text) or bytes (binary) per block
COMPRESS_MIN_BYTES: Final = 512  # smaller blocks are stored as they are
_ZSTD_LEVEL: Final = 3
_REFERENCE = re.compile(r"\{\{\s*step(\d+)\.([A-Za-z_][\w-]*)\s*\}\}")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id            TEXT PRIMARY KEY,
    turn_id       TEXT NOT NULL,
    step_num      INTEGER,
    executor_name TEXT,
    content_kind  TEXT NOT NULL,     -- 'text' | 'binary'
    size_bytes    INTEGER NOT NULL,  -- UTF-8 bytes of the text, or bytes of the binary
    length        INTEGER NOT NULL,  -- characters (text) or bytes (binary)
    lines         INTEGER NOT NULL,  -- lines of the text (0 for binary)
    content_field TEXT,              -- the observation's key that held the content
    metadata      TEXT NOT NULL,     -- JSON: the observation's other keys
    sha256        TEXT NOT NULL,
    summary       TEXT,
    created_at    REAL NOT NULL,
    expires_at    REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_turn ON entries (turn_id);
CREATE INDEX IF NOT EXISTS entries_expiry ON entries (expires_at);
CREATE TABLE IF NOT EXISTS blocks (
    entry_id   TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    start      INTEGER NOT NULL,     -- offset of the block in characters (text) or bytes
    length     INTEGER NOT NULL,     -- characters or bytes in the block
    line_start INTEGER NOT NULL,     -- newlines before the block
    newlines   INTEGER NOT NULL,     -- newlines in the block
    codec      TEXT NOT NULL,        -- 'zstd' | 'raw'
    data       BLOB NOT NULL,
    PRIMARY KEY (entry_id, seq)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class GcReport:
    """What a garbage collection removed."""

    removed: int
    freed_bytes: int  # stored (compressed) bytes of the removed blocks


# --------------------------------------------------------------------------------------------
# Splitting an observation into content and metadata, and summarising it.
# --------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Return `value` with bytes turned into base64 text, so it can be written as JSON."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def json_size(observation: Any) -> int:
    """Given an observation, return the UTF-8 bytes of its JSON (bytes counted as base64)."""
    text = json.dumps(_jsonable(observation), ensure_ascii=False, default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def _over_threshold(observation: Any, threshold: int) -> bool:
    # The JSON of a 50 MB string is another 50 MB string; any text or bytes value longer than
    # the threshold already settles it (its JSON is at least that long), whatever its key.
    values = observation.values() if isinstance(observation, Mapping) else [observation]
    if any(isinstance(v, str | bytes | bytearray) and len(v) > threshold for v in values):
        return True
    return json_size(observation) > threshold


def _split(observation: Any) -> tuple[str | bytes, str | None, dict[str, Any], Any]:
    """Given an observation, return (content, the key it came from, the other keys, `ok`).

    A string or bytes is the content itself (key `content`). A mapping's content is its
    `content` key when that holds text or bytes, else its longest text or bytes value; any
    other observation (or a mapping without text) is stored whole as JSON text (key None).
    """
    if isinstance(observation, str):
        return observation, "content", {}, True
    if isinstance(observation, bytes | bytearray | memoryview):
        return bytes(observation), "content", {}, True
    if isinstance(observation, Mapping):
        candidates = {
            k: v for k, v in observation.items() if isinstance(v, str | bytes | bytearray)
        }
        if candidates:
            key = (
                "content"
                if "content" in candidates
                else max(candidates, key=lambda k: len(candidates[k]))
            )
            value = candidates[key]
            content = value if isinstance(value, str) else bytes(value)
            rest = {str(k): v for k, v in observation.items() if k not in (key, "ok")}
            ok = observation.get("ok", True)
            return content, str(key), _jsonable(rest), ok
    whole = json.dumps(_jsonable(observation), ensure_ascii=False, default=str)
    return whole, None, {}, True


def summarize_text(text: str, chars: int = SUMMARY_CHARS) -> str:
    """Given a text, return its first and last `chars` characters around a line saying exactly
    how many were left out, or the whole text when it is no longer than both together.
    """
    if len(text) <= 2 * chars:
        return text
    omitted = len(text) - 2 * chars
    return f"{text[:chars]}\n[... {omitted} characters omitted ...]\n{text[-chars:]}"


def summarize_binary(data: bytes) -> str:
    """Given bytes, return the summary of a binary observation: size and SHA-256, no preview."""
    return f"[BINARY: {len(data)} bytes, sha256={hashlib.sha256(data).hexdigest()}]"


# --------------------------------------------------------------------------------------------
# The store.
# --------------------------------------------------------------------------------------------


class ObservationStore:
    """Large observations in SQLite, read back in slices; see the module docstring.

    Every method that depends on time takes `now` (default: the store's clock). `blocks_read`
    counts the blocks decompressed since the store was opened, so tests can check that a slice
    did not read the whole observation.
    """

    def __init__(
        self,
        path: Path,
        *,
        threshold_bytes: int = DEFAULT_THRESHOLD_BYTES,
        ttl: timedelta = DEFAULT_TTL,
        summary_chars: int = SUMMARY_CHARS,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if ttl <= timedelta(0):
            raise ValueError(f"ttl must be positive, got {ttl}")
        self.path = path
        self.threshold_bytes = threshold_bytes
        self.ttl = ttl
        self.summary_chars = summary_chars
        self.clock = clock
        self.blocks_read = 0
        try:
            real_dir(path.parent)
            # SQLite would open a link planted in place of one of its files and write there.
            for suffix in ("", "-wal", "-shm", "-journal"):
                check_not_link(path.with_name(path.name + suffix))
            self._db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
            bound_statements(self._db)
            # Before anything is written: a trigger the agent planted on one of our tables
            # would run with every put (an endless query hangs the writer).
            self._check_schema(allow_missing=True)
            # Set before the first table exists; lets gc give freed pages back to the disk.
            self._db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
            self._check_schema()
        except ObservationError:
            self._db.close()
            raise
        except (OSError, sqlite3.Error) as error:
            raise ObservationError(
                f"Observation store {path} cannot be opened ({error}); check that the folder "
                "is writable, or delete the file to start an empty store"
            ) from error

    def _check_schema(self, *, allow_missing: bool = False) -> None:
        """Raise ObservationError unless the store holds the schema's tables and indexes, as
        the schema makes them, and nothing else (some of them, with `allow_missing`)."""
        expected = expected_objects(schema_statements(_SCHEMA))
        problem = check_schema(self._db, expected, allow_missing=allow_missing)
        if problem is not None:
            raise ObservationError(
                f"Observation store {self.path} is not as this program makes it ({problem}); "
                "nothing is written to it: delete it to start an empty store"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ObservationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self, now: datetime | None) -> datetime:
        return now if now is not None else self.clock()

    # -- turns and garbage collection ------------------------------------------------------

    def gc(self, now: datetime | None = None) -> GcReport:
        """Delete every entry that expired before `now`; return how many and the bytes freed."""
        stamp = to_stamp(self._now(now))
        with self._write():
            expired = "SELECT id FROM entries WHERE expires_at < ?"
            (freed,) = self._db.execute(
                f"SELECT COALESCE(SUM(LENGTH(data)), 0) FROM blocks WHERE entry_id IN ({expired})",
                (stamp,),
            ).fetchone()
            self._db.execute(f"DELETE FROM blocks WHERE entry_id IN ({expired})", (stamp,))
            removed = self._db.execute("DELETE FROM entries WHERE expires_at < ?", (stamp,))
            count = removed.rowcount
        if count:
            self._db.execute("PRAGMA incremental_vacuum")
        return GcReport(count, int(freed))

    def start_turn(self, turn_id: str | None = None, now: datetime | None = None) -> str:
        """Start a turn: collect expired entries, record `turn_id` (default: a new id) as the
        current turn, and return it.
        """
        turn = turn_id or uuid.uuid4().hex[:16]
        self.gc(now)
        with self._write():
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('current_turn', ?)", (turn,)
            )
        return turn

    def current_turn(self, now: datetime | None = None) -> str:
        """Return the current turn's id, starting a turn if none was started yet."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'current_turn'").fetchone()
        return str(row[0]) if row else self.start_turn(now=now)

    # -- writing ---------------------------------------------------------------------------

    def should_park(self, observation: Any) -> bool:
        """Given an observation, return whether its JSON is over the threshold."""
        return _over_threshold(observation, self.threshold_bytes)

    def put(
        self,
        observation: Any,
        *,
        turn: str | None = None,
        step: int | None = None,
        executor: str | None = None,
        ttl: timedelta | None = None,
        force: bool = False,
        now: datetime | None = None,
    ) -> Any:
        """Given an observation (text, bytes, or a mapping such as a tool result), park it if
        its JSON is over the threshold (or `force`) and return the synthetic observation;
        return a smaller observation unchanged (the same object), after recording it whole
        when it has a `step`, so that `{{stepN.field}}` references to it resolve.

        The synthetic observation has `ok`, `scratchpad_id`, `size_bytes`, `kind`, `summary`
        (first and last 500 characters around the exact count omitted, or the binary note),
        the observation's other keys as `metadata`, and the `_note` that says how to read it. Raise
        ObservationError for a bad step or TTL.
        """
        if not force and not self.should_park(observation):
            if step is not None:
                self._store(observation, turn, step, executor, ttl, now, summarise=False)
            return observation
        return self.park(observation, turn=turn, step=step, executor=executor, ttl=ttl, now=now)

    def park(
        self,
        observation: Any,
        *,
        turn: str | None = None,
        step: int | None = None,
        executor: str | None = None,
        ttl: timedelta | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Given an observation, store it whatever its size and return the synthetic
        observation (see `put`); its note says so when it is under the threshold. Raise
        ObservationError for a bad step or TTL.
        """
        entry, ok = self._store(observation, turn, step, executor, ttl, now, summarise=True)
        synthetic: dict[str, Any] = {
            "ok": ok,
            "scratchpad_id": entry.id,
            "size_bytes": entry.size_bytes,
            "kind": entry.kind,
            "summary": entry.summary,
        }
        if entry.kind == "text":
            synthetic |= {"chars": entry.length, "lines": entry.lines}
        if entry.content_field not in (None, "content"):
            synthetic["field"] = entry.content_field
        synthetic["metadata"] = entry.metadata
        large = self.should_park(observation)
        synthetic["_note"] = NOTE if large else SMALL_NOTE.format(threshold=self.threshold_bytes)
        return synthetic

    def _store(
        self,
        observation: Any,
        turn: str | None,
        step: int | None,
        executor: str | None,
        ttl: timedelta | None,
        now: datetime | None,
        *,
        summarise: bool,
    ) -> tuple[Entry, Any]:
        """Store an observation in blocks; return its entry and the observation's `ok` (which
        is not stored). Without `summarise` the summary is NULL: the entry is recorded whole
        for references, not parked. Raise ObservationError for a bad step or TTL.
        """
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise ObservationError(f"step {step!r}: give the step number as an integer >= 0")
        life = ttl if ttl is not None else self.ttl
        if life <= timedelta(0):
            raise ObservationError(f"ttl {life}: give a positive time to live, e.g. 1h")
        moment = self._now(now)
        turn_id = turn or self.current_turn(moment)
        content, key, metadata, ok = _split(observation)
        entry_id = uuid.uuid4().hex[:16]
        summary: str | None = None
        if isinstance(content, str):
            kind: Kind = "text"
            if summarise:
                summary = summarize_text(content, self.summary_chars)
            encoded_size, lines, digest, blocks = self._text_blocks(content)
            length = len(content)
        else:
            kind = "binary"
            if summarise:
                summary = summarize_binary(content)
            encoded_size, lines, length = len(content), 0, len(content)
            digest = hashlib.sha256(content).hexdigest()
            blocks = self._binary_blocks(content)
        entry = Entry(
            entry_id,
            turn_id,
            step,
            executor,
            kind,
            encoded_size,
            length,
            lines,
            key,
            metadata,
            digest,
            summary or "",
            moment,
            moment + life,
            parked=summary is not None,
        )
        with self._write():
            self._db.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _row(entry),
            )
            self._db.executemany(
                "INSERT INTO blocks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (entry_id, b.seq, b.start, b.length, b.line_start, b.newlines, b.codec, b.data)
                    for b in blocks
                ),
            )
        return entry, ok

    def _text_blocks(self, text: str) -> tuple[int, int, str, list[Block]]:
        """Return (UTF-8 size, lines, sha256, blocks) of a text, one block at a time."""
        digest = hashlib.sha256()
        blocks: list[Block] = []
        size = newlines_before = 0
        for seq, start in enumerate(range(0, len(text), BLOCK_UNITS)):
            piece = text[start : start + BLOCK_UNITS]
            raw = piece.encode("utf-8", "surrogatepass")
            digest.update(raw)
            size += len(raw)
            newlines = piece.count("\n")
            codec, data = _compress(raw)
            blocks.append(Block(seq, start, len(piece), newlines_before, newlines, codec, data))
            newlines_before += newlines
        lines = newlines_before + (1 if text and not text.endswith("\n") else 0)
        return size, lines, digest.hexdigest(), blocks

    def _binary_blocks(self, data: bytes) -> list[Block]:
        blocks = []
        for seq, start in enumerate(range(0, len(data), BLOCK_UNITS)):
            piece = data[start : start + BLOCK_UNITS]
            codec, stored = _compress(piece)
            blocks.append(Block(seq, start, len(piece), 0, 0, codec, stored))
        return blocks

    # -- finding ---------------------------------------------------------------------------

    def get(
        self,
        scratchpad_id: object,
        *,
        turn: str | None = None,
        any_turn: bool = False,
        now: datetime | None = None,
    ) -> Entry:
        """Given an id, return its entry if this turn may see it.

        `turn` defaults to the current turn; `any_turn` lifts the turn isolation. Raise
        ObservationError if the id is unknown, expired, or of another turn.
        """
        if not isinstance(scratchpad_id, str) or not scratchpad_id.strip():
            raise ObservationError(
                f"scratchpad_id {scratchpad_id!r}: give the id from the 'scratchpad_id' field "
                "of a parked observation"
            )
        moment = self._now(now)
        row = self._db.execute(
            "SELECT * FROM entries WHERE id = ?", (scratchpad_id.strip(),)
        ).fetchone()
        if row is None:
            raise ObservationError(
                f"No observation with scratchpad_id '{scratchpad_id}': it was never stored, or "
                "it expired and was removed; use an id from a 'scratchpad_id' field of this "
                "turn's observations"
            )
        entry = entry_from_row(row)
        if entry.expires.timestamp() < to_stamp(moment):
            raise ObservationError(
                f"Observation '{entry.id}' expired at {entry.expires.isoformat()}; run the "
                "step that produced it again"
            )
        if not any_turn:
            current = turn or self.current_turn(moment)
            if entry.turn_id != current:
                raise ObservationError(
                    f"Observation '{entry.id}' belongs to turn '{entry.turn_id}', not to this "
                    f"turn ('{current}'): entries are visible only in their own turn; ask for "
                    "it explicitly (CLI: --any-turn or --turn; tool: any_turn=true)"
                )
        return entry

    def entries(
        self, *, turn: str | None = None, all_turns: bool = False, now: datetime | None = None
    ) -> list[Entry]:
        """Return the live parked entries of `turn` (default: the current turn), or of every
        turn, oldest first. Small observations recorded only for references are left out.
        """
        moment = self._now(now)
        if all_turns:
            rows = self._db.execute(
                "SELECT * FROM entries WHERE expires_at >= ? AND summary IS NOT NULL "
                "ORDER BY created_at, id",
                (to_stamp(moment),),
            )
        else:
            rows = self._db.execute(
                "SELECT * FROM entries WHERE turn_id = ? AND expires_at >= ? "
                "AND summary IS NOT NULL ORDER BY created_at, id",
                (turn or self.current_turn(moment), to_stamp(moment)),
            )
        return [entry_from_row(row) for row in rows]

    # -- reading ---------------------------------------------------------------------------

    def read(
        self,
        scratchpad_id: object,
        mode: object = "head",
        *,
        n: int | None = None,
        start: int | None = None,
        end: int | None = None,
        pattern: str | None = None,
        context: int = DEFAULT_CONTEXT,
        max_matches: int = DEFAULT_MAX_MATCHES,
        ignore_case: bool = False,
        max_chars: int | None = None,
        turn: str | None = None,
        any_turn: bool = False,
        now: datetime | None = None,
    ) -> Slice:
        """Given an id and a mode, return that slice of the observation.

        Modes: `full`; `head`/`tail`: the first/last `n` characters (bytes for a binary;
        default 2000); `range`: `start` to `end` (exclusive; default `start` + n); `lines`:
        lines `start` to `end` (1-based, inclusive; default 100 lines, or `n`); `grep`: the
        lines matching the regular expression `pattern`, with `context` lines around, listing
        at most `max_matches`. Only the blocks a slice overlaps are decompressed. `max_chars`
        caps what one read may return (for agents). Raise ObservationError for an unknown,
        expired or other-turn id, a bad mode or argument, a bad pattern, or a slice over
        `max_chars`.
        """
        entry = self.get(scratchpad_id, turn=turn, any_turn=any_turn, now=now)
        checked = check_read(entry, mode, n, start, end)
        if checked == "grep":
            return grep(entry, self._lines(entry), pattern, context, max_matches, ignore_case)
        if checked == "lines":
            first, last = line_range(entry, start, end, n)
            lo = self._line_offset(entry, first - 1)
            hi = self._line_offset(entry, last)
            assert lo is not None  # first <= entry.lines, so that newline exists
            result = self._slice(entry, "lines", lo, entry.length if hi is None else hi, max_chars)
            result.first_line, result.last_line = first, last
            return result
        lo, hi = char_span(entry, checked, n, start, end)
        return self._slice(entry, checked, lo, hi, max_chars)

    def _slice(self, entry: Entry, mode: str, lo: int, hi: int, max_chars: int | None) -> Slice:
        """Given an entry, a mode and a span, return the Slice, reading only the blocks the
        span overlaps. Raise ObservationError if the span is over `max_chars`.
        """
        check_size(entry, mode, lo, hi, max_chars)
        return slice_of(entry, mode, lo, hi, self.stream(entry, lo, hi))

    def stream(self, entry: Entry, lo: int = 0, hi: int | None = None) -> Iterator[str | bytes]:
        """Given an entry and a span of characters (bytes for a binary), yield its content
        in order, one block at a time, decompressing only the blocks the span overlaps.
        """
        end = entry.length if hi is None else hi
        if end <= lo:
            return
        rows = self._db.execute(
            "SELECT seq, start, length, line_start, newlines, codec, data FROM blocks "
            "WHERE entry_id = ? AND start < ? AND start + length > ? ORDER BY seq",
            (entry.id, end, lo),
        )
        for row in rows:
            block = Block(*row)
            raw = self._decode(block)
            cut_lo, cut_hi = max(lo - block.start, 0), min(end - block.start, block.length)
            if entry.kind == "binary":
                yield raw[cut_lo:cut_hi]
            else:
                yield raw.decode("utf-8", "surrogatepass")[cut_lo:cut_hi]

    def _decode(self, block: Block) -> bytes:
        """Given a stored block, return its content decompressed, counting it in `blocks_read`."""
        self.blocks_read += 1
        if block.codec == "raw":
            return bytes(block.data)
        import zstandard

        return bytes(zstandard.ZstdDecompressor().decompress(block.data))

    def _line_offset(self, entry: Entry, newline: int) -> int | None:
        """Return the character offset just after the `newline`-th newline (0 for the 0th),
        or None if the text has fewer. Only the block holding that newline is read.
        """
        if newline == 0:
            return 0
        row = self._db.execute(
            "SELECT seq, start, length, line_start, newlines, codec, data FROM blocks "
            "WHERE entry_id = ? AND line_start + newlines >= ? ORDER BY seq LIMIT 1",
            (entry.id, newline),
        ).fetchone()
        if row is None:
            return None
        block = Block(*row)
        text = self._decode(block).decode("utf-8", "surrogatepass")
        at = -1
        for _ in range(newline - block.line_start):
            at = text.index("\n", at + 1)
        return block.start + at + 1

    def _lines(self, entry: Entry) -> Iterator[str]:
        """Yield the text's lines without their newline, one block in memory at a time."""
        carry = ""
        for piece in self.stream(entry):
            assert isinstance(piece, str)
            parts = (carry + piece).split("\n")
            carry = parts.pop()
            yield from parts
        if carry:
            yield carry

    # -- {{stepN.field}} references --------------------------------------------------------

    def resolve_references(
        self,
        arguments: Any,
        *,
        turn: str | None = None,
        inline: Mapping[int, Any] | None = None,
        now: datetime | None = None,
    ) -> Any:
        """Given a tool call's arguments, return them with every `{{stepN.field}}` replaced by
        that field of step N's observation in `turn` (default: the current turn).

        A parked observation's content comes from the store in full (not the summary);
        `inline` maps the steps whose observations were small enough to pass through to
        those observations. An argument that is exactly one reference takes the field's value
        as it is (a number stays a number); inside a longer text it is written as text.
        Raise ObservationError for a step or field that is not there.
        """
        moment = self._now(now)
        turn_id = turn or self.current_turn(moment)
        cache: dict[tuple[int, str], Any] = {}

        def value_of(match: re.Match[str]) -> Any:
            key = (int(match.group(1)), match.group(2))
            if key not in cache:
                cache[key] = self._reference(match.group(0), *key, turn_id, inline or {}, moment)
            return cache[key]

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                whole = _REFERENCE.fullmatch(value.strip())
                if whole:
                    return value_of(whole)
                return _REFERENCE.sub(lambda m: _as_text(value_of(m)), value)
            if isinstance(value, Mapping):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [walk(v) for v in value]
            return value

        return walk(arguments)

    def _reference(
        self,
        written: str,
        step: int,
        name: str,
        turn: str,
        inline: Mapping[int, Any],
        now: datetime,
    ) -> Any:
        """Given a reference as written, its step and field, return that field's value from
        `inline` or from the step's stored observation in `turn`. Raise ObservationError if the
        step has no observation or the observation has no such field.
        """
        if step in inline:
            observation = inline[step]
            if isinstance(observation, Mapping) and name in observation:
                return observation[name]
            if name == "content" and isinstance(observation, str | bytes):
                return observation
            fields = list(observation) if isinstance(observation, Mapping) else ["content"]
            raise ObservationError(
                f"{written}: step {step}'s observation has no field '{name}'; its fields are: "
                f"{', '.join(map(str, fields))}"
            )
        row = self._db.execute(
            "SELECT * FROM entries WHERE turn_id = ? AND step_num = ? AND expires_at >= ? "
            "ORDER BY created_at DESC LIMIT 1",
            (turn, step, to_stamp(now)),
        ).fetchone()
        if row is None:
            steps = sorted(
                {
                    int(s)
                    for (s,) in self._db.execute(
                        "SELECT step_num FROM entries WHERE turn_id = ? AND step_num IS NOT NULL "
                        "AND expires_at >= ?",
                        (turn, to_stamp(now)),
                    )
                }
                | set(inline)
            )
            if not steps:
                raise ObservationError(
                    f"{written}: turn '{turn}' has no observations of any step yet, so there "
                    f"is nothing to refer to; store each step's output with its step number "
                    "(CLI: obs put --step N; MCP: scratchpad_put with step) before referring "
                    "to it, or write the value itself"
                )
            raise ObservationError(
                f"{written}: there is no observation of step {step} in turn '{turn}' (steps "
                f"with observations: {', '.join(map(str, steps))}); refer to one of those steps"
            )
        entry = entry_from_row(row)
        if name == entry.content_field:
            return self._content(entry)
        if name in entry.metadata:
            return entry.metadata[name]
        if entry.content_field is None:
            whole = json.loads(self._content(entry))
            if isinstance(whole, dict) and name in whole:
                return whole[name]
            fields = list(whole) if isinstance(whole, dict) else []
        else:
            fields = [entry.content_field, *entry.metadata]
        raise ObservationError(
            f"{written}: step {step}'s observation ('{entry.id}') has no field '{name}'; its "
            f"fields are: {', '.join(fields) or 'none (it is a JSON list or value)'}"
        )

    def _content(self, entry: Entry) -> str | bytes:
        """Given an entry, return its whole content: text, or bytes for a binary."""
        return joined(entry, self.stream(entry))

    # -- helpers ---------------------------------------------------------------------------

    def _write(self) -> _Transaction:
        return _Transaction(self._db, self.path)

    def stored_bytes(self) -> int:
        """Return the bytes the store's file and its write-ahead log take on disk."""
        return sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(self.path.name + "-wal"))
            if p.exists()
        )


class _Transaction:
    """`BEGIN IMMEDIATE` ... `COMMIT` (or `ROLLBACK`), with SQLite errors made one-liners."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    def __enter__(self) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise ObservationError(
                f"Observation store {self.path} is busy or read-only ({error}); try again"
            ) from error

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error as error:
                with contextlib.suppress(sqlite3.Error):  # keep the error that matters
                    self.db.execute("ROLLBACK")
                raise ObservationError(
                    f"Observation store {self.path} cannot be written ({error}); check the "
                    "free disk space and the folder's permissions"
                ) from error
        else:
            self.db.execute("ROLLBACK")


def _compress(raw: bytes) -> tuple[str, bytes]:
    if len(raw) < COMPRESS_MIN_BYTES:
        return "raw", raw
    import zstandard

    packed = zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(raw)
    return ("zstd", packed) if len(packed) < len(raw) else ("raw", raw)


def entry_from_row(row: tuple[Any, ...]) -> Entry:
    """Given a row of the entries table, return its Entry."""
    entry_id, turn_id, step, executor, kind, size, length, lines, key = row[:9]
    metadata, digest, summary, created, expires = row[9:]
    return Entry(
        entry_id,
        turn_id,
        step,
        executor,
        kind,
        size,
        length,
        lines,
        key,
        json.loads(metadata),
        digest,
        summary or "",
        from_stamp(created),
        from_stamp(expires),
        parked=summary is not None,
    )


def _row(entry: Entry) -> tuple[Any, ...]:
    """Given an entry, return its row of the entries table (the inverse of `entry_from_row`)."""
    return (
        entry.id,
        entry.turn_id,
        entry.step,
        entry.executor,
        entry.kind,
        entry.size_bytes,
        entry.length,
        entry.lines,
        entry.content_field,
        json.dumps(entry.metadata, ensure_ascii=False, default=str),
        entry.sha256,
        entry.summary if entry.parked else None,  # no summary: recorded, not parked
        to_stamp(entry.created),
        to_stamp(entry.expires),
    )


def _as_text(value: Any) -> str:
    """Given a referenced value, return it as text for a reference inside a longer text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False)


def observation_from_input(data: bytes, *, path: str | None, json_input: bool) -> Any:
    """Given a tool's output as bytes (and the file it came from, None for stdin), return the
    observation to park: the parsed JSON with `json_input`, else `{"ok", "content", "path",
    "bytes", "encoding"}` with the text, or the bytes when they are not UTF-8.

    Raise ObservationError if `json_input` and the data is not JSON.
    """
    where = path or "stdin"
    if json_input:
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ObservationError(
                f"{where} is not a JSON observation ({error}); fix the JSON, or leave out "
                "--json-input to park the raw output"
            ) from error
    try:
        content: str | bytes = data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        content, encoding = data, "binary"
    observation: dict[str, Any] = {"ok": True, "content": content}
    if path is not None:
        observation["path"] = path
    return observation | {"bytes": len(data), "encoding": encoding}


def to_json(value: Any, *, indent: int | None = 2) -> str:
    """Given an observation or result, return it as JSON text (bytes as base64)."""
    return json.dumps(_jsonable(value), ensure_ascii=False, indent=indent, default=str)


def store_path(config: Config) -> Path:
    """Return where the workspace's observation store lives."""
    return config.state_dir / STORE_NAME


def store_for(config: Config, *, clock: Callable[[], datetime] | None = None) -> ObservationStore:
    """Given a loaded config, open the workspace's observation store with its settings."""
    settings = config.observations
    return ObservationStore(
        store_path(config),
        threshold_bytes=settings.threshold_bytes,
        ttl=settings.ttl_delta,
        summary_chars=settings.summary_chars,
        clock=clock or _utc_now,
    )
