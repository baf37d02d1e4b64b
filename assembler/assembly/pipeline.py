"""One assembly: transcripts → mood → strategy, active/daily/time context, routing → the file.

`assemble()` computes everything and returns it without touching the disk; `write()` puts
the result in place atomically. `run_once()` is both, as `assemble --once` does.
`assemble_prompt()` is an assembly with a prompt not yet in any transcript counted, for the
daemon's answer to a host's hook (nothing about the prompt is written).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import jinja2

from assembler import __version__
from assembler.assembly.hosts import Hosts, section_entries
from assembler.assembly.routing import RoutingHint, route
from assembler.assembly.sections import (
    SPARE_PRIORITY,
    MemoryRecall,
    active_section,
    count_of,
    daily_section,
    display_path,
    memories_section,
    mood_section,
    nothing_read,
    redacted,
    routing_section,
    strategy_section,
    time_section,
)
from assembler.clock import local_timezone
from assembler.config.schema import Config
from assembler.context.active import ActiveContext, active_context
from assembler.context.daily import DailyContext, daily_context
from assembler.context.daytime import TimeContext, human_zone, time_context
from assembler.context.learned_zone import LearnedZone, read_learned_zone, remember_zone
from assembler.errors import AssemblerError, ModelError, Problem, UnsafePathError
from assembler.file.codec import (
    auto_hash,
    auto_part,
    body_hash,
    find_agent_region,
    parse_loosely,
    plain_region,
    prefix_text,
    split_frontmatter,
)
from assembler.file.codec import (
    compose as compose_file,
)
from assembler.file.records import (
    AssemblyState,
    RenderRecord,
    assembly_state_path,
    file_record,
    read_assembly_state,
    remember_render,
    render_record,
    write_assembly_state,
)
from assembler.file.render import Fitted, Item, Renderer, Section, fit_sections, renderer_for
from assembler.fsutil import (
    Replaced,
    Snapshot,
    atomic_write,
    check_dir,
    check_place,
    read_regular,
    replace_if_unchanged,
)
from assembler.memory.chunks import note_date
from assembler.memory.lifecycle import (
    OpenMemory,
    WarmMemory,
    index_options,
    memory_copy,
    synced_memory,
)
from assembler.memory.recall import memory_floor, recall_memories, repeats, superseded
from assembler.mood.history import KeptHistory, RememberedMoods, remembering
from assembler.mood.model import analyze, load_mood_model, mood_embedder
from assembler.mood.strategy import Strategy, choose_strategy
from assembler.mood.window import MoodReport, Scorer
from assembler.pad.agent_part import AgentInputs, read_agent_inputs, render_agent_part
from assembler.pad.guidance import guidance_for
from assembler.pad.hand_edits import import_into_journal
from assembler.pad.publish import Rendered, publish_ready
from assembler.pad.ready import digest_of
from assembler.redact import redact
from assembler.tokens import TokenCounter, get_counter
from assembler.transcripts.hosts import names_project
from assembler.transcripts.message import Message
from assembler.transcripts.read import TranscriptRead, read_recent, sources_to_read

log = logging.getLogger(__name__)

GENERATOR = f"scratchpad-assembler {__version__}"


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
    # How long each stage took, in milliseconds (transcripts, mood, context, memory, routing;
    # `compose` adds the page): the status page shows them.
    stages: dict[str, float]
    # Whether the window's human messages are in the mood history, scored into it by this run
    # (see `remember_moods`): the run's record then leaves the history alone.
    moods_kept: bool = False


@dataclass
class Assembly(Draft):
    """Everything one run computed, the file text included; `degraded` holds the problems of
    the agent sections too."""

    path: Path = field(default_factory=Path)
    text: str = ""
    # What the run measured (sources, tokens, dropped, degraded, hashes...): kept in the state
    # folder's last-assembly.json; `frontmatter` is the part the file itself carries.
    meta: dict[str, Any] = field(default_factory=dict)
    frontmatter: dict[str, Any] = field(default_factory=dict)
    record: RenderRecord | None = None  # what tells the next run a hand edit of this file
    state_dir: Path | None = None
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
    hosts: Hosts,
    now: datetime,
    memory: OpenMemory | Problem | None,
    transcript_globs: Sequence[str] | None = None,
    remember_moods: bool = False,
    prompt: Message | None = None,
    moods: KeptHistory | None = None,
) -> Draft:
    """Given the config, the hosts whose sessions are read, the clock and the memory index to
    search (synced; see `memory_for`), return the auto part of the assembly (reads only; the
    index is closed unless kept).

    With `remember_moods` the human's zone a transcript showed is kept in the state folder for
    the windows that show none (`learned_zone`), and the window's new human messages are
    scored into the mood history (`.scratchpad/mood.sqlite`) and the mood is read from it: each
    message is scored once, and the file's mood lines, the status page and its charts come from
    the same scores; this is the cycle's one write of the history (`moods_kept` says it was
    done). Without it (a dry run) nothing is written and the window is scored afresh. `moods`
    keeps the history open from one run to the next (the daemon's).
    `transcript_globs` replaces the configured sources for this run. An unreadable source, a
    failing mood model or an index that could not be opened degrades the file (the frontmatter
    says what and why) instead of failing.
    """
    tz = local_timezone(config.time.timezone)
    now = now.astimezone(tz)
    stages: dict[str, float] = {}
    mark = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal mark
        stages[stage] = round((time.perf_counter() - mark) * 1000, 1)
        mark = time.perf_counter()

    learned = read_learned_zone(config.state_dir)
    read = read_recent(
        sources_to_read(
            hosts, config.transcripts.sources, config.workspace, config.state_dir, transcript_globs
        ),
        hosts=hosts,
        base=config.workspace,
        now=now,
        max_messages=config.transcripts.max_messages,
        lookback=config.transcripts.lookback_delta,
        max_files=config.transcripts.max_files,
        fmt=config.transcripts.format,
        # The human's zone is looked for beyond the window until the workspace knows one.
        zone_scan=not config.time.timezone and learned is None,
    )
    heard = read.messages  # what the history may keep: a prompt not yet written is not
    if prompt is not None:
        read = replace(read, messages=with_prompt(read.messages, prompt))
    degraded: list[Problem] = []
    failed = [s for s in read.sources if s.error]
    for source in failed:
        degraded.append(Problem(f"transcript {source.path}", source.error or "", "transcript"))
    lap("transcripts")
    half_life = config.mood.half_life_delta
    mood: MoodReport | None = None
    strategy: Strategy | None = None
    moods_kept = False
    try:
        # The mood model reads the messages' sentence embeddings and hidden states with the
        # bundled model, loaded once per process (the memory search's, when it runs that one).
        embedder = mood_embedder(config.memory.model, batch_size=config.memory.batch_size)
        model = load_mood_model(embedder=embedder)
        scorer: Scorer = model
        if remember_moods:
            scorer = remembering(
                config.state_dir,
                heard,
                scorer,
                config.routing.extra_secret_patterns,
                kept=moods,
            )
            moods_kept = isinstance(scorer, RememberedMoods)  # else the history was unusable
        mood = analyze(read.messages, now=now, half_life=half_life, model=scorer)
        # What the mood model read without (it says so once in the log; the file, each time).
        if model.embedder_failed is not None:
            why = f"read without sentence embeddings: {model.embedder_failed}"
            degraded.append(Problem("mood model", why, "mood"))
        elif model.layer_unavailable is not None:
            degraded.append(Problem("mood model", model.layer_unavailable, "mood"))
    except ModelError as error:
        degraded.append(Problem("mood", str(error), "mood"))
    if mood is not None:
        strategy = choose_strategy(
            mood.combined,
            config.strategy.rules,
            min_confidence=config.strategy.min_confidence,
            fallback=config.strategy.fallback,
        )
    lap("mood")
    active = active_context(
        read.messages,
        read.summaries,
        now=now,
        half_life=half_life,
        workspace=config.workspace,
        names_project=partial(names_project, hosts),
        gap_threshold=SESSION_PAUSE,
    )
    daily: DailyContext | None = None
    try:
        daily = daily_context(config.workspace, config.daily.folder, now, config.daily.tail_bytes)
    except OSError as error:
        degraded.append(Problem("daily note", f"{error}", "daily note"))
    lap("context")
    recall = _recall(config, memory, read.messages, now, degraded)
    lap("memory")
    human = human_zone(read.messages, config.time.timezone, read.zone, learned)
    offset = human.zone.utcoffset(now)
    if remember_moods and human.source == "transcript" and offset:
        # Kept for the windows that show no stamp; a zone in UTC says too little to keep.
        remember_zone(config.state_dir, LearnedZone(offset, human.zone.tzname(now), now))
    times = time_context(
        now,
        human.zone,
        known=human.known,
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
    lap("routing")

    builders: dict[str, Callable[[], Section | None]] = {
        "emotional_context": lambda: mood_section(mood, strategy, now),
        "response_strategy": lambda: strategy_section(strategy),
        "active_context": lambda: active_section(active),
        "relevant_memories": lambda: memories_section(recall),
        "daily_context": lambda: daily_section(daily, config.workspace),
        "time_context": lambda: time_section(times, strategy),
        "routing_hint": lambda: routing_section(
            routing, config.routing.tiers.get("medium"), task=active.working_on is not None
        ),
    }
    sections = [s for name in config.sections.enabled() if (s := builders[name]()) is not None]
    if not read.messages:
        sections = nothing_read(sections, read, active=config.sections.active_context)
    # The file is injected into every turn: a secret or an address the human pasted must not
    # be repeated by it (the Routing Hint says what kind was seen, never the value).
    sections = [redacted(s, config.routing.extra_secret_patterns) for s in sections]
    return Draft(
        now,
        read,
        mood,
        strategy,
        active,
        daily,
        times,
        routing,
        recall,
        sections,
        degraded,
        stages,
        moods_kept=moods_kept,
    )


def compose(config: Config, auto: Draft, agent: AgentInputs) -> Assembly:
    """Given the config, the auto part and the agent sections to show, return the whole file
    under its caps (nothing is written).

    Raise AssemblerError for problems the user must fix (a broken template folder).
    """
    now = auto.now
    started = time.perf_counter()
    tz = local_timezone(config.time.timezone)
    count = get_counter(config.tokens.counter)
    sections = auto.sections
    degraded = [*auto.degraded, *agent.degraded]
    renderer = renderer_for(config)
    expires = now + timedelta(minutes=config.output.ttl_minutes)
    edited_at = agent.sync.at if agent.sync.auto_edited else None
    page = {
        "valid_until": _valid_until(expires, now),
        "ttl_minutes": config.output.ttl_minutes,
        "generator": GENERATOR,
        "auto_notice": _auto_notice(edited_at.astimezone(tz), agent.sync.auto_saved)
        if edited_at
        else "",
        "agent_part": "",
    }
    fields = _frontmatter(config, auto, expires)
    frontmatter_tokens = count(compose_file(fields, ""))
    try:
        # The frontmatter is read too (hosts that inject the raw file): the total cap holds it.
        header = count(renderer.page(sections=[], **page)) + frontmatter_tokens
        began = auto.active.session_start
        # The agent part comes first: the total cap is met by shrinking the auto part, and the
        # agent part gives way (saying so) only when the auto part is down to its header.
        part = render_agent_part(
            agent,
            render=renderer.agent_part,
            count=count,
            agent_cap=config.caps.agent,
            limit=config.caps.total - header - 1,
            session_start=began,
        )
        page["agent_part"] = part.text
        # The page's own lines (title, validity, blank lines between sections) count towards
        # the auto cap too: fit the sections to what is left, and tighten if still over.
        limit = min(config.caps.auto + part.tokens, config.caps.total)
        room = limit - part.tokens - header
        while True:
            fitted = _fit_without_repeats(
                sections,
                renderer,
                count,
                cap=max(room, 0),
                section_caps=config.caps.sections,
                memories=config.memory.top_k,
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
    text = compose_file(fields, body)
    # What a run measured: the state folder's last-assembly.json, `show --json`, the daemon's
    # log; the frontmatter keeps only what the agent needs (see `_frontmatter`).
    meta: dict[str, Any] = {
        **fields,
        "generator": GENERATOR,
        "tokens": {
            "frontmatter": frontmatter_tokens,
            "auto": auto_tokens,
            "agent": part.tokens,
            "total": count(text),
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
            "hits": sum(
                len(section.items)
                for section in fitted.sections
                if section.name == "relevant_memories"
            ),
        },
        "sections": [s.name for s in fitted.sections],
        # When the session read began: a pad write's block tells the sections written before
        # it as this render did (see `ready.agent_text`).
        "session_start": None if began is None else began.isoformat(timespec="seconds"),
        "dropped": fitted.dropped,
        "agent_sections": part.hashes,
        "agent_omitted": part.omitted,
        "auto_sha256": auto_hash(body),
        "body_sha256": body_hash(body),
        "degraded": [problem.to_dict() for problem in degraded],
        "stages_ms": {**auto.stages, "page": round((time.perf_counter() - started) * 1000, 1)},
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
        text=text,
        meta=meta,
        frontmatter=fields,
        record=render_record(text, part.hashes, carried=agent.states is None),
        state_dir=config.state_dir,
        fitted=fitted,
        auto_digest=_auto_digest(fitted.sections),
        secret_patterns=tuple(config.routing.extra_secret_patterns),
    )


# A pause this long between two messages ends a session: the active context's session gap and
# start (`context.active.active_context`), which the agent sections' "before this session"
# is told from.
SESSION_PAUSE = timedelta(minutes=45)


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


def _valid_until(expires: datetime, now: datetime) -> str:
    """When the file expires, as its title says it: the clock time and zone, and the date too
    when that is not today's ("23:55 AEDT", "2026-03-03 00:10 AEDT")."""
    when = f"{expires:%H:%M}" if expires.date() == now.date() else f"{expires:%Y-%m-%d %H:%M}"
    return f"{when} {expires.tzname() or ''}".strip()


def _auto_notice(edited_at: datetime, saved: str | None) -> str:
    """When the auto part was edited by hand, and where what was typed there is kept."""
    return f"{edited_at:%H:%M} (a copy is in {saved})" if saved else f"{edited_at:%H:%M}"


def _frontmatter(config: Config, auto: Draft, expires: datetime) -> dict[str, Any]:
    """Return the fields of the file's frontmatter: what the agent needs of the run (when, how
    long it holds, what it read), in a few tokens. What failed and why is for the user: the
    CLI prints it, and last-assembly.json, `assemble show --format json` and the status page
    keep it."""
    return {
        "updated": auto.now.isoformat(timespec="seconds"),
        "expires": expires.isoformat(timespec="seconds"),
        "ttl_minutes": config.output.ttl_minutes,
        "source": _source_summary(config, auto),
    }


def _source_summary(config: Config, auto: Draft) -> str:
    """Return what the run read, in one line: "2 transcripts, 45 messages; memory 38 chunks"."""
    sources = auto.transcripts.sources
    if not sources:
        read = "no transcripts"
    else:
        failed = sum(1 for source in sources if source.error)
        read = f"{count_of(len(sources), 'transcript')}, "
        read += count_of(len(auto.transcripts.messages), "message")
        read += f" ({failed} unreadable)" if failed else ""
    if auto.recall is not None and auto.recall.chunks_total == 0:
        memory = "no memory notes"
    elif auto.recall is not None:
        memory = f"memory {count_of(auto.recall.chunks_total, 'chunk')}"
    elif config.memory.enabled and config.sections.relevant_memories:
        memory = "memory unavailable"
    else:
        memory = "memory off"
    return f"{read}; {memory}"


def assemble(
    config: Config,
    *,
    hosts: Hosts,
    now: datetime,
    transcript_globs: Sequence[str] | None = None,
) -> Assembly:
    """Given the config, the hosts and the clock, return the assembled SCRATCHPAD.md, writing
    nothing:
    the agent sections are the journal's, hand edits of the file not yet imported (see
    `run_once`), and the memory index searched is a temporary copy brought up to date with the
    memory files (see `lifecycle.memory_copy`). Raise AssemblerError only for problems the user
    must fix (a broken template folder).
    """
    memory = memory_for(config, dry_run=True)
    auto = draft(config, hosts=hosts, now=now, memory=memory, transcript_globs=transcript_globs)
    return _compose_as_read(config, auto)


# A prompt matches a transcript's message when their first this many characters (spaces
# folded) are the same: the hook may send the head of a long prompt the transcript holds whole.
_PROMPT_MATCH_CHARS = 500


def with_prompt(messages: Sequence[Message], prompt: Message) -> list[Message]:
    """Given a window's messages (oldest first) and a prompt the host is about to send, return
    the window with the prompt as its newest human message, unless the transcript holds it
    already: a human message of the same session (when both name one) whose text begins as
    the prompt's, said after the last assistant message. The prompt takes the session's
    source, so it counts in that session."""

    def key(text: str) -> str:
        return " ".join(text.split())[:_PROMPT_MATCH_CHARS]

    wanted = key(prompt.text)
    for message in reversed(messages):
        if message.role == "assistant":
            break
        same_session = None in (message.session_id, prompt.session_id) or (
            message.session_id == prompt.session_id
        )
        if same_session and key(message.text) == wanted:
            return list(messages)
    peers = [m for m in messages if prompt.session_id in (None, m.session_id)]
    if peers:
        last = peers[-1]
        prompt = replace(
            prompt, source=last.source, session_id=prompt.session_id or last.session_id
        )
    return [*messages, prompt]


def _compose_as_read(config: Config, auto: Draft) -> Assembly:
    """Given the config and the auto part's draft, return the assembly with the agent sections
    as the journal and SCRATCHPAD.md hold them now, importing nothing (see `assemble`)."""
    seen, problems = _read_output(config)
    agent = read_agent_inputs(config, now=auto.now, seen=seen)
    agent.degraded[:0] = problems
    return compose(config, auto, agent)


def assemble_prompt(
    config: Config,
    *,
    hosts: Hosts,
    now: datetime,
    prompt: Message,
    memory: WarmMemory | None = None,
    transcript_globs: Sequence[str] | None = None,
    moods: KeptHistory | None = None,
) -> Assembly:
    """Given the config, the hosts, the clock and a prompt the host is about to send, return
    the assembly with the prompt counted as the newest human message (see `with_prompt`):
    its mood, task, strategy and memory queries. Nothing is written about the prompt: the file
    and the ready block stay as they are (the transcript line the host writes is what the next
    assembly reads), and the mood history keeps only the transcripts' messages. The memory
    index is the workspace's (kept warm by `memory`), synced as a run syncs it.
    """
    synced = memory_for(config, warm=memory)
    auto = draft(
        config,
        hosts=hosts,
        now=now,
        memory=synced,
        transcript_globs=transcript_globs,
        remember_moods=True,
        prompt=prompt,
        moods=moods,
    )
    return _compose_as_read(config, auto)


def ready_parts(assembly: Assembly) -> tuple[str, str]:
    """Given an assembly, return the ready block its file gives (see `assembler.pad.ready`)
    and that block's content digest."""
    _, body = split_frontmatter(assembly.text)
    region = find_agent_region(body)
    agent = plain_region(region) if region is not None else ""
    return prefix_text([auto_part(body), agent]), digest_of(assembly.auto_digest, agent)


# How often a write is tried again when SCRATCHPAD.md changed while it was being rendered.
WRITE_ATTEMPTS = 3


def run_once(
    config: Config,
    *,
    hosts: Hosts,
    now: datetime,
    dry_run: bool = False,
    transcript_globs: Sequence[str] | None = None,
    memory: WarmMemory | None = None,
    moods: KeptHistory | None = None,
) -> Assembly:
    """Given the config, the hosts whose sessions are read and the clock, assemble and (unless
    `dry_run`) write SCRATCHPAD.md.
    `memory` and `moods` keep the index and the mood history open for the next run (the
    daemon's).

    Before the render, hand edits of the file and the newest scratchpad entry each host keeps
    in its sessions go to the journal (not on a dry run, which writes nothing). The file is
    replaced only if it still holds what was read before the render: when it changed
    meanwhile (an agent editing it),
    the edits are imported and the page rendered again, up to WRITE_ATTEMPTS times; after
    that it is left as it is (not `written`, and `degraded` says why) for the next run.
    Raise AssemblerError if the file cannot be written.
    """
    if dry_run:
        return assemble(config, hosts=hosts, now=now, transcript_globs=transcript_globs)
    synced = memory_for(config, warm=memory)
    auto = draft(
        config,
        hosts=hosts,
        now=now,
        memory=synced,
        transcript_globs=transcript_globs,
        remember_moods=True,
        moods=moods,
    )
    external = section_entries(hosts, config, auto.transcripts.sources, auto.now)
    assembly: Assembly | None = None
    late: bytes | None = None
    for _ in range(WRITE_ATTEMPTS):
        seen, problems = _read_output(config)
        if late is not None:
            # Written into the old file between the check and the swap: import it too.
            import_into_journal(config, now=auto.now, seen=Snapshot(late, time.time()))
            late = None
        sync, imported = import_into_journal(config, now=auto.now, seen=seen, external=external)
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
    """Publish the ready block of the file just written, from what was rendered (see
    `assembler.pad.ready`). A failure is logged, not raised: the file is written, and hooks
    fall back to reading it."""

    _, body = split_frontmatter(assembly.text)
    region = find_agent_region(body)
    rendered = Rendered(
        auto=auto_part(body),
        auto_digest=assembly.auto_digest,
        expires=datetime.fromisoformat(assembly.meta["expires"]),
        guidance=guidance_for(config),
    )
    try:
        publish_ready(
            config, assembly.now, plain_region(region) if region is not None else "", rendered
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

    try:
        seen = read_regular(assembly.path)
    except OSError:
        seen = Snapshot(None)
    _write(assembly, None, replace_file, seen)


def _write_if_unchanged(assembly: Assembly, config: Config, seen: Snapshot) -> Replaced:
    return _write(
        assembly,
        config.workspace,
        lambda path, data: replace_if_unchanged(path, data, seen.data),
        seen,
    )


def _write(
    assembly: Assembly,
    workspace: Path | None,
    replace_file: Callable[[Path, bytes], Replaced],
    seen: Snapshot,
) -> Replaced:
    """Replace the file with the assembly's text, with the record of the last assembly written
    around the swap (see `_record`): before it, the new render pending beside the renders
    written so far; after it, the new render first if the swap was done."""
    path = assembly.path
    written = _written_records(assembly, seen)
    _record(assembly, written, pending=True)
    try:
        if workspace is not None:
            check_place(path, workspace)
        path.parent.mkdir(parents=True, exist_ok=True)
        done = replace_file(path, assembly.text.encode("utf-8", "surrogatepass"))
    except UnsafePathError:
        _record(assembly, written, pending=False)
        raise
    except OSError as error:
        _record(assembly, written, pending=False)
        raise AssemblerError(
            f"Cannot write {path} ({error.strerror or error}); check that the folder "
            "is writable or change 'output.path'"
        ) from error
    assembly.written = assembly.written or done.done
    if done.done and assembly.record is not None:
        new = assembly.record
        written = [new, *(r for r in written if r.body_sha256 != new.body_sha256)]
    _record(assembly, written, pending=False)
    return done


def _written_records(assembly: Assembly, seen: Snapshot) -> list[RenderRecord]:
    """Return the records of the renders written so far, newest first: those recorded, and a
    render left pending by a run that stopped after its swap (the file, as read, holds it)."""
    if assembly.state_dir is None:
        return []
    state = read_assembly_state(assembly.state_dir)
    if state is None:
        return []
    if state.pending is not None and seen.data is not None:
        frontmatter, meta, body = parse_loosely(seen.data)
        if file_record(state, frontmatter, body, meta) is state.pending:
            return [state.pending, *state.renders]
    return list(state.renders)


def _record(assembly: Assembly, written: list[RenderRecord], *, pending: bool) -> None:
    """Write last-assembly.json: the records of the renders written, with the assembly's
    render pending when its swap is about to happen, and what the assembly measured.

    When it cannot be written the old record is removed (best effort): without one, the next
    run compares the file with the journal instead of trusting hashes of another render.
    """
    if assembly.state_dir is None:
        return
    state = AssemblyState(
        written,
        assembly.record if pending else None,
        {**assembly.meta, "written": assembly.written},
    )
    try:
        # The pending record must be on disk before the swap; the one after it need not be:
        # lost in a crash, the pending record (the file holds its render) stands in for it.
        write_assembly_state(assembly.state_dir, state, durable=pending)
    except OSError as error:
        log.warning("cannot write the record of the assembly: %s", error)
        with contextlib.suppress(OSError):
            check_dir(assembly.state_dir)  # never through a link: it would delete elsewhere
            assembly_state_path(assembly.state_dir).unlink()


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
            floor=memory_floor(config),
            spare=config.memory.top_k,
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


# A memory line the cap would drop is first cut down to this many characters (its place,
# subject and the start of its line): a shortened answer beats none.
MEMORY_LINE_SHORTEST = 100
# The same for a line of today's note: its clock time and what it starts with.
DAILY_LINE_SHORTEST = 60


def _fit_without_repeats(
    sections: Sequence[Section],
    renderer: Renderer,
    count: TokenCounter,
    *,
    cap: int,
    section_caps: Mapping[str, int],
    memories: int,
) -> Fitted:
    """Given the sections, return them fitted to the caps (see `fit_sections`) with at most
    `memories` memory lines, best first, and none that only repeats a line the fitted file
    shows or states an older fact on the subject of one of its lines (see `_shown_elsewhere`).
    A memory is judged against what is left after the caps: one whose daily-note line the cap
    cut stays. A repeat's place goes to the next (spare) memory, and every change moves what
    fits, so the fit is done again until nothing changes. Under a cap the weakest memory line
    is shortened, then dropped, before a stronger one is touched."""
    repeated: dict[str, tuple[str, str]] = {}  # place of each line left out: (text, why)

    def shown(section: Section) -> Section:
        hits = [i for i in section.items if i.priority < SPARE_PRIORITY]
        kept = [i for i in hits if _place(i.text) not in repeated]
        spares = [
            i
            for i in section.items
            if i.priority >= SPARE_PRIORITY and _place(i.text) not in repeated
        ]
        kept = [*kept, *spares[: len(hits) - len(kept)]]
        # Best first: an item's priority is its hit's rank by relevance (`memories_section`);
        # a spare line in a repeat's place ranks where its relevance puts it. Sorted before
        # the count is held to `memories`, so that the lines left out are the weakest.
        kept.sort(key=lambda item: item.priority % SPARE_PRIORITY)
        kept = kept[:memories]
        items = tuple(replace(item, priority=3 + rank) for rank, item in enumerate(kept))
        return replace(section, items=items)

    while True:
        current = [shown(s) if s.name == "relevant_memories" else s for s in sections]
        current = [s for s in current if s.items]
        fitted = fit_sections(
            current,
            renderer,
            count,
            cap=cap,
            section_caps=section_caps,
            shortest={
                "relevant_memories": MEMORY_LINE_SHORTEST,
                "daily_context": DAILY_LINE_SHORTEST,
            },
        )
        drop = _shown_elsewhere(fitted.sections)
        if not drop:
            fitted.dropped.extend(
                f"relevant_memories: {text[:40]}… ({why})" for text, why in repeated.values()
            )
            return fitted
        for item, why in drop:
            original = next(
                i.text
                for s in sections
                if s.name == "relevant_memories"
                for i in s.items
                if _place(i.text) == _place(item.text)
            )
            repeated[_place(item.text)] = (original, why)


def _place(text: str) -> str:
    """Given a memory line, return where its hit is (its `path:lines`), which no cut changes."""
    return text.split("` ", 1)[0]


def _shown_elsewhere(sections: Sequence[Section]) -> list[tuple[Item, str]]:
    """Return the memory lines of the sections that only repeat another of their lines (see
    `recall.repeats`: the Active Context lines are the human's requests, the others
    statements), or that a newer line of today's note in Daily Context supersedes (see
    `recall.superseded`), each with why."""
    requests = [i.text for s in sections if s.name == "active_context" for i in s.items]
    statements = [
        i.text
        for s in sections
        if s.name not in ("active_context", "relevant_memories")
        for i in s.items
    ]
    daily = next((s for s in sections if s.name == "daily_context"), None)
    today = None
    if daily is not None:
        heading = next((i.text for i in daily.items if i.heading), "")
        today = note_date(heading.split(" ", 1)[0])
    newest = [i.text for i in daily.items if not i.heading] if daily is not None else []
    drop: list[tuple[Item, str]] = []
    for section in sections:
        if section.name != "relevant_memories":
            continue
        for item in section.items:
            line = item.gist if item.gist is not None else item.text.split("` ", 1)[-1]
            path = _place(item.text).lstrip("`").rsplit(":", 1)[0]
            if repeats(line, statements, requests):
                drop.append((item, "already shown"))
            elif today is not None and superseded(line, note_date(path), today, newest):
                drop.append((item, "superseded by a newer line of today"))
            else:
                statements.append(line)  # a later memory may repeat this one
    return drop


def _source_entry(source: Any, workspace: Path) -> dict[str, Any]:
    entry = {
        "path": display_path(Path(source.path), workspace),
        "format": source.format,
        "messages": source.messages,
        "bad_lines": source.bad_lines,
    }
    if source.error:
        entry["error"] = source.error
    return entry
