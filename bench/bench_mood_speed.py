"""Benchmark: messages per second of `MoodModel.score_many`, next to VADER alone.

    python bench/bench_mood_speed.py [--data PATH] [--repeat 3]

Texts: all GoEmotions dev texts (`goemotions/dev.tsv` under the data folder, default
`../shared/data` next to the repo), repeated to about 20,000. Prints the model's load time (in a
fresh process: imports plus weights; and the weights alone), then the throughput of one
`score_many` call over all texts, the first call (cold word cache) and the median of the
following ones, and VADER's `polarity_scores` alone on the same texts, with the ratio.
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
# The project is not necessarily installed: import `assembler` from this checkout.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs after the first")
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
    chars = sum(len(t) for t in texts) / len(texts)
    print(f"data: {path}: {len(base)} texts x {len(texts) // len(base)} = {len(texts)} texts")
    print(f"      mean length {chars:.0f} characters")

    probe = (
        "import time; t = time.perf_counter(); "
        "from assembler.mood.model import load_mood_model; load_mood_model(); "
        "print(time.perf_counter() - t)"
    )
    cold = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    from assembler.mood.model import DEFAULT_MODEL_PATH, MoodModel

    started = time.perf_counter()
    model = MoodModel.from_file(DEFAULT_MODEL_PATH)
    load = time.perf_counter() - started
    size = DEFAULT_MODEL_PATH.stat().st_size
    print(f"model: {DEFAULT_MODEL_PATH} ({size / 1e6:.2f} MB)")
    print(f"load: {float(cold.stdout) * 1000:.0f} ms in a fresh process (imports + weights);")
    print(f"      {load * 1000:.0f} ms for the weights alone")

    def rate(run: Callable[[], object]) -> float:
        started = time.perf_counter()
        run()
        return len(texts) / (time.perf_counter() - started)

    first = rate(lambda: model.score_many(texts))
    ours = statistics.median(rate(lambda: model.score_many(texts)) for _ in range(args.repeat))
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    vader = SentimentIntensityAnalyzer()
    polarity = vader.polarity_scores
    alone = statistics.median(
        rate(lambda: [polarity(t) for t in texts]) for _ in range(args.repeat)
    )
    print()
    print(f"{'':<34}{'messages/s':>12}")
    print(f"{'MoodModel.score_many, first call':<34}{first:12,.0f}")
    print(f"{'MoodModel.score_many, median':<34}{ours:12,.0f}")
    print(f"{'VADER polarity_scores alone':<34}{alone:12,.0f}")
    print(f"ratio: ours / VADER alone = {ours / alone:.2f} (ours includes VADER)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
