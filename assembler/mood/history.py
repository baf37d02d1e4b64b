"""The mood of each human message, scored once and kept: `.scratchpad/mood.sqlite`.

A day or a week of mood is then a query, not a re-read of transcripts and a re-scoring of
every message. Each message has a stable id (a hash of its session or file name, time, speaker
and text, not of where the workspace lies), so recording the same window again adds nothing;
only messages not yet in the history are scored. What is kept per message: its id, speaker,
session, time, its text with secrets and personal data redacted (as SCRATCHPAD.md shows them),
and its mood (labels, valence, arousal, primary). The history is a cache of what the
transcripts say: a broken or foreign database (another schema version too) is moved aside and
started again, never trusted.

`window_report` reads the mood of a window from the history alone, with the same window
arithmetic as the assembly (`mood_window.read_window`), the stored moods standing in for the
model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any

from assembler.errors import WorkspaceError
from assembler.mood.window import (
    DEFAULT_WINDOW_CALIBRATION,
    MessageMood,
    MoodReport,
    Scorer,
    WindowCalibration,
    read_window,
)
from assembler.redact import redact
from assembler.state_db import open_prepared
from assembler.transcripts.message import Message, clip_middle

log = logging.getLogger(__name__)

HISTORY_NAME = "mood.sqlite"
# 2: a message's id no longer depends on where its transcript lies (see `message_id`).
SCHEMA_VERSION = 2
# What is kept of a long message's text: enough to recognise it on the page.
KEPT_HEAD_CHARS = 1000
KEPT_TAIL_CHARS = 500
# Ids asked about in one query (SQLite's default limit of host parameters is 999 or more).
_ID_BATCH = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS moods (
    id TEXT PRIMARY KEY,
    at REAL,
    speaker TEXT,
    session_id TEXT,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    length INTEGER NOT NULL,
    primary_label TEXT NOT NULL,
    primary_score REAL NOT NULL,
    secondary_label TEXT,
    secondary_score REAL NOT NULL,
    valence REAL NOT NULL,
    arousal REAL NOT NULL,
    compound REAL NOT NULL,
    scores TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS moods_at ON moods (at);
"""


def history_path(state_dir: Path) -> Path:
    """Given the workspace's state folder, return where the mood history is kept."""
    return state_dir / HISTORY_NAME


def message_id(message: Message) -> str:
    """Given a message, return its stable id: the same message read again (by another run, from
    the same file after it grew, or from a workspace moved or reached by another path) has the
    same id. The transcript is named by its session, else by its file's name, never by its
    absolute path."""
    stamp = message.timestamp.astimezone(UTC).isoformat() if message.timestamp else ""
    where = message.session_id or PurePath(message.source).name
    parts = (where, stamp, message.speaker or "", message.text)
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class MoodRecord:
    """One human message of the history and its mood."""

    id: str
    at: datetime | None  # UTC; None when the transcript gave no time
    speaker: str | None
    session_id: str | None
    source: str
    text: str  # redacted, and of a long message its head and tail
    length: int  # the whole message's length in characters
    mood: MessageMood

    def message(self) -> Message:
        """Return the record as a human message of a window (for `mood_window.read_window`)."""
        return Message(
            "user",
            self.text,
            self.at,
            self.source,
            speaker=self.speaker,
            session_id=self.session_id,
        )


class MoodHistory:
    """The mood history of one workspace (thread-safe: the status page reads it from several
    threads while one records)."""

    def __init__(self, path: Path, *, extra_secret_patterns: Sequence[str] = ()) -> None:
        self.path = path
        self.extra_secret_patterns = tuple(extra_secret_patterns)
        self._lock = threading.Lock()
        self._db = open_prepared(path, "the mood history", _SCHEMA, SCHEMA_VERSION)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> MoodHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def missing(self, messages: Sequence[Message]) -> list[Message]:
        """Given messages, return the human ones with text that the history does not hold."""
        human = {
            message_id(m): m
            for m in messages
            if m.role == "user" and m.text and not m.text.isspace()
        }
        ids = list(human)
        known: set[str] = set()
        with self._lock:
            for start in range(0, len(ids), _ID_BATCH):
                batch = ids[start : start + _ID_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(f"SELECT id FROM moods WHERE id IN ({marks})", batch)
                known.update(row[0] for row in rows)
        return [m for key, m in human.items() if key not in known]

    def record(self, messages: Sequence[Message], scorer: Any) -> int:
        """Given messages (any roles) and a mood model (`score_many`), score the human messages
        the history does not hold yet and keep them; return how many were added."""
        new = self.missing(messages)
        if not new:
            return 0
        moods = scorer.score_many([m.text for m in new])
        rows = [self._row(m, mood) for m, mood in zip(new, moods, strict=True)]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO moods VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return len(rows)

    def _row(self, message: Message, mood: MessageMood) -> tuple[Any, ...]:
        text = clip_middle(message.text, KEPT_HEAD_CHARS, KEPT_TAIL_CHARS)
        text = redact(text, extra_secret_patterns=self.extra_secret_patterns)
        at = message.timestamp
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        scores = {label: round(float(value), 5) for label, value in mood.scores.items()}
        return (
            message_id(message),
            at.timestamp() if at is not None else None,
            message.speaker,
            message.session_id,
            message.source,
            text,
            message.length,
            mood.primary,
            float(mood.primary_score),
            mood.secondary,
            float(mood.secondary_score),
            float(mood.valence),
            float(mood.arousal),
            float(mood.compound),
            json.dumps(scores, sort_keys=True),
        )

    def between(self, start: datetime, end: datetime) -> list[MoodRecord]:
        """Given a span of time, return the messages said in it (start included, end
        included), oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM moods WHERE at >= ? AND at <= ? ORDER BY at, rowid",
                (start.timestamp(), end.timestamp()),
            ).fetchall()
        return [_record(row) for row in rows]

    def moods_of(self, messages: Sequence[Message]) -> dict[str, MessageMood]:
        """Given messages, return the recorded mood of each one the history holds, by the
        message's own text (what a scorer is asked for)."""
        by_id = {message_id(m): m for m in messages if m.role == "user" and m.text}
        ids = list(by_id)
        found: dict[str, MessageMood] = {}
        with self._lock:
            for start in range(0, len(ids), _ID_BATCH):
                batch = ids[start : start + _ID_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(f"SELECT * FROM moods WHERE id IN ({marks})", batch)
                for row in rows.fetchall():
                    record = _record(row)
                    found[by_id[record.id].text] = record.mood
        return found

    def latest(self, before: datetime) -> datetime | None:
        """Given a time, return when the newest message said by then was said, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT max(at) FROM moods WHERE at <= ?", (before.timestamp(),)
            ).fetchone()
        return datetime.fromtimestamp(row[0], UTC) if row[0] is not None else None

    def count(self) -> int:
        """Return how many messages the history holds."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM moods").fetchone()[0])


