"""Tests for assembler/sections.py: the journal, the caps, the seed 000/004 calls, the markers."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import frontmatter
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler.sections import (
    REGION_BEGIN,
    REGION_END,
    Answer,
    Event,
    Journal,
    Scratchpad,
    SectionError,
    SectionState,
    compacted_events,
    decode_sections,
    encode_sections,
    escape_text,
    file_edits,
    find_agent_region,
    fold_events,
    ordered,
    read_openclaw_scratchpad_entries,
    truncate_to_tokens,
    unescape_text,
    validate_section_name,
)
from assembler.tokens import count_chars, estimate_tokens

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime = START) -> None:
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, **kwargs: float) -> None:
        self.moment += timedelta(**kwargs)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def journal(tmp_path: Path, clock: Clock) -> Journal:
    return Journal(tmp_path / ".scratchpad" / "sections.jsonl", now=clock)


@pytest.fixture
def pad(journal: Journal) -> Scratchpad:
    return Scratchpad(journal)


def journal_lines(journal: Journal) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.path.read_text().splitlines()]


def agent(name: str, content: str, when: datetime = START, source: str = "agent") -> SectionState:
    return SectionState(name, content, when, source, "agent")


# --------------------------------------------------------------------------------------------
# The journal.
# --------------------------------------------------------------------------------------------


def test_record_appends_one_json_line_with_time_section_action_content_source_ttl(
    journal: Journal,
) -> None:
    journal.record(Event(START, "findings", "write", "Port is 8080", "agent"))
    journal.record(Event(START, "alerts", "set", "Disk full", "monitor", 7200.0))

    assert journal_lines(journal) == [
        {
            "time": "2026-03-01T09:00:00+00:00",
            "section": "findings",
            "action": "write",
            "content": "Port is 8080",
            "source": "agent",
            "ttl_seconds": None,
        },
        {
            "time": "2026-03-01T09:00:00+00:00",
            "section": "alerts",
            "action": "set",
            "content": "Disk full",
            "source": "monitor",
            "ttl_seconds": 7200.0,
        },
    ]


def test_fold_applies_write_append_and_clear_in_file_order(journal: Journal) -> None:
    later = START + timedelta(minutes=5)
    journal.record_many(
        [
            Event(START, "findings", "write", "one", "agent"),
            Event(START, "findings", "append", "two", "agent"),
            Event(START, "errors", "write", "boom", "agent"),
            Event(later, "errors", "clear", "", "agent"),
            Event(later, "goal", "append", "ship it", "cli"),
        ]
    )

    state = journal.fold()

    assert list(state) == ["goal", "findings"]
    assert state["findings"].content == "one\ntwo"
    assert state["goal"] == SectionState("goal", "ship it", later, "cli", "agent")


def test_truncated_last_line_is_skipped_and_counted_never_fatal(journal: Journal) -> None:
    journal.record(Event(START, "main", "write", "kept", "agent"))
    with journal.path.open("a") as handle:
        handle.write('{"time":"2026-03-01T09:01:00+00:00","section":"main","act')

    read = journal.read()

    assert read.bad_lines == 1
    assert [e.content for e in read.events] == ["kept"]
    assert journal.fold()["main"].content == "kept"


def test_an_append_after_a_crash_starts_on_a_new_line_instead_of_joining_the_broken_one(
    journal: Journal,
) -> None:
    journal.record(Event(START, "main", "write", "kept", "agent"))
    with journal.path.open("a") as handle:
        handle.write('{"time":"2026-03-01T09:01:00+00:')

    journal.record(Event(START, "main", "append", "after", "agent"))

    read = journal.read()
    assert read.bad_lines == 1
    assert journal.fold()["main"].content == "kept\nafter"


def test_lines_with_a_bad_shape_or_an_impossible_ttl_are_skipped_and_counted(
    journal: Journal,
) -> None:
    journal.record(Event(START, "main", "write", "kept", "agent"))
    bad = [
        '{"time":"2026-03-01T09:00:00+00:00","section":"x","action":"set","ttl_seconds":Infinity}',
        '{"time":"2026-03-01T09:00:00+00:00","section":"x","action":"set","ttl_seconds":NaN}',
        '{"time":"2026-03-01T09:00:00+00:00","section":"x","action":"explode"}',
        '{"time":"yesterday","section":"x","action":"write"}',
        "[1, 2, 3]",
    ]
    with journal.path.open("a") as handle:
        handle.write("\n".join(bad) + "\n")

    assert journal.read().bad_lines == len(bad)
    assert list(journal.fold()) == ["main"]


def test_a_writer_that_cannot_get_the_lock_in_time_gets_a_section_error(
    tmp_path: Path,
) -> None:
    from assembler.fsutil import FileLock

    journal = Journal(tmp_path / "sections.jsonl", lock_timeout=0.05)
    holder = FileLock(journal.lock_path)  # another holder, on its own descriptor
    with holder.hold(timeout=1), pytest.raises(SectionError, match="retry"):
        journal.record(Event(START, "main", "write", "x", "agent"))
    assert not journal.path.exists()


def test_a_missing_journal_folds_to_no_sections(journal: Journal) -> None:
    assert journal.fold() == {}
    assert journal.read().bad_lines == 0


def mixed_history() -> list[Event]:
    t = [START + timedelta(minutes=m) for m in range(10)]
    return [
        Event(t[0], "goal", "write", "first goal", "agent"),
        Event(t[1], "goal", "write", "second goal", "cli"),
        Event(t[1], "findings", "append", "a", "agent"),
        Event(t[2], "findings", "append", "b", "tool"),
        Event(t[2], "errors", "write", "oops", "agent"),
        Event(t[3], "errors", "clear", "", "agent"),
        Event(t[3], "alerts", "set", "Meeting in 10 min", "calendar", 3600.5),
        Event(t[4], "stale", "set", "gone by now", "monitor", 60.0),
        Event(t[4], "build", "set", "green", "ci", None),
        Event(t[5], "build", "rm", "", "ci"),
        Event(t[5], "api-notes", "write", "x\n---\n<!-- scratchpad:end -->", "file-edit"),
        Event(t[6], "main", "write", "plan", "agent"),
        Event(t[6], "main", "append", "step 2", "agent"),
    ]


def test_compaction_keeps_the_folded_state_and_shrinks_the_journal(
    journal: Journal, clock: Clock
) -> None:
    journal.record_many(mixed_history())
    clock.advance(minutes=10)
    before = journal.fold()

    assert journal.compact(force=True)

    assert journal.fold() == before
    clock.advance(minutes=55)  # past the alert's TTL: both versions must agree later too
    assert journal.fold() == fold_events(mixed_history(), clock())
    assert len(journal.events()) < len(mixed_history())


def test_compacted_events_are_one_per_section_plus_clear_tombstones() -> None:
    now = START + timedelta(minutes=10)

    events = compacted_events(mixed_history(), now)

    assert sorted((e.section, e.action) for e in events) == [
        ("alerts", "set"),
        ("api-notes", "write"),
        ("errors", "clear"),
        ("findings", "write"),
        ("goal", "write"),
        ("main", "write"),
    ]
    assert fold_events(events, now) == fold_events(mixed_history(), now)


def test_compaction_waits_until_the_journal_passes_its_threshold(
    tmp_path: Path, clock: Clock
) -> None:
    journal = Journal(tmp_path / "sections.jsonl", now=clock, max_events=5)
    journal.record_many([Event(START, "main", "append", str(i), "agent") for i in range(5)])

    assert not journal.compact()
    journal.record(Event(START, "main", "append", "5", "agent"))
    assert journal.compact()
    assert len(journal.events()) == 1
    assert journal.fold()["main"].content == "0\n1\n2\n3\n4\n5"


def test_scratchpad_compacts_by_itself_and_loses_no_append(tmp_path: Path, clock: Clock) -> None:
    journal = Journal(tmp_path / "sections.jsonl", now=clock, max_events=10)
    pad = Scratchpad(journal)

    for i in range(35):
        assert pad.append(f"item {i}", section="findings").ok

    assert len(journal.events()) <= 10
    assert pad.read("findings").data["content"] == "\n".join(f"item {i}" for i in range(35))


def test_a_clear_survives_compaction_as_a_tombstone_so_an_older_openclaw_entry_stays_out(
    journal: Journal, pad: Scratchpad, clock: Clock
) -> None:
    pad.write("plan", section="main")
    clock.advance(minutes=10)
    pad.clear("main")
    journal.compact(force=True)
    entry = {
        "type": "custom",
        "customType": "openclaw:scratchpad",
        "data": "old plan",
        "timestamp": (START + timedelta(minutes=5)).isoformat(),
    }

    answer = pad.import_openclaw_entries([entry])

    assert answer.data["imported"] is False
    assert "main" not in pad.state()


# --------------------------------------------------------------------------------------------
# Several processes, restart.
# --------------------------------------------------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from assembler.sections import Journal, Scratchpad
path, writer, count, section, max_events = sys.argv[1:]
go = Path(path).parent / "go"
while not go.exists():
    time.sleep(0.001)  # a start line, so the writers really overlap
pad = Scratchpad(Journal(path, max_events=int(max_events)), agent_cap=10**9)
for i in range(int(count)):
    answer = pad.append(f"w{writer}-{i}", section=section, source=f"writer-{writer}")
    assert answer.ok, answer.message
"""


