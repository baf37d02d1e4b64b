"""The mood of each human message, scored once and kept: `.scratchpad/mood.sqlite`.

A day or a week of mood is then a query, not a re-read of transcripts and a re-scoring of
every message. Each message has a stable id (a hash of its session or file name, time, speaker
and text, not of where the workspace lies), so recording the same window again adds nothing;
only messages not yet in the history are scored. What is kept per message: its id, speaker,
session, time, its text with secrets and personal data redacted (as SCRATCHPAD.md shows them),
and its mood (labels, valence, arousal, primary) with the name of the scorer that gave it
(`Scorer.version`: the model, its weights, and whether it read sentence embeddings). The
history is a cache of what the transcripts say: a broken or foreign database (another schema
version too) is moved aside and started again, never trusted; one of schema 2 (the same table
without the scorer) is upgraded in place, its rows marked as scored by an unknown scorer.

Scores of one scorer are never mixed with another's: when the assembly's scorer changes (a
retrained model, the embedding head switched on or off), `remembering` rescores the window's
messages that another scorer scored from their text, and the rest of the history from the
kept text (`MoodHistory.rescore`), the newest first, RESCORE_BATCH per assembly.

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

from assembler.errors import UnsafePathError, WorkspaceError
from assembler.fsutil import load_json
from assembler.mood.window import (
    DEFAULT_WINDOW_CALIBRATION,
    MOODS,
    MessageMood,
    MoodReport,
    Scorer,
    WindowCalibration,
    read_window,
)
from assembler.redact import redact
from assembler.state_db import (
    check_schema,
    expected_objects,
    open_prepared,
    open_state_db,
    schema_statements,
)
from assembler.transcripts.message import Message, clip_middle

log = logging.getLogger(__name__)

HISTORY_NAME = "mood.sqlite"
# 2: a message's id no longer depends on where its transcript lies (see `message_id`).
# 3: each row names its scorer (`Scorer.version`); rows of another scorer are rescored.
SCHEMA_VERSION = 3
# The scorer of the rows a schema 2 history held: unknown, so they are all rescored.
UNKNOWN_SCORER = ""
# Rows of another scorer rescored per assembly (a few ms each): a week of history in a few runs.
RESCORE_BATCH = 1000
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
    scores TEXT NOT NULL,
    scorer TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS moods_at ON moods (at);
"""
_COLUMNS = 16
# Schema 2: the same table without the scorer (`_upgrade` makes it schema 3 in place).
_SCHEMA_2 = _SCHEMA.replace(",\n    scorer TEXT NOT NULL", "")


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
        _upgrade(path)
        self._db = open_prepared(path, "the mood history", _SCHEMA, SCHEMA_VERSION)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> MoodHistory:
        return self

    def schema_version(self) -> int | None:
        """Return the database's schema counter (it moves with any change of its tables,
        triggers or views, by any process), or None if it cannot be read."""
        with self._lock:
            try:
                return int(self._db.execute("PRAGMA schema_version").fetchone()[0])
            except sqlite3.Error:
                return None

    def __exit__(self, *exc: object) -> None:
        self.close()

    def missing(self, messages: Sequence[Message], version: str | None = None) -> list[Message]:
        """Given messages and optionally a scorer's version, return the human ones with text
        that the history does not hold, or (given a version) holds as another scorer scored
        them."""
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
                query = f"SELECT id, scorer FROM moods WHERE id IN ({marks})"
                for row_id, scorer in self._db.execute(query, batch):
                    if version is None or scorer == version:
                        known.add(row_id)
        return [m for key, m in human.items() if key not in known]

    def record(self, messages: Sequence[Message], scorer: Scorer, *, rescore: bool = False) -> int:
        """Given messages (any roles) and a mood model, score the human messages the history
        does not hold yet and keep them; with `rescore`, also those another scorer scored
        (replaced). Return how many were scored."""
        version = scorer.version
        new = self.missing(messages, version if rescore else None)
        if not new:
            return 0
        moods = scorer.score_many([m.text for m in new])
        # Read after scoring: a model whose embedder failed just now scored without it.
        version = scorer.version
        rows = [self._row(m, mood, version) for m, mood in zip(new, moods, strict=True)]
        self._write(rows)
        return len(rows)

    def rescore(self, scorer: Scorer, limit: int = RESCORE_BATCH) -> int:
        """Given a mood model and how many rows at most, score again the kept text of the
        newest rows that another scorer scored; return how many were rescored. (The kept text
        is redacted and, of a long message, its head and tail: close to what the transcript
        said, and all that is left of a message no longer in any window.)"""
        version = scorer.version
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM moods WHERE scorer != ? ORDER BY at DESC, rowid DESC LIMIT ?",
                (version, max(0, limit)),
            ).fetchall()
        if not rows:
            return 0
        records = [mood_record(row) for row in rows]
        moods = scorer.score_many([record.text for record in records])
        version = scorer.version
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "UPDATE moods SET primary_label = ?, primary_score = ?, secondary_label = ?, "
                    "secondary_score = ?, valence = ?, arousal = ?, compound = ?, scores = ?, "
                    "scorer = ? WHERE id = ?",
                    [
                        (*_mood_columns(mood), version, r.id)
                        for r, mood in zip(records, moods, strict=True)
                    ],
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return len(records)

    def _write(self, rows: Sequence[tuple[Any, ...]]) -> None:
        marks = ",".join("?" * _COLUMNS)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(f"INSERT OR REPLACE INTO moods VALUES ({marks})", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _row(self, message: Message, mood: MessageMood, version: str) -> tuple[Any, ...]:
        text = clip_middle(message.text, KEPT_HEAD_CHARS, KEPT_TAIL_CHARS)
        text = redact(text, extra_secret_patterns=self.extra_secret_patterns)
        at = message.timestamp
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        return (
            message_id(message),
            at.timestamp() if at is not None else None,
            message.speaker,
            message.session_id,
            message.source,
            text,
            message.length,
            *_mood_columns(mood),
            version,
        )

    def between(self, start: datetime, end: datetime) -> list[MoodRecord]:
        """Given a span of time, return the messages said in it (start included, end
        included), oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM moods WHERE at >= ? AND at <= ? ORDER BY at, rowid",
                (start.timestamp(), end.timestamp()),
            ).fetchall()
        return [mood_record(row) for row in rows]

    def moods_of(
        self, messages: Sequence[Message], version: str | None = None
    ) -> dict[str, MessageMood]:
        """Given messages and optionally a scorer's version, return the recorded mood of each
        one the history holds (as that scorer scored it), by the message's own text (what a
        scorer is asked for)."""
        by_id = {message_id(m): m for m in messages if m.role == "user" and m.text}
        ids = list(by_id)
        found: dict[str, MessageMood] = {}
        with self._lock:
            for start in range(0, len(ids), _ID_BATCH):
                batch = ids[start : start + _ID_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(f"SELECT * FROM moods WHERE id IN ({marks})", batch)
                for row in rows.fetchall():
                    if version is not None and row[-1] != version:
                        continue
                    record = mood_record(row)
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


# The key of a message's P(emotional) (`MessageMood.emotional`) in the `scores` JSON, beside the
# moods' (no mood has this name); absent when the scorer gives none.
EMOTIONAL_KEY = "_emotional"


def _mood_columns(mood: MessageMood) -> tuple[Any, ...]:
    """Given a mood, return its columns of a row, from `primary_label` to `scores`."""
    scores = {label: round(float(value), 5) for label, value in mood.scores.items()}
    if mood.emotional is not None:
        scores[EMOTIONAL_KEY] = round(float(mood.emotional), 5)
    return (
        mood.primary,
        float(mood.primary_score),
        mood.secondary,
        float(mood.secondary_score),
        float(mood.valence),
        float(mood.arousal),
        float(mood.compound),
        json.dumps(scores, sort_keys=True),
    )


def _upgrade(path: Path) -> None:
    """Given the history's path, upgrade a schema 2 history in place to schema 3: its rows
    copied into the new table, marked as scored by UNKNOWN_SCORER (so they are rescored). Only
    a database that holds exactly schema 2's objects is touched (the agent can write the state
    folder; nothing is written to a database of unknown make); anything else is left to
    `open_prepared` (a current history kept, a broken or foreign one moved aside)."""
    if not path.is_file():
        return
    try:
        conn = open_state_db(path, "the mood history")
    except (UnsafePathError, WorkspaceError):
        return  # opening it again says why
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != 2:
            return
        if check_schema(conn, expected_objects(schema_statements(_SCHEMA_2))) is not None:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] == 2:  # not upgraded meanwhile
                # A new table rather than ALTER TABLE: the schema stays exactly the one a new
                # history gets (the schema check compares the tables' SQL).
                conn.execute("DROP INDEX IF EXISTS moods_at")
                conn.execute("ALTER TABLE moods RENAME TO moods_2")
                for statement in schema_statements(_SCHEMA):
                    conn.execute(statement)
                conn.execute("INSERT INTO moods SELECT *, ? FROM moods_2", (UNKNOWN_SCORER,))
                conn.execute("DROP TABLE moods_2")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                log.info("mood history %s upgraded: its moods are rescored", path)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as error:
        log.warning("mood history %s could not be upgraded (%s)", path, error)
    finally:
        conn.close()


def mood_record(row: Sequence[Any]) -> MoodRecord:
    """Given a row of the moods table (its columns in order, a trailing scorer allowed),
    return its record; labels that are missing or no JSON count 0 (the agent can write the
    file)."""
    (rid, at, speaker, session, source, text, length, primary, primary_score) = row[:9]
    (secondary, secondary_score, valence, arousal, compound, scores) = row[9:15]
    labels = dict.fromkeys(MOODS, 0.0)
    emotional: float | None = None
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        stored = {str(k): float(v) for k, v in load_json(scores).items()}
        labels.update({k: v for k, v in stored.items() if k in labels})
        if EMOTIONAL_KEY in stored and 0.0 <= stored[EMOTIONAL_KEY] <= 1.0:
            emotional = stored[EMOTIONAL_KEY]
    mood = MessageMood(
        valence=float(valence),
        arousal=float(arousal),
        scores=labels,
        compound=float(compound),
        primary=str(primary),
        primary_score=float(primary_score),
        secondary=secondary,
        secondary_score=float(secondary_score),
        emotional=emotional,
    )
    stamp = datetime.fromtimestamp(at, UTC) if at is not None else None
    return MoodRecord(rid, stamp, speaker, session, source, str(text), int(length), mood)


class StoredMoods:
    """A scorer (`mood_window.Scorer`) that answers with the moods the history holds, so a
    window's mood is computed without the model."""

    def __init__(self, records: Sequence[MoodRecord], calibration: WindowCalibration) -> None:
        self.window_calibration = calibration
        self.version = "stored"
        self._by_text = {record.text: record.mood for record in records}

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        return [self._by_text[text] for text in texts]


