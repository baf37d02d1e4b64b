"""Benchmark: the tokens the agent reads per turn, before and after the slim frontmatter.

Two versions of the program assemble the demo workspace (workspace-example/, in the
repository: two transcripts of one evening, memory notes, the agent's journal) at the
README's two clocks, 23:25 (the end of the evening) and 19:57 (the frustrated moment):

- before: the program at git revision BEFORE (default 335cb98, taken with `git archive` into
  a temporary folder; its frontmatter carried the sources, hashes, token counts and dropped
  lines),
- after: this working tree (the frontmatter keeps `updated`, `expires`, `ttl_minutes` and a
  one-line `source`; the rest went to .scratchpad/last-assembly.json).

Each run is a fresh `assemble --once` in a copy of the workspace. Counted with the project's
own counter (`tokens.counter = "estimate"`, the default), the same function for both:

- frontmatter: what a host that injects the raw file adds beyond the body,
- raw file: SCRATCHPAD.md whole (OpenClaw's bootstrap-file fallback reads this),
- prefix block: the ready block hooks and the plugin inject (.scratchpad/prefix.json).

Prints each with the ratio after/before and what was saved. Without git or the revision
(a copy of the sources without history) it prints "skipped: ..." and exits 0.

    python bench/bench_tokens.py [--before 335cb98]
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "workspace-example"
CLOCKS = {"23:25": "2026-03-02T23:25:00+11:00", "19:57": "2026-03-02T19:57:00+11:00"}
# `python -m assembler` runs the command line of whichever version is on the path.
RUN = (
    "import runpy, sys; sys.argv[0] = 'assemble'; "
    "runpy.run_module('assembler', run_name='__main__')"
)

sys.path.insert(0, str(REPO))
from assembler.file.codec import split_frontmatter  # noqa: E402
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


def _assemble(source: Path, clock: str, scratch: Path) -> dict[str, str]:
    """Run `assemble --once` of the program in `source` on a fresh copy of the demo workspace;
    return the file's frontmatter, the whole file and the prefix block."""
    workspace = scratch / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    skip = shutil.ignore_patterns("SCRATCHPAD.md", ".scratchpad")
    shutil.copytree(EXAMPLE, workspace, ignore=skip)
    env = {**os.environ, "PYTHONPATH": str(source), "HOME": str(scratch)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, "--once", "--workspace", str(workspace), "--now", clock],
        capture_output=True,
        text=True,
        cwd=scratch,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"assemble ({source}) failed: {done.stderr.strip()}")
    text = (workspace / "SCRATCHPAD.md").read_text(encoding="utf-8")
    frontmatter, _ = split_frontmatter(text)
    block = json.loads((workspace / ".scratchpad" / "prefix.json").read_text())["block"]
    return {"frontmatter": f"---\n{frontmatter}\n---\n", "raw file": text, "prefix block": block}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="335cb98", help="the revision to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as tmp:
        root = Path(tmp)
        before = root / "before"
        before.mkdir()
        why = _extract(args.before, before)
        if why is not None:
            print(f"skipped: {why}")
            return 0
        print(
            f"data: {EXAMPLE.relative_to(REPO)} (2 transcripts, memory notes, the agent's journal)"
        )
        print(f"before: revision {args.before}; after: this working tree; counter: estimate\n")
        print(f"{'clock':<6} {'what':<13} {'before':>7} {'after':>7} {'ratio':>6} {'saved':>6}")
        for name, clock in CLOCKS.items():
            old = _assemble(before, clock, root / f"run-before-{name}")
            new = _assemble(REPO, clock, root / f"run-after-{name}")
            for what in ("frontmatter", "raw file", "prefix block"):
                a, b = estimate_tokens(old[what]), estimate_tokens(new[what])
                print(f"{name:<6} {what:<13} {a:>7} {b:>7} {b / a:>6.2f} {a - b:>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
