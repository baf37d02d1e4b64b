"""What the human is working on, in their own words: the sentence of the recent human turns that
says the current task, chosen by measurement rather than by a list of words.

Each sentence the human said in the last turns is scored by how central it is to the recent
conversation (its mean similarity to the messages around it, both sides, the newer weighing
more) times how recent its turn is. A task is what the conversation keeps coming back to, so
its sentences are central; a sign-off ("long day, I'm fried") or an aside is not. A later
sentence about the same task (a decision, "1.14.4 is on prod, all green") is as central and
newer, so it takes over: a task that was closed reads as closed. Similarity is the embedding
model's cosine when a model is given, else TF-IDF cosine over the words of the same texts.
A summary the host wrote after that sentence (a compaction summary, a session title) wins.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from assembler.transcripts.message import ELISION, Message, Summary
from assembler.words import CODE_BLOCK, STOPWORDS, content_words

if TYPE_CHECKING:
    from assembler.memory.embeddings import Embedder

# How much is looked at: a few dozen short texts, so the embedding model costs tens of ms.
MAX_TURNS = 12  # the newest human turns whose sentences are candidates
MAX_PER_TURN = 6  # sentences per turn: the first five and the last (a paste sits between)
CONTEXT_MESSAGES = 16  # the newest messages (both sides) a sentence is compared with
CONTEXT_CHARS = 200  # of each of them: its opening says what it is about, and costs little
SENTENCE_CHARS = 200
# A sentence with fewer content words says no task ("yes", "run it", "night", "thanks").
MIN_CONTENT_WORDS = 2
# Recency of a candidate: halved every this many substantive sentences the human said after it.
RECENCY_HALF_LIFE = 1.0
# Weight of a context message: halved every this many messages before the newest, and in
# proportion to its content words up to this many (an "Enjoy lunch!" echoes a remark without
# making it a topic).
CONTEXT_HALF_LIFE = 6.0
INFORMATIVE_WORDS = 8
# Added to every centrality: how far recency alone carries a sentence nothing else supports.
PRIOR = 0.0
# The newest substantive sentence is a topic of its own only when at least this central,
# relative to the chosen task: a sign-off after the task is not one.
TOPIC_SHARE = 0.5
MAX_WORDS = 25  # a Working on line is one sentence of at most this many words

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\s*\n+\s*")
# Characters of prose; a line with many others (digits, braces, slashes) is a pasted log.
_PROSE_CHARS = frozenset(",.;:!?'\"()-`#@&%/")
_PROSE_SHARE = 0.8
_COLUMNS = re.compile(r"\S( {3,}|\t)\S")  # aligned columns: a table a command printed
_PLAIN_WORD = re.compile(r"[(\"'`]*(?:[A-Za-z][A-Za-z'’-]*|\d+)[.,;:!?)\"'`]*")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")
_GOAL = re.compile(r"^#+\s*Goal\s*\n+\s*(?:[-*]\s*)?(.+)$", re.M | re.I)
_INTENT = re.compile(r"Primary Request and Intent:?\**\s*\n?\s*(?:[-*]\s*)?(.+)$", re.M | re.I)

Similarity = Callable[[Sequence[str]], list[list[float]]]


@dataclass(frozen=True)
class Candidate:
    """One sentence of a human turn."""

    text: str
    message: int  # the index of its message
    turn: int  # the index of its turn among the human turns looked at
    substantive: bool


@dataclass
class TaskChoice:
    """The sentence that says the current task, and the newest topic when it is another."""

    working_on: str | None  # one sentence, clipped to MAX_WORDS
    message: int | None  # the index of the message it comes from (None: a summary, or none)
    from_summary: bool
    last_sentence: str | None  # the newest substantive sentence, when not the task's turn
    explain: list[str] = field(default_factory=list)


def current_task(
    messages: Sequence[Message],
    summaries: Sequence[Summary],
    *,
    embedder: Embedder | None = None,
) -> TaskChoice:
    """Given the recent messages (oldest first), the hosts' summaries (oldest first) and an
    embedding model (None: TF-IDF), return the sentence that says what the human is working on.

    Raise whatever the embedder raises (ModelError); the caller falls back to None.
    """
    candidates = _candidates(messages)
    context = _context(messages)
    similar: Similarity = _embedding_similarity(embedder) if embedder else tfidf_similarity
    method = "embeddings" if embedder else "TF-IDF"
    explain: list[str] = []
    best: tuple[float, float, Candidate] | None = None
    last: tuple[float, Candidate] | None = None
    if any(c.substantive for c in candidates):
        texts = [c.text for c in candidates] + [text for _, text in context]
        matrix = similar(texts)
        weights = [
            0.5 ** ((len(context) - 1 - k) / CONTEXT_HALF_LIFE)
            * min(len(content_words(text)) / INFORMATIVE_WORDS, 1.0)
            for k, (_, text) in enumerate(context)
        ]
        later = _later_substantive(candidates)
        for i, candidate in enumerate(candidates):
            if not candidate.substantive:
                continue
            pairs = [
                (weights[k], matrix[i][len(candidates) + k])
                for k, (index, _) in enumerate(context)
                if index != candidate.message
            ]
            total = sum(w for w, _ in pairs)
            centrality = max(sum(w * s for w, s in pairs) / total, 0.0) if total else 0.0
            recency = 0.5 ** (later[i] / RECENCY_HALF_LIFE)
            score = (centrality + PRIOR) * recency
            if best is None or score > best[0]:
                best = (score, centrality, candidate)
            last = (centrality, candidate)  # candidates are oldest first
        if best is not None:
            score, centrality, chosen = best
            explain.append(
                f"working on: {clip_words(chosen.text, 8)!r} scored {score:.2f} "
                f"(centrality {centrality:.2f}, {later[candidates.index(chosen)]} substantive "
                f"sentence(s) after it; {method})"
            )
    chosen_at = messages[best[2].message].timestamp if best is not None else None
    summary = _newer_summary(summaries, chosen_at, have_sentence=best is not None)
    if summary is not None:
        explain.append(f"working on: the host's {summary.kind} written after the human's words")
        return TaskChoice(summary_line(summary.text), None, True, _last(best, last), explain)
    if best is None:
        return TaskChoice(None, None, False, None, explain)
    return TaskChoice(
        clip_words(best[2].text, MAX_WORDS), best[2].message, False, _last(best, last), explain
    )


def _last(
    best: tuple[float, float, Candidate] | None, last: tuple[float, Candidate] | None
) -> str | None:
    """The newest substantive sentence, when it is central enough to be a topic and is not
    from the chosen sentence's turn."""
    if last is None or best is None:
        return None
    centrality, candidate = last
    if candidate.message == best[2].message or centrality < TOPIC_SHARE * best[1]:
        return None
    return candidate.text