def run_writers(path: Path, sections: list[str], count: int, max_events: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(n), str(count), section, str(max_events)]
        )
        for n, section in enumerate(sections)
    ]
    (path.parent / "go").touch()
    assert [w.wait(timeout=60) for w in writers] == [0] * len(writers)


def assert_each_writer_in_order_exactly_once(items: list[str], writers: int, count: int) -> None:
    assert sorted(items) == sorted(f"w{n}-{i}" for n in range(writers) for i in range(count))
    for n in range(writers):
        mine = [int(item.split("-")[1]) for item in items if item.startswith(f"w{n}-")]
        assert mine == list(range(count))


def test_four_processes_appending_to_one_section_lose_nothing_and_keep_their_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".scratchpad" / "sections.jsonl"

    run_writers(path, ["findings"] * 4, 100, max_events=10**6)

    journal = Journal(path)
    read = journal.read()
    assert read.bad_lines == 0
    assert_each_writer_in_order_exactly_once([e.content for e in read.events], 4, 100)
    folded = journal.fold()["findings"].content.split("\n")
    assert_each_writer_in_order_exactly_once(folded, 4, 100)


def test_processes_appending_while_compaction_runs_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".scratchpad" / "sections.jsonl"

    run_writers(path, ["findings", "findings", "w2", "w3"], 60, max_events=25)

    state = Journal(path).fold()
    assert len(Journal(path).events()) <= 25 + 4
    shared = state["findings"].content.split("\n")
    assert_each_writer_in_order_exactly_once(shared, 2, 60)
    for n in (2, 3):
        assert state[f"w{n}"].content.split("\n") == [f"w{n}-{i}" for i in range(60)]


