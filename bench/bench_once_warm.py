"""Benchmark: `assemble --once` answered by a running daemon (its models and index loaded) next
to the same command run cold (`--no-daemon`), each in a fresh process, on a copy of
workspace-example; and the daemon's resident memory.

The data: workspace-example (its two transcripts, MEMORY.md and memory notes, its config),
copied to a temporary folder, with `daemon.debounce = "1h"` added to the copy's config so that
the cold runs' writes do not set the daemon assembling in the middle of the timings. Every run
is `assemble --once --workspace COPY --now 2026-03-02T23:25:00+11:00` (the demo's clock), so
each reads the same 45 messages and writes the same file; warm and cold runs alternate.

- warm: a fresh `assemble` process that asks the daemon over `.scratchpad/daemon.sock`
  (Python's start, the CLI's imports, the config, the round trip, the daemon's warm cycle);
- cold: `assemble --once --no-daemon`, which loads the mood model and the index itself, and
  the embedding model only for texts the index keeps no vector of (`text_vectors`: the
  queries, the sentences of the hits shown);
- cold, nothing kept (the old way): the same, with `text_vectors` emptied before each run, so
  the model loads and embeds the queries and the sentences of every hit shown;
- floor: `assemble --version`, a fresh process that does nothing.

The daemon's VmRSS (and its peak, VmHWM) comes from /proc/PID/status: once it says READY=1
(models and index loaded), and after its first assembly with the demo's messages.

    python bench/bench_once_warm.py [--runs 7]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "workspace-example"
NOW = "2026-03-02T23:25:00+11:00"
ASSEMBLE = Path(sys.executable).parent / "assemble"
WAIT = 120.0


def _memory(pid: int) -> dict[str, float]:
    """Given a pid, return its VmRSS and VmHWM in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields


# The CPU time (user and system) of each run, by kind: on a busy machine the wall time grows
# with the wait for a core, the CPU time stays what the run costs.
CPU: dict[str, list[float]] = {}


def _timed(argv: list[str], kind: str = "other") -> tuple[float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT)
    elapsed = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    CPU.setdefault(kind, []).append(cpu)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")
    return elapsed, result


def _forget_text_vectors(workspace: Path) -> None:
    """Empty the index's kept vectors of short texts, as an index before them had none."""
    with contextlib.closing(sqlite3.connect(workspace / ".scratchpad" / "index.sqlite")) as db:
        db.execute("DELETE FROM text_vectors")
        db.commit()


def _describe(workspace: Path) -> str:
    transcripts = sorted(p.relative_to(workspace) for p in workspace.glob("transcripts/**/*.jsonl"))
    notes = sorted(p.relative_to(workspace) for p in workspace.glob("memory/**/*.md"))
    return (
        f"{len(transcripts)} transcripts ({', '.join(map(str, transcripts))}), MEMORY.md and "
        f"{len(notes)} memory notes"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each kind (default 7)")
    args = parser.parse_args()
    if not ASSEMBLE.exists():
        raise SystemExit(f"{ASSEMBLE} not found: install the package (make setup) first")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "workspace"
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".scratchpad"))
        with (workspace / "assembler.toml").open("a") as handle:
            handle.write('\n[daemon]\ndebounce = "1h"\n')
        print(f"data: a copy of {EXAMPLE} in {workspace}: {_describe(workspace)}")
        print(f"      every run: assemble --once --workspace COPY --now {NOW}")
        once = [str(ASSEMBLE), "--once", "--workspace", str(workspace), "--now", NOW]

        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(str(Path(folder) / "notify"))
        notify.settimeout(WAIT)
        log = (Path(folder) / "daemon.log").open("w")
        began = time.perf_counter()
        daemon = subprocess.Popen(
            [str(ASSEMBLE), "daemon", "--workspace", str(workspace)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**os.environ, "NOTIFY_SOCKET": str(Path(folder) / "notify")},
        )
        try:
            while b"READY=1" not in notify.recv(4096):
                pass
            ready_ms = (time.perf_counter() - began) * 1000
            at_ready = _memory(daemon.pid)
            first_ms, first = _timed([*once, "-vv"])
            if f"assembled by the daemon (pid {daemon.pid})" not in first.stderr:
                raise SystemExit(f"the daemon did not serve --once:\n{first.stderr}")
            after_first = _memory(daemon.pid)
            _, cold_first = _timed([*once, "--no-daemon"])
            same = first.stdout == cold_first.stdout

            warm: list[float] = []
            cold: list[float] = []
            old: list[float] = []
            for _ in range(args.runs):
                elapsed, result = _timed(once, "warm")
                warm.append(elapsed)
                same = same and result.stdout == first.stdout
                elapsed, result = _timed([*once, "--no-daemon"], "cold")
                cold.append(elapsed)
                same = same and result.stdout == first.stdout
                _forget_text_vectors(workspace)
                elapsed, result = _timed([*once, "--no-daemon"], "old")
                old.append(elapsed)
                same = same and result.stdout == first.stdout
            floor = [_timed([str(ASSEMBLE), "--version"], "floor")[0] for _ in range(args.runs)]
            served = sum(1 for line in Path(log.name).read_text().splitlines() if "(once)" in line)
        finally:
            daemon.terminate()
            daemon.wait(timeout=WAIT)
            log.close()
            notify.close()

    warm_ms, cold_ms, old_ms, floor_ms = (statistics.median(v) for v in (warm, cold, old, floor))
    print(f"output: {first.stdout.strip()}")
    print(f"        the same from the daemon and from a cold run: {'yes' if same else 'NO'}")
    print(f"daemon: ready (models and index loaded) {ready_ms:.0f} ms after its start")
    print(f"        first served --once (its first assembly of the 45 messages) {first_ms:.0f} ms")
    print(f"        served {served} --once runs in all")
    print(f"\nmedians of {args.runs} fresh processes each:")
    print(f"  warm (answered by the daemon)   {warm_ms:8.0f} ms")
    print(f"  cold (--no-daemon)              {cold_ms:8.0f} ms")
    print(f"  cold, nothing kept (old way)    {old_ms:8.0f} ms")
    print(f"  cold old way / cold             {old_ms / cold_ms:8.2f} x")
    print(f"  floor (assemble --version)      {floor_ms:8.0f} ms")
    print(f"  cold / warm                     {cold_ms / warm_ms:8.1f} x")
    print(f"  warm over the floor             {warm_ms - floor_ms:8.0f} ms")
    cpu = {kind: statistics.median(values) for kind, values in CPU.items()}
    print(f"\nCPU time (user + system) of the fresh process, medians of {args.runs}:")
    print(
        f"  warm {cpu['warm']:.0f} ms, cold {cpu['cold']:.0f} ms, cold old way {cpu['old']:.0f} ms"
    )
    print(f"  floor {cpu['floor']:.0f} ms; cold old way / cold {cpu['old'] / cpu['cold']:.2f} x")
    print("\ndaemon memory (from /proc/PID/status):")
    print(f"  at READY=1                 VmRSS {at_ready['VmRSS']:6.0f} MB")
    print(
        f"  after its first assembly   VmRSS {after_first['VmRSS']:6.0f} MB "
        f"(peak VmHWM {after_first['VmHWM']:.0f} MB)"
    )


if __name__ == "__main__":
    main()
