"""What the session is about: the human's current task, the last topic, the project, the
topics of the window and the gap since the session before."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath, PureWindowsPath

from assembler.context.task import current_task
from assembler.transcripts.message import Message, Summary
from assembler.words import CODE_BLOCK, content_runs, content_words

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
    session_gap: timedelta | None  # the pause before the current stretch of activity
    gap_note: str
    # When the current stretch of activity began: the first message after the last pause of
    # the gap threshold or more (None without a timed message).
    session_start: datetime | None = None
    explain: list[str] = field(default_factory=list)
    finished: bool = False  # the human said the task is done, or signed off after it
    # The agent's question Working on answers, when it is a short answer ("yes", "2").
    answering: str | None = None


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
        for run in content_runs(CODE_BLOCK.sub(" ", text)):
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


def active_context(
    messages: Sequence[Message],
    summaries: Sequence[Summary],
    *,
    now: datetime,
    half_life: timedelta,
    workspace: Path | None = None,
    names_project: Callable[[str], bool] = lambda cwd: True,
    gap_threshold: timedelta = timedelta(minutes=45),
) -> ActiveContext:
    """Given the recent messages (oldest first) and the hosts' summaries (oldest first), return
    what the session is about: the sentence that says the current task (see
    `assembler.context.task`), the subject of the newest topic when it is another, the main key
    phrases, and the pause before the current stretch of activity. A working folder the
    messages were in names the project unless `names_project` says it does not (the hosts'
    own folders: `assembler.transcripts.hosts.names_project`).

    """
    texts = [m.text for m in messages]
    weights = [_recency(m.timestamp, now, half_life) for m in messages]
    topics = extract_topics(texts, weights, limit=_TOPICS)
    explain: list[str] = []
    task = current_task(messages, summaries)
    working_on = task.working_on
    project = _project_name(messages, workspace, names_project)
    if working_on and project:
        working_on = f"{working_on} (in {project})"
    last_topic = _subject(task.last_sentence, task.working_on)
    stamps = sorted(m.timestamp for m in messages if m.timestamp is not None)
    gap, gap_note = _session_gap(stamps, now, gap_threshold)
    pause = _last_pause(stamps, gap_threshold)
    explain += task.explain
    explain += [f"topic {t.phrase!r} scored {t.score}" for t in topics]
    if summaries:
        explain.append(f"{len(summaries)} host summary(ies) or title(s) read")
    return ActiveContext(
        working_on=working_on,
        last_topic=last_topic,
        topics=topics,
        session_gap=gap,
        gap_note=gap_note,
        session_start=pause[1] if pause else (stamps[0] if stamps else None),
        explain=explain,
        finished=task.finished,
        answering=task.answering,
    )


def _subject(sentence: str | None, working_on: str | None) -> str | None:
    """The key phrase of a sentence, unless Working on already says it."""
    if not sentence:
        return None
    found = extract_topics([sentence], limit=1)
    if not found:
        return None
    phrase = found[0].phrase
    said = {w.lower() for w in content_words(working_on or "")}
    if all(w.lower() in said for w in content_words(phrase)):
        return None
    return phrase


def _recency(at: datetime | None, now: datetime, half_life: timedelta) -> float:
    if at is None:
        return 1.0
    age = max((now - at).total_seconds(), 0.0)
    return float(0.5 ** (age / max(half_life.total_seconds(), 1.0)))


def _project_name(
    messages: Sequence[Message], workspace: Path | None, names_project: Callable[[str], bool]
) -> str | None:
    """Return the folder most of the messages were in, unless it is the agent's own workspace
    or a folder that names no project (`names_project`: a host's own).
    """
    own = {str(workspace)} if workspace is not None else set()
    cwds = Counter(m.cwd for m in messages if m.cwd and m.cwd not in own and names_project(m.cwd))
    if not cwds:
        return None
    folder = cwds.most_common(1)[0][0]
    path = PureWindowsPath(folder) if "\\" in folder else PurePosixPath(folder)
    return path.name or None


def _last_pause(
    stamps: Sequence[datetime], threshold: timedelta
) -> tuple[datetime, datetime] | None:
    """Given message times (oldest first), return the last pause of at least `threshold`
    between two of them (its two ends), which marks where the current stretch of activity
    began; None when the whole window is one stretch."""
    pauses = [(a, b) for a, b in itertools.pairwise(stamps) if b - a >= threshold]
    return pauses[-1] if pauses else None


def _session_gap(
    stamps: Sequence[datetime], now: datetime, threshold: timedelta
) -> tuple[timedelta | None, str]:
    """Given message times (oldest first), return the pause before the current stretch of
    activity (the time since the last message, when that is itself a pause) and a note on what
    it means."""
    if not stamps:
        return None, "no messages in the window"
    since_last = now - stamps[-1]
    gap: timedelta | None = since_last
    if since_last < threshold:
        pause = _last_pause(stamps, threshold)
        gap = pause[1] - pause[0] if pause else None
    if gap is None:
        return None, "continuous session, no break in the window"
    if gap < timedelta(hours=4):
        note = "short, no context resurrection needed"
    elif gap < timedelta(days=1):
        note = "medium, recap where things stood before diving in"
    else:
        note = "long, resurrect context before continuing"
    return gap, note
