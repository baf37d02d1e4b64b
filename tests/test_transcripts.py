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

from assembler.errors import TranscriptError
from assembler.hosts.claude_code.turns import user_turn as claude_user_turn
from assembler.hosts.openclaw import sessions as openclaw_names
from assembler.hosts.openclaw import store as openclaw_store
from assembler.hosts.openclaw.turns import clean_user_text
from assembler.hosts.registry import HOSTS
from assembler.transcripts import branch
from assembler.transcripts import message as transcripts
from assembler.transcripts.message import CLOCK_SKEW, Message
from assembler.transcripts.read import (
    TranscriptRead,
    default_sources,
    read_recent,
    resolve_explicit_sources,
    where_looked,
)
from assembler.transcripts.reader import Format

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
# Claude Code session files written for these tests in the host's shape (our own text).
EXAMPLES = Path(__file__).resolve().parent / "fixtures" / "claude-code"


@pytest.fixture(autouse=True)
def no_host_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hosts' own environment variables would move their folders: none in these tests."""
    for name in (
        "OPENCLAW_STATE_DIR",
        "OPENCLAW_CONFIG_PATH",
        "OPENCLAW_HOME",
        "OPENCLAW_WORKSPACE_DIR",
        "OPENCLAW_PROFILE",
        "CLAUDE_CONFIG_DIR",
    ):
        monkeypatch.delenv(name, raising=False)


# --- helpers: lines in the hosts' shapes ----------------------------------------------------


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def spelled(number: int) -> str:
    """A number as three letters: texts that differ by more than their numbers, which
    a session repeating one text with other numbers would not (a host's prompt)."""
    digits = []
    for _ in range(3):
        number, digit = divmod(number, 26)
        digits.append(chr(ord("a") + digit))
    return "".join(reversed(digits))


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
        hosts=HOSTS,
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
    # The compaction summary, and the title line (dated by its last message, u9, before it).
    assert [(s.text, s.kind) for s in result.summaries] == [
        (
            "This session is being continued from a previous conversation. Summary: fix CI",
            "compaction",
        ),
        ("Deploy debugging", "title"),
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


def test_claude_code_examples_with_null_parents_are_read_linearly(tmp_path: Path) -> None:
    result = read(EXAMPLES / "representative.jsonl", tmp_path)

    assert [m.role for m in result.messages] == ["user", "assistant"] * 3 + ["user"]
    assert result.messages[0].text.startswith("Hi there! Can you help")
    assert result.messages[-1].text.startswith("Great, that works nicely now!")
    assert not any("File written" in m.text for m in result.messages)
    assert result.sources[0].bad_lines == 0


def test_claude_code_edge_case_examples_skip_wrappers_and_count_broken_lines(
    tmp_path: Path,
) -> None:
    result = read(EXAMPLES / "edge_cases.jsonl", tmp_path)

    said = texts(result.messages)
    assert said[0].startswith("A note with **bold**")
    assert any(m.startswith("Unicode works too: café") for m in said)
    assert not any(
        m.startswith(("Caveat:", "<command-name>", "<local-command-stdout>")) for m in said
    )
    stamps = [m.timestamp for m in result.messages]
    assert stamps == sorted(s for s in stamps if s is not None)
    assert result.sources[0].bad_lines >= 5  # bare strings, numbers, lists, broken messages


def test_claude_code_example_folder_merges_sessions_by_time(tmp_path: Path) -> None:
    result = read(EXAMPLES / "*.jsonl", tmp_path, max_messages=500)

    stamps = [m.timestamp for m in result.messages]
    assert all(s is not None for s in stamps)
    assert stamps == sorted(stamps)  # type: ignore[type-var]
    assert {m.session_id for m in result.messages} >= {"test_session", "session_b", "edge_session"}
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
        hosts=HOSTS,
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
        ["sessions/*.jsonl"], base=tmp_path, now=NOW, max_messages=10, lookback=None, hosts=HOSTS
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
    from assembler.cli.main import main

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
        hosts=HOSTS,
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
    real_open = os.open

    # Files are opened with os.open (non-blocking, regular files only): deny that one.
    def deny(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(name).name == "secret.jsonl":
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)

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
                entry_id, parent, f"tail {spelled(index)} " + "x" * 200, minutes_ago(400 - index)
            )
            file.write((json.dumps(entry) + "\n").encode())
            parent = entry_id

    result = read(path, tmp_path, max_messages=50)

    assert [m.text.split()[1] for m in result.messages] == [spelled(i) for i in range(350, 400)]
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
    monkeypatch.setattr(branch, "_PARENT_SEARCH_BYTES", 4096)
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
END_OF_TIME = datetime(9999, 12, 30, tzinfo=UTC)
# The widest offsets a time zone can have: a time that is read can be shown in any of them.
_EAST, _WEST = timezone(timedelta(hours=23, minutes=59)), timezone(-timedelta(hours=23, minutes=59))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fmt=st.sampled_from(FORMATS), stamp=TIMESTAMP_VALUES, message_stamp=TIMESTAMP_VALUES)
def test_any_timestamp_value_gives_a_message_or_a_bad_line_never_an_error(
    tmp_path: Path, fmt: str, stamp: object, message_stamp: object
) -> None:
    path = timed_source(fmt, tmp_path, stamp, message_stamp)
    # A clock at the end of time: every time a message can have was said by then.
    result = read_recent(
        [str(path)], base=tmp_path, now=END_OF_TIME, max_messages=100, lookback=None, hosts=HOSTS
    )

    report = result.sources[0]
    assert report.error is None
    assert len(result.messages) + report.bad_lines == 1
    # At an earlier clock the message is read, or stamped after it, or a bad line.
    earlier = read(path, tmp_path)
    if not earlier.messages and not earlier.sources[0].bad_lines:
        assert result.messages and result.messages[0].timestamp is not None
        assert result.messages[0].timestamp > NOW + CLOCK_SKEW
    for message in result.messages:
        assert message.text == "hello"
        if message.timestamp is not None:
            assert message.timestamp.utcoffset() == timedelta(0)
            message.timestamp.astimezone(_EAST)
            message.timestamp.astimezone(_WEST)


def test_an_impossible_timestamp_does_not_stop_the_render_and_is_reported(
    workspace: Path,
) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

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

    assembly = run_once(load_config(workspace), now=NOW + timedelta(minutes=1), hosts=HOSTS)

    assert assembly.written
    assert "deploy" in assembly.path.read_text(encoding="utf-8")
    (source,) = assembly.meta["sources"]
    assert source["bad_lines"] == 2 and source["messages"] == 1


# =============================================================================================
# The hosts' real folders, release by release. The builders write our own sessions in the
# shapes each host writes (read from their code: OpenClaw 2026.3 to 2026.9, pi's v1 sessions,
# Claude Code 1.0 and 2.1), not copies of their files.
# =============================================================================================

