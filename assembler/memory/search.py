"""Search over the memory index: the top chunks by cosine similarity (a numpy matrix of the
current chunks' vectors, cached until the database changes) and by FTS5 BM25, fused into
`vector_weight * cosine + bm25_weight * bm25`, with an optional recency boost for dated daily
notes, a minimum score, and optional MMR for diversity. Without an embedder the same code runs
on BM25 alone. The index itself (its database and sync) is `assembler.memory.index`, whose
`MemoryIndex` holds a `MemorySearch` and hands it its search calls.
"""

from __future__ import annotations

import math
import operator
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from assembler.memory.chunks import (
    ATX_HEADING,
    LIST_MARKER,
    LOG_CLOCK,
    clock_minutes,
    note_date,
    replied_head,
    subject_head,
)
from assembler.memory.embeddings import Embedder

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]

_MATCH_CACHE_SIZE = 64  # distinct queries whose BM25 matches and hits are kept


_MAX_QUERY_TERMS = 64


_SNIPPET_CHARS = 200


_DATED = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


# Letters and digits only: FTS5's unicode61 tokenizer splits on everything else too.
_TERM = re.compile(r"[^\W_]+")


_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i if in into is it its me my "
    "no not of on or our she so that the their them then there these they this to was we "
    "were what when which who why will with you your".split()
)


@dataclass(frozen=True)
class Hit:
    """One search result: where it is, how it scored, and what to show."""

    path: str  # relative to the workspace, POSIX separators
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    score: float  # the fused score the ranking used (after recency boost)
    vector: float | None  # the vector part (cosine, 0..1 after clamping), None without one
    bm25: float | None  # the BM25 part, 0..1: the share of the best score the query's words allow
    recency: float  # the boost factor applied (1.0 = none)
    snippet: str  # a short excerpt (one or two lines, <= ~200 chars) for display
    text: str  # the chunk's full text
    chunk_hash: str
    heading: str = ""  # the chunk's heading path, e.g. "Infra > Kubernetes"
    # What the snippet is about, when it is a line (see `Line`): "Kubernetes (2026-02-28)".
    subject: str = ""


@dataclass(frozen=True)
class _Matches:
    """The chunks one FTS5 query matches: FTS5's bm25() by chunk id (negative, lower is
    better), and the ids best first."""

    scores: dict[int, float]
    ranked: list[int]


@dataclass(frozen=True)
class _Vectors:
    """The current chunks' vectors for one model, as one matrix."""

    ids: npt.NDArray[np.int64]
    matrix: Matrix
    row_of: dict[int, int]


@dataclass
class _Candidate:
    id: int
    cosine: float | None = None
    bm25_raw: float = 0.0  # -bm25(): higher is better, 0 when the chunk does not match
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    text: str = ""
    hash: str = ""
    heading: str = ""
    vector_part: float | None = None
    bm25_part: float = 0.0
    recency: float = 1.0
    score: float = 0.0


def query_terms(text: str) -> list[str]:
    """Given free text, return its distinct lower-case words for BM25, stopwords left out
    (unless there is nothing else)."""
    words = list(dict.fromkeys(t.lower() for t in _TERM.findall(text)))
    content = [word for word in words if word not in _STOPWORDS]
    return (content or words)[:_MAX_QUERY_TERMS]


def fts_query(text: str) -> str | None:
    """Given free text, return an FTS5 MATCH expression that matches any of its words.

    Every word is quoted, so nothing the user types ('"foo', 'a AND (', 'NEAR', '*', 'col:')
    is read as FTS5 syntax. Return None if the text has no words.
    """
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


@dataclass(frozen=True)
class _Options:
    k: int
    vector_weight: float  # scaled so the two weights sum to 1
    bm25_weight: float
    min_score: float
    mmr_lambda: float | None
    half_life: float | None
    recency_weight: float
    today: date


