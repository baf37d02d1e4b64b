from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assembler.clock import format_duration
from assembler.context import active as context
from assembler.context.active import active_context, extract_topics
from assembler.context.daily import daily_context
from assembler.context.daytime import human_zone, time_context
from assembler.hosts.registry import HOSTS
from assembler.transcripts.hosts import names_project
from assembler.transcripts.message import Message, Summary

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SYDNEY = ZoneInfo("Australia/Sydney")


def msg(text: str, minutes_ago: float, role: str = "user", cwd: str | None = None) -> Message:
    return Message(
        role=role,  # type: ignore[arg-type]
        text=text,
        timestamp=NOW - timedelta(minutes=minutes_ago),
        source="t.jsonl",
        session_id="s1",
        cwd=cwd,
    )


def test_topics_favour_recurring_phrases_over_stopwords() -> None:
    topics = extract_topics(
        [
            "the helm deploy of the api keeps failing",
            "why is the helm deploy failing again?",
            "and what about lunch",
        ]
    )
    assert topics[0].phrase == "helm deploy"
    assert all(t.phrase.lower() not in ("the", "what", "about") for t in topics)


def test_code_blocks_do_not_become_topics() -> None:
    topics = extract_topics(["look at this ```kubectl get pods --namespace prod``` postgres lock"])
    assert "kubectl" not in " ".join(t.phrase for t in topics)
    assert topics[0].phrase == "postgres lock"


def test_working_on_is_the_humans_sentence_with_the_project_and_keyword_topics_stay() -> None:
    messages = [
        msg("the helm deploy keeps failing with ImagePullBackOff", 50, cwd="/home/ray/src/api"),
        msg("checking the image tag in the helm chart", 49, "assistant"),
        msg("helm deploy still failing after the image tag fix", 30),
        msg("The helm chart still pins the old image tag in values-prod.", 29, "assistant"),
    ]
    active = active_context(messages, [], now=NOW, half_life=timedelta(minutes=20))
    assert active.working_on == "helm deploy still failing after the image tag fix (in api)"
    assert any("helm" in t.phrase for t in active.topics)  # the key phrases, for --explain
    # No pause of 45 minutes: the stretch began with the first message.
    assert active.session_start == NOW - timedelta(minutes=50)


def test_a_sign_off_after_the_task_is_neither_working_on_nor_last_topic() -> None:
    messages = [
        msg("the helm deploy of the api keeps failing on the migration job", 50),
        msg("The migration job waits on a lock held by an idle psql session.", 49, "assistant"),
        msg("kill the idle session and rerun the helm deploy", 40),
        msg("Killed it; the helm deploy finished and the migration job ran.", 39, "assistant"),
        msg("api deploy is through, migration job done, all green", 30),
        msg("Great, everything is healthy.", 29, "assistant"),
        msg("long day, I'm fried", 5),
        msg("Rest well.", 4, "assistant"),
    ]
    active = active_context(messages, [], now=NOW, half_life=timedelta(minutes=20))
    assert active.working_on == "api deploy is through, migration job done, all green"
    assert active.last_topic is None


def test_a_newer_topic_is_the_last_topic_unless_working_on_says_it() -> None:
    messages = [
        msg("the helm deploy of the api keeps failing on the migration job", 50),
        msg("The migration job waits on a lock held by an idle psql session.", 49, "assistant"),
        msg("kill the idle session and rerun the helm deploy", 40),
        msg("Killed it; the helm deploy finished.", 39, "assistant"),
    ]
    active = active_context(messages, [], now=NOW, half_life=timedelta(minutes=20))
    assert active.working_on == "kill the idle session and rerun the helm deploy"
    assert active.last_topic is None  # the same sentence: said once


def test_a_reported_problem_beats_the_hosts_summary_which_stands_in_without_a_request() -> None:
    summary = Summary(
        "## Goal\nGet the api deploy green\n\n## Progress\n- found the bad tag",
        NOW - timedelta(minutes=2),
    )
    messages = [msg("the api deploy failed on the image tag again", 10), msg("hm", 1)]
    active = active_context(messages, [summary], now=NOW, half_life=timedelta(minutes=20))
    assert active.working_on == "the api deploy failed on the image tag again"
    active = active_context(messages[1:], [summary], now=NOW, half_life=timedelta(minutes=20))
    assert active.working_on == "Get the api deploy green"


