"""Benchmark: parking observations and reading them back in slices vs whole.

Generates realistic tool output (deterministic, seeded): an application log of JSON lines
(timestamp, level, service, request id, method, path, status, latency, user agent; about one
line in forty an ERROR with a multi-line Python traceback), cut to 1 KB, 1 MB and 50 MB. For
each size it times, in a fresh store in a temporary folder:

- put: parking the observation (split into blocks, zstd, SQLite insert); the 1 KB one also
  as the pass-through it really is (under the 4096-byte threshold);
- slice reads: head, tail and range of 2000 characters in the middle, lines near the end,
  and grep of the tracebacks (which scans everything, one block at a time);
- grep as the store does it (`regex`, with a time limit on every line for a pattern with
  special characters, so that a backtracking pattern cannot hang it) against the same scan
  with plain `re` and no limit, for a literal and for a regular expression: what the limit
  costs;
- a full read, and the ratio full / range: what a slice saves over reading it whole;
- the stored size (compressed blocks, and the SQLite file) against the raw size.

    python bench/bench_observations.py [--repeat 5] [--sizes 1KB,1MB,50MB]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    from assembler.observations.store import ObservationStore
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.observations.store import ObservationStore

SIZES = {"1KB": 1024, "1MB": 1024 * 1024, "50MB": 50 * 1024 * 1024}
PATHS = ["/api/v1/orders", "/api/v1/users/{id}", "/healthz", "/api/v1/search", "/login"]
SERVICES = ["api", "worker", "billing", "search"]
PATTERN = r"status\": 5\d\d"  # a regular expression: grep runs it under the time limit


def generate_log(size: int, seed: int = 7) -> str:
    """Return about `size` characters of JSON-lines application log, cut at a line end."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    second = 0
    while total < size:
        second += rng.randint(0, 2)
        stamp = (
            f"2026-04-26T{10 + second // 3600 % 12:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
        )
        error = rng.random() < 0.025
        status = 500 if error else rng.choice([200, 200, 200, 201, 204, 301, 404])
        path = rng.choice(PATHS).replace("{id}", str(rng.randint(1, 99999)))
        minor = rng.randint(0, 20)
        line = (
            f'{{"ts": "{stamp}", "level": "{"ERROR" if error else "INFO"}", '
            f'"service": "{rng.choice(SERVICES)}", "request_id": "{rng.getrandbits(64):016x}", '
            f'"method": "{rng.choice(["GET", "POST", "PUT"])}", "path": "{path}", '
            f'"status": {status}, "latency_ms": {rng.expovariate(1 / 40):.1f}, '
            f'"ua": "Mozilla/5.0 (X11; Linux x86_64) client/{rng.randint(1, 9)}.{minor}"}}\n'
        )
        if error:
            line += (
                "Traceback (most recent call last):\n"
                f'  File "/srv/app/handlers.py", line {rng.randint(10, 900)}, in handle\n'
                "    result = await service.process(request)\n"
                f'  File "/srv/app/db.py", line {rng.randint(10, 400)}, in execute\n'
                "    raise DatabaseError(f'connection reset by peer after {elapsed} ms')\n"
                f"DatabaseError: connection reset by peer after {rng.randint(100, 9000)} ms\n"
            )
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def median_ms(action: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run(label: str, size: int, repeat: int, folder: Path) -> None:
    text = generate_log(size)
    raw = len(text.encode("utf-8"))
    store = ObservationStore(folder / f"{label}.sqlite")
    store.start_turn("bench")
    rounds = repeat if size <= SIZES["1MB"] else max(1, repeat // 3)
    print(f"\n{label}: {raw:,} bytes, {text.count(chr(10)):,} lines")
    if raw <= store.threshold_bytes:
        passed = median_ms(lambda: store.put({"content": text}), repeat)
        print(f"  put (under the threshold: passes through unchanged)  {passed:9.3f} ms")
    ids: list[str] = []
    put = median_ms(
        lambda: ids.append(store.put({"content": text}, force=True)["scratchpad_id"]), rounds
    )
    entry_id = ids[-1]
    middle = len(text) // 2
    lines = text.count("\n")
    reads = {
        "head 2000": lambda: store.read(entry_id, "head"),
        "tail 2000": lambda: store.read(entry_id, "tail"),
        "range 2000 (middle)": lambda: store.read(entry_id, "range", start=middle, n=2000),
        "lines 20 (near the end)": lambda: store.read(
            entry_id, "lines", start=max(1, lines - 30), n=20
        ),
        "grep DatabaseError": lambda: store.read(
            entry_id, "grep", pattern="DatabaseError", context=0, max_matches=50
        ),
        f"grep {PATTERN}": lambda: store.read(
            entry_id, "grep", pattern=PATTERN, context=0, max_matches=50
        ),
        "full": lambda: store.read(entry_id, "full"),
    }
    print(f"  put (parked)                                         {put:9.3f} ms")
    timings = {name: median_ms(read, rounds) for name, read in reads.items()}
    for name, ms in timings.items():
        print(f"  read {name:<48}{ms:9.3f} ms")
    ratio = timings["full"] / timings["range 2000 (middle)"]
    print(f"  full read / range read: ratio {ratio:,.1f}")
    entry = store.get(entry_id)
    for pattern, how in (("DatabaseError", "no limit: a literal"), (PATTERN, "time limit")):
        plain = re.compile(pattern)

        def grep_with_re(plain: re.Pattern[str] = plain) -> int:
            return sum(1 for line in store._lines(entry) if plain.search(line))

        unlimited = median_ms(grep_with_re, rounds)
        ours = timings[f"grep {pattern}"]
        print(
            f"  grep {pattern} with regex ({how}) {ours:.3f} ms vs plain re {unlimited:.3f} ms:"
            f" ratio {ours / unlimited:.2f}"
        )
    (stored,) = store._db.execute(
        "SELECT SUM(LENGTH(data)) FROM blocks WHERE entry_id = ?", (entry_id,)
    ).fetchone()
    print(
        f"  stored: {stored:,} bytes of blocks for {raw:,} raw ({stored / raw:.1%}); "
        f"SQLite file with {len(ids)} copies: {store.stored_bytes():,} bytes"
    )
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(SIZES))
    args = parser.parse_args()
    print("data: generated JSON-lines application log with Python tracebacks (seed 7)")
    with tempfile.TemporaryDirectory() as folder:
        for label in args.sizes.split(","):
            run(label, SIZES[label], args.repeat, Path(folder))


if __name__ == "__main__":
    main()