def _newer_summary(
    summaries: Sequence[Summary], chosen_at: datetime | None, *, have_sentence: bool
) -> Summary | None:
    """The newest summary written at or after the chosen sentence (any, when there is none)."""
    for summary in reversed(summaries):
        if not summary_line(summary.text):
            continue
        if not have_sentence:
            return summary
        if summary.timestamp is not None and (chosen_at is None or summary.timestamp >= chosen_at):
            return summary
    return None


def summary_line(text: str) -> str:
    """Given a host's summary or title, return its one line about the task: the line under a
    'Goal' heading (OpenClaw), after 'Primary Request and Intent' (Claude Code), else its first
    sentence; clipped to MAX_WORDS."""
    for pattern in (_GOAL, _INTENT):
        match = pattern.search(text)
        if match and match.group(1).strip() not in ("...", ""):
            return clip_words(match.group(1).strip(), MAX_WORDS)
    found = sentences(text)
    return clip_words(found[0], MAX_WORDS) if found else ""


def _candidates(messages: Sequence[Message]) -> list[Candidate]:
    human = [i for i, m in enumerate(messages) if m.role == "user"][-MAX_TURNS:]
    found: list[Candidate] = []
    for turn, index in enumerate(human):
        said = sentences(messages[index].text)
        if len(said) > MAX_PER_TURN:
            said = [*said[: MAX_PER_TURN - 1], said[-1]]
        for sentence in said:
            substantive = len(content_words(sentence)) >= MIN_CONTENT_WORDS
            found.append(Candidate(sentence, index, turn, substantive))
    return found


