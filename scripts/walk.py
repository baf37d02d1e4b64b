"""Follow two flows through the package and count the calls that climb back up the layers.

    python scripts/walk.py [WORKSPACE]

Runs `assemble --once` on a copy of WORKSPACE (default: workspace-example) and then
`assemble pad write` on it, with a profiler that records every call from one of the package's
sub-packages into another. For each flow it prints the modules in the order the flow first
enters them, and the calls from a package into one above it (see docs/development.md for the
layers), split in two: those whose caller imports the callee (a loop in the imports, which
tests/test_package.py forbids) and those into an object handed down (a host plugin passed to
host-neutral code), which is how the layers are meant to meet.
"""

from __future__ import annotations

import ast
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The layers, lowest first: a package may import only the packages of lower layers.
LAYER = {
    "": 0,
    "config": 1,
    "transcripts": 2,
    **dict.fromkeys(("memory", "mood", "context", "observations", "file"), 3),
    "pad": 4,
    "assembly": 5,
    "daemon": 6,
    "hosts": 7,
    "serve": 8,
    "cli": 8,
}
NOW = "2026-03-02T23:25:00+11:00"

Call = tuple[str, str]  # the calling module, the called one


def package(module: str) -> str:
    """Given a module's name, return its sub-package ("" for a top-level module)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def imported(path: str) -> set[str]:
    """Given a module's file, return every name its imports name (modules and their names)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def traced(flow: Callable[[], Any]) -> tuple[list[Call], dict[str, str]]:
    """Given a flow, run it; return its calls between sub-packages in order, and each caller's
    file."""
    calls: list[Call] = []
    files: dict[str, str] = {}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        back = frame.f_back
        if event != "call" or back is None:
            return
        callee = frame.f_globals.get("__name__", "")
        caller = back.f_globals.get("__name__", "")
        both = callee.startswith("assembler.") and caller.startswith("assembler.")
        if both and package(callee) != package(caller):
            files[caller] = back.f_globals.get("__file__", "")
            calls.append((caller, callee))

    sys.setprofile(profile)
    try:
        flow()
    finally:
        sys.setprofile(None)
    return calls, files


def report(name: str, calls: list[Call], files: dict[str, str]) -> None:
    """Given a flow's name and its calls, print its modules in order and its climbs."""
    order: list[str] = []
    for call in calls:
        order += [m for m in call if m not in order]
    climbs = sorted({(a, b) for a, b in calls if LAYER[package(b)] > LAYER[package(a)]})
    looped = [(a, b) for a, b in climbs if b in imported(files[a])]
    print(f"== {name}")
    print(" → ".join(m.removeprefix("assembler.") for m in order))
    print(f"climbs back up by import (loops): {len(looped)}")
    print("".join(f"  {a} → {b}\n" for a, b in looped), end="")
    print(f"calls up into an object handed down: {len(climbs) - len(looped)}")
    print("".join(f"  {a} → {b}\n" for a, b in climbs if (a, b) not in looped), end="")


def main() -> int:
    from assembler.cli.main import main as assemble

    workspace = Path(tempfile.mkdtemp()) / "ws"
    shutil.copytree(
        Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "workspace-example", workspace
    )
    shutil.rmtree(workspace / ".scratchpad", ignore_errors=True)
    (workspace / "SCRATCHPAD.md").unlink(missing_ok=True)
    once = ["--once", "-w", str(workspace), "--now", NOW, "--no-daemon", "-q"]
    assemble(once)  # the models load here, outside the walk
    report("a run: transcript lines to the file", *traced(lambda: assemble(once)))
    write = ["pad", "write", "-w", str(workspace), "-s", "findings", "step 2"]
    report("a pad write to the ready block", *traced(lambda: assemble(write)))
    shutil.rmtree(workspace.parent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
