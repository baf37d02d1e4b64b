"""Relevant memories for a conversation: which queries to ask the memory index, and which hits
the Relevant Memories section shows.

One query made of all the recent messages is dominated by whichever topic has the most words,
so it misses the topic the human is on now about half of the time; the last message alone
finds the current topic but forgets the earlier ones. So each recent human message is its own
query: the newest (joined with the one before when it is too short to stand alone) gets the
first slots, and every earlier topic then gets one slot while there is room.

Opening the index, syncing it and keeping it open are `assembler.memory.lifecycle`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from assembler.memory.chunks import clock_minutes, entry_head, note_date
from assembler.memory.search import SAME_SUBJECT_COSINE, Hit, Line, best_lines, every_line
from assembler.redact import redact
from assembler.transcripts.message import Message, clip_middle
from assembler.words import content_words

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.memory.embeddings import Embedder, FloatMatrix
    from assembler.memory.index import MemoryIndex

# A human message with fewer content words than this ("ok go", "and then?") says too little
# to search with on its own; as the newest message it is joined with the one before.
MIN_QUERY_WORDS = 3
# A long message asks with this many characters of its start and of its end: the human's
# words are usually before and after a paste, and the embedding model reads only 256 tokens
# (about 600 characters of a log; with more the end would be cut off) and keyword search only
# the first 64 terms.
QUERY_END_CHARS = 300


# Below this many chunks the keyword floor is not applied (see `Floor.admits`).
KEYWORD_FLOOR_MIN_CHUNKS = 20


@dataclass
class RecallResult:
    """The hits to show (current topic first), the queries asked, and why."""

    hits: list[Hit]
    queries: list[str]
    explain: list[str] = field(default_factory=list)
    below_floor: int = 0  # hits the relevance floor kept out
    # The next hits, in order, for the places of hits the file leaves out as repeats.
    spare: list[Hit] = field(default_factory=list)

    def finish(self, below: int, floor: Floor | None, lines: int = 0) -> RecallResult:
        """Return this result with how many hits the floor kept out, said in `explain`."""
        if below or lines:
            self.explain.append(
                f"{below + lines} hit(s) under the relevance floor not shown ({floor})"
            )
        self.below_floor = below + lines
        return self


@dataclass(frozen=True)
class Floor:
    """The lowest relevance the Relevant Memories section shows: a fused score (vectors and
    BM25) for hits that have a vector, a BM25 share for hits found by keywords alone (their
    scores run on another scale), and a share of the best hit of the same query (the answer
    usually leads by far; what trails it is mostly noise). Relevance is the score without the
    recency boost: a new daily note is ranked higher, not made relevant.

    The line shown must bear on the query too: the mean of the chunk's relevance and the
    line's score (see `search.Line`) must reach the same absolute floor. A chunk can reach the
    floor on a few shared words while the sentence it would show answers nothing."""

    hybrid: float = 0.0
    keyword: float = 0.0
    relative: float = 0.0

    def admits(self, hit: Hit, best: float, chunks: int | None = None) -> bool:
        """Given a hit, the relevance of its query's best hit and how many chunks the index
        holds (None: unknown, many), return whether it is relevant enough to show.

        In an index of fewer than KEYWORD_FLOOR_MIN_CHUNKS chunks the keyword floor does not
        apply: BM25's IDF means little there (in a one-chunk index every word the chunk has
        weighs nothing), so a new user's few notes would never reach it.
        """
        return relevance(hit) >= max(self.limit(hit, chunks), self.relative * best)

    def limit(self, hit: Hit, chunks: int | None = None) -> float:
        """Given a hit and the index's size (see `admits`), return its absolute floor."""
        if hit.vector is not None:
            return self.hybrid
        small = chunks is not None and chunks < KEYWORD_FLOOR_MIN_CHUNKS
        return 0.0 if small else self.keyword

    def admits_line(self, hit: Hit, score: float, chunks: int | None = None) -> bool:
        """Given a hit, the score of the line it would show and the index's size, return
        whether the line bears on the query enough to show."""
        return (relevance(hit) + score) / 2 >= self.limit(hit, chunks)

    def keep(self, hits: Sequence[Hit], chunks: int | None = None) -> list[Hit]:
        """Given one query's hits, best first, and the index's size, return those relevant
        enough to show."""
        best = max((relevance(hit) for hit in hits), default=0.0)
        return [hit for hit in hits if self.admits(hit, best, chunks)]


