"""Benchmark: what the integration adds to a Claude Code turn, `claude -p` with the hooks of
`assemble setup claude-code` configured next to `claude -p` without them.

Claude Code's real program (pinned, from the e2e cache: see tests/e2e/hosts.py; installed on
first use) runs one-prompt turns against the mock model of the e2e tests on 127.0.0.1, which
answers "OK." at once, so the turn's time is Claude Code's own plus the hooks'. Each
`claude -p` is a new session whose one prompt runs the UserPromptSubmit hook (which sends the
scratchpad), as every prompt of an interactive session does; the SessionStart hook runs only
after /clear or a compaction. The workspace is workspace-example's transcripts with memory
search off, rendered once by `assemble --once`. The three setups run in turn, N times each
after one uncounted warm-up; prints the medians, the time the hooks add (target: under
100 ms) and the ratio. The full setup, with the MCP server too, is shown beside: `claude -p`
starts the server with every process, an interactive session once.

    python bench/bench_claude_code_turn.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from assembler.hosts.claude_code.setup import claude_code_setup
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from assembler.hosts.claude_code.setup import claude_code_setup

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 100.0
HEADER = "[Session Scratchpad - your persistent working memory]"
SETUPS = ("none", "hooks", "hooks + MCP")


def _home(root: Path, name: str, settings: dict[str, object] | None) -> Path:
    home = root / name
    (home / ".claude").mkdir(parents=True)
    if settings is not None:
        (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    return home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="turns of each setup (default 15)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))  # the e2e harness: the hosts and the mock model
    from e2e.hosts import CLAUDE_CODE_VERSION, NODE_VERSION, HostsUnavailable, default_cache_dir
    from e2e.hosts import ensure_hosts as install_hosts
    from e2e.mock_model import MockModel
    from e2e.turns import run_claude, run_claude_command_line

    try:
        hosts = install_hosts(default_cache_dir())
    except HostsUnavailable as reason:
        raise SystemExit(f"Claude Code is unavailable: {reason}") from None
    assemble = Path(sys.executable).parent / "assemble"
    with tempfile.TemporaryDirectory() as folder, MockModel(Path(folder) / "model.jsonl") as model:
        root = Path(folder)
        workspace, project = root / "workspace", root / "project"
        shutil.copytree(REPO / "workspace-example", workspace)
        project.mkdir()
        (workspace / "assembler.toml").write_text(
            "[transcripts]\n"
            'sources = ["transcripts/openclaw/agents/main/sessions/*.jsonl", '
            '"transcripts/claude-code/*/*.jsonl"]\n'
            'lookback = "none"\n[memory]\nenabled = false\n'
        )
        rendered = subprocess.run(
            [str(assemble), "--once", "--workspace", str(workspace)],
            check=True,
            capture_output=True,
            text=True,
        )
        setup = claude_code_setup(workspace, assemble)
        homes = {
            "none": _home(root, "plain", None),
            "hooks": _home(root, "hooks", setup.settings),
            "hooks + MCP": _home(root, "full", setup.settings),
        }
        added = run_claude_command_line(
            hosts,
            model,
            home=homes["hooks + MCP"],
            cwd=project,
            line=shlex.join(setup.mcp_add_user),
        )
        if added.returncode != 0:
            raise SystemExit(f"claude mcp add failed:\n{added.describe()}")

        times: dict[str, list[float]] = {name: [] for name in SETUPS}
        for round_ in range(args.runs + 1):  # round 0 warms the caches and is not counted
            for name in SETUPS:
                before = len(model.turn_calls())
                run = run_claude(hosts, model, home=homes[name], cwd=project, prompt="hello")
                if run.returncode != 0:
                    raise SystemExit(f"claude -p failed ({name}):\n{run.describe()}")
                (request,) = model.turn_calls()[before:]
                sent = HEADER in request.dump()
                if sent != (name != "none"):
                    raise SystemExit(f"{name}: the scratchpad was {'' if sent else 'not '}sent")
                if round_:
                    times[name].append(run.seconds * 1000)

    median = {name: statistics.median(values) for name, values in times.items()}
    added_ms = median["hooks"] - median["none"]
    verdict = "within" if added_ms <= TARGET_MS else "OVER"
    print(
        f"data: workspace-example's transcripts, memory off ({rendered.stdout.strip()}); "
        f"Claude Code {CLAUDE_CODE_VERSION} on Node {NODE_VERSION}, `claude -p hello` against "
        "the mock model on 127.0.0.1"
    )
    for name in SETUPS:
        print(f"claude -p, {name + ':':<14} {median[name]:7.1f} ms (median of {args.runs})")
    print(
        f"added by the hooks:         {added_ms:7.1f} ms ({verdict} the {TARGET_MS:.0f} ms "
        f"target); ratio {median['hooks'] / median['none']:.2f}x"
    )
    print(
        f"added by hooks + MCP:       {median['hooks + MCP'] - median['none']:7.1f} ms "
        "(the MCP server starts with every `claude -p`; once per interactive session)"
    )


if __name__ == "__main__":
    main()
