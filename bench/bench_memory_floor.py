"""Benchmark: the relevance floor of the Relevant Memories section, no floor vs floors.

    python bench/bench_memory_floor.py [--data bench/data/memory] [--fake]

Data: the project's retrieval set in bench/data/memory (the notes, queries and conversations
of bench/bench_retrieval.py, which checks it) plus bench_retrieval's built-in off-topic
questions that no note answers. The notes are indexed twice in a temporary folder: with the
bundled all-MiniLM-L6-v2 (hybrid search, the default) and without a model (keywords alone, the
fallback), whose scores run on another scale; each gets its own floor.

What the section shows is `assembler.memory.recall.recall_memories` with k = 4 (the default
top_k and weights), asked with:
- the 65 conversations (gold: the current topic's note and the earlier topics' notes),
- each of the 353 queries as a one-message conversation (gold: its answer note),
- each off-topic question as a one-message conversation (gold: nothing, every hit is noise).

For each floor: precision = shown hits from a gold note / shown hits (all three sets), and
recall = gold notes shown / gold notes (conversations and queries). The floor is a pair: an
absolute score and a share of the best hit of the same query. The hybrid pair chosen is the
most precise that loses at most 2 points of recall against no floor (three strong lines beat
four with noise, but not at the price of the answer), on the whole set and on a small memory
of 30 sampled notes (where the cases whose notes are missing count as off-topic); the keyword
floor is chosen the same way with the hybrid's share. Each is compared with no floor (ratio
of precisions, recall).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import assembler  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_retrieval import (  # type: ignore[import-not-found]
    DEFAULT_DATA,
    MEMORY_DIR,
    OFF_TOPIC,
    Conversation,
    Data,
    DataError,
    as_messages,
    load_data,
    make_embedder,
)

from assembler.config.schema import MemoryConfig
from assembler.memory.embeddings import Embedder
from assembler.memory.index import MemoryIndex
from assembler.memory.recall import Floor, RememberedQueries, recall_memories

K = MemoryConfig().top_k
HYBRID_FLOORS = [0.0, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]
KEYWORD_FLOORS = [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5]
RELATIVE_FLOORS = [0.0, 0.5, 0.6, 0.7, 0.8, 0.9]
BETA = 0.5  # F-beta, printed for reference: precision weighs 1 / BETA = 2 times recall
# The floor chosen is the most precise that loses at most this much recall (2 points).
MAX_RECALL_LOSS = 0.02
# BM25 scores depend on the memory's size (a word's rarity): the floors must hold for a large
# memory and for a small one, as an agent's often is.
SMALL_NOTES = 30
SEED = 20260302


@dataclass(frozen=True)
class Case:
    """One conversation the section answers, and the notes that are right to show for it."""

    conversation: Conversation
    gold: frozenset[str]  # paths in the workspace
    kind: str  # conversation, query, off-topic


@dataclass(frozen=True)
class Figures:
    floor: float
    shown: int
    right: int
    gold: int
    found: int
    off_topic_hits: float  # mean hits per off-topic question
    conversation_recall: float
    query_recall: float

    @property
    def precision(self) -> float:
        return self.right / self.shown if self.shown else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.gold if self.gold else 0.0

    @property
    def f_beta(self) -> float:
        p, r = self.precision, self.recall
        b2 = BETA * BETA
        return (1 + b2) * p * r / (b2 * p + r) if p + r > 0 else 0.0


def cases(data: Data) -> list[Case]:
    found = [
        Case(c, frozenset(f"{MEMORY_DIR}/{p}" for p in [c.current, *c.earlier]), "conversation")
        for c in data.conversations
    ]
    found += [
        Case(
            Conversation([("user", q.query)], q.answer, []),
            frozenset([f"{MEMORY_DIR}/{q.answer}"]),
            "query",
        )
        for q in data.queries
    ]
    found += [
        Case(Conversation([("user", q)], "", []), frozenset(), "off-topic") for q in OFF_TOPIC
    ]
    return found


def within(all_cases: Sequence[Case], notes: set[str]) -> list[Case]:
    """Return the cases as a memory of only `notes` sees them: gold notes it lacks are not
    gold, and a case left without one is off-topic (every hit is noise)."""
    kept = []
    for case in all_cases:
        gold = frozenset(g for g in case.gold if g.removeprefix(f"{MEMORY_DIR}/") in notes)
        kind = case.kind if gold else "off-topic"
        kept.append(Case(case.conversation, gold, kind))
    return kept


def measure(index: MemoryIndex, all_cases: Sequence[Case], floor: Floor, value: float) -> Figures:
    now = datetime.now(UTC)
    defaults = MemoryConfig()
    shown = right = gold = found = 0
    off_hits: list[int] = []
    recall_by_kind: dict[str, list[float]] = {"conversation": [], "query": []}
    for case in all_cases:
        hits = recall_memories(
            index,
            as_messages(case.conversation, now),
            k=K,
            floor=floor,
            now=now,
            vector_weight=defaults.vector_weight,
            bm25_weight=defaults.bm25_weight,
        ).hits
        paths = {hit.path for hit in hits}
        shown += len(hits)
        right += sum(hit.path in case.gold for hit in hits)
        if case.kind == "off-topic":
            off_hits.append(len(hits))
            continue
        gold += len(case.gold)
        found += len(case.gold & paths)
        recall_by_kind[case.kind].append(len(case.gold & paths) / len(case.gold))
    return Figures(
        value,
        shown,
        right,
        gold,
        found,
        sum(off_hits) / max(len(off_hits), 1),
        _mean(recall_by_kind["conversation"]),
        _mean(recall_by_kind["query"]),
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


Setting = tuple[float, float]  # (absolute floor, relative floor)


def sweep(
    memories: Sequence[tuple[str, MemoryIndex, Sequence[Case]]],
    absolutes: Sequence[float],
    relatives: Sequence[float],
    mode: str,
) -> Setting:
    """Print the figures of every (floor, relative floor) pair on each memory; return the one
    chosen (see `chosen`)."""
    settings = [(0.0, 0.0)] + [(a, r) for a in absolutes for r in relatives if (a, r) != (0, 0)]
    table: dict[str, dict[Setting, Figures]] = {}
    for name, index, memory_cases in memories:
        print(f"-- {name}")
        print(
            f"{'floor':>6} {'relative':>8} {'shown':>6} {'precision':>9} {'recall':>7} "
            f"{'F0.5':>6}  {'conv. recall':>12} {'query recall':>12}  {'off-topic hits/q':>16}"
        )
        rows = table[name] = {}
        for value, share in settings:
            if mode == "hybrid":
                floor = Floor(hybrid=value, relative=share)
            else:
                floor = Floor(keyword=value, relative=share)
            row = rows[(value, share)] = measure(index, memory_cases, floor, value)
            print(
                f"{value:6.2f} {share:8.2f} {row.shown:6d} {100 * row.precision:8.1f}% "
                f"{100 * row.recall:6.1f}% {row.f_beta:6.3f}  "
                f"{100 * row.conversation_recall:11.1f}% {100 * row.query_recall:11.1f}%  "
                f"{row.off_topic_hits:16.2f}"
            )
    best = chosen(table)
    print(f"chosen {mode} floor: {best[0]:g}, relative {best[1]:g}")
    for name, rows in table.items():
        none, row = rows[(0.0, 0.0)], rows[best]
        print(
            f"  {name}: precision {100 * row.precision:.1f}% vs {100 * none.precision:.1f}% "
            f"with no floor (ratio {row.precision / max(none.precision, 1e-9):.2f}); recall "
            f"{100 * row.recall:.1f}% vs {100 * none.recall:.1f}%; hits shown {row.shown} vs "
            f"{none.shown}; off-topic hits per question {row.off_topic_hits:.2f} vs "
            f"{none.off_topic_hits:.2f}"
        )
    return best


def chosen(table: dict[str, dict[Setting, Figures]]) -> Setting:
    """Return the setting of the highest mean precision whose recall is at most
    MAX_RECALL_LOSS below no floor's on every memory (ties: the lower floors). F0.5 alone
    would trade a third of the right notes for precision: on the one-answer queries every
    other hit counts as noise."""
    settings = list(next(iter(table.values())))

    def allowed(setting: Setting) -> bool:
        return all(
            rows[setting].recall >= rows[(0.0, 0.0)].recall - MAX_RECALL_LOSS - 1e-9
            for rows in table.values()
        )

    def mean_precision(setting: Setting) -> float:
        return sum(rows[setting].precision for rows in table.values()) / len(table)

    return max(
        (s for s in settings if allowed(s)),
        key=lambda s: (round(mean_precision(s), 6), -s[0], -s[1]),
    )


def build(
    data: Data, workspace: Path, embedder: Embedder | None, notes: Sequence[str]
) -> MemoryIndex:
    for note in notes:
        target = workspace / MEMORY_DIR / note
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data.notes[note], encoding="utf-8")
    index = MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=[f"{MEMORY_DIR}/**/*.md"],
        embedder=embedder,
    )
    report = index.sync()
    print(
        f"index ({'keywords alone' if embedder is None else embedder.model_id}): "
        f"{report.files_seen} files, {report.chunks_total} chunks in {report.seconds:.1f} s"
    )
    if embedder is not None and report.degraded:
        raise SystemExit(
            f"the index has no vectors ({report.degraded}); hybrid figures would be BM25"
        )
    return index


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the data folder")
    parser.add_argument(
        "--fake", action="store_true", help="use the fake embedder of tests/fakes.py (smoke run)"
    )
    args = parser.parse_args(argv)
    if not (args.data / "notes").is_dir():
        print(f"skipped: no retrieval set at {args.data} (put it there or pass --data PATH)")
        return 0
    try:
        data = load_data(args.data)
    except DataError as error:
        print(f"DATA INVALID ({args.data}):\n{error}", file=sys.stderr)
        return 1
    all_cases = cases(data)
    kinds = {
        kind: sum(c.kind == kind for c in all_cases)
        for kind in ("conversation", "query", "off-topic")
    }
    print(
        f"data: {args.data}: {len(data.notes)} notes; "
        + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
        + f"; the section shows up to {K} hits"
    )
    started = time.perf_counter()
    embedder = make_embedder(args.fake)
    if args.fake:
        print("embedder: FAKE (tests/fakes.py): a smoke run, not a measurement")
    # The sweep asks the same queries and shows mostly the same hits at every floor: the
    # queries and the snippets' sentences are embedded once.
    remembered = RememberedQueries(embedder, size=1_000_000, batch=256)
    everything = sorted(data.notes)
    small = sorted(random.Random(SEED).sample(everything, SMALL_NOTES))
    sizes = [
        (f"all {len(everything)} notes", everything),
        (f"a small memory: {SMALL_NOTES} notes (seeded sample)", small),
    ]
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        print("\n== hybrid search (vectors + BM25), the default ==")
        with contextlib.ExitStack() as stack:
            memories = [
                (
                    name,
                    stack.enter_context(build(data, Path(tmp) / f"h{i}", remembered, notes)),
                    within(all_cases, set(notes)),
                )
                for i, (name, notes) in enumerate(sizes)
            ]
            hybrid = sweep(memories, HYBRID_FLOORS, RELATIVE_FLOORS, "hybrid")
        print("\n== keywords alone (no model: memory.model = 'none', or it failed to load) ==")
        print(f"(the relative floor stays at the hybrid's {hybrid[1]:g})")
        with contextlib.ExitStack() as stack:
            memories = [
                (
                    name,
                    stack.enter_context(build(data, Path(tmp) / f"k{i}", None, notes)),
                    within(all_cases, set(notes)),
                )
                for i, (name, notes) in enumerate(sizes)
            ]
            keyword = sweep(memories, KEYWORD_FLOORS, [hybrid[1]], "keyword")
    defaults = MemoryConfig()
    print(
        f"\nrecommended: memory.floor = {hybrid[0]:g}, memory.relative_floor = "
        f"{hybrid[1]:g}, memory.keyword_floor = {keyword[0]:g} (now {defaults.floor:g}, "
        f"{defaults.relative_floor:g}, {defaults.keyword_floor:g})"
    )
    print(f"total time: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
