"""Tests for assembler/hosts/openclaw/: OpenClaw's sessions read (JSONL files and the agent's
SQLite store, its releases and pi's), the turns the host writes in the human's place, the files
it writes beside its sessions, and where it keeps them."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fixtures.openclaw.lines import (
    CRON_JOB,
    HEARTBEAT_2026_3,
    MAIN_2026_3,
    MAIN_2026_4,
    MAIN_2026_9,
    add_rows,
    conversation_info,
    cron_prompt,
    envelope,
    gateway_notice,
    group_envelope,
    make_db,
    oc4_user,
    oc_assistant,
    oc_chain,
    oc_header,
    oc_header_v,
    oc_tool_result,
    oc_user,
    session_index,
    sqlite_session,
    write_openclaw_2026_3,
    write_openclaw_2026_4,
    write_openclaw_2026_9,
    write_pi_v1,
)
from fixtures.transcript_lines import (
    NOW,
    all_text,
    assemble_with_defaults,
    assert_only_the_humans_conversation,
    host_texts_in,
    iso,
    minutes_ago,
    ms,
    no_host_settings,  # noqa: F401 (autouse)
    read,
    text,
    texts,
    write_jsonl,
)

from assembler.hosts.openclaw import sessions as openclaw_names
from assembler.hosts.openclaw import store as openclaw_store
from assembler.hosts.openclaw.turns import clean_user_text
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import default_sources, read_recent

# --- OpenClaw JSONL -------------------------------------------------------------------------------


def test_openclaw_session_yields_user_and_assistant_text_oldest_first_with_session_and_cwd(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header("sess-1"),
            {
                "type": "custom",
                "customType": "model-snapshot",
                "data": {"provider": "anthropic", "modelId": "claude-opus-4-6"},
                "id": "bb35414e",
                "parentId": None,
                "timestamp": iso(minutes_ago(10)),
            },
            oc_user("79288a1e", "bb35414e", "why is the deploy failing again?", minutes_ago(9)),
            oc_assistant("a1c4e9d0", "79288a1e", [text("The image tag is wrong.")], minutes_ago(8)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["why is the deploy failing again?", "The image tag is wrong."]
    assert [m.role for m in result.messages] == ["user", "assistant"]
    first = result.messages[0]
    assert first.session_id == "sess-1"
    assert first.cwd == "/home/u/.openclaw/workspace"
    assert first.source == str(path)
    assert first.speaker is None
    assert first.timestamp == datetime.fromtimestamp(ms(minutes_ago(9)) / 1000, UTC)
    assert result.sources[0].format == "openclaw"
    assert result.sources[0].messages == 2
    assert result.sources[0].bad_lines == 0
    assert result.sources[0].error is None


def test_openclaw_skips_thinking_tool_calls_tool_results_housekeeping_and_mirrors(
    tmp_path: Path,
) -> None:
    lines: list[dict[str, Any]] = [
        oc_header(),
        oc_user("00000001", None, "deploy it please", minutes_ago(30)),
        oc_assistant(
            "00000002",
            "00000001",
            [
                {"type": "thinking", "thinking": "Check logs first."},
                {
                    "type": "toolCall",
                    "id": "toolu_01",
                    "name": "exec",
                    "arguments": {"command": "kubectl logs deploy/api"},
                },
            ],
            minutes_ago(29),
        ),
        oc_tool_result("00000003", "00000002", "ImagePullBackOff", minutes_ago(28)),
        {
            "type": "message",
            "id": "00000004",
            "parentId": "00000003",
            "timestamp": iso(minutes_ago(27)),
            "message": {
                "role": "bashExecution",
                "command": "ls",
                "output": "a b c",
                "timestamp": ms(minutes_ago(27)),
            },
        },
        oc_assistant(
            "00000005",
            "00000004",
            [{"type": "thinking", "thinking": "secret plan"}, text("Deployed after a retag.")],
            minutes_ago(26),
        ),
        oc_user("00000006", "00000005", "Read HEARTBEAT.md if it exists.", minutes_ago(25)),
        oc_assistant("00000007", "00000006", [text("HEARTBEAT_OK")], minutes_ago(24)),
        oc_assistant("00000008", "00000007", [text("  NO_REPLY \n")], minutes_ago(23)),
        oc_assistant(
            "00000009",
            "00000008",
            [text("Deployed after a retag.")],
            minutes_ago(22),
            provider="openclaw",
            model="delivery-mirror",
        ),
        {
            "type": "custom",
            "customType": "openclaw:scratchpad",
            "data": {"content": "not a message"},
            "id": "0000000a",
            "parentId": "00000009",
            "timestamp": iso(minutes_ago(21)),
        },
        {
            "type": "message",
            "id": "0000000b",
            "parentId": "0000000a",
            "timestamp": iso(minutes_ago(20)),
            "message": {
                "role": "custom",
                "customType": "note",
                "content": "extension text",
                "timestamp": ms(minutes_ago(20)),
            },
        },
        oc_user(
            "0000000c",
            "0000000b",
            "thanks",
            minutes_ago(19),
        ),
    ]
    lines[-1]["message"]["content"].append({"type": "image", "data": "iVBORw0", "mimeType": "x"})
    path = write_jsonl(tmp_path / "s.jsonl", lines)

    result = read(path, tmp_path)

    # The heartbeat prompt answered by HEARTBEAT_OK is the host speaking, not the human.
    assert texts(result.messages) == [
        "deploy it please",
        "Deployed after a retag.",
        "thanks",
    ]
    assert not any("secret plan" in m.text or "ImagePull" in m.text for m in result.messages)
    assert result.sources[0].bad_lines == 0


def test_a_no_reply_drops_only_the_reply_and_keeps_the_human_message_it_answers(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("c0000001", None, "the build is broken again", minutes_ago(10)),
            oc_assistant("c0000002", "c0000001", [text("Reverting #418.")], minutes_ago(9)),
            oc_user("c0000003", "c0000002", "ok thanks, that fixed it!", minutes_ago(8)),
            oc_assistant("c0000004", "c0000003", [text("NO_REPLY")], minutes_ago(7)),
        ],
    )

    result = read(path, tmp_path)

    # NO_REPLY is the agent staying silent after a real message (a group chat), not a host
    # prompt; only HEARTBEAT_OK marks the message before it as the host's heartbeat prompt.
    assert texts(result.messages) == [
        "the build is broken again",
        "Reverting #418.",
        "ok thanks, that fixed it!",
    ]


def test_openclaw_compaction_drops_messages_before_first_kept_entry_and_keeps_the_summary(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("c0000001", None, "summarised away", minutes_ago(50)),
            oc_assistant("c0000002", "c0000001", [text("also summarised")], minutes_ago(49)),
            oc_user("c0000003", "c0000002", "kept question", minutes_ago(48)),
            oc_assistant("c0000004", "c0000003", [text("kept answer")], minutes_ago(47)),
            {
                "type": "compaction",
                "id": "c0ffee12",
                "parentId": "c0000004",
                "timestamp": iso(minutes_ago(40)),
                "summary": "## Goal\nFix the deploy",
                "firstKeptEntryId": "c0000003",
                "tokensBefore": 182340,
            },
            oc_user("c0000005", "c0ffee12", "after compaction", minutes_ago(30)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["kept question", "kept answer", "after compaction"]
    assert [s.text for s in result.summaries] == ["## Goal\nFix the deploy"]


def test_openclaw_corrupt_unknown_and_half_written_lines_are_counted_and_skipped(
    tmp_path: Path,
) -> None:
    lines: list[dict[str, Any] | str] = [
        oc_header(),
        oc_user("d0000001", None, "one", minutes_ago(10)),
        "{not json at all",
        '"a bare string"',
        '{"no_type": true}',
        '{"type": "message", "id": "d00000ff", "parentId": "d0000001", "message": "oops"}',
        oc_assistant("d0000002", "d0000001", [text("two")], minutes_ago(9)),
        "",
        oc_user("d0000003", "d0000002", "three", minutes_ago(8)),
    ]
    half = json.dumps(oc_assistant("d0000004", "d0000003", [text("four")], minutes_ago(7)))
    path = write_jsonl(tmp_path / "s.jsonl", [*lines, half[: len(half) // 2]], end="")

    result = read(path, tmp_path)

    assert texts(result.messages) == ["one", "two", "three"]
    assert result.sources[0].bad_lines == 5
    assert result.sources[0].error is None


def test_openclaw_group_chat_sender_becomes_the_speaker(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("f0000001", None, "ship it", minutes_ago(5), senderName="Alice"),
            {**oc_user("f0000002", "f0000001", "no wait", minutes_ago(4)), "sender": "bob"},
            oc_user("f0000003", "f0000002", "hello", minutes_ago(3), **{"from": {"name": "Carol"}}),
            oc_user("f0000004", "f0000003", "solo", minutes_ago(2)),
        ],
    )

    result = read(path, tmp_path)

    assert [m.speaker for m in result.messages] == ["Alice", "bob", "Carol", None]


def test_openclaw_entry_iso_timestamp_is_used_when_the_message_has_none(tmp_path: Path) -> None:
    entry = oc_user("g0000001", None, "hi", minutes_ago(5))
    del entry["message"]["timestamp"]
    entry["timestamp"] = "2026-03-01T22:55:00+11:00"
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), entry])

    result = read(path, tmp_path)

    stamp = result.messages[0].timestamp
    assert stamp == datetime(2026, 3, 1, 11, 55, tzinfo=UTC)
    assert stamp is not None and stamp.utcoffset() == timedelta(0)


def test_openclaw_file_without_a_header_is_detected_from_its_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [oc_user("m1", None, "headless", minutes_ago(1))])

    result = read(path, tmp_path)

    assert result.sources[0].format == "openclaw"
    assert texts(result.messages) == ["headless"]


def test_a_user_message_answered_with_real_text_is_kept_after_a_heartbeat(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("b0000001", None, "Read HEARTBEAT.md if it exists.", minutes_ago(10)),
            oc_assistant("b0000002", "b0000001", [text("HEARTBEAT_OK")], minutes_ago(9)),
            oc_user("b0000003", "b0000002", "is the deploy green?", minutes_ago(8)),
            oc_assistant("b0000004", "b0000003", [text("Yes.")], minutes_ago(7)),
        ],
    )
    assert texts(read(path, tmp_path).messages) == ["is the deploy green?", "Yes."]


# --- OpenClaw SQLite store ------------------------------------------------------------------------


def test_sqlite_store_reads_plain_and_zstd_rows_on_the_active_branch(tmp_path: Path) -> None:
    db = tmp_path / "openclaw-agent.sqlite"
    connection = make_db(db)
    add_rows(connection, "sess-a", sqlite_session("a", 10), compress={1, 3})
    connection.close()

    result = read(db, tmp_path)

    assert texts(result.messages) == ["a plain", "a zstd", "a last"]
    assert {m.session_id for m in result.messages} == {"sess-a"}
    assert {m.cwd for m in result.messages} == {"/home/u/.openclaw/workspace"}
    assert result.sources[0].format == "openclaw-sqlite"
    assert result.sources[0].messages == 3
    assert result.sources[0].error is None


def test_sqlite_store_without_the_zstd_column_is_read(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    connection = make_db(db, with_zstd=False)
    add_rows(connection, "sess-b", sqlite_session("b", 10))
    connection.close()

    result = read(db, tmp_path)

    assert texts(result.messages) == ["b plain", "b zstd", "b last"]


def test_sqlite_store_merges_its_newest_sessions_and_counts_corrupt_rows(tmp_path: Path) -> None:
    db = tmp_path / "openclaw-agent.sqlite"
    connection = make_db(db)
    add_rows(connection, "old", sqlite_session("o", 50), start=minutes_ago(50))
    add_rows(connection, "new", sqlite_session("n", 20), start=minutes_ago(20))
    connection.execute(
        "INSERT INTO transcript_events(session_id, seq, event_json, created_at, event_zstd) "
        "VALUES ('new', 99, '', ?, ?)",
        (ms(minutes_ago(1)), b"not zstd at all"),
    )
    connection.commit()
    connection.close()

    both = read(db, tmp_path)
    newest_only = read(db, tmp_path, max_files=1)

    assert texts(both.messages) == ["o plain", "o zstd", "o last", "n plain", "n zstd", "n last"]
    assert both.sources[0].bad_lines == 1
    assert texts(newest_only.messages) == ["n plain", "n zstd", "n last"]
    assert newest_only.sources[0].bad_lines == 1  # the corrupt newest row is skipped


def test_sqlite_file_without_transcript_table_or_corrupt_gets_an_error(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.close()
    corrupt = tmp_path / "broken.db"
    corrupt.write_bytes(b"this is not a database" * 100)

    result = read_recent(
        [str(other), str(corrupt)],
        base=tmp_path,
        now=NOW,
        max_messages=10,
        lookback=None,
        hosts=HOSTS,
    )

    errors = {Path(s.path).name: s.error for s in result.sources}
    assert errors["other.sqlite"] is not None and "transcript_events" in errors["other.sqlite"]
    assert errors["broken.db"] is not None and "broken.db" in errors["broken.db"]


def test_locked_sqlite_store_is_reported_and_other_sources_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openclaw_store, "_SQLITE_TIMEOUT_S", 0.05)
    db = tmp_path / "openclaw-agent.sqlite"
    connection = make_db(db)
    add_rows(connection, "s", sqlite_session("l", 10))
    connection.close()
    write_jsonl(tmp_path / "ok.jsonl", [{"role": "user", "content": "still here"}])
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = read_recent(
            [str(db), str(tmp_path / "*.jsonl")],
            base=tmp_path,
            now=NOW,
            max_messages=10,
            lookback=None,
            hosts=HOSTS,
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    by_name = {Path(s.path).name: s for s in result.sources}
    error = by_name["openclaw-agent.sqlite"].error
    assert error is not None and "locked" in error
    assert texts(result.messages) == ["still here"]


def test_sqlite_sessions_without_messages_do_not_count_towards_max_files(tmp_path: Path) -> None:
    db = tmp_path / "openclaw-agent.sqlite"
    connection = make_db(db)
    add_rows(connection, "human", sqlite_session("h", 50), start=minutes_ago(50))
    for index in range(3):
        add_rows(
            connection,
            f"cron-{index}",
            [
                oc_header(f"cron-{index}"),
                oc_user("f0000001", None, "Read HEARTBEAT.md if it exists.", minutes_ago(20)),
                oc_assistant("f0000002", "f0000001", [text("HEARTBEAT_OK")], minutes_ago(20)),
            ],
            start=minutes_ago(20 - index),
        )
    connection.close()

    result = read(db, tmp_path, max_files=2)

    assert texts(result.messages) == ["h plain", "h zstd", "h last"]


# =============================================================================================
# The host's real folders, release by release (tests/fixtures/openclaw/lines.py writes them).
# =============================================================================================


def sessions_glob(state: Path) -> str:
    return str(state / "agents" / "main" / "sessions" / "*.jsonl")


# --- OpenClaw's artifacts beside its sessions -----------------------------------------------------


def test_run_traces_checkpoint_copies_and_archives_are_not_read_nor_errors(tmp_path: Path) -> None:
    write_openclaw_2026_4(tmp_path, crons=0)

    result = read(sessions_glob(tmp_path), tmp_path, max_files=5)

    assert [Path(s.path).name for s in result.sources] == [f"{MAIN_2026_4}.jsonl"]
    assert all(s.error is None for s in result.sources)
    # Six messages: the live session's, once; not its three checkpoint copies.
    assert texts(result.messages) == [
        "can you review the release notes draft",
        "Sure, reading the draft.",
        "the changelog section is too long",
        "I will shorten it to five bullets.",
        "perfect, ship it",
        "Shipped the notes.",
    ]
    assert host_texts_in(all_text(result)) == []


def test_an_artifact_named_without_a_glob_is_still_read(tmp_path: Path) -> None:
    folder = write_openclaw_2026_4(tmp_path, crons=0)
    copy = next(folder.glob("*.checkpoint.*.jsonl"))

    result = read(copy, tmp_path)

    assert "checkpoint copy of the review" in texts(result.messages)


def test_session_artifact_names_are_those_openclaw_writes_beside_its_sessions() -> None:
    artifact = openclaw_names.is_session_artifact
    session = "7b2e4d6f-8a1c-4e3b-9d5f-0a2c4e6b8d1f"
    assert artifact(f"{session}.trajectory.jsonl")
    assert artifact(f"{session}.trajectory-path.json")
    assert artifact(f"{session}.checkpoint.0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70.jsonl")
    assert artifact(f"{session}.jsonl.reset.2026-03-01T10-50-00.000Z")
    assert artifact(f"{session}.jsonl.deleted.2026-03-01T10-50-00Z")
    assert artifact(f"{session}.jsonl.bak-4242-1772362200000")
    assert artifact("sessions.json") and artifact("sessions.json.bak.3")
    assert not artifact(f"{session}.jsonl")
    assert not artifact(f"{session}-topic-42.jsonl")
    assert not artifact("2026-03-01T10-50-00-000Z_pi-session.jsonl")


# --- Heartbeat polls, cron prompts and other turns the host writes --------------------------------


def test_heartbeat_polls_and_the_replies_to_them_are_not_the_conversation(tmp_path: Path) -> None:
    write_openclaw_2026_4(tmp_path, crons=0)

    result = read(sessions_glob(tmp_path), tmp_path)

    said = all_text(result)
    assert "heartbeat" not in said.lower() and "all green" not in said
    assert [m.role for m in result.messages] == ["user", "assistant"] * 3


@pytest.mark.parametrize(
    "prompt",
    [
        "[OpenClaw heartbeat poll]",
        "[OpenClaw cron wake]",
        "[OpenClaw exec completion]\nDisable automatic completion turns with "
        "tools.exec.notifyOnExit=false; check per-agent overrides.",
        "[OpenClaw session event]",
        "Delivery: to send a message, use the `message` tool.\n\n[OpenClaw heartbeat poll]",
        HEARTBEAT_2026_3,
        "Run the following periodic tasks (only those due based on their intervals):\n- inbox",
        "[cron:8d1c inbox] Summarise new mail\nCurrent time: Sunday, March 1st, 2026",
        "A scheduled reminder has been triggered. The reminder content is:\n\nwater the plants",
        "An async command you ran earlier has completed. The result is shown in the system "
        "messages above.",
        "[Inter-session message] sourceSession=agent:main:subagent:1 isUser=false\nresult",
        "[Subagent Context] You are running as a subagent (depth 1/1).",
        "OpenClaw runtime context (internal):\nThis context is runtime-generated.",
        "A new session was started via /new or /reset. Execute your Session Startup sequence.",
        "Pre-compaction memory flush. Store durable memories now.",
        "Job ID: 7 | Received: now\n\nSECURITY NOTICE: The following content is from an "
        "EXTERNAL, UNTRUSTED source (e.g., email, webhook).\n<<<EXTERNAL_UNTRUSTED_CONTENT>>>",
        "System: [2026-03-01 19:57:10 GMT+8] Exec finished (gateway id=4f2, code 1)",
    ],
)
def test_a_prompt_the_host_writes_and_its_reply_are_dropped(tmp_path: Path, prompt: str) -> None:
    entries = [
        oc_user("f5000001", None, "why is the deploy failing again?", minutes_ago(30)),
        oc_assistant("f5000002", None, [text("The tag is wrong.")], minutes_ago(29)),
        oc_user("f5000003", None, prompt, minutes_ago(20)),
        oc_assistant("f5000004", None, [text("Reply to the host's prompt.")], minutes_ago(19)),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), *entries])

    result = read(path, tmp_path)

    assert texts(result.messages) == ["why is the deploy failing again?", "The tag is wrong."]


def test_provenance_marks_the_hosts_turns_in_newer_releases(tmp_path: Path) -> None:
    entries = [
        oc4_user("f6000001", "why is the deploy failing again?", minutes_ago(30)),
        oc4_user(
            "f6000002",
            "Check the queue and report",  # plain words, but a cron run's prompt
            minutes_ago(20),
            provenance={"kind": "internal_system", "sourceTool": "cron", "jobId": "j"},
        ),
        oc_assistant("f6000003", None, [text("Queue is empty.")], minutes_ago(19)),
        oc4_user(
            "f6000004",
            "Result of the subagent: done",
            minutes_ago(15),
            provenance={"kind": "inter_session", "sourceTool": "subagent_announce"},
        ),
        oc4_user("f6000005", "hidden", minutes_ago(14), display=False),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header_v("s4", 4, minutes_ago(31)), *entries])

    result = read(path, tmp_path)

    assert texts(result.messages) == ["why is the deploy failing again?"]


def test_gateway_notices_and_delivery_copies_are_not_the_assistant_speaking(
    tmp_path: Path,
) -> None:
    entries = [
        oc_user("f7000001", None, "hello?", minutes_ago(10)),
        gateway_notice("f7000002", minutes_ago(9)),
        oc_assistant(
            "f7000003",
            None,
            [text("copied")],
            minutes_ago(8),
            openclawDeliveryMirror={"kind": "channel-final"},
        ),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), *entries])

    assert texts(read(path, tmp_path).messages) == ["hello?"]


# --- The envelope of OpenClaw 2026.3 --------------------------------------------------------------


def test_the_2026_3_envelope_system_lines_and_gateway_notices_are_taken_off(
    tmp_path: Path,
) -> None:
    write_openclaw_2026_3(tmp_path)

    result = read(str(tmp_path / "agents/main/sessions" / f"{MAIN_2026_3}.jsonl"), tmp_path)

    assert texts(result.messages) == [
        "the staging deploy keeps failing on the migration step",
        "Looking at the migration logs now.",
        "it fails again, I am getting really frustrated with this",
        "ok the migration passes now, thanks!",
        "Great, the migration is green.",
    ]
    assert {m.speaker for m in result.messages} == {None}


def test_a_group_message_keeps_its_words_and_its_sender_becomes_the_speaker(
    tmp_path: Path,
) -> None:
    entries = [
        oc_user("f8000001", None, group_envelope("who broke the build?", "Alice", "111"), NOW),
        oc_user("f8000002", None, group_envelope("not me", "Bob", "222"), NOW),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), *entries])

    result = read(path, tmp_path)

    assert texts(result.messages) == ["who broke the build?", "not me"]
    assert [m.speaker for m in result.messages] == ["Alice", "Bob"]


def test_a_picture_without_words_is_neither_words_nor_a_host_prompt(tmp_path: Path) -> None:
    picture = oc_user("f9000002", None, "", minutes_ago(29))
    picture["message"]["content"] = [{"type": "image", "data": "iVBORw0", "mimeType": "image/png"}]
    entries = [
        oc_user("f9000001", None, "look at this screenshot", minutes_ago(30)),
        picture,
        oc_assistant("f9000003", None, [text("The chart is upside down.")], minutes_ago(28)),
        oc_user("f9000004", None, "[media attached: /tmp/in/shot.png (image/png)]", minutes_ago(1)),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), *entries])

    assert texts(read(path, tmp_path).messages) == [
        "look at this screenshot",
        "The chart is upside down.",
    ]


@pytest.mark.parametrize(
    "words", ["Delivery: the parcel arrives Tuesday", "System is slow today", "[draft] notes"]
)
def test_words_that_start_like_a_host_line_are_kept(tmp_path: Path, words: str) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), oc_user("fb000001", None, words, NOW)])

    assert texts(read(path, tmp_path).messages) == [words]


# --- The host's runs do not push the human's session out ------------------------------------------


def test_twenty_newer_cron_runs_in_the_index_do_not_push_the_human_session_out(
    tmp_path: Path,
) -> None:
    write_openclaw_2026_3(tmp_path)

    result = read(sessions_glob(tmp_path), tmp_path, max_files=5, lookback=timedelta(hours=6))

    assert "ok the migration passes now, thanks!" in texts(result.messages)
    assert [Path(s.path).stem for s in result.sources] == [MAIN_2026_3]
    assert host_texts_in(all_text(result)) == []


def test_cron_runs_outside_the_index_do_not_count_and_their_replies_are_dropped(
    tmp_path: Path,
) -> None:
    folder = write_openclaw_2026_4(tmp_path, crons=6, index=False)

    result = read(sessions_glob(tmp_path), tmp_path, max_files=2, lookback=timedelta(hours=6))

    assert "perfect, ship it" in texts(result.messages)
    assert not any("Inbox digest" in m.text for m in result.messages)
    reports = {Path(s.path).stem: s.messages for s in result.sources}
    assert reports[MAIN_2026_4] == 6
    assert not (folder / "sessions.json").exists()


def test_a_session_of_a_host_key_in_the_index_is_not_opened(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    human = write_jsonl(
        folder / "h1.jsonl", [oc_header("h1"), oc_user("01", None, "hello", minutes_ago(5))]
    )
    sub = write_jsonl(
        folder / "s1.jsonl",
        [oc_header("s1"), oc_user("01", None, "Research the deploy tooling", minutes_ago(4))],
    )
    session_index({"agent:main:main": "h1", "agent:main:subagent:8f2e": "s1"}, folder)

    result = read(folder / "*.jsonl", tmp_path)

    assert [s.path for s in result.sources] == [str(human)]
    assert str(sub) not in [m.source for m in result.messages]


def test_sqlite_cron_windows_are_skipped_by_key_and_the_human_session_is_read(
    tmp_path: Path,
) -> None:
    db = write_openclaw_2026_9(tmp_path, crons=25)

    result = read(db, tmp_path, max_files=5, lookback=timedelta(hours=6))

    assert texts(result.messages) == [
        "the release checklist is missing the rollback step",
        "I will add a rollback section.",
        "add the rollback step to the checklist please",
        "Added the rollback step.",
    ]
    assert {m.session_id for m in result.messages} == {MAIN_2026_9}
    assert result.sources[0].error is None


def test_sqlite_without_session_windows_still_skips_sessions_where_only_the_host_speaks(
    tmp_path: Path,
) -> None:
    db = tmp_path / "openclaw-agent.sqlite"
    connection = make_db(db)
    add_rows(connection, "human", sqlite_session("h", 50), start=minutes_ago(50))
    for index in range(6):
        add_rows(
            connection,
            f"run-{index}",
            [
                oc_header(f"run-{index}"),
                oc_user("f0000001", None, cron_prompt(CRON_JOB, "inbox", NOW), minutes_ago(20)),
                oc_assistant("f0000002", "f0000001", [text("Inbox digest: 1")], minutes_ago(20)),
            ],
            start=minutes_ago(20 - index),
        )
    connection.close()

    result = read(db, tmp_path, max_files=2)

    assert texts(result.messages) == ["h plain", "h zstd", "h last"]


# --- Version 4 sessions: leaf entries, side entries, resets ---------------------------------------


def test_a_leaf_entry_moves_the_active_branch_and_a_side_entry_does_not(tmp_path: Path) -> None:
    db = write_openclaw_2026_9(tmp_path, crons=0)

    result = read(db, tmp_path)

    said = all_text(result)
    assert "abandoned" not in said and "side copy" not in said
    assert texts(result.messages)[-1] == "Added the rollback step."


def test_a_reset_entry_ends_the_context_like_a_compaction(tmp_path: Path) -> None:
    entries = [
        oc4_user("fa000001", "before the reset", minutes_ago(30)),
        {
            "type": "reset",
            "id": "fa000002",
            "timestamp": iso(minutes_ago(20)),
            "reason": "daily",
        },
        oc4_user("fa000003", "after the reset", minutes_ago(10)),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header_v("s4", 4, minutes_ago(31)), *entries])

    assert texts(read(path, tmp_path).messages) == ["after the reset"]


# --- pi's version 1 sessions ----------------------------------------------------------------------


def test_a_pi_v1_compaction_keeps_the_entries_from_its_first_kept_index(tmp_path: Path) -> None:
    path = write_pi_v1(tmp_path / "2026-03-01T11-00-00-000Z_pi-v1-session.jsonl")

    result = read(path, tmp_path)

    assert texts(result.messages) == ["kept question", "kept answer", "after compaction"]
    assert [s.text for s in result.summaries] == ["## Goal\nShip v1"]
    # The blank and corrupt lines before the kept entries do not count as entries (pi skipped
    # them too), and the walk back stops before reaching them.
    assert result.sources[0].bad_lines == 0


def test_a_pi_v1_session_without_compaction_is_read_whole(tmp_path: Path) -> None:
    lines = [
        {"type": "session", "id": "v1", "timestamp": iso(minutes_ago(9)), "cwd": "/p"},
        {
            "type": "message",
            "timestamp": iso(minutes_ago(8)),
            "message": {"role": "user", "content": "one"},
        },
        {
            "type": "message",
            "timestamp": iso(minutes_ago(7)),
            "message": {"role": "assistant", "content": [text("two")]},
        },
    ]
    path = write_jsonl(tmp_path / "v1.jsonl", lines)

    assert texts(read(path, tmp_path).messages) == ["one", "two"]


def test_a_pi_v3_compaction_keeps_the_entries_from_its_first_kept_id(tmp_path: Path) -> None:
    entries = [
        oc_user("ab000001", None, "summarised away", minutes_ago(50)),
        oc_user("ab000002", None, "kept question", minutes_ago(40)),
        {
            "type": "compaction",
            "id": "ab000003",
            "timestamp": iso(minutes_ago(30)),
            "summary": "## Goal",
            "firstKeptEntryId": "ab000002",
            "tokensBefore": 1,
        },
        oc_user("ab000004", None, "after compaction", minutes_ago(20)),
    ]
    oc_chain(entries)
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header_v("v3", 3, minutes_ago(51)), *entries])

    assert texts(read(path, tmp_path).messages) == ["kept question", "after compaction"]


# --- Where the transcripts are, without configuration ---------------------------------------------


def openclaw_state(home: Path) -> Path:
    return home / ".openclaw"


def default_workspace(home: Path) -> Path:
    folder = home / ".openclaw" / "workspace"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_default_sources_find_each_openclaw_layout_of_the_workspace_agent(
    isolated_home: Path,
) -> None:
    state = openclaw_state(isolated_home)
    write_openclaw_2026_4(state, crons=1)
    write_openclaw_2026_9(state, crons=1)
    workspace = default_workspace(isolated_home)

    sources = default_sources(HOSTS, workspace, workspace / ".scratchpad")

    assert sources == [
        str(state / "agents" / "main" / "sessions" / "*.jsonl"),
        str(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"),
    ]


def test_default_sources_follow_openclaw_state_dir_and_agents_of_other_workspaces_stay_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "oc-state"
    for agent in ("main", "work", "home"):
        (state / "agents" / agent / "sessions").mkdir(parents=True)
        write_jsonl(state / "agents" / agent / "sessions" / "s.jsonl", [oc_header()])
    mine = tmp_path / "projects" / "work-ws"
    mine.mkdir(parents=True)
    (state / "openclaw.json").write_text(
        "// JSON5, as OpenClaw allows it\n{\n  agents: {\n    defaults: { workspace: '"
        + str(tmp_path / "default-ws")
        + "' },\n    list: [\n      { id: 'main', default: true },\n      { id: 'work', "
        "workspace: '${WORK_ROOT}/work-ws' },\n      { id: 'home' },\n    ],\n  },\n}\n"
    )
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.setenv("WORK_ROOT", str(tmp_path / "projects"))

    sources = default_sources(HOSTS, mine, mine / ".scratchpad")
    defaults = default_sources(HOSTS, tmp_path / "default-ws", tmp_path / "x")

    assert sources == [str(state / "agents" / "work" / "sessions" / "*.jsonl")]
    assert defaults == [str(state / "agents" / "main" / "sessions" / "*.jsonl")]


def test_default_sources_read_every_agent_when_the_config_cannot_be_read_or_names_none(
    isolated_home: Path,
) -> None:
    state = openclaw_state(isolated_home)
    for agent in ("alpha", "beta"):
        write_jsonl(state / "agents" / agent / "sessions" / "s.jsonl", [oc_header()])
    elsewhere = isolated_home / "elsewhere"
    elsewhere.mkdir()

    unmatched = default_sources(HOSTS, elsewhere, elsewhere / ".scratchpad")
    (state / "openclaw.json").write_text("{ this is : not [ json")
    unreadable = default_sources(HOSTS, elsewhere, elsewhere / ".scratchpad")

    every = [str(state / "agents" / a / "sessions" / "*.jsonl") for a in ("alpha", "beta")]
    assert unmatched == every
    assert unreadable == every


# --- End to end: a whole run on each layout, with the default config ------------------------------


def test_a_whole_run_on_openclaw_2026_3_reads_the_human_without_the_hosts_text(
    isolated_home: Path,
) -> None:
    write_openclaw_2026_3(openclaw_state(isolated_home))

    assembly = assemble_with_defaults(default_workspace(isolated_home))

    assert_only_the_humans_conversation(assembly, messages_read=5)
    assert "migration" in assembly.path.read_text(encoding="utf-8")
    assert assembly.mood is not None and assembly.mood.combined.messages == 3


def test_a_whole_run_on_openclaw_2026_4_does_not_read_checkpoints_or_traces(
    isolated_home: Path,
) -> None:
    write_openclaw_2026_4(openclaw_state(isolated_home))

    assembly = assemble_with_defaults(default_workspace(isolated_home))

    assert_only_the_humans_conversation(assembly, messages_read=6)
    assert [Path(s.path).name for s in assembly.measured.sources] == [f"{MAIN_2026_4}.jsonl"]


def test_the_cli_exits_0_on_openclaw_2026_4_with_the_default_config(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli.main import main

    write_openclaw_2026_4(openclaw_state(isolated_home))
    workspace = default_workspace(isolated_home)
    (workspace / ".scratchpad").mkdir()
    (workspace / ".scratchpad" / "config.toml").write_text('[memory]\nmodel = "none"\n')

    code = main(["--once", "--workspace", str(workspace), "--now", NOW.isoformat()])

    assert code == 0, capsys.readouterr().err
    assert "6 messages read" in capsys.readouterr().out


def test_a_whole_run_on_openclaw_2026_9_reads_its_sqlite_store(isolated_home: Path) -> None:
    write_openclaw_2026_9(openclaw_state(isolated_home))

    assembly = assemble_with_defaults(default_workspace(isolated_home))

    assert_only_the_humans_conversation(assembly, messages_read=4)
    assert [s.format for s in assembly.measured.sources] == ["openclaw-sqlite"]
    assert "rollback" in assembly.path.read_text(encoding="utf-8")


# --- the clock: nothing said after `now` is read --------------------------------------------------


def test_a_compaction_after_now_is_not_applied_nor_its_summary_read(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("c0000001", None, "first question", minutes_ago(30)),
            oc_assistant("c0000002", "c0000001", [text("first answer")], minutes_ago(29)),
            oc_user("c0000003", "c0000002", "second question", minutes_ago(20)),
            {
                "type": "compaction",
                "id": "c0ffee12",
                "parentId": "c0000003",
                "timestamp": iso(minutes_ago(-10)),
                "summary": "## Goal\nWritten later",
                "firstKeptEntryId": "c0000003",
                "tokensBefore": 182340,
            },
            oc_user("c0000005", "c0ffee12", "after compaction", minutes_ago(-11)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["first question", "first answer", "second question"]
    assert result.summaries == []
    later = read_recent(
        [str(path)],
        base=tmp_path,
        now=NOW + timedelta(minutes=15),
        max_messages=100,
        lookback=None,
        hosts=HOSTS,
    )
    assert texts(later.messages) == ["second question", "after compaction"]
    assert [(s.text, s.kind) for s in later.summaries] == [("## Goal\nWritten later", "compaction")]


# --- the human's zone, from the host's local stamps -----------------------------------------------


@pytest.mark.parametrize(
    ("wrapped", "offset", "zone"),
    [
        # A web chat envelope on a UTC server at 12:00 UTC: the human is at 20:00 GMT+8.
        (
            envelope("how often does the heartbeat run?", stamp="Sun 2026-03-01 20:00 GMT+8"),
            8 * 60,
            "GMT+8",
        ),
        # A Telegram envelope with an elapsed-time part before the stamp.
        (
            "[Telegram Ana (@ana) id:77 +42s 2026-03-01 07:00 EST] run the update script",
            -5 * 60,
            "EST",
        ),
        # The conversation block of 2026.4 carries the stamp instead of an envelope.
        (conversation_info("status?", "Sun 2026-03-01 04:00 PST"), -8 * 60, "PST"),
    ],
)
def test_the_humans_zone_is_read_from_the_hosts_local_stamp(
    tmp_path: Path, wrapped: str, offset: int, zone: str
) -> None:
    entries = [oc_user("z9000001", None, wrapped, NOW)]
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), *entries])

    (message,) = read(path, tmp_path).messages

    assert message.utc_offset == timedelta(minutes=offset)
    assert message.zone == zone


def test_a_stamp_that_disagrees_with_the_message_time_falls_back_to_the_zones_name(
    tmp_path: Path,
) -> None:
    # Queued for an hour and a half: the stamp is the time it was sent, not when it was read.
    late = envelope("the deploy again", stamp="Sun 2026-03-01 05:30 PDT")
    path = write_jsonl(tmp_path / "s.jsonl", [oc_header(), oc_user("z9000002", None, late, NOW)])

    (message,) = read(path, tmp_path).messages

    assert message.utc_offset == timedelta(hours=-7)


def test_a_message_without_a_local_stamp_has_no_zone(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl", [oc_header(), oc_user("z9000003", None, "plain words", NOW)]
    )

    (message,) = read(path, tmp_path).messages

    assert (message.utc_offset, message.zone) == (None, None)


# --- the host's texts in a user turn --------------------------------------------------------------


# Each kind of host text a 2026.2 OpenClaw session holds in a user turn, written in its shape:
# the human's words it holds ("" when it holds none), and whether the host wrote the turn.
HOST_TEXT_KINDS = [
    (
        "cron report relayed with an envelope",
        '[Fri 2026-02-13 14:34 EST] A cron job "Board Check" just completed successfully.\n\n'
        "Findings:\n- 3 tasks open",
        "host",
        "",
    ),
    (
        "system message relay of a cron run",
        '[Sat 2026-02-28 23:30 GMT+8] [System Message] [sessionId: 5d1c] A cron job "Daily '
        'Summary" just completed successfully.\n\nResult:\nA summary of the day.',
        "host",
        "",
    ),
    (
        "restart notice with its JSON payload before the human's words",
        "System: [2026-02-12 12:16:00 EST] GatewayRestart:\n{\n"
        '  "kind": "restart",\n  "status": "ok",\n  "message": "Clear stale timers"\n}\n\n'
        "[Thu 2026-02-12 12:17 EST] how do I fix it",
        "human",
        "how do I fix it",
    ),
    (
        "a cron job's report to pass on",
        "[Thu 2026-02-12 13:23 EST] Please forward this to Sam via Discord DM (use your Discord "
        "message tool):\n\n**Board Check**\n- 2 open PRs",
        "host",
        "",
    ),
    (
        "restart notice alone",
        'GatewayRestart:\n{\n  "kind": "config-apply",\n  "status": "ok"\n}',
        "host",
        "",
    ),
    (
        "the onboarding draft the control UI fills in",
        "[Wed 2026-02-04 14:37 GMT+8] Wake up, my friend!\n[message_id: 0a1b]",
        "host",
        "",
    ),
    (
        "queued messages, the human's words in the last one",
        "[Queued messages while agent was busy]\n\n---\nQueued #1\n"
        'Conversation info (untrusted metadata):\n```json\n{\n  "message_id": "91"\n}\n```\n\n'
        "restore the backup and push",
        "human",
        "restore the backup and push",
    ),
    (
        "queued messages that are all the host's",
        "[Queued messages while agent was busy]\n\n---\nQueued #1\n"
        '[Fri 2026-02-13 14:34 EST] A cron job "Board Check" just completed successfully.',
        "host",
        "",
    ),
    (
        "a group message that mentions the agent's account first",
        'Conversation info (untrusted metadata):\n```json\n{\n  "is_group_chat": true,\n'
        '  "sender": "8811"\n}\n```\n\n@team_helper_bot tidy up your memory file',
        "human",
        "tidy up your memory file",
    ),
]


@pytest.mark.parametrize(
    ("kind", "wrapped", "said", "words"), HOST_TEXT_KINDS, ids=[k[0] for k in HOST_TEXT_KINDS]
)
def test_each_kind_of_host_text_is_set_aside_or_unwrapped_to_the_humans_words(
    kind: str, wrapped: str, said: str, words: str
) -> None:
    turn = clean_user_text(wrapped)

    assert turn.said == said, kind
    assert turn.text == words


@pytest.mark.parametrize(
    "joined",
    [
        # as OpenClaw writes it: the markers on lines of their own
        "[Chat messages since your last reply - for context]\n[Telegram Ops +1m Mon 2026-02-23 "
        "22:40 GMT+8] Ann: lunch?\n\n[Current message - respond to this]\n[Telegram Ops +3m Mon "
        "2026-02-23 22:43 GMT+8] roll the canary back to 1.14.3",
        # a channel that flattened the lines into one
        "[Chat messages since your last reply - for context] [Telegram Ops 2026-02-23 22:40 "
        "GMT+8] Ann: lunch? [id:298 chat:-500] [Current message - respond to this][Telegram Ops "
        "+3m 2026-02-23 22:43 GMT+8] roll the canary back to 1.14.3",
    ],
)
def test_the_chat_history_before_the_current_message_is_not_the_humans(joined: str) -> None:
    turn = clean_user_text(joined)

    assert (turn.said, turn.text) == ("human", "roll the canary back to 1.14.3")
    assert turn.stamp is not None and turn.stamp.zone == "GMT+8"


@pytest.mark.parametrize(
    ("label", "speaker"), [("Ann (7304053733)", "Ann"), ("ann.k (+15550001111)", "ann.k")]
)
def test_the_sender_before_a_group_messages_words_is_its_speaker(label: str, speaker: str) -> None:
    turn = clean_user_text(
        f"[Telegram Ops id:-500 +3m 2026-02-23 22:43 GMT+8] {label}: @ops_bot roll the canary back"
    )
    assert (turn.said, turn.text, turn.speaker) == ("human", "roll the canary back", speaker)


def test_words_like_a_sender_label_without_an_envelope_are_the_humans() -> None:
    turn = clean_user_text("Ann (7304053733): is this the id you meant?")
    assert turn.text == "Ann (7304053733): is this the id you meant?"


def test_a_system_event_stamp_tells_the_humans_zone_when_the_words_have_none() -> None:
    turn = clean_user_text(
        "System: [2026-02-18 15:28:51 EST] Exec completed (keen-fox, code 0) :: pushed\n\n"
        'Conversation info (untrusted metadata):\n```json\n{\n  "message_id": "93"\n}\n```\n\n'
        "I don't see a push in the repo"
    )

    assert turn.text == "I don't see a push in the repo"
    assert turn.stamp is not None and turn.stamp.zone == "EST"
