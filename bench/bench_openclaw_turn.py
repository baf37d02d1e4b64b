"""Benchmark: what the OpenClaw plugin adds to each prompt.

1. Whole turns: the median wall time of `openclaw agent --local` turns (OpenClaw 2026.9.6, the
   pinned test install of tests/e2e/hosts.py, against the mock model of tests/e2e/mock_model.py,
   which answers "OK." at once) with the plugin installed and enabled, set up with the
   commands `assemble setup openclaw` prints, next to the same turns without it. The two
   alternate, each in its own HOME and workspace, after one unmeasured warm-up turn each.
   A turn is 7 to 10 s of OpenClaw's own work, so its spread is printed too: a difference
   smaller than the spread is below what whole turns can resolve.
   Two figures for each: the wall time of the process, which for a one-shot `--local` run
   includes OpenClaw loading the plugin (once per process; a Gateway loads it once at start),
   and OpenClaw's own `meta.durationMs`, the agent run in which before_prompt_build is called
   before the model call: the per-prompt cost in a Gateway.
2. The plugin alone: a small Node script (the hosts' Node) imports the entry and registers it
   (what OpenClaw does once per process), then calls its before_prompt_build handler on the
   same prefix.json as OpenClaw does before a turn: the first call (cold: the first read of the
   file) and the median of --calls calls.

Data: workspace-example's transcripts and notes, rendered with `assemble --once` (memory
search keyword-only), so the block is a real one (about 2.6 KB).

    python bench/bench_openclaw_turn.py [--turns 5] [--calls 2000]

Target: under 100 ms added per prompt. Needs npm (the hosts install into a cache on first use).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the e2e harness: the hosts and the mock model
sys.path.insert(0, str(REPO))

from e2e.hosts import (  # noqa: E402
    NODE_VERSION,
    Hosts,
    HostsUnavailable,
    default_cache_dir,
    ensure_hosts,
)
from e2e.mock_model import MockModel  # noqa: E402
from e2e.turns import (  # noqa: E402
    openclaw_config,
    run_openclaw,
    run_openclaw_cli,
    write_openclaw_config,
)

from assembler.config.files import load_config  # noqa: E402
from assembler.hosts.openclaw.setup import openclaw_plugin_dir, openclaw_setup  # noqa: E402

TARGET_MS = 100.0
HEADER = "[Session Scratchpad - your persistent working memory]"

# Calls the plugin's handler as OpenClaw does before a turn; prints the timings as JSON.
HOOK_TIMER = r"""
import { pathToFileURL } from "node:url";
const [entry, workspace, calls] = process.argv.slice(2);
const loadStarted = process.hrtime.bigint();
const plugin = await import(pathToFileURL(entry).href);
plugin.default.register({
  pluginConfig: { workspace }, logger: console, on() {}, registerTool() {},
});
const loadMs = Number(process.hrtime.bigint() - loadStarted) / 1e6;
const { beforePromptBuild } = plugin;
const problems = [];
const time = () => {
  const started = process.hrtime.bigint();
  const result = beforePromptBuild({ workspace }, {}, (message) => problems.push(message));
  return [Number(process.hrtime.bigint() - started) / 1e6, result];
};
const [coldMs, first] = time();
const times = [];
for (let i = 0; i < Number(calls); i++) times.push(time()[0]);
times.sort((a, b) => a - b);
console.log(JSON.stringify({
  loadMs, coldMs, medianMs: times[times.length >> 1], p99Ms: times[Math.floor(times.length * 0.99)],
  blockChars: (first.prependContext ?? "").length, problems,
}));
"""


def _workspace(root: Path, assemble: Path) -> Path:
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    for name in ("transcripts", "memory"):
        shutil.copytree(REPO / "workspace-example" / name, workspace / name)
    shutil.copy(REPO / "workspace-example" / "MEMORY.md", workspace)
    (workspace / "assembler.toml").write_text(
        "[transcripts]\nsources = [\n"
        '    "transcripts/openclaw/agents/main/sessions/*.jsonl",\n'
        '    "transcripts/claude-code/*/*.jsonl",\n]\n'
        'lookback = "none"\n[memory]\nmodel = "none"\n'
    )
    subprocess.run(
        [str(assemble), "--once", "-q", "--workspace", str(workspace)],
        check=True,
        capture_output=True,
    )
    return workspace


def _home(root: Path, model: MockModel, workspace: Path) -> Path:
    home = root / "home"
    home.mkdir()
    config = openclaw_config(model, workspace)
    config["logging"] = {"file": str(home / "openclaw.log")}
    write_openclaw_config(home, config)
    return home


def _turn(hosts: Hosts, home: Path, workspace: Path, model: MockModel) -> tuple[float, float]:
    """Run one turn; return its wall time and OpenClaw's own run time (meta.durationMs: the
    agent run, where before_prompt_build is called, without the process start), in s."""
    before = len(model.turn_calls())
    run = run_openclaw(hosts, home=home, workspace=workspace, prompt="Anything new?")
    if run.returncode != 0:
        raise SystemExit(run.describe())
    calls = model.turn_calls()[before:]
    if len(calls) != 1:
        raise SystemExit(f"expected one model call, got {len(calls)}")
    return run.seconds, run.json()["meta"]["durationMs"] / 1000


def _spread_ms(times: list[float]) -> float:
    return (max(times) - min(times)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5, help="measured turns of each (default 5)")
    parser.add_argument("--calls", type=int, default=2000, help="hook calls timed (default 2000)")
    args = parser.parse_args()
    try:
        hosts = ensure_hosts(default_cache_dir())
    except HostsUnavailable as reason:
        raise SystemExit(f"agent hosts unavailable: {reason}") from None
    assemble = Path(sys.executable).parent / "assemble"

    with tempfile.TemporaryDirectory() as folder, MockModel(Path(folder) / "model.jsonl") as model:
        runs: dict[str, tuple[Path, Path]] = {}
        for name in ("with", "without"):
            root = Path(folder) / name
            workspace = _workspace(root, assemble)
            runs[name] = (_home(root, model, workspace), workspace)
        home, workspace = runs["with"]
        for command in openclaw_setup(load_config(workspace), assemble).plugin:
            done = run_openclaw_cli(hosts, command, home=home, cwd=workspace)
            if done.returncode != 0:
                raise SystemExit(done.describe())

        wall: dict[str, list[float]] = {"with": [], "without": []}
        agent: dict[str, list[float]] = {"with": [], "without": []}
        for index in range(args.turns + 1):  # turn 0 of each warms up and is not counted
            order = ["with", "without"] if index % 2 else ["without", "with"]
            for name in order:
                home, workspace = runs[name]
                seconds, run_seconds = _turn(hosts, home, workspace, model)
                if index > 0:
                    wall[name].append(seconds)
                    agent[name].append(run_seconds)
        requests = model.turn_calls()
        with_block = sum(HEADER in request.dump() for request in requests)
        if with_block != args.turns + 1:
            raise SystemExit(f"{with_block} turns carried the scratchpad, not {args.turns + 1}")

        block_bytes = len(
            json.loads((runs["with"][1] / ".scratchpad" / "prefix.json").read_text())[
                "block"
            ].encode()
        )
        script = Path(folder) / "hook_timer.mjs"
        script.write_text(HOOK_TIMER)
        timed = subprocess.run(
            [
                str(hosts.node_bin / "node"),
                str(script),
                str(openclaw_plugin_dir() / "index.js"),
                str(runs["with"][1]),
                str(args.calls),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        hook = json.loads(timed.stdout)
        if hook["problems"] or not hook["blockChars"]:
            raise SystemExit(f"the hook returned no block: {hook}")

    print(f"data: workspace-example rendered by assemble --once; block {block_bytes} bytes")
    print(f"OpenClaw turns, medians of {args.turns} (spread = slowest - fastest):")
    for what, times in (("wall time of the process", wall), ("agent run (meta.durationMs)", agent)):
        with_ms = statistics.median(times["with"]) * 1000
        without_ms = statistics.median(times["without"]) * 1000
        added = with_ms - without_ms
        verdict = "within" if added <= TARGET_MS else "OVER"
        print(f"  {what}:")
        for label, median, name in (
            ("with the plugin", with_ms, "with"),
            ("without", without_ms, "without"),
        ):
            spread = _spread_ms(times[name])
            print(f"    {label + ':':16} {median:8.0f} ms (spread {spread:5.0f} ms)")
        print(
            f"    added:           {added:8.0f} ms ({verdict} the {TARGET_MS:.0f} ms target); "
            f"ratio {with_ms / without_ms:.3f}"
        )
    print(f"the plugin alone (Node {NODE_VERSION}, {args.calls} hook calls):")
    print(f"  import + register:   {hook['loadMs']:8.3f} ms (once per OpenClaw process)")
    print(f"  first call:          {hook['coldMs']:8.3f} ms")
    print(f"  median:              {hook['medianMs']:8.3f} ms (p99 {hook['p99Ms']:.3f} ms)")


if __name__ == "__main__":
    main()
