"""Markdown chunking for the memory index: a file's text cut into chunks that follow its
structure.

Blocks are ATX headings, paragraphs, list items and fenced code blocks; blocks are packed to
about `chunk_tokens`, with the tail blocks of one chunk repeated at the head of the next (about
`overlap_tokens`), and a new section starts a new chunk once the current one is half full. Each
chunk keeps its 1-based line range and its heading path ("Infra > Kubernetes"); the text
embedded and indexed for BM25 is the heading path, a blank line, then the chunk text.

The text is redacted before it is cut (`[redacted GitHub token]`), so that no chunk, snippet,
vector or search result holds a secret or personal data, and a private key is seen whole
even when it spans chunks; a redacted key keeps its line breaks, so line ranges still point
at the file's lines.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from assembler.redact import redact
from assembler.tokens import TokenCounter, estimate_tokens

# Bump when chunking changes its output for the same input, so every file is re-chunked.
# 2: chunk text is redacted (an index built before held the secrets of the notes).
CHUNKER_VERSION = 2

ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")


@dataclass(frozen=True)
class Chunk:
    """A piece of a Markdown file: its 1-based line range, text (redacted) and heading path."""

    start_line: int
    end_line: int
    text: str
    heading: str

    @property
    def embed_text(self) -> str:
        """Return the text that is embedded and indexed: heading path, blank line, text."""
        return f"{self.heading}\n\n{self.text}" if self.heading else self.text

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Block:
    start: int  # 0-based index of the first line
    end: int  # 0-based index after the last line
    heading: str  # the heading path in force (a heading's own path includes itself)
    level: int  # 1..6 for an ATX heading, else 0
    tokens: int


def chunk_markdown(
    text: str,
    *,
    chunk_tokens: int = 400,
    overlap_tokens: int = 80,
    count: TokenCounter = estimate_tokens,
) -> list[Chunk]:
    """Given a Markdown text, return its chunks in order, their text redacted.

    Blocks (headings, paragraphs, list items, fenced code) are packed up to about
    `chunk_tokens` as measured by `count`; the next chunk repeats the previous one's tail
    blocks up to about `overlap_tokens`, except when it starts a new section. A block larger
    than `chunk_tokens` is split between lines (a fence too); a single line is never split.
    Raise ValueError if `overlap_tokens` is not smaller than `chunk_tokens`.
    """
    if chunk_tokens <= 0 or not 0 <= overlap_tokens < chunk_tokens:
        raise ValueError(
            f"need 0 <= overlap_tokens < chunk_tokens, got {overlap_tokens} and {chunk_tokens}"
        )
    lines = [line.rstrip("\r") for line in redact(text, keep_lines=True).split("\n")]
    blocks = _split_oversized(_blocks(lines, count), lines, chunk_tokens, count)
    chunks: list[Chunk] = []
    current: list[_Block] = []
    current_tokens = 0
    fresh_tokens = 0  # tokens of `current` that are not overlap from the previous chunk

    def emit(group: list[_Block]) -> None:
        first, last = group[0], group[-1]
        body = "\n".join(lines[first.start : last.end])
        # The heading path of the first text, so "# Infra / ## Kubernetes / text" is under
        # "Infra > Kubernetes", not just "Infra".
        context = next((b for b in group if b.level == 0), last)
        chunks.append(Chunk(first.start + 1, last.end, body, context.heading))

    for block in blocks:
        if current:
            full = current_tokens + block.tokens > chunk_tokens
            new_section = block.level > 0 and fresh_tokens >= chunk_tokens / 2
            if full or new_section:
                # Headings at the end belong with what follows them, not with what precedes.
                carried: list[_Block] = []
                while current and current[-1].level > 0:
                    carried.insert(0, current.pop())
                if current:
                    emit(current)
                if carried or block.level > 0:
                    current = carried
                else:
                    budget = min(overlap_tokens, chunk_tokens - block.tokens)
                    current = _tail(current, budget)
                current_tokens = sum(b.tokens for b in current)
                fresh_tokens = sum(b.tokens for b in carried)
        current.append(block)
        current_tokens += block.tokens
        fresh_tokens += block.tokens
    if current:  # it always ends with a block not emitted yet
        emit(current)
    return chunks


def _blocks(lines: list[str], count: TokenCounter) -> list[_Block]:
    """Given the lines of a Markdown file, return its blocks (blank lines belong to none)."""
    blocks: list[_Block] = []
    headings: list[tuple[int, str]] = []

    def path() -> str:
        return " > ".join(title for _, title in headings if title)

    def add(start: int, end: int, level: int = 0) -> None:
        tokens = count("\n".join(lines[start:end]))
        blocks.append(_Block(start, end, path(), level, tokens))

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if fence := _FENCE.match(line):
            marker = fence.group(1)
            closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
            end = next((j for j in range(i + 1, n) if closing.match(lines[j])), n - 1)
            add(i, end + 1)
            i = end + 1
            continue
        if heading := ATX_HEADING.match(line):
            level = len(heading.group(1))
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, (heading.group(2) or "").strip()))
            add(i, i + 1, level)
            i += 1
            continue
        end = i + 1
        while end < n and lines[end].strip() and not _starts_block(lines[end]):
            end += 1
        add(i, end)
        i = end
    return blocks


def _starts_block(line: str) -> bool:
    return bool(_FENCE.match(line) or ATX_HEADING.match(line) or _LIST_ITEM.match(line))


def _split_oversized(
    blocks: list[_Block], lines: list[str], chunk_tokens: int, count: TokenCounter
) -> list[_Block]:
    """Given blocks, return them with each one over `chunk_tokens` cut between lines."""
    result: list[_Block] = []
    for block in blocks:
        if block.tokens <= chunk_tokens or block.end - block.start == 1:
            result.append(block)
            continue
        start, tokens = block.start, 0
        for i in range(block.start, block.end):
            line_tokens = count(lines[i]) + 1  # the newline joining it to the piece
            if i > start and tokens + line_tokens > chunk_tokens:
                result.append(_Block(start, i, block.heading, 0, tokens))
                start, tokens = i, 0
            tokens += line_tokens
        result.append(_Block(start, block.end, block.heading, 0, tokens))
    return result


def _tail(blocks: list[_Block], budget: int) -> list[_Block]:
    """Given a chunk's blocks, return its last blocks that fit in `budget` tokens."""
    tail: list[_Block] = []
    used = 0
    for block in reversed(blocks):
        if used + block.tokens > budget:
            break
        tail.insert(0, block)
        used += block.tokens
    return tail


