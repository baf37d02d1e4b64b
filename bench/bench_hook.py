"""Benchmark: the cold start of `assemble hook claude-code` next to `python -c pass`.

Claude Code runs the hook before every prompt, in a fresh process, so its cost is the
interpreter's start plus our imports plus reading SCRATCHPAD.md. Each run is a new process fed
a UserPromptSubmit event (the JSON Claude Code sends) for a temporary workspace holding a fresh
scratchpad written by `assemble --once` (memory search off, the transcripts of
workspace-example/). Prints the median of N runs of each, and the difference
(target: within 150 ms of `python -c pass`).

    python bench/bench_hook.py [--runs 21]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 150.0
REPO = Path(__file__).resolve().parent.parent


def _median_ms(command: list[str], stdin: str, runs: int) -> float:
    times = []
    for _ in range(runs + 1):  # the first run warms the page cache and is not counted
        started = time.perf_counter()
        result = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
        times.append((time.perf_counter() - started) * 1000)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="runs of each command (default 21)")
    args = parser.parse_args()
    assemble = Path(sys.executable).parent / "assemble"
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "workspace"
        shutil.copytree(REPO / "workspace-example", workspace)
        (workspace / "assembler.toml").write_text(
            '[transcripts]\nsources = ["transcripts/claude-code/*/*.jsonl",\n'
            '  "transcripts/openclaw/*/*/*/*.jsonl"]\n'
            'lookback = "none"\n'
            "[memory]\nenabled = false\n"
        )
        subprocess.run(
            [str(assemble), "--once", "-q", "--workspace", str(workspace)],
            check=True,
            capture_output=True,
        )
        event = json.dumps(
            {
                "session_id": "130bc834-285a-4160-9b5d-bc2cf004fec9",
                "transcript_path": str(workspace / "session.jsonl"),
                "cwd": str(workspace),
                "hook_event_name": "UserPromptSubmit",
                "prompt": "why is the deploy failing again?",
            }
        )
        hook = [str(assemble), "hook", "claude-code"]
        check = subprocess.run(hook, input=event, capture_output=True, text=True, check=True)
        if "additionalContext" not in check.stdout:
            raise SystemExit("the hook printed no context; is the scratchpad fresh?")
        baseline = _median_ms([sys.executable, "-c", "pass"], "", args.runs)
        hook_ms = _median_ms(hook, event, args.runs)
    difference = hook_ms - baseline
    verdict = "within" if difference <= TARGET_MS else "OVER"
    print(f"python -c pass:                 {baseline:7.1f} ms (median of {args.runs})")
    print(f"assemble hook claude-code:      {hook_ms:7.1f} ms (median of {args.runs})")
    print(
        f"difference:                     {difference:7.1f} ms ({verdict} the "
        f"{TARGET_MS:.0f} ms target); ratio {hook_ms / baseline:.1f}x"
    )


if __name__ == "__main__":
    main()
