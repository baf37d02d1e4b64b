"""What the status page shows, as JSON data: the file now, the mood of a window, the memory
search, the agent's sections and the parked observations. The same functions as the CLI's
(`show`, `check`, `pad read`, `obs ls`, `search --explain`) produce it; the requests read only
what the program keeps (the file, the journal, the mood history, the assembly log, the
observation store), never the transcripts.

Everything here is workspace data, which the agent may have written: it goes out as data
(JSON, escaped by the page) except the file's Markdown, which is rendered with raw HTML and
images off (`render_markdown`).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from assembler.assembly.log import AssemblyLog, log_path
from assembler.clock import format_duration
from assembler.daemon.service import lock_holder
from assembler.errors import AssemblerError, ScratchpadError
from assembler.file.codec import body_prefix, last_diagnostics, read_scratchpad
from assembler.memory.recall import (
    conversation_queries,
    hit_record,
    index_options,
    index_path,
    open_memory,
    recall_memories,
    shown_hit,
)
from assembler.mood.history import MoodHistory, MoodRecord, history_path, window_report
from assembler.mood.strategy import choose_strategy
from assembler.mood.window import MIN_SECONDARY, MoodState
from assembler.observations.store import store_for
from assembler.pad.journal import ordered
from assembler.pad.sections import scratchpad_for
from assembler.transcripts.read import default_sources, read_recent

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

    from assembler.config.schema import Config
    from assembler.transcripts.message import Message

# The longest window the Mood page asks for: a month.
MAX_HOURS = 24 * 31
# Journal events listed per section.
HISTORY_EVENTS = 20
# Points marked as the ones that moved the mood most, per speaker.
MOVERS = 3
HUMAN = "human"


@dataclass
class Status:
    """The open state a status page reads: the config, the clock and the databases it keeps."""

    config: Config
    clock: Any  # () -> aware datetime
    history: MoodHistory
    runs: AssemblyLog
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, config: Config, clock: Any) -> Status:
        """Given the config and a clock, open the workspace's mood history and assembly log."""
        history = MoodHistory(
            history_path(config.state_dir),
            extra_secret_patterns=config.routing.extra_secret_patterns,
        )
        try:
            runs = AssemblyLog(log_path(config.state_dir))
        except BaseException:
            history.close()
            raise
        return cls(config, clock, history, runs)

    def close(self) -> None:
        self.history.close()
        self.runs.close()


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # No raw HTML (it comes out escaped) and no images (a remote one would tell its server
    # that the page was looked at); markdown-it refuses javascript: and data: links itself.
    return MarkdownIt("commonmark", {"html": False}).disable("image")


def render_markdown(text: str) -> str:
    """Given Markdown from the workspace, return it as HTML that cannot run or load anything."""
    return str(_markdown().render(text))


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment is not None else None


# --- Now ------------------------------------------------------------------------------------


def now_data(status: Status, now: datetime) -> dict[str, Any]:
    """Given the status and the clock, return the Now page's data: SCRATCHPAD.md as the agent
    reads it (the block hosts prepend, rendered), fresh or stale with the time left, the last
    assemblies and whether a daemon keeps the file fresh."""

    config = status.config
    data: dict[str, Any] = {"now": _iso(now), "path": str(config.output_path)}
    try:
        pad = read_scratchpad(config.output_path)
    except ScratchpadError as error:
        data["file"] = {"error": str(error)}
    else:
        fresh = pad.is_fresh(now)
        left = pad.expires - now
        block = body_prefix(pad.body)
        meta, current = last_diagnostics(config.state_dir, pad.body)
        data["file"] = {
            "fresh": fresh,
            "updated": _iso(pad.updated),
            "expires": _iso(pad.expires),
            "left": format_duration(left) if fresh else None,
            "expired_ago": None if fresh else format_duration(-left),
            "tokens": meta.get("tokens"),
            "messages_read": meta.get("messages_read"),
            "sections": meta.get("sections"),
            "dropped": meta.get("dropped"),
            "degraded": meta.get("degraded"),
            "diagnostics_current": current,
            "markdown": block,
            "html": render_markdown(block),
        }
    runs = [run.to_dict() for run in status.runs.last(10)]
    for run in runs:
        run.pop("memory", None)
    data["runs"] = runs
    holder = lock_holder(config.state_dir)
    data["daemon"] = {"running": holder is not None, "pid": holder or None}
    return data


# --- Mood -----------------------------------------------------------------------------------


def _labels(record: MoodRecord) -> dict[str, float]:
    scores = record.mood.scores
    shown = {k: round(v, 3) for k, v in scores.items() if v >= MIN_SECONDARY and k != "neutral"}
    return dict(sorted(shown.items(), key=lambda kv: -kv[1]))


def _point(record: MoodRecord) -> dict[str, Any]:
    assert record.at is not None
    mood = record.mood
    return {
        "id": record.id,
        "at": _iso(record.at),
        "t": int(record.at.timestamp() * 1000),
        "valence": round(mood.valence, 3),
        "arousal": round(mood.arousal, 3),
        "primary": mood.primary,
        "primary_score": round(mood.primary_score, 3),
        "labels": _labels(record),
        "text": record.text,
        "length": record.length,
        "session": record.session_id,
        "moved": False,
    }


