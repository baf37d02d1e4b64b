"""Benchmark: one long human message through the whole assembly costs what a bounded part of it
costs, in time and in memory.

    python bench/bench_long_message.py [--sizes 20K,200K,2M,50M] [--repeat 5] [--model bundled]

Data (synthetic, seeded): a generic JSONL transcript in a temporary workspace with two short
messages and then one human message of the given size, built as people paste logs into chats:
an opening sentence in the human's words ("the payments api keeps timing out ..."), a pasted
gateway log of generated lines (ISO time, level, pod, request id, upstream, latency and one of
eight messages; the numbers are random, so most tokens are distinct, as in a real log), and a
closing question ("why does it keep timing out ... asap"). The workspace has three memory
notes; `memory.model` is the bundled all-MiniLM-L6-v2 unless --model says otherwise.

For each size and repeat, a fresh process loads the config, runs one warm-up assembly on a short
transcript (so the mood model, the embedding model and the memory index are loaded and built),
then times a dry run (`run_once(config, now=..., dry_run=True)`) on the transcript with the
long message: transcript file on disk -> read_recent -> mood -> active context -> recall
queries and memory search -> routing -> render. Memory is the peak resident memory during
that assembly minus the resident memory before it: Linux's high-water mark (VmHWM) is reset
just before (`/proc/self/clear_refs`), so what the warm-up once used does not hide what the
long message costs. The transcripts are
written by this process, so building them is not counted. The child then times each stage
alone on the same messages (the mood with a fresh model, so uncached). The whole assembly
includes embedding up to six queries with all-MiniLM-L6-v2 on the CPU, whose time varies
most on a busy machine: the minimum is the steadier figure.

Two comparisons in one run: the time of each size over the time of the smallest (bounded:
about 1), and scoring a message of the smallest size with `MoodModel.score` (which reads its
head and tail) against VADER's `polarity_scores` on the whole text (what scoring cost before),
for the log-paste message above and for a chat-style one (sentences with sentiment words, drawn
at random from a fixed list: VADER's cost grows with the square of such text).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.hosts.registry import HOSTS

REPO = Path(__file__).resolve().parent.parent
# The project is not necessarily installed: import `assembler` from this checkout.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

NOW = datetime.fromisoformat("2026-03-02T14:25:00+11:00")
TARGET_S = 2.0  # at the largest size, for the whole assembly
TARGET_MB = 300.0
SIZES = {"K": 1000, "M": 1000 * 1000}
OPENING = (
    "the payments api keeps timing out since this morning's deploy. I rolled it back but it "
    "still fails and I'm getting really frustrated, here is the log from the gateway:\n"
)
CLOSING = (
    "\nwhy does it keep timing out even after the rollback? I need this fixed asap, "
    "the demo is at 3pm"
)
LOG_MESSAGES = (
    "upstream request timeout",
    "retrying request",
    "connection reset by peer",
    "circuit breaker open",
    "health check failed",
    "slow response from upstream",
    "request completed",
    "pool exhausted, waiting for a connection",
)


SENTENCES = (
    "this is awful and I hate it",
    "great, it works now, thanks a lot",
    "but the deploy is still broken",
    "I'm so frustrated with this terrible flaky test",
    "nice work, really good progress",
    "why does it fail again?",
)


def parse_size(text: str) -> int:
    """Given '20K', '2M' or '5000', return the number of characters."""
    unit = SIZES.get(text[-1].upper())
    return int(float(text[:-1]) * unit) if unit else int(text)


def long_message(size: int, seed: int = 11) -> str:
    """Given a size in characters, return a human message of that size: words, log, question."""
    rng = random.Random(seed)
    room = size - len(OPENING) - len(CLOSING)
    lines: list[str] = []
    used = 0
    start = NOW - timedelta(hours=2)
    while used < room:
        at = start + timedelta(milliseconds=used)
        line = (
            f"{at:%Y-%m-%dT%H:%M:%S}.{rng.randrange(1000):03d}Z "
            f"{rng.choice(('INFO', 'WARN', 'ERROR'))} gateway-{rng.randrange(16**5):05x} "
            f"req={rng.randrange(16**12):012x} upstream=payments-{rng.randrange(40)}.svc:8443 "
            f'latency={rng.randrange(5, 30000)}ms msg="{rng.choice(LOG_MESSAGES)}"'
        )
        lines.append(line)
        used += len(line) + 1
    paste = "\n".join(lines)[: max(room, 0)]
    return OPENING + paste + CLOSING


def chat_message(size: int, seed: int = 5) -> str:
    """Given a size in characters, return a chat-style message: sentences with sentiment words."""
    rng = random.Random(seed)
    sentences: list[str] = []
    used = 0
    while used < size:
        sentences.append(rng.choice(SENTENCES) + ".")
        used += len(sentences[-1]) + 1
    return " ".join(sentences)[:size]


def write_transcript(path: Path, long_text: str | None) -> int:
    """Given a path and the long message (None: a short chat only), write a generic JSONL
    transcript; return its size in bytes."""
    lines = [
        ("user", "morning! the payments deploy went out at 9, keep an eye on it", 50),
        ("assistant", "Will do. The rollout finished and all pods are Ready.", 49),
    ]
    if long_text is not None:
        lines.append(("user", long_text, 2))
    else:
        lines.append(("user", "it is timing out again, can you check the gateway?", 2))
    with path.open("w", encoding="utf-8") as handle:
        for role, text, minutes in lines:
            stamp = (NOW - timedelta(minutes=minutes)).isoformat()
            handle.write(json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n")
    return path.stat().st_size


def make_workspace(folder: Path, model: str) -> Path:
    workspace = folder / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "payments.md").write_text(
        "# Payments api\n\nThe gateway times out when the payments pool is exhausted; raise "
        "pool_size in values.yaml and restart the gateway.\n"
    )
    (workspace / "memory" / "garden.md").write_text("# Garden\n\nTomatoes need staking.\n")
    (workspace / "memory" / "2026-03-02.md").write_text("# 2026-03-02\n\n- 09:00 deploy\n")
    (workspace / "chat").mkdir()
    (workspace / "warmup").mkdir()
    (workspace / "assembler.toml").write_text(
        f'[transcripts]\nsources = ["chat/*.jsonl"]\n[memory]\nmodel = "{model}"\n'
        '[time]\ntimezone = "Australia/Sydney"\n'
    )
    write_transcript(workspace / "warmup" / "chat.jsonl", None)
    return workspace


def _status_mb(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status")


def start_peak() -> float:
    """Reset the peak resident memory to the current one; return the current one in MB."""
    gc.collect()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")  # 5: reset the high-water mark of the resident set (Linux 4.0+)
    return _status_mb("VmRSS")


def child(workspace: Path) -> None:
    """Warm up, time one assembly of the long transcript, then each stage; print JSON."""
    from assembler.assembly.pipeline import run_once
    from assembler.assembly.routing import route
    from assembler.config.files import load_config
    from assembler.context.active import active_context
    from assembler.memory.recall import conversation_queries
    from assembler.mood.model import DEFAULT_MODEL_PATH, MoodModel, analyze
    from assembler.transcripts.read import read_recent

    config = load_config(workspace)
    run_once(
        config,
        now=NOW,
        transcript_globs=[str(workspace / "warmup" / "chat.jsonl")],
        hosts=HOSTS,
        dry_run=True,
    )
    before = start_peak()
    started = time.perf_counter()
    assembly = run_once(config, now=NOW, hosts=HOSTS, dry_run=True)
    took = time.perf_counter() - started
    rise = _status_mb("VmHWM") - before
    assert assembly.measured.messages_read == 3, assembly.measured.messages_read

    stages: dict[str, float] = {}

    def timed(name: str, run: Callable[[], Any]) -> Any:
        began = time.perf_counter()
        result = run()
        stages[name] = time.perf_counter() - began
        return result

    read = timed(
        "read",
        lambda: read_recent(
            config.transcripts.sources,
            base=config.workspace,
            now=NOW,
            max_messages=config.transcripts.max_messages,
            lookback=config.transcripts.lookback_delta,
            hosts=HOSTS,
        ),
    )
    messages = read.messages
    fresh = MoodModel.from_file(DEFAULT_MODEL_PATH)
    half_life = config.mood.half_life_delta
    timed("mood", lambda: analyze(messages, now=NOW, half_life=half_life, model=fresh))
    timed("context", lambda: active_context(messages, [], now=NOW, half_life=half_life))
    timed("queries", lambda: conversation_queries(messages, max_messages=6))
    timed(
        "routing",
        lambda: route([m.text for m in messages], lengths=[m.length for m in messages]),
    )
    kept = max(len(m.text) for m in messages)
    print(json.dumps({"seconds": took, "rise_mb": rise, "stages": stages, "kept": kept}))


def run_child(workspace: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(workspace)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20K,200K,2M,50M", help="message sizes (characters)")
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per size")
    parser.add_argument("--model", default="bundled", help="memory.model (bundled or none)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child)
        return 0

    sizes = [parse_size(s) for s in args.sizes.split(",")]
    print("Long-message benchmark: one human message through a dry run of the assembly")
    print(
        "data: synthetic generic JSONL (2 short messages + 1 long one: the human's opening "
        "sentence, a pasted gateway log of random-number lines, a closing question)"
    )
    print(f"memory.model = {args.model!r}; {args.repeat} fresh process(es) per size, each warmed")
    print()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-long-message-") as folder:
        workspace = make_workspace(Path(folder), args.model)
        for size in sizes:
            line_bytes = write_transcript(workspace / "chat" / "chat.jsonl", long_message(size))
            results = [run_child(workspace) for _ in range(args.repeat)]
            rows.append((size, line_bytes, results))

    header = (
        f"{'message':>10} {'file':>10} {'assemble':>9} {'min':>7} {'max':>7} {'peak +':>9} "
        f"{'kept':>6} | {'read':>6} {'mood':>6} {'context':>7} {'queries':>7} {'routing':>7}"
    )
    print(header)
    units = f"{'(chars)':>10} {'(bytes)':>10} {'(ms)':>9} {'(ms)':>7} {'(ms)':>7} {'(MB)':>9}"
    print(f"{units} {'chars':>6} | {'(ms, median of each stage alone)':>38}")
    medians: dict[int, float] = {}
    rises: dict[int, float] = {}
    for size, line_bytes, results in rows:
        seconds = [r["seconds"] for r in results]
        rise = max(r["rise_mb"] for r in results)
        medians[size], rises[size] = statistics.median(seconds), rise
        stage = {
            name: statistics.median(r["stages"][name] for r in results)
            for name in ("read", "mood", "context", "queries", "routing")
        }
        kept = results[0]["kept"]
        print(
            f"{size:>10,} {line_bytes:>10,} {medians[size] * 1000:>9.0f} "
            f"{min(seconds) * 1000:>7.0f} {max(seconds) * 1000:>7.0f} {rise:>9.1f} {kept:>6,} | "
            f"{stage['read'] * 1000:>6.1f} {stage['mood'] * 1000:>6.1f} "
            f"{stage['context'] * 1000:>7.1f} {stage['queries'] * 1000:>7.1f} "
            f"{stage['routing'] * 1000:>7.1f}"
        )
    print("peak +: the largest over the repeats of the peak RSS during the assembly minus the")
    print("RSS before it; kept chars: the longest Message.text the readers kept.")
    print()

    small, large = sizes[0], max(sizes)
    for size in sizes[1:]:
        print(
            f"ratio time {size:,} / {small:,} chars: {medians[size] / medians[small]:.2f} "
            f"(message {size / small:,.0f}x longer)"
        )
    verdict = "OK" if medians[large] < TARGET_S and rises[large] < TARGET_MB else "OVER TARGET"
    print(
        f"at {large:,} chars: {medians[large]:.2f} s median, {rises[large]:.0f} MB peak RSS rise "
        f"(target < {TARGET_S:.0f} s and < {TARGET_MB:.0f} MB) {verdict}"
    )

    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    from assembler.mood.model import load_mood_model

    model = load_mood_model()
    model.score("warm up the word cache, please")
    vader = SentimentIntensityAnalyzer()
    print()
    for name, text in (("log-paste", long_message(small)), ("chat-style", chat_message(small))):
        began = time.perf_counter()
        model.score(text)
        ours = time.perf_counter() - began
        began = time.perf_counter()
        vader.polarity_scores(text)
        whole = time.perf_counter() - began
        print(
            f"scoring one {small:,}-char {name} message: MoodModel.score {ours * 1000:.1f} ms, "
            f"VADER on the whole text {whole * 1000:.0f} ms (VADER / ours = {whole / ours:.0f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
