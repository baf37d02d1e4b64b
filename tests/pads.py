"""Helpers of the agent-sections tests: a clock moved by hand, section states, the texts
that try to break the markers, and workspaces rendered for real (`assemble --once`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import frontmatter
from hypothesis import strategies as st

from assembler.file.codec import (
    REGION_BEGIN,
    REGION_END,
)
from assembler.hosts.registry import HOSTS
from assembler.pad.journal import (
    Journal,
    SectionState,
)
from assembler.pad.sections import Scratchpad

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime = START) -> None:
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, **kwargs: float) -> None:
        self.moment += timedelta(**kwargs)


def journal_lines(journal: Journal) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.path.read_text().splitlines()]


def agent(name: str, content: str, when: datetime = START, source: str = "agent") -> SectionState:
    return SectionState(name, content, when, source, "agent")


def scratchpad_entry(data: Any, minute: int, kind: str = "openclaw:scratchpad") -> dict[str, Any]:
    # Written in the hour before the renders' clock (RENDER_NOW): a later one is not read.
    moment = START - timedelta(hours=1) + timedelta(minutes=minute)
    stamp = moment.isoformat().replace("+00:00", "Z")
    return {"type": "custom", "customType": kind, "data": data, "timestamp": stamp}


TRICKY_PIECES = [
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    "---",
    "----  ",
    "---\r",
    "\\",
    "\\---",
    "\\\\<!-- scratchpad:",
    '<!-- scratchpad:begin section="main" -->',
    '<!-- scratchpad:end section="main" -->',
    '  <!--SCRATCHPAD:END section = "goal"-->  ',
    REGION_BEGIN,
    REGION_END,
    "\u2028",
    "\x85",
    "\x0c",
    "## Main",
    "é 🙂 中文",
    "   ",
]


texts = st.lists(st.one_of(st.sampled_from(TRICKY_PIECES), st.text(max_size=12)), max_size=12).map(
    "".join
)


section_texts = st.dictionaries(
    st.sampled_from(["goal", "findings", "artifacts", "errors", "main", "api-notes", "x_1"]),
    texts,
    max_size=7,
)


RENDER_NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def make_workspace(folder: Path, extra: str = "") -> Path:
    """A workspace with no transcripts and memory search off: renders in a few milliseconds."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat/*.jsonl"]\n[memory]\nenabled = false\n'
        f'[time]\ntimezone = "UTC"\n{extra}'
    )
    return folder


def render(workspace: Path, now: datetime = RENDER_NOW) -> dict[str, Any]:
    """Run one assembly as `assemble --once` does; return the frontmatter written with what
    the run recorded in the state folder (last-assembly.json) over it."""
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    run_once(load_config(workspace), now=now, hosts=HOSTS)
    return file_meta(workspace)


def file_meta(workspace: Path) -> dict[str, Any]:
    """The file's frontmatter with the last assembly's record (its diagnostics) over it."""
    meta = dict(frontmatter.load(workspace / "SCRATCHPAD.md").metadata)
    state = json.loads((workspace / ".scratchpad" / "last-assembly.json").read_text())
    return {**meta, **state["diagnostics"]}


def workspace_pad(workspace: Path, now: datetime = RENDER_NOW) -> Scratchpad:
    from assembler.config.files import load_config
    from assembler.pad.sections import scratchpad_for

    return scratchpad_for(load_config(workspace), now=lambda: now)


def file_text(workspace: Path) -> str:
    # Bytes, decoded: read_text would turn a "\r" the agent wrote into "\n".
    return (workspace / "SCRATCHPAD.md").read_bytes().decode("utf-8")


def edit_file(workspace: Path, old: str, new: str) -> None:
    text = file_text(workspace)
    assert old in text, old
    (workspace / "SCRATCHPAD.md").write_text(text.replace(old, new, 1), encoding="utf-8")
