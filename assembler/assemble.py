"""One assembly: transcripts → mood → strategy, active/daily/time context, routing → the file.

`assemble()` computes everything and returns it without touching the disk; `write()` puts
the result in place atomically. `run_once()` is both, as `assemble --once` does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from assembler import __version__
from assembler import sections as agent_sections
from assembler.config import Config, local_timezone
from assembler.context import (
    ActiveContext,
    DailyContext,
    TimeContext,
    active_context,
    daily_context,
    format_duration,
    time_context,
)
from assembler.errors import AssemblerError, ModelError
from assembler.fsutil import atomic_write
from assembler.render import Fitted, Item, Section, compose, fit_sections, renderer_for
from assembler.routing import RoutingHint, redact, route
from assembler.sentiment import MoodReport, MoodState, analyze, load_mood_model
from assembler.strategy import Strategy, choose_strategy
from assembler.tokens import get_counter
from assembler.transcripts import Message, TranscriptRead, read_recent

if TYPE_CHECKING:
    from assembler.memory import Hit
    from assembler.recall import RecallResult, WarmMemory

log = logging.getLogger(__name__)

GENERATOR = f"scratchpad-assembler {__version__}"

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
class Assembly:
    """Everything one run computed, the file text included."""

    path: Path
    text: str
    meta: dict[str, Any]
    now: datetime
    transcripts: TranscriptRead
    mood: MoodReport | None
    strategy: Strategy | None
    active: ActiveContext
    daily: DailyContext | None
    time: TimeContext
    routing: RoutingHint
    fitted: Fitted
    recall: MemoryRecall | None = None
    degraded: list[dict[str, str]] = field(default_factory=list)
    written: bool = False

    def explain(self) -> list[str]:
        """Return the reasons behind each value, one line each, for --explain."""
        lines = [
            f"sources: {s.path} [{s.format}] {s.messages} messages, {s.bad_lines} bad lines"
            + (f", error: {s.error}" if s.error else "")
            for s in self.transcripts.sources
        ]
        lines += [f"warning: {w}" for w in self.transcripts.warnings]
        if self.mood is not None:
            lines += [f"mood: {line}" for line in self.mood.combined.explain]
            for name, state in self.mood.speakers.items():
                lines.append(f"mood[{name}]: {state.primary} {state.primary_score:.2f}")
        if self.strategy is not None:
            lines.append(f"strategy: rule {self.strategy.mood!r} because {self.strategy.reason}")
        lines += [f"active context: {line}" for line in self.active.explain]
        if self.recall is not None:
            lines += [f"memories: {line}" for line in self.recall.result.explain]
        lines += [f"routing: {line}" for line in self.routing.explain]
        lines += [f"budget: dropped {d}" for d in self.fitted.dropped]
        lines += [f"degraded: {d['what']}: {d['why']}" for d in self.degraded]
        return lines


def assemble(
    config: Config,
    *,
    now: datetime,
    transcript_globs: Sequence[str] | None = None,
    memory: WarmMemory | None = None,
) -> Assembly:
    """Given the config and the clock, return the assembled SCRATCHPAD.md (not yet written).

    `transcript_globs` replaces the configured sources for this run; `memory` keeps the memory
    index (and its model) open between runs, as the daemon does. An unreadable source or a
    failing mood model degrades the file (the frontmatter says what and why) instead of failing.
    Raise AssemblerError only for problems the user must fix (a broken template folder).
    """
    tz = local_timezone(config)
    now = now.astimezone(tz)
    count = get_counter(config.tokens.counter)
    read = read_recent(
        list(transcript_globs) if transcript_globs else config.transcripts.sources,
        base=config.workspace,
        now=now,
        max_messages=config.transcripts.max_messages,
        lookback=config.transcripts.lookback_delta,
        max_files=config.transcripts.max_files,
        fmt=config.transcripts.format,  # type: ignore[arg-type]
    )
    degraded: list[dict[str, str]] = []
    failed = [s for s in read.sources if s.error]
    for source in failed:
        degraded.append({"what": f"transcript {source.path}", "why": source.error or ""})
    half_life = config.mood.half_life_delta
    mood: MoodReport | None = None
    strategy: Strategy | None = None
    try:
        mood = analyze(read.messages, now=now, half_life=half_life, model=load_mood_model())
    except ModelError as error:
        degraded.append({"what": "mood", "why": str(error)})
    if mood is not None:
        strategy = choose_strategy(
            mood.combined,
            config.strategy.rules,
            min_confidence=config.strategy.min_confidence,
            fallback=config.strategy.fallback,
        )
    active = active_context(
        read.messages, read.summaries, now=now, half_life=half_life, workspace=config.workspace
    )
    daily: DailyContext | None = None
    try:
        daily = daily_context(config.workspace, config.daily.folder, now, config.daily.tail_bytes)
    except OSError as error:
        degraded.append({"what": "daily note", "why": f"{error}"})
    recall = _recall(config, read.messages, daily, now, degraded, memory)
    times = time_context(
        now,
        tz,
        late_night_start=config.time.late_night_start,
        late_night_end=config.time.late_night_end,
        morning_end=config.time.morning_end,
    )
    routing = route(
        [m.text for m in read.messages],
        tiers=config.routing.tiers,
        extra_secret_patterns=config.routing.extra_secret_patterns,
        complexity_keywords=config.routing.complexity_keywords or None,
    )

    builders: dict[str, Callable[[], Section | None]] = {
        "emotional_context": lambda: _mood_section(mood),
        "response_strategy": lambda: _strategy_section(strategy),
        "active_context": lambda: _active_section(active, now),
        "relevant_memories": lambda: _memories_section(recall),
        "daily_context": lambda: _daily_section(daily, config.workspace),
        "time_context": lambda: _time_section(times),
        "routing_hint": lambda: _routing_section(routing),
    }
    sections = [s for name in config.sections.enabled() if (s := builders[name]()) is not None]
    # The file is injected into every turn: a secret or an address the human pasted must not
    # be repeated by it (the Routing Hint says what kind was seen, never the value).
    sections = [_redacted(s, config.routing.extra_secret_patterns) for s in sections]
    renderer = renderer_for(config)
    expires = now + timedelta(minutes=config.output.ttl_minutes)
    # Agent sections: hand edits and OpenClaw entries go to the journal first (issue 4).
    openclaw = [Path(s.path) for s in read.sources if s.format == "openclaw" and not s.error]
    agent = agent_sections.gather_for(config, now=now, openclaw_files=openclaw)
    degraded.extend(agent.degraded)
    edited_at = agent.sync.at if agent.sync.auto_edited else None
    page = {
        "valid_until": f"{expires:%Y-%m-%d %H:%M} {expires.tzname() or ''}".strip(),
        "ttl_minutes": config.output.ttl_minutes,
        "generator": GENERATOR,
        "auto_notice": f"{edited_at.astimezone(tz):%H:%M}" if edited_at else "",
        "agent_part": "",
    }
    try:
        header = count(renderer.page(sections=[], **page))
        # The agent part comes first: the total cap is met by shrinking the auto part, and the
        # agent part gives way (saying so) only when the auto part is down to its header.
        part = agent_sections.render_agent_part(
            agent,
            render=renderer.agent_part,
            count=count,
            agent_cap=config.caps.agent,
            limit=config.caps.total - header - 1,
        )
        page["agent_part"] = part.text
        # The page's own lines (title, validity, blank lines between sections) count towards
        # the auto cap too: fit the sections to what is left, and tighten if still over.
        limit = min(config.caps.auto + part.tokens, config.caps.total)
        room = limit - part.tokens - header
        while True:
            fitted = fit_sections(
                sections, renderer, count, cap=max(room, 0), section_caps=config.caps.sections
            )
            body = renderer.page(sections=fitted.texts, **page)
            if part.text not in body:  # a user template without `agent_part`: keep it anyway
                body = f"{body.rstrip()}\n\n{part.text}"
            excess = count(body) - limit
            if excess <= 0 or not fitted.sections:
                break
            room -= excess
    except jinja2.TemplateError as error:
        where = config.output.template_dir or "the bundled templates"
        raise AssemblerError(
            f"Template error in {where} ({type(error).__name__}: {error}); fix the template"
        ) from error
    auto_tokens = count(agent_sections.auto_part(body))
    meta: dict[str, Any] = {
        "generator": GENERATOR,
        "updated": now.isoformat(timespec="seconds"),
        "expires": expires.isoformat(timespec="seconds"),
        "ttl_minutes": config.output.ttl_minutes,
        "tokens": {
            "auto": auto_tokens,
            "agent": part.tokens,
            "total": count(body),
            "caps": {
                "auto": config.caps.auto,
                "agent": config.caps.agent,
                "total": config.caps.total,
            },
        },
        "sources": [_source_entry(s, config.workspace) for s in read.sources],
        "messages_read": len(read.messages),
        "memory": None
        if recall is None
        else {
            "chunks": recall.chunks_total,
            "embedded": recall.chunks_embedded,
            "hits": len(recall.result.hits),
        },
        "sections": [s.name for s in fitted.sections],
        "dropped": fitted.dropped,
        "agent_sections": part.hashes,
        "agent_omitted": part.omitted,
        "auto_sha256": agent_sections.auto_hash(body),
        "degraded": degraded,
    }
    if (edits := agent.sync.summary()) is not None:
        meta["file_edits"] = edits
    return Assembly(
        path=config.output_path,
        text=compose(meta, body),
        meta=meta,
        now=now,
        transcripts=read,
        mood=mood,
        strategy=strategy,
        active=active,
        daily=daily,
        time=times,
        routing=routing,
        fitted=fitted,
        recall=recall,
        degraded=degraded,
    )


def write(assembly: Assembly) -> None:
    """Given an assembly, write its file atomically (readers see the old or the new file whole).

    Raise AssemblerError if the output folder cannot be written.
    """
    try:
        assembly.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(assembly.path, assembly.text)
    except OSError as error:
        raise AssemblerError(
            f"Cannot write {assembly.path} ({error.strerror or error}); check that the folder "
            "is writable or change 'output.path'"
        ) from error
    assembly.written = True


def run_once(
    config: Config,
    *,
    now: datetime,
    dry_run: bool = False,
    transcript_globs: Sequence[str] | None = None,
    memory: WarmMemory | None = None,
) -> Assembly:
    """Given the config and the clock, assemble and (unless `dry_run`) write SCRATCHPAD.md."""
    assembly = assemble(config, now=now, transcript_globs=transcript_globs, memory=memory)
    if not dry_run:
        write(assembly)
        # The next run tells the agent's text typed in the file from what this run rendered.
        agent_sections.remember_render(config.state_dir, assembly.text)
    return assembly


@dataclass
class MemoryRecall:
    """What the memory search gave this assembly."""

    result: RecallResult
    chunks_total: int
    chunks_embedded: int


def _recall(
    config: Config,
    messages: Sequence[Message],
    daily: DailyContext | None,
    now: datetime,
    degraded: list[dict[str, str]],
    warm: WarmMemory | None = None,
) -> MemoryRecall | None:
    """Sync the memory index and pick the hits for the Relevant Memories section; None when
    the section or memory search is off. Problems degrade the section, they never fail the run.
    """
    if not (config.memory.enabled and config.sections.relevant_memories):
        return None
    from assembler.recall import index_options, recall_memories, synced_memory

    memory = synced_memory(config, warm=warm)
    for warning in memory.report.skipped:
        degraded.append({"what": "memory file", "why": warning})
    if memory.degraded and memory.chosen:
        # Keyword search alone is what the user chose: not a fault to warn about every cycle.
        log.debug("memory search: %s", memory.degraded)
    elif memory.degraded:
        degraded.append({"what": "memory search", "why": memory.degraded})
    with memory as index:
        result = recall_memories(
            index,
            messages,
            k=config.memory.top_k,
            max_messages=config.memory.query_messages,
            exclude=_shown_in_daily(daily, config.workspace),
            now=now,
            **index_options(config),
        )
    if index.search_degraded:  # the model loaded for the sync but failed on the queries
        degraded.append({"what": "memory search", "why": index.search_degraded})
    return MemoryRecall(result, memory.report.chunks_total, memory.report.chunks_embedded)


def _shown_in_daily(daily: DailyContext | None, workspace: Path) -> Callable[[Hit], bool]:
    """Return a test for hits that the Daily Context section already shows."""
    if daily is None or not daily.lines:
        return lambda hit: False
    path = _display_path(daily.path, workspace)
    return lambda hit: hit.path == path and hit.end_line >= daily.start_line


def _redacted(section: Section, extra_secret_patterns: Sequence[str]) -> Section:
    """Given a section, return it with secrets and personal data in its lines redacted."""
    items = tuple(
        replace(item, text=redact(item.text, extra_secret_patterns=extra_secret_patterns))
        for item in section.items
    )
    return replace(section, items=items)


def _memories_section(recall: MemoryRecall | None) -> Section | None:
    if recall is None or not recall.result.hits:
        return None
    items = [
        Item(f"`{hit.path}:{hit.start_line}-{hit.end_line}` {hit.snippet}", None, 3 + rank)
        for rank, hit in enumerate(recall.result.hits)
    ]
    return Section("relevant_memories", TITLES["relevant_memories"], tuple(items))


def _source_entry(source: Any, workspace: Path) -> dict[str, Any]:
    entry = {
        "path": _display_path(Path(source.path), workspace),
        "format": source.format,
        "messages": source.messages,
        "bad_lines": source.bad_lines,
    }
    if source.error:
        entry["error"] = source.error
    return entry


def _display_path(path: Path, workspace: Path) -> str:
    try:
        return str(path.resolve().relative_to(workspace))
    except ValueError:
        home = Path(os.path.expanduser("~"))
        try:
            return "~/" + str(path.relative_to(home))
        except ValueError:
            return str(path)


def _valence_word(valence: float) -> str:
    return "negative" if valence <= -0.2 else "positive" if valence >= 0.2 else "neutral"


def _arousal_word(arousal: float) -> str:
    return "high" if arousal >= 0.6 else "low" if arousal <= 0.3 else "moderate"


def _mood_section(report: MoodReport | None) -> Section | None:
    if report is None:
        return None
    state = report.combined
    items = [Item(f"{state.primary} ({state.primary_score:.2f})", "Primary", 1)]
    if state.secondary:
        items.append(Item(f"{state.secondary} ({state.secondary_score:.2f})", "Secondary", 4))
    items.append(
        Item(
            f"{state.valence:+.2f} ({_valence_word(state.valence)}) | **Arousal:** "
            f"{state.arousal:.2f} ({_arousal_word(state.arousal)})",
            "Valence",
            2,
        )
    )
    items.append(Item(f"{state.confidence:.2f} ({state.messages} human messages)", "Confidence", 3))
    items.append(Item(state.trajectory, "Trajectory", 3))
    items.extend(_speaker_item(name, s) for name, s in report.speakers.items())
    return Section("emotional_context", TITLES["emotional_context"], tuple(items))


def _speaker_item(name: str, state: MoodState) -> Item:
    text = f"{state.primary} ({state.primary_score:.2f}), valence {state.valence:+.2f}"
    text += f", {state.messages} messages; {state.trajectory}"
    return Item(text, name, 5)


def _strategy_section(strategy: Strategy | None) -> Section | None:
    if strategy is None:
        return None
    items = [
        Item(strategy.style, "Style", 1),
        Item(strategy.tone, "Tone", 2),
        Item(strategy.verbosity, "Verbosity", 2),
        Item("yes" if strategy.preamble else "NO", "Preamble", 3),
    ]
    if strategy.note:
        items.append(Item(strategy.note, "Note", 4))
    return Section("response_strategy", TITLES["response_strategy"], tuple(items))


def _active_section(active: ActiveContext, now: datetime) -> Section:
    items = [Item(active.working_on or "nothing identified in the window", "Working on", 1)]
    if active.last_topic:
        items.append(Item(active.last_topic, "Last topic", 2))
    if active.session_gap is not None:
        gap = f"{format_duration(active.session_gap)} ({active.gap_note})"
    else:
        gap = active.gap_note
    items.append(Item(gap, "Session gap", 3))
    read = f"{active.messages_read} ({active.human_messages} from the human"
    read += f", {active.sessions} session{'s' if active.sessions != 1 else ''})"
    if active.last_message_at is not None:
        read += f"; last {format_duration(now - active.last_message_at)} ago"
    items.append(Item(read, "Messages read", 5))
    return Section("active_context", TITLES["active_context"], tuple(items))


def _daily_section(daily: DailyContext | None, workspace: Path) -> Section | None:
    if daily is None or not daily.lines:
        return None
    count = len(daily.lines)
    # The newest lines (the end of the note) are the ones worth keeping under the cap; the
    # newest two rank with the best memories, older ones go first.
    items = [Item(line, None, 3 + count - 1 - i) for i, line in enumerate(daily.lines)]
    source = _display_path(daily.path, workspace)
    omitted = ", earlier lines omitted" if daily.truncated else ""
    items.insert(0, Item(f"{source} (tail{omitted})", "From", 3, heading=True))
    return Section("daily_context", TITLES["daily_context"], tuple(items), style="quote")


def _time_section(times: TimeContext) -> Section:
    local = f"{times.local:%H:%M %Z, %a %d %b} ({times.part_of_day})"
    return Section(
        "time_context",
        TITLES["time_context"],
        (Item(local, "Local time", 2), Item(times.note, "Note", 3)),
    )


def _routing_section(hint: RoutingHint) -> Section:
    return Section(
        "routing_hint",
        TITLES["routing_hint"],
        (
            Item(
                f"{hint.sensitivity.upper()} ({hint.sensitivity_reason})", "Content sensitivity", 3
            ),
            Item(f"{hint.complexity.upper()} ({hint.complexity_reason})", "Task complexity", 4),
            Item(hint.tier, "Suggested model", 4),
        ),
    )
