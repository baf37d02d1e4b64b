"""Tests for assembler/transcripts/: the sources matched, files read from their end, the active
branch walked, the sessions merged within the limits and the clock, bad lines counted, through
the lines of any host. Each host's reader is tested in its own module (test_openclaw.py,
test_claude_code.py, test_codex.py, test_generic.py), and what every host must do in
test_hosts_contract.py."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fixtures.claude_code.lines import CC_SESSION, cc_line, write_claude_code_2, write_hook_sessions
from fixtures.openclaw.lines import (
    add_rows,
    heartbeat_session,
    long_session,
    make_db,
    oc_assistant,
    oc_chain,
    oc_header,
    oc_header_v,
    oc_user,
)
from fixtures.transcript_lines import (
    NOW,
    iso,
    minutes_ago,
    no_host_settings,  # noqa: F401 (autouse)
    read,
    set_mtime,
    text,
    texts,
    write_jsonl,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler.errors import TranscriptError
from assembler.hosts.registry import HOSTS
from assembler.transcripts import branch
from assembler.transcripts import message as transcripts
from assembler.transcripts.message import CLOCK_SKEW
from assembler.transcripts.read import read_recent, resolve_explicit_sources


def spelled(number: int) -> str:
    """A number as three letters: texts that differ by more than their numbers, which
    a session repeating one text with other numbers would not (a host's prompt)."""
    digits = []
    for _ in range(3):
        number, digit = divmod(number, 26)
        digits.append(chr(ord("a") + digit))
    return "".join(reversed(digits))


# --- the active branch: rewinds and lost parents --------------------------------------------------


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


# --- merging: messages without a time -------------------------------------------------------------


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


# --- format detection and forcing -----------------------------------------------------------------


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


def test_empty_file_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    path.write_bytes(b"")

    result = read(path, tmp_path)

    assert result.messages == []
    assert result.sources[0].error is None


# --- windows: lookback, max_messages, files -------------------------------------------------------


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


# --- sources: globs, errors -----------------------------------------------------------------------


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


# --- reading from the end -------------------------------------------------------------------------


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


# --- long messages: the analysis reads a bounded head and tail ------------------------------------


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


# --- impossible timestamps: a bad line, never a crash ---------------------------------------------


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
    (source,) = assembly.measured.sources
    assert source.bad_lines == 2 and source.messages == 1


# --- where the transcripts were looked for, without configuration ---------------------------------


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


# --- merging: a session read twice is kept once ---------------------------------------------------


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


# --- the clock: nothing said after `now` is read --------------------------------------------------


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


def test_the_sources_read_are_the_given_globs_else_the_configs_else_the_hosts_places(
    tmp_path: Path,
) -> None:
    from assembler.hosts.registry import HOSTS
    from assembler.transcripts.read import default_sources, sources_to_read

    state = tmp_path / "ws" / ".scratchpad"
    hosts_places = sources_to_read(HOSTS, [], tmp_path / "ws", state)

    assert sources_to_read(HOSTS, ["conf/*.jsonl"], tmp_path, state, ["cli/*.jsonl"]) == [
        "cli/*.jsonl"
    ]
    assert sources_to_read(HOSTS, ["conf/*.jsonl"], tmp_path, state) == ["conf/*.jsonl"]
    assert hosts_places == default_sources(HOSTS, tmp_path / "ws", state)
