"""The first step of an assembly: the auto part (the sections computed from transcripts, the
mood model, the context, the memory search, the routing), which does not depend on
SCRATCHPAD.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial

from assembler.assembly.hosts import Hosts
from assembler.assembly.routing import RoutingHint, route
from assembler.assembly.sections import (
    MemoryRecall,
    active_section,
    daily_section,
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
from assembler.errors import AssemblerError, ModelError, Problem
from assembler.file.render import Section
from assembler.memory.lifecycle import (
    OpenMemory,
    WarmMemory,
    index_options,
    memory_copy,
    synced_memory,
)
from assembler.memory.recall import memory_floor, recall_memories
from assembler.mood.history import KeptHistory, RememberedMoods, remembering
from assembler.mood.model import analyze, load_mood_model, mood_embedder
from assembler.mood.strategy import Strategy, choose_strategy
from assembler.mood.window import MoodReport, Scorer
from assembler.transcripts.hosts import names_project
from assembler.transcripts.message import Message
from assembler.transcripts.read import TranscriptRead, read_recent, sources_to_read

log = logging.getLogger(__name__)


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
    # `cap` adds the page): the status page shows them.
    stages: dict[str, float]
    # Whether the window's human messages are in the mood history, scored into it by this run
    # (see `remember_moods`): the run's record then leaves the history alone.
    moods_kept: bool = False


# A pause this long between two messages ends a session: the active context's session gap and
# start (`context.active.active_context`), which the agent sections' "before this session"
# is told from.
SESSION_PAUSE = timedelta(minutes=45)


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
    index is closed unless kept). `prompt` is a message the host is about to send, counted as
    the newest human message (see `with_prompt`).

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
