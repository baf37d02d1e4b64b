"""OpenClaw's SQLite store (`agents/<id>/agent/openclaw-agent.sqlite`, 2026.7 on): the newest
sessions' entries read by `seq` from the newest row back, opened read-only while the host may
be writing; and the custom entries of one type.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from assembler.hosts.openclaw.reader import OpenClawReader
from assembler.hosts.openclaw.sessions import is_host_session_key
from assembler.transcripts.branch import BAD, parse_line, walk
from assembler.transcripts.message import parse_time
from assembler.transcripts.reader import OPEN_FACTOR, Outcome, SourceReport, mtime

# Rows fetched per query from the SQLite store, newest first.
_SQLITE_PAGE = 256


# The host holds write locks briefly; waiting longer would stall the daemon.
_SQLITE_TIMEOUT_S = 2.0


SQLITE_SUFFIXES = frozenset({".sqlite", ".sqlite3", ".db"})


def read_store(
    path: Path, cutoff: datetime | None, until: datetime, limit: int, max_sessions: int
) -> Outcome:
    """Given an OpenClaw agent database, return the messages of its newest sessions.

    The database is opened read-only while the host may be writing; each session is read by
    `seq` from the newest row back, a page at a time.
    """
    report = SourceReport(path=str(path), format="openclaw-sqlite")
    outcome = Outcome(report)
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=_SQLITE_TIMEOUT_S)
    except sqlite3.Error as exc:
        report.error = _sqlite_error(path, exc)
        return outcome
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(transcript_events)")}
        if not {"session_id", "seq", "event_json"} <= columns:
            report.error = (
                f"{path} has no transcript_events table, so it is not an OpenClaw agent "
                "database; remove it from 'transcripts.sources'."
            )
            return outcome
        # Before schema 23 there is no compressed column; select NULL in its place.
        zstd_column = "event_zstd" if "event_zstd" in columns else "NULL"
        written = mtime(path)
        with_messages = 0
        # As with files, sessions in which no human speaks (isolated cron runs) do not count.
        sessions = _newest_sessions(connection, max_sessions * OPEN_FACTOR)
        for opened, (session_id, last) in enumerate(sessions):
            if with_messages >= max_sessions:
                break
            if opened >= max_sessions and cutoff is not None and last is not None and last < cutoff:
                break  # last written before the window, and so are the sessions after it
            reader = OpenClawReader(str(path), cutoff, limit, session_id, until)
            head = connection.execute(
                f"SELECT event_json, {zstd_column} FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq ASC LIMIT 1",
                (session_id,),
            ).fetchone()
            if head is not None:
                value, size = _decode_event(head[0], head[1])
                report.bytes_read += size
                if isinstance(value, dict):
                    reader.header(value)
                    reader.session_id = session_id  # the row key is the session's identity
            report.bad_lines += walk(
                _session_rows(connection, session_id, zstd_column, report), reader
            )
            unit = reader.unit(written)
            outcome.units.append(unit)
            with_messages += unit.human and bool(unit.messages)
    except sqlite3.Error as exc:
        report.error = _sqlite_error(path, exc)
        outcome.units.clear()
    finally:
        connection.close()
    return outcome


def _newest_sessions(
    connection: sqlite3.Connection, count: int
) -> list[tuple[str, datetime | None]]:
    """Given a connection, return up to `count` sessions, newest first, with the time each was
    last written (None when unknown); not those the host runs (see
    `transcripts_openclaw.is_host_session_key`) when the store says which they are."""
    tables = {
        str(row[0])
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if "session_windows" in tables:
        # The host's own record of its sessions (schema 20 on): a key per session window, and
        # when its transcript was last written.
        columns = {row[1] for row in connection.execute("PRAGMA table_info(session_windows)")}
        if {"session_id", "session_key", "updated_at"} <= columns:
            written = (
                "COALESCE(transcript_updated_at, updated_at)"
                if "transcript_updated_at" in columns
                else "updated_at"
            )
            found: list[tuple[str, datetime | None]] = []
            for session_id, key, last in connection.execute(
                f"SELECT session_id, session_key, {written} AS written FROM session_windows "
                "ORDER BY written DESC, session_id"
            ):
                if isinstance(key, str) and is_host_session_key(key):
                    continue
                found.append((str(session_id), parse_time(last)))
                if len(found) >= count:
                    break
            return found
    # A loose index scan: one seek on the (session_id, seq) key per session instead of reading
    # every row, so finding the sessions costs what the number of sessions costs.
    rows = connection.execute(
        """
        WITH RECURSIVE sessions(id) AS (
            SELECT MIN(session_id) FROM transcript_events
            UNION ALL
            SELECT (SELECT MIN(session_id) FROM transcript_events WHERE session_id > sessions.id)
            FROM sessions WHERE sessions.id IS NOT NULL
        )
        SELECT id, (SELECT created_at FROM transcript_events
                    WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1) AS last
        FROM sessions WHERE id IS NOT NULL
        ORDER BY last DESC, id LIMIT ?
        """,
        (count,),
    ).fetchall()
    return [(str(row[0]), parse_time(row[1])) for row in rows]


def _session_rows(
    connection: sqlite3.Connection, session_id: str, zstd_column: str, report: SourceReport
) -> Iterator[tuple[object, int]]:
    """Given a session, yield its decoded rows from the newest back, a page per query."""
    before: int | None = None
    while True:
        if before is None:
            rows = connection.execute(
                f"SELECT seq, event_json, {zstd_column} FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, _SQLITE_PAGE),
            ).fetchall()
        else:
            rows = connection.execute(
                f"SELECT seq, event_json, {zstd_column} FROM transcript_events "
                "WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (session_id, before, _SQLITE_PAGE),
            ).fetchall()
        for seq, event_json, event_zstd in rows:
            value, size = _decode_event(event_json, event_zstd)
            report.bytes_read += size
            yield value, size
            before = seq
        if len(rows) < _SQLITE_PAGE:
            return


def _decode_event(event_json: object, event_zstd: object) -> tuple[object, int]:
    """Given a row's columns, return the entry (or `BAD`) and the bytes it took."""
    if isinstance(event_json, str) and event_json.strip():
        return parse_line(event_json), len(event_json)
    if isinstance(event_json, bytes) and event_json.strip():
        return parse_line(event_json), len(event_json)
    if isinstance(event_zstd, bytes) and event_zstd:
        import zstandard  # only databases need it

        try:
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(event_zstd)
        except zstandard.ZstdError:
            return BAD, len(event_zstd)
        return parse_line(raw), len(event_zstd)
    return BAD, 0