def test_session_gap_is_the_pause_before_the_current_stretch() -> None:
    messages = [msg("a", 300), msg("b", 290), msg("c", 20), msg("d", 5)]
    active = active_context(messages, [], now=NOW, half_life=timedelta(minutes=20))
    assert active.session_gap == timedelta(minutes=270)
    assert active.session_start == NOW - timedelta(minutes=20)  # "c", after the pause
    assert active.gap_note.startswith("medium")
    continuous = active_context(messages[2:], [], now=NOW, half_life=timedelta(minutes=20))
    assert continuous.session_gap is None
    assert continuous.session_start == NOW - timedelta(minutes=20)
    idle = active_context([msg("a", 60 * 30)], [], now=NOW, half_life=timedelta(minutes=20))
    assert idle.session_gap == timedelta(hours=30)
    assert idle.gap_note.startswith("long")


def test_no_messages_gives_an_empty_context() -> None:
    active = active_context([], [], now=NOW, half_life=timedelta(minutes=20))
    assert active.working_on is None and active.last_topic is None
    assert active.gap_note == "no messages in the window"


def test_daily_context_of_a_day_without_a_note_is_empty(tmp_path: Path) -> None:
    daily = daily_context(tmp_path, "memory", NOW, tail_bytes=100)
    assert daily.lines == [] and not daily.truncated


@pytest.mark.parametrize(
    ("utc_hour", "part", "late"),
    [
        (12, "late night", True),
        (20, "morning", False),
        (2, "afternoon", False),
        (8, "evening", False),
        (23, "late morning", False),
    ],
)
def test_time_context_in_the_configured_zone(utc_hour: int, part: str, late: bool) -> None:
    # Sydney is UTC+11 in March: 12:00 UTC is 23:00 there.
    now = datetime(2026, 3, 2, utc_hour, 0, tzinfo=UTC)
    times = time_context(now, SYDNEY, late_night_start=23, late_night_end=7, morning_end=10)
    assert times.part_of_day == part
    assert times.late_night is late
    assert times.local.utcoffset() == timedelta(hours=11)
    if late:
        assert "deferr" in times.note


def test_the_late_hours_advice_is_not_said_again_beside_the_tired_strategy() -> None:
    from assembler.assembly.sections import time_section
    from assembler.mood.strategy import Strategy

    late = time_context(
        datetime(2026, 3, 2, 12, 25, tzinfo=UTC),
        SYDNEY,
        late_night_start=23,
        late_night_end=7,
        morning_end=10,
    )

    def line(strategy: Strategy | None) -> str:
        return time_section(late, strategy).items[0].text

    def fired(mood: str, *, no_signal: bool = False) -> Strategy:
        note = "Offer to pick this up later." if mood == "tired" else ""
        return Strategy(mood, "brief", "gentle", "minimal", False, note, "", no_signal)

    assert line(None).endswith("late night: suggest deferring non-urgent work")
    assert line(fired("frustrated")).endswith("late night: suggest deferring non-urgent work")
    assert line(fired("tired", no_signal=True)).endswith("non-urgent work")
    assert line(fired("tired")) == "23:25 AEDT, Mon 02 Mar, late night"


def test_late_night_window_that_does_not_wrap_midnight() -> None:
    times = time_context(NOW, UTC, late_night_start=1, late_night_end=5, morning_end=10)
    assert not times.late_night
    early = time_context(
        NOW.replace(hour=3), UTC, late_night_start=1, late_night_end=5, morning_end=10
    )
    assert early.late_night


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(minutes=5), "5m"),
        (timedelta(hours=2), "2h"),
        (timedelta(minutes=130), "2h 10m"),
        (timedelta(days=3, hours=4), "3d 4h"),
        (timedelta(days=2), "2d"),
    ],
)
def test_durations_are_formatted_compactly(delta: timedelta, text: str) -> None:
    assert format_duration(delta) == text


def test_the_agents_own_workspace_is_not_named_as_the_project() -> None:
    messages = [
        msg("deploy the api", 3, cwd="/home/ray/.openclaw/workspace"),
        msg("deploy the api now", 2, cwd="/home/ray/.openclaw/workspace"),
        msg("fix the api chart", 1, cwd="/srv/agent"),
    ]
    active = active_context(
        messages,
        [],
        now=NOW,
        half_life=timedelta(minutes=20),
        workspace=Path("/srv/agent"),
        names_project=partial(names_project, HOSTS),
    )
    assert active.working_on is not None and "(in " not in active.working_on


# --- long windows and extreme timestamps ----------------------------------------------------------


def log_paste(seed: int, chars: int = 10_000) -> str:
    """A pasted log of distinct tokens (request ids, pods, latencies), as readers keep it."""
    rng = random.Random(seed)
    lines = []
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(
            f"gateway-{rng.randrange(16**5):05x} request {rng.randrange(16**8):08x} upstream "
            f"payments-{rng.randrange(99)} latency {rng.randrange(10**5)}ms status timeout"
        )
    return "\n".join(lines)


