"""Tests for assembler/hosts/generic/: generic JSONL transcripts, one `{"role", "content",
"timestamp", "speaker"?}` object per line, read wherever the config names them (the lines in
tests/fixtures/generic/)."""

from __future__ import annotations

from pathlib import Path

from fixtures.generic.lines import generic_line
from fixtures.transcript_lines import (
    iso,
    minutes_ago,
    ms,
    no_host_settings,  # noqa: F401 (autouse)
    read,
    text,
    texts,
    write_jsonl,
)

from assembler.hosts.generic.host import HOST
from assembler.hosts.registry import HOSTS
from assembler.transcripts.hosts import classify


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


def test_the_human_alone_has_a_speaker_and_a_line_may_name_its_session_and_folder(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            generic_line("user", "is the build green?", minutes_ago(3), speaker="al"),
            generic_line("assistant", "It is.", minutes_ago(2), speaker="bot"),
            generic_line("user", "ship it", minutes_ago(1), session_id="s-7", cwd="/srv/app"),
        ],
    )

    result = read(path, tmp_path)

    assert [(m.speaker, m.session_id, m.cwd) for m in result.messages] == [
        ("al", "chat", None),  # the file's name, where the line names no session
        (None, "chat", None),
        (None, "s-7", "/srv/app"),
    ]


def test_tool_output_and_empty_turns_are_no_party_of_the_conversation(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [
            generic_line("tool", "total 0", minutes_ago(3)),
            generic_line("user", "", minutes_ago(2)),
            generic_line("assistant", [{"type": "image", "url": "x.png"}], minutes_ago(2)),
            generic_line("user", "what now?", minutes_ago(1)),
        ],
    )

    result = read(path, tmp_path)

    assert texts(result.messages) == ["what now?"]
    assert result.sources[0].bad_lines == 0


def test_a_line_is_generic_when_it_has_a_role_and_content_and_no_other_host_claims_it() -> None:
    assert classify(HOSTS, generic_line("user", "hi")) == "generic"
    assert classify(HOSTS, {"role": "user"}) is None
    assert classify(HOSTS, {"content": "hi"}) is None


def test_the_generic_host_keeps_no_sessions_of_its_own(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "chat.jsonl", [generic_line("user", "hi", minutes_ago(1))])

    assert HOST.sources(tmp_path, tmp_path / ".scratchpad", {"HOME": str(tmp_path)}) == []
