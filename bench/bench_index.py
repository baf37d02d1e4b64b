"""Benchmark: memory index throughput, warm re-sync and search latency, with the real model.

    python bench/bench_index.py [--index-files 400] [--search-chunks 10000] [--queries 30]
                                [--batch-size 64] [--keep DIR] [--model bundled]

Everything runs against the bundled all-MiniLM-L6-v2 (its ONNX export; `--model` names another
spec, as memory.model does) in one process, on synthetic but
realistic memory folders generated in a temporary folder (seeded, so every run sees the same
text):

1. Cold index throughput. Folder A: `--index-files` Markdown notes (projects, people, daily
   notes with timed entries; headings, paragraphs, lists, some code), indexed with the default
   chunking (400 tokens, 80 overlap). The same chunk texts (heading path + text, as the index
   embeds them) are first encoded straight with `embedder.encode` at the same batch size (the
   raw model throughput), then indexed cold, then encoded raw again; the cold index's chunks/s
   is compared with the mean of the two raw runs. Target: >= 0.8.
2. Warm re-sync of folder A with nothing changed (median of 5), against the cold index time.
   Target: >= 50x faster.
3. Search latency over folder B: about `--search-chunks` chunks (short notes, one chunk each,
   so that building it takes about two minutes rather than ten). `--queries` queries (keyword
   and paraphrase style) are searched one by one; the time spent in the query's `encode` and
   the rest (vector scoring, FTS5 BM25, fusion, snippets) are reported apart, as medians and
   90th percentiles. The first search, which loads the vector matrix, is reported on its own.

With `--keep DIR`, folder B and its index are kept in DIR and reused by later runs (the
vectors are then already there, and building B costs a warm sync).

With `--first-index N`, only the first index of a fresh process is measured, as a user's first
`assemble index` meets it: N folder A notes are generated, then the model (`--model`, default
"bundled": the ONNX export) is loaded and the notes are indexed cold; the wall time of both,
the chunks/s and the process's peak RSS are printed, and whether torch was imported. Run it in
a process of its own (the peak RSS is the process's):

    python bench/bench_index.py --first-index 500 [--model bundled]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

try:
    from assembler.memory.chunks import chunk_markdown
    from assembler.memory.embeddings import Embedder, LazyEmbedder, load_embedder
    from assembler.memory.index import MemoryIndex
    from assembler.tokens import estimate_tokens
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.memory.chunks import chunk_markdown
    from assembler.memory.embeddings import Embedder, LazyEmbedder, load_embedder
    from assembler.memory.index import MemoryIndex
    from assembler.tokens import estimate_tokens

SOURCES = ["MEMORY.md", "memory/**/*.md"]
CHUNK_TOKENS = 400
OVERLAP_TOKENS = 80
SEED = 20260301
TARGET_THROUGHPUT = 0.8
TARGET_WARM = 50.0

# Topics with their own words, so notes differ the way a real memory's notes do.
TOPICS: dict[str, dict[str, list[str]]] = {
    "kubernetes": {
        "things": [
            "the api deployment",
            "the ingress",
            "the prod cluster",
            "the helm chart",
            "the image tag",
            "the node pool",
            "the cronjob",
            "the staging namespace",
        ],
        "events": [
            "went into CrashLoopBackOff",
            "failed its readiness probe",
            "was rolled back by hand",
            "ran out of memory",
            "pulled the wrong image",
            "was scaled to three replicas",
            "lost its secret reference",
        ],
        "fixes": [
            "retagged the image",
            "raised the memory limit to 512Mi",
            "added a pre-deploy check",
            "pinned the chart version",
            "restarted the rollout",
            "fixed the configmap",
        ],
    },
    "postgres": {
        "things": [
            "the nightly backup",
            "migration 48",
            "the replica",
            "the orders table",
            "the connection pool",
            "the vacuum job",
            "the read-only role",
        ],
        "events": [
            "took forty minutes",
            "locked the table",
            "fell behind by an hour",
            "filled the disk",
            "timed out under load",
            "was left in a transaction",
        ],
        "fixes": [
            "added an index on created_at",
            "set idle_in_transaction_session_timeout",
            "moved the dump to the bucket",
            "split the migration in two",
            "raised max_connections",
            "scheduled vacuum at night",
        ],
    },
    "homelab": {
        "things": [
            "the NAS",
            "the Proxmox host",
            "the Frigate recordings",
            "the UPS",
            "the router",
            "the backup drive",
            "the Home Assistant VM",
        ],
        "events": [
            "hit 96% disk",
            "rebooted after a power cut",
            "stopped recording",
            "lost its DHCP lease",
            "made a clicking noise",
            "ran hot in the summer",
        ],
        "fixes": [
            "pruned old recordings",
            "added a retention policy",
            "replaced the fan",
            "moved volumes to the new disk",
            "set a static lease",
            "updated firmware",
        ],
    },
    "family": {
        "things": [
            "Mum's birthday",
            "the school trip",
            "the dentist appointment",
            "the holiday in Lisbon",
            "grandad's visit",
            "the piano lessons",
        ],
        "events": [
            "is on the 14th",
            "needs a signed form",
            "was moved to Thursday",
            "is booked for June",
            "clashes with the release",
            "costs more this year",
        ],
        "fixes": [
            "ordered flowers",
            "signed the form",
            "put it in the shared calendar",
            "booked the flights",
            "asked Sam to cover",
            "paid the deposit",
        ],
    },
    "health": {
        "things": [
            "the long run",
            "the knee",
            "the physio plan",
            "sleep",
            "the blood test",
            "the half marathon",
        ],
        "events": [
            "felt sore after 18 km",
            "improved with stretching",
            "was short this week",
            "came back normal",
            "is in May",
            "needs an easier week",
        ],
        "fixes": [
            "kept runs under 16 km",
            "added two strength sessions",
            "went to bed before eleven",
            "booked a follow-up",
            "bought new shoes",
        ],
    },
    "money": {
        "things": [
            "the tax return",
            "the March invoice",
            "the mortgage",
            "the pension",
            "the laptop receipt",
            "the accountant's fee",
        ],
        "events": [
            "is due end of January",
            "was paid late",
            "renews in autumn",
            "needs a new contribution",
            "went missing",
            "went up by ten percent",
        ],
        "fixes": [
            "filed the return",
            "disputed the late fee",
            "compared three offers",
            "raised the monthly amount",
            "scanned all receipts",
            "asked for a breakdown",
        ],
    },
}
CONNECTORS = [
    "Because of that",
    "After some digging",
    "In the end",
    "Next time",
    "For the record",
    "Worth remembering",
    "As agreed with Sam",
]
PEOPLE = ["Ray", "Sam", "Priya", "Jonas", "Maria", "Okafor", "Lena", "Tom"]
QUERIES = [
    "api deployment crashloop image tag",
    "why did the rollout keep crashing",
    "postgres migration locked the table",
    "the database backup is too slow",
    "NAS disk almost full recordings",
    "storage keeps filling up at home",
    "Mum birthday flowers",
    "when is the school trip form due",
    "knee pain after long runs",
    "how should I train for the half marathon",
    "tax return deadline january",
    "money I owe the accountant",
    "helm chart version pinned",
    "connection pool exhausted under load",
    "power cut rebooted the server",
    "holiday flights to Lisbon",
    "idle in transaction timeout",
    "what did Priya say about the replica",
    "late fee on the invoice",
    "sleep before eleven",
    "readiness probe failing in staging",
    "vacuum job at night",
    "router lost its address",
    "dentist moved to Thursday",
    "strength sessions for running",
    "mortgage renewal offers",
    "pre-deploy check added to CI",
    "Frigate stopped recording",
    "retention policy for camera footage",
    "pension contribution increase",
]


def title(text: str) -> str:
    return " ".join(word[:1].upper() + word[1:] for word in text.split())


def sentence(rng: random.Random, topic: str) -> str:
    words = TOPICS[topic]
    thing, event, fix = (rng.choice(words[k]) for k in ("things", "events", "fixes"))
    who = rng.choice(PEOPLE)
    forms = [
        f"{thing.capitalize()} {event}; {who} {fix}.",
        f"{rng.choice(CONNECTORS)}, {thing} {event} and we {fix}.",
        f"{who} noticed that {thing} {event}. We {fix} and it held.",
        f"Note: {thing} {event} again, so {who} {fix}.",
    ]
    return rng.choice(forms)


def paragraph(rng: random.Random, topic: str, sentences: int) -> str:
    return " ".join(sentence(rng, topic) for _ in range(sentences))


def project_note(rng: random.Random, number: int) -> tuple[str, str]:
    topic = rng.choice(list(TOPICS))
    lines = [f"# {title(topic)} notes {number}", "", paragraph(rng, topic, 2), ""]
    for section in range(rng.randint(3, 6)):
        lines += [f"## {title(rng.choice(TOPICS[topic]['things']))} ({section + 1})", ""]
        lines += [paragraph(rng, topic, rng.randint(2, 5)), ""]
        if rng.random() < 0.6:
            lines += [f"- {sentence(rng, topic)}" for _ in range(rng.randint(2, 5))] + [""]
        if topic in ("kubernetes", "postgres") and rng.random() < 0.3:
            command = (
                "kubectl rollout status deploy/api -n prod"
                if topic == "kubernetes"
                else ("psql -c 'select now() - xact_start from pg_stat_activity'")
            )
            lines += ["```sh", command, "```", ""]
    return f"memory/{topic}/notes-{number:04d}.md", "\n".join(lines)


def daily_note(rng: random.Random, day: date) -> tuple[str, str]:
    lines = [f"# {day.isoformat()}", ""]
    minute = 8 * 60
    for _ in range(rng.randint(4, 9)):
        minute += rng.randint(20, 110)
        topic = rng.choice(list(TOPICS))
        lines += [f"## {minute // 60:02d}:{minute % 60:02d} {topic}", ""]
        lines += [paragraph(rng, topic, rng.randint(1, 3)), ""]
        if rng.random() < 0.4:
            lines += [f"- [ ] {sentence(rng, topic)}" for _ in range(rng.randint(1, 3))] + [""]
    return f"memory/{day.isoformat()}.md", "\n".join(lines)


def small_note(rng: random.Random, number: int) -> tuple[str, str]:
    topic = rng.choice(list(TOPICS))
    thing = rng.choice(TOPICS[topic]["things"])
    body = paragraph(rng, topic, rng.randint(2, 4))
    items = "\n".join(f"- {sentence(rng, topic)}" for _ in range(rng.randint(0, 2)))
    text = f"# {title(thing)} {number}\n\n{body}\n\n{items}\n"
    return f"memory/{topic}/{number // 500:02d}/note-{number:05d}.md", text


def write_folder(workspace: Path, files: Sequence[tuple[str, str]]) -> None:
    for rel, text in files:
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def folder_a(workspace: Path, count: int) -> None:
    rng = random.Random(SEED)
    files = [project_note(rng, n) for n in range(count * 2 // 3)]
    start = date(2025, 9, 1)
    files += [daily_note(rng, start + timedelta(days=n)) for n in range(count - len(files))]
    files.append(("MEMORY.md", "# About Ray\n\n" + paragraph(rng, "family", 3) + "\n"))
    write_folder(workspace, files)


def folder_b(workspace: Path, chunks: int) -> None:
    rng = random.Random(SEED + 1)
    write_folder(workspace, [small_note(rng, n) for n in range(chunks)])


def embed_texts(workspace: Path) -> list[str]:
    """Given a folder, return the distinct texts its index embeds (as MemoryIndex would)."""
    texts: dict[str, str] = {}
    for path in [*sorted(workspace.glob("memory/**/*.md")), workspace / "MEMORY.md"]:
        if path.is_file():
            for chunk in chunk_markdown(
                path.read_text(encoding="utf-8"),
                chunk_tokens=CHUNK_TOKENS,
                overlap_tokens=OVERLAP_TOKENS,
            ):
                texts.setdefault(chunk.hash, chunk.embed_text)
    return list(texts.values())


class TimedEmbedder:
    """Wraps an Embedder and adds up the seconds spent in `encode`."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.seconds = 0.0

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        started = time.perf_counter()
        try:
            return self.inner.encode(texts)
        finally:
            self.seconds += time.perf_counter() - started


