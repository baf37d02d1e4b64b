"""What the agent is told about its sections (assembler/pad/guidance.py): the guidance gives the
configured caps, and the caps hold."""

from __future__ import annotations

from pathlib import Path

from pads import make_workspace, workspace_pad


def test_the_guidance_gives_the_budget_and_section_caps_from_the_config(tmp_path: Path) -> None:
    from assembler.config.files import load_config
    from assembler.pad.guidance import guidance_for

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