def _context(messages: Sequence[Message]) -> list[tuple[int, str]]:
    """The newest messages' prose (index, text), oldest first."""
    start = max(len(messages) - CONTEXT_MESSAGES, 0)
    found: list[tuple[int, str]] = []
    for index in range(start, len(messages)):
        text = " ".join(sentences(messages[index].text))[:CONTEXT_CHARS]
        if text:
            found.append((index, text))
    return found


def _later_substantive(candidates: Sequence[Candidate]) -> list[int]:
    """For each candidate, how many substantive sentences the human said after it."""
    later: list[int] = []
    count = 0
    for candidate in reversed(candidates):
        later.append(count)
        count += candidate.substantive
    return later[::-1]


def sentences(text: str) -> list[str]:
    """Given a message's text, return its sentences of prose: no code blocks, no lines of a
    pasted log (mostly digits and symbols), each clipped to SENTENCE_CHARS."""
    plain = CODE_BLOCK.sub("\n", text.replace(ELISION, "\n"))
    found: list[str] = []
    for part in _SENTENCE_END.split(plain):
        part = part.strip().lstrip("-*>#").strip()
        if part and _is_prose(part):
            found.append(part[:SENTENCE_CHARS])
    return found


def _is_prose(text: str) -> bool:
    """Whether a line is prose: most of its characters, or most of its words, are those of
    words, and it is not in aligned columns (a sentence that names one long token is prose; a
    log line or a table is not)."""
    if not any(c.isalpha() for c in text) or _COLUMNS.search(text):
        return False
    plain = sum(1 for c in text if c.isalpha() or c.isspace() or c in _PROSE_CHARS)
    tokens = text.split()
    words = sum(1 for token in tokens if _PLAIN_WORD.fullmatch(token))
    return plain >= _PROSE_SHARE * len(text) or words >= _PROSE_SHARE * len(tokens)


def clip_words(text: str, limit: int) -> str:
    """Given a sentence, return it with at most `limit` words, cut at a word boundary."""
    words = text.split()
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[:limit]).rstrip(",;:-") + "…"


def _embedding_similarity(embedder: Embedder) -> Similarity:
    def similar(texts: Sequence[str]) -> list[list[float]]:
        vectors = embedder.encode(list(texts))
        return (vectors @ vectors.T).tolist()  # type: ignore[no-any-return]

    return similar


def tfidf_similarity(texts: Sequence[str]) -> list[list[float]]:
    """Given texts, return their pairwise TF-IDF cosine similarities (IDF over these texts)."""
    bags = [Counter(_terms(text)) for text in texts]
    documents = Counter(term for bag in bags for term in bag)
    count = len(texts)
    vectors: list[dict[str, float]] = []
    for bag in bags:
        vector = {t: n * (math.log((1 + count) / (1 + documents[t])) + 1) for t, n in bag.items()}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        vectors.append({t: v / norm for t, v in vector.items()})
    return [[_dot(a, b) for b in vectors] for a in vectors]


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(b) < len(a):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def _terms(text: str) -> list[str]:
    """The words of a text as TF-IDF counts them: no stopwords, crude stems ('deploys',
    'deployed' and 'deploying' are one term)."""
    terms: list[str] = []
    for token in _TOKEN.findall(text):
        word = token.lower()
        if word in STOPWORDS or (len(word) < 3 and not word.isdigit()):
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)]
                break
        terms.append(word)
    return terms
