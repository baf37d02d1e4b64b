"""Today's daily note: the newest lines of `memory/YYYY-MM-DD.md` (or the configured folder) that
fit, timed entries after the clock left out, and the date a note's name carries."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from assembler.errors import UnsafePathError
from assembler.fsutil import allowed_root, read_regular, resolves_within

# "- 21:52 Ray: ..." or "21:52 ...": a daily note's timed entry.
_ENTRY_TIME = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?(\d{1,2}):(\d{2})\b")

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
# The most of today's note that is read: a day's notes are kilobytes; a larger note is not
# read (FileTooLargeError, an OSError: the run says so and goes on).
MAX_NOTE_BYTES = 8 * 1024 * 1024


@dataclass
class DailyContext:
    """The newest lines of today's daily note."""

    path: Path
    lines: list[str]  # the lines shown, in the note's order (no blank lines, no headings)
    truncated: bool  # the note has lines that are not shown
    start_line: int = 1  # the 1-based line number of the first line shown
    line_numbers: list[int] = field(default_factory=list)  # 1-based, one per line shown
    newness: list[int] = field(default_factory=list)  # 0 for the newest line, one per line


def daily_context(workspace: Path, folder: str, today: datetime, tail_bytes: int) -> DailyContext:
    """Given the workspace, the daily-notes folder and the local clock, return the newest lines
    of today's note (`<folder>/YYYY-MM-DD.md`), up to `tail_bytes` bytes, shown in the note's
    order.

    Newest means by the entry's time ("- 21:52 ..."), newest first; an indented line goes
    with the entry above it. Lines without a time of their own at the top level (lessons,
    lists under their own heading) come after every timed line: memory search finds them
    when they matter. A note without times is read from its end. Headings and blank lines are
    not shown, nor entries timed after `today`'s clock (and what follows them): the note may
    be newer than the clock asked for.

    A missing note gives no lines. Raise OSError if the note exists but cannot be read (or is
    larger than `MAX_NOTE_BYTES`), and UnsafePathError if it is a link out of the folder its
    setting points into or not a regular file.
    """

    path = workspace / folder / f"{today:%Y-%m-%d}.md"
    if not path.exists() or path.is_dir():
        return DailyContext(path, [], False)  # a named pipe is refused below, and said
    root = allowed_root(folder, workspace)
    if not resolves_within(path, root):
        raise UnsafePathError(
            f"{path} is a link to {os.path.realpath(path)}, outside {root}; not shown"
        )
    # Not blocking (a named pipe would stop the run), and bounded: daily notes are small.
    data = read_regular(path, limit=MAX_NOTE_BYTES, follow_links=True).data or b""
    text = data.decode("utf-8", errors="replace")
    clock = today.hour * 60 + today.minute
    # (line number, text, sort key): timed entries by time, then untimed ones by position.
    entries: list[tuple[int, str, tuple[int, int, int]]] = []
    latest: int | None = None  # the time of the last timed entry above
    key = (0, 0, 0)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or _HEADING.match(line):
            continue
        timed = _ENTRY_TIME.match(line)
        if timed is not None and int(timed.group(2)) < 60:
            latest = int(timed.group(1)) * 60 + int(timed.group(2))
            key = (1, latest, number)
        elif not line[:1].isspace() or not entries:
            key = (0, 0, number)
        # An indented line keeps the key of the entry it continues.
        if latest is not None and latest > clock:
            continue
        entries.append((number, line.rstrip(), key))
    order = sorted(range(len(entries)), key=lambda i: entries[i][2], reverse=True)
    chosen: list[int] = []
    used = 0
    for i in order:
        size = len(entries[i][1].encode()) + 1
        if used + size > tail_bytes:
            break
        chosen.append(i)
        used += size
    rank = {i: r for r, i in enumerate(chosen)}
    shown = sorted(chosen)
    return DailyContext(
        path,
        [entries[i][1].strip() for i in shown],
        truncated=len(shown) < len(entries),
        start_line=entries[shown[0]][0] if shown else 1,
        line_numbers=[entries[i][0] for i in shown],
        newness=[rank[i] for i in shown],
    )
