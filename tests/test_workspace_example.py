"""The README's demo: `assemble --once` on workspace-example/ with the clock of the session."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import frontmatter
import pytest

from assembler.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "workspace-example"
NOW = "2026-03-02T23:25:00+11:00"  # the Makefile's DEMO_NOW: just after the session ended
FRUSTRATED_AT = "2026-03-02T19:57:00+11:00"  # the third failed deploy of the evening


@pytest.fixture
def example(tmp_path: Path) -> Path:
    copy = tmp_path / "workspace-example"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("SCRATCHPAD.md", ".scratchpad"))
    return copy


def test_the_demo_renders_every_section_from_both_transcripts(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--once", "--workspace", str(example), "--now", NOW]) == 0
    post = frontmatter.load(example / "SCRATCHPAD.md")
    meta = post.metadata
    assert datetime.fromisoformat(meta["expires"]) - datetime.fromisoformat(
        meta["updated"]
    ) == timedelta(minutes=meta["ttl_minutes"])
    formats = sorted(s["format"] for s in meta["sources"])
    assert formats == ["claude-code", "openclaw"]
    assert all(s["bad_lines"] == 0 and s["messages"] > 0 for s in meta["sources"])
    assert meta["degraded"] == []
    assert meta["tokens"]["auto"] <= meta["tokens"]["caps"]["auto"]
    for title in (
        "Emotional Context",
        "Response Strategy",
        "Active Context",
        "Daily Context",
        "Time Context",
        "Routing Hint",
    ):
        assert f"## {title}" in post.content
    assert "late night" in post.content
    assert "memory/2026-03-02.md" in post.content


def test_the_demo_sees_frustration_early_and_a_calmer_end(example: Path) -> None:
    from assembler.assemble import assemble
    from assembler.config_load import load_config

    assembly = assemble(load_config(example), now=datetime.fromisoformat(NOW))
    assert assembly.mood is not None
    state = assembly.mood.combined
    assert len(state.points) >= 10
    # Ray starts the window frustrated (the third failed deploy) and ends it tired, not angry.
    third = len(state.points) // 3
    assert sum(p.mood in ("frustrated", "urgent") for p in state.points[:third]) >= 2
    assert not any(p.mood in ("frustrated", "urgent") for p in state.points[-third:])
    assert state.primary != "frustrated"
    assert "tired" in (state.primary, state.secondary)
    assert f"{state.primary_score:.2f} now" in state.trajectory


def test_at_the_frustrated_moment_the_strategy_fires(example: Path) -> None:
    from assembler.assemble import assemble
    from assembler.config_load import load_config

    # 19:57, the third failed deploy: "WHY is it still failing?? ... the third time today"
    assembly = assemble(load_config(example), now=datetime.fromisoformat(FRUSTRATED_AT))
    assert assembly.mood is not None and assembly.strategy is not None
    assert assembly.mood.combined.primary == "frustrated"
    assert not assembly.strategy.no_signal
    assert "concise" in assembly.strategy.style