_DATED_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def note_date(path: str) -> date | None:
    """Given a memory file's path, return the day its name says (`memory/2026-03-02.md`), or
    None for a file not named by a day."""
    found = _DATED_NAME.search(path.rsplit("/", 1)[-1])
    if found is None:
        return None
    try:
        return date(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    except ValueError:
        return None


# A line's list marker (and task box) and the clock time a log entry begins with.
LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
LOG_CLOCK = re.compile(r"^\d{1,2}:\d{2}\b")
_WORDS = re.compile(r"[^\W_]+")


# A log entry that names its subject before a colon ("22:34 Lab disk at 91%: ...") names it in
# at most this many characters.
SUBJECT_HEAD_CHARS = 40


def entry_head(line: str) -> str:
    """Given a line of a note, return the subject it names before a colon, after its list
    marker and clock time ("- 22:34 Lab disk at 91%: the Docker cache refilled" gives "Lab
    disk at 91%"); "" when it names none (no colon, a quotation before it, or longer than
    SUBJECT_HEAD_CHARS)."""
    text = LIST_MARKER.sub("", line.strip())
    text = LOG_CLOCK.sub("", text).lstrip(" -–:")
    head, colon, _ = text.partition(":")
    if not colon or len(head) > SUBJECT_HEAD_CHARS or '"' in head:
        return ""
    return head.strip()


# A log entry is a reply to the entry above it when it follows within this many minutes.
REPLY_MINUTES = 10


def replied_head(rows: Sequence[str], row: int) -> str:
    """Given a note's lines and the index of one, return the subject it answers when it is a
    reply: its entry opens with one speaker's words ("21:12 Ray: "yeah yeah, I know". Not
    raising it again ...") and the list item just above, written at most REPLY_MINUTES before
    it when both give their time, names a subject in two words or more ("21:10 Lab disk at
    86%: ..."); else ""."""
    if row < 1 or len(_WORDS.findall(entry_head(rows[row]))) != 1:
        return ""
    above = rows[row - 1].strip()
    if not LIST_MARKER.match(above):
        return ""
    then, now = clock_minutes(above), clock_minutes(rows[row])
    if then is not None and now is not None and not 0 <= now - then <= REPLY_MINUTES:
        return ""
    head = entry_head(above)
    return head if len(_WORDS.findall(head)) >= 2 else ""


def clock_minutes(line: str) -> int | None:
    """Given a line of a note, return the clock time its entry begins with (after its list
    marker), in minutes of the day ("- 21:10 Lab disk ..." gives 1270); None without one."""
    found = LOG_CLOCK.match(LIST_MARKER.sub("", line.strip()))
    if found is None:
        return None
    hours, minutes = found.group(0).split(":")
    return int(hours) * 60 + int(minutes)


def subject_head(rows: Sequence[str], row: int) -> str:
    """Given a note's lines and the index of one, return the subject the line names before a
    colon in two words or more, or as a reply the one it answers (see `replied_head`); ""
    when neither."""
    own = entry_head(rows[row])
    if len(_WORDS.findall(own)) >= 2:
        return own
    return replied_head(rows, row)
