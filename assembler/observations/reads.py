"""Reading parked observations: slices (head, tail, a range of characters or bytes, a range of
lines, the whole), grep over the lines, and the `{{stepN.field}}` references that a later tool
call makes to an earlier step's observation. Storing and finding them is
`assembler.observations.store`; a slice decompresses only the blocks it overlaps.
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from assembler.errors import ObservationError

Kind = Literal["text", "binary"]

MODES: Final = ("full", "head", "tail", "range", "lines", "grep")


DEFAULT_N: Final = 2000  # characters (text) or bytes (binary) for head, tail and range


DEFAULT_LINES: Final = 100  # lines for mode `lines` when no end is given


DEFAULT_CONTEXT: Final = 2


DEFAULT_MAX_MATCHES: Final = 50


GREP_LINE_CHARS: Final = 1000  # a longer line is shown as a window around its match


# A grep's time limit: GREP_TIMEOUT_SECONDS, plus GREP_SECONDS_PER_LINE for each line of the
# observation so that a plain pattern over a 640,000-line log (about 3 us a line, most of it the
# time limit's own clock reads) is never cut short. A backtracking pattern is stopped by it.
GREP_TIMEOUT_SECONDS: float = 2.0


GREP_SECONDS_PER_LINE: float = 10e-6


_REFERENCE = re.compile(r"\{\{\s*step(\d+)\.([A-Za-z_][\w-]*)\s*\}\}")


@dataclass
class Slice:
    """What a read returned: the text or bytes, where they are in the whole, and what is next.

    `start`/`end` are characters (text) or bytes (binary), end exclusive; for mode `lines`,
    `first_line`/`last_line` are 1-based and inclusive. For `grep`, `text` is the grep-style
    listing (`12:matching line`, `11-context line`, `--` between groups) and `hits` the lines.
    """

    entry: Entry
    mode: str
    start: int
    end: int
    text: str | None = None
    data: bytes | None = None
    first_line: int | None = None
    last_line: int | None = None
    matches: int | None = None  # grep: matching lines in the whole observation
    shown: int | None = None  # grep: matching lines listed (at most max_matches)
    hits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def more_after(self) -> bool:
        return self.mode != "grep" and self.end < self.entry.length

    def position(self) -> str:
        """Return one line saying what this slice is and how to read on."""
        entry = self.entry
        if self.mode == "grep":
            capped = (
                f"; listed the first {self.shown} (raise max_matches or narrow the pattern)"
                if self.shown is not None and self.matches is not None and self.shown < self.matches
                else ""
            )
            return (
                f"scratchpad {entry.id}: {self.matches} matching lines of {entry.lines}"
                f"{capped}; read around a hit with mode=lines start=N"
            )
        where = f"{entry.unit} {self.start}-{self.end} of {entry.length}"
        if self.mode == "lines":
            where = f"lines {self.first_line}-{self.last_line} of {entry.lines} ({where})"
        more = f"; next: mode=range start={self.end}" if self.more_after else "; to the end"
        return f"scratchpad {entry.id}: {where}{more}"

    def to_dict(self, *, body: bool = True) -> dict[str, Any]:
        """Return the slice as plain JSON data; binary content is base64.

        Without `body`, only where the slice sits and what is next: no `content` or
        `content_base64`, and grep hits without their text (for a caller that sends the
        body separately, such as the MCP tool).
        """
        entry = self.entry
        data: dict[str, Any] = {
            "scratchpad_id": entry.id,
            "kind": entry.kind,
            "mode": self.mode,
            "unit": entry.unit,
            "start": self.start,
            "end": self.end,
            "total": entry.length,
        }
        if self.mode == "lines":
            data |= {"first_line": self.first_line, "last_line": self.last_line}
        if entry.kind == "text":
            data["lines"] = entry.lines
        if self.mode == "grep":
            hits = self.hits
            if not body:
                hits = [{"line": hit["line"], "match": hit["match"]} for hit in hits]
            data |= {"matches": self.matches, "shown": self.shown, "hits": hits}
        elif self.more_after:
            data["next_start"] = self.end
        if body and self.data is not None:
            data["content_base64"] = base64.b64encode(self.data).decode("ascii")
        elif body:
            data["content"] = self.text
        data["position"] = self.position()
        return data


def hexdump(data: bytes, offset: int = 0) -> str:
    """Given bytes and their offset, return an xxd-style dump: offset, hex pairs, ASCII."""
    rows = []
    for at in range(0, len(data), 16):
        row = data[at : at + 16]
        pairs = " ".join(row[i : i + 2].hex() for i in range(0, len(row), 2))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        rows.append(f"{offset + at:08x}: {pairs:<39}  {shown}")
    return "\n".join(rows)


def _clip_line(line: str, center: int) -> str:
    """Return a long line as a window around `center` (where its match starts), saying how
    much was left out.
    """
    if len(line) <= GREP_LINE_CHARS:
        return line
    start = max(0, min(center - GREP_LINE_CHARS // 4, len(line) - GREP_LINE_CHARS))
    end = start + GREP_LINE_CHARS
    before = f"[... {start} characters omitted ...]" if start else ""
    after = f"[... {len(line) - end} characters omitted ...]" if end < len(line) else ""
    return f"{before}{line[start:end]}{after}"


def to_stamp(moment: datetime) -> float:
    return moment.timestamp()


def from_stamp(stamp: float) -> datetime:
    return datetime.fromtimestamp(stamp, UTC)


@dataclass(frozen=True)
class Entry:
    """One parked observation, without its content."""

    id: str
    turn_id: str
    step: int | None
    executor: str | None
    kind: Kind
    size_bytes: int
    length: int  # characters (text) or bytes (binary)
    lines: int
    content_field: str | None
    metadata: dict[str, Any]
    sha256: str
    summary: str
    created: datetime
    expires: datetime
    parked: bool = True  # False: recorded under the threshold, for references only

    @property
    def unit(self) -> str:
        return "characters" if self.kind == "text" else "bytes"

    def to_dict(self) -> dict[str, Any]:
        """Return the entry as plain JSON data (times in ISO 8601)."""
        return {
            "scratchpad_id": self.id,
            "turn_id": self.turn_id,
            "step": self.step,
            "executor": self.executor,
            "kind": self.kind,
            "size_bytes": self.size_bytes,
            "length": self.length,
            "lines": self.lines,
            "field": self.content_field,
            "metadata": self.metadata,
            "sha256": self.sha256,
            "created": self.created.isoformat(),
            "expires": self.expires.isoformat(),
        }


@dataclass(frozen=True)
class Block:
    seq: int
    start: int
    length: int
    line_start: int
    newlines: int
    codec: str
    data: bytes


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


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False)


class ObservationReads:
    """The reading half of `ObservationStore`: slices, grep and step references over the
    blocks the store holds."""

    _db: sqlite3.Connection
    blocks_read: int

    def get(
        self,
        scratchpad_id: object,
        *,
        turn: str | None = None,
        any_turn: bool = False,
        now: datetime | None = None,
    ) -> Entry:
        raise NotImplementedError  # the store finds the live entry

    def _now(self, now: datetime | None) -> datetime:
        raise NotImplementedError  # the store's clock

    def current_turn(self, now: datetime | None = None) -> str:
        raise NotImplementedError  # the store's current turn

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
        if mode not in MODES:
            raise ObservationError(
                f"mode {mode!r}: use one of {', '.join(MODES)} (head is the default)"
            )
        for name, value in (("n", n), ("start", start), ("end", end)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ObservationError(f"{name} {value!r}: give a whole number")
        if n is not None and n <= 0:
            raise ObservationError(f"n {n}: give a positive number of {entry.unit}")
        if mode in ("lines", "grep") and entry.kind == "binary":
            raise ObservationError(
                f"mode '{mode}' reads text, and observation '{entry.id}' is binary "
                f"({entry.length} bytes); use head, tail or range with byte offsets"
            )
        if mode == "grep":
            return self._grep(entry, pattern, context, max_matches, ignore_case)
        if mode == "lines":
            first, last, lo, hi = self._line_span(entry, start, end, n)
            result = self._slice(entry, "lines", lo, hi, max_chars)
            result.first_line, result.last_line = first, last
            return result
        total = entry.length
        size = n if n is not None else DEFAULT_N
        if mode == "full":
            lo, hi = 0, total
        elif mode == "head":
            lo, hi = 0, min(size, total)
        elif mode == "tail":
            lo, hi = max(0, total - size), total
        else:
            lo = 0 if start is None else start
            hi = lo + size if end is None else end
            if lo < 0 or hi < 0:
                raise ObservationError(
                    f"range {lo}-{hi}: offsets count from 0; for the end of the observation "
                    "use mode tail"
                )
            if lo > hi:
                raise ObservationError(f"range {lo}-{hi}: start must not be after end")
            if lo >= total and total:
                raise ObservationError(
                    f"range start {lo} is past the end: observation '{entry.id}' has {total} "
                    f"{entry.unit} (0 to {total - 1})"
                )
            hi = min(hi, total)
        return self._slice(entry, str(mode), lo, hi, max_chars)

    def _slice(self, entry: Entry, mode: str, lo: int, hi: int, max_chars: int | None) -> Slice:
        if max_chars is not None and hi - lo > max_chars:
            raise ObservationError(
                f"mode '{mode}' would return {hi - lo} {entry.unit} of observation '{entry.id}', "
                f"more than the {max_chars} one read may return (observations.max_read_chars); "
                "read a slice: head or tail with n, range with start and end, lines, or grep"
            )
        pieces = list(self.stream(entry, lo, hi))
        if entry.kind == "binary":
            return Slice(
                entry, mode, lo, hi, data=b"".join(p for p in pieces if isinstance(p, bytes))
            )
        return Slice(entry, mode, lo, hi, text="".join(p for p in pieces if isinstance(p, str)))

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

    def _line_span(
        self, entry: Entry, start: int | None, end: int | None, n: int | None
    ) -> tuple[int, int, int, int]:
        """Return (first line, last line, start offset, end offset) of a `lines` read."""
        first = 1 if start is None else start
        if first < 1:
            raise ObservationError(f"lines start {first}: lines are numbered from 1")
        last = first + (n if n is not None else DEFAULT_LINES) - 1 if end is None else end
        if last < first:
            raise ObservationError(f"lines {first}-{last}: end must not be before start")
        if first > entry.lines:
            raise ObservationError(
                f"line {first} is past the end: observation '{entry.id}' has {entry.lines} "
                f"lines; ask for lines 1 to {entry.lines}"
            )
        last = min(last, entry.lines)
        lo = self._line_offset(entry, first - 1)
        hi = self._line_offset(entry, last)
        assert lo is not None  # first <= entry.lines, so that newline exists
        return first, last, lo, entry.length if hi is None else hi

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

    def _grep(
        self,
        entry: Entry,
        pattern: str | None,
        context: int,
        max_matches: int,
        ignore_case: bool,
    ) -> Slice:
        if not isinstance(pattern, str) or not pattern:
            raise ObservationError(
                "mode 'grep' needs a pattern: a regular expression matched against each line, "
                "e.g. 'ERROR|Traceback'"
            )
        for name, value in (("context", context), ("max_matches", max_matches)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ObservationError(f"{name} {value!r}: give a whole number >= 0")
        if max_matches == 0:
            raise ObservationError("max_matches 0: give a positive number of matches to list")
        import regex  # here: only grep needs it, and every `obs` command imports this module

        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except (regex.error, ValueError, OverflowError) as error:
            raise ObservationError(
                f"pattern {pattern!r} is not a valid regular expression ({error}); fix it, or "
                "put a backslash before special characters such as ( [ . * + ?"
            ) from error
        # `regex` checks its time limit while it backtracks, which `re` cannot be made to do.
        # The limit costs a few microseconds a line (regex reads the CPU clock on each call),
        # and a pattern without special characters cannot backtrack, so it goes without.
        limited = regex.escape(pattern, special_only=True, literal_spaces=True) != pattern
        limit = GREP_TIMEOUT_SECONDS + GREP_SECONDS_PER_LINE * entry.lines
        deadline = time.monotonic() + limit
        hits: list[dict[str, Any]] = []
        before: deque[tuple[int, str]] = deque(maxlen=context)
        after_left = matches = 0
        last_shown = 0
        listing: list[str] = []

        def show(number: int, line: str, match_start: int | None) -> None:
            nonlocal last_shown
            if last_shown and number > last_shown + 1:
                listing.append("--")
            text = _clip_line(line, match_start or 0)
            listing.append(f"{number}{'-' if match_start is None else ':'}{text}")
            hits.append({"line": number, "text": text, "match": match_start is not None})
            last_shown = number

        for number, line in enumerate(self._lines(entry), start=1):
            try:
                if not limited:
                    found = compiled.search(line)
                elif (left := deadline - time.monotonic()) > 0:
                    found = compiled.search(line, timeout=left)
                else:
                    raise TimeoutError("regex timed out")
            except TimeoutError as error:
                raise ObservationError(
                    f"pattern {pattern!r} took too long: grep of observation '{entry.id}' "
                    f"stopped at line {number} of {entry.lines} after its {limit:.1f} s limit; "
                    "simplify it (nested quantifiers such as (a+)+ backtrack exponentially)"
                ) from error
            if found:
                matches += 1
                if matches <= max_matches:
                    for earlier in before:
                        show(*earlier, None)
                    before.clear()
                    show(number, line, found.start())
                    after_left = context
                    continue
            if after_left:
                show(number, line, None)
                after_left -= 1
            elif matches < max_matches:
                before.append((number, line))
        result = Slice(entry, "grep", 0, entry.length, text="\n".join(listing))
        result.matches, result.shown, result.hits = matches, min(matches, max_matches), hits
        return result

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
                return _REFERENCE.sub(lambda m: as_text(value_of(m)), value)
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
        pieces = list(self.stream(entry))
        if entry.kind == "binary":
            return b"".join(p for p in pieces if isinstance(p, bytes))
        return "".join(p for p in pieces if isinstance(p, str))