def written_by(hit: Hit, now: datetime) -> bool:
    """Given a hit and the run's clock, return whether its note could have been written by
    then: a daily note of a later day was not, nor a line of today's note timed after the clock
    (a run with `--now` in the past reads the memory as it is now)."""
    day = note_date(hit.path)
    if day is None:
        return True
    today = now.date()
    if day != today:
        return day < today
    clock = clock_minutes(hit.snippet)
    return clock is None or clock <= now.hour * 60 + now.minute


def relevance(hit: Hit) -> float:
    """Given a hit, return its score without the recency boost."""
    return hit.score / hit.recency if hit.recency > 0 else hit.score


def conversation_queries(messages: Sequence[Message], *, max_messages: int) -> list[str]:
    """Given the recent messages (oldest first), return the queries to ask, current topic first.

    The queries are the last `max_messages` human messages, newest first, each on its own;
    the newest is joined with the one before when it has fewer than MIN_QUERY_WORDS content
    words. Messages with no content words at all ("thanks!") are not queries. A long message
    asks with its first and last QUERY_END_CHARS characters (see there).
    """
    humans = [
        clip_middle(m.text.strip(), QUERY_END_CHARS, QUERY_END_CHARS)
        for m in messages
        if m.role == "user" and m.text and not m.text.isspace()
    ]
    humans = [t for t in humans[-max_messages:] if content_words(t)]
    if not humans:
        return []
    newest = humans.pop()
    if len(content_words(newest)) < MIN_QUERY_WORDS and humans:
        newest = f"{humans.pop()}\n{newest}"
    return [newest, *reversed(humans)]


