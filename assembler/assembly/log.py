"""The last assemblies, kept for the status page: when, why (change, schedule, refresh, ...),
how long they took, what the memory search gave them; `.scratchpad/assemblies.sqlite`.

`record_run` is what a run calls after an assembly: it keeps the run, and the moods of the
window's new human messages when the assembly did not keep them itself (an assembly that
writes the file scores them into the mood history as it reads the mood, `draft`; this is for
one that could not, so each cycle writes the history once). It never raises: a status record
that cannot be written must not fail the assembly it describes.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.fsutil import load_json
from assembler.memory.recall import hit_record, shown_hit
from assembler.mood.history import MoodHistory, history_path
from assembler.redact import redact
from assembler.state_db import open_prepared

if TYPE_CHECKING:
    from assembler.assembly.cap import Assembly
    from assembler.config.schema import Config

log = logging.getLogger(__name__)

LOG_NAME = "assemblies.sqlite"
SCHEMA_VERSION = 1
# Runs kept: a daemon assembling every few minutes keeps about a week.
KEEP_RUNS = 2000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    reason TEXT NOT NULL,
    seconds REAL NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_at ON runs (at);
"""


def log_path(state_dir: Path) -> Path:
    """Given the workspace's state folder, return where the assemblies are logged."""
    return state_dir / LOG_NAME


@dataclass(frozen=True)
class Run:
    """One logged assembly."""

    at: datetime
    reason: str
    seconds: float
    record: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(timespec="seconds"),
            "reason": self.reason,
            "ms": round(self.seconds * 1000, 1),
            **self.record,
        }


class AssemblyLog:
    """The assemblies of one workspace, newest kept (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_prepared(path, "the assembly log", _SCHEMA, SCHEMA_VERSION)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> AssemblyLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, at: datetime, reason: str, seconds: float, record: dict[str, Any]) -> None:
        """Given when a run happened, why, how long it took and what it did, keep it."""
        text = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            self._db.execute(
                "INSERT INTO runs (at, reason, seconds, record) VALUES (?, ?, ?, ?)",
                (at.timestamp(), reason, seconds, text),
            )
            self._db.execute(
                "DELETE FROM runs WHERE id <= (SELECT max(id) FROM runs) - ?", (KEEP_RUNS,)
            )

    def last(self, limit: int = 20) -> list[Run]:
        """Return the newest `limit` runs, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT at, reason, seconds, record FROM runs ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        runs = []
        for at, reason, seconds, text in rows:
            try:
                record = load_json(text)  # bounded depth: the agent can write this database
            except (TypeError, ValueError):
                record = {}
            if not isinstance(record, dict):
                record = {}
            runs.append(Run(datetime.fromtimestamp(at, UTC), str(reason), float(seconds), record))
        return runs


def run_record(assembly: Assembly) -> dict[str, Any]:
    """Given an assembly, return what the status page shows of it: the file's times, messages
    read, sections shown and dropped, problems, and the memory search (queries, hits with their
    parts), with secrets redacted as in the file."""
    meta = assembly.measured.to_json()
    record: dict[str, Any] = {
        "updated": meta.get("updated"),
        "expires": meta.get("expires"),
        "written": assembly.written,
        **{k: meta.get(k) for k in ("messages_read", "tokens", "sections", "dropped", "degraded")},
        "stages_ms": meta.get("stages_ms"),
        "memory": None,
    }
    recall = assembly.recall
    if recall is not None:
        patterns = assembly.secret_patterns
        record["memory"] = {
            "queries": [redact(q, extra_secret_patterns=patterns) for q in recall.result.queries],
            "hits": [
                hit_record(shown_hit(hit, patterns), explain=True) for hit in recall.result.hits
            ],
            "explain": [
                redact(line, extra_secret_patterns=patterns) for line in recall.result.explain
            ],
            "chunks": recall.chunks_total,
        }
    return record


def record_run(config: Config, assembly: Assembly, reason: str, seconds: float) -> None:
    """Given an assembly just run, why and how long it took, log it, and keep the moods of its
    window's new human messages unless the assembly kept them (`moods_kept`). Problems are
    logged, never raised."""
    try:
        with AssemblyLog(log_path(config.state_dir)) as runs:
            runs.add(assembly.now, reason, seconds, run_record(assembly))
        if not assembly.moods_kept:
            # The assembly could not keep them (no history or no model then): a second try,
            # not a second write of the same rows.
            record_moods(config, assembly.transcripts.messages)
    except Exception as error:  # the assembly is done; its record is a nicety
        log.warning("cannot record the assembly for the status page: %s", error)


def record_moods(config: Config, messages: Any) -> int:
    """Given the config and a window's messages, score the human ones the mood history does not
    hold yet (the bundled model, loaded only then) and keep them; return how many."""
    # Here, not at the top: the status page reads the log of assemblies without the model.
    from assembler.mood.model import load_mood_model

    with MoodHistory(
        history_path(config.state_dir),
        extra_secret_patterns=config.routing.extra_secret_patterns,
    ) as history:
        if not history.missing(messages):
            return 0
        return history.record(messages, load_mood_model())