# Everything the hosts write in the human's place in these fixtures: none of it may reach the
# messages, the file, the mood or the memory queries.
HOST_TEXTS = (
    "heartbeat",
    "[cron:",
    "cron wake",
    "inbox digest",
    "untrusted metadata",
    "gmt+8",
    "message_id",
    "openclaw-control-ui",
    "system:",
    "exec finished",
    "agent failed before reply",
    "api key",
    "water the plants",
    "task-notification",
    "background build",
    "system-reminder",
    "style guide",
    "command-name",
    "orchestrate the following",
    "caveat",
    "interrupted",
    "archived words",
    "checkpoint copy",
)


def host_texts_in(value: str) -> list[str]:
    lowered = value.lower()
    return [marker for marker in HOST_TEXTS if marker in lowered]


def oc_header_v(session_id: str, version: int | None, at: datetime) -> dict[str, Any]:
    header: dict[str, Any] = {"type": "session", "id": session_id, "timestamp": iso(at)}
    if version is not None:
        header["version"] = version
    header["cwd"] = "/home/u/.openclaw/workspace"
    return header


def oc_chain(entries: Sequence[dict[str, Any]], *, first_parent: str | None = None) -> None:
    """Link entries (not the header) into one branch by parentId, in order."""
    parent = first_parent
    for entry in entries:
        entry["parentId"] = parent
        parent = entry["id"]


def envelope(words: str, *, stamp: str = "Sun 2026-03-01 19:55 GMT+8") -> str:
    """A user text as OpenClaw 2026.3 stored a web chat message: a sender block, then a stamp."""
    sender = {"label": "openclaw-control-ui", "id": "openclaw-control-ui"}
    return (
        "Sender (untrusted metadata):\n```json\n"
        + json.dumps(sender, indent=2)
        + f"\n```\n\n[{stamp}] {words}"
    )


def group_envelope(words: str, sender_name: str, sender_id: str) -> str:
    """A Telegram group message as OpenClaw 2026.3 stored it."""
    label = f"{sender_name} ({sender_id})"
    conversation = {
        "message_id": "812",
        "sender_id": sender_id,
        "conversation_label": "Ops crew id:-1001",
        "sender": label,
        "timestamp": "Sun 2026-03-01 19:50 GMT+8",
        "group_subject": "Ops crew",
        "is_group_chat": True,
    }
    sender = {"label": label, "id": sender_id, "name": sender_name}
    return (
        "Conversation info (untrusted metadata):\n```json\n"
        + json.dumps(conversation, indent=2)
        + "\n```\n\nSender (untrusted metadata):\n```json\n"
        + json.dumps(sender, indent=2)
        + f"\n```\n\n[Telegram Ops crew id:-1001 +2m Sun 2026-03-01 19:50 GMT+8] {label}: {words}"
        + "\n[message_id: 812]"
    )


def gateway_notice(entry_id: str, at: datetime) -> dict[str, Any]:
    return oc_assistant(
        entry_id,
        None,
        [text('Agent failed before reply: No API key found for provider "anthropic".')],
        at,
        api="openai-responses",
        provider="openclaw",
        model="gateway-injected",
        stopReason="error",
    )


HEARTBEAT_2026_3 = (
    "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. Do not infer or "
    "repeat old tasks from prior chats. If nothing needs attention, reply HEARTBEAT_OK."
)


def cron_prompt(job: str, name: str, at: datetime) -> str:
    return (
        f"[cron:{job} {name}] Summarise new mail in the inbox\n"
        f"Current time: Sunday, March 1st, 2026 — {at:%H:%M} (UTC)"
    )


CRON_JOB = "8d1c2f3a-9b0e-4c5d-8e7f-6a5b4c3d2e1f"


def cron_run_session(folder: Path, session_id: str, at: datetime, *, version: int = 3) -> Path:
    """An isolated cron run: the job's prompt and a real (not HEARTBEAT_OK) reply."""
    entries = [
        oc_user(f"{session_id[:8]}", None, cron_prompt(CRON_JOB, "inbox", at), at),
        oc_assistant(
            f"{session_id[:7]}a", None, [text("Inbox digest: 3 new mails, none urgent.")], at
        ),
    ]
    oc_chain(entries)
    return write_jsonl(
        folder / f"{session_id}.jsonl", [oc_header_v(session_id, version, at), *entries]
    )


def session_index(entries: dict[str, str], folder: Path) -> None:
    """Write `sessions.json`: session key -> {sessionId, sessionFile, updatedAt}."""
    index = {
        key: {
            "sessionId": session_id,
            "sessionFile": str(folder / f"{session_id}.jsonl"),
            "updatedAt": ms(NOW),
            "chatType": "direct",
        }
        for key, session_id in entries.items()
    }
    (folder / "sessions.json").write_text(json.dumps(index, indent=2))


MAIN_2026_3 = "5f0c9a8e-1d2b-4c3a-9e8f-7a6b5c4d3e21"


def write_openclaw_2026_3(state: Path) -> Path:
    """OpenClaw 2026.3: JSONL sessions whose user texts carry the envelope, system event lines
    and the heartbeat prompt itself; twenty newer isolated cron runs, in the index."""
    folder = state / "agents" / "main" / "sessions"
    entries = [
        {
            "type": "custom",
            "customType": "model-snapshot",
            "data": {"provider": "anthropic", "modelId": "claude-opus-4-6"},
            "id": "a3000001",
            "timestamp": iso(minutes_ago(121)),
        },
        oc_user(
            "a3000002",
            None,
            envelope("the staging deploy keeps failing on the migration step"),
            minutes_ago(120),
        ),
        oc_assistant(
            "a3000003", None, [text("Looking at the migration logs now.")], minutes_ago(119)
        ),
        oc_user(
            "a3000004",
            None,
            "System: [2026-03-01 19:57:10 GMT+8] Exec finished (gateway id=4f2, code 1)\n\n"
            + envelope("it fails again, I am getting really frustrated with this"),
            minutes_ago(110),
        ),
        gateway_notice("a3000005", minutes_ago(109)),
        oc_user("a3000006", None, HEARTBEAT_2026_3, minutes_ago(100)),
        oc_assistant("a3000007", None, [text("HEARTBEAT_OK")], minutes_ago(100)),
        oc_user(
            "a3000008",
            None,
            "A scheduled reminder has been triggered. The reminder content is:\n\n"
            "Reminder: water the plants\n\nPlease relay this reminder to the user.",
            minutes_ago(90),
        ),
        oc_assistant("a3000009", None, [text("Reminder: water the plants.")], minutes_ago(90)),
        oc_user(
            "a300000a", None, envelope("ok the migration passes now, thanks!"), minutes_ago(80)
        ),
        oc_assistant("a300000b", None, [text("Great, the migration is green.")], minutes_ago(79)),
        oc_assistant(
            "a300000c",
            None,
            [text("Great, the migration is green.")],
            minutes_ago(79),
            provider="openclaw",
            model="delivery-mirror",
        ),
    ]
    oc_chain(entries)
    main = write_jsonl(
        folder / f"{MAIN_2026_3}.jsonl",
        [oc_header_v(MAIN_2026_3, 3, minutes_ago(121)), *entries],
    )
    set_mtime(main, 2 * 3600)
    keys = {"agent:main:main": MAIN_2026_3}
    for index in range(20):
        session_id = f"c{index:07d}-2f3a-4b5c-8d6e-7f8091a2b3c4"
        run = cron_run_session(folder, session_id, minutes_ago(60 - 2 * index))
        set_mtime(run, 60 * (60 - 2 * index))
        keys[f"agent:main:cron:{CRON_JOB}:run:{session_id}"] = session_id
    keys[f"agent:main:cron:{CRON_JOB}"] = session_id
    session_index(keys, folder)
    return folder


