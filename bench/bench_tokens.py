"""Benchmark: the tokens the agent reads per turn, before and after, section by section.

Two versions of the program assemble the same inputs:

- before: the program at git revision BEFORE (default 4131d67, the revision before the file
  was slimmed line by line; taken with `git archive` into a temporary folder),
- after: this working tree.

Data:

1. The demo workspace (workspace-example/, in the repository: two transcripts of one evening,
   memory notes; the agent's plan comes from the OpenClaw session's scratchpad entry) at the
   README's two clocks, 23:25 (the end of the evening; the plan, 3h old, is shown) and 19:57
   (the frustrated moment; no plan yet). Each run is a fresh `assemble --once` in a copy of
   the workspace; both the raw file (SCRATCHPAD.md whole, frontmatter included: what OpenClaw's
   bootstrap-file fallback reads) and the prefix block (.scratchpad/prefix.json: what hooks
   and the plugin inject) are counted.
2. The real-session development set, when it is there: the replay points of
   bench/data/real_sessions/points.jsonl (see bench/bench_real_sessions.py) on the session
   files of ../shared/data/real-sessions (read, never copied), each assembled as a dry run at
   the point's clock with the memory off (no agent sections: the auto part and the
   frontmatter). Summed over the points; a point that fails in either version is left out
   and counted.

Counted with the project's own counter (`tokens.counter = "estimate"`, the default), the same
function for both. Each file is cut at its headings: the frontmatter, the title (what comes
before the first section), each auto section, the agent region's markers and intro, each
agent section (heading, markers and text), the block's wrapper lines. Prints each part
before and after, then the whole with the ratio after/before and what was saved. Without git
or the revision it prints "skipped: ..." and exits 0.

    python bench/bench_tokens.py [--before 4131d67] [--data PATH] [--no-real]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "workspace-example"
POINTS = REPO / "bench" / "data" / "real_sessions" / "points.jsonl"
DEFAULT_DATA = REPO.parent / "shared" / "data" / "real-sessions"
CLOCKS = {"23:25": "2026-03-02T23:25:00+11:00", "19:57": "2026-03-02T19:57:00+11:00"}
# `python -m assembler` runs the command line of whichever version is on the path.
RUN = (
    "import runpy, sys; sys.argv[0] = 'assemble'; "
    "runpy.run_module('assembler', run_name='__main__')"
)
# Replays the points in one process of the version on the path (both layouts: the modules
# moved into sub-packages after the default BEFORE) and prints each file as a JSON line.
REPLAY = """
import glob, json, sys, tempfile
from datetime import datetime
from pathlib import Path
try:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config
except ImportError:
    from assembler.assemble import run_once
    from assembler.config_load import load_config
data, points = Path(sys.argv[1]), Path(sys.argv[2])
folder = Path(tempfile.mkdtemp(prefix="bench-tokens-real-"))
for raw in points.read_text("utf-8").splitlines():
    if not raw.strip():
        continue
    point = json.loads(raw)
    session = data / point["file"]
    if not session.is_file():
        continue
    workspace = folder / ("ws-" + point["id"])
    workspace.mkdir()
    config = folder / ("config-" + point["id"] + ".toml")
    source = json.dumps(glob.escape(str(session.resolve())))
    config.write_text(f"[transcripts]\\nsources = [{source}]\\n\\n[memory]\\nenabled = false\\n")
    now = datetime.fromisoformat(point["now"].replace("Z", "+00:00"))
    try:
        text = run_once(load_config(workspace, config), now=now, dry_run=True).text
    except Exception as error:
        print(json.dumps({"id": point["id"], "error": f"{type(error).__name__}: {error}"}))
        continue
    print(json.dumps({"id": point["id"], "text": text}), flush=True)
"""
AUTO_TITLES = (
    "Emotional Context",
    "Response Strategy",
    "Active Context",
    "Relevant Memories",
    "Daily Context",
    "Time Context",
    "Routing Hint",
)
REGION = "agent region: markers, intro"
WRAPPER = "block wrapper"

sys.path.insert(0, str(REPO))
from assembler.tokens import estimate_tokens  # noqa: E402


def _extract(revision: str, folder: Path) -> str | None:
    """Put the program of `revision` in `folder`; return why not, or None."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", revision, "assembler", "templates"],
            capture_output=True,
            check=False,
        )
    except OSError as error:
        return f"git is not available ({error})"
    if archive.returncode != 0:
        return f"git cannot give revision {revision} ({archive.stderr.decode().strip()})"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return None


def _isolated(source: Path, scratch: Path) -> dict[str, str]:
    """The environment of a run of the program in `source`: its own home, the machine's zone
    UTC (the demo's zone is in its config)."""
    env = {**os.environ, "PYTHONPATH": str(source), "HOME": str(scratch), "TZ": "UTC"}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[name] = str(scratch / name.lower())
    for name in ("ASSEMBLER_CONFIG", "ASSEMBLER_CONFIG_HOME"):
        env.pop(name, None)
    return env


def _assemble(source: Path, clock: str, scratch: Path) -> dict[str, str]:
    """Run `assemble --once` of the program in `source` on a fresh copy of the demo workspace;
    return the whole file and the prefix block."""
    workspace = scratch / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    skip = shutil.ignore_patterns("SCRATCHPAD.md", ".scratchpad")
    shutil.copytree(EXAMPLE, workspace, ignore=skip)
    done = subprocess.run(
        [sys.executable, "-c", RUN, "--once", "--workspace", str(workspace), "--now", clock],
        capture_output=True,
        text=True,
        cwd=scratch,
        env=_isolated(source, scratch),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"assemble ({source}) failed: {done.stderr.strip()}")
    text = (workspace / "SCRATCHPAD.md").read_text(encoding="utf-8")
    block = json.loads((workspace / ".scratchpad" / "prefix.json").read_text())["block"]
    return {"raw file": text, "prefix block": block}


