"""Benchmark: secret and personal-data scanning (`assembler.redact.scan`) and redaction take time
linear in the text, on the inputs that once made them quadratic; a long message costs what a
bounded part of it does; and what the rule set finds, against detect-secrets' plugins alone.

- pathological texts: one short unit repeated (`a%`, `x@a.`, `a.`, `1 `, `+1 `, `ab://`, a
  private key's BEGIN line, and the units aimed at the newer detectors and the library's
  patterns: `eyJ`, `//`, `hf_`, `pw: `, an END line, a written-out `\\n`, a marker's start,
  ...) that a backtracking pattern retries from every position; `scan` at 50K, 100K, 200K and
  400K characters. A quadratic pattern took tens of seconds at 200K (detect-secrets' npm
  pattern: 3 s at 40K of `//`, which is why it is not used); the target is under 3 s there,
  and about 2x per doubling;
- many matches: N e-mail addresses (`user{i}@mail{i % 97}.com`, space-separated, 4 MB at
  200,000), `scan` then `redact`, at 50,000, 100,000 and 200,000. Rebuilding the text once per
  match took 40 s to scan and minutes to redact at 200,000; the target is under 15 s for both;
- a long message (`transcripts.message.message_text`, what every reader keeps: redacted, head
  and tail): a pasted log with a private key and a token in it, 20K to 50M characters; the
  target is about the same time at every size (only the ends and a margin are redacted);
- the rules: the fake secrets of tests/test_hostile_secrets.py (one message per kind) and the
  non-secret corpus (tests/test_routing.py's technical texts and near misses, and every line
  of docs/ but safety.md, README.md and workspace-example/: our own prose, commands, logs and
  transcripts),
  read by detect-secrets' regular-expression plugins as the library ships them, by its
  entropy and keyword plugins, and by `assembler.redact.scan`: kinds found, lines flagged,
  time per MB of the non-secret corpus.

The tests (tests/test_routing.py, tests/test_hostile_secrets.py) check what these inputs give;
this measures how long, and how the rule set compares.

    python bench/bench_redact.py [--repeat 3] [--only time|long|rules]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
try:
    from assembler.redact import redact, scan
    from assembler.transcripts.message import message_text
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(ROOT))
    from assembler.redact import redact, scan
    from assembler.transcripts.message import message_text

UNITS = (
    "a%",
    "x@a.",
    "a.",
    "1 ",
    "+1 ",
    "ab://",
    "-----BEGIN RSA PRIVATE KEY-----",
    "eyJ",
    "//",
    "://a:",
    "hf_",
    "AIza.",
    "Q~",
    "pw: ",
    "my password is ",
    "-----END PRIVATE KEY-----\n",
    "A\\n",
    "QUJD\n",
    "[redacted ",
    "xoxb-1-,",
    "1234567890:",
    "private_key_id: ",
    "Private-Lines: 1\n",
)
SIZES = (50_000, 100_000, 200_000, 400_000)
ADDRESSES = (50_000, 100_000, 200_000)
LONG_SIZES = (20_000, 200_000, 2_000_000, 50_000_000)
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


def _timing(repeat: int) -> None:
    print("scan of a repeated unit, seconds by size (ratio: the last size over the one before)")
    print(f"{'unit':34s}" + "".join(f"{size // 1000:>8d}K" for size in SIZES) + "   ratio")
    worst = 0.0
    for unit in UNITS:
        texts = [unit * (size // len(unit)) for size in SIZES]
        times = [_best_s(partial(scan, [text]), repeat) for text in texts]
        worst = max(worst, times[SIZES.index(200_000)])
        cells = "".join(f"{t:9.3f}" for t in times)
        print(f"{unit!r:34s}{cells}   {times[-1] / times[-2]:5.2f}")
    verdict = "within" if worst <= PATHOLOGICAL_TARGET_S else "OVER"
    print(f"slowest at 200K: {worst:.3f} s ({verdict} the {PATHOLOGICAL_TARGET_S:.0f} s target)")

    print("\nscan and redact of N e-mail addresses, seconds")
    last = 0.0
    for count in ADDRESSES:
        text = " ".join(f"user{i}@mail{i % 97}.com" for i in range(count))
        scanned = _best_s(partial(scan, [text]), repeat)
        redacted = _best_s(partial(redact, text), repeat)
        size = f"{count:>9,d} ({len(text) / 1e6:4.1f} MB)"
        print(f"{size}: scan {scanned:6.3f}  redact {redacted:6.3f}")
        last = scanned + redacted
    verdict = "within" if last <= MANY_MATCHES_TARGET_S else "OVER"
    print(f"both at 200,000: {last:.3f} s ({verdict} the {MANY_MATCHES_TARGET_S:.0f} s target)")


def _paste(size: int, key: str, token: str) -> str:
    """Return a pasted log of about `size` characters with a key near its start and a token
    near its end, as people paste them into a chat."""
    line = "2026-03-02T21:40:11Z INFO api-7d9f8b6c4-x2x9k GET /orders 200 12ms\n"
    filler = line * (size // len(line) + 1)
    return f"the deploy fails, here is the log\n{key}\n{filler[:size]}\n{token} why?"


def _long(repeat: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_hostile_secrets import CORPUS

    key = next(s.text for s in CORPUS if s.kind == "RSA private key")
    token = next(s.text for s in CORPUS if s.kind == "GitHub token")
    print("\nmessage_text (redact, then keep the head and tail) of a pasted log, seconds")
    for size in LONG_SIZES:
        text = _paste(size, key, token)
        took = _best_s(partial(message_text, text), repeat)
        kept, _ = message_text(text)
        seen = ", ".join(f.label for f in scan([kept]))
        print(f"{len(text):>12,d} chars: {took:7.4f} s  (kept {len(kept):,d}; {seen})")


def _lines(paths: list[Path]) -> Iterator[str]:
    for path in paths:
        yield from (line for line in path.read_text(errors="replace").splitlines() if line.strip())


def _non_secrets() -> list[str]:
    """The non-secret corpus: the routing tests' technical texts and our own prose and logs."""
    source = (ROOT / "tests" / "test_routing.py").read_text()
    texts: list[str] = []
    for name in ("TECHNICAL_TEXTS", "NEAR_MISSES", "MORE_TECHNICAL_TEXTS"):
        found = re.search(rf"^{name} = (\[.*?\n\])", source, re.S | re.M)
        if found:
            texts += eval(found.group(1))  # our own test file: a list of string literals
    # docs/safety.md is left out: it quotes this rule set's own markers and figures.
    docs = [p for p in sorted(ROOT.glob("docs/*.md")) if p.name != "safety.md"]
    paths = [*docs, ROOT / "README.md"]
    paths += sorted(
        p for p in (ROOT / "workspace-example").rglob("*") if p.suffix in (".md", ".jsonl")
    )
    return texts + list(_lines(paths))


