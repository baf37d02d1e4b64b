"""Tests for assembler/session_entries.py: OpenClaw's scratchpad entries becoming section main."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pads import (
    RENDER_NOW,
    START,
    Clock,
    file_text,
    render,
    scratchpad_entry,
    workspace_pad,
)

from assembler.file.codec import (
    decode_sections,
)
from assembler.hosts.openclaw.entries import import_entries, read_openclaw_scratchpad_entries
from assembler.pad.journal import (
    Journal,
)
from assembler.pad.sections import Scratchpad


def test_openclaw_import_takes_the_newest_scratchpad_entry_as_main(pad: Scratchpad) -> None:
    entries = [
        scratchpad_entry("middle", 5),
        scratchpad_entry("newest", 9, "openclaw:scratchpad:v2"),
        {"type": "custom", "customType": "model-snapshot", "data": "no", "timestamp": "2027-01-01"},
        scratchpad_entry("oldest", 1),
    ]

    answer = import_entries(pad, entries)

    assert answer.data["imported"] is True
    main = pad.state()["main"]
    assert (main.content, main.source, main.updated) == (
        "newest",
        "openclaw",
        START - timedelta(hours=1) + timedelta(minutes=9),
    )


@pytest.mark.parametrize(
    "data", ["the plan", {"content": "the plan"}, {"text": "the plan", "timestamp": 1}]
)
def test_openclaw_import_reads_data_as_text_or_its_content_or_text(
    pad: Scratchpad, data: Any
) -> None:
    import_entries(pad, [scratchpad_entry(data, 1)])

    assert pad.read("main").data["content"] == "the plan"


def test_openclaw_import_keeps_main_when_main_changed_after_the_entry(
    pad: Scratchpad, clock: Clock
) -> None:
    clock.advance(minutes=10)
    pad.write("written by the agent later")

    answer = import_entries(pad, [scratchpad_entry("older plan", 5)])

    assert answer.data["imported"] is False
    assert pad.read("main").data["content"] == "written by the agent later"


def test_openclaw_import_records_nothing_when_main_already_holds_the_text(
    pad: Scratchpad, journal: Journal
) -> None:
    import_entries(pad, [scratchpad_entry("plan", 1)])
    before = journal.path.read_bytes()

    answer = import_entries(pad, [scratchpad_entry("plan", 1)])

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


def test_an_entry_the_host_wrote_after_the_renders_clock_is_not_imported(ws: Path) -> None:
    openclaw_session(
        ws / "chat" / "session.jsonl",
        [scratchpad_entry("the plan then", 1), scratchpad_entry("a plan from later", 120)],
    )

    render(ws)  # at RENDER_NOW: the second entry is an hour after it

    assert decode_sections(file_text(ws)) == {"main": "the plan then"}


def test_openclaw_entries_are_read_from_the_tail_only_when_asked(tmp_path: Path) -> None:
    path = openclaw_session(tmp_path / "s.jsonl", [scratchpad_entry("early", 1)])
    with path.open("a") as handle:
        handle.write(json.dumps({"type": "custom", "customType": "other", "data": "x" * 5000}))
        handle.write("\n" + json.dumps(scratchpad_entry("late", 9)) + "\n")

    whole = read_openclaw_scratchpad_entries([path])
    tail = read_openclaw_scratchpad_entries([path], tail_bytes=1000)

    assert [e["data"] for e in whole] == ["early", "late"]
    assert [e["data"] for e in tail] == ["late"]


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
