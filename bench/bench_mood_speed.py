"""Benchmark: messages per second of `MoodModel.score_many` with the embedding head and the
fine-tuned layer, with the head and no layer, and without embeddings (the n-gram model alone),
next to VADER alone.

    python bench/bench_mood_speed.py [--data PATH] [--repeat 3] [--embedded 2000]

Texts: the GoEmotions dev texts (`goemotions/dev.tsv` under the data folder, default
`../shared/data` next to the repo). Prints the load time in a fresh process (imports plus
weights; with the embedding head, plus the bundled embedding model's ONNX session), then:
- the n-gram model alone on all texts repeated to about 20,000, one `score_many` call: the
  first call (cold word cache) and the median of the following ones;
- with the embedding head on the first `--embedded` distinct texts (every text embedded by the
  real embedder, no cache; the model's own cache of recent moods is bypassed by a fresh model
  per run), the median of `--repeat` runs;
- a window as an assembly scores it afresh: 60 messages, median milliseconds;
- VADER's `polarity_scores` alone on the 20,000 texts.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data"
TARGET = 20_000
WINDOW = 60
# The project is not necessarily installed: import `assembler` from this checkout.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs after the first")
    parser.add_argument("--embedded", type=int, default=2000, help="texts for the embedding run")
    args = parser.parse_args(argv)

    path = args.data / "goemotions" / "dev.tsv"
    if not path.is_file():
        print(
            f"skipped: no development data under {args.data} (goemotions/dev.tsv). Put the "
            "data folder there (see training/README.md), or pass --data PATH"
        )
        return 0
    with path.open(encoding="utf-8") as handle:
        base = [line.split("\t", 1)[0] for line in handle]
    texts = base * max(1, round(TARGET / len(base)))
    distinct = list(dict.fromkeys(base))[: args.embedded]
    chars = sum(len(t) for t in texts) / len(texts)
    print(f"data: {path}: {len(base)} texts x {len(texts) // len(base)} = {len(texts)} texts")
    print(f"      mean length {chars:.0f} characters; {len(distinct)} distinct ones embedded")

    def fresh_load(embedding: bool) -> float:
        load = (
            "load_mood_model(embedder=load_embedder('bundled'))"
            if embedding
            else "load_mood_model()"
        )
        probe = (
            "import time; t = time.perf_counter(); "
            "from assembler.mood.model import load_mood_model; "
            "from assembler.memory.embeddings import load_embedder; "
            f"m = {load}; m.score('hi there!'); print(time.perf_counter() - t)"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
        )
        return float(done.stdout.strip().splitlines()[-1])

    from assembler.memory.embeddings import load_embedder
    from assembler.mood.model import DEFAULT_MODEL_PATH, MoodModel, load_mood_model
    from assembler.mood.semantic import DEFAULT_SEMANTIC_PATH

    cold_ngram, cold_embedding = fresh_load(False), fresh_load(True)
    started = time.perf_counter()
    ngram = MoodModel.from_file(DEFAULT_MODEL_PATH)
    load = time.perf_counter() - started
    sizes = DEFAULT_MODEL_PATH.stat().st_size, DEFAULT_SEMANTIC_PATH.stat().st_size
    print(f"model: {DEFAULT_MODEL_PATH} ({sizes[0] / 1e6:.2f} MB) and")
    print(f"       {DEFAULT_SEMANTIC_PATH} ({sizes[1] / 1e3:.0f} KB)")
    print(
        f"load in a fresh process, first score included: n-gram {cold_ngram * 1000:.0f} ms, "
        f"with the embedding head {cold_embedding * 1000:.0f} ms; n-gram weights alone "
        f"{load * 1000:.0f} ms"
    )

    def rate(run: Callable[[], object], n: int) -> float:
        started = time.perf_counter()
        run()
        return n / (time.perf_counter() - started)

    first = rate(lambda: ngram.score_many(texts), len(texts))
    ours = statistics.median(
        rate(lambda: ngram.score_many(texts), len(texts)) for _ in range(args.repeat)
    )
    embedder = load_embedder("bundled")
    shared = load_mood_model(embedder=embedder)
    if not shared.reads_embeddings:
        raise SystemExit(f"the mood model does not read embeddings ({shared.embedder_failed})")

    def embedded_model(layer: bool = True) -> MoodModel:
        # a fresh model: nothing recalled from the recent moods of an earlier run; with the
        # fine-tuned layer (as an assembly reads) or without (an export without hidden states)
        return MoodModel(
            ngram.weights,
            semantic=shared.semantic,
            embedder=embedder,
            layer=shared.layer if layer else None,
        )

    embedded_model().score_many(distinct[:64])  # the ONNX session's first run is slow
    with_embedding = statistics.median(
        rate(lambda: embedded_model().score_many(distinct), len(distinct))
        for _ in range(args.repeat)
    )
    head_only = statistics.median(
        rate(lambda: embedded_model(layer=False).score_many(distinct), len(distinct))
        for _ in range(args.repeat)
    )
    windows = [distinct[i : i + WINDOW] for i in range(0, WINDOW * args.repeat, WINDOW)]
    window_ms = statistics.median(
        1000 * WINDOW / rate(lambda w=w: embedded_model().score_many(w), WINDOW)  # type: ignore[misc]
        for w in windows
    )
    ngram_window_ms = statistics.median(
        1000 * WINDOW / rate(lambda w=w: MoodModel(ngram.weights).score_many(w), WINDOW)  # type: ignore[misc]
        for w in windows
    )
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    vader = SentimentIntensityAnalyzer()
    polarity = vader.polarity_scores
    alone = statistics.median(
        rate(lambda: [polarity(t) for t in texts], len(texts)) for _ in range(args.repeat)
    )
    print()
    print(f"{'':<44}{'messages/s':>12}")
    print(f"{'n-gram alone, score_many, first call':<44}{first:12,.0f}")
    print(f"{'n-gram alone, score_many, median':<44}{ours:12,.0f}")
    print(f"{'with embeddings and the layer, median':<44}{with_embedding:12,.0f}")
    print(f"{'with embeddings, no layer, median':<44}{head_only:12,.0f}")
    print(f"{'VADER polarity_scores alone':<44}{alone:12,.0f}")
    print(
        f"a window of {WINDOW} messages scored afresh: {window_ms:.0f} ms with the embedding "
        f"head, {ngram_window_ms:.0f} ms without"
    )
    print(f"ratio: with embedding / without = {with_embedding / ours:.3f}")
    print(f"ratio: with the layer / without it = {with_embedding / head_only:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