def _rules() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.settings import default_settings
    from test_hostile_secrets import CORPUS

    plain = _non_secrets()
    megabytes = sum(map(len, plain)) / 1e6
    print(
        f"\nthe rules: {len(CORPUS)} fake secrets of {len({s.label for s in CORPUS})} kinds; "
        f"{len(plain):,d} non-secret lines ({megabytes:.2f} MB)"
    )

    def measure(name: str, find: Callable[[str], bool]) -> None:
        found = [s.kind for s in CORPUS if find(s.text)]
        flagged = [line for line in plain if find(line)]
        took = _best_s(lambda: [find(line) for line in plain], 3)
        print(
            f"{name:44s} found {len(found):>2d}/{len(CORPUS)}   flagged {len(flagged):>4d} "
            f"lines   {took / megabytes:6.2f} s/MB"
        )
        for line in flagged[:3]:
            print(f"{'':46s}e.g. {line[:90]!r}")

    with default_settings():
        plugins = [plugin() for plugin in get_mapping_from_secret_type_to_class().values()]
        regex = [p for p in plugins if isinstance(p, RegexBasedDetector)]
        heuristic = [p for p in plugins if not isinstance(p, RegexBasedDetector)]

        def library(chosen: list[Any], text: str) -> bool:
            return any(
                next(iter(p.analyze_string(line)), None) is not None
                for p in chosen
                for line in text.split("\n")
            )

        measure("detect-secrets, its regex plugins", partial(library, regex))
        measure("detect-secrets, entropy and keyword plugins", partial(library, heuristic))
    measure("assembler.redact.scan", lambda text: any(f.kind == "secret" for f in scan([text])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timings of each (the least)")
    parser.add_argument("--only", choices=("time", "long", "rules"), help="one part alone")
    args = parser.parse_args()
    if args.only in (None, "time"):
        _timing(args.repeat)
    if args.only in (None, "long"):
        _long(args.repeat)
    if args.only in (None, "rules"):
        _rules()


if __name__ == "__main__":
    main()
