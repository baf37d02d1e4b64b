"""Benchmark: memory retrieval quality on the project's own data set (bench/data/memory).

    python bench/bench_retrieval.py [--data bench/data/memory] [--fake]

1. Validates the data: every answer and conversation note exists, and every paraphrase query
   shares no content word and no stem of four letters or more with its note (see
   `shared_words`); any violation is listed and the run fails with exit code 1.
2. Copies `notes/` to `<tmp>/memory/` (so paths look like a real workspace), indexes it with
   the bundled all-MiniLM-L6-v2 (or the deterministic fake of tests/fakes.py with --fake, for a
   quick smoke run) and prints recall@5 and MRR (over the top 10) of BM25 alone, vectors alone
   and the hybrid with the default weights, overall and by kind (keyword / paraphrase).
3. Sweeps the vector weight (0.0..1.0, BM25 weight = 1 - it) and then min_score at the best
   weights, so that the defaults are chosen by measurement. min_score cannot improve a
   ranking, only cut its tail, so its sweep also runs OFF_TOPIC queries that no note answers
   and reports how many hits those still get.
4. Conversations: for each, the current topic's note and the earlier topics' notes among the
   hits shown (k=4) when the query is (a) all the human messages joined, (b) the last human
   message alone, (c) `assembler.memory.recall.recall_memories` (skipped when not importable).

Recall@5 counts a query as found when any of its first 5 hits (chunks) comes from the answer
note; its reciprocal rank is 1 / the position of the first such hit in the top 10, else 0.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

try:
    from assembler.config.schema import MemoryConfig
    from assembler.memory.embeddings import Embedder, load_embedder
    from assembler.memory.index import MemoryIndex
    from assembler.memory.search import Hit
    from assembler.transcripts.message import Message
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.config.schema import MemoryConfig
    from assembler.memory.embeddings import Embedder, load_embedder
    from assembler.memory.index import MemoryIndex
    from assembler.memory.search import Hit
    from assembler.transcripts.message import Message

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "bench" / "data" / "memory"
MEMORY_DIR = "memory"  # the notes' folder inside the temporary workspace
K_SHOWN = 5  # recall@5
K_RANKED = 10  # MRR over the top 10
K_SECTION = 4  # hits the Relevant Memories section shows (MemoryConfig.top_k)
KINDS = ("keyword", "paraphrase")
SWEEP_VECTOR_WEIGHTS = [round(0.1 * i, 1) for i in range(11)]
SWEEP_MIN_SCORES = [0.0, 0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6]
# min_score is chosen as the highest value that costs at most this much recall@5.
MIN_SCORE_RECALL_LOSS = 0.01

# Questions that no note answers: a min_score is worth having when it empties their hits.
OFF_TOPIC = [
    "how do I renew a fishing licence",
    "quantum chromodynamics lecture notes",
    "best violin teachers in Vienna",
    "what is the capital of Mongolia",
    "recipe for a vegan wedding cake for 200 guests",
    "symptoms of malaria after a safari",
    "how to register a yacht in Malta",
    "Kubernetes operator for mainframe COBOL batch jobs",
    "tax rules for selling cryptocurrency in Canada",
    "the plot of the opera Turandot",
    "train times from Warsaw to Vilnius",
    "how to train a parrot to talk",
    "learning to play the bagpipes",
    "which lawn mower robot handles slopes",
    "my grandmother's knitting pattern for socks",
    "the rules of cricket for beginners",
    "moving to Australia on a work visa",
    "how much does a pilot licence cost",
    "migrating Oracle RAC to DB2",
    "tips for beekeeping in a city garden",
]

# Function words only: everything else counts as a content word.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve don didn doesn isn wasn aren weren won wouldn shouldn couldn
    hasn haven hadn also us ok get got one anything something thing things
    """.split()
)
SUFFIXES = (
    "ations",
    "ation",
    "ments",
    "ment",
    "ness",
    "ings",
    "ing",
    "ies",
    "ied",
    "ers",
    "er",
    "est",
    "ed",
    "es",
    "ly",
    "s",
)
MIN_STEM = 4
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