def test_topics_asked_for_the_best_few_are_the_first_of_all_topics() -> None:
    texts = [log_paste(1, 2000), "the helm deploy keeps failing", "helm deploy again", "lunch?"]
    weights = [0.2, 0.5, 0.8, 1.0]
    everything = extract_topics(texts, weights)
    assert extract_topics(texts, weights, limit=5) == everything[:5]
    assert extract_topics(texts, weights, limit=1) == everything[:1]


def test_a_window_of_long_pastes_builds_only_the_topics_it_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []

    class CountedTopic(context.Topic):
        def __init__(self, phrase: str, score: float) -> None:
            built.append(phrase)
            super().__init__(phrase, score)

    monkeypatch.setattr(context, "Topic", CountedTopic)
    messages = [msg(f"deploy log {i}:\n{log_paste(i)}", 10 - i) for i in range(4)]

    active = active_context(messages, [], now=NOW, half_life=timedelta(minutes=20))

    # Each topic listed is compared with every later candidate phrase (tens of thousands in
    # a pasted log): the main five and the last topic are all that may be built.
    assert len(active.topics) == 5 and active.working_on is not None
    assert len(built) <= 6


FAR_FUTURE = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
YEAR_ONE = datetime.min.replace(tzinfo=UTC)


def test_the_most_extreme_timestamps_give_a_context_without_error() -> None:
    messages = [
        Message("user", "deploy the year one build", YEAR_ONE, "t.jsonl"),
        Message("user", "deploy the epoch build", datetime(1970, 1, 1, tzinfo=UTC), "t.jsonl"),
        Message("user", "deploy the future build", FAR_FUTURE, "t.jsonl"),
    ]
    for now in (NOW, FAR_FUTURE, YEAR_ONE):
        active = active_context(messages, [], now=now, half_life=timedelta(minutes=20))
        assert active.session_start == FAR_FUTURE  # the years between are pauses
        assert active.working_on is not None and "deploy" in active.working_on
        format_duration(now - FAR_FUTURE)
        format_duration(now - YEAR_ONE)
        if active.session_gap is not None:
            format_duration(active.session_gap)


@pytest.mark.parametrize(
    "delta", [timedelta(minutes=-1), timedelta(days=-3), NOW - FAR_FUTURE, timedelta.min]
)
def test_a_negative_duration_reads_as_now(delta: timedelta) -> None:
    assert format_duration(delta) == "0m"


def test_the_longest_duration_is_formatted_in_days() -> None:
    assert format_duration(timedelta.max) == "999999999d 23h"
    assert format_duration(FAR_FUTURE - YEAR_ONE).endswith("d 23h")


def zoned(text: str, minutes: float, offset_hours: float | None, zone: str | None) -> Message:
    offset = timedelta(hours=offset_hours) if offset_hours is not None else None
    return replace(msg(text, minutes), utc_offset=offset, zone=zone)


def test_the_humans_zone_is_the_newest_stamp_in_the_transcript() -> None:
    messages = [zoned("morning", 30, 1, "CET"), zoned("later", 5, -7, "PDT"), msg("no stamp", 1)]

    human = human_zone(messages, "Australia/Sydney")

    assert human.source == "transcript"
    assert NOW.astimezone(human.zone).strftime("%H:%M %Z") == "05:00 PDT"


def test_without_a_stamp_the_configured_zone_is_the_humans_and_else_a_guess() -> None:
    assert human_zone([msg("hi", 1)], "Europe/Berlin").source == "config"
    guess = human_zone([msg("hi", 1)], None)
    assert guess.source == "machine" and not guess.known


def test_a_guessed_zone_gives_the_time_but_no_part_of_day_or_advice() -> None:
    times = time_context(
        NOW, UTC, known=False, late_night_start=23, late_night_end=5, morning_end=11
    )

    assert (times.part_of_day, times.note, times.late_night, times.known) == ("", "", False, False)
    assert times.local == NOW


@pytest.mark.parametrize(
    ("cwd", "project"),
    [
        (r"C:\Users\ray\code\billing", "billing"),  # a Windows path names its last folder
        (r"C:\Users\downl\.openclaw\workspace", None),  # OpenClaw's workspace names no project
        ("/home/u/.openclaw-dev/workspace-xulinyi", None),  # nor an agent's, in any state folder
        ("/home/u/.clawdbot/workspace", None),
        ("/home/u/code/api", "api"),
    ],
)
def test_the_project_is_the_sessions_folder_unless_it_is_a_hosts_own(
    cwd: str, project: str | None
) -> None:
    active = active_context(
        [msg("rotate the api keys on staging", 1, cwd=cwd)],
        [],
        now=NOW,
        half_life=timedelta(minutes=30),
        names_project=partial(names_project, HOSTS),
    )
    aside = f" (in {project})" if project else ""
    assert active.working_on == f"rotate the api keys on staging{aside}"
