"""Benchmark: the cold start of `assemble mcp` and of the light commands, each in a fresh process.

- `assemble mcp`: the time from starting the process to the answer to MCP's `initialize`
  (and to `tools/list`, sent right after), next to the floor, the time from starting
  `python -c "import mcp"` to a line it prints once the import is done: the MCP SDK's own
  import, the floor of the way before, when the server answered only once it had the SDK; it
  now answers `initialize` while another thread imports it, and `tools/list` once it has it
  (target: the answer within 300 ms of the start);
- `assemble check`, `show` and `pad read` (the agent's sections, listed), next to
  `python -c pass` (target: `check` within 60 ms of it).

Data: workspace-example/ copied to a temporary folder, where one `assemble --once --now
2026-03-02T23:25:00+11:00` writes SCRATCHPAD.md (with its memory index; the setup takes tens of
seconds, the runs do not touch it); `check` and `show` run with `--now 2026-03-02T23:30:00+11:00`,
while the file is fresh. HOME and the XDG folders point into the temporary folder, so no
config of yours is read.

Each round runs every command once, in turn, so that a busy machine slows them alike; the
figures are the medians (and minimums) over the rounds. The light commands' CPU time (user and
system, of the process) is shown too: on a loaded machine it stays what the command costs,
where the wall time grows with the wait for a core. Python's bytecode cache is a private
folder (PYTHONPYCACHEPREFIX) filled by one uncounted run of each command, so that the figures
are those of an installed package even where PYTHONDONTWRITEBYTECODE is set, as in the
development environment, where every module changed since its last compile would be compiled
again at each start.

    python bench/bench_startup.py [--runs 21] [--mcp-runs 11]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ASSEMBLE = Path(sys.executable).parent / "assemble"
WRITTEN_AT = "2026-03-02T23:25:00+11:00"
CHECKED_AT = "2026-03-02T23:30:00+11:00"
LIGHT_TARGET_MS = 60.0
MCP_TARGET_MS = 300.0
INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench_startup", "version": "0"},
    },
}
LIST_TOOLS: list[dict[str, object]] = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
# Prints a line once the SDK is imported; what the interpreter does after that is not counted.
IMPORT_MCP = "import mcp, sys\nsys.stdout.write('imported\\n')\nsys.stdout.flush()"

Timer = Callable[[], dict[str, float]]


def _lines(*messages: Mapping[str, object]) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # of the children waited for so far
    return usage.ru_utime + usage.ru_stime


def _run_ms(command: list[str], env: Mapping[str, str]) -> dict[str, float]:
    """Run the command; return its wall time and its CPU time, in ms."""
    cpu = _cpu_s()
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode().strip()}")
    return {"": elapsed, "(cpu)": (_cpu_s() - cpu) * 1000}


def _floor_ms(env: Mapping[str, str]) -> dict[str, float]:
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", IMPORT_MCP], env=env, stdout=subprocess.PIPE)
    assert process.stdout is not None
    line = process.stdout.readline()
    elapsed = (time.perf_counter() - started) * 1000
    process.wait()
    if line != b"imported\n":
        raise SystemExit("python -c 'import mcp' failed; is the MCP SDK installed?")
    return {"": elapsed}


def _mcp_ms(workspace: Path, env: Mapping[str, str]) -> dict[str, float]:
    """Start `assemble mcp`, send initialize; return the ms to its answer and to the answer of
    tools/list, sent once initialize is answered (as a client does)."""
    command = [str(ASSEMBLE), "mcp", "--workspace", str(workspace)]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_lines(INITIALIZE))
    process.stdin.flush()
    initialized = json.loads(process.stdout.readline() or b"null")
    answered = (time.perf_counter() - started) * 1000
    process.stdin.write(_lines(*LIST_TOOLS))
    process.stdin.flush()
    listed = json.loads(process.stdout.readline() or b"null")
    tools = (time.perf_counter() - started) * 1000
    _, stderr = process.communicate()  # closes stdin: the server stops
    if not (isinstance(initialized, dict) and "result" in initialized):
        raise SystemExit(f"assemble mcp did not answer initialize: {stderr.decode()[-2000:]}")
    if not (isinstance(listed, dict) and listed.get("result", {}).get("tools")):
        raise SystemExit(f"assemble mcp did not list its tools: {stderr.decode()[-2000:]}")
    return {"initialize": answered, "tools/list": tools}


def _environment(root: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(root / "home")}
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(root / "home" / name.lower())
    for name in ("ASSEMBLER_CONFIG", "ASSEMBLER_WORKSPACE", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def _workspace(root: Path, env: Mapping[str, str]) -> Path:
    workspace = root / "workspace"
    shutil.copytree(
        REPO / "workspace-example",
        workspace,
        ignore=shutil.ignore_patterns(".scratchpad", "SCRATCHPAD.md"),
    )
    print(f"setup: assemble --once --now {WRITTEN_AT} in a copy of workspace-example/ ...")
    once = ["--once", "-q", "--now", WRITTEN_AT]
    _run_ms([str(ASSEMBLE), *once, "--workspace", str(workspace)], env)
    return workspace


def _measure(timers: dict[str, Timer], runs: int) -> dict[str, list[float]]:
    for timer in timers.values():  # fills the bytecode cache and the page cache: not counted
        timer()
    results: dict[str, list[float]] = {}
    for _ in range(runs):
        for label, timer in timers.items():
            for part, ms in timer().items():
                results.setdefault(f"{label} {part}".strip(), []).append(ms)
    return results


def _line(label: str, times: list[float], floor: float | None = None) -> str:
    median = statistics.median(times)
    text = f"{label:34s} {median:7.1f} ms (min {min(times):6.1f})"
    if floor is not None:
        text += f"   +{median - floor:6.1f} ms, {median / floor:5.1f}x"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="rounds of the light commands")
    parser.add_argument("--mcp-runs", type=int, default=11, help="rounds of the MCP server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        root = Path(folder)
        env = _environment(root)
        workspace = _workspace(root, env)
        where = ["--workspace", str(workspace)]

        def assemble(*words: str) -> Timer:
            return lambda: _run_ms([str(ASSEMBLE), *words, *where], env)

        light = _measure(
            {
                "python -c pass": lambda: _run_ms([sys.executable, "-c", "pass"], env),
                "assemble check": assemble("check", "--now", CHECKED_AT),
                "assemble show": assemble("show", "--now", CHECKED_AT),
                "assemble pad read": assemble("pad", "read"),
            },
            args.runs,
        )
        mcp = _measure(
            {
                "python -c 'import mcp'": lambda: _floor_ms(env),
                "assemble mcp": lambda: _mcp_ms(workspace, env),
            },
            args.mcp_runs,
        )

    print(f"\nlight commands, {args.runs} rounds (the difference and ratio are over python):")
    base = statistics.median(light["python -c pass"])
    base_cpu = statistics.median(light["python -c pass (cpu)"])
    for label, times in light.items():
        if label.startswith("python"):
            print(_line(label, times))
        else:
            print(_line(label, times, base_cpu if label.endswith("(cpu)") else base))
    check = statistics.median(light["assemble check"]) - base
    check_cpu = statistics.median(light["assemble check (cpu)"]) - base_cpu
    verdict = "within" if check <= LIGHT_TARGET_MS else "OVER"
    print(
        f"check: {check:.1f} ms over python ({verdict} the {LIGHT_TARGET_MS:.0f} ms target), "
        f"{check_cpu:.1f} ms of CPU time over it"
    )

    print(f"\nassemble mcp, {args.mcp_runs} rounds (from the process start):")
    floor = statistics.median(mcp["python -c 'import mcp'"])
    for label, times in mcp.items():
        print(_line(label, times, None if label.startswith("python") else floor))
    answer = statistics.median(mcp["assemble mcp initialize"])
    verdict = "within" if answer <= MCP_TARGET_MS else "OVER"
    print(
        f"initialize answered in {answer:.1f} ms ({verdict} the {MCP_TARGET_MS:.0f} ms target), "
        f"{answer - floor:+.1f} ms from the SDK's import alone"
    )


if __name__ == "__main__":
    main()