# -- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    query: str
    answer: str  # relative to notes/
    kind: str
    # Other notes that state the answer too (a daily note that recorded the same fact): a
    # line from one of them is right as well. Only the bench of the section's lines uses them.
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Conversation:
    messages: list[tuple[str, str]]  # (role, text), oldest first
    current: str
    earlier: list[str]
    # Another note that answers one of the topics too -> that topic's note (see Query.also).
    also: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NoAnswer:
    """Human messages (oldest first) that no note answers: whatever they are shown is noise."""

    messages: list[str]
    kind: str  # development: a developer's requests in a code session


@dataclass
class Data:
    folder: Path
    notes: dict[str, str]  # relative path -> text
    queries: list[Query]
    conversations: list[Conversation]
    # no_answer.jsonl: development questions and sessions that no note bears on.
    no_answer: list[NoAnswer] = field(default_factory=list)


class DataError(Exception):
    """The data set breaks one of its rules; the message lists every problem."""


def content_words(text: str) -> set[str]:
    """Given a text, return its lower-cased content words: alphanumeric tokens of two or more
    characters, camelCase compounds both whole and split ("CrashLoopBackOff" gives
    crashloopbackoff, crash, loop, back), minus STOPWORDS."""
    words = {w.lower() for w in _TOKEN.findall(text)}
    words |= {w.lower() for w in _TOKEN.findall(_CAMEL.sub(r"\1 \2", text))}
    return {w for w in words if len(w) > 1 and w not in STOPWORDS}


