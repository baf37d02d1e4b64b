"""The program's SQLite files in the state folder (the mood history, the assembly log; the
memory index and the observation store use the checks here too): opened without following a
planted link, given their schema and version in one transaction, and moved aside and started
anew when broken or another version's (each is a cache or a record, never the only copy of
anything).

The agent can write the state folder, so a database there may be an attack: the right schema
and version plus a trigger that runs an endless query on every insert would hang every writer.
So before anything is written, the database must hold exactly the tables and indexes its
schema makes (`check_schema`: no trigger, no view, nothing more or less, each as it would be
created), and every statement runs under a time limit (`bound_statements`). A lock that another
process holds is waited for, within `BUSY_TIMEOUT`, and then left alone: it is never taken for
a broken database. A copy moved aside never replaces an earlier one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sqlite3
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from assembler.errors import StateBusyError, UnsafePathError, WorkspaceError
from assembler.fsutil import check_not_link, real_dir

log = logging.getLogger(__name__)

# How long a run waits for a lock another process holds on a state database.
BUSY_TIMEOUT = 5.0
# The longest one statement may run. Ours take milliseconds; a statement that runs longer is
# working on something the agent wrote, and is interrupted.
STATEMENT_SECONDS = 30.0
# How often (in SQLite virtual machine steps) the time limit is looked at.
_PROGRESS_STEPS = 1000
# A pause this long between two looks means the statement was not running (its rows were
# being used between steps): that time is not the statement's.
_IDLE_GAP = 0.2
# The error codes of a file that is damaged or no database at all.
_BROKEN_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

SchemaObject = tuple[str, str, str, str]


def bound_statements(conn: sqlite3.Connection, seconds: float = STATEMENT_SECONDS) -> None:
    """Given a connection, interrupt each statement that has run `seconds` (its own running
    time: not the waits for a lock, nor the caller's work between its rows); it then raises
    sqlite3.OperationalError ("interrupted")."""
    spent = [0.0, time.monotonic()]  # the statement's running time, the last look

    def started(_statement: str) -> None:
        spent[0], spent[1] = 0.0, time.monotonic()

    def progress() -> int:
        now = time.monotonic()
        gap = now - spent[1]
        spent[1] = now
        if gap < _IDLE_GAP:
            spent[0] += gap
        return 1 if spent[0] > seconds else 0

    # The trace callback runs as each statement starts: it starts that statement's clock.
    conn.set_trace_callback(started)
    conn.set_progress_handler(progress, _PROGRESS_STEPS)


def error_code(error: sqlite3.Error) -> int | None:
    """Given an SQLite error, return its primary result code (None when it has none)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_broken(error: sqlite3.Error) -> bool:
    """Given an SQLite error, return whether it says the file is damaged or not a database.
    Busy, locked, read-only, full or permission errors are not: moving the file aside would
    not help and would lose a good database."""
    code = error_code(error)
    if code is not None:
        return code in _BROKEN_CODES
    return type(error) is sqlite3.DatabaseError


def is_busy(error: sqlite3.Error) -> bool:
    """Given an SQLite error, return whether another connection holds the lock it needed."""
    return error_code(error) in _BUSY_CODES


@functools.cache
def expected_objects(statements: tuple[str, ...]) -> frozenset[SchemaObject]:
    """Given the statements that make a schema, return the objects they leave in
    `sqlite_master` (the virtual tables' own tables and the automatic indexes included)."""
    reference = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in statements:
            reference.execute(statement)
        return _objects(reference)
    finally:
        reference.close()


def schema_statements(script: str) -> tuple[str, ...]:
    """Given a schema as one script (statements ended by `;`), return its statements."""
    return tuple(part for part in script.split(";") if part.strip())


def _objects(conn: sqlite3.Connection) -> frozenset[SchemaObject]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return frozenset((str(t), str(n), str(tbl), _squeeze(sql)) for t, n, tbl, sql in rows)


def _squeeze(sql: object) -> str:
    """Given an object's SQL (None for an automatic index), return it with its spaces made
    one, so a schema written with other line breaks is the same schema."""
    return re.sub(r"\s+", " ", sql).strip() if isinstance(sql, str) else ""


def check_schema(
    conn: sqlite3.Connection, expected: frozenset[SchemaObject], *, allow_missing: bool = False
) -> str | None:
    """Given a connection and the objects its schema makes (`expected_objects`), return what
    is wrong with the database's schema (one phrase naming an object), or None when it holds
    exactly those (some of those, with `allow_missing`: a schema still to be completed). Raise
    sqlite3.DatabaseError if the schema cannot be read."""
    found = _objects(conn)
    if found == expected or (allow_missing and found <= expected):
        return None
    extra = sorted(found - expected)
    if extra:
        kind, name = extra[0][0], extra[0][1]
        wanted = {(t, n) for t, n, _, _ in expected}
        if (kind, name) in wanted:
            return f"its {kind} '{name}' is not made as this program makes it"
        return f"it holds a {kind} '{name}' that this program never makes"
    kind, name = sorted(expected - found)[0][:2]
    return f"its {kind} '{name}' is missing"


def aside_path(path: Path, why: str) -> Path:
    """Given a database and why it is set aside (`broken`, `v3`), return a free name for the
    copy: `<name>.<why>`, else that name with the time (UTC) and a number, so no copy ever
    replaces another."""
    plain = path.with_name(f"{path.name}.{why}")
    if not os.path.lexists(plain):
        return plain
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    number = 0
    while True:
        suffix = f"-{number}" if number else ""
        candidate = path.with_name(f"{path.name}.{why}-{stamp}{suffix}")
        if not os.path.lexists(candidate):
            return candidate
        number += 1


def move_aside(path: Path, why: str, what: str) -> Path:
    """Given a database, why it is set aside and what it is (for messages), rename it and its
    write-ahead log to a free name (`aside_path`), and drop its other files; return the new
    name. Raise WorkspaceError if it cannot be renamed."""
    aside = aside_path(path, why)
    try:
        if os.path.lexists(path):
            os.rename(path, aside)
        wal = path.with_name(path.name + "-wal")
        if os.path.lexists(wal):
            # Under the copy's name, its log goes with it: the copy keeps its last commits.
            os.rename(wal, aside.with_name(aside.name + "-wal"))
    except OSError as error:
        raise WorkspaceError(
            f"{what} {path} is unusable and cannot be moved aside ({error}); delete it by hand "
            "to start anew"
        ) from error
    for extra in ("-shm", "-journal"):
        with contextlib.suppress(OSError):
            path.with_name(path.name + extra).unlink()
    return aside


def open_state_db(
    path: Path, what: str, *, busy_timeout: float | None = None
) -> sqlite3.Connection:
    """Given the path of one of the program's SQLite files in the state folder, open it
    without letting a planted link send its reads or writes elsewhere, waiting up to
    `busy_timeout` seconds (default `BUSY_TIMEOUT`) for another process's lock, with a bound on
    each statement's time.

    Raise UnsafePathError if the folder or one of the database's files is a link, and
    WorkspaceError naming `what` if it cannot be opened.
    """
    try:
        real_dir(path.parent)
        # SQLite would open a link planted in place of one of its files and write there.
        for suffix in ("", "-wal", "-shm", "-journal"):
            check_not_link(path.with_name(path.name + suffix))
        wait = BUSY_TIMEOUT if busy_timeout is None else busy_timeout
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=wait)
    except UnsafePathError:
        raise
    except (OSError, sqlite3.Error) as error:
        raise WorkspaceError(
            f"Cannot open {what} {path} ({error}); check the state folder's permissions, or "
            f"delete {path.name} (it is rebuilt)"
        ) from error
    bound_statements(conn)
    return conn