def test_a_new_process_folds_the_journal_to_the_same_state(
    journal: Journal, pad: Scratchpad, clock: Clock
) -> None:
    pad.write("Fix the database connection error", section="goal")
    pad.append("connection refused on 5432", section="findings")
    pad.append("PostgreSQL is stopped", section="findings")
    pad.set_section("alerts", "Standup at 10", ttl=timedelta(days=3650), source="calendar")
    code = (
        "import json, sys\n"
        "from assembler.sections import Journal\n"
        "state = Journal(sys.argv[1]).fold()\n"
        "print(json.dumps({n: [s.content, s.updated.isoformat(), s.source, s.kind,\n"
        "    s.expires.isoformat() if s.expires else None] for n, s in state.items()}))\n"
    )

    output = subprocess.run(
        [sys.executable, "-c", code, str(journal.path)], capture_output=True, text=True, check=True
    ).stdout

    expected = {
        n: [s.content, s.updated.isoformat(), s.source, s.kind, s.expires and s.expires.isoformat()]
        for n, s in journal.fold().items()
    }
    assert json.loads(output) == expected
    assert list(expected) == ["goal", "findings", "alerts"]


# --------------------------------------------------------------------------------------------
# Names and order.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["goal", "findings", "artifacts", "errors", "main", "api-notes", "todo_2", "x"]
)
def test_builtin_names_and_short_slugs_are_valid_section_names(name: str) -> None:
    assert validate_section_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "Findings", "my notes", "9lives", "-x", "a" * 33, "notes!", "café", "main\n"]
)
def test_other_section_names_are_rejected_with_the_rule_and_an_example(name: str) -> None:
    with pytest.raises(SectionError) as caught:
        validate_section_name(name)

    message = str(caught.value)
    assert repr(name) in message
    assert "lowercase letter" in message
    assert "'api-notes'" in message


def test_write_to_an_invalid_name_is_answered_not_raised(pad: Scratchpad) -> None:
    answer = pad.write("text", section="My Notes")

    assert not answer.ok
    assert "'My Notes' is not valid" in answer.message
    assert pad.state() == {}


def test_display_order_is_builtins_then_custom_names_then_subsystem_sections() -> None:
    states = [
        SectionState("alerts", "", START, "cal", "subsystem"),
        agent("zeta", ""),
        agent("main", ""),
        SectionState("build", "", START, "ci", "subsystem"),
        agent("alpha", ""),
        agent("goal", ""),
        agent("errors", ""),
        agent("findings", ""),
        agent("artifacts", ""),
    ]

    assert [s.name for s in ordered(states)] == [
        "goal",
        "findings",
        "artifacts",
        "errors",
        "main",
        "alpha",
        "zeta",
        "alerts",
        "build",
    ]


# --------------------------------------------------------------------------------------------
# Seed 004: write, append, read, clear.
# --------------------------------------------------------------------------------------------


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


def test_the_seed_004_example_workflow_works_as_tool_calls(pad: Scratchpad) -> None:
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


def test_an_answer_serialises_to_json_with_ok_message_and_data() -> None:
    answer = Answer(False, "nope — ✗", {"mistake": "x"})

    assert json.loads(answer.to_json()) == {
        "ok": False,
        "message": "nope — ✗",
        "data": {"mistake": "x"},
    }