def recall_memories(
    index: MemoryIndex,
    messages: Sequence[Message],
    *,
    k: int = 4,
    max_messages: int = 6,
    floor: Floor | None = None,
    exclude: Callable[[Hit], bool] | None = None,
    spare: int = 0,
    **search_options: Any,
) -> RecallResult:
    """Given the memory index and the recent messages, return the hits the Relevant Memories
    section shows: up to `k`, best first, each with its line (see `search.best_lines`) as the
    snippet and what the line is about as its subject, dated when its note is older than
    today ("Evening (2026-02-28)").

    The current query gets the first slots (all of them when there are no earlier topics,
    else k minus one per earlier topic, at least half); each earlier query, newest first, then
    gets its best hit not already shown; slots still free go to the current query's next hits.
    Hits under `floor` are not shown (fewer than k rather than noise), nor hits with no line
    to show (headings alone, or only lines written after the clock `now`); `exclude` drops
    others (e.g. shown elsewhere in the file). Of two lines on the same subject (see
    `same_subject`) only the newer is shown (see `newer`): the older one's query counts as
    answered. `search_options` go to `MemoryIndex.search_many` (weights, min_score, MMR,
    recency, now). Up to `spare` more hits, the queries' next ones in turn, go to
    `RecallResult.spare`.
    """
    queries = conversation_queries(messages, max_messages=max_messages)
    if not queries:
        return RecallResult([], [], ["no human message with content to search for"])
    ranked = index.search_many(queries, k=k * 3, **search_options)
    below = 0
    chunks: int | None = None
    # A newer line on a hit's subject may take its place when it clears the absolute floor,
    # however far it trails the query's best (see `_Picker.offer`).
    rivals = ranked
    if floor is not None:
        chunks = index.chunk_count()
        kept = [floor.keep(hits, chunks) for hits in ranked]
        below = len({(h.path, h.start_line) for hits in ranked for h in hits}) - len(
            {(h.path, h.start_line) for hits in kept for h in hits}
        )
        rivals = [
            [hit for hit in hits if relevance(hit) >= floor.limit(hit, chunks)] for hits in ranked
        ]
        ranked = kept
    if exclude is not None:
        ranked = [[hit for hit in hits if not exclude(hit)] for hits in ranked]
        rivals = [[hit for hit in hits if not exclude(hit)] for hits in rivals]
    explain = [
        f"query {i + 1}{' (current)' if i == 0 else ''}: {_clip(q)!r}"
        for i, q in enumerate(queries)
    ]
    weights: dict[str, float] = {
        key: float(search_options[key])
        for key in ("vector_weight", "bm25_weight")
        if key in search_options
    }
    now = search_options.get("now") or datetime.now().astimezone()
    picker = _Picker(index, queries, floor, chunks, now, weights, explain)
    earlier = len(queries) - 1
    current_slots = k - min(earlier, k // 2) if earlier else k
    for hit in ranked[0]:
        if picker.count(0) >= current_slots or len(picker.shown) >= k:
            break
        picker.offer(hit, 0, rivals=rivals[0])
    for number, answers in enumerate(ranked[1:], start=1):
        for hit in answers:
            if len(picker.shown) >= k or picker.offer(hit, number, rivals=rivals[number]):
                break
    for hit in ranked[0]:
        if len(picker.shown) >= k:
            break
        picker.offer(hit, 0, rivals=rivals[0])
    shown = len(picker.shown)
    # Bounded by the longest list of hits, not by k: a config's huge top_k is no loop of
    # billions of empty turns.
    for rank in range(min(k * 3, max((len(answers) for answers in ranked), default=0))):
        for number, answers in enumerate(ranked):
            if len(picker.shown) < shown + spare and rank < len(answers):
                picker.offer(answers[rank], number, spare=True)
    return picker.result(shown).finish(below, floor, picker.below)


@dataclass
class _Shown:
    hit: Hit
    query: int
    line: Line


class _Picker:
    """The hits chosen so far for the section and their lines, in the order taken."""

    def __init__(
        self,
        index: MemoryIndex,
        queries: Sequence[str],
        floor: Floor | None,
        chunks: int | None,
        now: datetime,
        weights: dict[str, float],
        explain: list[str],
    ) -> None:
        self.index = index
        self.queries = queries
        self.floor = floor
        self.chunks = chunks
        self.now = now
        self.weights = weights
        self.explain = explain
        self.shown: list[_Shown] = []
        self.judged: set[tuple[str, int, int]] = set()
        self.below = 0  # lines under the floor
        self._mtimes: dict[str, float] = {}

    def count(self, query: int) -> int:
        return sum(1 for item in self.shown if item.query == query)

    def offer(
        self, hit: Hit, query: int, *, spare: bool = False, rivals: Sequence[Hit] = ()
    ) -> bool:
        """Given a hit of a query, take it if it has a line worth showing; return whether the
        query is answered: taken, or its line is on the subject of a newer one shown. Of the
        query's other hits (`rivals`) and those already taken, one whose line is on the same
        subject and newer takes its place (see `_newest_on_subject`); one already taken
        answers the query."""
        key = (hit.path, hit.start_line)
        if any((item.hit.path, item.hit.start_line) == key for item in self.shown):
            return False
        if (*key, query) in self.judged:
            return False
        self.judged.add((*key, query))
        where = f"query {query + 1} -> {_describe(hit)}{' (spare)' if spare else ''}"
        line = self._line(hit, self.queries[query])
        if line is None:
            self.explain.append(f"{where}: no line to show (headings only, or written later)")
            return False
        if self.floor is not None and not self.floor.admits_line(hit, line.score, self.chunks):
            self.below += 1
            self.explain.append(f"{where}: its line scores {line.score:.3f}, under the floor")
            return False
        item = _Shown(replace(hit, snippet=line.text, subject=line.subject), query, line)
        # The hits already taken count too: a newer line of theirs answers this one.
        newest = self._newest_on_subject(item, [*rivals, *(taken.hit for taken in self.shown)])
        if newest is not item:
            where = f"query {query + 1} -> {_describe(newest.hit)}"
            self.explain.append(f"{where}: newer than {hit.path}, shown in its place")
            item = newest
            if any((i.hit.path, i.hit.start_line) == _key(newest.hit) for i in self.shown):
                return True
        for number, other in enumerate(self.shown):
            if not _same_subject(line, other.line):
                continue
            if not newer(item, other, self._mtime):
                self.explain.append(f"{where}: older than {other.hit.path}, same subject")
                return True
            self.shown[number] = item
            self.explain.append(f"{where}: newer than {other.hit.path}, shown in its place")
            return True
        self.shown.append(item)
        self.explain.append(where)
        return True

    def _newest_on_subject(self, item: _Shown, rivals: Sequence[Hit]) -> _Shown:
        """Given a line about to be shown and the other hits of its query (each relevant
        enough to show), return the newest line of them on its subject (see `same_subject`,
        `newer`): "22:34 Lab disk at 91%" of tonight's note rather than "Lab disk: 96% → 84%
        after prune" of last week, though last week's line answers the query's words better.
        Each rival's line is the one nearest the item's line, not the query: a day's log
        shows the subject in one entry among many; so is any of its lines that the words
        alone put on the item's subject (a later release of the same series, the same subject
        before a colon), wherever it is in the chunk. `item` itself when none is newer; only
        daily notes of the same day or later are read."""
        best = item
        for rival in rivals:
            if _key(rival) in (_key(item.hit), _key(best.hit)):
                continue
            day = note_date(rival.path)
            if day is None or day < _day(best.hit.path, self._mtime):
                continue  # an undated note (MEMORY.md) is kept on purpose, not a newer log
            nearest = self._line(rival, item.line.text)
            lines = [] if nearest is None else [nearest]
            lines += [
                line
                for line in every_line(rival, keep=partial(self._written, rival))
                if _same_head(line.head, item.line.head) or _same_release(line.text, item.line.text)
            ]
            for line in lines:
                if line is not nearest or _same_subject(line, best.line):
                    candidate = _Shown(
                        replace(rival, snippet=line.text, subject=line.subject), item.query, line
                    )
                    if newer(candidate, best, self._mtime):
                        best = candidate
        return best

    def _written(self, hit: Hit, sentence: str) -> bool:
        return written_by(replace(hit, snippet=sentence), self.now)

    def _line(self, hit: Hit, query: str) -> Line | None:
        """Return the line a hit shows for a query, None when it has none written by now."""
        # Sentences are compared with the query by the model only when the search had it:
        # a model that failed on the query would fail again on every line.
        embedder = self.index.embedder if hit.vector is not None else None
        (line,) = best_lines(
            [(hit, query)],
            weights=self.index.snippet_weights,
            embedder=embedder,
            keep=self._written,
            **self.weights,
        )
        return line

    def _mtime(self, path: str) -> float:
        if path not in self._mtimes:
            root = getattr(self.index, "workspace", None)
            try:
                self._mtimes[path] = (Path(root) / path).stat().st_mtime if root else 0.0
            except OSError:
                self._mtimes[path] = 0.0
        return self._mtimes[path]

    def result(self, shown: int) -> RecallResult:
        """Return what was picked: the first `shown` hits best first (the cap keeps the best,
        see `fit_sections`), each subject dated when its note is older than today; then the
        spare ones in the order taken."""
        today = self.now.date()

        def dated(item: _Shown) -> Hit:
            day = note_date(item.hit.path)
            label = item.line.subject
            if day is not None and day < today and day.isoformat() not in label:
                label = f"{label} ({day.isoformat()})"
            return replace(item.hit, subject=label)

        first = sorted(self.shown[:shown], key=lambda item: -relevance(item.hit))
        return RecallResult(
            [dated(item) for item in first],
            list(self.queries),
            self.explain,
            spare=[dated(item) for item in self.shown[shown:]],
        )


def _key(hit: Hit) -> tuple[str, int]:
    return hit.path, hit.start_line


# Without vectors, two lines are on the same subject when this share of the content words of
# the shorter one (at least SAME_SUBJECT_WORDS of them) are in the other: "Lab disk at 86%:
# Docker up 30 GB ... plus Frigate" and "Lab disk at 91%: the Docker build cache refilled
# ..., Frigate +23 GB".
SAME_SUBJECT = 0.5
SAME_SUBJECT_WORDS = 3


def same_subject(line: str, other: str) -> bool:
    """Given two lines, return whether they state something about the same subject (see
    SAME_SUBJECT), so that a newer one supersedes an older one: most of their content words
    are shared, or one names its subject before a colon in two words or more that the other's
    subject holds ("Lab disk" and "Lab disk at 91%"), or they name two releases of one series
    (see `_same_release`)."""
    a, b = _subject_words(line), _subject_words(other)
    shared = len(a & b)
    if shared >= SAME_SUBJECT_WORDS and shared >= SAME_SUBJECT * min(len(a), len(b)):
        return True
    return _same_head(entry_head(line), entry_head(other)) or _same_release(line, other)


# A release's version: three numbers ("1.14.3", "v2.0.1"); its series is the first two
# ("1.14"). Four numbers are an address more often than a version, and are not read.
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+)\.(\d+)(?!\w|\.\d)")