MAIN_2026_4 = "7b2e4d6f-8a1c-4e3b-9d5f-0a2c4e6b8d1f"


def write_openclaw_2026_4(state: Path, *, crons: int = 20, index: bool = True) -> Path:
    """OpenClaw 2026.4 to 2026.6: a live session of six messages (with heartbeat polls between
    them), its run trace and pointer, three compaction checkpoint copies, archives of a reset
    and a deleted session, a crash backup, the index and its backup; and cron runs."""
    folder = state / "agents" / "main" / "sessions"
    entries = [
        oc_user("b4000001", None, "can you review the release notes draft", minutes_ago(50)),
        oc_assistant("b4000002", None, [text("Sure, reading the draft.")], minutes_ago(49)),
        oc_user("b4000003", None, "[OpenClaw heartbeat poll]", minutes_ago(45)),
        oc_assistant("b4000004", None, [text("HEARTBEAT_OK")], minutes_ago(45)),
        oc_user("b4000005", None, "the changelog section is too long", minutes_ago(40)),
        oc_assistant(
            "b4000006", None, [text("I will shorten it to five bullets.")], minutes_ago(39)
        ),
        oc_user("b4000007", None, "[OpenClaw heartbeat poll]", minutes_ago(30)),
        oc_assistant(
            "b4000008",
            None,
            [text("Build status from the heartbeat check: all green.")],
            minutes_ago(30),
        ),
        oc_user("b4000009", None, "perfect, ship it", minutes_ago(20)),
        oc_assistant("b400000a", None, [text("Shipped the notes.")], minutes_ago(19)),
    ]
    oc_chain(entries)
    header = oc_header_v(MAIN_2026_4, 3, minutes_ago(51))
    live = write_jsonl(folder / f"{MAIN_2026_4}.jsonl", [header, *entries])
    set_mtime(live, 2 * 3600)
    copy = [header, *entries[:6]]
    copy[1] = oc_user("b4000001", None, "checkpoint copy of the review", minutes_ago(50))
    for uuid in (
        "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70",
        "1e0f9a8b-7c6d-4e5f-9a0b-1c2d3e4f5a61",
        "2f1a0b9c-8d7e-4f6a-8b1c-2d3e4f5a6b72",
    ):
        write_jsonl(folder / f"{MAIN_2026_4}.checkpoint.{uuid}.jsonl", copy)
    trace = {
        "traceSchema": "openclaw-trajectory",
        "schemaVersion": 1,
        "traceId": MAIN_2026_4,
        "source": "runtime",
        "type": "session.started",
        "ts": iso(minutes_ago(50)),
        "seq": 1,
        "sourceSeq": 1,
        "sessionId": MAIN_2026_4,
        "sessionKey": "agent:main:main",
        "runId": "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
        "data": {"trigger": "user"},
    }
    write_jsonl(folder / f"{MAIN_2026_4}.trajectory.jsonl", [trace, {**trace, "seq": 2}])
    (folder / f"{MAIN_2026_4}.trajectory-path.json").write_text(
        json.dumps(
            {
                "traceSchema": "openclaw-trajectory-pointer",
                "schemaVersion": 1,
                "sessionId": MAIN_2026_4,
                "runtimeFile": str(folder / f"{MAIN_2026_4}.trajectory.jsonl"),
            }
        )
    )
    old = "3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
    archived = [
        oc_header_v(old, 3, minutes_ago(70)),
        oc_user("e4000001", None, "archived words before the reset", minutes_ago(70)),
    ]
    write_jsonl(folder / f"{old}.jsonl.reset.2026-03-01T10-50-00.000Z", archived)
    write_jsonl(folder / f"{old}.jsonl.deleted.2026-03-01T10-55-00.000Z", archived)
    write_jsonl(folder / f"{MAIN_2026_4}.jsonl.bak-4242-1772362200000", archived)
    keys = {"agent:main:main": MAIN_2026_4}
    for number in range(crons):
        session_id = f"d{number:07d}-3b4c-4d5e-8f60-718293a4b5c6"
        run = cron_run_session(folder, session_id, minutes_ago(60 - 2 * number))
        write_jsonl(folder / f"{session_id}.trajectory.jsonl", [{**trace, "traceId": session_id}])
        set_mtime(run, 60 * (60 - 2 * number))
        keys[f"agent:main:cron:{CRON_JOB}:run:{session_id}"] = session_id
    if index:
        session_index(keys, folder)
        (folder / "sessions.json.bak.1").write_text("{}")
    return folder


# The schema of OpenClaw's agent database (2026.9, schema 23), the tables and columns read here.
OPENCLAW_AGENT_SCHEMA = """
CREATE TABLE schema_meta (meta_key TEXT NOT NULL PRIMARY KEY, role TEXT NOT NULL,
  schema_version INTEGER NOT NULL, agent_id TEXT, app_version TEXT,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
CREATE TABLE session_nodes (session_key TEXT NOT NULL PRIMARY KEY,
  current_session_id TEXT NOT NULL, entry_json TEXT NOT NULL, updated_at INTEGER NOT NULL,
  created_via TEXT, created_actor_type TEXT) STRICT;
CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL,
  previous_session_id TEXT, reason TEXT, session_scope TEXT NOT NULL DEFAULT 'conversation',
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  transcript_updated_at INTEGER DEFAULT NULL, model_provider TEXT, model TEXT) STRICT;
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
  event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB,
  event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq)) STRICT;
CREATE TABLE trajectory_runtime_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
  run_id TEXT, event_json TEXT NOT NULL, created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, seq)) STRICT;
"""


