"""Benchmark: how long an agent waits for a scratchpad tool call made as a command.

Times, as fresh subprocesses (median and fastest of --repeat runs, default 15):
- `python -c pass` and `python -c "import assembler.pad.sections"`, the floor;
- `assemble pad write`, `assemble pad read` and `assemble section set`, when the CLI has the
  `pad` and `section` commands (checked with `assemble pad --help`); until then, the same
  operations through the API in `python -c "from assembler.pad.sections import ...; ..."`, and the
  output says which was timed;
- and, in this process, the API calls alone (no interpreter start).

Each command is timed twice: in the environment as it is, and with bytecode cached in a
temporary PYTHONPYCACHEPREFIX (as an installed package has it); with PYTHONDONTWRITEBYTECODE=1
set, the first column includes compiling every imported module on every start.

    python bench/bench_pad.py [--repeat 15] [--history 400]

Data: a temporary workspace whose journal holds --history events (appends of ~60-character
findings, with a compaction threshold above that, so every call reads and folds all of them),
then a goal, a ~250-token plan in main and a subsystem alert: about what a long session leaves.
Each write is a `write` of a ~40-token finding, so the journal grows by one line per run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

try:
    from assembler.pad.journal import Journal, journal_path
    from assembler.pad.sections import Scratchpad
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.pad.journal import Journal, journal_path
    from assembler.pad.sections import Scratchpad

FINDING = "The deploy fails because the manifest pins api:v2.14.3, which was never pushed."
PLAN = "\n".join(
    f"{i}. " + step
    for i, step in enumerate(
        [
            "Check pod status and recent events in the prod namespace.",
            "Compare the manifest's image tag with the tags in the registry.",
            "Retag the last good image and push it; roll out to staging first.",
            "Watch the rollout; if pods stay in ImagePullBackOff, read the pull secret.",
            "Write a note in today's daily log: what broke, what fixed it, what to watch.",
            "Ask whether the demo build needs the same fix before 15:00.",
        ]
        * 4,
        start=1,
    )
)


def seed_workspace(workspace: Path, history: int) -> Path:
    """Given an empty folder and a number of events, fill its journal; return the journal."""
    path = journal_path(workspace / ".scratchpad")
    pad = Scratchpad(Journal(path, max_events=history * 10), agent_cap=1_000_000)
    for i in range(history):
        pad.append(f"finding {i}: pod api-{i % 7} restarted, exit code {i % 3}", section="errors")
    pad.clear("errors")
    pad.write("Fix the failing prod deploy before the 15:00 demo", section="goal")
    pad.write(PLAN)
    pad.set_section("alerts", "Standup moved to 10:30", ttl=timedelta(hours=2), source="calendar")
    return path


def time_runs(command: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float]:
    """Given a command, run it `repeat` times after one warm-up; return (median, min) in ms."""
    subprocess.run(command, check=True, capture_output=True, env=env)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs), min(runs)


def environments(cache: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Return the environment as it is, and one where bytecode is cached under `cache`.

    An installed package has its .pyc files; a checkout run with PYTHONDONTWRITEBYTECODE=1
    compiles every module on every start, which costs more than the work being timed.
    """
    as_is = dict(os.environ)
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(cache)
    return as_is, cached


def time_calls(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Given a function, call it `repeat` times after one warm-up; return (median, min) in ms."""
    call()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs), min(runs)


def assemble_command() -> list[str] | None:
    """Return the `assemble` command if it has `pad` and `section`, else None."""
    script = Path(sys.executable).with_name("assemble")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "assembler.cli.main"]
    for sub in ("pad", "section"):
        probe = subprocess.run([*command, sub, "--help"], capture_output=True)
        if probe.returncode != 0:
            return None
    return command


def api_snippet(path: Path, body: str) -> list[str]:
    code = (
        "from datetime import timedelta\n"
        "from assembler.pad.journal import Journal\nfrom assembler.pad.sections import Scratchpad\n"
        f"pad = Scratchpad(Journal({str(path)!r}, max_events=10**6), agent_cap=1_000_000)\n"
        f"answer = {body}\n"
        "assert answer.ok, answer.message\n"
    )
    return [sys.executable, "-c", code]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--history", type=int, default=400)
    args = parser.parse_args()

    workspace = Path(tempfile.mkdtemp(prefix="bench-pad-"))
    try:
        path = seed_workspace(workspace, args.history)
        size = path.stat().st_size
        lines = len(path.read_bytes().splitlines())
        print(f"journal: {lines} lines, {size / 1024:.0f} KiB ({args.history} appends, a clear,")
        print("         a goal, a ~250-token plan in main, an alert); medians of", args.repeat)
        print()

        cli = assemble_command()
        rows: list[tuple[str, list[str]]] = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            (
                "python -c 'import assembler.pad.sections'",
                [sys.executable, "-c", "import assembler.pad.sections"],
            ),
        ]
        if cli is not None:
            ws = ["-w", str(workspace)]
            rows += [
                (
                    "assemble pad write",
                    [*cli, *ws, "pad", "write", "--section", "findings", FINDING],
                ),
                ("assemble pad read", [*cli, *ws, "pad", "read"]),
                (
                    "assemble section set",
                    [
                        *cli,
                        *ws,
                        "section",
                        "set",
                        "alerts",
                        "--ttl",
                        "2h",
                        "--source",
                        "bench",
                        "Standup moved to 10:45",
                    ],
                ),
            ]
        else:
            print("`assemble pad --help` failed: the CLI has no `pad`/`section` yet, so the three")
            print("operations are timed through the API in `python -c` instead.")
            print()
            rows += [
                (
                    "api write (python -c)",
                    api_snippet(path, f"pad.write({FINDING!r}, section='findings')"),
                ),
                ("api read (python -c)", api_snippet(path, "pad.read()")),
                (
                    "api set_section (python -c)",
                    api_snippet(
                        path,
                        "pad.set_section('alerts', 'Standup moved to 10:45', "
                        "ttl=timedelta(hours=2), source='bench')",
                    ),
                ),
            ]

        as_is, cached = environments(workspace / "pycache")
        bytecode = "no .pyc" if as_is.get("PYTHONDONTWRITEBYTECODE") else "as is"
        print(f"{'':44} {bytecode:>19} {'with .pyc cached':>19}")
        print(f"{'command':44} {'median ms':>10} {'min ms':>8} {'median ms':>10} {'min ms':>8}")
        for label, command in rows:
            median, fastest = time_runs(command, args.repeat, as_is)
            warm_median, warm_fastest = time_runs(command, args.repeat, cached)
            print(
                f"{label:44} {median:10.1f} {fastest:8.1f} {warm_median:10.1f} {warm_fastest:8.1f}"
            )

        pad = Scratchpad(Journal(path, max_events=10**6), agent_cap=1_000_000)
        print()
        print("in process (no interpreter start):")
        calls: list[tuple[str, Callable[[], object]]] = [
            ("Scratchpad.write", lambda: pad.write(FINDING, section="findings")),
            ("Scratchpad.read", lambda: pad.read()),
            (
                "Scratchpad.set_section",
                lambda: pad.set_section("alerts", "x", ttl=timedelta(hours=2)),
            ),
        ]
        for label, call in calls:
            median, fastest = time_calls(call, args.repeat)
            print(f"{label:44} {median:10.2f} {fastest:8.2f}")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
