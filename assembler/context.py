"""What the session is about and when it is: active context, today's daily note, time of day."""

from __future__ import annotations

import itertools
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path, PurePosixPath

from assembler.errors import UnsafePathError
from assembler.fsutil import allowed_root, resolves_within
from assembler.transcripts import Message

# Words that carry no topic. Short on purpose: technical words (deploy, error, api) must stay.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd
    you'll you're you've your yours yourself yourselves ok okay yes yeah yep nope hey hi hello
    thanks thank please just really still now again maybe actually think know want need get got
    going go let like make see look one two thing things way well right sure good great lot bit
    also something anything everything nothing time today tonight tomorrow yesterday will shall
    may might must can could would should did done do does try tried use used using work working
    keeps keep kept said say says tell told give gave show shows night morning evening bye
    cheers thx lol cool nice fine sorry else wait till until anyway unrelated bad
    """.split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]")
_PHRASE_BREAK = re.compile(r"[.,;:!?()\[\]{}\"`<>|\n]+|\s[-–—]\s")
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_TOPICS = 5  # the main topics listed


@dataclass
class Topic:
    phrase: str
    score: float


@dataclass
class ActiveContext:
    """What the session is about, from the recent messages."""

    working_on: str | None
    last_topic: str | None
    topics: list[Topic]
    last_message_at: datetime | None
    session_gap: timedelta | None  # the pause before the current stretch of activity
    gap_note: str
    messages_read: int
    human_messages: int
    sessions: int
    explain: list[str] = field(default_factory=list)


def extract_topics(
    texts: Sequence[str], weights: Sequence[float] | None = None, *, limit: int | None = None
) -> list[Topic]:
    """Given texts (and a weight for each), return their key phrases, best first: the best
    `limit` of them, or all when `limit` is None.

    Candidates are the runs of content words between stopwords and punctuation (the RAKE idea)
    and every shorter phrase inside a run, so "helm deploy" said twice beats "helm deploy
    failing" said once. A phrase scores its weighted count times the square root of its
    length; a phrase inside a better one, or containing one, is not listed again.
    Each text is read whole: pass `Message.text`, which holds the head and tail of a long
    message. The phrases cost their number times the topics listed, so ask for few.
    """
    weights = weights if weights is not None else [1.0] * len(texts)
    phrase_weight: dict[str, float] = {}
    surface: dict[str, str] = {}
    for text, weight in zip(texts, weights, strict=True):
        seen: set[str] = set()  # a phrase repeated inside one message counts once
        for run in _content_runs(_CODE_BLOCK.sub(" ", text)):
            for size in range(1, min(3, len(run)) + 1):
                for start in range(len(run) - size + 1):
                    words = run[start : start + size]
                    key = " ".join(w.lower() for w in words)
                    if key not in seen:
                        seen.add(key)
                        phrase_weight[key] = phrase_weight.get(key, 0.0) + weight
                        surface.setdefault(key, " ".join(words))
    ranked = sorted(
        phrase_weight.items(), key=lambda kv: (-kv[1] * math.sqrt(len(kv[0].split())), kv[0])
    )
    topics: list[Topic] = []
    for key, weight in ranked:
        if limit is not None and len(topics) >= limit:
            break  # a pasted log has tens of thousands of phrases: compare only with the best
        padded = f" {key} "
        if any(
            padded in f" {t.phrase.lower()} " or f" {t.phrase.lower()} " in padded for t in topics
        ):
            continue
        topics.append(Topic(surface[key], round(weight * math.sqrt(len(key.split())), 3)))
    return topics


def content_words(text: str) -> list[str]:
    """Given a text, return its content words (no stopwords, no code blocks), in order."""
    return [word for run in _content_runs(_CODE_BLOCK.sub(" ", text)) for word in run]


def _content_runs(text: str) -> list[list[str]]:
    """Return the runs of content words of a text (stopwords and punctuation split runs)."""
    runs: list[list[str]] = []
    for chunk in _PHRASE_BREAK.split(text):
        run: list[str] = []
        for token in [*_WORD.findall(chunk), ""]:
            lowered = token.lower()
            if token and lowered not in STOPWORDS and len(lowered) > 2:
                run.append(token)
            elif run:
                runs.append(run)
                run = []
    return runs


def active_context(
    messages: Sequence[Message],
    summaries: Sequence[str],
    *,
    now: datetime,
    half_life: timedelta,
    workspace: Path | None = None,
    gap_threshold: timedelta = timedelta(minutes=45),
) -> ActiveContext:
    """Given the recent messages (oldest first) and compaction summaries, return what the
    session is about: the main topics, the last topic, and the pause before the current
    stretch of activity.
    """
    texts = [m.text for m in messages]
    weights = [_recency(m.timestamp, now, half_life) for m in messages]
    topics = extract_topics(texts, weights, limit=_TOPICS)
    humans = [m for m in messages if m.role == "user"]
    # The last topic is what the human said last; the two messages before only break ties.
    recent = humans[-3:]
    last_topics = extract_topics(
        [m.text for m in recent],
        [0.1 ** (len(recent) - 1 - i) for i in range(len(recent))],
        limit=1,
    )
    working_on = _goal_from_summaries(summaries) or (
        ", ".join(t.phrase for t in topics[:3]) if topics else None
    )
    project = _project_name(messages, workspace)
    if working_on and project:
        working_on = f"{working_on} (in {project})"
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    gap, gap_note = _session_gap(stamps, now, gap_threshold)
    explain = [f"topic {t.phrase!r} scored {t.score}" for t in topics]
    if summaries:
        explain.append(f"{len(summaries)} compaction summary(ies) read for the goal")
    return ActiveContext(
        working_on=working_on,
        last_topic=last_topics[0].phrase if last_topics else None,
        topics=topics,
        last_message_at=max(stamps) if stamps else None,
        session_gap=gap,
        gap_note=gap_note,
        messages_read=len(messages),
        human_messages=len(humans),
        sessions=len({m.session_id or m.source for m in messages}),
        explain=explain,
    )


def _recency(at: datetime | None, now: datetime, half_life: timedelta) -> float:
    if at is None:
        return 1.0
    age = max((now - at).total_seconds(), 0.0)
    return float(0.5 ** (age / max(half_life.total_seconds(), 1.0)))


def _goal_from_summaries(summaries: Sequence[str]) -> str | None:
    """Return the first line under a '## Goal' heading of the newest summary, if any."""
    for summary in reversed(summaries):
        match = re.search(r"^#+\s*Goal\s*\n+\s*(?:[-*]\s*)?(.+)$", summary, re.M | re.I)
        if match and match.group(1).strip() not in ("...", ""):
            return match.group(1).strip()[:120]
    return None


def _project_name(messages: Sequence[Message], workspace: Path | None) -> str | None:
    """Return the folder most of the messages were in, unless it is the agent's own workspace
    (OpenClaw records its workspace as the cwd of every session: that names no project).
    """
    own = {str(workspace)} if workspace is not None else set()
    cwds = Counter(
        m.cwd for m in messages if m.cwd and m.cwd not in own and "/.openclaw/" not in m.cwd
    )
    if not cwds:
        return None
    return PurePosixPath(cwds.most_common(1)[0][0]).name or None


def _session_gap(
    stamps: Sequence[datetime], now: datetime, threshold: timedelta
) -> tuple[timedelta | None, str]:
    """Return the pause before the current stretch of activity and a note on what it means."""
    if not stamps:
        return None, "no messages in the window"
    ordered = sorted(stamps)
    since_last = now - ordered[-1]
    gap: timedelta | None = since_last
    if since_last < threshold:
        # The last pause longer than the threshold inside the window marks where this stretch
        # of work began; without one, the whole window is one stretch.
        pauses = [b - a for a, b in itertools.pairwise(ordered) if b - a >= threshold]
        gap = pauses[-1] if pauses else None
    if gap is None:
        return None, "continuous session, no break in the window"
    if gap < timedelta(hours=4):
        note = "short, no context resurrection needed"
    elif gap < timedelta(days=1):
        note = "medium, recap where things stood before diving in"
    else:
        note = "long, resurrect context before continuing"
    return gap, note


def format_duration(delta: timedelta) -> str:
    """Given a duration, return it compactly: '45m', '2h 10m', '3d 4h'.

    A negative duration (a message stamped ahead of our clock) is '0m', as a future time
    counts as now everywhere else.
    """
    minutes = max(delta // timedelta(minutes=1), 0)  # exact: a float loses minutes past years
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m"


@dataclass
class DailyContext:
    """The tail of today's daily note."""

    path: Path
    lines: list[str]  # the non-blank lines shown
    truncated: bool  # the note is longer than the tail shown
    start_line: int = 1  # the 1-based line number where the tail starts in the note


