"""Tests for assembler/transcripts.py: the readers of OpenClaw, Claude Code and generic logs."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler import transcripts
from assembler.errors import TranscriptError
from assembler.transcripts import (
    Format,
    Message,
    TranscriptRead,
    read_recent,
    resolve_explicit_sources,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
EXAMPLES = Path("/work/shared/data/transcript-format-examples/claude-code")


# --- helpers: lines in the hosts' shapes ----------------------------------------------------


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def minutes_ago(n: float) -> datetime:
    return NOW - timedelta(minutes=n)


def oc_header(session_id: str = "0f6c2a1e-3b7d-4e8a-9c55-2d1f7e9a4b10") -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": iso(minutes_ago(120)),
        "cwd": "/home/u/.openclaw/workspace",
    }


def oc_user(
    entry_id: str, parent: str | None, text: str, at: datetime, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": iso(at),
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "timestamp": ms(at),
            **extra,
        },
    }


def oc_assistant(
    entry_id: str,
    parent: str | None,
    blocks: list[dict[str, Any]],
    at: datetime,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": iso(at),
        "message": {
            "role": "assistant",
            "content": blocks,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-opus-4-6",
            "usage": {"input": 2775, "output": 141, "totalTokens": 2916},
            "stopReason": "stop",
            "timestamp": ms(at),
            **extra,
        },
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def oc_tool_result(entry_id: str, parent: str, output: str, at: datetime) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": iso(at),
        "message": {
            "role": "toolResult",
            "toolCallId": "toolu_01",
            "toolName": "exec",
            "content": [text(output)],
            "isError": False,
            "timestamp": ms(at),
        },
    }


def cc_line(
    kind: str,
    uuid: str,
    parent: str | None,
    content: Any,
    at: datetime,
    session: str = "130bc834-285a-4160-9b5d-bc2cf004fec9",
    **extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"model": "claude-sonnet-4-5", "id": f"msg_{uuid}", "type": "message", **message}
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/u/src/api",
        "sessionId": session,
        "version": "2.0.31",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": iso(at),
        **extra,
    }


def write_jsonl(path: Path, lines: Sequence[dict[str, Any] | str], *, end: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rendered = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(rendered) + end, encoding="utf-8")
    return path


def read(
    path_or_glob: Path | str,
    base: Path,
    *,
    max_messages: int = 100,
    lookback: timedelta | None = None,
    max_files: int = 10,
    fmt: Format = "auto",
) -> TranscriptRead:
    return read_recent(
        [str(path_or_glob)],
        base=base,
        now=NOW,
        max_messages=max_messages,
        lookback=lookback,
        max_files=max_files,
        fmt=fmt,
    )


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages]


def set_mtime(path: Path, seconds_ago: float) -> None:
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))


# --- OpenClaw JSONL ------------------------------------------------------------------------


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


def test_openclaw_rewind_leaves_the_abandoned_branch_out(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("a0000001", None, "start", minutes_ago(10)),
            oc_assistant("a0000002", "a0000001", [text("first answer")], minutes_ago(9)),
            oc_user("a0000003", "a0000002", "abandoned question", minutes_ago(8)),
            oc_assistant("a0000004", "a0000003", [text("abandoned answer")], minutes_ago(7)),
            # The user rewound to a0000002 and asked something else.
            oc_user("a0000005", "a0000002", "new question", minutes_ago(6)),
            oc_assistant("a0000006", "a0000005", [text("new answer")], minutes_ago(5)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["start", "first answer", "new question", "new answer"]


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
    assert result.summaries == ["## Goal\nFix the deploy"]


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


def test_openclaw_chain_through_a_corrupt_parent_continues_with_the_preceding_entries(
    tmp_path: Path,
) -> None:
    # The newest entry's parent is a line that got corrupted: the walk cannot find it by id and
    # falls back to reading the entries before it in file order.
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("e0000001", None, "older", minutes_ago(10)),
            '{"type":"message","id":"e0000002","parentId":"e0000001","message":{"ro',
            oc_user("e0000003", "e0000002", "newer", minutes_ago(8)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["older", "newer"]
    assert result.sources[0].bad_lines == 1


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


# --- Claude Code -----------------------------------------------------------------------------


def test_claude_code_keeps_only_what_the_human_and_assistant_said(tmp_path: Path) -> None:
    lines = [
        {"type": "summary", "summary": "Deploy debugging", "leafUuid": "u9"},
        cc_line("user", "u1", None, "why does the build fail?", minutes_ago(20)),
        cc_line(
            "assistant",
            "u2",
            "u1",
            [
                {"type": "thinking", "thinking": "look at CI", "signature": "x"},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls"}},
            ],
            minutes_ago(19),
        ),
        cc_line(
            "user",
            "u3",
            "u2",
            [{"tool_use_id": "toolu_9", "type": "tool_result", "content": "output"}],
            minutes_ago(18),
            toolUseResult={"stdout": "output"},
        ),
        cc_line(
            "user",
            "u4",
            "u3",
            "Caveat: The messages below were generated by the user while running local commands.",
            minutes_ago(17),
            isMeta=True,
        ),
        cc_line(
            "user",
            "u5",
            "u4",
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>",
            minutes_ago(16),
        ),
        cc_line(
            "user",
            "u6",
            "u5",
            [text("<local-command-stdout>cleared</local-command-stdout>")],
            minutes_ago(15),
        ),
        cc_line("user", "u7", "u6", "Caveat: not said by a human", minutes_ago(14)),
        {
            "parentUuid": None,
            "logicalParentUuid": "u7",
            "isSidechain": False,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": iso(minutes_ago(13)),
            "uuid": "u8",
            "level": "info",
            "compactMetadata": {"trigger": "auto", "preTokens": 155000},
            "sessionId": "130bc834-285a-4160-9b5d-bc2cf004fec9",
        },
        cc_line(
            "user",
            "u9",
            "u8",
            "This session is being continued from a previous conversation. Summary: fix CI",
            minutes_ago(13),
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        cc_line("user", "s1", "u9", "subagent prompt", minutes_ago(12), isSidechain=True),
        cc_line(
            "assistant", "s2", "s1", [text("subagent reply")], minutes_ago(11), isSidechain=True
        ),
        cc_line("user", "u10", "u9", [text("ok, and now the tests fail")], minutes_ago(10)),
        cc_line("assistant", "u11", "u10", [text("Fixing them.")], minutes_ago(9)),
        {"type": "file-history-snapshot", "messageId": "u11", "snapshot": {}},
    ]
    path = write_jsonl(tmp_path / "proj" / "session.jsonl", lines)

    result = read(path, tmp_path)

    assert texts(result.messages) == [
        "why does the build fail?",
        "Let me check.",
        "ok, and now the tests fail",
        "Fixing them.",
    ]
    assert result.summaries == [
        "This session is being continued from a previous conversation. Summary: fix CI"
    ]
    assert result.sources[0].format == "claude-code"
    assert result.sources[0].bad_lines == 0
    assert {m.session_id for m in result.messages} == {"130bc834-285a-4160-9b5d-bc2cf004fec9"}
    assert {m.cwd for m in result.messages} == {"/home/u/src/api"}


def test_claude_code_rewind_drops_the_abandoned_branch(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            cc_line("user", "r1", None, "first", minutes_ago(10)),
            cc_line("assistant", "r2", "r1", [text("reply one")], minutes_ago(9)),
            cc_line("user", "r3", "r2", "abandoned", minutes_ago(8)),
            cc_line("assistant", "r4", "r3", [text("abandoned reply")], minutes_ago(7)),
            cc_line("user", "r5", "r2", "edited question", minutes_ago(6)),
            cc_line("assistant", "r6", "r5", [text("final reply")], minutes_ago(5)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["first", "reply one", "edited question", "final reply"]


def test_claude_code_corrupt_unknown_and_half_written_lines_are_counted(tmp_path: Path) -> None:
    half = json.dumps(cc_line("user", "h9", "h2", "unfinished", minutes_ago(1)))
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            cc_line("user", "h1", None, "hello", minutes_ago(10)),
            "42",
            '{"silly": "this"}',
            '{"type": "user", "uuid": "hx", "message": "error"}',
            '{"type": "user", "uuid": "hy", "message": {"role": "user", "contenst": []}}',
            cc_line("assistant", "h2", "h1", [text("hi")], minutes_ago(9)),
            half[:40],
        ],
        end="",
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["hello", "hi"]
    assert result.sources[0].bad_lines == 5


def test_claude_code_lines_with_null_or_unknown_parents_are_read_in_file_order(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            cc_line("user", "n1", None, "one", minutes_ago(10)),
            cc_line("assistant", "n2", None, [text("two")], minutes_ago(9)),
            cc_line("user", "n3", "not-in-this-file", "three", minutes_ago(8)),
            cc_line("assistant", "n4", None, [text("four")], minutes_ago(7)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["one", "two", "three", "four"]


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="shared Claude Code examples are not present")
def test_claude_code_examples_with_null_parents_are_read_linearly(tmp_path: Path) -> None:
    result = read(EXAMPLES / "representative_messages.jsonl", tmp_path)

    assert [m.role for m in result.messages] == ["user", "assistant"] * 3 + ["user"]
    assert result.messages[0].text.startswith("Hello Claude!")
    assert result.messages[-1].text.startswith("This is really helpful!")
    assert not any("File created successfully" in m.text for m in result.messages)
    assert result.sources[0].bad_lines == 0


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="shared Claude Code examples are not present")
def test_claude_code_edge_case_examples_skip_wrappers_and_count_broken_lines(
    tmp_path: Path,
) -> None:
    result = read(EXAMPLES / "edge_cases.jsonl", tmp_path)

    said = texts(result.messages)
    assert said[0].startswith("Here's a message with some **markdown**")
    assert any(m.startswith("Testing special characters: café") for m in said)
    assert not any(
        m.startswith(("Caveat:", "<command-name>", "<local-command-stdout>")) for m in said
    )
    stamps = [m.timestamp for m in result.messages]
    assert stamps == sorted(s for s in stamps if s is not None)
    assert result.sources[0].bad_lines >= 5  # bare strings, numbers, lists, broken messages


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="shared Claude Code examples are not present")
def test_claude_code_example_folder_merges_sessions_by_time(tmp_path: Path) -> None:
    result = read(EXAMPLES / "*.jsonl", tmp_path, max_messages=500)

    stamps = [m.timestamp for m in result.messages]
    assert all(s is not None for s in stamps)
    assert stamps == sorted(stamps)  # type: ignore[type-var]
    assert {m.session_id for m in result.messages} >= {"test_session", "session_b"}
    assert all(s.format == "claude-code" and s.error is None for s in result.sources)


# --- generic JSONL ---------------------------------------------------------------------------


def test_generic_lines_map_roles_speakers_and_timestamps(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {"role": "system", "content": "be nice", "timestamp": iso(minutes_ago(11))},
            {"role": "human", "content": "hi", "timestamp": iso(minutes_ago(10)), "speaker": "al"},
            {"role": "ai", "content": [text("hello")], "timestamp": minutes_ago(9).timestamp()},
            {"role": "User", "content": "ms epoch", "timestamp": ms(minutes_ago(8))},
            {"role": "agent", "content": [text("a"), text("b")], "timestamp": "not a time"},
            "{broken",
            {"content": "no role"},
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["hi", "hello", "ms epoch", "a\nb"]
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]
    assert result.messages[0].speaker == "al"
    assert result.messages[1].timestamp == minutes_ago(9)
    assert result.messages[2].timestamp == minutes_ago(8)
    assert result.messages[3].timestamp is None
    assert result.sources[0].format == "generic"
    assert result.sources[0].bad_lines == 2


def test_messages_without_timestamps_keep_their_place_between_neighbours(tmp_path: Path) -> None:
    older = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"role": "user", "content": "a1", "timestamp": iso(minutes_ago(30))},
            {"role": "user", "content": "a2 untimed"},
            {"role": "user", "content": "a3", "timestamp": iso(minutes_ago(5))},
        ],
    )
    other = write_jsonl(
        tmp_path / "b.jsonl",
        [{"role": "user", "content": "b1", "timestamp": iso(minutes_ago(20))}],
    )
    set_mtime(older, 100)
    set_mtime(other, 50)

    result = read(tmp_path / "*.jsonl", tmp_path)

    assert texts(result.messages) == ["a1", "b1", "a2 untimed", "a3"]


# --- format detection and forcing ----------------------------------------------------------


def test_format_is_detected_per_file_and_can_be_forced(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "oc.jsonl", [oc_header(), oc_user("k1", None, "oc", minutes_ago(3))])
    write_jsonl(tmp_path / "cc.jsonl", [cc_line("user", "k2", None, "cc", minutes_ago(2))])
    write_jsonl(tmp_path / "gen.jsonl", [{"role": "user", "content": "gen"}])

    detected = read(tmp_path / "*.jsonl", tmp_path)
    forced = read(tmp_path / "gen.jsonl", tmp_path, fmt="claude-code")

    formats = {Path(s.path).name: s.format for s in detected.sources}
    assert formats == {"oc.jsonl": "openclaw", "cc.jsonl": "claude-code", "gen.jsonl": "generic"}
    assert sorted(texts(detected.messages)) == ["cc", "gen", "oc"]
    assert forced.sources[0].format == "claude-code"
    assert forced.messages == []
    assert forced.sources[0].bad_lines == 1


def test_openclaw_file_without_a_header_is_detected_from_its_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [oc_user("m1", None, "headless", minutes_ago(1))])

    result = read(path, tmp_path)

    assert result.sources[0].format == "openclaw"
    assert texts(result.messages) == ["headless"]


def test_empty_file_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    path.write_bytes(b"")

    result = read(path, tmp_path)

    assert result.messages == []
    assert result.sources[0].error is None


# --- OpenClaw SQLite store -----------------------------------------------------------------


def make_db(path: Path, *, with_zstd: bool = True) -> sqlite3.Connection:
    connection = sqlite3.connect(path)
    zstd_columns = ", event_zstd BLOB, event_utf8_bytes INTEGER" if with_zstd else ""
    connection.execute(
        "CREATE TABLE transcript_events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        f"event_json TEXT, created_at INTEGER NOT NULL{zstd_columns}, "
        "PRIMARY KEY(session_id, seq))"
    )
    return connection


def add_rows(
    connection: sqlite3.Connection,
    session_id: str,
    entries: Sequence[dict[str, Any]],
    *,
    compress: Collection[int] = (),
    start: datetime | None = None,
) -> None:
    start = start or minutes_ago(60)
    compressor = zstandard.ZstdCompressor()
    for seq, entry in enumerate(entries, start=1):
        payload = json.dumps(entry)
        created = ms(start) + seq
        if seq in compress:
            connection.execute(
                "INSERT INTO transcript_events(session_id, seq, event_json, created_at, "
                "event_zstd, event_utf8_bytes) VALUES (?, ?, '', ?, ?, ?)",
                (session_id, seq, created, compressor.compress(payload.encode()), len(payload)),
            )
        else:
            connection.execute(
                "INSERT INTO transcript_events(session_id, seq, event_json, created_at) "
                "VALUES (?, ?, ?, ?)",
                (session_id, seq, payload, created),
            )
    connection.commit()


def sqlite_session(prefix: str, start: float) -> list[dict[str, Any]]:
    return [
        oc_header(f"{prefix}-session"),
        oc_user(f"{prefix}000001", None, f"{prefix} plain", minutes_ago(start)),
        oc_assistant(
            f"{prefix}000002", f"{prefix}000001", [text(f"{prefix} zstd")], minutes_ago(start - 1)
        ),
        oc_user(
            f"{prefix}000003", f"{prefix}000002", f"{prefix} abandoned", minutes_ago(start - 2)
        ),
        oc_user(f"{prefix}000004", f"{prefix}000002", f"{prefix} last", minutes_ago(start - 3)),
    ]


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
        [str(other), str(corrupt)], base=tmp_path, now=NOW, max_messages=10, lookback=None
    )

    errors = {Path(s.path).name: s.error for s in result.sources}
    assert errors["other.sqlite"] is not None and "transcript_events" in errors["other.sqlite"]
    assert errors["broken.db"] is not None and "broken.db" in errors["broken.db"]


def test_locked_sqlite_store_is_reported_and_other_sources_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcripts, "_SQLITE_TIMEOUT_S", 0.05)
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
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    by_name = {Path(s.path).name: s for s in result.sources}
    error = by_name["openclaw-agent.sqlite"].error
    assert error is not None and "locked" in error
    assert texts(result.messages) == ["still here"]


# --- windows: lookback, max_messages, files ------------------------------------------------


def long_session(path: Path, count: int, *, step_minutes: float = 1.0) -> Path:
    lines: list[dict[str, Any]] = [oc_header()]
    parent: str | None = None
    for index in range(count):
        entry_id = f"{index:08x}"
        at = minutes_ago((count - index) * step_minutes)
        if index % 2 == 0:
            lines.append(oc_user(entry_id, parent, f"msg {index}", at))
        else:
            lines.append(oc_assistant(entry_id, parent, [text(f"msg {index}")], at))
        parent = entry_id
    return write_jsonl(path, lines)


def test_lookback_keeps_only_messages_inside_the_window(tmp_path: Path) -> None:
    path = long_session(tmp_path / "s.jsonl", 60)

    result = read(path, tmp_path, lookback=timedelta(minutes=10))

    assert texts(result.messages) == [f"msg {i}" for i in range(50, 60)]
    assert all(m.timestamp and m.timestamp >= NOW - timedelta(minutes=10) for m in result.messages)


def test_max_messages_keeps_the_newest(tmp_path: Path) -> None:
    path = long_session(tmp_path / "s.jsonl", 60)

    result = read(path, tmp_path, max_messages=7)

    assert texts(result.messages) == [f"msg {i}" for i in range(53, 60)]
    assert result.sources[0].messages == 7


def test_newest_files_are_read_first_and_max_files_limits_them(tmp_path: Path) -> None:
    for index, age in enumerate([300, 100, 200]):
        path = write_jsonl(
            tmp_path / f"f{index}.jsonl",
            [{"role": "user", "content": f"file {index}", "timestamp": iso(minutes_ago(age))}],
        )
        set_mtime(path, age)

    result = read(tmp_path / "*.jsonl", tmp_path, max_files=2)

    assert [Path(s.path).name for s in result.sources] == ["f1.jsonl", "f2.jsonl"]
    assert texts(result.messages) == ["file 2", "file 1"]


def heartbeat_session(path: Path, at: datetime) -> Path:
    """An isolated OpenClaw cron/heartbeat session: a host prompt and HEARTBEAT_OK only."""
    return write_jsonl(
        path,
        [
            oc_header(path.stem),
            oc_user("d0000001", None, "Read HEARTBEAT.md if it exists.", at),
            oc_assistant("d0000002", "d0000001", [text("HEARTBEAT_OK")], at),
        ],
    )


def test_heartbeat_only_sessions_do_not_push_the_human_session_out_of_max_files(
    tmp_path: Path,
) -> None:
    human = write_jsonl(
        tmp_path / "human.jsonl",
        [
            oc_header("human"),
            oc_user("e0000001", None, "why is the deploy failing again?", minutes_ago(40)),
            oc_assistant("e0000002", "e0000001", [text("The tag is wrong.")], minutes_ago(39)),
        ],
    )
    set_mtime(human, 600)
    for index in range(6):
        cron = heartbeat_session(tmp_path / f"cron-{index}.jsonl", minutes_ago(30 - index))
        set_mtime(cron, 60 + index)

    result = read(tmp_path / "*.jsonl", tmp_path, max_files=5, lookback=timedelta(hours=6))

    assert texts(result.messages) == ["why is the deploy failing again?", "The tag is wrong."]
    listed = [Path(s.path).name for s in result.sources]
    assert "human.jsonl" in listed
    assert {s.path: s.messages for s in result.sources}[str(human)] == 2


def test_files_opened_looking_for_messages_are_bounded_by_four_times_max_files(
    tmp_path: Path,
) -> None:
    human = write_jsonl(
        tmp_path / "human.jsonl", [{"role": "user", "content": "too far back", "timestamp": None}]
    )
    set_mtime(human, 600)
    for index in range(8):
        set_mtime(heartbeat_session(tmp_path / f"cron-{index}.jsonl", minutes_ago(5)), 60 + index)

    result = read(tmp_path / "*.jsonl", tmp_path, max_files=2)

    # 2 x 4 = 8 files may be opened: the eight heartbeat sessions, not the ninth file.
    assert result.messages == []
    assert "human.jsonl" not in [Path(s.path).name for s in result.sources]


def test_files_last_written_before_the_lookback_are_not_opened_to_replace_empty_ones(
    tmp_path: Path,
) -> None:
    old = write_jsonl(
        tmp_path / "old.jsonl",
        [{"role": "user", "content": "stale", "timestamp": iso(minutes_ago(1))}],
    )
    real_now = datetime.now(UTC)
    stamp = (real_now - timedelta(hours=7)).timestamp()
    os.utime(old, (stamp, stamp))
    cron = heartbeat_session(tmp_path / "cron.jsonl", real_now)

    result = read_recent(
        [str(tmp_path / "*.jsonl")],
        base=tmp_path,
        now=real_now,
        max_messages=10,
        lookback=timedelta(hours=6),
        max_files=1,
    )

    # The message's own timestamp would pass, but a file last written 7 h ago cannot hold a
    # message of the last 6 h: its timestamp is wrong, and the file is not even opened.
    assert result.messages == []
    assert [s.path for s in result.sources] == [str(cron)]


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


def test_max_messages_applies_across_merged_files(tmp_path: Path) -> None:
    a = long_session(tmp_path / "a.jsonl", 6, step_minutes=2)
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [{"role": "user", "content": "from b", "timestamp": iso(minutes_ago(3))}],
    )
    set_mtime(a, 20)
    set_mtime(b, 10)

    result = read(tmp_path / "*.jsonl", tmp_path, max_messages=3)

    assert texts(result.messages) == ["msg 4", "from b", "msg 5"]
    assert {Path(s.path).name: s.messages for s in result.sources} == {"a.jsonl": 2, "b.jsonl": 1}


# --- sources: globs, errors ------------------------------------------------------------------


def test_unmatched_glob_is_a_warning_naming_the_pattern(tmp_path: Path) -> None:
    result = read_recent(
        ["sessions/*.jsonl"], base=tmp_path, now=NOW, max_messages=10, lookback=None
    )

    assert result.sources == []
    assert len(result.warnings) == 1 and "sessions/*.jsonl" in result.warnings[0]


def test_explicit_globs_resolve_against_the_current_folder_and_absolute_ones_stay(
    tmp_path: Path,
) -> None:
    write_jsonl(tmp_path / "gen" / "chat.jsonl", [{"role": "user", "content": "hi"}])
    elsewhere = write_jsonl(tmp_path / "abs" / "a.jsonl", [{"role": "user", "content": "x"}])

    resolved = resolve_explicit_sources(["gen/chat.jsonl", str(elsewhere)], tmp_path)

    assert resolved == [str(tmp_path / "gen" / "chat.jsonl"), str(elsewhere)]


def test_an_explicit_glob_that_matches_nothing_names_the_glob_and_the_folder(
    tmp_path: Path,
) -> None:
    with pytest.raises(TranscriptError) as caught:
        resolve_explicit_sources(["gen/*.jsonl"], tmp_path)

    message = str(caught.value)
    assert "'gen/*.jsonl'" in message and str(tmp_path) in message
    assert "\n" not in message and "transcripts.sources" not in message


def test_once_reads_a_transcripts_path_relative_to_the_shell_not_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli import main

    workspace = tmp_path / "gen"
    (workspace / "assembler.toml").parent.mkdir()
    (workspace / "assembler.toml").write_text("[memory]\nenabled = false\n")
    write_jsonl(
        workspace / "chat.jsonl",
        [{"role": "user", "content": "the deploy is red", "timestamp": iso(NOW)}],
    )
    monkeypatch.chdir(tmp_path)
    now = ["--now", NOW.isoformat()]

    assert main(["--once", "--workspace", "gen", "--transcripts", "gen/chat.jsonl", *now]) == 0
    assert "1 messages read" in capsys.readouterr().out
    written = (workspace / "SCRATCHPAD.md").read_text()

    code = main(["--once", "--workspace", "gen", "--transcripts", "gen/nope.jsonl", *now])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "'gen/nope.jsonl'" in err and str(tmp_path) in err
    assert (workspace / "SCRATCHPAD.md").read_text() == written  # the good file is kept


def test_relative_home_and_recursive_globs_are_expanded(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_jsonl(tmp_path / "ws" / "deep" / "er" / "r.jsonl", [{"role": "user", "content": "rel"}])
    write_jsonl(isolated_home / ".claude" / "x.jsonl", [{"role": "user", "content": "home"}])

    result = read_recent(
        ["deep/**/*.jsonl", "~/.claude/*.jsonl"],
        base=tmp_path / "ws",
        now=NOW,
        max_messages=10,
        lookback=None,
    )

    assert sorted(texts(result.messages)) == ["home", "rel"]
    assert result.warnings == []


def test_unreadable_sources_get_an_error_and_the_rest_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "folder.jsonl").mkdir()
    (tmp_path / "binary.jsonl").write_bytes(bytes(range(256)) * 40)
    write_jsonl(tmp_path / "good.jsonl", [{"role": "user", "content": "fine"}])

    result = read(tmp_path / "*.jsonl", tmp_path)

    errors = {Path(s.path).name: s.error for s in result.sources}
    assert errors["good.jsonl"] is None
    assert errors["folder.jsonl"] is not None and "directory" in errors["folder.jsonl"]
    assert errors["binary.jsonl"] is not None and "not a recognised" in errors["binary.jsonl"]
    assert all("\n" not in (e or "") for e in errors.values())
    assert texts(result.messages) == ["fine"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file without permissions")
def test_file_without_read_permission_gets_an_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "secret.jsonl", [{"role": "user", "content": "x"}])
    path.chmod(0)

    result = read(path, tmp_path)

    assert result.sources[0].error is not None and "permission" in result.sources[0].error


def test_permission_error_on_open_gets_an_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_jsonl(tmp_path / "secret.jsonl", [{"role": "user", "content": "x"}])
    real_open = Path.open

    def deny(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "secret.jsonl":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)

    result = read(path, tmp_path)

    error = result.sources[0].error
    assert error is not None and "permission denied" in error and str(path) in error


# --- reading from the end --------------------------------------------------------------------


def test_big_file_is_read_from_the_tail_only(tmp_path: Path) -> None:
    # A 64 MiB hole of NUL bytes sits between the header and the tail: reading it would count
    # a bad line and cost far more than the bound asserted here.
    path = tmp_path / "big.jsonl"
    with path.open("wb") as file:
        file.write((json.dumps(oc_header()) + "\n").encode())
        file.truncate(64 * 1024 * 1024)
        file.seek(0, os.SEEK_END)
        file.write(b"\n")
        parent: str | None = None
        for index in range(400):
            entry_id = f"{index:08x}"
            entry = oc_user(
                entry_id, parent, f"tail {index} " + "x" * 200, minutes_ago(400 - index)
            )
            file.write((json.dumps(entry) + "\n").encode())
            parent = entry_id

    result = read(path, tmp_path, max_messages=50)

    assert [m.text.split()[1] for m in result.messages] == [str(i) for i in range(350, 400)]
    report = result.sources[0]
    assert report.bad_lines == 0
    assert report.bytes_read < 256 * 1024
    assert result.messages[0].cwd == "/home/u/.openclaw/workspace"  # the header is read apart


def test_lookback_stops_the_backward_read_early(tmp_path: Path) -> None:
    path = long_session(tmp_path / "s.jsonl", 20_000, step_minutes=0.01)

    whole = read(path, tmp_path, max_messages=100_000)
    recent = read(path, tmp_path, max_messages=100_000, lookback=timedelta(minutes=1))

    assert len(whole.messages) == 20_000
    assert len(recent.messages) == 100
    assert recent.sources[0].bytes_read * 20 < whole.sources[0].bytes_read


def test_a_dangling_parent_is_searched_for_only_within_a_bounded_number_of_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcripts, "_PARENT_SEARCH_BYTES", 4096)
    lines: list[dict[str, Any]] = [oc_header()]
    parent: str | None = None
    for index in range(8000):
        entry_id = f"{index:08x}"
        lines.append(oc_user(entry_id, parent, f"filler {index}", minutes_ago(9000 - index)))
        parent = entry_id
    lines.append(oc_user("ffffffff", "00000bad", "newest", minutes_ago(1)))
    path = write_jsonl(tmp_path / "s.jsonl", lines)

    result = read(path, tmp_path, max_messages=3)

    assert texts(result.messages) == ["filler 7998", "filler 7999", "newest"]
    assert result.sources[0].bytes_read < 256 * 1024 < path.stat().st_size


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


# --- long messages: the analysis reads a bounded head and tail ----------------------------------

LONG_HEAD = "the payments api times out since the deploy, here is the gateway log:"
LONG_TAIL = "why does it still time out after the rollback? need it fixed asap"


def pasted_message(size: int) -> str:
    """A human message of about `size` characters: words, a pasted log, a question."""
    line = "2026-03-01T09:14:58Z gateway-7c9f8 level=error msg=upstream timeout latency=30012ms\n"
    return f"{LONG_HEAD}\n{line * (size // len(line))}{LONG_TAIL}"


def long_message_source(fmt: str, folder: Path, message: str) -> Path:
    """Write a source of format `fmt` whose one human message is `message`."""
    if fmt == "openclaw":
        return write_jsonl(
            folder / "s.jsonl", [oc_header(), oc_user("a0000001", None, message, minutes_ago(2))]
        )
    if fmt == "claude-code":
        return write_jsonl(
            folder / "c.jsonl", [cc_line("user", "u1", None, message, minutes_ago(2))]
        )
    if fmt == "generic":
        return write_jsonl(
            folder / "g.jsonl",
            [{"role": "user", "content": message, "timestamp": iso(minutes_ago(2))}],
        )
    db = folder / "agent.sqlite"
    connection = make_db(db)
    add_rows(connection, "s", [oc_header(), oc_user("a0000001", None, message, minutes_ago(2))])
    connection.close()
    return db


@pytest.mark.parametrize("fmt", ["openclaw", "openclaw-sqlite", "claude-code", "generic"])
def test_a_200_kb_message_keeps_a_bounded_head_and_tail_and_its_whole_length(
    tmp_path: Path, fmt: str
) -> None:
    message = pasted_message(200_000)
    path = long_message_source(fmt, tmp_path, message)

    (kept,) = read(path, tmp_path).messages

    head, tail = kept.text.split(transcripts.ELISION)
    assert len(head) <= transcripts.TEXT_HEAD_CHARS and len(tail) <= transcripts.TEXT_TAIL_CHARS
    assert head.startswith(LONG_HEAD) and tail.endswith(LONG_TAIL)
    assert kept.original_length == len(message) and kept.length == len(message)


def test_a_message_within_the_bound_is_kept_whole(tmp_path: Path) -> None:
    message = pasted_message(transcripts.TEXT_HEAD_CHARS + transcripts.TEXT_TAIL_CHARS - 200)
    path = long_message_source("generic", tmp_path, message)

    (kept,) = read(path, tmp_path).messages

    assert kept.text == message
    assert kept.original_length is None and kept.length == len(message)


def test_clipping_cuts_between_words_and_keeps_both_ends() -> None:
    text = " ".join(f"word{i:05d}" for i in range(5000))

    clipped = transcripts.clip_middle(text, 100, 100)

    head, tail = clipped.split(transcripts.ELISION)
    assert text.startswith(head) and text.endswith(tail)
    assert 90 <= len(head) <= 100 and 90 <= len(tail) <= 100
    assert all(len(word) == len("word00000") for word in (*head.split(), *tail.split()))


@given(
    text=st.text(st.characters(blacklist_characters="[]…"), max_size=300),
    head=st.integers(0, 120),
    tail=st.integers(0, 120),
)
def test_a_clipped_text_is_made_of_the_two_ends_and_clips_to_itself(
    text: str, head: int, tail: int
) -> None:
    clipped = transcripts.clip_middle(text, head, tail)

    if len(text) <= head + len(transcripts.ELISION) + tail:
        assert clipped == text
    else:
        start, end = clipped.split(transcripts.ELISION)
        assert len(start) <= head and len(end) <= tail
        assert text.startswith(start) and text.endswith(end)
    assert transcripts.clip_middle(clipped, head, tail) == clipped


# --- impossible timestamps: a bad line, never a crash ------------------------------------------

# The two lines of the issue: a time outside datetime's range once converted to UTC.
IMPOSSIBLE_TIMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]
FORMATS = ["openclaw", "openclaw-sqlite", "claude-code", "generic"]


def timed_source(fmt: str, folder: Path, stamp: object, message_stamp: object = None) -> Path:
    """Write a source of format `fmt` with one human message "hello" stamped `stamp` (OpenClaw:
    the entry's timestamp; `message_stamp` is then its message's, in milliseconds)."""
    if fmt in ("openclaw", "openclaw-sqlite"):
        entry = oc_user("a0000001", None, "hello", minutes_ago(2))
        entry["timestamp"] = stamp
        entry["message"]["timestamp"] = message_stamp
        if fmt == "openclaw":
            return write_jsonl(folder / "s.jsonl", [oc_header(), entry])
        db = folder / "agent.sqlite"
        db.unlink(missing_ok=True)
        connection = make_db(db)
        add_rows(connection, "s", [oc_header(), entry])
        connection.close()
        return db
    if fmt == "claude-code":
        line = cc_line("user", "u1", None, "hello", minutes_ago(2))
        line["timestamp"] = stamp
        return write_jsonl(folder / "c.jsonl", [line])
    return write_jsonl(
        folder / "g.jsonl", [{"role": "user", "content": "hello", "timestamp": stamp}]
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stamp", IMPOSSIBLE_TIMES)
def test_a_message_with_an_impossible_timestamp_is_a_bad_line(
    tmp_path: Path, fmt: str, stamp: str
) -> None:
    result = read(timed_source(fmt, tmp_path, stamp), tmp_path)

    assert result.messages == []
    assert result.sources[0].bad_lines == 1


@pytest.mark.parametrize("fmt", ["openclaw", "openclaw-sqlite"])
@pytest.mark.parametrize("millis", [10**20, -(10**20), 10**400, float("nan"), float("inf")])
def test_an_openclaw_message_time_in_impossible_milliseconds_is_a_bad_line(
    tmp_path: Path, fmt: str, millis: float
) -> None:
    result = read(timed_source(fmt, tmp_path, iso(minutes_ago(2)), millis), tmp_path)

    assert result.messages == []
    assert result.sources[0].bad_lines == 1


def test_a_skipped_message_does_not_break_the_chain_of_the_messages_around_it(
    tmp_path: Path,
) -> None:
    broken = oc_user("a0000002", "a0000001", "impossible", minutes_ago(3))
    broken["message"]["timestamp"] = IMPOSSIBLE_TIMES[0]
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            oc_header(),
            oc_user("a0000001", None, "first", minutes_ago(4)),
            broken,
            oc_user("a0000003", "a0000002", "third", minutes_ago(2)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["first", "third"]
    assert result.sources[0].bad_lines == 1


_OFFSET_MINUTES = st.integers(-(24 * 60 - 1), 24 * 60 - 1)


def _iso(at: datetime, offset: int | None) -> str:
    if offset is None:
        return at.isoformat()
    sign = "-" if offset < 0 else "+"
    return f"{at.isoformat()}{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"


_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
TIMESTAMP_VALUES = st.one_of(
    st.builds(_iso, st.datetimes(), st.none() | _OFFSET_MINUTES),
    st.datetimes().map(lambda at: at.isoformat() + "Z"),
    st.integers(),
    st.sampled_from([10**400, -(10**400), 2**63, -(2**63), 253402300799, -62135596800]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=30),
    _JUNK,
)
# The widest offsets a time zone can have: a time that is read can be shown in any of them.
_EAST, _WEST = timezone(timedelta(hours=23, minutes=59)), timezone(-timedelta(hours=23, minutes=59))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fmt=st.sampled_from(FORMATS), stamp=TIMESTAMP_VALUES, message_stamp=TIMESTAMP_VALUES)
def test_any_timestamp_value_gives_a_message_or_a_bad_line_never_an_error(
    tmp_path: Path, fmt: str, stamp: object, message_stamp: object
) -> None:
    result = read(timed_source(fmt, tmp_path, stamp, message_stamp), tmp_path)

    report = result.sources[0]
    assert report.error is None
    assert len(result.messages) + report.bad_lines == 1
    for message in result.messages:
        assert message.text == "hello"
        if message.timestamp is not None:
            assert message.timestamp.utcoffset() == timedelta(0)
            message.timestamp.astimezone(_EAST)
            message.timestamp.astimezone(_WEST)


def test_an_impossible_timestamp_does_not_stop_the_render_and_is_reported(
    workspace: Path,
) -> None:
    from assembler.assemble import run_once
    from assembler.config import load_config

    write_jsonl(
        workspace / "chat.jsonl",
        [
            *({"role": "user", "content": "x", "timestamp": stamp} for stamp in IMPOSSIBLE_TIMES),
            {"role": "user", "content": "the deploy is green again", "timestamp": iso(NOW)},
        ],
    )
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat.jsonl"]\n[memory]\nenabled = false\n'
        '[time]\ntimezone = "UTC"\n'
    )

    assembly = run_once(load_config(workspace), now=NOW + timedelta(minutes=1))

    assert assembly.written
    assert "deploy" in assembly.path.read_text(encoding="utf-8")
    (source,) = assembly.meta["sources"]
    assert source["bad_lines"] == 2 and source["messages"] == 1