def stem(word: str) -> str:
    """Given a lower-case word, return it without its longest common English suffix (leaving at
    least three letters): deployment -> deploy, crashing -> crash, replicas -> replica."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def shared_words(query: str, note: str) -> list[str]:
    """Given a query and its note, return what they share, empty when nothing (the paraphrase
    rule): a content word in both, or a query stem of MIN_STEM+ letters that begins a note
    word, or a note stem of MIN_STEM+ letters that begins the query's stem ("crash" and
    "CrashLoopBackOff", "rollout" and "roll", "database" and "data")."""
    query_words, note_words = content_words(query), content_words(note)
    shared = set(query_words & note_words)
    note_stems = {stem(w) for w in note_words}
    for word in query_words - shared:
        s = stem(word)
        if len(s) < MIN_STEM:
            continue
        for other in note_words | note_stems:
            if other.startswith(s) or (len(other) >= MIN_STEM and s.startswith(other)):
                shared.add(f"{word}~{other}")
                break
    return sorted(shared)


def load_data(folder: Path) -> Data:
    """Given the data folder, return its notes, queries and conversations.

    Raise DataError listing every problem (missing files, bad lines, missing notes, broken
    paraphrase rule, conversations of the wrong shape).
    """
    problems: list[str] = []
    notes_dir = folder / "notes"
    if not notes_dir.is_dir():
        raise DataError(f"{notes_dir}: no notes folder")
    notes = {
        p.relative_to(notes_dir).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(notes_dir.rglob("*.md"))
    }
    if not notes:
        raise DataError(f"{notes_dir}: no .md notes")

    queries: list[Query] = []
    for number, record in _jsonl(folder / "queries.jsonl", problems):
        where = f"queries.jsonl:{number}"
        try:
            q = Query(
                str(record["query"]),
                str(record["answer"]),
                str(record["kind"]),
                tuple(str(p) for p in record.get("also", [])),
            )
        except KeyError as error:
            problems.append(f"{where}: missing key {error}")
            continue
        if not q.query.strip():
            problems.append(f"{where}: empty query")
        if q.kind not in KINDS:
            problems.append(f"{where}: kind {q.kind!r} is not one of {KINDS}")
        problems += [f"{where}: also {p!r} is not a note" for p in q.also if p not in notes]
        if q.answer not in notes:
            problems.append(f"{where}: answer {q.answer!r} is not a note")
        elif q.kind == "paraphrase" and (shared := shared_words(q.query, notes[q.answer])):
            problems.append(
                f"{where}: paraphrase {q.query!r} shares {', '.join(shared)} with {q.answer}"
            )
        queries.append(q)
    duplicates = [q for q, n in Counter(q.query.lower() for q in queries).items() if n > 1]
    problems += [f"queries.jsonl: duplicate query {q!r}" for q in duplicates]

    conversations: list[Conversation] = []
    for number, record in _jsonl(folder / "conversations.jsonl", problems):
        where = f"conversations.jsonl:{number}"
        try:
            messages = [(str(m["role"]), str(m["text"])) for m in record["messages"]]
            conversation = Conversation(
                messages,
                str(record["current"]),
                [str(p) for p in record["earlier"]],
                {str(k): str(v) for k, v in record.get("also", {}).items()},
            )
        except (KeyError, TypeError) as error:
            problems.append(f"{where}: malformed ({error!r})")
            continue
        problems += [
            f"{where}: {p!r} is not a note"
            for p in [conversation.current, *conversation.earlier, *conversation.also]
            if p not in notes
        ]
        problems += [
            f"{where}: also {alt!r} stands for {topic!r}, which is not one of its topics"
            for alt, topic in conversation.also.items()
            if topic not in [conversation.current, *conversation.earlier]
        ]
        roles = [role for role, _ in messages]
        humans = roles.count("user")
        if set(roles) - {"user", "assistant"}:
            problems.append(f"{where}: roles must be user or assistant")
        if not roles or roles[-1] != "user":
            problems.append(f"{where}: must end with a human message")
        if conversation.current in conversation.earlier:
            problems.append(f"{where}: the current note is also an earlier one")
        if not 2 <= len(conversation.earlier) <= 4:
            problems.append(f"{where}: {len(conversation.earlier)} earlier topics, expected 2-4")
        if not len(conversation.earlier) + 1 <= humans <= len(conversation.earlier) + 2:
            problems.append(
                f"{where}: {humans} human messages for {len(conversation.earlier)} earlier "
                "topics; expected one per earlier topic and 1-2 on the current one"
            )
        conversations.append(conversation)

    no_answer: list[NoAnswer] = []
    if (folder / "no_answer.jsonl").is_file():
        for number, record in _jsonl(folder / "no_answer.jsonl", problems):
            where = f"no_answer.jsonl:{number}"
            texts = record.get("messages")
            if (
                not isinstance(texts, list)
                or not texts
                or not all(isinstance(t, str) and t.strip() for t in texts)
            ):
                problems.append(f"{where}: messages must be a list of non-empty texts")
                continue
            no_answer.append(NoAnswer(list(texts), str(record.get("kind", "development"))))
        seen = Counter(" / ".join(n.messages).lower() for n in no_answer)
        problems += [f"no_answer.jsonl: duplicate {t!r}" for t, n in seen.items() if n > 1]

    if problems:
        raise DataError("\n".join(problems))
    return Data(folder, notes, queries, conversations, no_answer)


def _jsonl(path: Path, problems: list[str]) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        problems.append(f"{path}: missing")
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{path.name}:{number}: not JSON ({error})")
            continue
        if not isinstance(record, dict):
            problems.append(f"{path.name}:{number}: not a JSON object")
            continue
        records.append((number, record))
    return records


def describe_data(data: Data) -> None:
    folders = Counter(p.split("/")[0] if "/" in p else "." for p in data.notes)
    lines = [len(text.splitlines()) for text in data.notes.values()]
    kinds = Counter(q.kind for q in data.queries)
    earlier = Counter(len(c.earlier) for c in data.conversations)
    humans = Counter(sum(r == "user" for r, _ in c.messages) for c in data.conversations)
    print(f"data: {data.folder}")
    print(f"  notes: {len(data.notes)} ({', '.join(f'{k} {v}' for k, v in folders.most_common())})")
    print(
        f"         lines per note: min {min(lines)}, median {statistics.median(lines):.0f}, "
        f"max {max(lines)}; {sum(len(t.split()) for t in data.notes.values())} words"
    )
    print(
        f"  queries: {len(data.queries)} ({', '.join(f'{k} {kinds[k]}' for k in KINDS)}); "
        f"answers spread over {len({q.answer for q in data.queries})} notes"
    )
    print(
        f"  paraphrase rule: OK, {kinds['paraphrase']} paraphrases share no content word and no "
        f"stem of {MIN_STEM}+ letters with their note"
    )
    print(
        f"  conversations: {len(data.conversations)}; earlier topics "
        f"{dict(sorted(earlier.items()))}; human messages {dict(sorted(humans.items()))}"
    )
    print(f"  off-topic queries (built in, no answer): {len(OFF_TOPIC)}")
    kinds_na = Counter(n.kind for n in data.no_answer)
    print(
        f"  no-answer cases (no_answer.jsonl): {len(data.no_answer)} "
        f"({', '.join(f'{k} {v}' for k, v in kinds_na.items()) or 'none'}; "
        f"{sum(len(n.messages) > 1 for n in data.no_answer)} of several messages)"
    )


# -- index --------------------------------------------------------------------------------------


def make_embedder(fake: bool) -> Embedder:
    if fake:
        sys.path.insert(0, str(ROOT / "tests"))
        from fakes import FakeEmbedder  # type: ignore[import-not-found]

        embedder: Embedder = FakeEmbedder()
        return embedder
    return load_embedder("bundled")


def build_index(data: Data, workspace: Path, embedder: Embedder) -> MemoryIndex:
    shutil.copytree(data.folder / "notes", workspace / MEMORY_DIR)
    index = MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=[f"{MEMORY_DIR}/**/*.md"],
        embedder=embedder,
    )
    report = index.sync()
    print(
        f"index: {report.files_seen} files, {report.chunks_total} chunks, "
        f"{report.chunks_embedded} embedded in {report.seconds:.1f} s"
        + (f"; DEGRADED: {report.degraded}" if report.degraded else "")
        + (f"; skipped: {report.skipped}" if report.skipped else "")
    )
    if report.degraded:
        raise SystemExit("the index has no vectors; vector and hybrid figures would be BM25")
    return index


# -- retrieval ----------------------------------------------------------------------------------


Weights = tuple[float, float]  # (vector_weight, bm25_weight)


@dataclass(frozen=True)
class Score:
    recall: float  # recall@5
    mrr: float  # over the top 10
    n: int


def note_path(note: str) -> str:
    return f"{MEMORY_DIR}/{note}"


def rank_of(hits: Sequence[Hit], note: str) -> int | None:
    """Return the 1-based position of the first hit from `note` in the top K_RANKED, else None."""
    target = note_path(note)
    for position, hit in enumerate(hits[:K_RANKED], start=1):
        if hit.path == target:
            return position
    return None


def score(queries: Sequence[Query], ranked: Sequence[Sequence[Hit]]) -> Score:
    ranks = [rank_of(hits, q.answer) for q, hits in zip(queries, ranked, strict=True)]
    if not ranks:
        return Score(0.0, 0.0, 0)
    found = sum(1 for r in ranks if r is not None and r <= K_SHOWN)
    mrr = sum(1.0 / r for r in ranks if r is not None)
    return Score(found / len(ranks), mrr / len(ranks), len(ranks))


def by_kind(queries: Sequence[Query], ranked: Sequence[Sequence[Hit]]) -> dict[str, Score]:
    scores = {"all": score(queries, ranked)}
    for kind in KINDS:
        pairs = [(q, h) for q, h in zip(queries, ranked, strict=True) if q.kind == kind]
        scores[kind] = score([q for q, _ in pairs], [h for _, h in pairs])
    return scores


def search(index: MemoryIndex, texts: Sequence[str], **options: Any) -> list[list[Hit]]:
    return index.search_many(list(texts), **{"k": K_RANKED, **options})


def print_modes(index: MemoryIndex, queries: Sequence[Query], modes: dict[str, Weights]) -> None:
    texts = [q.query for q in queries]
    head = f"{'':26}" + "".join(f"{name + f' (n={_n(queries, name)})':>22}" for name in _cols())
    print(head)
    print(f"{'':26}" + "".join(f"{'recall@5   MRR':>22}" for _ in _cols()))
    for name, (vw, bw) in modes.items():
        scores = by_kind(queries, search(index, texts, vector_weight=vw, bm25_weight=bw))
        print(
            f"{name:26}"
            + "".join(f"{_pct(scores[c].recall):>13} {scores[c].mrr:8.3f}" for c in _cols())
        )


def _cols() -> list[str]:
    return ["all", *KINDS]


def _n(queries: Sequence[Query], column: str) -> int:
    return len(queries) if column == "all" else sum(q.kind == column for q in queries)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


# -- conversations ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConversationScore:
    current: float  # share of conversations whose shown hits include the current note
    any_earlier: float  # share that include at least one earlier-topic note
    mean_earlier: float  # mean number of distinct earlier-topic notes shown
    mean_topics: float  # mean number of earlier topics (for scale)


def conversation_score(
    conversations: Sequence[Conversation], shown: Sequence[Sequence[Hit]]
) -> ConversationScore:
    current = any_earlier = earlier_total = 0
    for conversation, hits in zip(conversations, shown, strict=True):
        paths = {hit.path for hit in hits}
        current += note_path(conversation.current) in paths
        found = sum(note_path(p) in paths for p in set(conversation.earlier))
        any_earlier += found > 0
        earlier_total += found
    n = len(conversations)
    return ConversationScore(
        current / n,
        any_earlier / n,
        earlier_total / n,
        statistics.mean(len(c.earlier) for c in conversations),
    )


def humans(conversation: Conversation) -> list[str]:
    return [text for role, text in conversation.messages if role == "user"]


def as_messages(conversation: Conversation, now: datetime) -> list[Message]:
    """Return the conversation as transcript messages one minute apart, the last one at `now`."""
    count = len(conversation.messages)
    return [
        Message(
            role="user" if role == "user" else "assistant",
            text=text,
            timestamp=now - timedelta(minutes=count - 1 - i),
            source="bench",
        )
        for i, (role, text) in enumerate(conversation.messages)
    ]


RecallFn = Callable[..., Any]


def load_recall() -> RecallFn | None:
    try:
        from assembler.memory.recall import recall_memories
    except ImportError:
        return None
    return recall_memories


@dataclass
class Bench:
    """The index, the data and what a conversation run needs, shared by the sections."""

    index: MemoryIndex
    data: Data
    recall: RecallFn | None
    now: datetime

    def queries(self, **options: Any) -> list[list[Hit]]:
        return self.index.search_many(
            [q.query for q in self.data.queries], **{"k": K_RANKED, **options}
        )

    def plain(self, texts: Sequence[str], **options: Any) -> list[list[Hit]]:
        return self.index.search_many(list(texts), **{"k": K_SECTION, **options})

    def assembler(self, **options: Any) -> list[list[Hit]] | None:
        """Return the hits `recall_memories` shows for each conversation, None without it."""
        if self.recall is None:
            return None
        return [
            self.recall(
                self.index, as_messages(c, self.now), k=K_SECTION, now=self.now, **options
            ).hits
            for c in self.data.conversations
        ]

    def assembler_score(self, **options: Any) -> ConversationScore | None:
        shown = self.assembler(**options)
        return None if shown is None else conversation_score(self.data.conversations, shown)


def weight_options(weights: Weights, min_score: float = 0.0) -> dict[str, Any]:
    return {"vector_weight": weights[0], "bm25_weight": weights[1], "min_score": min_score}


def print_conversations(bench: Bench, modes: dict[str, Weights]) -> None:
    conversations = bench.data.conversations
    joined = ["\n".join(humans(c)) for c in conversations]
    last = [humans(c)[-1] for c in conversations]
    print(
        f"{'way':31} {'search':26} {'current shown':>13}  {'earlier shown (any)':>19}  "
        f"{'earlier notes shown (mean)':>26}"
    )
    for way, texts in (
        ("(a) all human messages joined", joined),
        ("(b) last human message alone", last),
        ("(c) assembler.memory.recall", None),
    ):
        for mode, weights in modes.items():
            if texts is not None:
                shown: list[list[Hit]] | None = bench.plain(texts, **weight_options(weights))
            else:
                shown = bench.assembler(**weight_options(weights))
            if shown is None:
                print(f"{way:31} skipped: assembler.memory.recall is not importable yet")
                break
            s = conversation_score(conversations, shown)
            print(
                f"{way:31} {mode:26} {_pct(s.current):>13}  {_pct(s.any_earlier):>19}  "
                f"{s.mean_earlier:>10.2f} of {s.mean_topics:.2f} topics"
            )


@dataclass(frozen=True)
class SweepRow:
    weights: Weights
    queries: dict[str, Score]
    conversations: ConversationScore | None  # (c), None without assembler.memory.recall

    def key(self) -> tuple[float, float]:
        """Shown-rate first (recall@5, averaged with (c)'s current-topic rate), then MRR."""
        shown = self.queries["all"].recall
        if self.conversations is not None:
            shown = (shown + self.conversations.current) / 2
        return (round(shown, 6), round(self.queries["all"].mrr, 6))


def sweep_weights(bench: Bench) -> Weights:
    """Print queries' recall@5/MRR and (c)'s conversation figures per vector weight; return the
    weights with the best SweepRow.key."""
    print(
        f"{'vector':>6} {'bm25':>5}  {'all':>14}  {'keyword':>14}  {'paraphrase':>14}  "
        f"{'(c) current':>11}  {'(c) earlier':>11}"
    )
    print(
        f"{'':12}  {'recall@5  MRR':>14}  {'recall@5  MRR':>14}  {'recall@5  MRR':>14}  "
        f"{'shown':>11}  {'mean shown':>11}"
    )
    rows = []
    for vw in SWEEP_VECTOR_WEIGHTS:
        weights = (vw, round(1.0 - vw, 1))
        options = weight_options(weights)
        row = SweepRow(
            weights,
            by_kind(bench.data.queries, bench.queries(**options)),
            bench.assembler_score(**options),
        )
        rows.append(row)
        cells = "  ".join(
            f"{_pct(row.queries[c].recall):>7} {row.queries[c].mrr:6.3f}" for c in _cols()
        )
        conv = row.conversations
        tail = f"{_pct(conv.current):>11}  {conv.mean_earlier:>11.2f}" if conv else "n/a"
        print(f"{weights[0]:6.1f} {weights[1]:5.1f}  {cells}  {tail}")
    best = max(rows, key=SweepRow.key)
    rule = "recall@5" + (" averaged with (c) current shown" if best.conversations else "")
    print(
        f"best weights: vector_weight={best.weights[0]:g}, bm25_weight={best.weights[1]:g} "
        f"(highest {rule}, then MRR)"
    )
    return best.weights


def sweep_min_score(bench: Bench, weights: Weights) -> float:
    """Print, per min_score at `weights`, the queries' recall@5/MRR, the hits off-topic queries
    still get and (c)'s figures; return the highest min_score that loses at most
    MIN_SCORE_RECALL_LOSS of recall@5 and no conversation's current topic."""
    print(
        f"{'min_score':>9}  {'recall@5':>8} {'MRR':>6}  {'hits/query':>10}  "
        f"{'off-topic: any hit':>18}  {'hits/query':>10}  {'(c) current':>11}  {'(c) earlier':>11}"
    )
    base: tuple[float, float] | None = None
    chosen = 0.0
    for min_score in SWEEP_MIN_SCORES:
        options = weight_options(weights, min_score)
        ranked = bench.queries(**options)
        off = bench.index.search_many(OFF_TOPIC, **{"k": K_SHOWN, **options})
        s = score(bench.data.queries, ranked)
        conv = bench.assembler_score(**options)
        current = conv.current if conv else 0.0
        base = (s.recall, current) if base is None else base
        if s.recall >= base[0] - MIN_SCORE_RECALL_LOSS - 1e-9 and current >= base[1] - 1e-9:
            chosen = min_score
        shown = statistics.mean(len(h[:K_SHOWN]) for h in ranked)
        off_any = sum(1 for h in off if h) / len(off)
        tail = f"{_pct(conv.current):>11}  {conv.mean_earlier:>11.2f}" if conv else "n/a"
        print(
            f"{min_score:9.2f}  {_pct(s.recall):>8} {s.mrr:6.3f}  {shown:10.2f}  "
            f"{_pct(off_any):>18}  {statistics.mean(len(h) for h in off):10.2f}  {tail}"
        )
    print(
        f"best min_score: {chosen:g} (the highest that loses at most "
        f"{100 * MIN_SCORE_RECALL_LOSS:g} point of recall@5 and no conversation's current note)"
    )
    return chosen


def print_misses(bench: Bench, options: dict[str, Any]) -> None:
    """List the conversations whose current note (c) does not show, with what it shows."""
    shown = bench.assembler(**options)
    if shown is None:
        return
    misses = [
        (number, c, hits)
        for number, (c, hits) in enumerate(zip(bench.data.conversations, shown, strict=True), 1)
        if note_path(c.current) not in {h.path for h in hits}
    ]
    print(f"(c) misses the current note in {len(misses)} of {len(shown)} conversations:")
    for number, conversation, hits in misses:
        print(f"  #{number} {humans(conversation)[-1]!r} -> wanted {conversation.current}")
        print(f"      shown: {', '.join(h.path.removeprefix(MEMORY_DIR + '/') for h in hits)}")


# -- main ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the data folder")
    parser.add_argument(
        "--fake", action="store_true", help="use the fake embedder of tests/fakes.py (smoke run)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()

    try:
        data = load_data(args.data)
    except DataError as error:
        print(f"DATA INVALID ({args.data}):\n{error}", file=sys.stderr)
        return 1
    describe_data(data)

    defaults = MemoryConfig()
    hybrid: Weights = (defaults.vector_weight, defaults.bm25_weight)
    modes: dict[str, Weights] = {
        "BM25 only (0/1)": (0.0, 1.0),
        "vector only (1/0)": (1.0, 0.0),
        f"hybrid default ({hybrid[0]:g}/{hybrid[1]:g})": hybrid,
    }

    loading = time.perf_counter()
    embedder = make_embedder(args.fake)
    print(
        f"\nembedder: {getattr(embedder, 'model_id', '?')}"
        f"{' (FAKE: smoke run, not a measurement)' if args.fake else ''}, "
        f"loaded in {time.perf_counter() - loading:.1f} s"
    )
    recall = load_recall()
    if recall is None:
        print("assembler.memory.recall is not importable yet: way (c) is skipped")
    with (
        tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp,
        build_index(data, Path(tmp), embedder) as index,
    ):
        bench = Bench(index, data, recall, datetime.now(UTC))

        section = time.perf_counter()
        print(f"\n== Queries: recall@{K_SHOWN} and MRR (top {K_RANKED}), min_score 0 ==")
        print_modes(index, data.queries, modes)
        print(f"({time.perf_counter() - section:.1f} s)")

        section = time.perf_counter()
        print(
            f"\n== Conversations ({len(data.conversations)}): what the section shows "
            f"(k={K_SECTION}), min_score 0 =="
        )
        print_conversations(bench, modes)
        print(f"({time.perf_counter() - section:.1f} s)")

        section = time.perf_counter()
        print("\n== Sweep: vector weight (bm25 weight = 1 - vector weight), min_score 0 ==")
        best = sweep_weights(bench)
        print(f"\n== Sweep: min_score at vector {best[0]:g} / bm25 {best[1]:g} ==")
        min_score = sweep_min_score(bench, best)
        print(f"({time.perf_counter() - section:.1f} s)")

        recommended = weight_options(best, min_score)
        print(
            f"\n== (c) at the recommended settings (vector {best[0]:g} / bm25 {best[1]:g}, "
            f"min_score {min_score:g}) =="
        )
        conv = bench.assembler_score(**recommended)
        if conv is not None:
            print(
                f"current shown {_pct(conv.current)}, earlier shown (any) "
                f"{_pct(conv.any_earlier)}, earlier notes shown {conv.mean_earlier:.2f} of "
                f"{conv.mean_topics:.2f} topics"
            )
        print_misses(bench, recommended)

    print(
        f"\nrecommended defaults: vector_weight={best[0]:g}, bm25_weight={best[1]:g}, "
        f"min_score={min_score:g} (now {hybrid[0]:g}/{hybrid[1]:g}, {defaults.min_score:g})"
    )
    print(f"total time: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