def store_session(
    connection: sqlite3.Connection,
    key: str,
    session_id: str,
    entries: Sequence[dict[str, Any]],
    written: datetime,
    *,
    compress: Collection[int] = (),
) -> None:
    """Add one session window: its node, its window row and its events (seq 0 the header);
    entries at the positions in `compress` are stored as zstd, `event_json` NULL."""
    compressor = zstandard.ZstdCompressor(level=1)
    connection.execute(
        "INSERT OR REPLACE INTO session_nodes VALUES (?, ?, ?, ?, ?, ?)",
        (
            key,
            session_id,
            json.dumps({"sessionId": session_id, "updatedAt": ms(written)}),
            ms(written),
            "cron" if ":cron:" in key else "run",
            "system" if ":cron:" in key else None,
        ),
    )
    connection.execute(
        "INSERT INTO session_windows (session_id, session_key, created_at, updated_at, "
        "transcript_updated_at, model_provider, model) VALUES (?, ?, ?, ?, ?, 'mock', 'm1')",
        (session_id, key, ms(written) - 60_000, ms(written), ms(written)),
    )
    header = oc_header_v(session_id, 4, written - timedelta(minutes=1))
    for seq, entry in enumerate([header, *entries]):
        payload = json.dumps(entry)
        if seq in compress:
            navigation = json.dumps(
                {"version": 1, "report": {"kind": "canonical"}, "navigation": {}, "reset": {}}
            )
            connection.execute(
                "INSERT INTO transcript_events VALUES (?, ?, NULL, ?, ?, ?, ?)",
                (
                    session_id,
                    seq,
                    ms(written),
                    compressor.compress(payload.encode()),
                    len(payload.encode()),
                    navigation,
                ),
            )
        else:
            connection.execute(
                "INSERT INTO transcript_events VALUES (?, ?, ?, ?, NULL, ?, NULL)",
                (session_id, seq, payload, ms(written), len(payload.encode())),
            )


def oc4_user(entry_id: str, words: str, at: datetime, **extra: Any) -> dict[str, Any]:
    """A version 4 user message, as 2026.9 writes it (string content, metadata)."""
    entry = oc_user(entry_id, None, words, at)
    entry["message"]["content"] = words
    entry["message"]["idempotencyKey"] = f"{entry_id}:user"
    entry["message"]["__openclaw"] = {"senderIsOwner": not extra}
    entry["message"].update(extra)
    return entry


def wake(entry_id: str, prompt: str, source: str, at: datetime) -> dict[str, Any]:
    return oc4_user(
        entry_id, prompt, at, provenance={"kind": "internal_system", "sourceTool": source}
    )


MAIN_2026_9 = "019b0c1d-2e3f-7a4b-8c5d-6e7f8091a2b3"


def write_openclaw_2026_9(state: Path, *, crons: int = 20) -> Path:
    """OpenClaw 2026.9: no session files; the agent's SQLite store, with compressed rows, wake
    prompts marked internal, a rewind made with a leaf entry, a side entry; and isolated cron
    runs as windows of their own."""
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(db)
    connection.executescript(OPENCLAW_AGENT_SCHEMA)
    connection.execute(
        "INSERT INTO schema_meta VALUES ('primary', 'agent', 23, 'main', '2026.9.6', ?, ?)",
        (ms(NOW), ms(NOW)),
    )
    ids = [f"{MAIN_2026_9[:-4]}{n:04x}" for n in range(20)]
    entries = [
        {
            "type": "model_change",
            "provider": "mock",
            "modelId": "m1",
            "id": ids[0],
            "timestamp": iso(minutes_ago(61)),
        },
        oc4_user(ids[1], "the release checklist is missing the rollback step", minutes_ago(60)),
        oc_assistant(ids[2], None, [text("I will add a rollback section.")], minutes_ago(59)),
        wake(ids[3], "[OpenClaw cron wake]", "cron", minutes_ago(50)),
        oc_assistant(ids[4], None, [text("HEARTBEAT_OK")], minutes_ago(50)),
        wake(ids[5], "[OpenClaw heartbeat poll]", "heartbeat", minutes_ago(40)),
        oc_assistant(ids[6], None, [text("Heartbeat check: the build is green.")], minutes_ago(40)),
        gateway_notice(ids[7], minutes_ago(39)),
        oc4_user(ids[8], "abandoned question about the staging cluster", minutes_ago(35)),
        oc_assistant(ids[9], None, [text("abandoned answer")], minutes_ago(34)),
    ]
    oc_chain(entries)
    # The human rewound to before the abandoned question and asked something else: a leaf entry
    # (appended after the abandoned branch) points at the new tip, and what follows continues
    # from the leaf.
    leaf = {
        "type": "leaf",
        "id": ids[10],
        "parentId": ids[9],
        "timestamp": iso(minutes_ago(30)),
        "targetId": ids[7],
    }
    again = oc4_user(ids[11], "add the rollback step to the checklist please", minutes_ago(29))
    again["parentId"] = ids[10]
    reply = oc_assistant(ids[12], ids[11], [text("Added the rollback step.")], minutes_ago(28))
    side = {
        "type": "custom",
        "id": ids[13],
        "parentId": ids[12],
        "customType": "openclaw.conversation-turn-reply",
        "appendMode": "side",
        "timestamp": iso(minutes_ago(27)),
        "data": {"message": {"role": "assistant", "content": "side copy"}},
    }
    store_session(
        connection,
        "agent:main:main",
        MAIN_2026_9,
        [*entries, leaf, again, reply, side],
        minutes_ago(27),
        compress={2, 3, 12, 13},
    )
    for number in range(crons):
        session_id = f"019b0c1d-{number:04x}-7a4b-8c5d-c00000000000"
        at = minutes_ago(25 - number)
        run = [
            oc4_user(
                f"{session_id[:13]}-a",
                cron_prompt(CRON_JOB, "inbox", at),
                at,
                provenance={
                    "kind": "internal_system",
                    "sourceTool": "cron",
                    "jobId": CRON_JOB,
                    "runId": f"run-{number}",
                    "sourceSessionKey": f"agent:main:cron:{CRON_JOB}",
                },
            ),
            oc_assistant(f"{session_id[:13]}-b", None, [text("Inbox digest: 2 new.")], at),
        ]
        oc_chain(run)
        store_session(connection, f"agent:main:cron:{CRON_JOB}", session_id, run, at)
    connection.commit()
    connection.close()
    return db


