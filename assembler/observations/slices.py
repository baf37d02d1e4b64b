"""Slicing and presenting parked observations, apart from where they are stored: the records of an
entry and its blocks, which span of characters (bytes for a binary) or lines a read asks for,
the Slice a read returns and its JSON form, grep over the lines, and a hexdump of bytes.

Nothing here touches SQLite: `assembler.observations.store` finds the blocks a span overlaps,
decompresses them and hands their content to these functions.
"""

from __future__ import annotations

import base64
import time
from collections import deque
from collections.abc import Iterable
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


# --------------------------------------------------------------------------------------------
# Records: an entry, its blocks, and the times they carry.
# --------------------------------------------------------------------------------------------


def to_stamp(moment: datetime) -> float:
    """Given a time, return it as seconds since the epoch (how the store keeps times)."""
    return moment.timestamp()


def from_stamp(stamp: float) -> datetime:
    """Given seconds since the epoch, return that time in UTC."""
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
    """One stored piece of an entry's content, with where it sits in the whole."""

    seq: int
    start: int
    length: int
    line_start: int
    newlines: int
    codec: str
    data: bytes


# --------------------------------------------------------------------------------------------
# What a read returns.
# --------------------------------------------------------------------------------------------


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


def joined(entry: Entry, pieces: Iterable[str | bytes]) -> str | bytes:
    """Given an entry and its content in pieces, return them as one text, or as one bytes for
    a binary entry.
    """
    parts = list(pieces)
    if entry.kind == "binary":
        return b"".join(p for p in parts if isinstance(p, bytes))
    return "".join(p for p in parts if isinstance(p, str))


def slice_of(entry: Entry, mode: str, lo: int, hi: int, pieces: Iterable[str | bytes]) -> Slice:
    """Given an entry, a mode, a span and the span's content in pieces, return the Slice."""
    content = joined(entry, pieces)
    if isinstance(content, bytes):
        return Slice(entry, mode, lo, hi, data=content)
    return Slice(entry, mode, lo, hi, text=content)


def hexdump(data: bytes, offset: int = 0) -> str:
    """Given bytes and their offset, return an xxd-style dump: offset, hex pairs, ASCII."""
    rows = []
    for at in range(0, len(data), 16):
        row = data[at : at + 16]
        pairs = " ".join(row[i : i + 2].hex() for i in range(0, len(row), 2))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        rows.append(f"{offset + at:08x}: {pairs:<39}  {shown}")
    return "\n".join(rows)


# --------------------------------------------------------------------------------------------
# Which span a read asks for.
# --------------------------------------------------------------------------------------------


def check_read(
    entry: Entry, mode: object, n: int | None, start: int | None, end: int | None
) -> str:
    """Given an entry and a read's mode and numbers, return the mode. Raise ObservationError
    for an unknown mode, a number that is not a whole number, an `n` that is not positive, or
    a text-only mode (`lines`, `grep`) on a binary entry.
    """
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
    return str(mode)


def char_span(
    entry: Entry, mode: str, n: int | None, start: int | None, end: int | None
) -> tuple[int, int]:
    """Given an entry and a read in mode `full`, `head`, `tail` or `range`, return its span
    (start, end exclusive) in characters (bytes for a binary), cut at the end of the entry.
    Raise ObservationError for a negative offset, a start after the end, or a start past the
    end of the entry.
    """
    total = entry.length
    size = n if n is not None else DEFAULT_N
    if mode == "full":
        return 0, total
    if mode == "head":
        return 0, min(size, total)
    if mode == "tail":
        return max(0, total - size), total
    lo = 0 if start is None else start
    hi = lo + size if end is None else end
    if lo < 0 or hi < 0:
        raise ObservationError(
            f"range {lo}-{hi}: offsets count from 0; for the end of the observation use mode tail"
        )
    if lo > hi:
        raise ObservationError(f"range {lo}-{hi}: start must not be after end")
    if lo >= total and total:
        raise ObservationError(
            f"range start {lo} is past the end: observation '{entry.id}' has {total} "
            f"{entry.unit} (0 to {total - 1})"
        )
    return lo, min(hi, total)


def line_range(entry: Entry, start: int | None, end: int | None, n: int | None) -> tuple[int, int]:
    """Given an entry and a `lines` read, return its first and last line (1-based, inclusive,
    cut at the last line). Raise ObservationError for a start before line 1, an end before
    the start, or a start past the last line.
    """
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
    return first, min(last, entry.lines)


def check_size(entry: Entry, mode: str, lo: int, hi: int, max_chars: int | None) -> None:
    """Given an entry and a span a read would return, return None if it is within `max_chars`.
    Raise ObservationError if it is longer.
    """
    if max_chars is not None and hi - lo > max_chars:
        raise ObservationError(
            f"mode '{mode}' would return {hi - lo} {entry.unit} of observation '{entry.id}', "
            f"more than the {max_chars} one read may return (observations.max_read_chars); "
            "read a slice: head or tail with n, range with start and end, lines, or grep"
        )


# --------------------------------------------------------------------------------------------
# grep over the lines.
# --------------------------------------------------------------------------------------------


def _clip_line(line: str, center: int) -> str:
    """Given a line and where its match starts, return the line, or for a long line a window
    around `center` saying how much was left out.
    """
    if len(line) <= GREP_LINE_CHARS:
        return line
    start = max(0, min(center - GREP_LINE_CHARS // 4, len(line) - GREP_LINE_CHARS))
    end = start + GREP_LINE_CHARS
    before = f"[... {start} characters omitted ...]" if start else ""
    after = f"[... {len(line) - end} characters omitted ...]" if end < len(line) else ""
    return f"{before}{line[start:end]}{after}"


def grep(
    entry: Entry,
    lines: Iterable[str],
    pattern: str | None,
    context: int,
    max_matches: int,
    ignore_case: bool,
) -> Slice:
    """Given a text entry and its lines (without newlines), return the grep Slice: the lines
    matching the regular expression `pattern` with `context` lines around, listing at most
    `max_matches`. Raise ObservationError for a missing or invalid pattern, a bad `context` or
    `max_matches`, or a pattern that runs past the time limit.
    """
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

    for number, line in enumerate(lines, start=1):
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