def parts(text: str) -> dict[str, str]:
    """Given a file or a block, return its parts in order (see the module docstring): a
    section by its title without the parenthesis ("Main (updated 3h ago)" is "agent: Main")."""
    found: dict[str, list[str]] = {}
    lines = text.splitlines(keepends=True)
    current = "title"
    if lines and lines[0].startswith("---"):
        end = next((i for i, line in enumerate(lines[1:], 1) if line.startswith("---")), 0)
        found["frontmatter"] = lines[: end + 1]
        lines = lines[end + 1 :]
    last = len(lines) - 1
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("<!-- scratchpad:agent-sections"):
            found.setdefault(REGION, []).append(line)
            continue
        if stripped.startswith("[") and stripped.endswith("]") and number in (0, last):
            found.setdefault(WRAPPER, []).append(line)
            continue
        if line.startswith("## "):
            title = line[3:].split(" (", 1)[0].strip()
            current = title if title in AUTO_TITLES else f"agent: {title}"
        elif current == "title" and stripped.startswith(">") and REGION in found:
            current = REGION
        found.setdefault(current, []).append(line)
    return {name: "".join(chunk) for name, chunk in found.items()}


def _table(rows: list[tuple[str, int, int]]) -> None:
    print(f"  {'part':<32} {'before':>7} {'after':>7} {'saved':>6}")
    for name, a, b in rows:
        print(f"  {name:<32} {a:>7} {b:>7} {a - b:>6}")


def _compare(label: str, old: str, new: str) -> tuple[int, int]:
    """Print the parts of two texts before and after; return their whole token counts."""
    before, after = parts(old), parts(new)
    names = list(before) + [name for name in after if name not in before]
    rows = [
        (name, estimate_tokens(before.get(name, "")), estimate_tokens(after.get(name, "")))
        for name in names
    ]
    a, b = estimate_tokens(old), estimate_tokens(new)
    print(label)
    _table(rows)
    print(f"  {'whole':<32} {a:>7} {b:>7} {a - b:>6}   ratio {b / a:.2f}\n")
    return a, b


def _replay(source: Path, data: Path, scratch: Path) -> dict[str, str | None]:
    """Replay the real-session points with the program in `source`: id -> file text (None
    when the assembly failed)."""
    scratch.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", REPLAY, str(data), str(POINTS)],
        capture_output=True,
        text=True,
        cwd=scratch,
        env=_isolated(source, scratch),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the replay ({source}) failed: {done.stderr.strip()[-2000:]}")
    found: dict[str, str | None] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            found[record["id"]] = record.get("text")
    return found


def _real_sessions(before: Path, data: Path, root: Path) -> None:
    old = _replay(before, data, root / "real-before")
    new = _replay(REPO, data, root / "real-after")
    both = [i for i in old if old[i] is not None and new.get(i) is not None]
    failed_before = sum(text is None for text in old.values())
    failed_after = sum(text is None for text in new.values())
    print(
        f"real sessions: {len(both)} replay points of {POINTS.relative_to(REPO)} on {data} "
        f"(memory off, no agent sections; left out, the assembly failed: {failed_before} "
        f"before, {failed_after} after)"
    )
    sums: dict[str, Counter[str]] = {"before": Counter(), "after": Counter()}
    names: list[str] = []
    for point in both:
        for side, text in (("before", old[point]), ("after", new[point])):
            assert text is not None
            for name, part in parts(text).items():
                sums[side][name] += estimate_tokens(part)
                if name not in names:
                    names.append(name)
            sums[side]["whole"] += estimate_tokens(text)
    _table([(name, sums["before"][name], sums["after"][name]) for name in names])
    a, b = sums["before"]["whole"], sums["after"]["whole"]
    if both:
        ratios = sorted(estimate_tokens(new[p] or "") / estimate_tokens(old[p] or "") for p in both)
        median = ratios[len(ratios) // 2]
        print(
            f"  {'whole (sum)':<32} {a:>7} {b:>7} {a - b:>6}   ratio {b / max(a, 1):.2f}; "
            f"per point: median {median:.2f}, max {ratios[-1]:.2f}; "
            f"mean per point {a / len(both):.0f} -> {b / len(both):.0f} tokens"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="4131d67", help="the revision to compare with")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the real-sessions folder")
    parser.add_argument("--no-real", action="store_true", help="the demo workspace only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as tmp:
        root = Path(tmp)
        before = root / "before"
        before.mkdir()
        why = _extract(args.before, before)
        if why is not None:
            print(f"skipped: {why}")
            return 0
        print(f"before: revision {args.before}; after: this working tree; counter: estimate\n")
        print(f"data: {EXAMPLE.relative_to(REPO)} (2 transcripts, memory notes)\n")
        summary: list[str] = []
        for name, clock in CLOCKS.items():
            old = _assemble(before, clock, root / f"run-before-{name}")
            new = _assemble(REPO, clock, root / f"run-after-{name}")
            for what in ("raw file", "prefix block"):
                a, b = _compare(f"{name} {what}", old[what], new[what])
                summary.append(f"{name:<6} {what:<13} {a:>7} {b:>7} {b / a:>6.2f} {a - b:>6}")
        print(f"{'clock':<6} {'what':<13} {'before':>7} {'after':>7} {'ratio':>6} {'saved':>6}")
        print("\n".join(summary) + "\n")
        if args.no_real:
            return 0
        if not args.data.is_dir() or not POINTS.is_file():
            print(f"real sessions skipped: no session files at {args.data} (or --data PATH)")
            return 0
        _real_sessions(before, args.data, root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