def write_pi_v1(path: Path) -> Path:
    """A pi version 1 session: no ids; a compaction keeps entries from an index counted from
    the top of the file (the header is entry 0)."""
    lines: list[dict[str, Any] | str] = [
        {"type": "session", "id": "pi-v1-session", "timestamp": iso(minutes_ago(60)), "cwd": "/p"},
        {
            "type": "model_change",
            "timestamp": iso(minutes_ago(60)),
            "provider": "a",
            "modelId": "m",
        },
        {
            "type": "message",
            "timestamp": iso(minutes_ago(50)),
            "message": {
                "role": "user",
                "content": "summarised away",
                "timestamp": ms(minutes_ago(50)),
            },
        },
        "",
        "{a corrupt line pi skipped too",
        {
            "type": "message",
            "timestamp": iso(minutes_ago(49)),
            "message": {
                "role": "assistant",
                "content": [text("also summarised")],
                "timestamp": ms(minutes_ago(49)),
            },
        },
        # Entry 4 (the blank and corrupt lines do not count): the first kept one.
        {
            "type": "message",
            "timestamp": iso(minutes_ago(40)),
            "message": {
                "role": "user",
                "content": "kept question",
                "timestamp": ms(minutes_ago(40)),
            },
        },
        {
            "type": "message",
            "timestamp": iso(minutes_ago(39)),
            "message": {
                "role": "assistant",
                "content": [text("kept answer")],
                "timestamp": ms(minutes_ago(39)),
            },
        },
        {
            "type": "compaction",
            "timestamp": iso(minutes_ago(30)),
            "summary": "## Goal\nShip v1",
            "firstKeptEntryIndex": 4,
            "tokensBefore": 120000,
        },
        {
            "type": "message",
            "timestamp": iso(minutes_ago(20)),
            "message": {
                "role": "user",
                "content": "after compaction",
                "timestamp": ms(minutes_ago(20)),
            },
        },
    ]
    return write_jsonl(path, lines)


CC_SESSION = "4c3b2a19-0f8e-4d7c-9b6a-5f4e3d2c1b0a"


def cc1_line(
    kind: str, uuid: str, parent: str | None, content: Any, at: datetime, **extra: Any
) -> dict[str, Any]:
    line = cc_line(kind, uuid, parent, content, at, session=CC_SESSION, **extra)
    line["version"] = "1.0.128"
    return line


def write_claude_code_1(path: Path) -> Path:
    """Claude Code 1.0: a prompt command with arguments (its expansion isMeta), a local command
    with its caveat and output, hook output, an interruption."""
    command = (
        "<command-message>orchestrator is running…</command-message>\n"
        "<command-name>/orchestrator</command-name>\n"
        "<command-args>update CLAUDE.md with the new build steps</command-args>"
    )
    lines = [
        cc1_line(
            "user",
            "k1",
            None,
            "Caveat: The messages below were generated by the user "
            "while running local commands. DO NOT respond to these messages.",
            minutes_ago(30),
            isMeta=True,
        ),
        cc1_line(
            "user",
            "k2",
            "k1",
            "<command-name>/clear</command-name>\n            "
            "<command-message>clear</command-message>\n            <command-args></command-args>",
            minutes_ago(30),
        ),
        cc1_line(
            "user", "k3", "k2", "<local-command-stdout></local-command-stdout>", minutes_ago(30)
        ),
        cc1_line("user", "k4", "k3", command, minutes_ago(20)),
        cc1_line(
            "user",
            "k5",
            "k4",
            [
                text(
                    "Orchestrate the following work carefully: update "
                    "CLAUDE.md with the new build steps\n"
                )
            ],
            minutes_ago(20),
            isMeta=True,
        ),
        cc1_line(
            "user",
            "k6",
            "k5",
            "<user-prompt-submit-hook>Follow the style guide</user-prompt-submit-hook>",
            minutes_ago(20),
            isVisibleInTranscriptOnly=True,
        ),
        cc1_line("assistant", "k7", "k6", [text("Updated CLAUDE.md.")], minutes_ago(19)),
        cc1_line("user", "k8", "k7", [text("[Request interrupted by user]")], minutes_ago(18)),
        cc1_line("user", "k9", "k8", "looks good, thanks", minutes_ago(10)),
        cc1_line("assistant", "k10", "k9", [text("You're welcome.")], minutes_ago(9)),
    ]
    return write_jsonl(path, lines)


def cc2_line(
    kind: str, uuid: str, parent: str | None, content: Any, at: datetime, **extra: Any
) -> dict[str, Any]:
    line = cc_line(kind, uuid, parent, content, at, session=CC_SESSION, **extra)
    line.update(version="2.1.331", entrypoint="cli")
    return line


def attachment(uuid: str, parent: str, at: datetime, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "attachment": body,
        "type": "attachment",
        "uuid": uuid,
        "timestamp": iso(at),
        "userType": "external",
        "entrypoint": "cli",
        "cwd": "/home/u/src/api",
        "sessionId": CC_SESSION,
        "version": "2.1.331",
        "gitBranch": "main",
    }


def write_claude_code_2(path: Path) -> Path:
    """Claude Code 2.1: queue and bookkeeping lines, attachments in the chain, a prompt command
    with arguments, a task notification the host sent in the human's place (and the reply to
    it), a system reminder inside the human's text."""
    command = (
        "<command-message>orchestrator</command-message>\n<command-name>/orchestrator</command-name>"
        "\n<command-args>update CLAUDE.md with the new build steps</command-args>"
    )
    notification = (
        "<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>\n"
        "<summary>Background build finished</summary>\n</task-notification>"
    )
    lines: list[dict[str, Any]] = [
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": iso(minutes_ago(30)),
            "sessionId": CC_SESSION,
            "content": "/orchestrator update CLAUDE.md",
        },
        cc2_line("user", "m1", None, command, minutes_ago(30), promptId="p1", turnOrigin="cli"),
        cc2_line(
            "user",
            "m2",
            "m1",
            [
                text(
                    "Orchestrate the following work carefully: update "
                    "CLAUDE.md with the new build steps\n"
                )
            ],
            minutes_ago(30),
            isMeta=True,
            turnCompanion=True,
        ),
        attachment("m3", "m2", minutes_ago(30), {"type": "date", "date": "2026-03-01"}),
        {
            "type": "last-prompt",
            "lastPrompt": "/orchestrator update",
            "leafUuid": "m3",
            "sessionId": CC_SESSION,
        },
        cc2_line(
            "assistant",
            "m4",
            "m3",
            [text("Updated CLAUDE.md with the build steps.")],
            minutes_ago(29),
        ),
        cc2_line(
            "user", "m5", "m4", notification, minutes_ago(20), origin={"kind": "task-notification"}
        ),
        cc2_line(
            "assistant",
            "m6",
            "m5",
            [text("The background build finished cleanly.")],
            minutes_ago(20),
        ),
        cc2_line(
            "user",
            "m7",
            "m6",
            "now run the integration tests\n\n<system-reminder>\nThe "
            "user opened the file tests/it.py in the IDE.\n</system-reminder>",
            minutes_ago(10),
            promptId="p2",
        ),
        attachment("m8", "m7", minutes_ago(10), {"type": "session_context", "context": {}}),
        cc2_line("assistant", "m9", "m8", [text("Running them now.")], minutes_ago(9)),
        {"type": "cost-state", "sessionId": CC_SESSION, "totalCostUSD": 0.1},
    ]
    return write_jsonl(path, lines)


