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
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from assembler.assembly.log import AssemblyLog, Run, log_path
from assembler.clock import format_duration
from assembler.daemon.lock import lock_holder
from assembler.delivery.report import delivery_report, describe, has_record
from assembler.errors import AssemblerError, ScratchpadError
from assembler.file.codec import body_prefix, read_scratchpad
from assembler.file.records import last_diagnostics
from assembler.fsutil import load_json
from assembler.hosts.registry import HOSTS
from assembler.memory.lifecycle import index_options, index_path, open_memory
from assembler.memory.recall import conversation_queries, hit_record, recall_memories, shown_hit
from assembler.mood.history import (
    MoodHistory,
    MoodRecord,
    history_path,
    mood_record,
    window_report,
)
from assembler.mood.strategy import choose_strategy
from assembler.mood.window import MIN_SECONDARY, MoodState
from assembler.observations.store import store_for
from assembler.pad.journal import ordered
from assembler.pad.sections import scratchpad_for
from assembler.state_db import open_state_db
from assembler.transcripts.read import read_recent, sources_to_read

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
# The agent writes the file and the state folder, so every answer is bounded, whatever they
# hold. Markdown rendered: markdown-it takes about 0.3 s on 32 KiB of its worst input
# (unclosed brackets, emphasis runs) and grows faster than the text beyond; the block is about
# 10 KiB under the default caps.
MAX_MARKDOWN_CHARS = 32 * 1024
# Assemblies listed per answer of /api/now (`limit`), and the most one answer lists.
RUNS_SHOWN = 10
MAX_RUNS = 100
# A logged run's record larger than this (characters of JSON; a run logs a few KiB) is listed
# without it: it was not written by an assembly.
MAX_RUN_RECORD_CHARS = 256 * 1024
# Mood points per answer of /api/mood (`limit`), the newest of the span first.
MOOD_POINTS = 5000
MAX_MOOD_POINTS = 20000
# Observations per answer of /api/observations (`limit`).
OBSERVATIONS_SHOWN = 500
MAX_OBSERVATIONS = 2000


@dataclass
class Status:
    """The open state a status page reads: the config, the clock and the databases it keeps,
    with a read connection to each for the pages of rows the API lists (`pages`)."""

    config: Config
    clock: Any  # () -> aware datetime
    history: MoodHistory
    runs: AssemblyLog
    pages: Pages
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, config: Config, clock: Any) -> Status:
        """Given the config and a clock, open the workspace's mood history and assembly log.
        Raise WorkspaceError (or UnsafePathError) if one cannot be opened."""
        history = MoodHistory(
            history_path(config.state_dir),
            extra_secret_patterns=config.routing.extra_secret_patterns,
        )
        runs: AssemblyLog | None = None
        try:
            runs = AssemblyLog(log_path(config.state_dir))
            pages = Pages.open(config)
        except BaseException:
            history.close()
            if runs is not None:
                runs.close()
            raise
        return cls(config, clock, history, runs, pages)

    def close(self) -> None:
        self.history.close()
        self.runs.close()
        self.pages.close()


