"""One assembly: transcripts → mood → strategy, active/daily/time context, routing → the file.

`assemble()` computes everything and returns it without touching the disk; `write()` puts
the result in place atomically. `run_once()` is both, as `assemble --once` does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from assembler import __version__
from assembler.agent_part import AgentInputs, read_agent_inputs, render_agent_part
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
from assembler.errors import AssemblerError, ModelError, Problem, UnsafePathError
from assembler.fsutil import (
    Replaced,
    Snapshot,
    atomic_write,
    check_place,
    read_regular,
    replace_if_unchanged,
)
from assembler.handedits import import_into_journal
from assembler.ready import write_ready
from assembler.recall import (
    OpenMemory,
    RecallResult,
    WarmMemory,
    index_options,
    memory_copy,
    recall_memories,
    synced_memory,
)
from assembler.render import Fitted, Item, Section, fit_sections, renderer_for
from assembler.routing import RoutingHint, redact, route
from assembler.scratchpad_file import (
    auto_hash,
    auto_part,
    body_prefix,
    find_agent_region,
    plain_region,
    remember_render,
    split_frontmatter,
)
from assembler.scratchpad_file import (
    compose as compose_file,
)
from assembler.sentiment import MoodReport, MoodState, analyze, load_mood_model
from assembler.strategy import Strategy, choose_strategy
from assembler.tokens import get_counter
from assembler.transcripts import Message, TranscriptRead, default_sources, read_recent
from assembler.view import guidance_for

if TYPE_CHECKING:
    from assembler.memory_search import Hit

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
class Draft:
    """The part of an assembly that does not depend on SCRATCHPAD.md: the auto sections and
    what they were computed from. A write that must retry (the file changed under it) redoes
    only the agent sections and the page."""

    now: datetime
    transcripts: TranscriptRead
    mood: MoodReport | None
    strategy: Strategy | None
    active: ActiveContext
    daily: DailyContext | None
    time: TimeContext
    routing: RoutingHint
    recall: MemoryRecall | None
    sections: list[Section]
    degraded: list[Problem]

    @property
    def openclaw_files(self) -> list[Path]:
        """The OpenClaw transcripts read: their scratchpad entries can become section main."""
        return [
            Path(s.path)
            for s in self.transcripts.sources
            if s.format in ("openclaw", "openclaw-sqlite") and not s.error
        ]


@dataclass
class Assembly(Draft):
    """Everything one run computed, the file text included; `degraded` holds the problems of
    the agent sections too."""

    path: Path = field(default_factory=Path)
    text: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    fitted: Fitted = field(default_factory=lambda: Fitted([], [], 0))
    # A hash of what the auto part says apart from its clock lines (see `ready`).
    auto_digest: str = ""
    written: bool = False
    secret_patterns: tuple[str, ...] = ()  # the user's, beside the built-in detectors

    def explain(self) -> list[str]:
        """Return the reasons behind each value, one line each, for --explain, with secrets
        and personal data redacted as in the file (the lines quote messages and queries)."""
        return [
            redact(line, extra_secret_patterns=self.secret_patterns) for line in self._explain()
        ]

    def _explain(self) -> list[str]:
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
        lines += [f"degraded: {p.what}: {p.why}" for p in self.degraded]
        return lines


def draft(
    config: Config,
    *,
    now: datetime,
    memory: OpenMemory | Problem | None,
    transcript_globs: Sequence[str] | None = None,
) -> Draft:
    """Given the config, the clock and the memory index to search (synced; see `memory_for`),
    return the auto part of the assembly (reads only; the index is closed unless kept).

    `transcript_globs` replaces the configured sources for this run. An unreadable source, a
    failing mood model or an index that could not be opened degrades the file (the frontmatter
    says what and why) instead of failing.
    """
    tz = local_timezone(config)
    now = now.astimezone(tz)
    read = read_recent(
        list(transcript_globs)
        if transcript_globs
        else config.transcripts.sources or default_sources(config.workspace, config.state_dir),
        base=config.workspace,
        now=now,
        max_messages=config.transcripts.max_messages,
        lookback=config.transcripts.lookback_delta,
        max_files=config.transcripts.max_files,
        fmt=config.transcripts.format,  # type: ignore[arg-type]
    )
    degraded: list[Problem] = []
    failed = [s for s in read.sources if s.error]
    for source in failed:
        degraded.append(Problem(f"transcript {source.path}", source.error or "", "transcript"))
    half_life = config.mood.half_life_delta
    mood: MoodReport | None = None
    strategy: Strategy | None = None
    try:
        mood = analyze(read.messages, now=now, half_life=half_life, model=load_mood_model())
    except ModelError as error:
        degraded.append(Problem("mood", str(error), "mood"))
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
        degraded.append(Problem("daily note", f"{error}", "daily note"))
    recall = _recall(config, memory, read.messages, daily, now, degraded)
    times = time_context(
        now,
        tz,
        late_night_start=config.time.late_night_start,
        late_night_end=config.time.late_night_end,
        morning_end=config.time.morning_end,
    )
    routing = route(
        [m.text for m in read.messages],
        lengths=[m.length for m in read.messages],
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
    return Draft(
        now, read, mood, strategy, active, daily, times, routing, recall, sections, degraded
    )


def compose(config: Config, auto: Draft, agent: AgentInputs) -> Assembly:
    """Given the config, the auto part and the agent sections to show, return the whole file
    under its caps (nothing is written).

    Raise AssemblerError for problems the user must fix (a broken template folder).
    """
    now = auto.now
    tz = local_timezone(config)
    count = get_counter(config.tokens.counter)
    sections = auto.sections
    degraded = [*auto.degraded, *agent.degraded]
    renderer = renderer_for(config)
    expires = now + timedelta(minutes=config.output.ttl_minutes)
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
        part = render_agent_part(
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
    auto_tokens = count(auto_part(body))
    read, recall = auto.transcripts, auto.recall
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
        "auto_sha256": auto_hash(body),
        "degraded": [problem.to_dict() for problem in degraded],
    }
    if (edits := agent.sync.summary()) is not None:
        meta["file_edits"] = edits
    if agent.states is None:
        # The region was carried over, not imported: the next run must import it, even if
        # nobody edits the file again.
        meta["agent_carried"] = True
    return Assembly(
        **{**vars(auto), "degraded": degraded},
        path=config.output_path,
        text=compose_file(meta, body),
        meta=meta,
        fitted=fitted,
        auto_digest=_auto_digest(fitted.sections),
        secret_patterns=tuple(config.routing.extra_secret_patterns),
    )


def _auto_digest(sections: Sequence[Section]) -> str:
    """The hash of what the auto sections say (each line's gist, see `Item`): renders that only
    moved the clock or a score have the same digest, so hosts that send the block once per
    session need not send it again for them."""
    lines = [
        f"{section.name}\x1f{item.label}\x1f{item.text if item.gist is None else item.gist}"
        for section in sections
        for item in section.items
        if item.gist != ""
    ]
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def assemble(
    config: Config, *, now: datetime, transcript_globs: Sequence[str] | None = None
) -> Assembly:
    """Given the config and the clock, return the assembled SCRATCHPAD.md, writing nothing:
    the agent sections are the journal's, hand edits of the file not yet imported (see
    `run_once`), and the memory index searched is a temporary copy brought up to date with the
    memory files (see `recall.memory_copy`). Raise AssemblerError only for problems the user
    must fix (a broken template folder).
    """
    memory = memory_for(config, dry_run=True)
    auto = draft(config, now=now, memory=memory, transcript_globs=transcript_globs)
    seen, problems = _read_output(config)
    agent = read_agent_inputs(config, now=auto.now, seen=seen)
    agent.degraded[:0] = problems
    return compose(config, auto, agent)


# How often a write is tried again when SCRATCHPAD.md changed while it was being rendered.
WRITE_ATTEMPTS = 3


def run_once(
    config: Config,
    *,
    now: datetime,
    dry_run: bool = False,
    transcript_globs: Sequence[str] | None = None,
    memory: WarmMemory | None = None,
) -> Assembly:
    """Given the config and the clock, assemble and (unless `dry_run`) write SCRATCHPAD.md.

    Before the render, hand edits of the file and the newest OpenClaw scratchpad entry go to
    the journal (not on a dry run, which writes nothing). The file is replaced only if it still
    holds what was read before the render: when it changed meanwhile (an agent editing it),
    the edits are imported and the page rendered again, up to WRITE_ATTEMPTS times; after
    that it is left as it is (not `written`, and `degraded` says why) for the next run.
    Raise AssemblerError if the file cannot be written.
    """
    if dry_run:
        return assemble(config, now=now, transcript_globs=transcript_globs)
    synced = memory_for(config, warm=memory)
    auto = draft(config, now=now, memory=synced, transcript_globs=transcript_globs)
    assembly: Assembly | None = None
    late: bytes | None = None
    for _ in range(WRITE_ATTEMPTS):
        seen, problems = _read_output(config)
        if late is not None:
            # Written into the old file between the check and the swap: import it too.
            import_into_journal(config, now=auto.now, seen=Snapshot(late, time.time()))
            late = None
        sync, imported = import_into_journal(
            config, now=auto.now, seen=seen, openclaw_files=auto.openclaw_files
        )
        agent = read_agent_inputs(config, now=auto.now, seen=seen, sync=sync)
        agent.degraded[:0] = [*problems, *imported]
        assembly = compose(config, auto, agent)
        replaced = _write_if_unchanged(assembly, config, seen)
        if replaced.done:
            # The next run tells the agent's text typed in the file from what this one wrote.
            remember_render(config.state_dir, assembly.text)
            _write_ready(config, assembly)
            if replaced.late is None:
                return assembly
            late = replaced.late
    assert assembly is not None
    if not assembly.written:
        assembly.degraded.append(
            Problem(
                "write",
                f"{config.output_path} changed while it was rendered, "
                f"{WRITE_ATTEMPTS} times; left as it is (the next run imports the edits)",
                "write",
            )
        )
    elif late is not None:  # the last write's own late edit: into the journal, for next time
        import_into_journal(config, now=auto.now, seen=Snapshot(late, time.time()))
    return assembly


def _write_ready(config: Config, assembly: Assembly) -> None:
    """Write the ready block of the file just written (see `assembler.ready`). A failure is
    logged, not raised: the file is written, and hooks fall back to reading it."""

    _, body = split_frontmatter(assembly.text)
    region = find_agent_region(body)
    try:
        write_ready(
            config,
            now=assembly.now,
            expires=datetime.fromisoformat(assembly.meta["expires"]),
            block=body_prefix(body),
            auto_digest=assembly.auto_digest,
            agent=plain_region(region) if region is not None else "",
            guidance=guidance_for(config),
        )
    except OSError as error:
        log.warning("cannot write the ready block: %s", error)


def _read_output(config: Config) -> tuple[Snapshot, list[Problem]]:
    """Return SCRATCHPAD.md as it is now (absent: no data) and why it could not be read."""
    try:
        return read_regular(config.output_path), []
    except OSError as error:
        why = f"cannot read {config.output_path} ({error}); hand edits not imported"
        return Snapshot(None), [Problem("hand edits", why, "hand edits")]


def write(assembly: Assembly) -> None:
    """Given an assembly, write its file atomically (readers see the old or the new file whole).

    Raise AssemblerError if the output folder cannot be written or the file is something other
    than a regular file (a link, a device).
    """

    def replace_file(path: Path, data: bytes) -> Replaced:
        atomic_write(path, data)
        return Replaced(True)

    _write(assembly, None, replace_file)


def _write_if_unchanged(assembly: Assembly, config: Config, seen: Snapshot) -> Replaced:
    return _write(
        assembly,
        config.workspace,
        lambda path, data: replace_if_unchanged(path, data, seen.data),
    )


def _write(
    assembly: Assembly, workspace: Path | None, replace_file: Callable[[Path, bytes], Replaced]
) -> Replaced:
    path = assembly.path
    try:
        if workspace is not None:
            check_place(path, workspace)
        path.parent.mkdir(parents=True, exist_ok=True)
        done = replace_file(path, assembly.text.encode("utf-8", "surrogatepass"))
    except UnsafePathError:
        raise
    except OSError as error:
        raise AssemblerError(
            f"Cannot write {path} ({error.strerror or error}); check that the folder "
            "is writable or change 'output.path'"
        ) from error
    assembly.written = assembly.written or done.done
    return done


@dataclass
class MemoryRecall:
    """What the memory search gave this assembly."""

    result: RecallResult
    chunks_total: int
    chunks_embedded: int


def memory_for(
    config: Config, *, warm: WarmMemory | None = None, dry_run: bool = False
) -> OpenMemory | Problem | None:
    """Given the config, return the memory index an assembly searches, synced with the memory
    files: the workspace's (kept open by `warm`, as the daemon does), or on a dry run a
    temporary copy of it, so that a dry run leaves the workspace as it was; None when the
    section or memory search is off; the problem when the index cannot be opened (the section
    goes, not the run).
    """
    if not (config.memory.enabled and config.sections.relevant_memories):
        return None
    try:
        return memory_copy(config) if dry_run else synced_memory(config, warm=warm)
    except AssemblerError as error:
        return Problem("memory search", str(error), "memory")


def _recall(
    config: Config,
    memory: OpenMemory | Problem | None,
    messages: Sequence[Message],
    daily: DailyContext | None,
    now: datetime,
    degraded: list[Problem],
) -> MemoryRecall | None:
    """Given the synced memory index (see `memory_for`), pick the hits for the Relevant
    Memories section and close the index (unless kept); None when the section or memory search
    is off. Problems degrade the section, they never fail the run.
    """
    if memory is None:
        return None
    if isinstance(memory, Problem):
        degraded.append(memory)
        return None
    for warning in memory.report.skipped:
        degraded.append(Problem("memory file", warning, "memory"))
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
    fallback = memory.fallback
    if fallback is not None and fallback.kind == "keyword search":
        # Keyword search alone is what the user chose: not a fault to warn about every cycle.
        log.debug("memory search: %s", fallback.why)
    elif fallback is not None:
        degraded.append(fallback)
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
    if report is None or report.combined.messages == 0:
        return None  # nothing the human said: no mood to report
    state = report.combined
    items = [Item(f"{state.primary} ({state.primary_score:.2f})", "Primary", 1, gist=state.primary)]
    if state.secondary:
        score = f"{state.secondary} ({state.secondary_score:.2f})"
        items.append(Item(score, "Secondary", 4, gist=state.secondary))
    items.append(
        Item(
            f"{state.valence:+.2f} ({_valence_word(state.valence)}) | **Arousal:** "
            f"{state.arousal:.2f} ({_arousal_word(state.arousal)})",
            "Valence",
            2,
            gist=f"{_valence_word(state.valence)} {_arousal_word(state.arousal)}",
        )
    )
    plural = "s" if state.messages != 1 else ""
    confidence = (
        f"{state.confidence:.2f} that an emotion shows ({state.messages} human message{plural})"
    )
    items.append(Item(confidence, "Confidence", 3, gist=""))
    items.append(Item(state.trajectory, "Trajectory", 3, gist=""))
    items.extend(_speaker_item(name, s) for name, s in report.speakers.items())
    return Section("emotional_context", TITLES["emotional_context"], tuple(items))


def _speaker_item(name: str, state: MoodState) -> Item:
    text = f"{state.primary} ({state.primary_score:.2f}), valence {state.valence:+.2f}"
    text += f", {state.messages} messages; {state.trajectory}"
    return Item(text, name, 5, gist=state.primary)


def _strategy_section(strategy: Strategy | None) -> Section | None:
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


def _active_section(active: ActiveContext, now: datetime) -> Section:
    items = [Item(active.working_on or "nothing identified in the window", "Working on", 1)]
    if active.last_topic:
        items.append(Item(active.last_topic, "Last topic", 2))
    if active.session_gap is not None:
        gap = f"{format_duration(active.session_gap)} ({active.gap_note})"
    else:
        gap = active.gap_note
    items.append(Item(gap, "Session gap", 3, gist=active.gap_note))
    read = f"{active.messages_read} ({active.human_messages} from the human"
    read += f", {active.sessions} session{'s' if active.sessions != 1 else ''})"
    if active.last_message_at is not None:
        read += f"; last {format_duration(now - active.last_message_at)} ago"
    items.append(Item(read, "Messages read", 5, gist=""))
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
        (Item(local, "Local time", 2, gist=times.part_of_day), Item(times.note, "Note", 3)),
    )


def _routing_section(hint: RoutingHint) -> Section:
    return Section(
        "routing_hint",
        TITLES["routing_hint"],
        (
            Item(
                f"{hint.sensitivity.upper()} ({hint.sensitivity_reason})",
                "Content sensitivity",
                3,
                gist=hint.sensitivity,
            ),
            Item(
                f"{hint.complexity.upper()} ({hint.complexity_reason})",
                "Task complexity",
                4,
                gist=hint.complexity,
            ),
            Item(hint.tier, "Suggested model", 4),
        ),
    )