def sessions_glob(state: Path) -> str:
    return str(state / "agents" / "main" / "sessions" / "*.jsonl")


def all_text(result: TranscriptRead) -> str:
    return "\n".join([*texts(result.messages), *(m.speaker or "" for m in result.messages)])


# --- 1. OpenClaw's artifacts beside its sessions ------------------------------------------------


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


# --- 2. Heartbeat polls, cron prompts and other turns the host writes ---------------------------


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


# --- 3. The envelope of OpenClaw 2026.3 ---------------------------------------------------------


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


# --- 4. The host's runs do not push the human's session out -------------------------------------


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


# --- 5. Version 4 sessions: leaf entries, side entries, resets ----------------------------------


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


# --- 6. pi's version 1 sessions ----------------------------------------------------------------


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


# --- 7. Claude Code: slash commands, notifications, reminders ---------------------------------


def test_claude_code_1_slash_command_arguments_are_the_humans_words(tmp_path: Path) -> None:
    path = write_claude_code_1(tmp_path / "s.jsonl")

    result = read(path, tmp_path)

    assert texts(result.messages) == [
        "update CLAUDE.md with the new build steps",
        "Updated CLAUDE.md.",
        "looks good, thanks",
        "You're welcome.",
    ]
    assert [m.role for m in result.messages] == ["user", "assistant"] * 2
    assert host_texts_in(all_text(result)) == []


def test_claude_code_2_drops_task_notifications_their_replies_and_system_reminders(
    tmp_path: Path,
) -> None:
    path = write_claude_code_2(tmp_path / "s.jsonl")

    result = read(path, tmp_path)

    assert texts(result.messages) == [
        "update CLAUDE.md with the new build steps",
        "Updated CLAUDE.md with the build steps.",
        "now run the integration tests",
        "Running them now.",
    ]
    assert result.sources[0].bad_lines == 0
    assert host_texts_in(all_text(result)) == []


def test_claude_code_channel_messages_are_a_speakers_words(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s.jsonl",
        [
            cc_line(
                "user",
                "c1",
                None,
                '<channel source="telegram" chat_id="9" user="alice">\nis the build green?\n'
                "</channel>",
                minutes_ago(2),
            )
        ],
    )

    (message,) = read(path, tmp_path).messages

    assert (message.text, message.speaker) == ("is the build green?", "alice")


def test_claude_code_session_started_by_the_host_alone_does_not_count(tmp_path: Path) -> None:
    host = write_jsonl(
        tmp_path / "host.jsonl",
        [
            cc_line(
                "user",
                "t1",
                None,
                "Run the nightly report",
                minutes_ago(3),
                origin={"kind": "scheduled-trigger"},
            ),
            cc_line("assistant", "t2", "t1", [text("Report sent.")], minutes_ago(2)),
        ],
    )
    set_mtime(host, 10)
    human = write_jsonl(
        tmp_path / "human.jsonl",
        [cc_line("user", "u1", None, "what changed today?", minutes_ago(30), session="h")],
    )
    set_mtime(human, 100)

    result = read(tmp_path / "*.jsonl", tmp_path, max_files=1)

    assert texts(result.messages) == ["what changed today?"]


# --- 8. Where the transcripts are, without configuration ---------------------------------------


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


def write_hook_sessions(state_dir: Path, paths: Sequence[str]) -> None:
    """Record sessions as the hook does, with the hook run for the workspace in every project
    as `assemble setup claude-code` has the user set it up: only the sessions whose Claude
    Code settings run the hook for the workspace (or that run inside it) are read."""
    from assembler.hosts.claude_code.sessions import config_dir
    from assembler.hosts.claude_code.setup import claude_code_setup

    settings = config_dir(os.environ) / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    known = json.loads(settings.read_text()) if settings.exists() else {"hooks": {}}
    setup = claude_code_setup(state_dir.parent, Path("/opt/assembler/bin/assemble"))
    for event, matchers in setup.settings["hooks"].items():
        known["hooks"].setdefault(event, []).extend(matchers)
    settings.write_text(json.dumps(known))
    state_dir.mkdir(parents=True, exist_ok=True)
    sessions = {
        f"s{index}": {"transcript_path": path, "cwd": "/w", "seen": iso(NOW)}
        for index, path in enumerate(paths)
    }
    (state_dir / "claude-code-sessions.json").write_text(json.dumps(sessions))


def test_default_sources_take_the_claude_code_transcripts_the_hook_recorded_inside_projects(
    isolated_home: Path, tmp_path: Path
) -> None:
    projects = isolated_home / ".claude" / "projects" / "-w"
    inside = write_claude_code_2(projects / f"{CC_SESSION}.jsonl")
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"role": "user", "content": "private"}\n')
    link = projects / "link.jsonl"
    link.symlink_to(secret)
    workspace = tmp_path / "w"
    write_hook_sessions(
        workspace / ".scratchpad",
        [
            str(inside),
            str(secret),  # planted by the agent: outside the projects folder
            str(link),  # inside as written, outside once resolved
            str(projects / ".." / ".." / ".." / "secret.jsonl"),
            "relative/path.jsonl",
            str(projects / "missing.jsonl"),
        ],
    )

    sources = default_sources(HOSTS, workspace, workspace / ".scratchpad")

    assert sources == [str(inside)]


