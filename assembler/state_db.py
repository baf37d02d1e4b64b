"""The program's SQLite files in the state folder (the mood history, the assembly log): opened
without following a planted link, given their schema and version in one transaction, and moved
aside and started anew when broken or another version's (each is a cache or a record, never
the only copy of anything).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

from assembler.errors import UnsafePathError, WorkspaceError
from assembler.fsutil import check_not_link, real_dir

log = logging.getLogger(__name__)


def open_state_db(path: Path, what: str) -> sqlite3.Connection:
    """Given the path of one of the program's SQLite files in the state folder, open it
    without letting a planted link send its reads or writes elsewhere.

    Raise UnsafePathError if the folder or one of the database's files is a link, and
    WorkspaceError naming `what` if it cannot be opened.
    """
    try:
        real_dir(path.parent)
        # SQLite would open a link planted in place of one of its files and write there.
        for suffix in ("", "-wal", "-shm", "-journal"):
            check_not_link(path.with_name(path.name + suffix))
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    except UnsafePathError:
        raise
    except (OSError, sqlite3.Error) as error:
        raise WorkspaceError(
            f"Cannot open {what} {path} ({error}); check the state folder's permissions, or "
            f"delete {path.name} (it is rebuilt)"
        ) from error
    return conn


def prepare_db(conn: sqlite3.Connection, schema: str, version: int) -> bool:
    """Given a fresh connection, create `schema` in it unless it holds this `version` already;
    return False when the database is someone else's (another version, or not a database),
    so the caller moves it aside."""
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        # The check, the schema and its version in one transaction: a process killed half way
        # leaves an empty database, and two processes opening a new one at once do not take
        # each other's half-made schema for someone else's database.
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if found != version and (found != 0 or tables):
                conn.execute("ROLLBACK")
                return False
            for statement in schema.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(version)}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError:
        return False
    return True


def open_prepared(path: Path, what: str, schema: str, version: int) -> sqlite3.Connection:
    """Given a state database's path, what it is (for messages), its schema and version, open
    it with `schema` ready; a database that is broken or not ours is moved aside
    (`<name>.broken`) and started afresh: it is a cache. Raise UnsafePathError if one of its
    files is a link, WorkspaceError if it cannot be opened or set up.
    """
    conn = open_state_db(path, what)
    if prepare_db(conn, schema, version):
        return conn
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            part.replace(part.with_name(part.name + ".broken"))
    log.warning("%s %s was unreadable or of another version; moved aside, started anew", what, path)
    conn = open_state_db(path, what)
    if not prepare_db(conn, schema, version):
        conn.close()
        raise WorkspaceError(f"Cannot set up {what} {path}; delete it and try again")
    return conn