def _mark_movers(points: list[dict[str, Any]]) -> None:
    """Mark the points whose valence or arousal moved most from the speaker's point before."""
    changes = [
        (abs(b["valence"] - a["valence"]) + abs(b["arousal"] - a["arousal"]), i + 1)
        for i, (a, b) in enumerate(itertools.pairwise(points))
    ]
    for _, index in sorted(changes, reverse=True)[:MOVERS]:
        points[index]["moved"] = True


def _state(state: MoodState) -> dict[str, Any]:
    return {**state.summary(), "explain": state.explain}


def _calibration() -> Any:
    from assembler.mood.model import load_mood_model

    try:
        return load_mood_model().window_calibration
    except AssemblerError:
        return None


def mood_data(
    status: Status, now: datetime, hours: float = 24.0, until: datetime | None = None
) -> dict[str, Any]:
    """Given the status, the clock, a window length in hours (at most MAX_HOURS) and when it
    ends (default and at most: now), return the Mood page's data from the mood history: each
    human speaker's messages with valence, arousal and labels; the mood over the assembly's
    window at its end and the strategy it gives; and when the latest message was said.
    Raise ValueError if `hours` is not positive, or `until` so early that the span would start
    before the year 1."""

    if not (isinstance(hours, int | float) and math.isfinite(hours) and hours > 0):
        raise ValueError(f"hours must be a positive number, got {hours!r}")
    hours = min(float(hours), MAX_HOURS)
    config = status.config
    end = min(until, now) if until is not None else now
    lookback = config.transcripts.lookback_delta
    try:
        start = end - timedelta(hours=hours)
        window_start = end - lookback if lookback is not None else None
    except OverflowError as error:
        raise ValueError(
            f"until={_iso(until)}: too early, the span would start before the year 1; give a "
            "later time"
        ) from error
    records = [r for r in status.history.between(start, end) if r.at is not None]
    speakers: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        speakers.setdefault(record.speaker or HUMAN, []).append(_point(record))
    for points in speakers.values():
        _mark_movers(points)
    window = [r for r in records if window_start is None or r.at is None or r.at >= window_start]
    window = window[-config.transcripts.max_messages :]
    report = window_report(
        window, now=end, half_life=config.mood.half_life_delta, calibration=_calibration()
    )
    strategy = choose_strategy(
        report.combined,
        config.strategy.rules,
        min_confidence=config.strategy.min_confidence,
        fallback=config.strategy.fallback,
    )
    return {
        "now": _iso(now),
        "start": _iso(start),
        "end": _iso(end),
        # Not cut to the second: as `until`, it must include the message itself.
        "latest": latest.isoformat() if (latest := status.history.latest(now)) else None,
        "hours": hours,
        "messages": len(records),
        "speakers": [{"name": name, "points": points} for name, points in speakers.items()],
        "window": {
            "messages": len(window),
            "combined": _state(report.combined),
            "speakers": {name: _state(s) for name, s in report.speakers.items()},
        },
        "strategy": {
            "rule": strategy.mood,
            "style": strategy.style,
            "tone": strategy.tone,
            "verbosity": strategy.verbosity,
            "preamble": strategy.preamble,
            "note": strategy.note,
            "reason": strategy.reason,
            "no_signal": strategy.no_signal,
        },
    }


# --- Memory ---------------------------------------------------------------------------------


def memory_data(status: Status, now: datetime) -> dict[str, Any]:
    """Given the status and the clock, return the Memory page's data: the queries the
    conversation produced, the hits with their vector, BM25 and recency parts, and what the
    caps dropped, from the last logged assembly; without one, the queries the mood history's
    recent messages give and what the file says it showed and dropped."""

    config = status.config
    data: dict[str, Any] = {"now": _iso(now), "enabled": config.memory.enabled}
    try:
        meta, _ = last_diagnostics(config.state_dir, read_scratchpad(config.output_path).body)
    except ScratchpadError:
        meta = {}
    runs = [run for run in status.runs.last(20) if run.record.get("memory") is not None]
    if runs:
        run = runs[0]
        memory = run.record["memory"]
        data["source"] = {"kind": "assembly", "at": _iso(run.at), "reason": run.reason}
        data["queries"] = memory.get("queries", [])
        data["hits"] = memory.get("hits", [])
        data["explain"] = memory.get("explain", [])
        data["chunks"] = memory.get("chunks")
        data["dropped"] = run.record.get("dropped") or []
        return _marked(data, config)
    lookback = config.transcripts.lookback_delta
    start = now - lookback if lookback is not None else now - timedelta(hours=MAX_HOURS)
    records = status.history.between(start, now)[-config.memory.query_messages :]
    messages = [r.message() for r in records]
    data["source"] = {"kind": "history", "at": None, "reason": None}
    data["queries"] = conversation_queries(messages, max_messages=config.memory.query_messages)
    data["hits"], data["explain"] = _keyword_recall(config, messages, now)
    memory_meta = meta.get("memory")
    data["chunks"] = memory_meta.get("chunks") if isinstance(memory_meta, dict) else None
    data["dropped"] = meta.get("dropped") or []
    return _marked(data, config)


