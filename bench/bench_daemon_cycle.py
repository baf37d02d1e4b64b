"""Benchmark: one warm daemon cycle after a transcript line was added, next to a cold
`assemble --once`, on a workspace whose memory index holds about 5,000 chunks.

The workspace: a generic JSONL transcript and generated memory notes (760 daily
notes of short paragraphs about deploys, databases, the garden, ...) chunked small
(`memory.chunk_tokens = 48`) so that they make about 5,000 chunks, embedded once with the
bundled all-MiniLM-L6-v2 before timing (that takes minutes on 2 cores).

- warm: what the daemon does when a transcript changed: `run_once(..., memory=WarmMemory(
  watched=True))` in one process where the model, the mood model and the index are already
  loaded; before each timed run one human message is appended to the transcript, so the cycle
  reads it, re-scores the mood and embeds the new query (target: under 50 ms, query
  embedding included). The daemon watches the memory files, so this cycle does not stat them;
- warm with a memory check: the same after `files_changed()`, as on the daemon's scheduled
  runs and after a memory file event (every memory file is stat-ed; nothing changed);
- cold: `assemble --once` in a fresh process (imports, model load, index check).

The warm figures are wall time and the process's CPU time (all its threads): on a loaded
machine the wall time grows with the wait for a core and the disk, the CPU time stays what the
cycle costs. With `--baseline TREE` (a copy of another version, e.g. `git archive HEAD | tar -x
-C /tmp/head`) the same warm cycles run first with that version's code, on the same workspace
and index, in another process, and the two are printed side by side.

    python bench/bench_daemon_cycle.py [--runs 9] [--cold-runs 3] [--baseline TREE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

try:
    from assembler.assembly.pipeline import run_once
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.assembly.pipeline import run_once
from assembler.clock import local_timezone
from assembler.config.files import load_config
from assembler.hosts.registry import HOSTS
from assembler.memory.lifecycle import WarmMemory

TARGET_MS = 50.0
REPO = Path(__file__).resolve().parent.parent
TOPICS = {
    "deploy": "the api release {n} failed on the image tag; rolled back and re-tagged {v}",
    "database": "postgres replica {n} lagged {v} seconds after the vacuum; raised work_mem",
    "garden": "planted {n} tomato seedlings, staked the tall ones, watered {v} litres",
    "disk": "lab disk at {n}% after the docker build cache grew by {v} GB; pruned it",
    "family": "dinner with the kids at {n}, they want pizza; remember the {v} o'clock pickup",
    "music": "practised the piano piece for {n} minutes; the left hand at bar {v} is hard",
}


def _make_notes(folder: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    (folder / "memory").mkdir(parents=True, exist_ok=True)
    for day in range(files):
        lines = [f"# 2025-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}", ""]
        for _ in range(12):
            topic, text = rng.choice(list(TOPICS.items()))
            lines += [f"## {topic}", "", text.format(n=rng.randint(1, 99), v=rng.randint(1, 99))]
            lines.append("")
        (folder / "memory" / f"note-{day:04d}.md").write_text("\n".join(lines))


def _append_message(path: Path, text: str, tz: object) -> None:
    stamp = datetime.now(tz).isoformat()  # type: ignore[arg-type]
    with path.open("a") as handle:
        handle.write(json.dumps({"role": "user", "content": text, "timestamp": stamp}) + "\n")


def _warm_cycles(
    workspace: Path, runs: int, tag: str
) -> tuple[list[float], list[float], list[float]]:
    """Given a workspace whose index is built, return the wall and CPU times (ms) of `runs`
    warm cycles after a new line each (the first, uncounted, loads the models) and of the
    cycles after a memory check."""
    config = load_config(workspace)
    tz = local_timezone(config.time.timezone)
    transcript = workspace / "chat" / "session.jsonl"
    warm = WarmMemory(watched=True)
    # What the daemon keeps open between cycles besides the index (none in older versions).
    kept: dict[str, Any] = {}
    with contextlib.suppress(ImportError):
        from assembler.mood.history import KeptHistory

        kept["moods"] = KeptHistory()
    run_once(config, now=datetime.now(tz), memory=warm, **kept, hosts=HOSTS)
    cycles: list[float] = []
    cpu: list[float] = []
    checked: list[float] = []
    for i in range(runs + 1):  # the first cycle after the load is not counted
        # `tag` keeps the lines new to this run: a text seen before has its vector kept.
        _append_message(transcript, f"still failing after the rollback, attempt {i} {tag}", tz)
        began, began_cpu = time.perf_counter(), time.process_time()
        assembly = run_once(config, now=datetime.now(tz), memory=warm, **kept, hosts=HOSTS)
        cycles.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
        assert assembly.measured.memory is not None and assembly.measured.memory.embedded == 0
        _append_message(transcript, f"and the pods restart again, round {i} {tag}", tz)
        warm.files_changed()
        began = time.perf_counter()
        assembly = run_once(config, now=datetime.now(tz), memory=warm, **kept, hosts=HOSTS)
        checked.append((time.perf_counter() - began) * 1000)
        assert assembly.measured.memory is not None and assembly.measured.memory.embedded == 0
    warm.close()
    if "moods" in kept:
        kept["moods"].close()
    return cycles[1:], cpu[1:], checked[1:]


def _baseline_cycles(tree: Path, workspace: Path, runs: int) -> tuple[list[float], ...]:
    """Run `_warm_cycles` with the code of another version (`tree`) in another process."""
    script = (
        f"import sys, json; sys.path[:0] = [{str(tree)!r}, {str(Path(__file__).parent)!r}]\n"
        "from bench_daemon_cycle import _warm_cycles\n"
        "from pathlib import Path\n"
        f"print(json.dumps(_warm_cycles(Path({str(workspace)!r}), {runs}, 'baseline')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, cwd=tree
    )
    return tuple(json.loads(done.stdout.splitlines()[-1]))


def _line(label: str, wall: list[float], cpu: list[float], checked: list[float]) -> str:
    return (
        f"{label:<9} warm cycle {statistics.median(wall):7.1f} ms wall (min {min(wall):.1f}), "
        f"{statistics.median(cpu):6.1f} ms CPU; with a memory check "
        f"{statistics.median(checked):7.1f} ms wall"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed warm cycles (default 9)")
    parser.add_argument("--cold-runs", type=int, default=3, help="cold runs (default 3)")
    parser.add_argument("--files", type=int, default=760, help="generated notes (default 760)")
    parser.add_argument(
        "--baseline", type=Path, help="a copy of another version whose warm cycles run first"
    )
    args = parser.parse_args()
    assemble = Path(sys.executable).parent / "assemble"
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "workspace"
        workspace.mkdir()
        _make_notes(workspace, args.files)
        (workspace / "chat").mkdir()
        transcript = workspace / "chat" / "session.jsonl"
        (workspace / "assembler.toml").write_text(
            '[transcripts]\nsources = ["chat/*.jsonl"]\n'
            "[memory]\nchunk_tokens = 48\nchunk_overlap = 8\n"
        )
        config = load_config(workspace)
        tz = local_timezone(config.time.timezone)
        for text in ("why is the deploy failing again", "the api pods crash on start"):
            _append_message(transcript, text, tz)
        started = time.perf_counter()
        warm = WarmMemory(watched=True)
        first = run_once(config, now=datetime.now(tz), memory=warm, hosts=HOSTS)
        chunks = first.measured.memory.chunks if first.measured.memory is not None else 0
        print(
            f"index: {chunks} chunks from {args.files} notes, built in "
            f"{time.perf_counter() - started:.1f} s (model load and embedding)"
        )

        warm.close()
        baseline = None
        if args.baseline is not None:
            baseline = _baseline_cycles(args.baseline.resolve(), workspace, args.runs)
        cycles, cpu, checked = _warm_cycles(workspace, args.runs, "current")
        cold = []
        for _ in range(args.cold_runs):
            _append_message(transcript, "and now?", tz)
            began = time.perf_counter()
            subprocess.run(
                [str(assemble), "--once", "-q", "--workspace", str(workspace)],
                check=True,
                capture_output=True,
            )
            cold.append((time.perf_counter() - began) * 1000)
        shutil.rmtree(workspace / ".scratchpad", ignore_errors=True)
    warm_ms = statistics.median(cycles)
    cold_ms = statistics.median(cold)
    verdict = "under" if warm_ms < TARGET_MS else "OVER"
    print(f"medians of {args.runs} cycles, one line added before each; target {TARGET_MS:.0f} ms")
    if baseline is not None:
        print(_line("baseline", *baseline))
    print(_line("this tree", cycles, cpu, checked) + f" ({verdict} the target)")
    if baseline is not None:
        print(
            f"baseline / this tree: {statistics.median(baseline[0]) / warm_ms:.2f}x wall, "
            f"{statistics.median(baseline[1]) / statistics.median(cpu):.2f}x CPU"
        )
    print(f"cold assemble --once:               {cold_ms:8.1f} ms median of {args.cold_runs}")
    print(f"cold / warm:                        {cold_ms / warm_ms:8.1f}x")


if __name__ == "__main__":
    main()
