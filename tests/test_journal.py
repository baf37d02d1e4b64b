"""Tests for assembler/journal.py: events, folding, compaction, the journal file and its
lock, names and order."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from pads import (
    START,
    Clock,
    agent,
    journal_lines,
)

from assembler.errors import SectionError
from assembler.hosts.openclaw.entries import import_entries
from assembler.pad.journal import (
    Event,
    Journal,
    SectionState,
    compacted_events,
    fold_events,
    ordered,
    validate_section_name,
)
from assembler.pad.sections import Scratchpad


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

    answer = import_entries(pad, [entry])

    assert answer.data["imported"] is False
    assert "main" not in pad.state()


WRITER = """
import sys, time
from pathlib import Path
from assembler.pad.journal import Journal
from assembler.pad.sections import Scratchpad
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
        "from assembler.pad.journal import Journal\n"
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


def test_a_journal_line_with_a_section_name_the_commands_refuse_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "sections.jsonl"
    forged = {"time": "2026-03-02T12:00:00+00:00", "action": "write", "content": "x"}
    lines = [
        json.dumps({**forged, "section": 'main" injected="1'}),
        json.dumps({**forged, "section": "notes"}),
    ]
    path.write_text("\n".join(lines) + "\n")

    events = Journal(path).events()

    assert [event.section for event in events] == ["notes"]
