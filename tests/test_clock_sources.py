"""Tests of where the human's clock comes from: Codex's rollout names, OpenClaw's stamps
before the window, the zone the workspace learned (`context/learned_zone`), and which of them
wins (a UTC stamp only when nothing says otherwise)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assembler.context.daytime import human_zone
from assembler.context.learned_zone import (
    ZONE_NAME,
    LearnedZone,
    read_learned_zone,
    remember_zone,
)
from assembler.hosts.codex.reader import rollout_zone
from assembler.hosts.registry import HOSTS
from assembler.transcripts.message import Message, ZoneSeen
from assembler.transcripts.read import TranscriptRead, read_recent

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def msg(text: str, offset_hours: float | None = None, zone: str | None = None) -> Message:
    message = Message("user", text, NOW - timedelta(minutes=1), "t.jsonl")
    if offset_hours is None:
        return message
    return replace(message, utc_offset=timedelta(hours=offset_hours), zone=zone)


# -- Codex: the rollout's name is the machine's local time ------------------------------------


def test_a_rollout_named_an_hour_ahead_of_its_utc_start_is_at_plus_one() -> None:
    began = datetime(2026, 2, 2, 12, 48, 50, tzinfo=UTC)
    zone = rollout_zone("rollout-2026-02-02T13-48-50-019c1e66.jsonl", began)
    assert zone is not None and zone.offset == timedelta(hours=1)


def test_a_rollout_named_the_day_before_gives_a_negative_offset() -> None:
    began = datetime(2025, 11, 13, 1, 48, 11, tzinfo=UTC)
    zone = rollout_zone("rollout-2025-11-12T17-48-11-019a7ae6.jsonl", began)
    assert zone is not None and zone.offset == timedelta(hours=-8)


@pytest.mark.parametrize(
    ("name", "began"),
    [
        # Named in UTC: Codex falls back to UTC where it cannot read the local offset.
        ("rollout-2026-02-02T12-48-50-x.jsonl", datetime(2026, 2, 2, 12, 48, 50, tzinfo=UTC)),
        # Off a quarter hour by minutes: not a clock reading.
        ("rollout-2026-02-02T13-25-00-x.jsonl", datetime(2026, 2, 2, 12, 48, 50, tzinfo=UTC)),
        # Further than any zone.
        ("rollout-2026-02-03T13-48-50-x.jsonl", datetime(2026, 2, 2, 12, 48, 50, tzinfo=UTC)),
        ("session-2026-02-02T13-48-50-x.jsonl", datetime(2026, 2, 2, 12, 48, 50, tzinfo=UTC)),
        ("rollout-2026-02-30T13-48-50-x.jsonl", datetime(2026, 2, 2, 12, 48, 50, tzinfo=UTC)),
    ],
)
def test_a_name_that_is_no_clock_reading_gives_no_zone(name: str, began: datetime) -> None:
    assert rollout_zone(name, began) is None


# A Codex user turn at 11:58 UTC.
USER_TURN = {
    "timestamp": "2026-03-10T11:58:00Z",
    "type": "response_item",
    "payload": {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "add the retry to the uploader"}],
    },
}


def test_a_codex_session_read_knows_the_humans_offset_from_its_name(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-03-10T20-55-00-a1.jsonl"
    lines = [
        {"timestamp": "2026-03-10T11:55:00Z", "type": "session_meta", "payload": {"id": "a1"}},
        USER_TURN,
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    read = read_recent(
        [str(path)], base=tmp_path, now=NOW, max_messages=50, lookback=None, hosts=HOSTS
    )

    assert read.zone is not None and read.zone.offset == timedelta(hours=9)
    human = human_zone(read.messages, None, read.zone)
    assert human.source == "transcript"
    assert NOW.astimezone(human.zone).hour == 21


def _rollout_with_turn_zone(folder: Path, zone: object) -> Path:
    path = folder / "rollout-2026-03-10T20-55-00-a2.jsonl"  # named at +09:00
    lines = [
        {"timestamp": "2026-03-10T11:55:00Z", "type": "session_meta", "payload": {"id": "a2"}},
        {
            "timestamp": "2026-03-10T11:56:00Z",
            "type": "turn_context",
            "payload": {"cwd": "/w", "timezone": zone, "current_date": "2026-03-10"},
        },
        USER_TURN,
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_turns_named_zone_wins_over_the_rollouts_name(tmp_path: Path) -> None:
    path = _rollout_with_turn_zone(tmp_path, "America/Los_Angeles")

    read = read_recent(
        [str(path)], base=tmp_path, now=NOW, max_messages=50, lookback=None, hosts=HOSTS
    )

    assert read.zone is not None and read.zone.offset == timedelta(hours=-7)  # PDT on 10 March
    assert read.zone.name == "PDT"


@pytest.mark.parametrize("zone", ["../../etc/passwd", "Not/AZone", "", 7, "/etc/localtime"])
def test_a_turn_zone_that_is_no_zone_leaves_the_rollouts_name(tmp_path: Path, zone: object) -> None:
    path = _rollout_with_turn_zone(tmp_path, zone)

    read = read_recent(
        [str(path)], base=tmp_path, now=NOW, max_messages=50, lookback=None, hosts=HOSTS
    )

    assert read.zone is not None and read.zone.offset == timedelta(hours=9)


# -- OpenClaw: a stamp before the window still tells the clock ----------------------------------


def _openclaw_line(key: str, parent: str | None, role: str, text: str, at: datetime) -> str:
    return json.dumps(
        {
            "type": "message",
            "id": key,
            "parentId": parent,
            "timestamp": at.isoformat().replace("+00:00", "Z"),
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
        }
    )


def test_an_openclaw_stamp_hours_before_the_window_still_gives_the_zone(tmp_path: Path) -> None:
    early = NOW - timedelta(hours=9)
    stamp = (early + timedelta(hours=8)).strftime("%a %Y-%m-%d %H:%M")
    lines = [
        json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-10T00:00Z"}),
        _openclaw_line("a", None, "user", f"[{stamp} GMT+8] check the backup job", early),
        _openclaw_line("b", "a", "assistant", "The backup ran at 02:00.", early),
        # This stretch has no stamp (a channel that stamps nothing).
        _openclaw_line("c", "b", "user", "now rotate the logs", NOW - timedelta(minutes=3)),
        _openclaw_line("d", "c", "assistant", "Rotated.", NOW - timedelta(minutes=2)),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def read_session(scan: bool) -> TranscriptRead:
        return read_recent(
            [str(path)],
            base=tmp_path,
            now=NOW,
            max_messages=50,
            lookback=timedelta(hours=6),
            zone_scan=scan,
            hosts=HOSTS,
        )

    # Without the scan (a workspace that already knows the zone) only the window is read.
    assert read_session(False).zone is None
    read = read_session(True)
    assert [m.text for m in read.messages if m.role == "user"] == ["now rotate the logs"]
    assert read.zone is not None and read.zone.offset == timedelta(hours=8)
    assert human_zone(read.messages, None, read.zone).source == "transcript"


# -- OpenClaw's time lines: the user's configured zone, by name ---------------------------------


def _status_result(key: str, parent: str, text: str, at: datetime) -> str:
    line = json.loads(_openclaw_line(key, parent, "toolResult", text, at))
    line["message"].update(toolCallId="session_status_1", toolName="session_status")
    return json.dumps(line)


STATUS_OLD = (
    "🦞 OpenClaw 2026.2.17\n🕒 Time: Tuesday, March 10th, 2026 — 1:00 PM (Europe/Vienna)\n"
    "🧠 Model: some/model"
)
STATUS_NEW = (
    "🦞 OpenClaw 2026.9.6\n\nCurrent time: Tuesday, March 10th, 2026 - 8:00 AM "
    "(America/New_York)\nReference UTC: 2026-03-10 12:00 UTC\n\n⏱️ Uptime: 2h"
)
HEARTBEAT = (
    "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly.\n"
    "Current time: Tuesday, March 10th, 2026 — 20:00 (Asia/Shanghai)"
)


@pytest.mark.parametrize(
    ("text", "offset", "name"),
    [
        (STATUS_OLD, timedelta(hours=1), "CET"),
        (STATUS_NEW, timedelta(hours=-4), "EDT"),
        (HEARTBEAT, timedelta(hours=8), "CST"),
        ("🦞 OpenClaw 2026.1.24\n🕒 Time zone: UTC", timedelta(0), "UTC"),
        # a cron turn of 2026.3.13 to 2026.5.6, with the UTC time after the zone
        (
            "[cron:1 nightly] run the report\nCurrent time: Tuesday, March 10th, 2026 — 14:00 "
            "(Africa/Cairo) / 2026-03-10 12:00 UTC",
            timedelta(hours=2),
            "EET",
        ),
        # a zone OpenClaw accepts that the database lacks, read from its name
        ("Current time: Tuesday, March 10th, 2026 — 20:00 (GMT+8)", timedelta(hours=8), "GMT+8"),
    ],
)
def test_an_openclaw_time_line_names_the_users_zone(
    text: str, offset: timedelta, name: str
) -> None:
    from assembler.hosts.openclaw.time_line import time_line_zone

    zone = time_line_zone(text, NOW)
    assert zone is not None and (zone.offset, zone.name) == (offset, name)


@pytest.mark.parametrize(
    "text",
    [
        "the human wrote Current time: now (Europe/Vienna) in a sentence",
        "Current time: Tuesday, March 10th, 2026 — 20:00 (../../etc/passwd)",
        "Current time: Tuesday, March 10th, 2026 — 20:00 (Not/A_Zone)",
        "🦞 OpenClaw 2026.4.1\n🧠 Model: some/model",
    ],
)
def test_text_without_a_readable_time_line_names_no_zone(text: str) -> None:
    from assembler.hosts.openclaw.time_line import time_line_zone

    assert time_line_zone(text, NOW) is None


def _session(tmp_path: Path, *lines: str) -> Path:
    head = json.dumps(
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-10T00:00Z"}
    )
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join([head, *lines]) + "\n", encoding="utf-8")
    return path


def _read(path: Path, lookback: timedelta | None = None) -> TranscriptRead:
    return read_recent(
        [str(path)],
        base=path.parent,
        now=NOW,
        max_messages=50,
        lookback=lookback,
        zone_scan=True,
        hosts=HOSTS,
    )


def test_a_session_status_result_in_the_window_gives_the_zone(tmp_path: Path) -> None:
    path = _session(
        tmp_path,
        _openclaw_line("a", None, "user", "what time is it for me?", NOW - timedelta(minutes=5)),
        _status_result("b", "a", STATUS_OLD, NOW - timedelta(minutes=4)),
        _openclaw_line("c", "b", "assistant", "It is 1 PM in Vienna.", NOW - timedelta(minutes=3)),
    )
    read = _read(path)
    assert read.zone is not None and read.zone.offset == timedelta(hours=1)
    assert human_zone(read.messages, None, read.zone).source == "transcript"


def test_a_session_status_result_hours_before_the_window_gives_the_zone(tmp_path: Path) -> None:
    early = NOW - timedelta(hours=9)
    path = _session(
        tmp_path,
        _openclaw_line("a", None, "user", "status please", early),
        _status_result("b", "a", STATUS_NEW, early),
        _openclaw_line("c", "b", "assistant", "All fine.", early),
        _openclaw_line("d", "c", "user", "now rotate the logs", NOW - timedelta(minutes=3)),
        _openclaw_line("e", "d", "assistant", "Rotated.", NOW - timedelta(minutes=2)),
    )
    read = _read(path, lookback=timedelta(hours=6))
    assert [m.text for m in read.messages if m.role == "user"] == ["now rotate the logs"]
    assert read.zone is not None and read.zone.offset == timedelta(hours=-4)


def test_a_heartbeats_time_line_wins_over_its_envelope_in_the_gateways_zone(
    tmp_path: Path,
) -> None:
    at = NOW - timedelta(minutes=10)
    prompt = f"[{at:%a %Y-%m-%d %H:%M} UTC] {HEARTBEAT}"
    path = _session(
        tmp_path,
        _openclaw_line("a", None, "user", prompt, at),
        _openclaw_line("b", "a", "assistant", "HEARTBEAT_OK", at),
    )
    read = _read(path)
    assert read.messages == [] or all(m.role != "user" for m in read.messages)
    assert read.zone is not None and read.zone.offset == timedelta(hours=8)


# -- which source wins -------------------------------------------------------------------------


def test_a_utc_stamp_gives_way_to_the_configured_zone_and_to_the_learned_one() -> None:
    utc = [msg("deploy it", 0, "UTC")]
    learned = LearnedZone(timedelta(hours=-5), "EST", NOW - timedelta(days=1))

    assert human_zone(utc, "Europe/Lisbon").source == "config"
    assert human_zone(utc, None, learned=learned).source == "learned"
    assert human_zone(utc, None).source == "transcript"  # nothing says otherwise


def test_a_stamp_in_another_zone_wins_over_the_config_and_the_learned_zone() -> None:
    learned = LearnedZone(timedelta(hours=-5), "EST", NOW - timedelta(days=1))
    human = human_zone([msg("deploy it", 9, "JST")], "Europe/Lisbon", learned=learned)
    assert human.source == "transcript"
    assert NOW.astimezone(human.zone).strftime("%H %Z") == "21 JST"


def test_a_host_stamp_in_utc_gives_way_to_the_learned_zone() -> None:
    host = ZoneSeen(NOW, timedelta(0), "UTC")
    learned = LearnedZone(timedelta(hours=2), None, NOW)
    assert human_zone([msg("hi")], None, host, learned).source == "learned"


# -- the learned zone in the state folder --------------------------------------------------------


def test_the_learned_zone_is_kept_and_read_back(tmp_path: Path) -> None:
    zone = LearnedZone(timedelta(hours=5, minutes=30), "IST", NOW)

    assert remember_zone(tmp_path, zone) is True
    assert read_learned_zone(tmp_path) == zone


def test_the_same_zone_is_not_written_again(tmp_path: Path) -> None:
    remember_zone(tmp_path, LearnedZone(timedelta(hours=1), "CET", NOW))
    before = os.stat(tmp_path / ZONE_NAME)

    again = remember_zone(tmp_path, LearnedZone(timedelta(hours=1), "CET", NOW + timedelta(1)))

    assert again is False
    assert os.stat(tmp_path / ZONE_NAME).st_ino == before.st_ino
    moved = remember_zone(tmp_path, LearnedZone(timedelta(hours=2), "CEST", NOW))
    assert moved is True and read_learned_zone(tmp_path).offset == timedelta(hours=2)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "record",
    [
        {"version": 1, "offset_minutes": 17, "name": None, "seen": "2026-03-10T00:00:00+00:00"},
        {
            "version": 1,
            "offset_minutes": 15 * 60,
            "name": None,
            "seen": "2026-03-10T00:00:00+00:00",
        },
        {
            "version": 1,
            "offset_minutes": 60,
            "name": "x\nIgnore previous",
            "seen": "2026-03-10T00:00:00+00:00",
        },
        {"version": 1, "offset_minutes": 60, "name": None, "seen": "2026-03-10T00:00:00"},
        {"version": 1, "offset_minutes": True, "name": None, "seen": "2026-03-10T00:00:00+00:00"},
        {"version": 2, "offset_minutes": 60, "name": None, "seen": "2026-03-10T00:00:00+00:00"},
        [1, 2, 3],
    ],
)
def test_a_forged_or_foreign_record_is_no_zone(tmp_path: Path, record: object) -> None:
    (tmp_path / ZONE_NAME).write_text(json.dumps(record), encoding="utf-8")
    assert read_learned_zone(tmp_path) is None


def test_a_record_that_is_a_link_or_not_json_is_no_zone(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(
        json.dumps({"version": 1, "offset_minutes": 60, "name": None, "seen": NOW.isoformat()}),
        encoding="utf-8",
    )
    state = tmp_path / "state"
    state.mkdir()
    (state / ZONE_NAME).symlink_to(elsewhere)
    assert read_learned_zone(state) is None
    (state / ZONE_NAME).unlink()
    (state / ZONE_NAME).write_text("{not json", encoding="utf-8")
    assert read_learned_zone(state) is None
    assert read_learned_zone(None) is None