def test_default_sources_use_claude_config_dir_and_ignore_a_linked_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cc-config"
    transcript = write_claude_code_1(config / "projects" / "-w" / "a.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    workspace = tmp_path / "w"
    write_hook_sessions(workspace / ".scratchpad", [str(transcript)])
    linked = tmp_path / "linked"
    write_hook_sessions(tmp_path / "real-record", [str(transcript)])
    (linked / ".scratchpad").mkdir(parents=True)
    (linked / ".scratchpad" / "claude-code-sessions.json").symlink_to(
        tmp_path / "real-record" / "claude-code-sessions.json"
    )

    assert default_sources(HOSTS, workspace, workspace / ".scratchpad") == [str(transcript)]
    assert default_sources(HOSTS, linked, linked / ".scratchpad") == []


def looked_lines(workspace: Path, configured: Sequence[str] = ()) -> list[str]:
    from assembler.config.files import user_config_dir

    user_config = user_config_dir() / "config.toml"
    return where_looked(HOSTS, workspace, workspace / ".scratchpad", user_config, configured)


def test_where_looked_names_each_recorded_transcript_and_why_it_was_skipped(
    isolated_home: Path, tmp_path: Path
) -> None:
    projects = isolated_home / ".claude" / "projects"
    inside = write_claude_code_2(projects / "-w" / f"{CC_SESSION}.jsonl")
    elsewhere = write_claude_code_1(tmp_path / "elsewhere" / "-w" / "a.jsonl")
    workspace = tmp_path / "w"
    missing = projects / "-w" / "missing.jsonl"
    write_hook_sessions(
        workspace / ".scratchpad", [str(inside), str(elsewhere), str(missing), "/etc/passwd"]
    )

    lines = looked_lines(workspace)

    record = workspace / ".scratchpad" / "claude-code-sessions.json"
    assert "transcripts: Claude Code: 1 found" in lines
    assert (
        f"transcripts: Claude Code: the sessions the hook recorded in {record}, read only "
        f"inside {projects}"
    ) in lines
    assert f"transcripts: Claude Code: recorded {inside}: read" in lines
    assert (
        f"transcripts: Claude Code: recorded {elsewhere}: skipped, outside {projects}, the only "
        f'folder a recorded path is read from; to read it, add "{elsewhere.parent}/*.jsonl" to '
        "transcripts.sources in your own config"
    ) in lines
    assert f"transcripts: Claude Code: recorded {missing}: skipped, no such file" in lines
    assert "transcripts: Claude Code: recorded /etc/passwd: skipped, not a .jsonl file" in lines
    # The fix names the user's own config, the one place an outside folder may be named.
    config = isolated_home / "xdg_config_home" / "scratchpad-assembler" / "config.toml"
    assert lines[-1].startswith(
        f"transcripts: to read transcripts kept elsewhere, name them in your own config ({config})"
    )


def test_where_looked_says_the_hook_has_not_run_and_honours_claude_config_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "w"
    config = tmp_path / "cc-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    config.mkdir()

    lines = looked_lines(workspace)

    record = workspace / ".scratchpad" / "claude-code-sessions.json"
    assert lines[0] == (
        "transcripts: none named in the config, so the hosts' own places were looked in"
    )
    assert (
        f"transcripts: Claude Code: the sessions the hook recorded in {record}, read only "
        f"inside {config / 'projects'} (from CLAUDE_CONFIG_DIR)"
    ) in lines
    assert (
        f"transcripts: Claude Code: {record}: not there: the hook has not run for this "
        "workspace yet"
    ) in lines
    assert looked_lines(workspace, ["chat.jsonl"]) == [
        "transcripts: named in the config or --transcripts: chat.jsonl"
    ]


def test_a_recorded_transcript_outside_is_read_once_the_users_config_names_its_folder(
    isolated_home: Path, tmp_path: Path
) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config, user_config_dir
    from assembler.errors import ConfigError

    elsewhere = write_claude_code_2(tmp_path / "elsewhere" / "-w" / f"{CC_SESSION}.jsonl")
    workspace = tmp_path / "w"
    write_hook_sessions(workspace / ".scratchpad", [str(elsewhere)])
    (workspace / ".scratchpad" / "config.toml").write_text('[memory]\nmodel = "none"\n')
    assert run_once(load_config(workspace), now=NOW, hosts=HOSTS).meta["messages_read"] == 0
    [line] = [line for line in looked_lines(workspace) if "skipped, outside" in line]
    folder_glob = line.split('add "')[1].split('"')[0]

    # Where the line says: the user's own config; the workspace's may not name it.
    ours = workspace / ".scratchpad" / "config.toml"
    ours.write_text(f'[memory]\nmodel = "none"\n[transcripts]\nsources = [{folder_glob!r}]\n')
    with pytest.raises(ConfigError, match="reaches outside the workspace"):
        load_config(workspace)
    ours.write_text('[memory]\nmodel = "none"\n')
    user = user_config_dir() / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'[transcripts]\nsources = [{folder_glob!r}]\nlookback = "none"\n')
    assembly = run_once(load_config(workspace), now=NOW + timedelta(minutes=1), hosts=HOSTS)

    assert [(s["path"], s["messages"]) for s in assembly.meta["sources"]] == [(str(elsewhere), 4)]


