"""Tests for assembler/pad.py: the agent's sections under their caps, the two tools' calls,
subsystem sections."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

from pads import (
    Clock,
)

from assembler.pad.journal import (
    Journal,
)
from assembler.pad.sections import Scratchpad
from assembler.tokens import count_chars, estimate_tokens, truncate_to_tokens


def test_read_of_one_section_returns_the_text_exactly_as_written(pad: Scratchpad) -> None:
    text = '  indented\n\n---\n<!-- scratchpad:end section="findings" -->\r\ntrailing\n\n'

    assert pad.write(text, section="findings").ok

    assert pad.read("findings").data["content"] == text


def test_write_and_append_default_to_section_main(pad: Scratchpad) -> None:
    pad.write("plan")
    pad.append("step 2")

    assert pad.read("main").data["content"] == "plan\nstep 2"


def test_append_joins_with_a_newline_only_when_the_section_has_text(pad: Scratchpad) -> None:
    pad.append("first", section="findings")
    pad.append("second", section="findings")

    assert pad.read("findings").data["content"] == "first\nsecond"


def test_write_answers_with_the_tokens_of_the_section_and_the_agent_part(
    pad: Scratchpad,
) -> None:
    pad.write("12345678", section="goal")

    answer = pad.write("hello", section="findings")

    assert answer.ok
    assert answer.message == "Wrote section 'findings' (2 tokens; agent part 4/2000 tokens used)."
    assert answer.data["agent_tokens"] == 4


def test_read_without_a_section_returns_every_agent_section_in_display_order(
    pad: Scratchpad,
) -> None:
    pad.write("notes", section="api-notes")
    pad.write("the plan")
    pad.write("fix it", section="goal")
    pad.set_section("alerts", "standup", ttl=timedelta(hours=1))

    answer = pad.read()

    assert list(answer.data["sections"]) == ["goal", "main", "api-notes"]
    assert answer.data["subsystem"] == {"alerts": "standup"}
    assert answer.message == "3 sections (6/2000 tokens used): goal, main, api-notes."


def test_read_of_an_empty_section_says_so_and_lists_sections_with_content(
    pad: Scratchpad,
) -> None:
    pad.write("fix it", section="goal")

    answer = pad.read("errors")

    assert answer.ok
    assert answer.data["content"] == ""
    assert answer.message == "Section 'errors' is empty. Sections with content: goal."


def test_clear_of_one_section_leaves_the_others(pad: Scratchpad) -> None:
    pad.write("fix it", section="goal")
    pad.write("boom", section="errors")

    answer = pad.clear("errors")

    assert answer.message == "Cleared section 'errors'."
    assert list(pad.state()) == ["goal"]


def test_clear_without_a_section_erases_every_agent_section_but_no_subsystem_one(
    pad: Scratchpad,
) -> None:
    pad.write("fix it", section="goal")
    pad.write("plan")
    pad.set_section("alerts", "standup", ttl=None)

    answer = pad.clear()

    assert answer.message == "Cleared 2 sections: goal, main."
    assert list(pad.state()) == ["alerts"]


def test_the_sectioned_tool_example_workflow_works_as_tool_calls(pad: Scratchpad) -> None:
    calls = [
        {"action": "write", "section": "goal", "content": "Fix the database connection error"},
        {
            "action": "write",
            "section": "findings",
            "content": "Error says 'connection refused on port 5432'",
        },
        {"action": "append", "section": "findings", "content": "PostgreSQL service is stopped"},
        {"action": "write", "section": "errors", "content": "restart failed once"},
        {"action": "clear", "section": "errors"},
    ]
    assert all(pad.tool_call(call).ok for call in calls)

    answer = pad.tool_call({"action": "read"})

    assert answer.data["sections"] == {
        "goal": "Fix the database connection error",
        "findings": "Error says 'connection refused on port 5432'\nPostgreSQL service is stopped",
    }
    assert pad.state()["goal"].source == "tool"


def test_session_tool_replace_reports_tokens_used_of_the_budget(pad: Scratchpad) -> None:
    answer = pad.session_tool("## Plan\n1. Fix X", "replace")

    assert answer.ok
    assert answer.message == "Scratchpad updated (4/2000 tokens used)."
    assert pad.read("main").data["content"] == "## Plan\n1. Fix X"


def test_session_tool_defaults_to_replace(pad: Scratchpad) -> None:
    pad.session_tool("old content")

    pad.session_tool("new content")

    assert pad.read("main").data["content"] == "new content"


def test_session_tool_append_adds_a_line_and_reports_tokens_used(pad: Scratchpad) -> None:
    pad.session_tool("line 1")

    answer = pad.session_tool("line 2", "append")

    assert answer.message == "Scratchpad appended (4/2000 tokens used)."
    assert pad.read("main").data["content"] == "line 1\nline 2"


def test_session_tool_replace_over_budget_is_truncated_and_says_the_size_kept_and_the_budget(
    pad: Scratchpad,
) -> None:
    text = "\n".join(f"line {i:04d} " + "x" * 55 for i in range(200))  # 13199 characters
    assert estimate_tokens(text) == 3300

    answer = pad.session_tool(text, "replace")

    kept = pad.read("main").data["content"]
    assert text.startswith(kept)
    assert text[len(kept)] == "\n"  # cut at a line end, so a little under the budget
    assert estimate_tokens(kept) == answer.data["tokens"] == 1997
    assert answer.ok
    assert answer.message == (
        "Scratchpad truncated to 1997 tokens, within its 2000 token budget (original: 3300). "
        "Consider summarizing."
    )


def test_session_tool_append_over_budget_is_rejected_and_leaves_main_unchanged(
    pad: Scratchpad, journal: Journal
) -> None:
    pad.session_tool("a" * 7200)  # 1800 tokens
    before = journal.path.read_bytes()

    answer = pad.session_tool("b" * 1999, "append")  # 500 tokens more

    assert not answer.ok
    assert answer.message == (
        "Append would exceed 2000 token budget (current: 1800, append: 500). "
        "Use mode 'replace' to rewrite, or reduce content."
    )
    assert journal.path.read_bytes() == before
    assert pad.read("main").data["content"] == "a" * 7200


def test_session_tool_budget_is_what_the_other_agent_sections_leave(pad: Scratchpad) -> None:
    pad.write("g" * 2000, section="goal")  # 500 tokens

    answer = pad.session_tool("m" * 40)

    assert answer.message == (
        "Scratchpad updated (10/1500 tokens used). "
        "Other agent sections use 500 of the 2000 tokens of the agent part."
    )


def test_session_tool_budget_is_mains_own_cap_when_configured(journal: Journal) -> None:
    pad = Scratchpad(journal, section_caps={"main": 10})

    answer = pad.session_tool("a" * 36)
    rejected = pad.session_tool("b" * 20, "append")

    assert answer.message == "Scratchpad updated (9/10 tokens used)."
    assert rejected.message == (
        "Append would exceed 10 token budget (current: 9, append: 6). "
        "Use mode 'replace' to rewrite, or reduce content."
    )


def test_session_tool_rejects_an_unknown_mode(pad: Scratchpad) -> None:
    answer = pad.session_tool("x", "overwrite")
    added = pad.session_tool("x", "add")

    assert not answer.ok
    assert answer.message == (
        "`mode` must be 'replace' (overwrite the scratchpad) or 'append' (add to it), got "
        '"overwrite". Use {"content": "x", "mode": "replace"}'
    )
    assert added.message.endswith('Use {"content": "x", "mode": "append"}')
    assert pad.state() == {}


def test_write_over_a_section_cap_is_truncated_and_names_the_section_cap(
    journal: Journal,
) -> None:
    pad = Scratchpad(journal, section_caps={"findings": 10})

    answer = pad.write("x" * 80, section="findings")

    assert answer.ok and answer.data["truncated"]
    assert answer.message == (
        "Section 'findings' truncated to 10 tokens, within its section cap of 10 (original: "
        "20). Consider summarizing."
    )
    assert pad.read("findings").data["content"] == "x" * 40


def test_a_write_cut_at_a_word_end_says_the_size_kept_and_the_cap_it_was_cut_to(
    journal: Journal,
) -> None:
    pad = Scratchpad(journal, agent_cap=100)
    pad.write("g" * 320, section="goal")  # 80 tokens

    answer = pad.write("abcdefghijk " * 17, section="findings")  # 51 tokens, cut at a word end

    assert answer.data["tokens"] == estimate_tokens(pad.read("findings").data["content"]) == 18
    assert answer.message.startswith(
        "Section 'findings' truncated to 18 tokens, within the 20 left (original: 51)"
    )


def test_write_over_the_agent_part_is_truncated_to_the_room_left(journal: Journal) -> None:
    pad = Scratchpad(journal, agent_cap=100)
    pad.write("g" * 320, section="goal")  # 80 tokens

    answer = pad.write("f" * 200, section="findings")  # 50 tokens

    assert answer.message == (
        "Section 'findings' truncated to 20 tokens, within the 20 left (original: 50): the agent "
        "part cap is 100 tokens and the other sections use 80. Consider summarizing, or clear "
        "sections you no longer need."
    )
    assert pad.read("findings").data["content"] == "f" * 80


def test_append_over_a_section_cap_is_rejected_with_current_added_and_cap(
    journal: Journal,
) -> None:
    pad = Scratchpad(journal, section_caps={"findings": 10})
    pad.write("a" * 32, section="findings")  # 8 tokens

    answer = pad.append("b" * 10, section="findings")

    assert not answer.ok
    assert answer.message == (
        "Append would exceed the 10 token cap of section 'findings' (current: 8, append: 3). "
        "Use write to rewrite the section, or reduce content."
    )
    assert pad.read("findings").data["content"] == "a" * 32


def test_append_over_the_agent_part_is_rejected_with_current_added_and_cap(
    journal: Journal,
) -> None:
    pad = Scratchpad(journal, agent_cap=100)
    pad.write("g" * 320, section="goal")  # 80 tokens
    pad.write("f" * 40, section="findings")  # 10 tokens

    answer = pad.append("x" * 43, section="findings")

    assert not answer.ok
    assert answer.message == (
        "Append would exceed the 100 token cap of the agent part (current: 90, append: 11). "
        "Rewrite a section shorter with write, clear sections you no longer need, or reduce "
        "content."
    )
    assert pad.read("findings").data["content"] == "f" * 40


def test_a_write_with_no_room_left_in_the_agent_part_is_rejected(journal: Journal) -> None:
    pad = Scratchpad(journal, agent_cap=10)
    pad.write("g" * 40, section="goal")

    answer = pad.write("more", section="findings")

    assert not answer.ok
    assert answer.message == (
        "No room for section 'findings': the other agent sections use 10 of the 10 token agent "
        "part, and the text has 1 token. Clear or shorten another section first."
    )
    assert "findings" not in pad.state()


def test_caps_are_counted_with_the_injected_counter(journal: Journal) -> None:
    pad = Scratchpad(journal, agent_cap=5, count=count_chars)

    answer = pad.write("abcdefgh", section="findings")

    assert answer.message.startswith("Section 'findings' truncated to 5 tokens, within the 5")
    assert pad.read("findings").data["content"] == "abcde"


def test_truncation_prefers_a_line_end_then_a_word_end_near_the_cut() -> None:
    lines = "first line here\nsecond line here\nthird"
    words = "alpha beta gamma delta epsilon"

    assert truncate_to_tokens(lines, 9) == "first line here\nsecond line here"
    assert truncate_to_tokens(words, 7) == "alpha beta gamma delta"
    assert truncate_to_tokens("x" * 100, 5) == "x" * 20
    assert truncate_to_tokens("short", 5) == "short"


def test_a_subsystem_section_expires_on_its_ttl(pad: Scratchpad, clock: Clock) -> None:
    answer = pad.set_section("alerts", "Standup in 10 min", ttl=timedelta(hours=2), source="cal")

    assert answer.message == ("Section 'alerts' set (5 tokens, expires 2026-03-01T11:00:00+00:00).")
    clock.advance(hours=1, minutes=59)
    assert pad.state()["alerts"].kind == "subsystem"
    assert pad.state()["alerts"].source == "cal"
    clock.advance(minutes=1)
    assert "alerts" not in pad.state()


def test_a_subsystem_section_without_ttl_stays_until_removed(pad: Scratchpad, clock: Clock) -> None:
    pad.set_section("build", "green", ttl=None, source="ci")
    clock.advance(days=400)
    assert pad.state()["build"].expires is None

    answer = pad.remove_section("build", source="ci")

    assert answer.message == "Removed section 'build'."
    assert pad.state() == {}


def test_agents_cannot_write_append_or_clear_a_subsystem_section(pad: Scratchpad) -> None:
    pad.set_section("alerts", "Disk full", ttl=None, source="monitor")

    answers = [
        pad.write("mine now", section="alerts"),
        pad.append("me too", section="alerts"),
        pad.clear("alerts"),
    ]

    assert not any(a.ok for a in answers)
    assert "written by a subsystem (monitor)" in answers[0].message
    assert pad.state()["alerts"].content == "Disk full"


def test_set_section_refuses_agent_section_names_and_bad_ttls(pad: Scratchpad) -> None:
    pad.write("notes", section="api-notes")

    refused = [
        pad.set_section("goal", "x"),
        pad.set_section("api-notes", "x"),
        pad.set_section("alerts", "x", ttl=timedelta(0)),
        pad.set_section("Alerts!", "x"),
    ]

    assert [a.data["mistake"] for a in refused] == [
        "agent-section",
        "agent-section",
        "ttl",
        "section-name",
    ]
    assert list(pad.state()) == ["api-notes"]


def test_remove_section_refuses_agent_sections(pad: Scratchpad) -> None:
    pad.write("plan")

    answer = pad.remove_section("main")

    assert not answer.ok
    assert pad.read("main").data["content"] == "plan"


def test_file_edit_import_writes_changed_clears_deleted_and_leaves_unchanged_alone(
    pad: Scratchpad, journal: Journal
) -> None:
    pad.write("fix it", section="goal")
    pad.write("port 8080", section="findings")
    pad.write("boom", section="errors")
    events_before = len(journal.events())

    answer = pad.import_file_edits(
        {"goal": "fix it", "findings": "port 8081", "errors": None, "api-notes": "new"}
    )

    assert answer.data == {
        "written": ["findings", "api-notes"],
        "cleared": ["errors"],
        "skipped": [],
    }
    assert answer.message == "Imported edits: wrote findings, api-notes; cleared errors."
    assert {n: s.content for n, s in pad.state().items()} == {
        "goal": "fix it",
        "findings": "port 8081",
        "api-notes": "new",
    }
    assert pad.state()["findings"].source == "file-edit"
    assert len(journal.events()) == events_before + 3


def test_file_edit_import_with_nothing_changed_records_no_event(
    pad: Scratchpad, journal: Journal
) -> None:
    pad.write("fix it", section="goal")
    before = journal.path.read_bytes()

    answer = pad.import_file_edits({"goal": "fix it", "errors": None})

    assert answer.message == "No edits to import."
    assert journal.path.read_bytes() == before


def test_file_edit_import_keeps_text_over_the_caps_and_skips_subsystem_sections(
    journal: Journal,
) -> None:
    pad = Scratchpad(journal, agent_cap=5)
    pad.set_section("alerts", "Disk full", ttl=None)

    answer = pad.import_file_edits({"main": "a long text that is over the cap", "alerts": None})

    assert answer.data["skipped"] == ["alerts"]
    assert pad.read("main").data["content"] == "a long text that is over the cap"
    assert "alerts" in pad.state()


def test_importing_sections_pulls_in_no_heavy_module() -> None:
    code = (
        "import sys, assembler.pad.journal, assembler.pad.tool_calls, assembler.pad.sections\n"
        "import assembler.pad.hand_edits\n"
        "heavy = ('torch', 'numpy', 'jinja2', 'frontmatter', 'yaml', 'filelock', "
        "'sentence_transformers', 'assembler.config.schema')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )

    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert output.strip() == "[]"
