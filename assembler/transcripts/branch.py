"""Walking a session's active branch backwards: from the newest entry along the parent links,
over abandoned branches, with a bound on how far a missing parent is searched for.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Final

from assembler.transcripts.reader import Node, Reader

# When an entry's parent is not where the walk expects it (a branch, or a parent that was lost),
# how many bytes may be read looking for it before treating it as missing. Without a bound a
# single dangling parentId would make every run read the whole file.
_PARENT_SEARCH_BYTES = 32 * 1024 * 1024


BAD: Final = object()  # a line that is not JSON (corrupt, or being written)


BLANK: Final = object()  # an empty line, which is not an error


def parse_line(raw: bytes | str) -> object:
    """Given one raw line, return its JSON value, `BLANK`, or `BAD` if it does not parse."""
    if not raw.strip():
        return BLANK
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return BAD


def walk(items: Iterable[tuple[object, int]], reader: Reader) -> int:
    """Given parsed lines newest first and a format reader, feed it the active branch.

    Return the number of bad lines met (including the messages the reader skipped as
    corrupt). Stop as soon as the reader has what it needs.
    """
    bad = 0
    walker = _Walker(reader)
    for value, size in items:
        if walker.done:
            break
        if value is BLANK:
            continue
        if value is BAD:
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
