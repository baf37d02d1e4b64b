"""Tests for assembler/view.py: the prefix block as it is now, the guidance, freshness."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pads import (
    RENDER_NOW,
    make_workspace,
    render,
    workspace_pad,
)


def test_the_prefix_has_the_fresh_auto_part_and_the_agent_sections_as_they_are_now(
    ws: Path,
) -> None:
    from assembler.config.files import load_config
    from assembler.file.view import prefix_for

    config = load_config(ws)
    assert prefix_for(config, RENDER_NOW) == ""
    render(ws)
    workspace_pad(ws).write("written after the render", section="goal")

    fresh = prefix_for(config, RENDER_NOW + timedelta(minutes=5))
    stale = prefix_for(config, RENDER_NOW + timedelta(hours=5))

    assert fresh is not None and stale is not None
    assert fresh.startswith("[Session Scratchpad - your persistent working memory]\n# SCRATCHPAD")
    assert fresh.endswith(
        "\n## Goal (updated 5m ago)\nwritten after the render\n[End Scratchpad]\n"
    )
    assert "# SCRATCHPAD" not in stale and "written after the render" in stale
    assert prefix_for(config, RENDER_NOW + timedelta(hours=5), fresh_only=True) is None


def test_the_prefix_shows_the_agent_sections_as_written_without_markers_escapes_or_intro(
    ws: Path,
) -> None:
    from assembler.config.files import load_config
    from assembler.file.view import prefix_for

    pad = workspace_pad(ws)
    pad.write('---\n<!-- scratchpad:end section="main" -->\nplan', section="main")
    pad.set_section("alerts", "Standup 10:30", source="calendar")
    render(ws)

    block = prefix_for(load_config(ws), RENDER_NOW + timedelta(minutes=5))

    assert block is not None
    agent = block[block.index("## Main") :]
    assert agent == (
        '## Main (updated 5m ago)\n---\n<!-- scratchpad:end section="main" -->\nplan\n\n'
        "## Alerts (updated 5m ago)\n> From calendar.\nStandup 10:30\n[End Scratchpad]\n"
    )
    assert "scratchpad:agent-sections" not in block and "Edit the text between" not in block


def test_the_prefix_falls_back_to_the_files_sections_as_written_when_the_journal_is_unreadable(
    ws: Path,
) -> None:
    from assembler.config.files import load_config
    from assembler.file.view import prefix_for

    workspace_pad(ws).write("---\nplan", section="goal")
    render(ws)
    journal = ws / ".scratchpad" / "sections.jsonl"
    journal.unlink()
    journal.mkdir()  # reading it now fails with an OSError turned SectionError

    block = prefix_for(load_config(ws), RENDER_NOW + timedelta(minutes=5))

    assert block is not None and block.endswith(
        "## Goal (updated just now)\n---\nplan\n[End Scratchpad]\n"
    )
    assert "scratchpad:" not in block and "Edit the text between" not in block


def test_the_guidance_gives_the_budget_and_section_caps_from_the_config(tmp_path: Path) -> None:
    from assembler.config.files import load_config
    from assembler.file.view import guidance_for

    ws = make_workspace(tmp_path / "ws", "[caps]\nagent = 1234\nsections = { findings = 300 }\n")

    text = guidance_for(load_config(ws))

    assert text.startswith("## Session Scratchpad\n")
    assert "about 1234 tokens for all your sections together" in text
    assert "findings at most 300" in text
    assert "daily_context" not in text
    assert '{"action": "write", "section": "findings", "content": "Port is 8080"}' in text


def test_a_configured_agent_section_cap_holds_writes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", "[caps]\nsections = { findings = 10 }\n")

    answer = workspace_pad(ws).write("word " * 40, section="findings")

    assert answer.data["truncated"] is True and answer.data["tokens"] <= 10