def open_index(workspace: Path, embedder: Embedder) -> MemoryIndex:
    return MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=SOURCES,
        embedder=embedder,
        chunk_tokens=CHUNK_TOKENS,
        overlap_tokens=OVERLAP_TOKENS,
    )


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def first_index(count: int, spec: str, batch_size: int) -> int:
    """Given a number of notes, a model spec and a batch size, print what the first index of a
    fresh process costs: model load plus cold sync, and the peak RSS."""
    with tempfile.TemporaryDirectory(prefix="bench-index-") as temp:
        workspace = Path(temp) / "a"
        folder_a(workspace, count)
        started = time.perf_counter()
        # Loaded inside the sync, as `assemble index` loads it.
        embedder = LazyEmbedder(spec, batch_size=batch_size)
        with open_index(workspace, embedder) as index:
            report = index.sync()
        seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    heavy = sorted({"torch", "transformers", "sentence_transformers"} & set(sys.modules))
    print(f"first index, model {spec!r} ({type(embedder._load()).__name__}), batch {batch_size}")
    print(
        f"  {report.files_seen} notes, {report.chunks_embedded} chunks embedded in "
        f"{seconds:.1f} s with the model's load ({report.chunks_embedded / seconds:.1f} chunks/s)"
    )
    print(f"  peak RSS {peak:.0f} MB; imported: {', '.join(heavy) or 'no torch'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-files", type=int, default=400, help="notes in folder A")
    parser.add_argument("--search-chunks", type=int, default=10_000, help="chunks in folder B")
    parser.add_argument("--queries", type=int, default=30, help="queries timed on folder B")
    parser.add_argument("--batch-size", type=int, default=64, help="model batch size")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) folder B and its index here")
    parser.add_argument(
        "--first-index",
        type=int,
        metavar="N",
        help="measure only the first index of N notes in this fresh process (load + cold sync)",
    )
    parser.add_argument("--model", default="bundled", help="the model spec (default: bundled)")
    args = parser.parse_args(argv)
    if args.first_index:
        return first_index(args.first_index, args.model, args.batch_size)

    started = time.perf_counter()
    embedder = load_embedder(args.model, batch_size=args.batch_size)
    print(
        f"model: {embedder.model_id} ({embedder.dim}-d), loaded in "
        f"{time.perf_counter() - started:.1f} s, batch size {args.batch_size}"
    )
    embedder.encode(["warm-up text for the model"] * args.batch_size)

    with tempfile.TemporaryDirectory(prefix="bench-index-") as temp:
        # 1 + 2: cold index vs raw model, warm re-sync.
        workspace = Path(temp) / "a"
        folder_a(workspace, args.index_files)
        texts = embed_texts(workspace)
        tokens = [estimate_tokens(t) for t in texts]
        print(
            f"\nfolder A: {args.index_files} notes, {len(texts)} chunks "
            f"(mean {statistics.mean(tokens):.0f} tokens, max {max(tokens)}; "
            f"chunking {CHUNK_TOKENS}/{OVERLAP_TOKENS})"
        )

        def raw_run() -> float:
            begin = time.perf_counter()
            embedder.encode(texts)
            return len(texts) / (time.perf_counter() - begin)

        raw_before = raw_run()
        with open_index(workspace, embedder) as index:
            cold = index.sync()
            warm_times = []
            for _ in range(5):
                report = index.sync()
                assert report.files_read == 0 and report.chunks_embedded == 0
                warm_times.append(report.seconds)
        raw_after = raw_run()
        assert cold.chunks_embedded == len(texts), (cold.chunks_embedded, len(texts))
        cold_rate = cold.chunks_embedded / cold.seconds
        raw_rate = (raw_before + raw_after) / 2
        warm = statistics.median(warm_times)
        print("\n(1) cold index throughput vs the raw model, same chunk texts and batch size")
        print(f"    raw model      {raw_before:8.1f} chunks/s (before), {raw_after:.1f} (after)")
        print(
            f"    cold index     {cold_rate:8.1f} chunks/s ({cold.chunks_embedded} chunks, "
            f"{cold.files_seen} files, {cold.seconds:.1f} s)"
        )
        ratio = cold_rate / raw_rate
        verdict = "ok" if ratio >= TARGET_THROUGHPUT else "MISSED"
        print(f"    ratio          {ratio:8.2f} of raw (target >= {TARGET_THROUGHPUT}) {verdict}")
        print("\n(2) warm re-sync, nothing changed (median of 5)")
        speedup = cold.seconds / warm
        verdict = "ok" if speedup >= TARGET_WARM else "MISSED"
        print(f"    warm sync      {warm * 1000:8.1f} ms (files read: 0, embedded: 0)")
        print(
            f"    speed-up       {speedup:8.0f}x faster than cold (target >= {TARGET_WARM:.0f}x) "
            f"{verdict}"
        )

        # 3: search latency over ~10,000 chunks.
        folder = args.keep if args.keep else Path(temp) / "b"
        marker = folder / f".generated-{args.search_chunks}"
        if not marker.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder_b(folder, args.search_chunks)
            marker.touch()
        timed = TimedEmbedder(embedder)
        with open_index(folder, timed) as index:
            build = index.sync()
            rate = build.chunks_embedded / build.seconds if build.chunks_embedded else 0.0
            print(
                f"\n(3) search latency: folder B, {build.files_seen} notes, "
                f"{build.chunks_total} chunks (indexed in {build.seconds:.1f} s"
                + (f", {rate:.1f} chunks/s)" if build.chunks_embedded else ", warm)")
            )
            queries = (QUERIES * (args.queries // len(QUERIES) + 1))[: args.queries]
            embed_ms: list[float] = []
            rank_ms: list[float] = []
            first_ms = 0.0
            for number, query in enumerate(queries):
                timed.seconds = 0.0
                begin = time.perf_counter()
                hits = index.search(query, k=5)
                total = time.perf_counter() - begin
                assert hits, query
                if number == 0:
                    first_ms = total * 1000
                    # Time the first query again, now with the vector matrix loaded.
                    timed.seconds = 0.0
                    begin = time.perf_counter()
                    index.search(query, k=5)
                    total = time.perf_counter() - begin
                embed_ms.append(timed.seconds * 1000)
                rank_ms.append((total - timed.seconds) * 1000)
        print(f"    first search   {first_ms:8.1f} ms (includes loading the vector matrix)")
        print(
            f"    query embed    {statistics.median(embed_ms):8.1f} ms median, "
            f"{percentile(embed_ms, 0.9):.1f} ms p90 ({len(queries)} queries)"
        )
        print(
            f"    ranking        {statistics.median(rank_ms):8.1f} ms median, "
            f"{percentile(rank_ms, 0.9):.1f} ms p90 (cosine + BM25 + fusion + snippets)"
        )
    print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