MISTAKES = [
    (
        {"action": "write", "section": "findings"},
        "missing-content",
        "Missing `content`: write needs the text to save. Use "
        '{"action": "write", "section": "findings", "content": "your text"}',
    ),
    (
        {"action": "append"},
        "missing-content",
        'Missing `content`: append needs the text to save. Use {"action": "append", "content": '
        '"your text"}',
    ),
    (
        {"op": "write", "content": "Port is 8080"},
        "action-alias",
        "The parameter is called `action`, not `op`: "
        '{"action": "write", "content": "Port is 8080"}',
    ),
    (
        {"op": "read", "section": "findings"},
        "action-alias",
        'The parameter is called `action`, not `op`: {"action": "read", "section": "findings"}',
    ),
    (
        {"action": "The config file is at /etc/app/config.yml"},
        "action-is-text",
        "Passing text as the action value is wrong. Use "
        '{"action": "write", "content": "The config file is at /etc/app/config.yml"}',
    ),
    (
        {"action": "write", "section": "The port is 8080"},
        "section-is-text",
        "`section` is the category name (goal, findings, artifacts, errors, main, or a short "
        'custom name like "api-notes"), `content` is the text. It looks like you put text in '
        '`section`; use {"action": "write", "section": "findings", "content": "The port is 8080"}',
    ),
    (
        {"action": "write", "content": "x", "priority": "high"},
        "unknown-key",
        "Unknown parameter `priority`: the call takes only `action`, `section` and `content`, "
        'e.g. {"action": "write", "section": "findings", "content": "your text"}',
    ),
    (
        {"action": "append", "section": "findings", "text": "Port is 8080"},
        "content-alias",
        'The text goes in `content`, not `text`: {"action": "append", "section": "findings", '
        '"content": "Port is 8080"}',
    ),
    (
        {"action": "write", "content": 8080},
        "content-type",
        "`content` must be a string (the text to save), got number. Use "
        '{"action": "write", "content": "your text"}',
    ),
    (
        {"action": "write", "content": ["a", "b"]},
        "content-type",
        "`content` must be a string (the text to save), got array (turn it into text first, "
        'e.g. one item per line). Use {"action": "write", "content": "your text"}',
    ),
    (
        {"action": "frobnicate"},
        "unknown-action",
        "Unknown action 'frobnicate': use one of write, append, read, clear, e.g. "
        '{"action": "write", "section": "findings", "content": "your text"}',
    ),
    (
        {"action": "save", "content": "x"},
        "action-synonym",
        "Unknown action 'save': use 'write' to overwrite a section: "
        '{"action": "write", "content": "x"}',
    ),
    (
        {"action": "Write", "content": "x"},
        "action-case",
        'Unknown action \'Write\': actions are lowercase. Use {"action": "write", "content": "x"}',
    ),
    (
        {"action": "read", "section": "Findings"},
        "section-case",
        'Section names are lowercase: use {"action": "read", "section": "findings"}',
    ),
    (
        {"action": "read", "section": 3},
        "section-type",
        '`section` must be a string naming the category, e.g. "findings"; got number.',
    ),
    (
        {"action": "read", "section": "findings", "content": "x"},
        "content-not-allowed",
        "`content` is only for write and append; read takes none. Use "
        '{"action": "read", "section": "findings"}',
    ),
    (
        {"content": "x"},
        "missing-action",
        "Missing `action`: say what to do, one of write, append, read, clear. Use "
        '{"action": "write", "content": "x"}',
    ),
    (
        ["write", "x"],
        "not-an-object",
        'The call must be a JSON object, e.g. {"action": "write", "section": "findings", '
        '"content": "your text"}',
    ),
]


@pytest.mark.parametrize(("args", "mistake", "message"), MISTAKES, ids=[m[1] for m in MISTAKES])
def test_each_tool_call_mistake_names_the_mistake_shows_the_right_call_and_changes_nothing(
    pad: Scratchpad, journal: Journal, args: Any, mistake: str, message: str
) -> None:
    pad.write("keep me", section="findings")
    before = journal.path.read_bytes()

    answer = pad.tool_call(args)

    assert not answer.ok
    assert answer.data["mistake"] == mistake
    assert answer.message == message
    assert journal.path.read_bytes() == before


# --------------------------------------------------------------------------------------------
# Seed 000: {content, mode} on main with a token budget.
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Per-section and agent-part caps.
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Subsystem sections.
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Imports: file edits and OpenClaw session entries.
# --------------------------------------------------------------------------------------------


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


def test_file_edits_maps_changed_sections_to_text_and_deleted_ones_to_none() -> None:
    rendered = {"goal": "a", "findings": "b", "errors": "c"}
    found = {"goal": "a", "findings": "B", "main": "new"}

    assert file_edits(rendered, found) == {"findings": "B", "main": "new", "errors": None}