class RememberedMoods:
    """A scorer (`mood_window.Scorer`) that answers with the moods the history recorded for
    these texts, and asks the model only for the others."""

    def __init__(self, known: dict[str, MessageMood], model: Scorer) -> None:
        self.window_calibration = model.window_calibration
        self.version = model.version
        self._known = known
        self._model = model

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        new = [text for text in dict.fromkeys(texts) if text not in self._known]
        if new:
            self._known.update(zip(new, self._model.score_many(new), strict=True))
        return [self._known[text] for text in texts]


class KeptHistory:
    """The mood history a long-running process (the daemon) keeps open from one assembly to
    the next, instead of opening it (and checking the whole file) and closing it (and
    checkpointing its log) each time.

    It is opened again when the file at its path is no longer the one opened (moved aside,
    replaced, deleted: compared by device and inode, without following a link), when its
    schema changed (a trigger planted by another process) and after an error (`drop`), so a
    damaged or planted file is checked as a fresh open checks it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: MoodHistory | None = None
        self._identity: tuple[Path, int, int] | None = None
        self._schema: int | None = None

    def history(self, path: Path, extra_secret_patterns: Sequence[str] = ()) -> MoodHistory:
        """Given the history's path, return it open (the kept one while it is still the file
        at that path). Raise what `MoodHistory` raises."""
        with self._lock:
            history = self._history
            if (
                history is not None
                and history.extra_secret_patterns == tuple(extra_secret_patterns)
                and self._identity == _identity(path)
                and self._schema is not None
                and history.schema_version() == self._schema
            ):
                return history
            self._close()
            history = MoodHistory(path, extra_secret_patterns=extra_secret_patterns)
            self._history, self._identity = history, _identity(path)
            self._schema = history.schema_version()
            return history

    def close(self) -> None:
        """Close the kept history, so the next assembly opens (and checks) it afresh."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._history is not None:
            with contextlib.suppress(sqlite3.Error):
                self._history.close()
        self._history, self._identity, self._schema = None, None, None


def _identity(path: Path) -> tuple[Path, int, int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return path, info.st_dev, info.st_ino


def remembering(
    state_dir: Path,
    messages: Sequence[Message],
    model: Scorer,
    extra_secret_patterns: Sequence[str] = (),
    *,
    kept: KeptHistory | None = None,
) -> Scorer:
    """Given the state folder, a window's messages and the mood model, keep the moods of the
    human messages the history does not hold yet, or holds as another scorer scored them (each
    message is scored once per scorer), rescore a batch of the older rows another scorer
    scored, and return a scorer that reads the window's moods from the history. When the
    history cannot be opened, return the model itself (the mood is computed as without a
    history). With `kept` the history stays open for the next call (see `KeptHistory`).
    """
    path = history_path(state_dir)
    try:
        with (
            contextlib.nullcontext(kept.history(path, extra_secret_patterns))
            if kept is not None
            else MoodHistory(path, extra_secret_patterns=extra_secret_patterns)
        ) as history:
            history.record(messages, model, rescore=True)
            known = history.moods_of(messages, model.version)
            history.rescore(model)
    except (WorkspaceError, sqlite3.Error, OSError) as error:
        if kept is not None:
            kept.close()
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