class Pages:
    """Bounded reads of the mood history and the assembly log: a page of rows at a time, a
    run's record only when it is of a size an assembly writes (thread-safe). The databases'
    own classes read whole spans; the agent can fill them with millions of rows or huge ones.
    """

    def __init__(self, moods: sqlite3.Connection, runs: sqlite3.Connection) -> None:
        self._moods = moods
        self._runs = runs
        self._lock = threading.Lock()

    @classmethod
    def open(cls, config: Config) -> Pages:
        """Given the config, open read connections to the mood history and the assembly log
        (already set up by their own classes). Raise WorkspaceError if one cannot be opened."""
        moods = open_state_db(history_path(config.state_dir), "the mood history")
        try:
            runs = open_state_db(log_path(config.state_dir), "the assembly log")
        except BaseException:
            moods.close()
            raise
        return cls(moods, runs)

    def close(self) -> None:
        with self._lock:
            self._moods.close()
            self._runs.close()

    def runs(
        self, limit: int, before: int | None = None
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Given how many runs to list and a run id (None: the newest), return the runs logged
        before it, newest first, as `Run.to_dict` gives them with their `id` (a record larger
        than MAX_RUN_RECORD_CHARS is left out and `too_large` is true), and the id to pass as
        `before` for the next page (None: no more)."""
        with self._lock:
            # The record's first MAX_RUN_RECORD_CHARS + 1 characters tell whether it is too
            # large without handing a huge one to Python (SQLite still pages through it).
            rows = self._runs.execute(
                "SELECT id, at, reason, seconds, CASE WHEN length(substr(record, 1, ?)) <= ? "
                "THEN record END FROM runs WHERE id < ? ORDER BY id DESC LIMIT ?",
                (
                    MAX_RUN_RECORD_CHARS + 1,
                    MAX_RUN_RECORD_CHARS,
                    before if before is not None else 2**63 - 1,
                    limit + 1,
                ),
            ).fetchall()
        listed = []
        for run_id, at, reason, seconds, text in rows[:limit]:
            record: Any = {}
            if text is not None:
                try:
                    record = load_json(text)  # bounded depth: the agent can write it
                except ValueError:
                    record = {}
            run = Run(
                datetime.fromtimestamp(at, UTC),
                str(reason),
                float(seconds),
                record if isinstance(record, dict) else {},
            ).to_dict()
            run["id"] = int(run_id)
            if text is None:
                run["too_large"] = True
            listed.append(run)
        more = len(rows) > limit and bool(listed)
        return listed, listed[-1]["id"] if more else None

    def mood_count(self, start: datetime, end: datetime) -> int:
        """Given a span of time, return how many messages of the history were said in it."""
        with self._lock:
            row = self._moods.execute(
                "SELECT count(*) FROM moods WHERE at >= ? AND at <= ?",
                (start.timestamp(), end.timestamp()),
            ).fetchone()
        return int(row[0])

    def newest_moods(
        self, start: datetime, end: datetime, limit: int, before: MoodCursor | None = None
    ) -> tuple[list[MoodRecord], MoodCursor | None]:
        """Given a span of time (both ends included), how many messages to return and a cursor
        (None: from the end of the span), return the newest `limit` messages said in the span
        before the cursor, oldest first, and the cursor of the page before them (None: this
        page holds the span's oldest message)."""
        where = "at >= ? AND at <= ?"
        values: list[Any] = [start.timestamp(), end.timestamp()]
        if before is not None:
            where += " AND (at < ? OR (at = ? AND rowid < ?))"
            values += [before.at, before.at, before.rowid]
        with self._lock:
            rows = self._moods.execute(
                f"SELECT rowid, {_MOOD_COLUMNS} FROM moods WHERE {where} "
                "ORDER BY at DESC, rowid DESC LIMIT ?",
                (*values, limit + 1),
            ).fetchall()
        page = rows[:limit]
        cursor = MoodCursor(float(page[-1][2]), int(page[-1][0])) if len(rows) > limit else None
        return [mood_record(row[1:]) for row in reversed(page)], cursor


_MOOD_COLUMNS = (
    "id, at, speaker, session_id, source, text, length, primary_label, primary_score, "
    "secondary_label, secondary_score, valence, arousal, compound, scores"
)


@dataclass(frozen=True)
class MoodCursor:
    """Where a page of the mood history ends: its oldest message's time and row."""

    at: float
    rowid: int

    def text(self) -> str:
        return f"{self.at!r}:{self.rowid}"

    @classmethod
    def parse(cls, text: str) -> MoodCursor:
        """Given a cursor as `text` gives it, return it. Raise ValueError if it is not one."""
        at, _, rowid = text.partition(":")
        try:
            cursor = cls(float(at), int(rowid))
        except ValueError as error:
            raise ValueError(f"before={text!r}: give the `next` of an earlier answer") from error
        if not math.isfinite(cursor.at):
            raise ValueError(f"before={text!r}: give the `next` of an earlier answer")
        return cursor


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # No raw HTML (it comes out escaped) and no images (a remote one would tell its server
    # that the page was looked at); markdown-it refuses javascript: and data: links itself.
    return MarkdownIt("commonmark", {"html": False}).disable("image")


def render_markdown(text: str) -> str:
    """Given Markdown from the workspace, return it as HTML that cannot run or load anything."""
    return str(_markdown().render(text))


def bounded_markdown(text: str, limit: int = MAX_MARKDOWN_CHARS) -> tuple[str, bool]:
    """Given Markdown from the workspace, return at most its first `limit` characters (cut at
    a line end where one keeps most of them) and whether it was cut."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    line = cut.rfind("\n")
    return (cut[:line] if line >= limit * 4 // 5 else cut), True


def _size(chars: int) -> str:
    return f"{chars / 1024:,.0f} KiB" if chars < 1024 * 1024 else f"{chars / 1048576:,.1f} MiB"


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment is not None else None


# --- Now ------------------------------------------------------------------------------------


def now_data(
    status: Status, now: datetime, limit: int = RUNS_SHOWN, before: int | None = None
) -> dict[str, Any]:
    """Given the status, the clock, how many assemblies to list and a run id (None: the
    newest), return the Now page's data: SCRATCHPAD.md as the agent reads it (the block hosts
    prepend, its first MAX_MARKDOWN_CHARS rendered), fresh or stale with the time left, the
    assemblies logged before that run and whether a daemon keeps the file fresh.
    Raise ValueError if `limit` is not from 1 to MAX_RUNS."""
    if not 1 <= limit <= MAX_RUNS:
        raise ValueError(f"limit={limit}: give a number of runs from 1 to {MAX_RUNS}")

    config = status.config
    data: dict[str, Any] = {"now": _iso(now), "path": str(config.output_path)}
    try:
        pad = read_scratchpad(config.output_path)
    except ScratchpadError as error:
        data["file"] = {"error": str(error)}
    else:
        until = pad.page.fresh_until(config.output.ttl, now) or pad.updated
        fresh = now < until
        left = until - now
        block = body_prefix(pad.body)
        meta, current = last_diagnostics(config.state_dir, pad.body)
        shown, cut = bounded_markdown(block)
        rendered = render_markdown(shown)
        if cut:
            # Our own words (sizes only): no workspace text goes into the HTML unrendered.
            size, whole = _size(len(shown)), _size(len(block))
            rendered += f'<p class="note">Cut: the first {size} of {whole} are shown.</p>\n'
        data["file"] = {
            "fresh": fresh,
            "updated": _iso(pad.updated),
            "expires": _iso(until),
            "left": format_duration(left) if fresh else None,
            "expired_ago": None if fresh else format_duration(-left),
            "tokens": meta.get("tokens"),
            "messages_read": meta.get("messages_read"),
            "sections": meta.get("sections"),
            "dropped": meta.get("dropped"),
            "degraded": meta.get("degraded"),
            "diagnostics_current": current,
            "markdown": shown,
            "markdown_length": len(block),
            "markdown_cut": cut,
            "html": rendered,
        }
    runs, following = status.pages.runs(limit, before)
    for run in runs:
        run.pop("memory", None)
    data["runs"] = runs
    data["runs_next"] = following
    holder = lock_holder(config.state_dir)
    data["daemon"] = {"running": holder is not None, "pid": holder}
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


def _calibration(config: Config) -> Any:
    # Here, not at the top: the page starts and answers without the mood model, which loads
    # only for the pages that score.
    from assembler.mood.model import load_mood_model, mood_embedder

    try:
        return load_mood_model(embedder=mood_embedder(config.memory.model)).window_calibration
    except AssemblerError:
        return None


def mood_data(
    status: Status,
    now: datetime,
    hours: float = 24.0,
    until: datetime | None = None,
    limit: int = MOOD_POINTS,
    before: MoodCursor | None = None,
) -> dict[str, Any]:
    """Given the status, the clock, a window length in hours (at most MAX_HOURS), when it
    ends (default and at most: now), how many points to give and a cursor (the `next` of an
    earlier answer; None: from the end of the span), return the Mood page's data from the mood
    history: the newest `limit` messages of the span before the cursor, by human speaker, with
    valence, arousal and labels; the mood over the assembly's window at its end and the
    strategy it gives; and when the latest message was said.
    Raise ValueError if `hours` is not positive, `limit` not from 1 to MAX_MOOD_POINTS, or
    `until` so early that the span would start before the year 1."""

    if not (isinstance(hours, int | float) and math.isfinite(hours) and hours > 0):
        raise ValueError(f"hours must be a positive number, got {hours!r}")
    if not 1 <= limit <= MAX_MOOD_POINTS:
        raise ValueError(f"limit={limit}: give a number of points from 1 to {MAX_MOOD_POINTS}")
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
    pages = status.pages
    records, following = pages.newest_moods(start, end, limit, before)
    speakers: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        speakers.setdefault(record.speaker or HUMAN, []).append(_point(record))
    for points in speakers.values():
        _mark_movers(points)
    # The window: the span's newest messages within the lookback, whichever page is shown.
    since = max(start, window_start) if window_start is not None else start
    window, _ = pages.newest_moods(since, end, config.transcripts.max_messages)
    report = window_report(
        window, now=end, half_life=config.mood.half_life_delta, calibration=_calibration(config)
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
        "messages": pages.mood_count(start, end),
        "shown": len(records),
        "next": following.text() if following is not None else None,
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
    logged, _ = status.pages.runs(20)
    runs = [run for run in logged if isinstance(run.get("memory"), dict)]
    if runs:
        run = runs[0]
        memory = run["memory"]
        data["source"] = {"kind": "assembly", "at": run["at"], "reason": run["reason"]}
        data["queries"] = _list(memory.get("queries"))
        data["hits"] = [hit for hit in _list(memory.get("hits")) if isinstance(hit, dict)]
        data["explain"] = _list(memory.get("explain"))
        data["chunks"] = memory.get("chunks")
        data["dropped"] = _list(run.get("dropped"))
        return _marked(data, config)
    lookback = config.transcripts.lookback_delta
    start = now - lookback if lookback is not None else now - timedelta(hours=MAX_HOURS)
    records, _ = status.pages.newest_moods(start, now, config.memory.query_messages)
    messages = [r.message() for r in records]
    data["source"] = {"kind": "history", "at": None, "reason": None}
    data["queries"] = conversation_queries(messages, max_messages=config.memory.query_messages)
    data["hits"], data["explain"] = _keyword_recall(config, messages, now)
    memory_meta = meta.get("memory")
    data["chunks"] = memory_meta.get("chunks") if isinstance(memory_meta, dict) else None
    data["dropped"] = meta.get("dropped") or []
    return _marked(data, config)


def _list(value: Any) -> list[Any]:
    """A logged list, or [] for what a run did not log as one."""
    return value if isinstance(value, list) else []


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


def observations_data(
    status: Status, now: datetime, limit: int = OBSERVATIONS_SHOWN, offset: int = 0
) -> dict[str, Any]:
    """Given the status, the clock, how many entries to list and how many to skip, return the
    Observations page's data: the live parked outputs of every turn with their size, turn
    and expiry (what `assemble obs ls --all` lists), oldest first, from `offset`.
    Raise ValueError if `limit` is not from 1 to MAX_OBSERVATIONS or `offset` is negative."""
    if not 1 <= limit <= MAX_OBSERVATIONS:
        raise ValueError(f"limit={limit}: give a number of entries from 1 to {MAX_OBSERVATIONS}")
    if offset < 0:
        raise ValueError(f"offset={offset}: give zero or more")
    with store_for(status.config) as store:
        entries = store.entries(all_turns=True, now=now)
    page = entries[offset : offset + limit]
    following = offset + len(page) if offset + len(page) < len(entries) else None
    items = []
    for entry in page:
        item = entry.to_dict()
        item["summary"] = entry.summary
        item["expires_in"] = format_duration(entry.expires - now)
        items.append(item)
    return {"now": _iso(now), "entries": items, "total": len(entries), "next_offset": following}


# --- Filling the history --------------------------------------------------------------------


def fill_history(status: Status, now: datetime) -> int:
    """Given the status and the clock, read the newest `transcripts.max_messages` messages
    (from the files' ends, as an assembly does, but however old they are) and score the human
    ones the mood history does not hold yet; return how many were added. The page calls it
    when a transcript changed, never per request."""
    # Here, not at the top: see `_calibration`.
    from assembler.mood.model import load_mood_model, mood_embedder

    config = status.config
    transcripts = config.transcripts
    read = read_recent(
        sources_to_read(HOSTS, transcripts.sources, config.workspace, config.state_dir),
        hosts=HOSTS,
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
    embedder = mood_embedder(config.memory.model, batch_size=config.memory.batch_size)
    return status.history.record(read.messages, load_mood_model(embedder=embedder))


def watched_paths(config: Config) -> Sequence[str]:
    """Given the config, return the transcript globs whose files the page watches."""

    return sources_to_read(HOSTS, config.transcripts.sources, config.workspace, config.state_dir)


def deliveries_data(status: Status, now: datetime) -> dict[str, Any]:
    """Given the status and the clock, return the Deliveries page's data: each session a hook
    served in the last day, newest first, with each turn's time and whether it carried the
    block (delivered, held from before) or missed it, by the host's own record."""
    config = status.config
    if not has_record(config.state_dir):
        return {"sessions": []}
    report = delivery_report(config.workspace, config.state_dir, HOSTS, os.environ)
    since = now - timedelta(days=1)
    sessions = []
    for session in reversed(report.sessions):
        marks = [mark for mark in session.marks if mark.at >= since]
        if not marks:
            continue
        sessions.append(
            {
                "host": session.host,
                "session": session.session,
                "line": describe(session),
                "turns": [
                    {"at": mark.at.isoformat(), "mark": mark.state, "why": mark.why}
                    for mark in marks
                ],
                "missed_last": session.missed_last,
            }
        )
    return {"sessions": sessions}
