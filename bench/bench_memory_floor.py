"""Benchmark: what the Relevant Memories section shows, before and after lines with subjects,
the line floor and newer-wins, and the relevance floor that makes it precise.

    python bench/bench_memory_floor.py [--data bench/data/memory] [--fake]

Data: the project's retrieval set in bench/data/memory (the notes, queries and conversations
of bench/bench_retrieval.py, which checks it), its no-answer cases (no_answer.jsonl: a
developer's requests and sessions in a code repository, in our own words, that no note bears
on) and bench_retrieval's built-in off-topic questions. The notes are indexed twice in a
temporary folder: with the bundled all-MiniLM-L6-v2 (hybrid search, the default) and without a
model (keywords alone, the fallback), whose scores run on another scale.

What the section shows is `assembler.memory.recall.recall_memories` with k = 4 (the default
top_k and weights), asked with:
- the 65 conversations (right: the current topic's note and the earlier topics' notes),
- each of the 353 queries as a one-message conversation (right: its answer note),
- each no-answer case and off-topic question (right: nothing; every line shown is noise).
A note listed as `also` for a query or a conversation's topic (another note that states the
same fact, e.g. the daily note of the day it happened) is right too and finds that topic.

Precision = lines shown from a right note / lines shown (all cases); recall = topics whose
note is shown / topics (the cases that have one); "no-answer shown" = the share of no-answer
cases that show any line. "after the cap" renders the section as an assembly does
(`memories_section`, `_fit_without_repeats` with the default section cap of
relevant_memories) and counts the lines that are left.

- before: the selection before lines had subjects, kept here to compare (`_former_recall`:
  the most relevant sentence alone, no line floor, no newer-wins, current topic first) with
  the floors of the config defaults then, 0.25 / relative 0.6 / keywords 0.4, and the old fit
  (items ranked by position, no shortening);
- after: `recall_memories`, whose line floor always applies, for each (floor, relative floor)
  of a sweep; the one chosen is the most precise whose recall is at least TARGET_RECALL on the
  whole set and loses at most MAX_RECALL_LOSS against no floor on the small memory (30
  sampled notes; there the cases whose notes are missing count as no-answer).

Then, at the hybrid floor chosen, the same on the whole set under each section cap of CAPS
(the default's included): how many topics a smaller section still finds, and its tokens.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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

from assembler.assembly.cap import _fit_without_repeats
from assembler.assembly.sections import MemoryRecall, memories_section
from assembler.config.schema import CapsConfig, MemoryConfig
from assembler.file.render import Item, Renderer, Section, fit_sections
from assembler.memory.embeddings import Embedder
from assembler.memory.index import MemoryIndex
from assembler.memory.recall import (
    Floor,
    RecallResult,
    RememberedQueries,
    conversation_queries,
    recall_memories,
)
from assembler.memory.search import Hit, sentence_scores, sentence_vectors, sentences, snippet
from assembler.tokens import estimate_tokens
from assembler.transcripts.message import Message

K = MemoryConfig().top_k
SECTION_CAP = CapsConfig().sections["relevant_memories"]
HYBRID_FLOORS = [0.2, 0.25, 0.3, 0.35]
KEYWORD_FLOORS = [0.2, 0.3, 0.4, 0.5]
RELATIVE_FLOORS = [0.6, 0.8, 0.9, 0.95]
# What the chosen floor must keep: the target is precision >= 75% at recall >= 80%.
TARGET_RECALL = 0.80
# On the small memory, the recall the floor may cost against none.
MAX_RECALL_LOSS = 0.02
# The before selection applies these as a chunk floor only: it had no line floor.
BEFORE = {"hybrid": Floor(hybrid=0.25, relative=0.6), "keyword": Floor(keyword=0.4, relative=0.6)}
# BM25 scores depend on the memory's size (a word's rarity): the floors must hold for a large
# memory and for a small one, as an agent's often is.
SMALL_NOTES = 30
SEED = 20260302


@dataclass(frozen=True)
class Case:
    """One conversation the section answers, and the notes that are right to show for it."""

    conversation: Conversation
    gold: frozenset[str]  # the topics' notes, paths in the workspace
    also: dict[str, str]  # another note that is right too -> the topic it finds
    kind: str  # conversation, query, no-answer


@dataclass(frozen=True)
class Figures:
    shown: int
    right: int
    topics: int
    found: int
    no_answer: int  # no-answer cases
    no_answer_shown: int  # of those, the ones that show any line
    newer: int = 0  # lines left out for a newer one on their subject

    @property
    def precision(self) -> float:
        return self.right / self.shown if self.shown else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.topics if self.topics else 0.0

    @property
    def quiet(self) -> float:
        """The share of no-answer cases that show a line."""
        return self.no_answer_shown / self.no_answer if self.no_answer else 0.0


@dataclass(frozen=True)
class Row:
    """What one setting shows: the hits recall picks, and the lines left after the cap."""

    hits: Figures
    capped: Figures


def cases(data: Data) -> list[Case]:
    def path(note: str) -> str:
        return f"{MEMORY_DIR}/{note}"

    found = [
        Case(
            c,
            frozenset(path(p) for p in [c.current, *c.earlier]),
            {path(a): path(t) for a, t in c.also.items()},
            "conversation",
        )
        for c in data.conversations
    ]
    found += [
        Case(
            Conversation([("user", q.query)], q.answer, []),
            frozenset([path(q.answer)]),
            {path(a): path(q.answer) for a in q.also},
            "query",
        )
        for q in data.queries
    ]
    found += [
        Case(Conversation([("user", t) for t in n.messages], "", []), frozenset(), {}, "no-answer")
        for n in data.no_answer
    ]
    found += [
        Case(Conversation([("user", q)], "", []), frozenset(), {}, "no-answer") for q in OFF_TOPIC
    ]
    return found


def within(all_cases: Sequence[Case], notes: set[str]) -> list[Case]:
    """Return the cases as a memory of only `notes` sees them: notes it lacks are not right,
    and a case left without a topic is a no-answer case (every line is noise)."""

    def has(path: str) -> bool:
        return path.removeprefix(f"{MEMORY_DIR}/") in notes

    kept = []
    for case in all_cases:
        also = {a: t for a, t in case.also.items() if has(a)}
        gold = frozenset(g for g in case.gold if has(g) or g in also.values())
        kind = case.kind if gold else "no-answer"
        kept.append(Case(case.conversation, gold, also, kind))
    return kept


class Tally:
    def __init__(self) -> None:
        self.shown = self.right = self.topics = self.found = 0
        self.no_answer = self.no_answer_shown = self.newer = 0

    def add(self, case: Case, paths: Sequence[str]) -> None:
        self.shown += len(paths)
        self.right += sum(p in case.gold or p in case.also for p in paths)
        if not case.gold:
            self.no_answer += 1
            self.no_answer_shown += bool(paths)
            return
        topics = {p for p in paths if p in case.gold} | {
            case.also[p] for p in paths if p in case.also
        }
        self.topics += len(case.gold)
        self.found += len(topics & case.gold)

    def figures(self) -> Figures:
        return Figures(
            self.shown,
            self.right,
            self.topics,
            self.found,
            self.no_answer,
            self.no_answer_shown,
            self.newer,
        )


def capped_paths(
    result: RecallResult, before: bool, cap: int = SECTION_CAP, tokens: list[int] | None = None
) -> list[str]:
    """Given what recall picked, return the paths of the lines the section shows once fitted
    to its cap: as an assembly does now, or (`before`) as it did (items ranked by their
    position, cut whole, no subject). The section's tokens go to `tokens` when given."""
    recall = MemoryRecall(result, 0, 0)
    renderer = Renderer()
    caps = {"relevant_memories": cap}
    if before:
        hits = [*result.hits, *result.spare]
        items = tuple(
            Item(f"`{h.path}:{h.start_line}-{h.end_line}` {h.snippet}", None, 3 + rank)
            for rank, h in enumerate(hits[:K])
        )
        sections = [Section("relevant_memories", "Relevant Memories", items)] if items else []
        fitted = fit_sections(sections, renderer, estimate_tokens, cap=10**6, section_caps=caps)
    else:
        section = memories_section(recall)
        sections = [section] if section is not None else []
        fitted = _fit_without_repeats(
            sections, renderer, estimate_tokens, cap=10**6, section_caps=caps, memories=K
        )
    if tokens is not None:
        tokens.append(fitted.tokens)
    return [
        item.text.split(":", 1)[0].strip("`")
        for section in fitted.sections
        for item in section.items
    ]