def test_once_explain_says_where_transcripts_were_looked_for_and_the_file_points_there(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli.main import main

    elsewhere = write_claude_code_2(tmp_path / "elsewhere" / "-w" / f"{CC_SESSION}.jsonl")
    workspace = tmp_path / "w"
    write_hook_sessions(workspace / ".scratchpad", [str(elsewhere)])
    (workspace / ".scratchpad" / "config.toml").write_text('[memory]\nmodel = "none"\n')
    argv = ["--once", "--no-daemon", "--workspace", str(workspace), "--now", NOW.isoformat()]

    assert main([*argv, "--explain"]) == 0
    out = capsys.readouterr().out
    assert main([*argv, "--explain", "--json"]) == 0
    explained = json.loads(capsys.readouterr().out)["explain"]

    skipped = f"  transcripts: Claude Code: recorded {elsewhere}: skipped, outside "
    assert skipped in out
    assert any(line.startswith(skipped.strip()) for line in explained)
    written = (workspace / "SCRATCHPAD.md").read_text()
    assert "no transcripts found yet (`assemble --once --explain` says where it looked)" in written


def test_an_empty_sources_setting_means_the_defaults(workspace: Path) -> None:
    from assembler.config.files import load_config

    config = load_config(workspace)

    assert config.transcripts.sources == []


# --- 9. End to end: a whole run on each layout, with the default config ------------------------


def assemble_with_defaults(workspace: Path) -> Any:
    """Run one assembly of `workspace` with the default transcript sources (keyword search
    only, for speed) and return it."""
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    (workspace / "MEMORY.md").write_text(
        "# Notes\n\nThe migration step runs alembic upgrade head.\n\nRelease notes live in "
        "docs/releases.\n\nThe rollback step is in the release checklist.\n"
    )
    (workspace / ".scratchpad").mkdir(exist_ok=True)
    (workspace / ".scratchpad" / "config.toml").write_text(
        '[memory]\nmodel = "none"\n[time]\ntimezone = "UTC"\n'
    )
    return run_once(load_config(workspace), now=NOW + timedelta(minutes=1), hosts=HOSTS)


def assert_only_the_humans_conversation(assembly: Any, messages_read: int) -> None:
    written = assembly.path.read_text(encoding="utf-8")
    meta = assembly.meta  # what the run measured (kept in the state folder, not the file)
    assert assembly.written
    assert not meta.get("degraded")
    assert meta["messages_read"] == messages_read
    assert all("error" not in source for source in meta["sources"])
    assert host_texts_in(written) == []
    explained = "\n".join(assembly.explain())
    assert host_texts_in(explained) == []
    assert "query 1 (current)" in explained  # the memory queries were made, from the human


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
    assert [Path(s["path"]).name for s in assembly.meta["sources"]] == [f"{MAIN_2026_4}.jsonl"]


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
    assert [s["format"] for s in assembly.meta["sources"]] == ["openclaw-sqlite"]
    assert "rollback" in assembly.path.read_text(encoding="utf-8")


@pytest.mark.parametrize("writer", [write_claude_code_1, write_claude_code_2])
def test_a_whole_run_on_claude_code_reads_what_the_hook_recorded(
    isolated_home: Path, tmp_path: Path, writer: Any
) -> None:
    transcript = writer(isolated_home / ".claude" / "projects" / "-w" / f"{CC_SESSION}.jsonl")
    workspace = tmp_path / "w"
    workspace.mkdir()
    write_hook_sessions(workspace / ".scratchpad", [str(transcript)])

    assembly = assemble_with_defaults(workspace)

    assert_only_the_humans_conversation(assembly, messages_read=4)
    assert assembly.mood is not None and assembly.mood.combined.messages == 2


def test_a_session_both_in_a_file_and_imported_into_the_store_is_read_once(
    tmp_path: Path,
) -> None:
    entries = [
        oc_user("ac000001", None, "why is the deploy failing again?", minutes_ago(10)),
        oc_assistant("ac000002", None, [text("The tag is wrong.")], minutes_ago(9)),
    ]
    oc_chain(entries)
    header = oc_header_v("imported-1", 3, minutes_ago(11))
    write_jsonl(tmp_path / "sessions" / "imported-1.jsonl", [header, *entries])
    connection = make_db(tmp_path / "openclaw-agent.sqlite")
    add_rows(connection, "imported-1", [header, *entries])
    connection.close()

    result = read_recent(
        [str(tmp_path / "sessions" / "*.jsonl"), str(tmp_path / "openclaw-agent.sqlite")],
        base=tmp_path,
        now=NOW,
        max_messages=10,
        lookback=None,
        hosts=HOSTS,
    )

    assert texts(result.messages) == ["why is the deploy failing again?", "The tag is wrong."]
    assert len(result.sources) == 2


# --- the clock: nothing said after `now` is read -----------------------------------------------


def test_messages_stamped_after_now_are_not_read_in_any_format(tmp_path: Path) -> None:
    openclaw_path = write_jsonl(
        tmp_path / "oc" / "s.jsonl",
        [
            oc_header(),
            oc_user("a0000001", None, "before the clock", minutes_ago(10)),
            oc_assistant("a0000002", "a0000001", [text("reply before")], minutes_ago(9)),
            oc_user("a0000003", "a0000002", "after the clock", minutes_ago(-5)),
            oc_assistant("a0000004", "a0000003", [text("reply after")], minutes_ago(-6)),
        ],
    )
    claude_path = write_jsonl(
        tmp_path / "cc" / "s.jsonl",
        [
            cc_line("user", "u1", None, "claude before", minutes_ago(10)),
            cc_line("assistant", "u2", "u1", [text("claude reply before")], minutes_ago(9)),
            cc_line("user", "u3", "u2", "claude after", minutes_ago(-5)),
        ],
    )
    generic_path = write_jsonl(
        tmp_path / "g" / "s.jsonl",
        [
            {"role": "user", "content": "generic before", "timestamp": iso(minutes_ago(10))},
            {"role": "user", "content": "generic after", "timestamp": iso(minutes_ago(-5))},
        ],
    )

    assert texts(read(openclaw_path, tmp_path).messages) == ["before the clock", "reply before"]
    assert texts(read(claude_path, tmp_path).messages) == ["claude before", "claude reply before"]
    assert texts(read(generic_path, tmp_path).messages) == ["generic before"]


def test_a_message_within_the_clock_skew_is_still_read(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "g.jsonl",
        [
            {"role": "user", "content": "just now", "timestamp": iso(NOW + CLOCK_SKEW / 2)},
            {"role": "user", "content": "too late", "timestamp": iso(NOW + CLOCK_SKEW * 2)},
        ],
    )

    assert texts(read(path, tmp_path).messages) == ["just now"]


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


def test_claude_code_titles_are_read_dated_by_their_last_message_and_not_after_now(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "proj" / "s.jsonl",
        [
            {"type": "summary", "summary": "Earlier work on the CLI", "leafUuid": "gone"},
            cc_line("user", "u1", None, "stripe webhooks fail on staging", minutes_ago(20)),
            cc_line("assistant", "u2", "u1", [text("The raw body is parsed.")], minutes_ago(19)),
            cc_line("user", "u3", "u2", "fix it", minutes_ago(-5)),
            {
                "type": "summary",
                "summary": "Fixing Stripe webhook signature failures on staging",
                "leafUuid": "u2",
            },
            {"type": "summary", "summary": "Written after the clock", "leafUuid": "u3"},
        ],
    )

    result = read(path, tmp_path)

    assert [(s.text, s.timestamp, s.kind) for s in result.summaries] == [
        ("Earlier work on the CLI", None, "title"),
        ("Fixing Stripe webhook signature failures on staging", minutes_ago(19), "title"),
    ]


def conversation_info(words: str, stamp: str) -> str:
    """A user text as OpenClaw 2026.4 stores a channel message: the conversation block, whose
    timestamp is the sender's local time, then the words."""
    info = {"message_id": "4411", "sender": "8811", "timestamp": stamp}
    return (
        "Conversation info (untrusted metadata):\n```json\n"
        + json.dumps(info, indent=2)
        + f"\n```\n\n{words}"
    )


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


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (
            "<command-message>recover is running…</command-message>\n<command-name>/recover"
            "</command-name>",
            "/recover",
        ),
        (
            "<command-name>/init</command-name>\n<command-message>init</command-message>\n"
            "<command-args></command-args>",
            "/init",
        ),
        ("<command-name>/review</command-name>\n<command-args>PR 42</command-args>", "PR 42"),
    ],
)
def test_a_claude_code_slash_command_is_the_humans_request(command: str, words: str) -> None:
    line = {"type": "user", "message": {"role": "user", "content": command}}

    turn = claude_user_turn(line)

    assert (turn.said, turn.text) == ("human", words)


@pytest.mark.parametrize("name", ["/clear", "/model", "/compact"])
def test_a_command_that_only_works_the_session_is_not_the_humans_words(name: str) -> None:
    content = f"<command-name>{name}</command-name>\n<command-args></command-args>"
    line = {"type": "user", "message": {"role": "user", "content": content}}

    assert claude_user_turn(line).said != "human"