def daily_context(workspace: Path, folder: str, today: datetime, tail_bytes: int) -> DailyContext:
    """Given the workspace, the daily-notes folder and the local date, return the tail of
    today's note (`<folder>/YYYY-MM-DD.md`): its last `tail_bytes` bytes, cut at a line start.

    A missing note gives no lines. Raise OSError if the note exists but cannot be read, and
    UnsafePathError if it is a link out of the folder its setting points into.
    """

    path = workspace / folder / f"{today:%Y-%m-%d}.md"
    if not path.is_file():
        return DailyContext(path, [], False)
    root = allowed_root(folder, workspace)
    if not resolves_within(path, root):
        raise UnsafePathError(
            f"{path} is a link to {os.path.realpath(path)}, outside {root}; not shown"
        )
    data = path.read_bytes()  # daily notes are small; the line count needs the head too
    start = max(len(data) - tail_bytes, 0)
    if start > 0:
        # Begin at the first whole line of the tail.
        newline = data.find(b"\n", start - 1)
        start = len(data) if newline < 0 else newline + 1
    lines = data[start:].decode("utf-8", errors="replace").splitlines()
    return DailyContext(
        path,
        [line for line in lines if line.strip()],
        truncated=start > 0,
        start_line=data.count(b"\n", 0, start) + 1,
    )


@dataclass
class TimeContext:
    local: datetime
    part_of_day: str
    late_night: bool
    note: str


def time_context(
    now: datetime, tz: tzinfo, *, late_night_start: int, late_night_end: int, morning_end: int
) -> TimeContext:
    """Given the clock, the time zone and the hour bounds, return the local time, the part of
    the day and the note for the agent (late night: suggest deferral).
    """
    local = now.astimezone(tz)
    hour = local.hour
    if late_night_start <= late_night_end:
        late = late_night_start <= hour < late_night_end
    else:
        late = hour >= late_night_start or hour < late_night_end
    if late:
        part, note = "late night", "Late night: suggest deferring non-urgent work"
    elif hour < morning_end:
        part, note = "morning", "Morning: fresh start, good for complex work"
    elif hour < 17:
        part, note = "afternoon" if hour >= 12 else "late morning", "Active hours"
    else:
        part, note = "evening", "Evening: keep it focused, wind down long tasks"
    return TimeContext(local=local, part_of_day=part, late_night=late, note=note)