def measure(
    index: MemoryIndex,
    all_cases: Sequence[Case],
    floor: Floor | None,
    *,
    before: bool,
    cap: int = SECTION_CAP,
    tokens: list[int] | None = None,
) -> Row:
    now = datetime.now(UTC)
    defaults = MemoryConfig()
    hits, capped = Tally(), Tally()
    for case in all_cases:
        recall = _former_recall if before else recall_memories
        result = recall(
            index,
            as_messages(case.conversation, now),
            k=K,
            floor=floor,
            spare=K,
            now=now,
            vector_weight=defaults.vector_weight,
            bm25_weight=defaults.bm25_weight,
        )
        hits.add(case, [hit.path for hit in result.hits])
        hits.newer += sum(line.endswith(", same subject") for line in result.explain)
        hits.newer += sum(line.endswith("shown in its place") for line in result.explain)
        capped.add(case, capped_paths(result, before, cap, tokens))
    return Row(hits.figures(), capped.figures())


def _former_recall(
    index: MemoryIndex,
    messages: Sequence[Message],
    *,
    k: int,
    floor: Floor | None,
    spare: int = 0,
    max_messages: int = 6,
    **search_options: Any,
) -> RecallResult:
    """Given the memory index and the recent messages, return the hits the Relevant Memories
    section showed before lines had subjects: the queries and floors of `recall_memories`,
    but each hit's most relevant sentence alone as its snippet (see `_former_snippets`), no
    line floor and no newer-wins. The current query gets the first slots (k minus one per
    earlier topic, at least half), each earlier query its best hit not already taken, the
    current query the slots still free; then up to `spare` more, the queries' next in turn."""
    queries = conversation_queries(messages, max_messages=max_messages)
    if not queries:
        return RecallResult([], [], ["no human message with content to search for"])
    ranked = index.search_many(queries, k=k * 3, **search_options)
    below = 0
    if floor is not None:
        chunks = index.chunk_count()
        kept = [floor.keep(hits, chunks) for hits in ranked]
        below = len({(h.path, h.start_line) for hits in ranked for h in hits}) - len(
            {(h.path, h.start_line) for hits in kept for h in hits}
        )
        ranked = kept
    explain = [
        f"query {i + 1}{' (current)' if i == 0 else ''}: {q!r}" for i, q in enumerate(queries)
    ]
    weights: dict[str, float] = {
        key: float(search_options[key])
        for key in ("vector_weight", "bm25_weight")
        if key in search_options
    }
    earlier = len(queries) - 1
    current_slots = k - min(earlier, k // 2) if earlier else k
    chosen: list[tuple[Hit, int]] = []
    seen: set[tuple[str, int]] = set()

    def take(hit: Hit, query: int) -> None:
        seen.add((hit.path, hit.start_line))
        chosen.append((hit, query))

    def fresh(hits: list[Hit]) -> list[Hit]:
        return [h for h in hits if (h.path, h.start_line) not in seen]

    for hit in fresh(ranked[0])[:current_slots]:
        take(hit, 0)
    for number, answers in enumerate(ranked[1:], start=1):
        if len(chosen) >= k:
            break
        if best := fresh(answers)[:1]:
            take(best[0], number)
    for hit in fresh(ranked[0]):
        if len(chosen) >= k:
            break
        take(hit, 0)
    shown = len(chosen)
    for rank in range(k * 3):
        for number, answers in enumerate(ranked):
            if len(chosen) < shown + spare and rank < len(answers) and fresh([answers[rank]]):
                take(answers[rank], number)
    snippets = _former_snippets(index, [(hit, queries[q]) for hit, q in chosen], **weights)
    hits: list[Hit] = []
    for number, ((hit, query), text) in enumerate(zip(chosen, snippets, strict=True)):
        where = f"query {query + 1} -> {hit.path}:{hit.start_line}-{hit.end_line}"
        if not text:
            explain.append(f"{where}: headings only, not shown")
            continue
        hits.append(replace(hit, snippet=text))
        explain.append(f"{where}{' (spare)' if number >= shown else ''}")
    first = len([t for t in snippets[:shown] if t])
    result = RecallResult(hits[:first], list(queries), explain, spare=hits[first:])
    return result.finish(below, floor)


def _former_snippets(
    index: MemoryIndex,
    pairs: Sequence[tuple[Hit, str]],
    *,
    vector_weight: float = 0.7,
    bm25_weight: float = 0.3,
) -> list[str]:
    """Given hits and the query each answers, return each hit's most relevant sentence, as the
    section showed it before lines had subjects: scored as the search scores chunks (see
    `search.sentence_scores`; by the words alone without a model), the sentence alone, cut to
    the snippet's width. A hit of headings alone gets ""."""
    found = []
    for hit, query in pairs:
        terms = index.snippet_weights(query)
        pieces = sentences(hit.text)
        vectors = sentence_vectors(query, pieces, index.embedder)
        scores = sentence_scores(
            pieces, terms, vectors, vector_weight=vector_weight, bm25_weight=bm25_weight
        )
        found.append(snippet(hit.text, terms, scores=scores) if pieces else "")
    return found


# The section caps compared for the floor chosen (the default is SECTION_CAP).
CAPS = (50, 80, 120, 160)


def cap_sweep(index: MemoryIndex, all_cases: Sequence[Case], floor: Floor) -> None:
    """Print, for the chosen floor, what the section shows under each cap of CAPS: lines,
    precision, recall, and the section's mean tokens in the cases that show it."""
    print(f"-- the section's cap, at the chosen floor ({_floor(floor, 'hybrid')}), all notes")
    print(f"  {'cap':>5} {'lines':>6} {'precision':>9} {'recall':>7} {'tokens (mean)':>14}")
    for cap in CAPS:
        tokens: list[int] = []
        row = measure(index, all_cases, floor, before=False, cap=cap, tokens=tokens)
        shown = [t for t in tokens if t]
        mean = sum(shown) / len(shown) if shown else 0.0
        c = row.capped
        default = " (default)" if cap == SECTION_CAP else ""
        print(
            f"  {cap:>5} {c.shown:>6} {100 * c.precision:8.1f}% {100 * c.recall:6.1f}% "
            f"{mean:>14.1f}{default}"
        )


Setting = tuple[float, float]  # (absolute floor, relative floor)


def describe(name: str, row: Row) -> str:
    h, c = row.hits, row.capped
    return (
        f"{name:34} {h.shown:6d} {100 * h.precision:8.1f}% {100 * h.recall:6.1f}% "
        f"{100 * h.quiet:8.1f}%   {c.shown:6d} {100 * c.precision:8.1f}% {100 * c.recall:6.1f}%"
        f"   {h.newer:5d}"
    )


HEADER = (
    f"{'':34} {'lines':>6} {'precision':>9} {'recall':>7} {'no-answer':>9}   "
    f"{'after the cap:':>6} {'precision':>9} {'recall':>7}   {'newer':>5}\n"
    f"{'':34} {'':>6} {'':>9} {'':>7} {'shown':>9}   {'lines':>14} {'':>9} {'':>7}   "
    f"{'wins':>5}"
)


def sweep(
    memories: Sequence[tuple[str, MemoryIndex, Sequence[Case]]],
    absolutes: Sequence[float],
    relatives: Sequence[float],
    mode: str,
) -> Setting:
    """Print before, no floor and every (floor, relative floor) after, on each memory; return
    the setting chosen (see `chosen`)."""
    settings = [(0.0, 0.0)] + [(a, r) for a in absolutes for r in relatives]
    table: dict[str, dict[Setting, Row]] = {}
    befores: dict[str, Row] = {}
    for name, index, memory_cases in memories:
        print(f"-- {name}")
        print(HEADER)
        befores[name] = measure(index, memory_cases, BEFORE[mode], before=True)
        label = f"before ({_floor(BEFORE[mode], mode, line=False)})"
        print(describe(label, befores[name]))
        rows = table[name] = {}
        for value, share in settings:
            floor = _make(mode, value, share)
            rows[(value, share)] = measure(index, memory_cases, floor, before=False)
            label = "after, no floor" if floor is None else f"after ({_floor(floor, mode)})"
            print(describe(label, rows[(value, share)]))
    best = chosen(table)
    print(f"chosen {mode} floor: {best[0]:g}, relative {best[1]:g}")
    for name, rows in table.items():
        old, new = befores[name].hits, rows[best].hits
        print(
            f"  {name}: precision {100 * new.precision:.1f}% vs {100 * old.precision:.1f}% "
            f"before; recall {100 * new.recall:.1f}% vs {100 * old.recall:.1f}%; lines "
            f"{new.shown} vs {old.shown}; no-answer cases showing a line "
            f"{100 * new.quiet:.1f}% vs {100 * old.quiet:.1f}%"
        )
    return best


def _make(mode: str, value: float, share: float) -> Floor | None:
    if (value, share) == (0.0, 0.0):
        return None
    if mode == "hybrid":
        return Floor(hybrid=value, relative=share)
    return Floor(keyword=value, relative=share)


def _floor(floor: Floor, mode: str, *, line: bool = True) -> str:
    """Given a floor, return its label: the absolute and relative floors, and ", line" when
    the line shown is held to it too (`recall_memories`; not the before selection)."""
    value = floor.hybrid if mode == "hybrid" else floor.keyword
    return f"{value:g} / {floor.relative:g}{', line' if line else ''}"


def chosen(table: dict[str, dict[Setting, Row]]) -> Setting:
    """Return the setting of the highest precision on the whole set (the first memory) whose
    recall there is at least TARGET_RECALL, or, failing that, within MAX_RECALL_LOSS of no
    floor's, and whose recall on each other memory is within MAX_RECALL_LOSS of no floor's
    (ties: the lower floors)."""
    names = list(table)
    whole = table[names[0]]

    def allowed(setting: Setting, target: float) -> bool:
        if whole[setting].hits.recall < target - 1e-9:
            return False
        return all(
            table[name][setting].hits.recall
            >= table[name][(0.0, 0.0)].hits.recall - MAX_RECALL_LOSS - 1e-9
            for name in names[1:]
        )

    target = TARGET_RECALL
    if not any(allowed(s, target) for s in whole):
        target = whole[(0.0, 0.0)].hits.recall - MAX_RECALL_LOSS
    return max(
        (s for s in whole if allowed(s, target)),
        key=lambda s: (round(whole[s].hits.precision, 6), -s[0], -s[1]),
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
        for kind in ("conversation", "query", "no-answer")
    }
    print(
        f"data: {args.data}: {len(data.notes)} notes; "
        + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
        + f" ({len(data.no_answer)} development, {len(OFF_TOPIC)} off-topic); the section "
        f"shows up to {K} lines under a cap of {SECTION_CAP} tokens"
    )
    started = time.perf_counter()
    embedder = make_embedder(args.fake)
    if args.fake:
        print("embedder: FAKE (tests/fakes.py): a smoke run, not a measurement")
    # Every setting asks the same queries and shows mostly the same lines: the queries and
    # the lines' sentences are embedded once.
    remembered = RememberedQueries(embedder, size=1_000_000, batch=256)
    everything = sorted(data.notes)
    small = sorted(random.Random(SEED).sample(everything, SMALL_NOTES))
    sizes = [
        (f"all {len(everything)} notes", everything),
        (f"a small memory: {SMALL_NOTES} notes (seeded sample)", small),
    ]
    chosen_floors: dict[str, Setting] = {}
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        for mode, model, absolutes in (
            ("hybrid", remembered, HYBRID_FLOORS),
            ("keyword", None, KEYWORD_FLOORS),
        ):
            title = "hybrid search (vectors + BM25), the default" if model else "keywords alone"
            print(f"\n== {title} ==")
            with contextlib.ExitStack() as stack:
                memories = [
                    (
                        name,
                        stack.enter_context(build(data, Path(tmp) / f"{mode}{i}", model, notes)),
                        within(all_cases, set(notes)),
                    )
                    for i, (name, notes) in enumerate(sizes)
                ]
                chosen_floors[mode] = sweep(memories, absolutes, RELATIVE_FLOORS, mode)
                floor = _make(mode, *chosen_floors[mode])
                if mode == "hybrid" and floor is not None:
                    _, whole_index, whole_cases = memories[0]
                    cap_sweep(whole_index, whole_cases, floor)
    defaults = MemoryConfig()
    hybrid, keyword = chosen_floors["hybrid"], chosen_floors["keyword"]
    print(
        f"\nrecommended: memory.floor = {hybrid[0]:g}, memory.relative_floor = "
        f"{hybrid[1]:g} (keywords alone: {keyword[1]:g}), memory.keyword_floor = "
        f"{keyword[0]:g} (now {defaults.floor:g}, {defaults.relative_floor:g}, "
        f"{defaults.keyword_floor:g})"
    )
    print(f"total time: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
