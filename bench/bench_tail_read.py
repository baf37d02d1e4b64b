"""Benchmark: reading the last messages of a transcript costs the tail, not the file size.

Generates a ~1 MB and a ~1 GB OpenClaw session JSONL of realistic entries (user prompts,
assistant turns with thinking and tool calls, tool results, replies, heartbeats, custom
entries), times `read_recent(..., max_messages=200, lookback=None)` on each and prints the
medians and their ratio (target: big/small <= 2.0).

    python bench/bench_tail_read.py [--big-gb 1.0] [--repeat 7] [--cache-dir DIR]

Files go to a temporary folder deleted afterwards, unless --cache-dir names a folder where
they are kept and reused by later runs. The timings are with a warm page cache (the files were
just written, or read by the warm-up run): they measure the work the reader does, which is
what grows with the file size when a reader is not reading from the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from assembler.hosts.registry import HOSTS

try:
    from assembler.transcripts.read import TranscriptRead, read_recent
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.transcripts.read import TranscriptRead, read_recent

MAX_MESSAGES = 200
TARGET_RATIO = 2.0
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
# Bump when the generated content changes, so cached files are regenerated.
GENERATOR_VERSION = 1

PROMPTS = [
    "why is the deploy failing again? it worked yesterday and nobody touched the manifests",
    "can you check the logs for the api pod and tell me what broke",
    "ok that makes sense. please retag the image and roll it out to staging first",
    "ugh, still failing. this is the third time today, I need this fixed before the demo",
    "thanks! can you also write a short note in the daily log about what happened",
    "what's on my calendar this afternoon? and remind me to call the landlord",
]
THOUGHTS = [
    "The user wants the deploy fixed. Check pod status and recent events first, then logs.",
    "Likely an image tag mismatch; compare the manifest tag with the registry tags.",
]
COMMANDS = [
    "kubectl get pods -n prod -l app=api",
    "kubectl logs deploy/api -n prod --tail=200",
    "git log --oneline -n 20 -- deploy/",
]
OUTPUT_LINE = '2026-03-01T09:14:58Z api-7c9f8 level=error msg=\\"pull failed\\" image=api:v2.14.3'
REPLIES = [
    "The pods are in ImagePullBackOff: the manifest points at api:v2.14.3, which was never "
    "pushed. The last successful build is v2.14.2. I can retag or roll back; rolling back is "
    "the quicker fix and keeps staging untouched.",
    "Done: staging runs v2.14.2 again and all three pods are Ready. I added a line to today's "
    "notes with the cause (missing image tag) and the fix. Nothing else in the logs looks off.",
    "You have a design review at 14:00 and a 1:1 at 16:30. I set a reminder for 17:15 to call "
    "the landlord.",
]


def _quoted(texts: list[str]) -> list[str]:
    return [json.dumps(t) for t in texts]


def generate(path: Path, target_bytes: int) -> tuple[int, int]:
    """Given a path and a size, write an OpenClaw session of about that size.

    Return (bytes written, lines written). Lines are formatted from pre-escaped pieces and
    written in large chunks, so a gigabyte takes seconds, not minutes.
    """
    prompts, thoughts, commands, replies = (
        _quoted(PROMPTS),
        _quoted(THOUGHTS),
        _quoted(COMMANDS),
        _quoted(REPLIES),
    )
    output = json.dumps("\n".join([OUTPUT_LINE] * 12))
    written = 0
    lines = 0
    counter = 0
    at = START
    parent = "null"

    def entry_id() -> str:
        nonlocal counter
        counter += 1
        return f"{counter:08x}"

    def stamp(step_ms: int) -> tuple[str, int]:
        nonlocal at
        at += timedelta(milliseconds=step_ms)
        epoch_ms = int(at.timestamp() * 1000)
        return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z", epoch_ms

    def cycle(n: int) -> Iterator[str]:
        nonlocal parent
        if n % 50 == 0:
            iso, _ = stamp(10)
            new = entry_id()
            yield (
                f'{{"type":"custom","customType":"model-snapshot","data":{{"provider":"anthropic",'
                f'"modelApi":"anthropic-messages","modelId":"claude-opus-4-6"}},"id":"{new}",'
                f'"parentId":{parent},"timestamp":"{iso}"}}'
            )
            parent = f'"{new}"'
        if n % 40 == 7:
            for role, body in (
                (
                    "user",
                    '"Read HEARTBEAT.md if it exists. If nothing needs attention, reply '
                    'HEARTBEAT_OK."',
                ),
                ("assistant", '[{"type":"text","text":"HEARTBEAT_OK"}]'),
            ):
                iso, epoch = stamp(1_800_000 if role == "user" else 2_000)
                new = entry_id()
                yield (
                    f'{{"type":"message","id":"{new}","parentId":{parent},"timestamp":"{iso}",'
                    f'"message":{{"role":"{role}","content":{body},"timestamp":{epoch}}}}}'
                )
                parent = f'"{new}"'
        iso, epoch = stamp(45_000)
        new = entry_id()
        yield (
            f'{{"type":"message","id":"{new}","parentId":{parent},"timestamp":"{iso}",'
            f'"message":{{"role":"user","content":[{{"type":"text","text":'
            f'{prompts[n % len(prompts)]}}}],"timestamp":{epoch}}}}}'
        )
        parent = f'"{new}"'
        iso, epoch = stamp(4_200)
        new = entry_id()
        yield (
            f'{{"type":"message","id":"{new}","parentId":{parent},"timestamp":"{iso}",'
            f'"message":{{"role":"assistant","content":[{{"type":"thinking","thinking":'
            f'{thoughts[n % len(thoughts)]}}},{{"type":"toolCall","id":"toolu_{n:06d}",'
            f'"name":"exec","arguments":{{"command":{commands[n % len(commands)]}}}}}],'
            f'"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-6",'
            f'"usage":{{"input":2775,"output":141,"cacheRead":18000,"totalTokens":20916}},'
            f'"stopReason":"toolUse","timestamp":{epoch}}}}}'
        )
        parent = f'"{new}"'
        iso, epoch = stamp(900)
        new = entry_id()
        yield (
            f'{{"type":"message","id":"{new}","parentId":{parent},"timestamp":"{iso}",'
            f'"message":{{"role":"toolResult","toolCallId":"toolu_{n:06d}","toolName":"exec",'
            f'"content":[{{"type":"text","text":{output}}}],"isError":false,'
            f'"timestamp":{epoch}}}}}'
        )
        parent = f'"{new}"'
        iso, epoch = stamp(6_100)
        new = entry_id()
        yield (
            f'{{"type":"message","id":"{new}","parentId":{parent},"timestamp":"{iso}",'
            f'"message":{{"role":"assistant","content":[{{"type":"text","text":'
            f'{replies[n % len(replies)]}}}],"api":"anthropic-messages","provider":"anthropic",'
            f'"model":"claude-opus-4-6","usage":{{"input":3120,"output":96,"totalTokens":3216}},'
            f'"stopReason":"stop","timestamp":{epoch}}}}}'
        )
        parent = f'"{new}"'

    header = (
        '{"type":"session","version":3,"id":"0f6c2a1e-3b7d-4e8a-9c55-2d1f7e9a4b10",'
        f'"timestamp":"{START.strftime("%Y-%m-%dT%H:%M:%S.000Z")}",'
        '"cwd":"/home/u/.openclaw/workspace"}\n'
    )
    with path.open("w", encoding="utf-8") as file:
        file.write(header)
        written += len(header)
        lines += 1
        chunk: list[str] = []
        chunk_bytes = 0
        n = 0
        while written + chunk_bytes < target_bytes:
            for line in cycle(n):
                chunk.append(line)
                chunk.append("\n")
                chunk_bytes += len(line) + 1
                lines += 1
            n += 1
            if chunk_bytes >= 16 * 1024 * 1024:
                file.write("".join(chunk))
                written += chunk_bytes
                chunk, chunk_bytes = [], 0
        file.write("".join(chunk))
        written += chunk_bytes
    return written, lines


def ensure_file(folder: Path, name: str, target_bytes: int) -> tuple[Path, float | None]:
    """Given a folder, return a generated file of about `target_bytes` and how long it took
    to generate (None when a cached one was reused)."""
    path = folder / f"{name}-v{GENERATOR_VERSION}-{target_bytes}.jsonl"
    if path.exists() and path.stat().st_size >= target_bytes:
        return path, None
    started = time.perf_counter()
    generate(path, target_bytes)
    return path, time.perf_counter() - started


def time_read(path: Path, repeat: int) -> tuple[list[float], TranscriptRead]:
    """Given a transcript, return the wall times of `repeat` reads (after a warm-up)."""

    def once() -> TranscriptRead:
        return read_recent(
            [str(path)],
            base=path.parent,
            now=START + timedelta(days=3650),
            max_messages=MAX_MESSAGES,
            lookback=None,
            hosts=HOSTS,
        )

    result = once()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = once()
        times.append(time.perf_counter() - started)
    return times, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-gb", type=float, default=1.0, help="size of the big file in GB")
    parser.add_argument("--small-mb", type=float, default=1.0, help="size of the small file")
    parser.add_argument("--repeat", type=int, default=7, help="timed reads per file")
    parser.add_argument("--cache-dir", type=Path, help="keep and reuse the generated files here")
    args = parser.parse_args(argv)

    small_bytes = int(args.small_mb * 1024 * 1024)
    big_bytes = int(args.big_gb * 1024 * 1024 * 1024)
    temporary = None
    if args.cache_dir is not None:
        folder = args.cache_dir
        folder.mkdir(parents=True, exist_ok=True)
    else:
        temporary = tempfile.TemporaryDirectory(prefix="bench-tail-read-")
        folder = Path(temporary.name)
    try:
        free = shutil.disk_usage(folder).free
        if free < big_bytes * 1.2:
            print(
                f"Not enough disk space in {folder}: need {big_bytes * 1.2 / 2**30:.1f} GiB, "
                f"have {free / 2**30:.1f} GiB. Use --big-gb or --cache-dir."
            )
            return 0
        print(
            f"Transcript tail-read benchmark: read_recent(max_messages={MAX_MESSAGES}, "
            "lookback=None) on an OpenClaw JSONL session"
        )
        print(f"Files in {folder}{' (temporary)' if temporary else ' (cached)'}")
        rows = []
        for name, size in (("small", small_bytes), ("big", big_bytes)):
            path, took = ensure_file(folder, f"openclaw-{name}", size)
            made = f"generated in {took:.1f} s" if took is not None else "reused from cache"
            actual = path.stat().st_size
            print(f"  {name:5s} {path.name}: {actual / 2**20:,.1f} MiB, {made}")
            times, result = time_read(path, args.repeat)
            rows.append((name, actual, times, result))

        print()
        print(
            f"{'file':5s} {'size':>12s} {'median':>10s} {'min':>10s} {'max':>10s} "
            f"{'messages':>9s} {'bytes read':>12s} {'bad lines':>9s}"
        )
        for name, actual, times, result in rows:
            report = result.sources[0]
            print(
                f"{name:5s} {actual / 2**20:>9,.1f} MiB {statistics.median(times) * 1000:>7.2f} ms "
                f"{min(times) * 1000:>7.2f} ms {max(times) * 1000:>7.2f} ms "
                f"{len(result.messages):>9d} {report.bytes_read:>12,d} {report.bad_lines:>9d}"
            )
        small_median = statistics.median(rows[0][2])
        big_median = statistics.median(rows[1][2])
        ratio = big_median / small_median
        verdict = "OK" if ratio <= TARGET_RATIO else "OVER TARGET"
        print()
        print(
            f"ratio big/small (median of {args.repeat}): {ratio:.2f} "
            f"(target <= {TARGET_RATIO:.1f}) {verdict}"
        )
        print(f"size ratio big/small: {rows[1][1] / rows[0][1]:,.0f}x")
        return 0
    finally:
        if temporary is not None:
            temporary.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