def _marked(data: dict[str, Any], config: Config) -> dict[str, Any]:
    """Mark each hit shown in the file or dropped by the caps (the file lists what it dropped
    by section and first words, a memory by its place)."""
    dropped = [d for d in data["dropped"] if isinstance(d, str)]
    for hit in data["hits"]:
        where = f"`{hit.get('path')}:{hit.get('start_line')}-{hit.get('end_line')}`"
        hit["in_file"] = not any(where in item for item in dropped)
    data["caps"] = {"auto": config.caps.auto, "total": config.caps.total}
    return data


def _keyword_recall(
    config: Config, messages: Sequence[Message], now: datetime
) -> tuple[list[dict[str, Any]], list[str]]:
    """Given the recent messages, return the hits the memory index gives them on keywords
    (BM25) alone, as an assembly picks them, without loading the embedding model; and why."""

    why = [
        "keyword (BM25) parts only: the vector parts are logged with each assembly of the "
        "daemon (assemble daemon)"
    ]
    if not config.memory.enabled or not index_path(config).is_file():
        return [], ["no memory index yet: an assembly builds it"]
    index, _ = open_memory(config, embedder_off=True)
    try:
        result = recall_memories(
            index,
            messages,
            k=config.memory.top_k,
            max_messages=config.memory.query_messages,
            now=now,
            **index_options(config),
        )
    finally:
        index.close()
    patterns = config.routing.extra_secret_patterns
    hits = [hit_record(shown_hit(hit, patterns), explain=True) for hit in result.hits]
    return hits, why + result.explain


# --- Sections -------------------------------------------------------------------------------


def sections_data(status: Status, now: datetime) -> dict[str, Any]:
    """Given the status and the clock, return the Sections page's data: each agent and
    subsystem section with its size against its cap, its age and time to live, and its
    history from the journal."""

    config = status.config
    pad = scratchpad_for(config, now=lambda: now)
    events = pad.journal.events()
    states = ordered(pad.state().values())
    by_section: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_section.setdefault(event.section, []).append(
            {
                "at": _iso(event.time),
                "action": event.action,
                "source": event.source,
                "tokens": pad.count(event.content) if event.content else 0,
            }
        )
    sections = []
    for state in states:
        expires = state.expires
        sections.append(
            {
                "name": state.name,
                "kind": state.kind,
                "source": state.source,
                "tokens": pad.count(state.content),
                "cap": pad.cap_of(state.name),
                "updated": _iso(state.updated),
                "age": format_duration(now - state.updated),
                "expires": _iso(expires),
                "ttl_left": format_duration(expires - now) if expires is not None else None,
                "content": state.content,
                "history": by_section.get(state.name, [])[-HISTORY_EVENTS:][::-1],
            }
        )
    agent_states = {s.name: s for s in states}
    return {
        "now": _iso(now),
        "agent_tokens": pad.agent_tokens(agent_states),
        "agent_cap": pad.agent_cap,
        "sections": sections,
    }


# --- Observations ---------------------------------------------------------------------------


def observations_data(status: Status, now: datetime) -> dict[str, Any]:
    """Given the status and the clock, return the Observations page's data: the live parked
    outputs of every turn with their size, turn and expiry (what `assemble obs ls --all`
    lists)."""

    with store_for(status.config) as store:
        entries = store.entries(all_turns=True, now=now)
    items = []
    for entry in entries:
        item = entry.to_dict()
        item["summary"] = entry.summary
        item["expires_in"] = format_duration(entry.expires - now)
        items.append(item)
    return {"now": _iso(now), "entries": items}


# --- Filling the history --------------------------------------------------------------------


def fill_history(status: Status, now: datetime) -> int:
    """Given the status and the clock, read the newest `transcripts.max_messages` messages
    (from the files' ends, as an assembly does, but however old they are) and score the human
    ones the mood history does not hold yet; return how many were added. The page calls it
    when a transcript changed, never per request."""
    from assembler.mood.model import load_mood_model

    config = status.config
    transcripts = config.transcripts
    read = read_recent(
        transcripts.sources or default_sources(config.workspace, config.state_dir),
        base=config.workspace,
        now=now,
        max_messages=transcripts.max_messages,
        # The newest messages however old: the history is a record, not the assembly's window.
        lookback=None,
        max_files=transcripts.max_files,
        fmt=transcripts.format,
    )
    if not status.history.missing(read.messages):
        return 0
    return status.history.record(read.messages, load_mood_model())


def watched_paths(config: Config) -> Sequence[str]:
    """Given the config, return the transcript globs whose files the page watches."""

    return config.transcripts.sources or default_sources(config.workspace, config.state_dir)
