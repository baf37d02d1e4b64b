"""Benchmark: secret and personal-data scanning (`assembler.redact.scan`) and redaction take time
linear in the text, on the inputs that once made them quadratic.

- pathological texts: one short unit repeated (`a%`, `x@a.`, `a.`, `1 `, `+1 `, `ab://`, a
  private key's BEGIN line) that a backtracking pattern retries from every position; `scan`
  at 50K, 100K, 200K and 400K characters. A quadratic pattern took tens of seconds at 200K;
  the target is under 3 s there, and about 2x per doubling;
- many matches: N e-mail addresses (`user{i}@mail{i % 97}.com`, space-separated, 4 MB at
  200,000), `scan` then `redact`, at 50,000, 100,000 and 200,000. Rebuilding the text once per
  match took 40 s to scan and minutes to redact at 200,000; the target is under 15 s for both.

The tests (tests/test_routing.py) check what these inputs give; this measures how long.

    python bench/bench_redact.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

try:
    from assembler.redact import redact, scan
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.redact import redact, scan

UNITS = ("a%", "x@a.", "a.", "1 ", "+1 ", "ab://", "-----BEGIN RSA PRIVATE KEY-----")
SIZES = (50_000, 100_000, 200_000, 400_000)
ADDRESSES = (50_000, 100_000, 200_000)
PATHOLOGICAL_TARGET_S = 3.0  # at 200K characters
MANY_MATCHES_TARGET_S = 15.0  # scan and redact of 200,000 addresses


def _best_s(work: Callable[[], object], repeat: int) -> float:
    """Return the least of `repeat` timings of `work`, in seconds (the steadiest figure)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timings of each (the least)")
    args = parser.parse_args()

    print("scan of a repeated unit, seconds by size (ratio: the last size over the one before)")
    print(f"{'unit':34s}" + "".join(f"{size // 1000:>8d}K" for size in SIZES) + "   ratio")
    worst = 0.0
    for unit in UNITS:
        texts = [unit * (size // len(unit)) for size in SIZES]
        times = [_best_s(partial(scan, [text]), args.repeat) for text in texts]
        worst = max(worst, times[SIZES.index(200_000)])
        cells = "".join(f"{t:9.3f}" for t in times)
        print(f"{unit!r:34s}{cells}   {times[-1] / times[-2]:5.2f}")
    verdict = "within" if worst <= PATHOLOGICAL_TARGET_S else "OVER"
    print(f"slowest at 200K: {worst:.3f} s ({verdict} the {PATHOLOGICAL_TARGET_S:.0f} s target)")

    print("\nscan and redact of N e-mail addresses, seconds")
    last = 0.0
    for count in ADDRESSES:
        text = " ".join(f"user{i}@mail{i % 97}.com" for i in range(count))
        scanned = _best_s(partial(scan, [text]), args.repeat)
        redacted = _best_s(partial(redact, text), args.repeat)
        size = f"{count:>9,d} ({len(text) / 1e6:4.1f} MB)"
        print(f"{size}: scan {scanned:6.3f}  redact {redacted:6.3f}")
        last = scanned + redacted
    verdict = "within" if last <= MANY_MATCHES_TARGET_S else "OVER"
    print(f"both at 200,000: {last:.3f} s ({verdict} the {MANY_MATCHES_TARGET_S:.0f} s target)")


if __name__ == "__main__":
    main()