def _recency(path: str, options: _Options) -> float:
    """Given a chunk's file and the options, return its recency boost factor (1.0 = none)."""
    if options.half_life is None or options.recency_weight <= 0:
        return 1.0
    day = note_date(path)
    if day is None:
        return 1.0
    age = max(0, (options.today - day).days)
    return 1.0 + options.recency_weight * math.pow(0.5, age / options.half_life)


def _mmr(
    ranked: list[_Candidate], k: int, lambda_: float, vectors: _Vectors | None
) -> list[_Candidate]:
    """Given candidates best first, return k picked by maximal marginal relevance.

    Each pick maximises `lambda * score - (1 - lambda) * max similarity to those already
    picked`; similarity is the cosine of the chunk vectors, or word overlap (Jaccard) when a
    chunk has no vector.
    """
    pool = ranked[: max(50, 5 * k)]
    if len(pool) <= 1:
        return pool[:k]
    rows = [vectors.row_of.get(c.id) if vectors is not None else None for c in pool]
    words = [set(_TERM.findall(c.text.lower())) for c in pool]

    def similarity(a: int, b: int) -> float:
        ra, rb = rows[a], rows[b]
        if vectors is not None and ra is not None and rb is not None:
            return float(vectors.matrix[ra] @ vectors.matrix[rb])
        union = words[a] | words[b]
        return len(words[a] & words[b]) / len(union) if union else 0.0

    chosen: list[int] = []
    closest = [0.0] * len(pool)  # each candidate's highest similarity to a chosen one
    remaining = list(range(len(pool)))
    while remaining and len(chosen) < k:
        best = max(remaining, key=lambda i: lambda_ * pool[i].score - (1 - lambda_) * closest[i])
        remaining.remove(best)
        chosen.append(best)
        for i in remaining:
            closest[i] = max(closest[i], similarity(i, best))
    return [pool[i] for i in chosen]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _snippet_terms(query: str) -> list[str]:
    """Given a query, return the stems its snippet looks for (stopwords dropped)."""
    words = dict.fromkeys(t.lower() for t in _TERM.findall(query))
    return list(dict.fromkeys(_stem(word) for word in words if word not in _STOPWORDS))


# A sentence ends at ., ! or ? followed by a space and what can start one; "1.14.4" and
# "e.g. this" stay whole.
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'`(\[]?[A-Z0-9])")


def sentences(text: str) -> list[str]:
    """Given a chunk's text, return its sentences, in order: each content line (not a heading,
    not a code fence, without its list marker) split at sentence ends. A sentence from the
    middle of a line that begins with a clock time ("21:52 ...") keeps that time in front."""
    return [piece.text for piece in _pieces(text)]


@dataclass(frozen=True)
class _Piece:
    """One sentence of a chunk (see `sentences`), where it is, and its line up to it."""

    text: str
    row: int  # its line's index in the chunk text
    whole: str  # its line up to it and with it, without the list marker


def _pieces(text: str) -> list[_Piece]:
    found: list[_Piece] = []
    for row, raw in enumerate(text.split("\n")):
        line = raw.strip()
        if not line or line.startswith("```") or ATX_HEADING.match(line):
            continue
        line = LIST_MARKER.sub("", line)
        clock = LOG_CLOCK.match(line)
        before: list[str] = []
        for number, piece in enumerate(_SENTENCE_END.split(line)):
            piece = " ".join(piece.split())
            if not piece:
                continue
            before.append(piece)
            if number and clock is not None:
                piece = f"{clock.group(0)} {piece}"
            found.append(_Piece(piece, row, " ".join(before)))
    return found


def overlap(sentence: str, weights: Mapping[str, float]) -> float:
    """Given a sentence and the query's stems with their weights (IDF, or 1 each), return the
    weight of the stems the sentence has (a stem matches the start of a word)."""
    words = {t.lower() for t in _TERM.findall(sentence)}
    return sum(weight for term, weight in weights.items() if any(w.startswith(term) for w in words))