def _record(row: Sequence[Any]) -> MoodRecord:
    (rid, at, speaker, session, source, text, length, primary, primary_score) = row[:9]
    (secondary, secondary_score, valence, arousal, compound, scores) = row[9:]
    try:
        labels = {str(k): float(v) for k, v in json.loads(scores).items()}
    except (ValueError, TypeError, AttributeError):
        labels = {}
    mood = MessageMood(
        valence=float(valence),
        arousal=float(arousal),
        scores=labels,
        compound=float(compound),
        primary=str(primary),
        primary_score=float(primary_score),
        secondary=secondary,
        secondary_score=float(secondary_score),
    )
    stamp = datetime.fromtimestamp(at, UTC) if at is not None else None
    return MoodRecord(rid, stamp, speaker, session, source, text, int(length), mood)


class StoredMoods:
    """A scorer (`mood_window.Scorer`) that answers with the moods the history holds, so a
    window's mood is computed without the model."""

    def __init__(self, records: Sequence[MoodRecord], calibration: WindowCalibration) -> None:
        self.window_calibration = calibration
        self._by_text = {record.text: record.mood for record in records}

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        return [self._by_text[text] for text in texts]


class RememberedMoods:
    """A scorer (`mood_window.Scorer`) that answers with the moods the history recorded for
    these texts, and asks the model only for the others."""

    def __init__(self, known: dict[str, MessageMood], model: Scorer) -> None:
        self.window_calibration = model.window_calibration
        self._known = known
        self._model = model

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        new = [text for text in dict.fromkeys(texts) if text not in self._known]
        if new:
            self._known.update(zip(new, self._model.score_many(new), strict=True))
        return [self._known[text] for text in texts]


def remembering(
    state_dir: Path,
    messages: Sequence[Message],
    model: Scorer,
    extra_secret_patterns: Sequence[str] = (),
) -> Scorer:
    """Given the state folder, a window's messages and the mood model, keep the moods of the
    human messages the history does not hold yet (each message is scored once, ever) and
    return a scorer that reads the window's moods from the history. When the history cannot
    be opened, return the model itself (the mood is computed as without a history)."""
    try:
        with MoodHistory(
            history_path(state_dir), extra_secret_patterns=extra_secret_patterns
        ) as history:
            history.record(messages, model)
            known = history.moods_of(messages)
    except (WorkspaceError, sqlite3.Error, OSError) as error:
        log.warning("mood history unavailable, scoring the window afresh: %s", error)
        return model
    return RememberedMoods(known, model)


def window_report(
    records: Sequence[MoodRecord],
    *,
    now: datetime,
    half_life: timedelta,
    calibration: WindowCalibration | None = None,
) -> MoodReport:
    """Given the history's records of a window, return the humans' mood over it as an assembly
    computes it (`mood_window.read_window`), from the stored moods."""
    scorer = StoredMoods(records, calibration or DEFAULT_WINDOW_CALIBRATION)
    return read_window(
        [record.message() for record in records],
        now=now,
        half_life=half_life,
        scorer=scorer,
        load=lambda: scorer,
    )


@contextlib.contextmanager
def opened(state_dir: Path, extra_secret_patterns: Sequence[str] = ()) -> Iterator[MoodHistory]:
    """Given the state folder, yield its mood history, closed afterwards."""
    history = MoodHistory(history_path(state_dir), extra_secret_patterns=extra_secret_patterns)
    try:
        yield history
    finally:
        history.close()
