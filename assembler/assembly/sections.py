"""The auto sections of SCRATCHPAD.md, each from what one stage of an assembly found: the
mood, the response strategy, what the session is about, the memories, today's note, the time
and the routing hint. Pure: values in, `render.Section`s out."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.assembly.routing import RoutingHint
from assembler.clock import format_duration
from assembler.context.active import ActiveContext
from assembler.context.daily import DailyContext
from assembler.context.daytime import TimeContext
from assembler.file.render import Item, Section
from assembler.memory.recall import RecallResult, relevance
from assembler.mood.strategy import Strategy
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


def mood_section(report: MoodReport | None) -> Section | None:
    if report is None or report.combined.messages == 0:
        return None  # nothing the human said: no mood to report
    state = report.combined
    primary = f"{state.primary} ({state.primary_score:.2f})"
    if state.speaker is not None:  # a group chat: whose state this is
        primary += f", {state.speaker}, the latest to speak"
    items = [Item(primary, "Primary", 1, gist=state.primary)]
    if state.secondary:
        score = f"{state.secondary} ({state.secondary_score:.2f})"
        items.append(Item(score, "Secondary", 4, gist=state.secondary))
    items.append(
        Item(
            f"{state.valence:+.2f} ({valence_word(state.valence)}) | **Arousal:** "
            f"{state.arousal:.2f} ({arousal_word(state.arousal)})",
            "Valence",
            2,
            gist=f"{valence_word(state.valence)} {arousal_word(state.arousal)}",
        )
    )
    plural = "s" if state.messages != 1 else ""
    confidence = (
        f"{state.confidence:.2f} that an emotion shows ({state.messages} human message{plural})"
    )
    items.append(Item(confidence, "Confidence", 3, gist=""))
    items.append(Item(state.trajectory, "Trajectory", 3, gist=""))
    items.extend(
        speaker_item(name, s) for name, s in report.speakers.items() if name != state.speaker
    )
    return Section("emotional_context", TITLES["emotional_context"], tuple(items))


def speaker_item(name: str, state: MoodState) -> Item:
    text = f"{state.primary} ({state.primary_score:.2f}), valence {state.valence:+.2f}"
    text += f", {state.messages} messages; {state.trajectory}"
    return Item(text, name, 5, gist=state.primary)


def strategy_section(strategy: Strategy | None) -> Section | None:
    if strategy is None:
        return None
    if strategy.no_signal:
        # Nothing to adapt to: one line instead of the fallback rule's defaults.
        line = Item(f"{strategy.reason}; answer as usual", "No clear signal", 1, gist="none")
        return Section("response_strategy", TITLES["response_strategy"], (line,))
    items = [
        Item(strategy.style, "Style", 1),
        Item(strategy.tone, "Tone", 2),
        Item(strategy.verbosity, "Verbosity", 2),
        Item("yes" if strategy.preamble else "NO", "Preamble", 3),
    ]
    if strategy.note:
        items.append(Item(strategy.note, "Note", 4))
    return Section("response_strategy", TITLES["response_strategy"], tuple(items))


def active_section(active: ActiveContext, now: datetime) -> Section:
    # The human's own words are quoted material, not instructions (see the guidance).
    working = _quoted(active.working_on) if active.working_on else "nothing identified"
    if active.working_on and active.finished:
        # "(in api)" → "(in api; finished)": one aside, not two
        working = working[:-1] + "; finished)" if working.endswith(")") else f"{working} (finished)"
    items = [Item(working, "Working on", 1)]
    if active.last_topic:
        items.append(Item(active.last_topic, "Last topic", 2))
    if active.session_gap is not None:  # a continuous session says nothing worth a line
        gap = f"{format_duration(active.session_gap)} ({active.gap_note})"
        items.append(Item(gap, "Session gap", 3, gist=active.gap_note))
    read = f"{active.messages_read} ({active.human_messages} from the human"
    read += f", {active.sessions} session{'s' if active.sessions != 1 else ''})"
    if active.last_message_at is not None:
        since = now - active.last_message_at
        read += (
            "; last just now"
            if since < timedelta(minutes=1)
            else (f"; last {format_duration(since)} ago")
        )
    items.append(Item(read, "Messages read", 5, gist=""))
    return Section("active_context", TITLES["active_context"], tuple(items))


def daily_section(daily: DailyContext | None, workspace: Path) -> Section | None:
    if daily is None or not daily.lines:
        return None
    # The newest lines (by their time, see `daily_context`) are the ones worth keeping under
    # the cap: the newest two rank with the best memories, older ones go first.
    newness = daily.newness or range(len(daily.lines) - 1, -1, -1)
    items = [Item(line, None, 3 + new) for line, new in zip(daily.lines, newness, strict=True)]
    source = display_path(daily.path, workspace)
    omitted = ", older ones omitted" if daily.truncated else ""
    items.insert(0, Item(f"{source} (newest lines{omitted})", "From", 3, heading=True))
    return Section("daily_context", TITLES["daily_context"], tuple(items), style="quote")


def time_section(times: TimeContext) -> Section:
    if not times.known:
        clock = f"{times.local:%H:%M %Z, %a %d %b} (this machine's zone; the human's is unknown)"
        # The clock alone moved: no news for hosts that send the block only when it changed.
        item = Item(clock, "Server time", 2, gist="unknown zone")
        return Section("time_context", TITLES["time_context"], (item,))
    local = f"{times.local:%H:%M %Z, %a %d %b}, {times.part_of_day}"
    if times.note:
        local += f": {times.note}"
    return Section(
        "time_context",
        TITLES["time_context"],
        (Item(local, "Local time", 2, gist=times.part_of_day),),
    )


def nothing_read(sections: Sequence[Section], read: TranscriptRead) -> list[Section]:
    """Given the sections of a window without a message (a new workspace), return what is
    worth saying: one line that nothing is known yet in place of the conversation's sections
    (no strategy, routing or context computed from nothing); the notes and the clock stay."""
    if not read.sources:
        why = "no transcripts found yet"
    else:
        why = f"no messages in the window of the {count_of(len(read.sources), 'transcript')} read"
    line = Item(f"{why}, so nothing about the conversation", "Nothing known yet", 1)
    quiet = ("emotional_context", "response_strategy", "routing_hint")
    return [
        Section("active_context", TITLES["active_context"], (line,))
        if section.name == "active_context"
        else section
        for section in sections
        if section.name not in quiet
    ]


def routing_section(hint: RoutingHint) -> Section | None:
    """The routing hint, when it says something to act on: sensitive content was seen, or the
    task calls for a model other than the default. The complexity label alone is not shown."""
    items: list[Item] = []
    if hint.sensitivity != "low":
        reason = f"{hint.sensitivity.upper()} ({hint.sensitivity_reason})"
        items.append(Item(reason, "Content sensitivity", 3, gist=hint.sensitivity))
    # The tier of an ordinary (moderate) task is the default: naming it tells a router nothing.
    if hint.complexity != "medium" or hint.sensitivity == "high":
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