class _Unusable(Exception):
    """The database is not one this program can use as it is; the message says why."""


def prepare_db(conn: sqlite3.Connection, schema: str, version: int) -> bool:
    """Given a fresh connection, create `schema` in it unless it holds this `version` already;
    return False when the database is someone else's (another version or schema, damaged, or
    not a database), so the caller moves it aside. Raise sqlite3.Error for what moving it
    aside would not mend (busy, read-only, full)."""
    try:
        _prepare(conn, schema_statements(schema), version)
    except _Unusable:
        return False
    return True


def _prepare(conn: sqlite3.Connection, statements: tuple[str, ...], version: int) -> None:
    """Make the database hold exactly `statements`' objects at `version`, or raise _Unusable
    (why) when it holds something else; sqlite3.Error for errors that say nothing of it."""
    expected = expected_objects(statements)
    try:
        # Reads first: they neither wait for another process's write nor write anything, and
        # reading the schema is what fails on a file that is not a database.
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        empty = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        if found != version and not (found == 0 and empty):
            raise _Unusable(f"has schema version {found}, this program's is {version}")
        if not empty:
            _check_ours(conn, expected)
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        if empty:
            _create(conn, statements, version, expected)
        result = conn.execute("PRAGMA quick_check").fetchone()[0]
        if result != "ok":
            raise _Unusable(f"is damaged ({result})")
    except sqlite3.DatabaseError as error:
        if is_broken(error):
            raise _Unusable(f"is damaged or not a database ({error})") from error
        raise