def snippet(
    text: str,
    terms: Sequence[str] | Mapping[str, float],
    width: int = _SNIPPET_CHARS,
    *,
    scores: Sequence[float] | None = None,
) -> str:
    """Given a chunk's text and the query's stems (with their weights, e.g. IDF), return its
    most relevant sentence (see `sentences`): the one with the most weight of the query's
    stems, or the best of `scores` (one per sentence) when given; the first when nothing
    matches. Headings are never the snippet: a chunk of headings alone gives "".

    The result is one line of at most `width` characters, cut around the first match.
    """
    pieces = sentences(text)
    if not pieces:
        return ""
    weights = dict(terms) if isinstance(terms, Mapping) else dict.fromkeys(terms, 1.0)
    if scores is None:
        scores = [overlap(piece, weights) for piece in pieces]
    best = max(range(len(pieces)), key=lambda i: (scores[i], -i))
    flat = pieces[best]
    if len(flat) <= width:
        return flat
    patterns = [re.compile(rf"\b{re.escape(term)}", re.IGNORECASE) for term in weights]
    first = min((m.start() for p in patterns if (m := p.search(flat)) is not None), default=0)
    start = max(0, min(first - width // 4, len(flat) - width + 1))
    piece = flat[start : start + width - 2].strip()
    return ("…" if start > 0 else "") + piece + "…"


# Two sentences whose vectors are at least this close state something about the same subject
# ("Lab disk at 86%: Docker up 30 GB ..." and "Lab disk at 91%: the Docker build cache
# refilled ...", 0.88; "pushed the git tag 1.14.3; the release workflow went green" and
# "release.yml only pushes the semver tag for v* tags; this one was 1.14.3", 0.66), while
# lines of one day on other matters stay under it ("Standup: Sam out sick" and the tag,
# 0.18; a PR's approval and its follow-up, 0.34).
SAME_SUBJECT_COSINE = 0.65


@dataclass(frozen=True)
class Line:
    """What the Relevant Memories section shows of a hit: the sentence that answers the query
    with the sentences of its line (list item) before it while they fit, what it is about (see
    `subject`), how well it answers, scored as chunks are (0..1), and the sentence's vector
    (None without a model) to tell two lines on one subject."""

    text: str
    subject: str
    score: float
    vector: Vector | None = None
    # The subject its entry names before a colon, or answers as a reply (see
    # `chunks.subject_head`): two lines that name one are on one subject.
    head: str = ""


def subject(text: str, row: int, heading: str, path: str) -> str:
    """Given a chunk's text, the index of one of its lines, the chunk's heading path and its
    file, return what the line is about: for a reply in a log, the subject of the entry it
    answers (see `replied_head`); else the nearest Markdown heading above it in the chunk,
    else the last heading of the chunk's path (the one above the chunk in its file), else the
    note's title (its first heading, or a frontmatter `title:`), else its file name in words
    ("api-deploy-runbook.md": "api deploy runbook", "2026-03-02.md": "2026-03-02")."""
    rows = text.split("\n")
    if replied := replied_head(rows, row):
        return replied
    for line in reversed(rows[: row + 1]):
        found = ATX_HEADING.match(line.strip())
        if found and (title := _heading_text(found.group(2))):
            return title
    if heading.strip():
        return heading.split(" > ")[-1].strip()
    for line in rows:
        found = ATX_HEADING.match(line.strip())
        if found and (title := _heading_text(found.group(2))):
            return title
        if line.startswith("title:") and (title := line[6:].strip().strip("\"'")):
            return title
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    # Dashes between words are spaces; a date keeps its own ("2026-02 api crashloop").
    words = re.sub(r"(?<=[^\W\d_])-|-(?=[^\W\d_])|_", " ", stem)
    return " ".join(words.split()) or stem


def _heading_text(raw: str | None) -> str:
    return " ".join((raw or "").split())


def line_of(
    hit: Hit,
    scores: Sequence[float],
    weights: Mapping[str, float],
    *,
    keep: Callable[[str], bool] | None = None,
    vectors: Matrix | None = None,
    width: int = _SNIPPET_CHARS,
) -> Line | None:
    """Given a hit, a score for each of its sentences (see `sentences`) and the query's stems
    with their weights, return the line to show: the best-scoring sentence that `keep`
    accepts, with the sentences before it in its line (list item) in front when the whole
    stays within `width` characters (a sentence alone often lacks its subject: "Not raising it
    again before the weekend"), cut around the query's first word when the sentence alone is
    longer. None when no sentence is left (a chunk of headings alone).

    With the sentences' `vectors`, an entry of a log (a line that begins with a clock time)
    is passed over when a later entry that `keep` accepts is on its subject (see
    SAME_SUBJECT_COSINE): the newer one says how things stand.
    """
    pieces = _pieces(hit.text)
    allowed = [i for i, p in enumerate(pieces) if keep is None or keep(p.text)]
    if not allowed:
        return None
    if vectors is not None:
        clocks = {i: clock_minutes(pieces[i].text) for i in allowed}
        newest = [
            i
            for i in allowed
            if not any(
                (later := clocks[j]) is not None
                and (earlier := clocks[i]) is not None
                and later > earlier
                and float(vectors[i] @ vectors[j]) >= SAME_SUBJECT_COSINE
                for j in allowed
            )
        ]
        allowed = newest or allowed
    best = max(allowed, key=lambda i: (scores[i], -i))
    piece = pieces[best]
    text = piece.whole if len(piece.whole) <= width else piece.text
    if len(text) > width:
        text = snippet(text, weights, width)
    return Line(
        text,
        subject(hit.text, piece.row, hit.heading, hit.path),
        max(scores[best], 0.0),
        None if vectors is None else vectors[best],
        subject_head(hit.text.split("\n"), piece.row),
    )


def every_line(hit: Hit, *, keep: Callable[[str], bool] | None = None) -> list[Line]:
    """Given a hit, return each of its sentences that `keep` accepts as a line shown alone
    (see `line_of`; no score, no vector): for rules that read words, not meaning."""
    rows = hit.text.split("\n")
    found: list[Line] = []
    for piece in _pieces(hit.text):
        if keep is not None and not keep(piece.text):
            continue
        text = piece.whole if len(piece.whole) <= _SNIPPET_CHARS else piece.text
        about = subject(hit.text, piece.row, hit.heading, hit.path)
        found.append(Line(text, about, 0.0, head=subject_head(rows, piece.row)))
    return found


def best_lines(
    pairs: Sequence[tuple[Hit, str]],
    *,
    weights: Callable[[str], Mapping[str, float]],
    embedder: Embedder | None,
    vector_weight: float = 0.7,
    bm25_weight: float = 0.3,
    keep: Callable[[Hit, str], bool] | None = None,
) -> list[Line | None]:
    """Given hits and the query each answers, the query's stems with their IDF weights (e.g.
    `MemorySearch.snippet_weights`) and the embedder (None: words alone), return each hit's
    line (see `line_of`): its sentences are scored as the search scores chunks,
    `vector_weight` x the cosine of the sentence and the query plus `bm25_weight` x the share
    of the query's IDF weight the sentence has; without a model (or when it fails here) the
    share alone. `keep(hit, sentence)` says which sentences may be shown (e.g. not those
    written after the run's clock)."""
    found: list[Line | None] = []
    for hit, query in pairs:
        terms = weights(query)
        pieces = sentences(hit.text)
        vectors = sentence_vectors(query, pieces, embedder)
        scores = sentence_scores(
            pieces,
            terms,
            vectors,
            vector_weight=vector_weight,
            bm25_weight=bm25_weight,
        )
        accept = None if keep is None else (lambda text, hit=hit: keep(hit, text))
        rows = None if vectors is None else vectors[1:]
        found.append(line_of(hit, scores, terms, keep=accept, vectors=rows))
    return found


def sentence_vectors(query: str, pieces: Sequence[str], embedder: Embedder | None) -> Matrix | None:
    """Given a query, sentences and the embedder, return their unit vectors, the query's
    first; None without an embedder or sentences, or when the model fails (the words decide;
    the search reported why). One small batch per call: a daemon's embedder remembers small
    batches."""
    if embedder is None or not pieces:
        return None
    try:
        return checked_vectors(embedder.encode([query, *pieces]), len(pieces) + 1)
    except Exception:
        return None


def sentence_scores(
    pieces: Sequence[str],
    weights: Mapping[str, float],
    vectors: Matrix | None,
    *,
    vector_weight: float = 0.7,
    bm25_weight: float = 0.3,
) -> list[float]:
    """Given sentences, the query's stems with their weights and the vectors of the query and
    the sentences (see `sentence_vectors`; None: words alone), return each sentence's score:
    `vector_weight` x its cosine with the query plus `bm25_weight` x the share of the query's
    weight it has, over the sum of the weights (the share alone without vectors)."""
    total_weight = sum(weights.values())
    shares = [overlap(p, weights) / total_weight if total_weight > 0 else 0.0 for p in pieces]
    total = vector_weight + bm25_weight
    if vectors is None or total <= 0:
        return shares
    cosines = [float(v) for v in vectors[1:] @ vectors[0]]
    return [
        (vector_weight * max(c, 0.0) + bm25_weight * sh) / total
        for c, sh in zip(cosines, shares, strict=True)
    ]


SQL_VARIABLES = 500  # ids per "IN (...)": well under SQLite's limit of 32766


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """Return whether an SQLite error means the file is damaged or not a database at all.

    Busy, locked, read-only or missing-permission errors are OperationalErrors and are not
    corruption: moving the file aside would not help and would lose a good index.
    """
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    return type(error) is sqlite3.DatabaseError


def checked_vectors(vectors: Any, expected: int) -> Matrix:
    """Given an embedder's output for `expected` texts, return it as float32 unit rows.

    Raise ValueError if the embedder broke its contract (wrong shape).
    """
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != expected:
        raise ValueError(f"embedder returned shape {array.shape} for {expected} texts")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    # Unit rows make the dot product a cosine; a zero row (empty text) stays zero.
    return np.ascontiguousarray(array / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def batched(items: Sequence[int], size: int) -> Iterable[Sequence[int]]:
    """Given items and a size, yield them in slices of at most that size."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SearchOptions(TypedDict, total=False):
    """The options of `MemorySearch.search_many`, for those that pass them on (see there)."""

    k: int
    vector_weight: float
    bm25_weight: float
    min_score: float
    mmr_lambda: float | None
    recency_half_life_days: float | None
    recency_weight: float
    now: datetime | None


class MemorySearch:
    """Hybrid search over the chunks of one memory index database, with caches that stay
    valid while the database's data_version does not move.

    The database belongs to its owner (`MemoryIndex`), which opens, repairs and writes it:
    this only reads, through the connection `connection()` returns at the time, under the
    owner's `lock`. The owner calls `forget` after commits of its own, which do not move
    data_version.
    """

    def __init__(
        self,
        connection: Callable[[], sqlite3.Connection],
        *,
        lock: threading.RLock,
        embedder: Embedder | None,
    ) -> None:
        """Given a function that returns the open database (it raises if there is none), the
        lock that serialises its use and the embedder (None for BM25 alone), return a search
        with empty caches."""
        self._connection = connection
        self._lock = lock
        self.embedder = embedder
        # Why the last search ran without vectors although an embedder was given, else None.
        self.degraded: str | None = None
        self._cache_version: int | None = None
        self._vectors: _Vectors | None = None
        self._rows = 0
        self._doc_freq: dict[str, int] = {}
        # FTS5 MATCH expression -> the BM25 matches of every chunk it matches. FTS5 scores
        # all matches even for "ORDER BY rank LIMIT n", so one pass that keeps them all costs
        # the same as the top n and answers the vector candidates' BM25 too; the daemon asks
        # the same queries cycle after cycle, so they are kept while the index is unchanged.
        self._matches: dict[str, _Matches] = {}
        self._results: dict[tuple[str, _Options], list[Hit]] = {}  # (query, options) -> hits

    def search_many(
        self,
        queries: Sequence[str],
        *,
        k: int = 5,
        vector_weight: float = 0.7,
        bm25_weight: float = 0.3,
        min_score: float = 0.0,
        mmr_lambda: float | None = None,
        recency_half_life_days: float | None = None,
        recency_weight: float = 0.0,
        now: datetime | None = None,
    ) -> list[list[Hit]]:
        """Given queries, return up to k hits for each, best first (in MMR order when
        `mmr_lambda`), embedding the queries in one batch.

        The score is `vector_weight * cosine + bm25_weight * bm25` with the weights scaled to
        sum to 1 (BM25 alone for chunks without a vector), times the recency boost
        `1 + recency_weight * 0.5 ** (age_days / recency_half_life_days)` for files named with
        a date; hits under `min_score` are dropped. Raise ValueError for invalid options, and
        sqlite3.DatabaseError if the database fails (the owner repairs a corrupt one).
        """
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        if vector_weight < 0 or bm25_weight < 0 or vector_weight + bm25_weight <= 0:
            raise ValueError(
                f"weights must be >= 0 and not both 0, got {vector_weight} and {bm25_weight}"
            )
        if mmr_lambda is not None and not 0 <= mmr_lambda <= 1:
            raise ValueError(f"mmr_lambda must be between 0 and 1, got {mmr_lambda}")
        if recency_half_life_days is not None and recency_half_life_days <= 0:
            raise ValueError(
                f"recency_half_life_days must be positive, got {recency_half_life_days}"
            )
        total = vector_weight + bm25_weight
        options = _Options(
            k=k,
            vector_weight=vector_weight / total,
            bm25_weight=bm25_weight / total,
            min_score=min_score,
            mmr_lambda=mmr_lambda,
            half_life=recency_half_life_days,
            recency_weight=recency_weight,
            today=(now or datetime.now().astimezone()).date(),
        )
        with self._lock:
            self._refresh_caches()
            vectors = self._current_vectors()
            # A daemon asks mostly the same queries cycle after cycle: only new ones are
            # embedded and ranked while the index is unchanged.
            found = {
                q: self._results[(q, options)] for q in queries if (q, options) in self._results
            }
            todo = [q for q in dict.fromkeys(queries) if q not in found]
            query_vectors = self._embed_queries(todo, vectors)
            for query, vector in zip(todo, query_vectors, strict=True):
                found[query] = self._rank(query, vector, vectors, options)
                # The cache keeps the newest; this call answers from `found`, so more
                # distinct queries than the cache holds are all answered.
                if len(self._results) >= _MATCH_CACHE_SIZE:
                    self._results.pop(next(iter(self._results)))
                self._results[(query, options)] = found[query]
            return [list(found[query]) for query in queries]

    @property
    def _db(self) -> sqlite3.Connection:
        """Return the owner's open database; raise what `connection` raises if there is none."""
        return self._connection()

    def forget(self) -> None:
        """Drop every cache, so the next call reads the database afresh."""
        self._cache_version = None
        self._vectors = None
        self._doc_freq = {}
        self._matches = {}
        self._results = {}

    def _bm25_matches(self, match: str) -> _Matches:
        """Given an FTS5 MATCH expression, return every chunk it matches with its raw BM25
        score (higher is better), best first (cached until the index changes)."""
        found = self._matches.get(match)
        if found is None:
            if len(self._matches) >= _MATCH_CACHE_SIZE:
                self._matches.pop(next(iter(self._matches)))
            rows = self._db.execute(
                "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?",
                (match,),
            ).fetchall()
            # bm25() is negative, lower is better: sorting on (bm25, id) ranks best first.
            # Built with C-level helpers: a common word matches thousands of chunks.
            rows.sort(key=operator.itemgetter(1, 0))
            found = self._matches[match] = _Matches(dict(rows), [row[0] for row in rows])
        return found

    def chunk_count(self) -> int:
        """Return how many chunks the index holds now."""
        self._refresh_caches()
        return int(self._rows)

    def _refresh_caches(self) -> None:
        """Drop the search caches if the database changed since they were filled."""
        # data_version moves when another connection (another process) commits; our own
        # commits happen in sync, which forgets the caches itself.
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._cache_version:
            self.forget()
            self._rows = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            self._cache_version = version

    def _idf(self, term: str) -> float:
        """Given a query term, return its BM25 IDF as FTS5 computes it (a missing term gets
        the highest IDF there is)."""
        if term not in self._doc_freq:
            self._doc_freq[term] = self._db.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{term}"',)
            ).fetchone()[0]
        found = self._doc_freq[term]
        return max(math.log((self._rows - found + 0.5) / (found + 0.5)), 1e-6)

    def _current_vectors(self) -> _Vectors | None:
        """Return the current chunks' vectors for the embedder's model (cached), or None."""
        if self.embedder is None:
            return None
        if self._vectors is not None:
            return self._vectors
        try:
            model_id = self.embedder.model_id
        except Exception as error:  # a model that cannot even be named: BM25 only
            self.degraded = f"embedding model unavailable ({error})"
            return None
        rows = self._db.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
            "ON e.model_id = ? AND e.chunk_hash = c.hash ORDER BY c.id",
            (model_id,),
        ).fetchall()
        if rows:
            width = len(rows[0][1])
            rows = [row for row in rows if len(row[1]) == width]
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), width // 4)
        else:
            ids = np.zeros(0, dtype=np.int64)
            matrix = np.zeros((0, 0), dtype=np.float32)
        self._vectors = _Vectors(ids, matrix, {int(i): r for r, i in enumerate(ids)})
        return self._vectors

    def _embed_queries(
        self, queries: Sequence[str], vectors: _Vectors | None
    ) -> list[Vector | None]:
        """Return each query's vector, or None for all when there is nothing to compare with.

        A model that fails here does not fail the search: it runs on BM25 alone and
        `degraded` says why.
        """
        none: list[Vector | None] = [None] * len(queries)
        if self.embedder is None or vectors is None or not len(vectors.ids):
            return none
        wanted = [i for i, q in enumerate(queries) if q.strip()]
        if not wanted:
            return none
        try:
            encoded = checked_vectors(
                self.embedder.encode([queries[i] for i in wanted]), len(wanted)
            )
        except Exception as error:
            self.degraded = f"the query could not be embedded ({error})"
            return none
        if encoded.shape[1] != vectors.matrix.shape[1]:
            self.degraded = (
                f"the model gives {encoded.shape[1]}-d vectors but the index holds "
                f"{vectors.matrix.shape[1]}-d ones; run 'assemble index --rebuild'"
            )
            return none
        self.degraded = None
        result = list(none)
        for row, i in enumerate(wanted):
            result[i] = encoded[row]
        return result

    def _rank(
        self, query: str, query_vector: Vector | None, vectors: _Vectors | None, options: _Options
    ) -> list[Hit]:
        limit = max(50, 5 * options.k)
        candidates: dict[int, _Candidate] = {}
        use_vectors = query_vector is not None and vectors is not None and len(vectors.ids) > 0
        cosines: npt.NDArray[np.float32] | None = None
        if use_vectors:
            assert query_vector is not None and vectors is not None
            cosines = vectors.matrix @ query_vector
            if len(cosines) > limit:
                top = np.argpartition(-cosines, limit - 1)[:limit]
            else:
                top = np.arange(len(cosines))
            for row in top:
                chunk_id = int(vectors.ids[row])
                candidates[chunk_id] = _Candidate(chunk_id, cosine=float(cosines[row]))
        match = fts_query(query)
        if match is not None:
            matches = self._bm25_matches(match)
            for chunk_id in matches.ranked[:limit]:
                candidates.setdefault(chunk_id, _Candidate(chunk_id))
            # Vector candidates that BM25 did not rank in its top still get their real part.
            for candidate in candidates.values():
                candidate.bm25_raw = max(0.0, -matches.scores.get(candidate.id, 0.0))
        if not candidates:
            return []
        self._fill(candidates)
        if use_vectors:
            assert vectors is not None and cosines is not None
            for candidate in candidates.values():
                row = vectors.row_of.get(candidate.id)
                if row is not None:
                    candidate.cosine = float(cosines[row])
        # BM25 is a sum over the query's words of IDF x a term-frequency factor that is 1 for
        # one occurrence in a chunk of average length. So the sum of the words' IDFs is what a
        # chunk with every word once scores; a chunk that has only one common word of a
        # four-word query gets a small part, even when no chunk matches better. Words that no
        # chunk has count with the highest IDF: the keywords cannot explain that query, and
        # the vector part should decide.
        ideal = sum(self._idf(term) for term in query_terms(query))
        scored: list[_Candidate] = []
        for candidate in candidates.values():
            if not candidate.path:
                continue  # deleted between the two queries
            candidate.bm25_part = min(1.0, candidate.bm25_raw / ideal) if ideal > 0 else 0.0
            if candidate.cosine is None:
                candidate.score = candidate.bm25_part
            else:
                candidate.vector_part = max(candidate.cosine, 0.0)
                candidate.score = (
                    options.vector_weight * candidate.vector_part
                    + options.bm25_weight * candidate.bm25_part
                )
            candidate.recency = _recency(candidate.path, options)
            candidate.score *= candidate.recency
            if candidate.score >= options.min_score and candidate.score > 0:
                scored.append(candidate)
        scored.sort(key=lambda c: (-c.score, c.path, c.start_line))
        unique: list[_Candidate] = []
        texts: set[str] = set()
        for candidate in scored:
            if candidate.text not in texts:
                texts.add(candidate.text)
                unique.append(candidate)
        if options.mmr_lambda is not None:
            chosen = _mmr(unique, options.k, options.mmr_lambda, vectors)
        else:
            chosen = unique[: options.k]
        terms = self.snippet_weights(query)
        return [
            Hit(
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                score=c.score,
                vector=c.vector_part,
                bm25=c.bm25_part,
                recency=c.recency,
                snippet=snippet(c.text, terms),
                text=c.text,
                chunk_hash=c.hash,
                heading=c.heading,
            )
            for c in chosen
        ]

    def snippet_weights(self, query: str) -> dict[str, float]:
        """Given a query, return the stems a snippet looks for, each weighed by its word's
        BM25 IDF: a sentence that has the rare word of the query beats one with two common
        ones."""
        weights: dict[str, float] = {}
        with self._lock:
            self._refresh_caches()
            for word in query_terms(query):
                if word in _STOPWORDS:
                    continue
                stem = _stem(word)
                weights[stem] = max(weights.get(stem, 0.0), self._idf(word))
        return weights

    def _fill(self, candidates: dict[int, _Candidate]) -> None:
        for part in batched(list(candidates), SQL_VARIABLES):
            marks = ",".join("?" * len(part))
            for chunk_id, path, start, end, text, digest, heading in self._db.execute(
                "SELECT id, path, start_line, end_line, text, hash, heading FROM chunks "
                f"WHERE id IN ({marks})",
                part,
            ):
                candidate = candidates[chunk_id]
                candidate.path, candidate.start_line, candidate.end_line = path, start, end
                candidate.text, candidate.hash, candidate.heading = text, digest, heading
