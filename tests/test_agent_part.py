"""Tests for assembler/agent_part.py: the agent sections in a real render, under the caps."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import frontmatter
from hypothesis import HealthCheck, given, settings
from pads import (
    RENDER_NOW,
    agent,
    file_text,
    make_workspace,
    render,
    section_texts,
    texts,
    workspace_pad,
)

from assembler.file.codec import (
    REGION_BEGIN,
    REGION_END,
    decode_sections,
    end_marker,
    escape_text,
    heading_shift,
    unnest_headings,
)
from assembler.file.codec import begin_marker as begin_marker_line
from assembler.pad.journal import (
    Event,
)
from assembler.pad.sections import Scratchpad
from assembler.tokens import estimate_tokens


def test_agent_sections_render_after_the_auto_part_between_markers_in_display_order(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    pad.write("port 8080", section="findings")
    pad.write("fix the deploy", section="goal")
    pad.write("see the runbook", section="api-notes")
    pad.set_section("proactive-alerts", "Standup at 10:30", ttl=timedelta(hours=2), source="cal")

    meta = render(ws)

    body = frontmatter.load(ws / "SCRATCHPAD.md").content
    auto_end = body.index("## Time Context")
    positions = [
        body.index(f"## {t}") for t in ("Goal", "Findings", "Main", "Api notes", "Proactive alerts")
    ]
    assert auto_end < body.index(REGION_BEGIN) < positions[0]
    assert positions == sorted(positions) and positions[-1] < body.index(REGION_END)
    assert "> From cal, until 2026-03-01 11:00 UTC." in body
    assert set(meta["agent_sections"]) == {"goal", "findings", "main", "api-notes"}
    assert meta["agent_omitted"] == []
    assert decode_sections(file_text(ws)) == {
        "goal": "fix the deploy",
        "findings": "port 8080",
        "main": "the plan",
        "api-notes": "see the runbook",
    }


def test_token_counts_cover_the_agent_part_as_rendered_and_the_whole_file_frontmatter_too(
    ws: Path,
) -> None:
    workspace_pad(ws).write("x " * 300, section="findings")

    meta = render(ws)

    text = (ws / "SCRATCHPAD.md").read_text()
    post = frontmatter.loads(text)
    region = post.content[post.content.index(REGION_BEGIN) :]
    tokens = meta["tokens"]
    assert tokens["agent"] == estimate_tokens(region.strip() + "\n")
    assert tokens["total"] == estimate_tokens(text) <= tokens["caps"]["total"]
    head = text[: text.index("\n---\n", 3) + 5]
    assert abs(tokens["frontmatter"] - estimate_tokens(head)) <= 2
    assert abs(tokens["frontmatter"] + tokens["auto"] + tokens["agent"] - tokens["total"]) <= 3


def test_no_agent_sections_render_no_region_and_count_zero(ws: Path) -> None:
    meta = render(ws)

    assert REGION_BEGIN not in file_text(ws)
    assert meta["tokens"]["agent"] == 0 and meta["agent_sections"] == {}


def test_a_subsystem_section_leaves_the_file_when_its_ttl_runs_out(ws: Path) -> None:
    workspace_pad(ws).set_section("alerts", "Disk at 91%", ttl=timedelta(hours=2), source="mon")

    render(ws, RENDER_NOW + timedelta(hours=1))
    assert "Disk at 91%" in file_text(ws)
    render(ws, RENDER_NOW + timedelta(hours=2, seconds=1))
    assert "Disk at 91%" not in file_text(ws)


def test_the_total_cap_shrinks_the_auto_part_first_and_keeps_the_agent_part_whole(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws", "[caps]\ntotal = 400\nauto = 300\nagent = 350\n")
    text = "\n".join(f"- finding {i}: the api pod restarted with exit code {i}" for i in range(20))
    workspace_pad(ws).write(text, section="findings")

    meta = render(ws)

    tokens = meta["tokens"]
    assert tokens["total"] <= 400
    assert tokens["auto"] < 300 - 100, "the auto part gave way"
    assert meta["dropped"], "the auto part says what it dropped"
    assert meta["agent_omitted"] == []
    assert decode_sections(file_text(ws))["findings"] == text


def test_an_agent_part_over_its_cap_says_what_was_left_out_and_where_to_read_it(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws", "[caps]\nagent = 200\n")
    pad = workspace_pad(ws)
    pad.write("keep the goal", section="goal")
    long = "\n".join(
        f"step {i}: check the rollout of shard {i} and note its errors" for i in range(40)
    )
    pad.import_file_edits({"main": long})  # hand edits are never cut on the way in

    meta = render(ws)

    (omitted,) = meta["agent_omitted"]
    assert omitted["section"] == "main" and omitted["read"] == "assemble pad read --section main"
    assert omitted["tokens"] == estimate_tokens(long)
    assert omitted["left_out"] == omitted["tokens"] - omitted["shown"] > 0
    assert estimate_tokens("keep the goal") + omitted["shown"] <= 200
    body = frontmatter.load(ws / "SCRATCHPAD.md").content
    assert (
        f"> Shown in part: {omitted['shown']} of {omitted['tokens']} tokens, "
        f"{omitted['left_out']} left out to stay within the token caps. Full text: "
        "`assemble pad read --section main`"
    ) in body
    assert "step 0: check the rollout" in body  # the preview shows the start
    assert decode_sections(body) == {"goal": "keep the goal"}  # a preview is not editable
    assert set(meta["agent_sections"]) == {"goal"}
    assert pad.read("main").data["content"] == long  # nothing was lost


def test_a_tiny_total_cap_leaves_every_section_with_its_note_and_drops_none_silently(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws", "[caps]\ntotal = 150\nauto = 100\nagent = 100\n")
    pad = workspace_pad(ws)
    pad.write("a" * 300, section="goal")
    pad.write("b" * 300, section="findings")
    pad.set_section("alerts", "c" * 400, source="mon")

    meta = render(ws)

    assert {o["section"] for o in meta["agent_omitted"]} == {"goal", "findings", "alerts"}
    body = file_text(ws)
    for name in ("goal", "findings", "alerts"):
        assert f"`assemble pad read --section {name}`" in body


def test_plan_agent_part_cuts_the_largest_section_first() -> None:
    from assembler.file.render import Renderer
    from assembler.pad.agent_part import plan_agent_part

    states = {
        "goal": agent("goal", "g" * 40),
        "findings": agent("findings", "f" * 2000),
        "main": agent("main", "m" * 400),
    }

    part = plan_agent_part(
        states, render=Renderer().agent_part, count=estimate_tokens, agent_cap=300, limit=10_000
    )

    shown = {s.name: s for s in part.sections}
    assert not shown["goal"].omitted and not shown["main"].omitted
    assert shown["findings"].omitted
    assert sum(s.shown_tokens for s in part.sections) <= 300
    assert [s.name for s in part.omitted] == ["findings"]


def test_a_broken_journal_line_is_reported_in_degraded_and_the_rest_renders(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    with pad.journal.path.open("a") as handle:
        handle.write('{"time": "2026-03-01T09:00:00+00:00", "section": "goal", "act\n')

    meta = render(ws)

    assert any(
        d["what"] == "sections journal" and "1 unreadable line" in d["why"]
        for d in meta["degraded"]
    )
    assert decode_sections(file_text(ws)) == {"main": "the plan"}


def test_an_unreadable_journal_keeps_the_previous_agent_sections_in_the_file(ws: Path) -> None:
    workspace_pad(ws).write("the plan")
    render(ws)
    journal = ws / ".scratchpad" / "sections.jsonl"
    journal.rename(ws / "saved.jsonl")
    journal.mkdir()  # a folder where the journal should be: it cannot be read

    meta = render(ws)

    assert any(d["what"] == "agent sections" for d in meta["degraded"])
    assert decode_sections(file_text(ws)) == {"main": "the plan"}
    assert set(meta["agent_sections"]) == {"main"}


def render_with(tmp_path: Path, sections: dict[str, str]) -> tuple[Scratchpad, Path]:
    # A fresh workspace per example: the renders of one fixed clock share their frontmatter,
    # and a workspace reused across examples would make them ambiguous on purpose.
    ws = make_workspace(Path(tempfile.mkdtemp(prefix="ws", dir=tmp_path)))
    pad = workspace_pad(ws)
    pad.clear()
    # Straight into the journal: empty texts and texts over the caps are what is tested.
    pad.journal.record_many([Event(RENDER_NOW, n, "write", t, "test") for n, t in sections.items()])
    render(ws)
    return pad, ws


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(section_texts)
def test_any_text_written_comes_back_unchanged_through_render_and_parse(
    tmp_path: Path, sections: dict[str, str]
) -> None:
    pad, ws = render_with(tmp_path, sections)

    assert decode_sections(file_text(ws)) == {n: t for n, t in sections.items()}
    assert {n: pad.read(n).data["content"] for n in sections} == sections


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts, texts)
def test_any_agent_edit_made_in_the_file_comes_back_through_the_journal(
    tmp_path: Path, before: str, after: str
) -> None:
    pad, ws = render_with(tmp_path, {"findings": before, "goal": "keep"})
    text = file_text(ws)
    shift = heading_shift(before)
    begin, end = begin_marker_line("findings", shift), end_marker("findings")
    start = text.index(begin) + len(begin) + 1
    stop = text.index("\n" + end, start)
    edited = text[:start] + escape_text(after) + text[stop:]
    (ws / "SCRATCHPAD.md").write_bytes(edited.encode())
    # Typed under the section's nested headings: a heading comes back at the level written.
    typed = unnest_headings(after, shift)
    assert decode_sections(edited)["findings"] == typed

    meta = render(ws)

    assert meta.get("file_edits", {}).get("stray") is None  # nothing outside the markers
    assert pad.read("findings").data["content"] == typed
    assert pad.read("goal").data["content"] == "keep"
    assert decode_sections(file_text(ws))["findings"] == typed
    if shift == 0 and heading_shift(after) == 0:
        assert typed == after


def test_each_section_says_how_long_ago_it_was_written_by_the_renders_clock(ws: Path) -> None:
    workspace_pad(ws, RENDER_NOW - timedelta(hours=3)).write("the old plan", section="goal")
    workspace_pad(ws, RENDER_NOW - timedelta(minutes=20)).write("port 8080", section="findings")

    render(ws)

    text = file_text(ws)
    assert "\n## Goal (updated 3h ago)\n" in text
    assert "\n## Findings (updated 20m ago)\n" in text
    assert decode_sections(text) == {"goal": "the old plan", "findings": "port 8080"}


def test_the_agents_own_headings_are_nested_below_the_sections_heading_in_the_file(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.write("## Plan\n1. deploy\n\n## Findings\n- port 8080")

    render(ws)
    render(ws, RENDER_NOW + timedelta(minutes=5))  # a second run changes nothing

    text = file_text(ws)
    assert "\n## Main (updated 5m ago)\n" in text
    assert "\n### Plan\n" in text and "\n### Findings\n" in text and "\n## Plan" not in text
    assert pad.read("main").data["content"] == "## Plan\n1. deploy\n\n## Findings\n- port 8080"


STAGES = ("staging", "canary", "preview", "demo", "batch", "replica")


def write_session(workspace: Path, minutes_ago: list[int]) -> None:
    """A generic JSONL transcript with a human message (and its answer) that many minutes
    before RENDER_NOW, for each."""
    import json

    folder = workspace / "chat"
    folder.mkdir(exist_ok=True)
    with (folder / "session.jsonl").open("w") as handle:
        for number, minutes in enumerate(minutes_ago):
            stamp = RENDER_NOW - timedelta(minutes=minutes)
            # Each question its own: a text a session repeats three times is a host's prompt.
            asked = f"is the {STAGES[number % len(STAGES)]} port fixed?"
            for role, text in (("user", asked), ("assistant", "Yes.")):
                line = {"role": role, "content": text, "timestamp": stamp.isoformat()}
                handle.write(json.dumps(line) + "\n")
                stamp += timedelta(seconds=30)


def test_a_section_written_before_this_session_says_so_and_one_written_in_it_does_not(
    ws: Path,
) -> None:
    import json

    # An earlier stretch 5h ago, a pause of hours, then this session from 60m ago.
    write_session(ws, [300, 290, 60, 30, 2])
    workspace_pad(ws, RENDER_NOW - timedelta(hours=3)).write("the old plan", section="goal")
    workspace_pad(ws, RENDER_NOW - timedelta(minutes=20)).write("port 8080", section="findings")

    meta = render(ws)

    text = file_text(ws)
    assert "\n## Goal (updated 3h ago, before this session: check it)\n" in text
    assert "\n## Findings (updated 20m ago)\n" in text
    assert meta["session_start"] == (RENDER_NOW - timedelta(minutes=60)).isoformat()
    block = json.loads((ws / ".scratchpad" / "prefix.json").read_text())["block"]
    assert "\n## Goal (updated 3h ago, before this session: check it)\n" in block
    # A pad write publishes the block again without an assembly: the old section still says it.
    workspace_pad(ws, RENDER_NOW + timedelta(minutes=1)).write("port 8081", section="findings")
    from assembler.config.files import load_config
    from assembler.pad.publish import publish_ready, scratchpad_with_ready

    later = RENDER_NOW + timedelta(minutes=1)
    config = load_config(ws)
    publish_ready(config, later, scratchpad_with_ready(config).state())
    block = json.loads((ws / ".scratchpad" / "prefix.json").read_text())["block"]
    assert "\n## Goal (updated 3h ago, before this session: check it)\n" in block
    assert "\n## Findings (updated just now)\n" in block


def test_without_a_session_read_no_section_is_called_older_than_it(ws: Path) -> None:
    workspace_pad(ws, RENDER_NOW - timedelta(days=2)).write("the old plan", section="goal")

    render(ws)

    assert "\n## Goal (updated 2d ago)\n" in file_text(ws)
