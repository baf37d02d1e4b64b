"""The ready block (assembler/pad/ready.py): what hooks and plugins inject, written by renders and
by changes of the agent sections, read without parsing SCRATCHPAD.md; and the prefix block as it
is now (the fresh auto part, the agent sections as the journal holds them)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pads import RENDER_NOW, render, workspace_pad

from assembler.cli.main import main
from assembler.file.codec import body_prefix, read_scratchpad
from assembler.pad.ready import read_ready, ready_path

NOW = datetime.fromisoformat("2026-03-02T23:25:00+11:00")


@pytest.fixture
def rendered(workspace: Path) -> Path:
    stamp = (NOW - timedelta(minutes=4)).isoformat()
    line = {"role": "user", "content": "the helm deploy keeps failing", "timestamp": stamp}
    (workspace / "chat.jsonl").write_text(json.dumps(line) + "\n")
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat.jsonl"]\n[memory]\nenabled = false\n'
        '[time]\ntimezone = "Australia/Sydney"\n'
    )
    assert main(["--once", "-w", str(workspace), "--now", NOW.isoformat()]) == 0
    return workspace


def test_a_render_writes_the_block_hosts_prepend_with_the_files_expiry(rendered: Path) -> None:
    ready = read_ready(rendered / ".scratchpad")
    page = read_scratchpad(rendered / "SCRATCHPAD.md")
    assert ready is not None and ready.block == body_prefix(page.body)
    assert ready.expires == page.expires
    assert ready.fresh_until(timedelta(minutes=30), NOW) == page.expires
    assert ready.matches_file(rendered / "SCRATCHPAD.md")
    assert "## Session Scratchpad" in ready.guidance
    data = json.loads(ready_path(rendered / ".scratchpad").read_text())
    assert data["expires_ms"] == int(page.expires.timestamp() * 1000)  # for JavaScript readers


def test_a_change_of_the_agent_sections_rewrites_the_block_at_once(
    rendered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = read_ready(rendered / ".scratchpad")
    assert main(["pad", "write", "-w", str(rendered), "--section", "goal", "ship 1.14.4"]) == 0
    after = read_ready(rendered / ".scratchpad")
    assert before is not None and after is not None
    assert "ship 1.14.4" in after.block and "ship 1.14.4" not in before.block
    assert after.digest != before.digest and after.auto_digest == before.auto_digest
    assert after.expires == before.expires  # the file was not rendered again
    capsys.readouterr()


def test_the_digest_follows_the_content_not_the_clock(rendered: Path) -> None:
    first = read_ready(rendered / ".scratchpad")
    later = NOW + timedelta(minutes=3)
    assert main(["--once", "-w", str(rendered), "--now", later.isoformat()]) == 0
    second = read_ready(rendered / ".scratchpad")
    assert first is not None and second is not None
    assert first.block != second.block and first.digest == second.digest


def test_a_dry_run_leaves_the_block_alone(rendered: Path) -> None:
    before = ready_path(rendered / ".scratchpad").read_bytes()
    later = NOW + timedelta(minutes=10)
    assert main(["--once", "--dry-run", "-w", str(rendered), "--now", later.isoformat()]) == 0
    assert ready_path(rendered / ".scratchpad").read_bytes() == before


def test_a_broken_or_planted_block_is_not_read(rendered: Path, tmp_path: Path) -> None:
    state = rendered / ".scratchpad"
    ready_path(state).write_text('{"version": 1, "block": 3}')
    assert read_ready(state) is None
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(json.loads(ready_path(state).read_text())))
    ready_path(state).unlink()
    ready_path(state).symlink_to(outside)
    assert read_ready(state) is None


def test_a_section_whose_age_alone_moved_keeps_the_digest_hosts_compare() -> None:
    from assembler.pad.ready import digest_of

    three = digest_of("auto", "## Goal (updated 3h ago)\nship it")
    assert three == digest_of("auto", "## Goal (updated 4h ago)\nship it")
    assert three != digest_of("auto", "## Goal (updated 4h ago)\nship it today")
    assert three != digest_of("auto", "## Plan (updated 3h ago)\nship it")


def test_the_prefix_has_the_fresh_auto_part_and_the_agent_sections_as_they_are_now(
    ws: Path,
) -> None:
    from assembler.config.files import load_config
    from assembler.pad.publish import prefix_for

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
    from assembler.pad.publish import prefix_for

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
    from assembler.pad.publish import prefix_for

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