def _same_release(line: str, other: str) -> bool:
    """Whether the lines name different releases of one series ("pushed the git tag 1.14.3"
    and "1.14.4 built with the semver tag"): what the newer says of its release supersedes the
    older's. Versions of two numbers ("Postgres 16.6", "Python 3.11") name a product's line,
    not a release of it, and are not read."""
    mine, theirs = _versions(line), _versions(other)
    return any(
        series == other_series and version != other_version
        for series, version in mine
        for other_series, other_version in theirs
    )


def _versions(text: str) -> set[tuple[str, str]]:
    return {(m.group(1), f"{m.group(1)}.{m.group(2)}") for m in _VERSION.finditer(text)}


def _same_head(head: str, other: str) -> bool:
    """Whether two subjects named before a colon (see `chunks.entry_head`), each in two words
    or more, are one: one holds the other's words ("Lab disk", "Lab disk at 91%")."""
    a, b = _subject_words(head), _subject_words(other)
    return min(len(a), len(b)) >= 2 and (a <= b or b <= a)


def _same_subject(line: Line, other: Line) -> bool:
    """Given two lines, return whether they are on one subject: by their sentences' vectors
    when both have one (see `search.SAME_SUBJECT_COSINE`), by the subject they name before a
    colon or answer as a reply (`Line.head`), by the releases they name (see
    `_same_release`), else, without vectors, by their words (see `same_subject`). The vectors
    are of one sentence each; a line that names its subject may say the rest in another."""
    if line.vector is not None and other.vector is not None:
        if float(line.vector @ other.vector) >= SAME_SUBJECT_COSINE:
            return True
    elif same_subject(line.text, other.text):
        return True
    return _same_head(line.head, other.head) or _same_release(line.text, other.text)


