"""Tests of assembler/transcripts/repeats.py: a text a session repeats three times, its
numbers aside, is a host's or a plugin's prompt, and is left out with its replies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from assembler.hosts.registry import HOSTS
from assembler.transcripts.message import Message
from assembler.transcripts.read import read_recent
from assembler.transcripts.repeats import shape, without_repeats

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
PROMPT = "Check the status board and report anything new since {} (run {})."


def said(role: str, text: str, minutes_ago: int) -> Message:
    return Message(role, text, NOW - timedelta(minutes=minutes_ago), "s.jsonl")  # type: ignore[arg-type]


def test_a_prompt_repeated_with_other_times_is_left_out_with_its_replies() -> None:
    messages = [
        said("user", PROMPT.format("09:00", 41), 180),
        said("assistant", "Nothing new on the board.", 179),
        said("user", "why is the nightly export still failing?", 150),
        said("assistant", "The export times out on the orders table.", 149),
        said("user", PROMPT.format("10:00", 42), 120),
        said("assistant", "Two new cards.", 119),
        said("user", PROMPT.format("11:00", 43), 60),
        said("assistant", "Nothing new.", 59),
    ]

    kept = without_repeats(messages)

    assert [m.text for m in kept] == [
        "why is the nightly export still failing?",
        "The export times out on the orders table.",
    ]


def test_twice_is_not_enough_and_short_texts_are_what_people_repeat() -> None:
    twice = [said("user", PROMPT.format("09:00", 1), 9), said("user", PROMPT.format("10:00", 2), 8)]
    assert without_repeats(twice) == twice
    short = [said("user", "yes, go on", minutes) for minutes in (9, 7, 5, 3)]
    assert without_repeats(short) == short


def test_a_shape_folds_numbers_ids_and_spacing_but_not_words() -> None:
    assert shape("Run  42 at 10:00 id 9f8e7d6c5b4a") == shape("run 7 at 11:30 id 0a1b2c3d4e5f")
    assert shape("deploy api to prod") != shape("deploy web to prod")


def test_a_session_of_only_repeated_prompts_has_no_human(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = []
    for run in range(4):
        at = (NOW - timedelta(minutes=50 - 10 * run)).isoformat()
        lines.append({"role": "user", "content": PROMPT.format(run, run), "timestamp": at})
        lines.append({"role": "assistant", "content": "Nothing new.", "timestamp": at})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    read = read_recent(
        [str(path)], base=tmp_path, now=NOW, max_messages=50, lookback=None, hosts=HOSTS
    )

    assert read.messages == []


def test_a_message_sent_again_within_minutes_counts_once() -> None:
    asked = "are you missing anything that was removed before the restore?"
    messages = [
        said("user", asked, 90),
        said("assistant", "Checking.", 89),
        said("user", asked, 5),
        said("user", asked, 4),
        said("user", asked, 3),
    ]
    assert without_repeats(messages) == messages