def scratchpad_entry(data: Any, minute: int, kind: str = "openclaw:scratchpad") -> dict[str, Any]:
    stamp = (START + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
    return {"type": "custom", "customType": kind, "data": data, "timestamp": stamp}


def test_openclaw_import_takes_the_newest_scratchpad_entry_as_main(pad: Scratchpad) -> None:
    entries = [
        scratchpad_entry("middle", 5),
        scratchpad_entry("newest", 9, "openclaw:scratchpad:v2"),
        {"type": "custom", "customType": "model-snapshot", "data": "no", "timestamp": "2027-01-01"},
        scratchpad_entry("oldest", 1),
    ]

    answer = pad.import_openclaw_entries(entries)

    assert answer.data["imported"] is True
    main = pad.state()["main"]
    assert (main.content, main.source, main.updated) == (
        "newest",
        "openclaw",
        START + timedelta(minutes=9),
    )


@pytest.mark.parametrize(
    "data", ["the plan", {"content": "the plan"}, {"text": "the plan", "timestamp": 1}]
)
def test_openclaw_import_reads_data_as_text_or_its_content_or_text(
    pad: Scratchpad, data: Any
) -> None:
    pad.import_openclaw_entries([scratchpad_entry(data, 1)])

    assert pad.read("main").data["content"] == "the plan"


def test_openclaw_import_keeps_main_when_main_changed_after_the_entry(
    pad: Scratchpad, clock: Clock
) -> None:
    clock.advance(minutes=10)
    pad.write("written by the agent later")

    answer = pad.import_openclaw_entries([scratchpad_entry("older plan", 5)])

    assert answer.data["imported"] is False
    assert pad.read("main").data["content"] == "written by the agent later"


def test_openclaw_import_records_nothing_when_main_already_holds_the_text(
    pad: Scratchpad, journal: Journal
) -> None:
    pad.import_openclaw_entries([scratchpad_entry("plan", 1)])
    before = journal.path.read_bytes()

    answer = pad.import_openclaw_entries([scratchpad_entry("plan", 1)])

    assert answer.data["imported"] is False
    assert journal.path.read_bytes() == before


def test_reading_openclaw_session_files_finds_scratchpad_entries_and_skips_bad_lines(
    tmp_path: Path,
) -> None:
    session = tmp_path / "s.jsonl"
    lines = [
        json.dumps({"type": "session", "version": 3, "id": "x"}),
        json.dumps(scratchpad_entry("first", 1)),
        '{"type":"custom","customType":"openclaw:scratchpad","data":"cut sho',
        json.dumps({"type": "message", "message": {"role": "user", "content": "hi"}}),
        json.dumps(scratchpad_entry({"content": "second"}, 2)),
        json.dumps({"type": "custom", "customType": "openclaw:prompt-error", "data": "x"}),
    ]
    session.write_text("\n".join(lines) + "\n")

    entries = read_openclaw_scratchpad_entries([session, tmp_path / "missing.jsonl"])

    assert [e["data"] for e in entries] == ["first", {"content": "second"}]


# --------------------------------------------------------------------------------------------
# Markers and escaping.
# --------------------------------------------------------------------------------------------

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


@settings(max_examples=300, deadline=None)
@given(section_texts)
def test_any_text_in_any_sections_survives_encode_then_decode(sections: dict[str, str]) -> None:
    states = [agent(name, text) for name, text in sections.items()]

    assert decode_sections(encode_sections(states)) == sections


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(section_texts, texts)
def test_any_text_survives_a_whole_file_with_frontmatter_and_an_auto_part(
    sections: dict[str, str], auto_text: str
) -> None:
    auto = f"# Scratchpad\n\n## Daily Context\n{escape_text(auto_text)}\n\n"
    body = auto + encode_sections([agent(n, t) for n, t in sections.items()])
    text = frontmatter.dumps(frontmatter.Post(body, generator="test", ttl_minutes=30))

    # Decoded from the file's raw text: python-frontmatter's `content` turns "\r\n" into "\n".
    assert decode_sections(text) == sections
    assert frontmatter.loads(text).metadata == {"generator": "test", "ttl_minutes": 30}


@given(texts)
def test_unescape_reverses_escape_for_any_text(text: str) -> None:
    assert unescape_text(escape_text(text)) == text


def test_markers_and_fences_get_one_backslash_and_other_lines_stay_as_they_are() -> None:
    text = '---\n<!-- scratchpad:end section="main" -->\n\\---\n\\n is a newline\n-- not a fence'

    assert escape_text(text) == (
        '\\---\n\\<!-- scratchpad:end section="main" -->\n\\\\---\n\\n is a newline\n-- not a fence'
    )


def test_encoded_sections_have_a_heading_and_markers_inside_the_agent_region() -> None:
    encoded = encode_sections([agent("main", "plan"), agent("goal", "---")])

    assert encoded == (
        f"{REGION_BEGIN}\n"
        "## Goal\n"
        '<!-- scratchpad:begin section="goal" -->\n'
        "\\---\n"
        '<!-- scratchpad:end section="goal" -->\n'
        "\n"
        "## Main\n"
        '<!-- scratchpad:begin section="main" -->\n'
        "plan\n"
        '<!-- scratchpad:end section="main" -->\n'
        f"{REGION_END}\n"
    )


def test_decode_ignores_marker_text_in_the_auto_part_above_the_agent_region() -> None:
    auto = (
        "## Relevant Memories\n"
        '<!-- scratchpad:begin section="goal" -->\nfake\n<!-- scratchpad:end section="goal" -->\n'
        f"{REGION_BEGIN}\nquoted region start\n"
    )
    body = auto + encode_sections([agent("findings", "real")])

    assert decode_sections(body) == {"findings": "real"}


def test_find_agent_region_returns_none_when_the_file_has_none() -> None:
    assert find_agent_region("# Scratchpad\n\nno agent sections\n") is None
    assert find_agent_region(encode_sections([])) == ""


def test_a_section_whose_end_marker_was_deleted_keeps_its_text() -> None:
    body = (
        f"{REGION_BEGIN}\n"
        '<!-- scratchpad:begin section="goal" -->\nfix it\n'
        '<!-- scratchpad:begin section="main" -->\nplan\n<!-- scratchpad:end section="main" -->\n'
        f"{REGION_END}\n"
    )

    assert decode_sections(body) == {"goal": "fix it", "main": "plan"}


def test_an_agent_edit_made_in_the_file_comes_back_through_the_journal(
    pad: Scratchpad,
) -> None:
    pad.write("fix it", section="goal")
    pad.write("port 8080", section="findings")
    rendered_states = list(pad.state().values())
    file_text = "# Scratchpad\n\n" + encode_sections(rendered_states)
    rendered = decode_sections(file_text)

    edited_text = file_text.replace("port 8080", "port 8081\n---\nsee /etc/app")
    edited_text = edited_text.replace("fix it", "")  # emptied by hand, markers kept
    pad.import_file_edits(file_edits(rendered, decode_sections(edited_text)))

    assert pad.read("findings").data["content"] == "port 8081\n---\nsee /etc/app"
    assert pad.read("goal").data["content"] == ""
    reencoded = encode_sections(list(pad.state().values()))
    assert decode_sections(reencoded)["findings"] == "port 8081\n---\nsee /etc/app"


# --------------------------------------------------------------------------------------------
# Import cost.
# --------------------------------------------------------------------------------------------


def test_importing_sections_pulls_in_no_heavy_module() -> None:
    code = (
        "import sys, assembler.sections\n"
        "heavy = ('torch', 'numpy', 'jinja2', 'frontmatter', 'yaml', 'filelock', "
        "'sentence_transformers', 'assembler.config')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )

    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert output.strip() == "[]"


# --------------------------------------------------------------------------------------------
# The agent part of SCRATCHPAD.md: the real render path (assemble → templates → file → parse).
# --------------------------------------------------------------------------------------------

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
    """Run one assembly as `assemble --once` does; return the frontmatter written."""
    from assembler.assemble import run_once
    from assembler.config import load_config

    run_once(load_config(workspace), now=now)
    return dict(frontmatter.load(workspace / "SCRATCHPAD.md").metadata)


def workspace_pad(workspace: Path, now: datetime = RENDER_NOW) -> Scratchpad:
    from assembler.config import load_config
    from assembler.sections import scratchpad_for

    return scratchpad_for(load_config(workspace), now=lambda: now)


def file_text(workspace: Path) -> str:
    # Bytes, decoded: read_text would turn a "\r" the agent wrote into "\n".
    return (workspace / "SCRATCHPAD.md").read_bytes().decode("utf-8")


def edit_file(workspace: Path, old: str, new: str) -> None:
    text = file_text(workspace)
    assert old in text, old
    (workspace / "SCRATCHPAD.md").write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


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
    auto_end = body.index("## Routing Hint")
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


def test_frontmatter_tokens_count_the_agent_part_as_rendered_and_the_whole_body(ws: Path) -> None:
    workspace_pad(ws).write("x " * 300, section="findings")

    meta = render(ws)

    post = frontmatter.load(ws / "SCRATCHPAD.md")
    region = post.content[post.content.index(REGION_BEGIN) :]
    tokens = meta["tokens"]
    assert tokens["agent"] == estimate_tokens(region.strip() + "\n")
    assert tokens["total"] == estimate_tokens(post.content) <= tokens["caps"]["total"]
    assert abs(tokens["auto"] + tokens["agent"] - tokens["total"]) <= 2


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
    ws = make_workspace(tmp_path / "ws", "[caps]\ntotal = 500\nauto = 300\nagent = 350\n")
    text = "\n".join(f"- finding {i}: the api pod restarted with exit code {i}" for i in range(20))
    workspace_pad(ws).write(text, section="findings")

    meta = render(ws)

    tokens = meta["tokens"]
    assert tokens["total"] <= 500
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
    from assembler.render import Renderer
    from assembler.sections import plan_agent_part

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
    assert [o["section"] for o in part.omitted] == ["findings"]


# -- hand edits -----------------------------------------------------------------------------


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


# -- text typed outside the sections' markers -------------------------------------------------


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
    from assembler.assemble import run_once
    from assembler.config import load_config

    pad = workspace_pad(ws)
    pad.write("the plan")
    render(ws)
    append_to_file(ws, "remember to call Sam\n")

    run_once(load_config(ws), now=RENDER_NOW, dry_run=True)
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
    from assembler.sections import stray_lines, stray_text

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


# -- line ends -----------------------------------------------------------------------------------


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
    from assembler.sections import normalise_line_ends

    assert normalise_line_ends("a\r\nb\r\n") == "a\nb\n"
    assert normalise_line_ends("a\r\r\nb\r\n") == "a\r\nb\n"
    assert normalise_line_ends("a\r\nb\n") == "a\r\nb\n"
    assert normalise_line_ends("a\rb\n") == "a\rb\n"
    assert normalise_line_ends("no line end") == "no line end"


# -- bad data -------------------------------------------------------------------------------


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


def test_compaction_moves_unreadable_lines_aside_instead_of_dropping_them(
    journal: Journal,
) -> None:
    journal.record(Event(START, "main", "write", "plan"))
    with journal.path.open("a") as handle:
        handle.write("not json at all\n")

    assert journal.compact(force=True)

    assert journal.read().bad_lines == 0
    assert journal.quarantine_path.read_text() == "not json at all\n"
    assert journal.fold(START)["main"].content == "plan"


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


# -- OpenClaw session entries ---------------------------------------------------------------


def openclaw_session(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-01T08:00:00Z"}
    message = {
        "type": "message",
        "id": "m1",
        "parentId": None,
        "timestamp": "2026-03-01T08:50:00Z",
        "message": {"role": "user", "content": "deploy the api please"},
    }
    lines = [header, message, *entries]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_render_imports_the_newest_openclaw_scratchpad_entry_as_main(ws: Path) -> None:
    openclaw_session(
        ws / "chat" / "session.jsonl",
        [scratchpad_entry("older plan", 1), scratchpad_entry("newest plan", 30)],
    )

    meta = render(ws)

    assert meta["sources"][0]["format"] == "openclaw"
    assert decode_sections(file_text(ws)) == {"main": "newest plan"}
    assert workspace_pad(ws).state()["main"].source == "openclaw"


def test_openclaw_entries_are_read_from_the_tail_only_when_asked(tmp_path: Path) -> None:
    path = openclaw_session(tmp_path / "s.jsonl", [scratchpad_entry("early", 1)])
    with path.open("a") as handle:
        handle.write(json.dumps({"type": "custom", "customType": "other", "data": "x" * 5000}))
        handle.write("\n" + json.dumps(scratchpad_entry("late", 9)) + "\n")

    whole = read_openclaw_scratchpad_entries([path])
    tail = read_openclaw_scratchpad_entries([path], tail_bytes=1000)

    assert [e["data"] for e in whole] == ["early", "late"]
    assert [e["data"] for e in tail] == ["late"]


# -- the prefix block and the guidance ------------------------------------------------------


def test_the_prefix_has_the_fresh_auto_part_and_the_agent_sections_as_they_are_now(
    ws: Path,
) -> None:
    from assembler.config import load_config
    from assembler.sections import prefix_for

    config = load_config(ws)
    assert prefix_for(config, RENDER_NOW) == ""
    render(ws)
    workspace_pad(ws).write("written after the render", section="goal")

    fresh = prefix_for(config, RENDER_NOW + timedelta(minutes=5))
    stale = prefix_for(config, RENDER_NOW + timedelta(hours=5))

    assert fresh is not None and stale is not None
    assert fresh.startswith("[Session Scratchpad - your persistent working memory]\n# SCRATCHPAD")
    assert fresh.endswith("\n## Goal\nwritten after the render\n[End Scratchpad]\n")
    assert "# SCRATCHPAD" not in stale and "written after the render" in stale
    assert prefix_for(config, RENDER_NOW + timedelta(hours=5), fresh_only=True) is None


def test_the_prefix_shows_the_agent_sections_as_written_without_markers_escapes_or_intro(
    ws: Path,
) -> None:
    from assembler.config import load_config
    from assembler.sections import prefix_for

    pad = workspace_pad(ws)
    pad.write('---\n<!-- scratchpad:end section="main" -->\nplan', section="main")
    pad.set_section("alerts", "Standup 10:30", source="calendar")
    render(ws)

    block = prefix_for(load_config(ws), RENDER_NOW + timedelta(minutes=5))

    assert block is not None
    agent = block[block.index("## Main") :]
    assert agent == (
        '## Main\n---\n<!-- scratchpad:end section="main" -->\nplan\n\n'
        "## Alerts\n> From calendar.\nStandup 10:30\n[End Scratchpad]\n"
    )
    assert "scratchpad:agent-sections" not in block and "Edit the text between" not in block


def test_the_prefix_falls_back_to_the_files_sections_as_written_when_the_journal_is_unreadable(
    ws: Path,
) -> None:
    from assembler.config import load_config
    from assembler.sections import prefix_for

    workspace_pad(ws).write("---\nplan", section="goal")
    render(ws)
    journal = ws / ".scratchpad" / "sections.jsonl"
    journal.unlink()
    journal.mkdir()  # reading it now fails with an OSError turned SectionError

    block = prefix_for(load_config(ws), RENDER_NOW + timedelta(minutes=5))

    assert block is not None and block.endswith("## Goal\n---\nplan\n[End Scratchpad]\n")
    assert "scratchpad:" not in block and "Edit the text between" not in block


def test_the_guidance_gives_the_budget_and_section_caps_from_the_config(tmp_path: Path) -> None:
    from assembler.config import load_config
    from assembler.sections import guidance_for

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


# -- round trips through the real render path -----------------------------------------------


def render_with(tmp_path: Path, sections: dict[str, str]) -> tuple[Scratchpad, Path]:
    ws = make_workspace(tmp_path / f"ws{abs(hash(tuple(sections.items())))}")
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
    begin, end = begin_marker_line("findings"), end_marker("findings")
    start = text.index(begin) + len(begin) + 1
    stop = text.index("\n" + end, start)
    (ws / "SCRATCHPAD.md").write_bytes((text[:start] + escape_text(after) + text[stop:]).encode())

    meta = render(ws)

    assert meta.get("file_edits", {}).get("stray") is None  # nothing outside the markers
    assert pad.read("findings").data["content"] == after
    assert pad.read("goal").data["content"] == "keep"
    assert decode_sections(file_text(ws))["findings"] == after


def begin_marker_line(name: str) -> str:
    from assembler.sections import begin_marker

    return begin_marker(name)


def end_marker(name: str) -> str:
    from assembler.sections import end_marker as marker

    return marker(name)


# -- hostile hand edits -------------------------------------------------------------------------


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
    from assembler.sections import save_conflict

    first = save_conflict(tmp_path / ".scratchpad", "findings", "one", RENDER_NOW)
    second = save_conflict(tmp_path / ".scratchpad", "findings", "two", RENDER_NOW)
    odd = save_conflict(tmp_path / ".scratchpad", "../../x", "three", RENDER_NOW)
    assert first != second and first.read_text() == "one" and second.read_text() == "two"
    assert second.name.endswith("-findings-2.md")
    assert odd.parent == first.parent and odd.read_text() == "three"


def test_a_bad_line_is_quarantined_once_even_when_compaction_is_interrupted(
    tmp_path: Path, clock: Clock
) -> None:
    journal = Journal(tmp_path / "sections.jsonl", now=clock, max_events=2)
    journal.record(Event(START, "main", "write", "a"))
    with journal.path.open("ab") as handle:
        handle.write(b'{"broken": \n')
    journal.record(Event(START, "main", "append", "b"))
    # A compaction killed after quarantining and before rewriting: the journal still has the
    # bad line, the quarantine has it too.
    journal._quarantine([b'{"broken": '])
    assert journal.compact(force=True)
    assert journal.quarantine_path.read_bytes() == b'{"broken": \n'
    assert journal.fold(START)["main"].content == "a\nb"


def test_a_link_in_place_of_the_journal_is_never_written_through(
    tmp_path: Path, clock: Clock
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "sections.jsonl").symlink_to(victim)
    pad = Scratchpad(Journal(tmp_path / "state" / "sections.jsonl", now=clock))
    with pytest.raises(SectionError, match="is a symbolic link"):
        pad.write("text")
    assert victim.read_text() == "precious\n"


def test_a_link_in_place_of_the_state_folder_stops_the_agent_sections_not_the_render(
    ws: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / ".scratchpad").symlink_to(elsewhere)

    meta = render(ws)

    assert list(elsewhere.iterdir()) == []
    assert any(".scratchpad is a symbolic link" in d["why"] for d in meta["degraded"])


# -- merging an edit made on a stale copy of the file ---------------------------------------------


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
    from assembler.sections import merge_texts

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
    from assembler.sections import merge_texts

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
    render(ws)  # imported step 2 and rendered again
    # The agent writes its older copy with a third line: step 2 is in it, step 3 is new.
    (ws / "SCRATCHPAD.md").write_text(stale.replace("\nstep 1\n", "\nstep 1\nstep 2\nstep 3\n"))

    meta = render(ws)

    assert pad.read("findings").data["content"] == "step 1\nstep 2\nstep 3"
    assert meta["file_edits"]["merged"] == ["findings"] and meta["file_edits"]["conflicts"] == []
    assert not (ws / ".scratchpad" / "conflicts").exists()


def test_the_newest_scratchpad_entry_of_openclaws_sqlite_store_becomes_main(ws: Path) -> None:
    import sqlite3

    import zstandard

    db = ws / "openclaw-agent.sqlite"
    connection = sqlite3.connect(db)
    connection.execute(
        "CREATE TABLE transcript_events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes "
        "INTEGER, PRIMARY KEY(session_id, seq))"
    )
    start = int((RENDER_NOW - timedelta(minutes=30)).timestamp() * 1000)
    entries = [
        {"type": "session", "version": 4, "id": "s1", "timestamp": "2026-03-02T12:00:00Z"},
        scratchpad_entry("## Plan\n1. old plan", minute=5),
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": "2026-03-02T12:06:00Z",
            "message": {"role": "user", "content": "hi", "timestamp": start + 6},
        },
        scratchpad_entry("## Plan\n1. newest plan, compressed", minute=7),
    ]
    for seq, entry in enumerate(entries, start=1):
        payload = json.dumps(entry)
        if seq == 4:  # a compressed row: its event_json is NULL in 2026.9's store
            blob = zstandard.ZstdCompressor().compress(payload.encode())
            row = (seq, None, start + seq, blob, len(payload))
        else:
            row = (seq, payload, start + seq, None, None)
        connection.execute("INSERT INTO transcript_events VALUES ('s1', ?, ?, ?, ?, ?)", row)
    connection.commit()
    connection.close()
    (ws / "assembler.toml").write_text(
        '[transcripts]\nsources = ["openclaw-agent.sqlite"]\nlookback = "none"\n'
        '[memory]\nenabled = false\n[time]\ntimezone = "UTC"\n'
    )

    render(ws)

    assert workspace_pad(ws).read("main").data["content"] == "## Plan\n1. newest plan, compressed"
