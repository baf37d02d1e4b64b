"""Tests for assembler/handedits.py: hand edits of SCRATCHPAD.md going back to the journal."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pads import (
    RENDER_NOW,
    agent,
    edit_file,
    file_text,
    make_workspace,
    render,
    workspace_pad,
)

from assembler.file.codec import (
    REGION_BEGIN,
    REGION_END,
    decode_sections,
    end_marker,
)
from assembler.hosts.registry import HOSTS
from assembler.pad.agent_part import encode_sections
from assembler.pad.hand_edits import file_edits
from assembler.pad.journal import (
    Event,
)


def test_file_edits_maps_changed_sections_to_text_and_deleted_ones_to_none() -> None:
    rendered = {"goal": "a", "findings": "b", "errors": "c"}
    found = {"goal": "a", "findings": "B", "main": "new"}

    assert file_edits(rendered, found) == {"findings": "B", "main": "new", "errors": None}


def test_a_hand_edit_of_an_agent_section_is_imported_before_the_next_render(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("port 8080", section="findings")
    render(ws)
    edit_file(ws, "port 8080", "port 8081\n---\nsee /etc/app")

    meta = render(ws)

    assert pad.read("findings").data["content"] == "port 8081\n---\nsee /etc/app"
    assert pad.state()["findings"].source == "file-edit"
    assert meta["file_edits"]["imported"] == ["findings"]
    assert decode_sections(file_text(ws))["findings"] == "port 8081\n---\nsee /etc/app"


def test_a_section_deleted_by_hand_is_cleared(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("fix it", section="goal")
    pad.write("port 8080", section="findings")
    render(ws)
    text = file_text(ws)
    start = text.index("## Goal")
    end = text.index(end_marker_line := '<!-- scratchpad:end section="goal" -->') + len(
        end_marker_line
    )
    (ws / "SCRATCHPAD.md").write_text(text[:start] + text[end:])

    meta = render(ws)

    assert "goal" not in pad.state()
    assert pad.read("findings").data["content"] == "port 8080"
    assert meta["file_edits"]["cleared"] == ["goal"]


def test_a_section_added_by_hand_between_new_markers_is_imported(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    edit_file(
        ws,
        REGION_END,
        '<!-- scratchpad:begin section="errors" -->\nOOMKilled\n'
        f'<!-- scratchpad:end section="errors" -->\n{REGION_END}',
    )

    render(ws)

    assert pad.read("errors").data["content"] == "OOMKilled"


def test_an_edit_of_the_auto_part_is_overwritten_and_the_file_says_so(ws: Path) -> None:
    workspace_pad(ws).write("the plan")
    render(ws)
    edit_file(ws, "## Time Context", "## Time Context\n- my own note")

    meta = render(ws)

    text = file_text(ws)
    assert "my own note" not in text
    assert meta["file_edits"]["auto_overwritten"] is True
    assert meta["file_edits"]["imported"] == []
    assert "were overwritten; keep notes in the agent sections" in text
    # Nothing typed is lost: the line is kept, and the notice says where.
    saved = meta["file_edits"]["auto_saved"]
    assert saved.startswith(".scratchpad/conflicts/") and saved.endswith("-auto-part.md")
    assert (ws / saved).read_text() == "- my own note\n"
    assert f"(a copy is in {saved})" in text
    assert "were overwritten" not in (render(ws) and file_text(ws)), "only the once"


def test_when_the_journal_also_changed_the_journal_wins_and_the_file_text_is_saved(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.write("v1", section="findings")
    render(ws)
    pad.write("v2 from a tool call", section="findings")
    edit_file(ws, "\nv1\n", "\nv1 edited by hand\n")

    meta = render(ws)

    assert pad.read("findings").data["content"] == "v2 from a tool call"
    assert meta["file_edits"]["conflicts"] == ["findings"]
    (saved,) = (ws / ".scratchpad" / "conflicts").iterdir()
    assert saved.read_text() == "v1 edited by hand"
    assert any(str(saved) in d["why"] for d in meta["degraded"])
    # The agent reading the file learns that its edit was set aside, and where it is.
    text = file_text(ws)
    assert (
        "Your edit of section findings at" in text
        and f"your text is in .scratchpad/conflicts/{saved.name}." in text
    )
    assert "Your edit of section" not in (render(ws) and file_text(ws)), "only the once"


def test_removed_region_markers_import_nothing_and_clear_nothing(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    text = file_text(ws)
    (ws / "SCRATCHPAD.md").write_text(text[: text.index(REGION_BEGIN)])

    meta = render(ws)

    assert pad.read("main").data["content"] == "the plan"
    assert any("markers are gone" in d["why"] for d in meta["degraded"])
    assert decode_sections(file_text(ws)) == {"main": "the plan"}


def test_a_broken_frontmatter_still_imports_the_edited_section_but_clears_nothing(
    ws: Path,
) -> None:
    pad = workspace_pad(ws, now=RENDER_NOW - timedelta(days=1))
    pad.write("old", section="findings")
    pad.write("fix it", section="goal")
    render(ws)
    text = file_text(ws).replace("ttl_minutes:", "ttl_minutes: [", 1)
    text = text.replace("\nold\n", "\nnew\n")
    start = text.index("## Goal")
    text = text[:start] + text[text.index("## Findings") :]
    (ws / "SCRATCHPAD.md").write_text(text)

    meta = render(ws)

    assert pad.read("findings").data["content"] == "new"
    assert pad.read("goal").data["content"] == "fix it"
    assert any("frontmatter" in d["why"] for d in meta["degraded"])


def test_an_unchanged_file_imports_nothing(ws: Path) -> None:
    workspace_pad(ws).write("the plan")
    render(ws)
    journal = ws / ".scratchpad" / "sections.jsonl"
    before = journal.read_bytes()

    meta = render(ws)

    assert journal.read_bytes() == before and "file_edits" not in meta


def append_to_file(workspace: Path, text: str) -> None:
    (workspace / "SCRATCHPAD.md").write_bytes((file_text(workspace) + text).encode("utf-8"))


def test_notes_typed_after_the_region_are_appended_to_main_once_and_the_file_says_so(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    append_to_file(ws, "\n## My notes\nremember to call Sam\n")

    meta = render(ws)

    assert pad.read("main").data["content"] == "the plan\n## My notes\nremember to call Sam"
    assert pad.state()["main"].source == "file-edit"
    assert meta["file_edits"]["stray"] == {"appended_to": "main", "tokens": 8}
    assert meta["file_edits"]["auto_overwritten"] is False
    text = file_text(ws)
    assert "was added to the end of section main" in text
    assert decode_sections(text)["main"].endswith("remember to call Sam")
    again = render(ws)
    assert "file_edits" not in again and "was added to the end" not in file_text(ws)
    assert pad.read("main").data["content"].count("remember to call Sam") == 1


def test_a_line_typed_after_a_sections_end_marker_is_appended_to_main(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("fix it", section="goal")
    pad.write("port 8080", section="findings")
    render(ws)
    goal_end = end_marker("goal")
    edit_file(ws, goal_end, f"{goal_end}\nthe deploy key is in 1Password")

    meta = render(ws)

    assert pad.read("main").data["content"] == "the deploy key is in 1Password"
    assert pad.read("goal").data["content"] == "fix it"
    assert pad.read("findings").data["content"] == "port 8080"
    assert meta["file_edits"]["stray"]["appended_to"] == "main"


def test_an_edit_inside_a_subsystem_section_is_appended_to_main_and_the_section_stays(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.set_section("alerts", "Standup 10:30", source="calendar")
    render(ws)
    edit_file(ws, "\nStandup 10:30\n", "\nStandup 10:30 (I will be 5 min late)\n")

    meta = render(ws)

    assert pad.read("main").data["content"] == "Standup 10:30 (I will be 5 min late)"
    assert pad.read("alerts").data["content"] == "Standup 10:30"
    assert meta["file_edits"]["stray"]["appended_to"] == "main"


def test_the_programs_own_headings_notes_and_previews_are_never_taken_for_agent_text(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws", "[caps]\nagent = 60\n")
    pad = workspace_pad(ws)
    pad.write("fix it", section="goal")
    pad.journal.record(Event(RENDER_NOW, "main", "write", "long plan line\n" * 40, "test"))
    pad.set_section("alerts", "Standup 10:30", ttl=timedelta(hours=1), source="calendar")
    first = render(ws)
    assert first["agent_omitted"] and "> From calendar, until" in file_text(ws)
    edit_file(ws, "\nfix it\n", "\nfix it today\n")

    # The alert has expired by the next run: its lines in the file are still the program's.
    meta = render(ws, RENDER_NOW + timedelta(hours=2))

    assert meta["file_edits"]["imported"] == ["goal"]
    assert meta["file_edits"]["stray"] is None
    assert pad.read("main").data["content"] == "long plan line\n" * 40


def test_text_typed_outside_the_markers_that_is_over_budget_is_saved_in_conflicts(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws", "[caps]\nagent = 30\n")
    pad = workspace_pad(ws)
    pad.write("the plan " * 12)  # 27 tokens
    render(ws)
    append_to_file(ws, "a long note that does not fit in what is left of the agent part\n")

    meta = render(ws)

    stray = meta["file_edits"]["stray"]
    saved = Path(stray["saved"])
    assert saved.parent == ws / ".scratchpad" / "conflicts"
    assert saved.read_text() == "a long note that does not fit in what is left of the agent part"
    assert "Append would exceed" in stray["why"]
    assert any(stray["saved"] in d["why"] for d in meta["degraded"])
    assert "could not be added to section main" in file_text(ws)
    assert pad.read("main").data["content"] == "the plan " * 12


def test_text_typed_where_the_region_markers_were_is_saved_in_conflicts(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    text = file_text(ws)
    kept = text[: text.index(REGION_BEGIN)] + "call Sam back about the invoice\n"
    (ws / "SCRATCHPAD.md").write_text(kept)

    meta = render(ws)

    saved = Path(meta["file_edits"]["stray"]["saved"])
    assert saved.read_text() == "call Sam back about the invoice"
    assert pad.read("main").data["content"] == "the plan"


def test_notes_added_to_a_file_without_agent_sections_go_to_main(ws: Path) -> None:
    render(ws)
    append_to_file(ws, "\n## My notes\nremember to call Sam\n")

    meta = render(ws)

    assert workspace_pad(ws).read("main").data["content"] == "## My notes\nremember to call Sam"
    assert meta["file_edits"]["auto_overwritten"] is False
    assert "remember to call Sam" in decode_sections(file_text(ws))["main"]


def test_a_dry_run_before_the_real_run_does_not_append_the_text_twice(ws: Path) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    append_to_file(ws, "remember to call Sam\n")

    run_once(load_config(ws), now=RENDER_NOW, dry_run=True, hosts=HOSTS)
    meta = render(ws)

    assert pad.read("main").data["content"] == "the plan\nremember to call Sam"
    assert meta["file_edits"]["stray"]["appended_to"] == "main"


def test_without_the_copy_of_the_last_render_text_after_the_region_is_still_kept(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    (ws / ".scratchpad" / "rendered.md").unlink()
    append_to_file(ws, "remember to call Sam\n")

    render(ws)

    assert pad.read("main").data["content"] == "the plan\nremember to call Sam"


def test_stray_lines_are_the_added_lines_after_the_auto_part_outside_any_markers() -> None:
    from assembler.pad.hand_edits import stray_lines, stray_text

    rendered = encode_sections([agent("goal", "fix it")]).replace(
        REGION_BEGIN, f"# Auto\n- mood\n\n{REGION_BEGIN}"
    )
    body = (
        rendered.replace("- mood", "- mood, edited")
        .replace("fix it", "fix it\nnew goal line")
        .replace(REGION_END, f"between\n\n## Errors\n{REGION_END}")
        .replace("## Errors", '## Errors\n<!-- scratchpad:begin section="errors" -->\nOOM')
        + "\nafter one\nafter two\n"
    )

    found = stray_lines(body, rendered)

    assert stray_text(body, found) == "between\nafter one\nafter two"
    assert stray_text(body, stray_lines(body, None)) == "after one\nafter two"


def test_a_file_saved_with_crlf_line_ends_imports_nothing_and_is_not_degraded(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("fix it", section="goal")
    pad.write("port 8080\nhost a", section="findings")
    render(ws)
    journal = ws / ".scratchpad" / "sections.jsonl"
    before = journal.read_bytes()
    path = ws / "SCRATCHPAD.md"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))

    meta = render(ws)

    assert journal.read_bytes() == before
    assert meta["degraded"] == [] and "file_edits" not in meta
    assert pad.read("findings").data["content"] == "port 8080\nhost a"


def test_an_edit_saved_with_crlf_line_ends_is_imported_without_carriage_returns(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("port 8080", section="findings")
    render(ws)
    edit_file(ws, "\nport 8080\n", "\nport 8081\nhost a\n")
    path = ws / "SCRATCHPAD.md"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))

    meta = render(ws)

    assert pad.read("findings").data["content"] == "port 8081\nhost a"
    assert meta["file_edits"]["imported"] == ["findings"] and meta["degraded"] == []


def test_line_ends_are_normalised_only_when_every_line_ends_in_crlf() -> None:
    from assembler.file.codec import normalise_line_ends

    assert normalise_line_ends("a\r\nb\r\n") == "a\nb\n"
    assert normalise_line_ends("a\r\r\nb\r\n") == "a\r\nb\n"
    assert normalise_line_ends("a\r\nb\n") == "a\r\nb\n"
    assert normalise_line_ends("a\rb\n") == "a\rb\n"
    assert normalise_line_ends("no line end") == "no line end"


def test_a_hand_typed_section_name_never_builds_a_path_outside_the_conflicts_folder(
    ws: Path, tmp_path: Path
) -> None:
    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    evil = "x/../../../../elsewhere/pwned"
    text = file_text(ws).replace("agent_sections:", f"agent_sections:\n  {evil}: 0123abcd", 1)
    text = text.replace(
        REGION_END,
        f'<!-- scratchpad:begin section="{evil}" -->\nowned\n'
        f'<!-- scratchpad:end section="{evil}" -->\n{REGION_END}',
    )
    (ws / "SCRATCHPAD.md").write_text(text)
    before = {p for p in tmp_path.rglob("*") if ".scratchpad" not in p.parts}

    meta = render(ws)

    (saved,) = (ws / ".scratchpad" / "conflicts").iterdir()
    assert saved.name.endswith("-unnamed-section.md") and saved.read_text() == "owned"
    assert not (tmp_path / "elsewhere").exists()
    after = {p for p in tmp_path.rglob("*") if ".scratchpad" not in p.parts}
    assert after == before  # nothing new anywhere but the state folder
    assert any("is not a valid section name" in d["why"] for d in meta["degraded"])
    assert pad.read("main").data["content"] == "the plan"


def test_two_conflicts_of_one_section_in_one_second_keep_both_texts(tmp_path: Path) -> None:
    from assembler.pad.hand_edits import save_conflict

    first = save_conflict(tmp_path / ".scratchpad", "findings", "one", RENDER_NOW)
    second = save_conflict(tmp_path / ".scratchpad", "findings", "two", RENDER_NOW)
    odd = save_conflict(tmp_path / ".scratchpad", "../../x", "three", RENDER_NOW)
    assert first != second and first.read_text() == "one" and second.read_text() == "two"
    assert second.name.endswith("-findings-2.md")
    assert odd.parent == first.parent and odd.read_text() == "three"


def test_a_link_in_place_of_the_state_folder_stops_the_agent_sections_not_the_render(
    ws: Path, tmp_path: Path
) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = elsewhere / "last-assembly.json"
    planted.write_text("not ours")
    (ws / ".scratchpad").symlink_to(elsewhere)

    assembly = run_once(load_config(ws), now=RENDER_NOW, hosts=HOSTS)

    assert assembly.written
    assert list(elsewhere.iterdir()) == [planted] and planted.read_text() == "not ours"
    assert any(".scratchpad is a symbolic link" in p.why for p in assembly.degraded)


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        # The agent appended twice; its second edit was made on a copy that had only the first.
        ("a", "a\nb", "a\nb\nc", "a\nb\nc"),
        # Different lines changed on each side.
        ("a\nb\nc", "A\nb\nc", "a\nb\nc\nd", "A\nb\nc\nd"),
        # Both added different lines at the same place: both kept, the journal's first.
        ("a", "a\nfrom a tool call", "a\nby hand", "a\nfrom a tool call\nby hand"),
        # Both added a line at the same place, one of them the same line: it is kept once.
        ("a", "a\nb\nc", "a\nc\nd", "a\nb\nc\nd"),
        # The same change on both sides.
        ("a\nb", "a\nB", "a\nB", "a\nB"),
        # One side deleted a line the other left alone.
        ("a\nb\nc", "a\nc", "a\nb\nc\nd", "a\nc\nd"),
        # The same line changed differently: no merge.
        ("a\nb", "a\nB1", "a\nB2", None),
    ],
)
def test_merge_texts_combines_changes_that_do_not_overlap(
    base: str, ours: str, theirs: str, merged: str | None
) -> None:
    from assembler.pad.hand_edits import merge_texts

    assert merge_texts(base, ours, theirs) == merged


@settings(max_examples=200, deadline=None)
@given(
    base=st.lists(st.sampled_from("abcdef"), max_size=6),
    ours=st.lists(st.sampled_from("abcdefgh"), max_size=8),
    theirs=st.lists(st.sampled_from("abcdefxy"), max_size=8),
)
def test_a_merge_keeps_every_line_either_side_added_or_reports_a_conflict(
    base: list[str], ours: list[str], theirs: list[str]
) -> None:
    from assembler.pad.hand_edits import merge_texts

    text = merge_texts("\n".join(base), "\n".join(ours), "\n".join(theirs))
    assert merge_texts("\n".join(base), "\n".join(ours), "\n".join(base)) == "\n".join(ours)
    assert merge_texts("\n".join(base), "\n".join(base), "\n".join(theirs)) == "\n".join(theirs)
    if text is not None:
        lines = text.split("\n")
        for side in (ours, theirs):
            for line in set(side) - set(base):
                assert line in lines  # nothing a side added is lost


def test_an_edit_made_on_a_stale_copy_of_the_file_is_merged_not_set_aside(ws: Path) -> None:
    pad = workspace_pad(ws)
    pad.write("step 1", section="findings")
    render(ws)
    stale = file_text(ws)  # the agent's editor read the file here
    edit_file(ws, "\nstep 1\n", "\nstep 1\nstep 2\n")
    render(ws, RENDER_NOW + timedelta(minutes=1))  # imported step 2 and rendered again
    # The agent writes its older copy with a third line: step 2 is in it, step 3 is new.
    (ws / "SCRATCHPAD.md").write_text(stale.replace("\nstep 1\n", "\nstep 1\nstep 2\nstep 3\n"))

    meta = render(ws, RENDER_NOW + timedelta(minutes=2))

    assert pad.read("findings").data["content"] == "step 1\nstep 2\nstep 3"
    assert meta["file_edits"]["merged"] == ["findings"] and meta["file_edits"]["conflicts"] == []
    assert not (ws / ".scratchpad" / "conflicts").exists()


def test_without_the_record_of_the_last_render_edits_are_imported_and_nothing_cleared(
    ws: Path,
) -> None:
    pad = workspace_pad(ws)
    pad.write("ship it", section="goal")
    pad.write("port 8080", section="findings")
    render(ws)
    (ws / ".scratchpad" / "last-assembly.json").unlink()
    edit_file(ws, "\nport 8080\n", "\nport 8081\n")
    text = file_text(ws)
    start = text.index("## Goal")
    stop = text.index('<!-- scratchpad:end section="goal" -->') + len('end section="goal" -->') + 5
    (ws / "SCRATCHPAD.md").write_text(text[:start] + text[stop:])  # goal's markers deleted

    meta = render(ws, RENDER_NOW + timedelta(minutes=1))

    assert pad.read("findings").data["content"] == "port 8081"
    assert pad.read("goal").data["content"] == "ship it"  # not cleared on a guess
    assert any("is not known" in d["why"] for d in meta["degraded"])


def test_a_run_stopped_between_its_record_and_its_swap_loses_no_edit(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assembler.assembly.write

    pad = workspace_pad(ws)
    pad.write("step 1", section="findings")
    render(ws)
    pad.write("step 1\nfrom the journal", section="findings")

    def killed(*args: object) -> None:
        raise KeyboardInterrupt  # the process dies after the record, before the swap

    monkeypatch.setattr(assembler.assembly.write, "replace_if_unchanged", killed)
    with pytest.raises(KeyboardInterrupt):
        render(ws, RENDER_NOW + timedelta(minutes=1))
    monkeypatch.undo()
    state = json.loads((ws / ".scratchpad" / "last-assembly.json").read_text())
    assert state["pending"] is not None  # the record names a render that never reached the file
    edit_file(ws, "\nstep 1\n", "\nstep 1\nby hand\n")

    meta = render(ws, RENDER_NOW + timedelta(minutes=2))

    assert pad.read("findings").data["content"] == "step 1\nfrom the journal\nby hand"
    assert meta["file_edits"]["merged"] == ["findings"]
    state = json.loads((ws / ".scratchpad" / "last-assembly.json").read_text())
    assert state["pending"] is None and state["renders"][0]["body_sha256"] == meta["body_sha256"]