def _subject_words(text: str) -> set[str]:
    return {word.lower().rstrip("s") for word in content_words(text)}


def newer(a: _Shown, b: _Shown, mtime: Callable[[str], float]) -> bool:
    """Given two shown lines and a file's mtime by path, return whether `a` was written after
    `b`: by their notes' days (the date in a daily note's name, else the file's mtime), then
    by the clock time the lines begin with, then by their place in one note, then by mtime."""
    day_a, day_b = _day(a.hit.path, mtime), _day(b.hit.path, mtime)
    if day_a != day_b:
        return day_a > day_b
    clock_a, clock_b = clock_minutes(a.line.text), clock_minutes(b.line.text)
    if clock_a is not None and clock_b is not None and clock_a != clock_b:
        return clock_a > clock_b
    if a.hit.path == b.hit.path:
        return a.hit.start_line > b.hit.start_line
    return mtime(a.hit.path) > mtime(b.hit.path)


def _day(path: str, mtime: Callable[[str], float]) -> date:
    return note_date(path) or datetime.fromtimestamp(mtime(path)).date()


def superseded(line: str, day: date | None, today: date, newest: Iterable[str]) -> bool:
    """Given a memory's line, the day of its note (None: not a dated note), today's date and
    lines of today's note shown elsewhere (Daily Context), return whether one of those says
    something newer on its subject (see `same_subject`): the memory's note is of an earlier
    day, or of today and the line's clock time is earlier. A note without a date (MEMORY.md)
    is what the agent keeps on purpose: never superseded here."""
    if day is None or day > today:
        return False
    clock = clock_minutes(line)
    for other in newest:
        if not same_subject(line, other):
            continue
        if day < today:
            return True
        later = clock_minutes(other)
        if clock is not None and later is not None and later > clock:
            return True
    return False


# A memory whose content words are this much inside one line the file already states says
# nothing new.
REPEAT_SHARE = 0.75
# The human's own request (the Working on line) shares its words with the memory that answers
# it ("when do the tomatoes need staking?", "Tomatoes need staking in May."): a memory repeats
# it only when nearly every word, function words aside, is in it.
REQUEST_SHARE = 0.9
_FUNCTION_WORDS = frozenset(
    "a an and are as at be but by for from has have he her his i if in into is it its me my "
    "no not of on or our she so that the their them then there these they this to was we "
    "were what when which who why will with you your".split()
)
_WORDS = re.compile(r"[^\W_]+")


