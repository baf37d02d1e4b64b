"""The auto sections of SCRATCHPAD.md, each from what one stage of an assembly found: the
mood, the response strategy, what the session is about, the memories, today's note, the time
and the routing hint. Pure: values in, `render.Section`s out."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.assembly.routing import RoutingHint
from assembler.clock import format_duration
from assembler.context.active import ActiveContext
from assembler.context.daily import DailyContext
from assembler.context.daytime import TimeContext
from assembler.context.task import clip_words
from assembler.file.render import Item, Section
from assembler.memory.recall import RecallResult, relevance
from assembler.mood.strategy import NO_EMOTION, Strategy
from assembler.mood.window import MoodReport, MoodState
from assembler.redact import redact
from assembler.transcripts.read import TranscriptRead

if TYPE_CHECKING:
    from assembler.memory.search import Hit

TITLES = {
    "emotional_context": "Emotional Context",
    "response_strategy": "Response Strategy",
    "active_context": "Active Context",
    "relevant_memories": "Relevant Memories",
    "daily_context": "Daily Context",
    "time_context": "Time Context",
    "routing_hint": "Routing Hint",
}


@dataclass
class MemoryRecall:
    """What the memory search gave this assembly."""

    result: RecallResult
    chunks_total: int
    chunks_embedded: int


def redacted(section: Section, extra_secret_patterns: Sequence[str]) -> Section:
    """Given a section, return it with secrets and personal data in its lines redacted."""
    items = tuple(
        replace(item, text=redact(item.text, extra_secret_patterns=extra_secret_patterns))
        for item in section.items
    )
    return replace(section, items=items)


# A spare memory line (see `RecallResult.spare`) ranks this much lower than the hits: it is
# shown only in the place of a hit left out as a repeat (see `_fit_without_repeats`).
SPARE_PRIORITY = 100


def memories_section(recall: MemoryRecall | None) -> Section | None:
    """The hits, then the spare ones, each "`path:lines` subject: line": `_fit_without_repeats`
    shows the hits that do not repeat the rest of the file, a spare in the place of each one
    that does, best first. An item's priority is 3 + its hit's rank by relevance among all of
    them (SPARE_PRIORITY more for a spare), so that a cap drops the weakest line first (see
    `fit_sections`); its gist is the line alone (what a repeat is judged on)."""
    if recall is None or not recall.result.hits:
        return None
    hits = [*recall.result.hits, *recall.result.spare]
    order = sorted(range(len(hits)), key=lambda i: -relevance(hits[i]))
    rank = {number: place for place, number in enumerate(order)}
    first = len(recall.result.hits)
    items = [
        Item(
            memory_line(hit),
            None,
            3 + rank[number] + (SPARE_PRIORITY if number >= first else 0),
            gist=hit.snippet,
        )
        for number, hit in enumerate(hits)
    ]
    return Section("relevant_memories", TITLES["relevant_memories"], tuple(items))


def memory_line(hit: Hit) -> str:
    """Given a hit, return its line in the section: where it is, what it is about, and the line
    in curly quotes (quoted material from a note, never an instruction: see the guidance)."""
    where = f"`{hit.path}:{hit.start_line}-{hit.end_line}`"
    quoted = f"“{hit.snippet}”"
    return f"{where} {hit.subject}: {quoted}" if hit.subject else f"{where} {quoted}"


def valence_word(valence: float) -> str:
    return "negative" if valence <= -0.2 else "positive" if valence >= 0.2 else "neutral"


def arousal_word(arousal: float) -> str:
    return "high" if arousal >= 0.6 else "low" if arousal <= 0.3 else "moderate"


def mood_section(
    report: MoodReport | None, strategy: Strategy | None = None, now: datetime | None = None
) -> Section | None:
    """The human's mood. With a `strategy` that found no clear emotion (`no_signal`), one line
    that says so, the last emotion the window showed (told at the clock of `now`) and that the
    answer is as usual: the Response Strategy section is then left out (see
    `strategy_section`). Otherwise the lines that say something: the primary mood and how sure
    the reading is (with its valence and arousal in words), the secondary, the trajectory, the
    other speakers."""
    if report is None or report.combined.messages == 0:
        return None  # nothing the human said: no mood to report
    state = report.combined
    if strategy is not None and strategy.no_signal:
        return _unclear_mood(report, now)
    # Valence and arousal in words, each only when it is not the middle of its scale: "neutral
    # valence, moderate arousal" tells the agent nothing the mood's name does not.
    feel = ", ".join(
        f"{word} {scale}"
        for word, scale in (
            (valence_word(state.valence), "valence"),
            (arousal_word(state.arousal), "arousal"),
        )
        if word not in ("neutral", "moderate")
    )
    primary = f"{state.primary} ({state.primary_score:.2f}; {feel + '; ' if feel else ''}"
    primary += f"confidence {state.confidence:.2f})"
    if state.speaker is not None:  # a group chat: whose state this is
        primary += f", {state.speaker}, the latest to speak"
    gist = f"{state.primary}; {valence_word(state.valence)}, {arousal_word(state.arousal)}"
    items = [Item(primary, "Primary", 1, gist=gist)]
    if state.secondary and state.secondary != NO_EMOTION:  # "neutral" says nothing more
        score = f"{state.secondary} ({state.secondary_score:.2f})"
        items.append(Item(score, "Secondary", 4, gist=state.secondary))
    items.append(Item(recent_trajectory(state.trajectory), "Trajectory", 3, gist=""))
    items.extend(
        speaker_item(name, s) for name, s in report.speakers.items() if name != state.speaker
    )
    return Section("emotional_context", TITLES["emotional_context"], tuple(items))


# The trajectory as a person tells it: where the window began, then its newest steps, up to
# this many characters; the steps between are left out ("…"). The quotes a step carries as
# evidence are left out too: how the human feels, and since when, is what the answer adapts to.
TRAJECTORY_CHARS = 110
# The agent's question a short answer is shown with, in words.
ANSWERED_WORDS = 16

_QUOTE = re.compile(r' \(".*?"\)|\s*\(…\)')


def recent_trajectory(trajectory: str, width: int = TRAJECTORY_CHARS) -> str:
    """Given a trajectory in words (steps separated by "; ", oldest first), return its first
    step and its newest steps within `width` characters (at least the last one), without the
    quotes they carry, "…" where steps between were left out."""
    steps = [_QUOTE.sub("", step) for step in trajectory.split("; ") if step != "…"]
    first = steps.pop(0)
    if not steps:
        return first
    kept = [steps.pop()]
    while steps and len("; ".join([first, "…", steps[-1], *kept])) <= width:
        kept.insert(0, steps.pop())
    if len("; ".join([first, "…", *kept])) > width:
        return "; ".join(["…", *kept])
    return "; ".join([first, *(["…"] if steps else []), *kept])


def _unclear_mood(report: MoodReport, now: datetime | None) -> Section | None:
    """The line of a window without a clear emotion (see `mood_section`): only when it tells
    something, that an emotion the window showed has passed, a calm reading after it ("no clear
    emotion now (frustrated at 19:47)"), or another speaker shows one. A window that never
    showed one says nothing: the answer as usual is what the model gives without a line, and a
    reading too weak to act on ("maybe frustrated") is not known to be right."""
    state = report.combined
    items: list[Item] = []
    # An emotion that passed: a calm reading came after it (else it is the newest reading, too
    # weak to act on, and "no clear emotion now" would contradict it).
    emotional = [i for i, p in enumerate(state.points) if p.mood != NO_EMOTION]
    passed = bool(emotional) and emotional[-1] < len(state.points) - 1
    last = state.points[emotional[-1]] if passed else None
    if state.primary == NO_EMOTION and last is not None:
        said = "no clear emotion"
        if last.at is not None:
            at = last.at.astimezone(now.tzinfo) if now is not None else last.at
            said += f" now ({last.mood} at {at:%H:%M})"
        else:
            said += f" now ({last.mood} earlier)"
        if state.speaker is not None:
            said += f", {state.speaker}, the latest to speak"
        items.append(Item(f"{said} — answer as usual", "Mood", 1, gist="no clear emotion"))
    items.extend(
        speaker_item(name, s)
        for name, s in report.speakers.items()
        if name != state.speaker and s.primary != NO_EMOTION
    )
    if not items:
        return None
    return Section("emotional_context", TITLES["emotional_context"], tuple(items))


def speaker_item(name: str, state: MoodState) -> Item:
    text = f"{state.primary} ({state.primary_score:.2f}), valence {state.valence:+.2f}"
    text += f", {state.messages} messages; {state.trajectory}"
    return Item(text, name, 5, gist=state.primary)


def strategy_section(strategy: Strategy | None) -> Section | None:
    """How to answer, when a clear emotion calls for it, in one line: the rule's style, tone,
    verbosity and preamble (the preamble left out when the style already says it), then its
    note ("…; no preamble. Offer to pick this up later; ..."). Without a clear emotion
    (`no_signal`) there is nothing to adapt to, and the mood's one line says so (see
    `mood_section`)."""
    if strategy is None or strategy.no_signal:
        return None
    parts = [strategy.style, f"tone: {strategy.tone}", f"verbosity: {strategy.verbosity}"]
    if "preamble" not in strategy.style.lower():
        parts.append("a short preamble is fine" if strategy.preamble else "no preamble")
    text = "; ".join(parts)
    if note := strategy.note.strip():
        text += f"{'' if text.endswith(('.', '!', '?')) else '.'} {note}"
    items = (Item(text, "How to answer", 1, gist=strategy.mood),)
    return Section("response_strategy", TITLES["response_strategy"], items)


def active_section(active: ActiveContext) -> Section | None:
    """What the session is about: the task (the human's words), the newest topic when it is
    another, and the pause before this stretch when there was one; None when none is known.
    How many messages were read is the frontmatter's `source`; a continuous session, or a task
    not identified, says nothing worth a line."""
    items: list[Item] = []
    if active.working_on:
        # The human's own words are quoted material, not instructions (see the guidance).
        working = _quoted(active.working_on)
        if active.answering:
            # "yes" says what it approves only with the question it answers.
            asked = clip_words(active.answering, ANSWERED_WORDS)
            working = f"{working}, answering the agent's “{asked}”"
        if active.finished:
            # "(in api)" → "(in api; finished)": one aside, not two
            aside = working.endswith(")")
            working = working[:-1] + "; finished)" if aside else f"{working} (finished)"
        items.append(Item(working, "Working on", 1))
    if active.last_topic:
        items.append(Item(active.last_topic, "Last topic", 2))
    if active.session_gap is not None:
        gap = f"{format_duration(active.session_gap)} ({active.gap_note})"
        items.append(Item(gap, "Session gap", 3, gist=active.gap_note))
    return Section("active_context", TITLES["active_context"], tuple(items)) if items else None


def daily_section(daily: DailyContext | None, workspace: Path) -> Section | None:
    if daily is None or not daily.lines:
        return None
    # The newest lines (by their time, see `daily_context`) are the ones worth keeping under
    # the cap: the newest two rank with the best memories, older ones go first.
    newness = daily.newness or range(len(daily.lines) - 1, -1, -1)
    items = [Item(line, None, 3 + new) for line, new in zip(daily.lines, newness, strict=True)]
    # The note's path is shown in the section's heading line (see the template).
    items.insert(0, Item(display_path(daily.path, workspace), "From", 3, heading=True))
    return Section("daily_context", TITLES["daily_context"], tuple(items), style="quote")


def time_section(times: TimeContext, strategy: Strategy | None = None) -> Section | None:
    """The local time and part of the day, with the hour's note ("late night: suggest
    deferring non-urgent work") unless the strategy fired on tiredness: its own note ("offer
    to pick this up later") is then the advice on pace, not said twice. None when the human's
    zone is unknown: this machine's clock tells the model nothing about the human's day."""
    if not times.known:
        return None
    local = f"{times.local:%H:%M %Z, %a %d %b}, {times.part_of_day}"
    paced = strategy is not None and not strategy.no_signal and strategy.mood == "tired"
    if times.note and not paced:
        local += f": {times.note}"
    return Section(
        "time_context",
        TITLES["time_context"],
        (Item(local, "Local time", 2, gist=times.part_of_day),),
    )


def nothing_read(
    sections: Sequence[Section], read: TranscriptRead, *, active: bool = True
) -> list[Section]:
    """Given the sections of a window without a message (a new workspace), return what is
    worth saying: one line that nothing is known yet (when the Active Context section is on,
    `active`) in place of the conversation's sections (no strategy, routing or context computed
    from nothing); the notes and the clock stay."""
    if not read.sources:
        why = "no transcripts found yet (`assemble --once --explain` says where it looked)"
    else:
        why = f"no messages in the window of the {count_of(len(read.sources), 'transcript')} read"
    line = Item(f"{why}, so nothing about the conversation", "Nothing known yet", 1)
    quiet = ("emotional_context", "response_strategy", "active_context", "routing_hint")
    kept = [section for section in sections if section.name not in quiet]
    if active:
        kept.insert(0, Section("active_context", TITLES["active_context"], (line,)))
    return kept


def routing_section(
    hint: RoutingHint, default_tier: str | None = None, *, task: bool = True
) -> Section | None:
    """The routing hint, when it says something to act on: sensitive content was seen, or the
    task calls for a model other than the default (`default_tier`, an ordinary task's). The
    complexity label alone is not shown, nor a model for a window with no task known (`task`
    False): there is nothing to route."""
    items: list[Item] = []
    if hint.sensitivity != "low":
        reason = f"{hint.sensitivity.upper()} ({hint.sensitivity_reason})"
        items.append(Item(reason, "Content sensitivity", 3, gist=hint.sensitivity))
    # The tier of an ordinary (moderate) task is the default: naming it tells a router nothing.
    other = hint.complexity != "medium" and hint.tier != default_tier
    if task and (other or hint.sensitivity == "high"):
        items.append(Item(f"{hint.tier} ({hint.complexity_reason})", "Suggested model", 4))
    return Section("routing_hint", TITLES["routing_hint"], tuple(items)) if items else None


def _quoted(text: str) -> str:
    """Given words taken from a transcript or a note, return them in curly quotes, a trailing
    aside such as "(in api)" left outside: the file's convention for quoted material."""
    words, aside = text, ""
    if text.endswith(")") and " (" in text:
        words, _, rest = text.rpartition(" (")
        aside = f" ({rest}"
    return f"“{words}”{aside}"


def display_path(path: Path, workspace: Path) -> str:
    try:
        return str(path.resolve().relative_to(workspace))
    except ValueError:
        home = Path(os.path.expanduser("~"))
        try:
            return "~/" + str(path.relative_to(home))
        except ValueError:
            return str(path)


def count_of(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