def store_custom_entries(path: Path, custom_type: str, *, newest_rows: int = 500) -> list[object]:
    """Given an OpenClaw agent database and a `customType` prefix, return the custom entries of
    that type, oldest first: every plain row that names the type, and the compressed rows among
    the newest `newest_rows` (compressed rows cannot be searched without being decoded).
    Return [] when the database cannot be read (the transcript read reports that).
    """
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=_SQLITE_TIMEOUT_S)
    except sqlite3.Error:
        return []
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(transcript_events)")}
        if "event_json" not in columns:
            return []
        zstd = "event_zstd" if "event_zstd" in columns else "NULL"
        rows = connection.execute(
            f"SELECT rowid, event_json, {zstd} FROM transcript_events WHERE event_json LIKE ? "
            f"UNION SELECT * FROM (SELECT rowid, event_json, {zstd} FROM transcript_events "
            f"WHERE {zstd} IS NOT NULL ORDER BY rowid DESC LIMIT ?) ORDER BY 1",
            (f"%{custom_type}%", newest_rows),
        ).fetchall()
    except sqlite3.Error:
        return []
    finally:
        connection.close()
    found: list[object] = []
    for _, event_json, event_zstd in rows:
        value, _ = _decode_event(event_json, event_zstd)
        kind = value.get("customType") if isinstance(value, dict) else None
        if isinstance(kind, str) and kind.startswith(custom_type):
            found.append(value)
    return found


def _sqlite_error(path: Path, exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (
            f"Cannot read {path}: the database is locked ({text}); it is retried on the next run."
        )
    return (
        f"Cannot read {path} as an OpenClaw agent database ({text}); check the file "
        "or remove it from 'transcripts.sources'."
    )