def _gist_words(text: str) -> set[str]:
    """The content words of a text, and its capitalised words after the first: a name or a
    month ("in May") says something even where the word is a stopword."""
    names = [w for w in _WORDS.findall(text)[1:] if w[:1].isupper()]
    return {word.lower().rstrip("s") for word in [*content_words(text), *names]}


def _words(text: str) -> set[str]:
    words = {word.lower().rstrip("s") for word in _WORDS.findall(text)}
    return words - _FUNCTION_WORDS


def _inside(words: set[str], line: set[str], share: float) -> bool:
    return len(words & line) >= share * len(words)


def repeats(snippet: str, statements: Iterable[str], requests: Iterable[str] = ()) -> bool:
    """Given a memory's snippet, the lines the file already states (today's note in Daily
    Context, the time note, earlier memories) and the human's requests it shows (Working on),
    return whether the memory only repeats one of them: REPEAT_SHARE of its content words are
    in a statement, or REQUEST_SHARE of its words in a request. A snippet without a content
    word says nothing and counts as a repeat."""
    gist = _gist_words(snippet)
    if not gist:
        return True
    if any(_inside(gist, _gist_words(line), REPEAT_SHARE) for line in statements):
        return True
    words = _words(snippet)
    return any(_inside(words, _words(line), REQUEST_SHARE) for line in requests)


def _describe(hit: Hit) -> str:
    parts = [f"{hit.path}:{hit.start_line}-{hit.end_line} score {hit.score:.3f}"]
    if hit.vector is not None:
        parts.append(f"vector {hit.vector:.3f}")
    if hit.bm25 is not None:
        parts.append(f"bm25 {hit.bm25:.3f}")
    if not math.isclose(hit.recency, 1.0):
        parts.append(f"recency x{hit.recency:.2f}")
    return ", ".join(parts)


def _clip(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def memory_floor(config: Config) -> Floor:
    """Return the relevance floor of `config.memory` (see `Floor`); the line shown is held to
    it too."""
    memory = config.memory
    return Floor(memory.floor, memory.keyword_floor, memory.relative_floor)


class RememberedQueries:
    """An Embedder that keeps the vectors of the last `size` texts it encoded in small batches
    (up to `batch` texts, at most `size`).

    From one daemon cycle to the next the recent human messages, which are the queries, and
    the sentences of the hits shown (see `search.best_lines`) are mostly the same:
    only the new ones need the model. Large batches (chunks being indexed) pass straight
    through, so they never push the queries out.
    """

    def __init__(self, embedder: Embedder, size: int = 512, batch: int = 48) -> None:
        self.embedder = embedder
        self.size = size
        self.batch = min(batch, size)
        self._vectors: dict[str, Any] = {}

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """Given texts, return their unit vectors, encoding only those not seen lately."""
        if not texts or len(texts) > self.batch:
            return self.embedder.encode(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, self.embedder.encode(missing), strict=True):
                self._vectors[text] = vector
        for text in texts:  # most recently used last; the oldest go first
            self._vectors[text] = self._vectors.pop(text)
        result = np.stack([self._vectors[t] for t in texts])
        while len(self._vectors) > self.size:
            del self._vectors[next(iter(self._vectors))]
        return result


def shown_hit(hit: Hit, extra_secret_patterns: Sequence[str] = ()) -> Hit:
    """Given a hit, return it as an output may show it: secrets and personal data in its
    snippet and text redacted (`[redacted GitHub token]`), as SCRATCHPAD.md redacts them.
    Every path that prints hits (`assemble search`, the MCP `memory_search`) shows these."""

    def clean(text: str) -> str:
        return redact(text, extra_secret_patterns=extra_secret_patterns)

    return replace(hit, snippet=clean(hit.snippet), text=clean(hit.text))


def hit_record(hit: Hit, *, explain: bool = False) -> dict[str, Any]:
    """Given a hit, return it as JSON data: path, line range, score and snippet (what
    `assemble search --json` and the MCP tool give), with the score parts when `explain`."""
    record: dict[str, Any] = {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": round(hit.score, 4),
        "snippet": hit.snippet,
    }
    if explain:
        record["vector"] = None if hit.vector is None else round(hit.vector, 4)
        record["bm25"] = None if hit.bm25 is None else round(hit.bm25, 4)
        record["recency"] = round(hit.recency, 4)
    return record