def _check_ours(conn: sqlite3.Connection, expected: frozenset[SchemaObject]) -> None:
    problem = check_schema(conn, expected)
    if problem is not None:
        raise _Unusable(f"is not as this program makes it: {problem}")


def _create(
    conn: sqlite3.Connection,
    statements: Iterable[str],
    version: int,
    expected: frozenset[SchemaObject],
) -> None:
    """Create the schema in an empty database, in one transaction with its version: a process
    killed half way leaves an empty database, and of two processes creating it at once the
    second finds the first one's schema (and checks it) instead of making it again."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(version)}")
        elif found != version:
            raise _Unusable(f"has schema version {found}, this program's is {version}")
        else:
            _check_ours(conn, expected)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def open_prepared(
    path: Path,
    what: str,
    schema: str,
    version: int,
    *,
    busy_timeout: float | None = None,
) -> sqlite3.Connection:
    """Given a state database's path, what it is (for messages), its schema and version, open
    it with `schema` ready. A database that is damaged, not one, or not ours (another version,
    an object its schema does not make) is moved aside under a name of its own
    (`<name>.broken`, never replacing an earlier copy) and started afresh: it is a cache.
    Raise UnsafePathError if one of its files is a link, StateBusyError if another process
    holds its lock for over `busy_timeout` seconds (default `BUSY_TIMEOUT`), WorkspaceError
    if it cannot be opened or set up (a read-only folder, a full disk).
    """
    opened = _open_checked(path, what, schema, version, busy_timeout)
    if isinstance(opened, sqlite3.Connection):
        return opened
    aside = move_aside(path, "broken", what)
    log.warning("%s %s %s; moved it to %s and started anew", what, path, opened, aside.name)
    opened = _open_checked(path, what, schema, version, busy_timeout)
    if isinstance(opened, sqlite3.Connection):
        return opened
    raise WorkspaceError(f"Cannot set up {what} {path}: it {opened}; delete it and try again")


def _open_checked(
    path: Path, what: str, schema: str, version: int, busy_timeout: float | None
) -> sqlite3.Connection | _Unusable:
    """Open the database with its schema ready, or return why it is unusable as it is. Raise
    what `open_prepared` raises."""
    conn = open_state_db(path, what, busy_timeout=busy_timeout)
    try:
        _prepare(conn, schema_statements(schema), version)
    except _Unusable as unusable:
        conn.close()
        return unusable
    except sqlite3.Error as error:
        conn.close()
        raise _failure(error, path, what) from error
    except BaseException:
        conn.close()
        raise
    return conn


def _failure(error: sqlite3.Error, path: Path, what: str) -> WorkspaceError:
    """Given an error that moving the database aside would not mend, return the one-line
    error to raise."""
    if is_busy(error):
        return StateBusyError(
            f"{what} {path} is locked by another process ({error}); this run leaves it alone "
            "and tries again next time"
        )
    return WorkspaceError(
        f"Cannot use {what} {path} ({error}); check that the state folder is writable and the "
        "disk has space"
    )
