"""The agent's markdown memory: an incremental SQLite index of its chunks. The chunks come
from `assembler.memory.chunks`; search over them is `assembler.memory.search.MemorySearch`,
which `MemoryIndex` holds and hands its search calls to.

The index (`.scratchpad/index.sqlite`) holds five tables:

- `files(path, mtime_ns, size, content_hash)`: what each indexed file looked like;
- `chunks(id, path, start_line, end_line, text, hash, heading)` and `chunks_fts`, an FTS5
  table (porter stemming over unicode61) whose rowid is the chunk id, for BM25;
- `embeddings(model_id, chunk_hash, vector, created)`: one float32 vector per model and chunk
  hash. Vectors are keyed by content, not by file, so a chunk that did not change is never
  embedded twice, even after a rename or a rebuild of the chunk table;
- `text_vectors(model_id, text_hash, vector, created)`: the vectors of the short texts a
  search embeds (its queries, the sentences of the hits it shows), kept by `KnownVectors` as
  they are first encoded, so a later process embeds only what is new, and loads no model at
  all when nothing is. Kept 30 days from their encoding.

An index of schema version 1 (without `text_vectors`) is upgraded in place: the table is
added, nothing else changes.

Sync is incremental. A file whose (mtime_ns, size) is unchanged is not even opened. A changed
file is read and hashed; if its content is the same only the stat is updated, otherwise it is
re-chunked in one transaction (its chunk rows and its file row together, so a half-written
file does not exist). Then every chunk whose hash has no vector for the current model is
embedded, longest texts first, and each batch of vectors is committed as soon as it is
computed. A process killed at any point therefore leaves an index that the next sync
completes: files not yet written are still "changed", and chunks without vectors are found
by one query and embedded then. A database that is not one, is corrupt, has another schema
version or holds anything its schema does not make (a trigger the agent planted would run on
every insert) is moved aside under a name of its own and rebuilt, with a warning in the sync
report; every statement runs under a time limit (`state_db.bound_statements`).

The agent writes the memory folder: `**` never walks into a link to a folder
(`fsutil.glob_paths`), a note is opened only if it is a regular file, and of a note larger than
`max_note_bytes` only the first part is indexed (the sync report says so). A sync stops between
two files or batches when asked (`should_stop`, or `stopping_syncs` around the caller), so a
daemon stops promptly in the middle of a first index of a large memory.

torch is never imported here: the embedder is injected.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Unpack

import numpy as np

from assembler.config.schema import STATE_DIR
from assembler.errors import ConfigError, StoppedError, WorkspaceError
from assembler.fsutil import (
    allowed_root,
    check_not_link,
    glob_paths,
    read_head,
    real_dir,
    resolves_within,
)
from assembler.memory.chunks import CHUNKER_VERSION, Chunk, chunk_markdown
from assembler.memory.embeddings import Embedder, FloatMatrix
from assembler.memory.search import (
    SQL_VARIABLES,
    Hit,
    MemorySearch,
    SearchOptions,
    checked_vectors,
    is_corruption,
)
from assembler.state_db import aside_path, bound_statements, check_schema, expected_objects
from assembler.tokens import TokenCounter, estimate_tokens

SCHEMA_VERSION = 2
SCRATCHPAD_NAME = "SCRATCHPAD.md"

# Vectors of chunks that no file has any more are kept this long, so a file moved out and
# back, or an edit that is undone, does not cost a new embedding.
ORPHAN_VECTOR_DAYS = 30.0
BUSY_TIMEOUT_MS = 5000
# Of a larger note, only this much (its first whole lines) is indexed: a note of hundreds of
# megabytes would take minutes and gigabytes to chunk, and nobody reads that much of one.
MAX_NOTE_BYTES = 2 * 1024 * 1024
# How many files are looked at between two checks of `should_stop`.
_STOP_EVERY = 256

Progress = Callable[[str, int, int], None]
StopCheck = Callable[[], bool]

# The stop check of the syncs that run inside `stopping_syncs` (in this thread or task).
_STOP_CHECK: ContextVar[StopCheck | None] = ContextVar("memory_sync_stop", default=None)


@contextlib.contextmanager
def stopping_syncs(should_stop: StopCheck) -> Iterator[None]:
    """Given a check that says when to stop, make every sync that runs in this block (in this
    thread) stop between two files or batches once it says so: such a sync raises StoppedError
    and keeps what it finished."""
    token = _STOP_CHECK.set(should_stop)
    try:
        yield
    finally:
        _STOP_CHECK.reset(token)


@dataclass
class SyncReport:
    """What one sync did."""

    files_seen: int = 0
    files_changed: int = 0  # re-chunked
    files_removed: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0  # chunks of changed files whose vector already existed
    skipped: list[str] = field(default_factory=list)  # warnings, each naming the file
    degraded: str | None = None  # why there are no vectors, else None
    seconds: float = 0.0
    files_read: int = 0  # files opened (a file whose stat is unchanged is not)


class _SchemaMismatch(Exception):
    """The database is not this program's index: of another version (`found`), or holding
    objects the schema does not make (`problem`)."""

    def __init__(self, found: int, problem: str | None = None) -> None:
        super().__init__(found)
        self.found = found
        self.problem = problem


_SCHEMA_V1: tuple[str, ...] = (
    """CREATE TABLE files (
        path TEXT PRIMARY KEY,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        content_hash TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        text TEXT NOT NULL,
        hash TEXT NOT NULL,
        heading TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX chunks_by_path ON chunks(path)",
    "CREATE INDEX chunks_by_hash ON chunks(hash)",
    """CREATE VIRTUAL TABLE chunks_fts USING fts5(
        body, tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TABLE embeddings (
        model_id TEXT NOT NULL,
        chunk_hash TEXT NOT NULL,
        vector BLOB NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (model_id, chunk_hash)
    ) WITHOUT ROWID""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)
_TEXT_VECTORS = """CREATE TABLE text_vectors (
        model_id TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        vector BLOB NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (model_id, text_hash)
    ) WITHOUT ROWID"""
_SCHEMA = (*_SCHEMA_V1, _TEXT_VECTORS, f"PRAGMA user_version = {SCHEMA_VERSION}")
# What upgrades an index of an older version to this one, by the version it has: its schema
# (exactly, before anything is written) and the statements that add what it lacks.
_UPGRADES = {1: (_SCHEMA_V1, (_TEXT_VECTORS,))}


class MemoryIndex:
    """The incremental index of a workspace's memory files, and search over it.

    Safe to share between threads (calls are serialised) and between processes (SQLite WAL
    with a busy timeout; each process sees the others' commits).
    """

    def __init__(
        self,
        workspace: Path,
        *,
        db_path: Path,
        sources: Sequence[str],
        exclude: Sequence[str] = (),
        embedder: Embedder | None,
        chunk_tokens: int = 400,
        overlap_tokens: int = 80,
        count: TokenCounter = estimate_tokens,
        embed_batch: int = 256,
        clock: Callable[[], float] = time.time,
        max_note_bytes: int = MAX_NOTE_BYTES,
    ) -> None:
        """Given the workspace, the database path, the source and exclude globs and the
        embedder (None for BM25 alone), open or create the index.

        `embed_batch` is how many chunks are encoded (and committed) at a time; `clock` gives
        the time in seconds that ages orphaned vectors; of a note larger than `max_note_bytes`
        only its first whole lines up to that size are indexed. Raise ConfigError if the chunk
        sizes are inconsistent, WorkspaceError if the database folder cannot be created or the
        database cannot be opened (a corrupt one is moved aside, not raised).
        """
        if chunk_tokens <= 0:
            raise ConfigError(f"chunk_tokens must be positive, got {chunk_tokens}")
        if not 0 <= overlap_tokens < chunk_tokens:
            raise ConfigError(
                f"overlap_tokens ({overlap_tokens}) must be at least 0 and smaller than "
                f"chunk_tokens ({chunk_tokens}); lower memory.chunk_overlap"
            )
        if embed_batch <= 0:
            raise ConfigError(f"embed_batch must be positive, got {embed_batch}")
        if max_note_bytes <= 0:
            raise ConfigError(f"max_note_bytes must be positive, got {max_note_bytes}")
        self.workspace = Path(workspace)
        self.db_path = Path(db_path)
        self.sources = list(sources)
        self.exclude = list(exclude)
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens
        self.count = count
        self.embed_batch = embed_batch
        self.max_note_bytes = max_note_bytes
        self._clock = clock
        self._excluded = [_glob_matcher(p) for p in self.exclude]
        self._lock = threading.RLock()
        self._warnings: list[str] = []
        # The connection is looked up on each use: a repair replaces it and close drops it.
        self._search = MemorySearch(lambda: self._db, lock=self._lock, embedder=None)
        self.embedder = embedder
        self._conn: sqlite3.Connection | None = self._open()

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database; further calls reopen nothing and fail."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._search.forget()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder | None:
        """Return the embedder that search uses (None for BM25 alone): the one given, reading
        through the vectors this index keeps of short texts (see `KnownVectors`)."""
        return self._search.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        """Given an embedder (None for BM25 alone), use it from now on for sync and search."""
        if embedder is None or self._reads_through(embedder):
            self._search.embedder = embedder
        else:
            self._search.embedder = KnownVectors(embedder, self)

    def _reads_through(self, embedder: Embedder) -> bool:
        """Return whether an embedder already reads through this index's known vectors: it
        is one, or wraps one (as the daemon's RememberedQueries wraps the index's own)."""
        inner = getattr(embedder, "embedder", None)
        return any(isinstance(e, KnownVectors) and e.index is self for e in (embedder, inner))

    @property
    def _model(self) -> Embedder | None:
        """Return the embedder without the known vectors: chunks are embedded once each and
        kept in `embeddings`, and should not fill the cache of short texts."""
        embedder = self._search.embedder
        inner = getattr(embedder, "embedder", None)
        for candidate in (embedder, inner):
            if isinstance(candidate, KnownVectors) and candidate.index is self:
                return candidate.inner
        return embedder

    def load_model(self) -> None:
        """Load the embedding model now (one short text encoded), if there is one, rather than
        at the first search that needs it. Raise what the embedder raises."""
        if (model := self._model) is not None:
            model.encode(["warm"])

    def known_vectors(self, model_id: str, keys: Sequence[str]) -> dict[str, bytes]:
        """Given a model and the hashes of texts (see `text_key`), return the vectors kept of
        those it has, by hash; none when the database cannot be read (the model then
        encodes them)."""
        found: dict[str, bytes] = {}
        with self._lock:
            try:
                for start in range(0, len(keys), SQL_VARIABLES):
                    part = keys[start : start + SQL_VARIABLES]
                    marks = ",".join("?" * len(part))
                    found.update(
                        self._db.execute(
                            "SELECT text_hash, vector FROM text_vectors WHERE model_id = ? "
                            f"AND text_hash IN ({marks})",
                            (model_id, *part),
                        ).fetchall()
                    )
            except (sqlite3.Error, WorkspaceError):
                return {}
        return found

    def keep_vectors(self, model_id: str, vectors: Sequence[tuple[str, bytes]]) -> None:
        """Given a model and (text hash, vector) pairs just encoded, keep them for later
        processes; a database that cannot be written (read-only, busy, closed) keeps none."""
        with self._lock, contextlib.suppress(sqlite3.Error, WorkspaceError):
            now = self._clock()
            with self._transaction() as tx:
                tx.executemany(
                    "INSERT OR REPLACE INTO text_vectors (model_id, text_hash, vector, created) "
                    "VALUES (?, ?, ?, ?)",
                    [(model_id, key, vector, now) for key, vector in vectors],
                )

    @property
    def search_degraded(self) -> str | None:
        """Return why the last search ran without vectors although there is an embedder, or
        None if it used them."""
        return self._search.degraded

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise WorkspaceError(f"The memory index {self.db_path} is closed; open it again")
        return self._conn

    def _open(self) -> sqlite3.Connection:
        """Return a connection to a usable index, creating or repairing the database.

        Raise WorkspaceError if the folder or the database cannot be used at all.
        """
        try:
            real_dir(self.db_path.parent)
            # SQLite would open a link planted in place of one of its files and write there.
            for suffix in ("", "-wal", "-shm", "-journal"):
                check_not_link(self.db_path.with_name(self.db_path.name + suffix))
        except OSError as error:
            raise WorkspaceError(
                f"Cannot use the index folder '{self.db_path.parent}' ({error}); check "
                "that the workspace is writable"
            ) from error
        for attempt in range(3):
            conn: sqlite3.Connection | None = None
            try:
                conn = sqlite3.connect(
                    self.db_path, isolation_level=None, check_same_thread=False, timeout=5.0
                )
                bound_statements(conn)
                self._prepare(conn)
                return conn
            except _SchemaMismatch as mismatch:
                assert conn is not None
                conn.close()
                if mismatch.problem is not None:
                    aside = self._move_aside("foreign")
                    self._warnings.append(
                        f"Index {self.db_path} is not as this program makes it "
                        f"({mismatch.problem}); moved it to {aside.name} and rebuilt the index"
                    )
                    continue
                aside = self._move_aside(f"v{mismatch.found}")
                self._warnings.append(
                    f"Index {self.db_path} has schema version {mismatch.found}, this program "
                    f"uses {SCHEMA_VERSION}; moved it to {aside.name} and rebuilt the index"
                )
            except sqlite3.DatabaseError as error:
                if conn is not None:
                    conn.close()
                if not is_corruption(error) or attempt == 2:
                    raise WorkspaceError(
                        f"Cannot open the memory index {self.db_path} ({error}); check the "
                        f"folder's permissions, or delete {self.db_path.name}* to rebuild it"
                    ) from error
                self._warnings.append(self._repair_note(error))
        raise WorkspaceError(  # pragma: no cover - every loop pass returns, retries or raises
            f"Cannot open the memory index {self.db_path}; delete {self.db_path.name}* to "
            "rebuild it"
        )

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Given a fresh connection, set it up and make sure the schema is ours.

        Raise _SchemaMismatch for another schema, sqlite3.DatabaseError for a corrupt file.
        """
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Reading the header and the schema is what fails on a file that is not a database.
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for _ in range(2):
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if version == SCHEMA_VERSION and names:
                # Exactly our objects, before anything is written: a trigger planted on one
                # of our tables would run with every insert.
                problem = check_schema(conn, expected_objects(_SCHEMA))
                if problem is not None:
                    raise _SchemaMismatch(version, problem)
                return
            if version in _UPGRADES and names:
                self._upgrade(conn, version)
                continue
            if version != 0 or names:
                raise _SchemaMismatch(version)
            # Two processes may create the schema at once: the second waits for the write
            # lock, then sees the first one's tables and creates nothing.
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                    for statement in _SCHEMA:
                        conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

    @staticmethod
    def _upgrade(conn: sqlite3.Connection, version: int) -> None:
        """Given a connection to an index of an older schema version, add what this version
        adds, in one transaction: nothing it holds is lost. Raise _SchemaMismatch if it holds
        anything that version's schema does not make."""
        old, added = _UPGRADES[version]
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have upgraded it while this one waited for the lock.
            if conn.execute("PRAGMA user_version").fetchone()[0] == version:
                problem = check_schema(conn, expected_objects(old))
                if problem is not None:
                    raise _SchemaMismatch(version, problem)
                for statement in added:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _repair_note(self, error: sqlite3.DatabaseError) -> str:
        """Move a corrupt database aside; return the warning that says so."""
        aside = self._move_aside("corrupt")
        return (
            f"Index {self.db_path} was unreadable ({error}); moved it to {aside.name} and "
            "rebuilt the index"
        )

    def _move_aside(self, suffix: str) -> Path:
        """Rename the database to `<name>.<suffix>` (with the time and a number when that name
        is taken: no copy replaces another) and drop its WAL.

        Raise WorkspaceError if the file cannot be renamed.
        """
        aside = aside_path(self.db_path, suffix)
        try:
            if self.db_path.exists():
                os.replace(self.db_path, aside)
        except OSError as error:
            raise WorkspaceError(
                f"The memory index {self.db_path} is unusable and cannot be moved aside "
                f"({error}); delete it by hand to rebuild the index"
            ) from error
        for extra in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                self.db_path.with_name(self.db_path.name + extra).unlink()
        return aside

    def _recover(self, error: sqlite3.DatabaseError) -> None:
        """Replace a database found corrupt while in use by a fresh one (with a warning)."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        self._search.forget()
        self._warnings.append(self._repair_note(error))
        self._conn = self._open()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        # IMMEDIATE takes the write lock up front, so two writers wait for each other (busy
        # timeout) instead of failing when a read transaction tries to become a write.
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- sync -----------------------------------------------------------------------------

    def sync(
        self,
        *,
        rebuild: bool = False,
        progress: Progress | None = None,
        should_stop: StopCheck | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the memory files; return what was done.

        `rebuild` forgets every file and chunk (not the vectors) and reads everything again.
        `progress(stage, done, total)` is called with stage "read" and "embed". `should_stop`
        (default: the one `stopping_syncs` set) is asked between files and batches. Raise
        StoppedError once it says stop (what was finished is kept; the next sync goes on),
        ModelError (or whatever the embedder raises) if embedding fails; the index stays
        consistent, and the next sync embeds what is missing. Raise WorkspaceError if the
        database cannot be used at all.
        """
        stop = should_stop if should_stop is not None else _STOP_CHECK.get()
        with self._lock:
            started = time.perf_counter()
            try:
                report = self._sync(rebuild, progress, stop)
            except sqlite3.DatabaseError as error:
                self._search.forget()
                if not is_corruption(error):
                    raise
                self._recover(error)
                report = self._sync(True, progress, stop)
            except BaseException:
                self._search.forget()
                raise
            # Our own commits do not move data_version; a sync that changed what search sees
            # drops the caches itself (one that changed nothing keeps them warm).
            if rebuild or report.files_changed or report.files_removed or report.chunks_embedded:
                self._search.forget()
            report.skipped[:0] = self._warnings
            self._warnings = []
            report.seconds = time.perf_counter() - started
            return report

    def out_of_step(self) -> list[str]:
        """Return, without changing anything, the memory files the index does not hold as they
        are now: each "new PATH", "changed PATH" or "gone PATH" (by size and modification time,
        as a sync tells them)."""
        with self._lock:
            known = {
                path: (mtime, size)
                for path, mtime, size in self._db.execute("SELECT path, mtime_ns, size FROM files")
            }
        found: list[str] = []
        present: set[str] = set()
        for rel, path in self._discover([]):
            try:
                stat = path.stat()
            except OSError:
                continue
            present.add(rel)
            old = known.get(rel)
            if old is None:
                found.append(f"new {rel}")
            elif old != (stat.st_mtime_ns, stat.st_size):
                found.append(f"changed {rel}")
        found += [f"gone {rel}" for rel in sorted(set(known) - present)]
        return found

    def _sync(self, rebuild: bool, progress: Progress | None, stop: StopCheck | None) -> SyncReport:
        report = SyncReport()
        model_id = self.embedder.model_id if self.embedder is not None else None
        db = self._db
        if rebuild:
            with self._transaction() as tx:
                tx.execute("DELETE FROM chunks_fts")
                tx.execute("DELETE FROM chunks")
                tx.execute("DELETE FROM files")
        chunker = (
            f"{CHUNKER_VERSION}:{self.chunk_tokens}:{self.overlap_tokens}:"
            f"{getattr(self.count, '__module__', '')}.{getattr(self.count, '__qualname__', '')}"
        )
        row = db.execute("SELECT value FROM meta WHERE key = 'chunker'").fetchone()
        if row is None or row[0] != chunker:
            # Files chunked with other settings must look changed, content included (so they
            # are re-chunked, not just restamped). The new settings are recorded at once: a
            # sync killed half-way keeps the files it has already re-chunked.
            with self._transaction() as tx:
                tx.execute("UPDATE files SET mtime_ns = -1, content_hash = ''")
                tx.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('chunker', ?)", (chunker,)
                )
        known = {
            path: (mtime, size, digest)
            for path, mtime, size, digest in db.execute(
                "SELECT path, mtime_ns, size, content_hash FROM files"
            )
        }
        present: set[str] = set()
        to_read: list[tuple[str, Path, os.stat_result]] = []
        for seen, (rel, path) in enumerate(self._discover(report.skipped)):
            if seen % _STOP_EVERY == 0:
                _check_stop(stop)
            try:
                stat = path.stat()
            except OSError as error:
                report.skipped.append(f"{rel}: cannot be read ({_reason(error)}); skipped")
                continue
            report.files_seen += 1
            present.add(rel)
            if stat.st_size > self.max_note_bytes:
                # Said on every sync, not only the one that reads it: the note stays cut.
                report.skipped.append(
                    f"{rel}: {stat.st_size:,} bytes, over the {self.max_note_bytes:,} bytes of "
                    "a memory note that are indexed; only its first part is searched (split it "
                    "into smaller notes)"
                )
            old = known.get(rel)
            if old and (old[0], old[1]) == (stat.st_mtime_ns, stat.st_size):
                continue
            to_read.append((rel, path, stat))

        changed_hashes: list[str] = []
        restamped: list[tuple[int, int, str]] = []
        _report(progress, "read", 0, len(to_read))
        for done, (rel, path, stat) in enumerate(to_read, start=1):
            _check_stop(stop)
            text, digest, problem = self._read(path)
            report.files_read += 1
            if problem is not None:
                report.skipped.append(f"{rel}: {problem}; skipped")
                present.discard(rel)
            elif (old := known.get(rel)) and old[2] == digest:
                restamped.append((stat.st_mtime_ns, stat.st_size, rel))
            else:
                assert text is not None and digest is not None
                chunks = chunk_markdown(
                    text,
                    chunk_tokens=self.chunk_tokens,
                    overlap_tokens=self.overlap_tokens,
                    count=self.count,
                )
                self._write_file(rel, stat, digest, chunks)
                report.files_changed += 1
                changed_hashes.extend(chunk.hash for chunk in chunks)
            _report(progress, "read", done, len(to_read))

        removed = [path for path in known if path not in present]
        with self._transaction() as tx:
            tx.executemany("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", restamped)
            for path in removed:
                self._delete_file(tx, path)
        report.files_removed = len(removed)

        if model_id is None:
            report.degraded = "no embedding model: search uses keyword (BM25) matching alone"
        else:
            existing = self._hashes_with_vectors(model_id, set(changed_hashes))
            report.chunks_reused = sum(1 for h in changed_hashes if h in existing)
            report.chunks_embedded = self._embed_missing(model_id, progress, stop)
        if report.files_changed or report.files_removed:
            self._forget_orphan_vectors()
        report.chunks_total = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return report

    def _discover(self, skipped: list[str]) -> list[tuple[str, Path]]:
        """Return the memory files (relative POSIX path, path), sorted, without exclusions.

        A file that resolves outside the folder its pattern may reach (a link in the
        workspace to `/etc/passwd`, say: see `fsutil.allowed_root`) is not indexed, and a line
        in `skipped` says so.
        """
        found: dict[str, Path] = {}
        root = str(self.workspace)
        for pattern in self.sources:
            expanded = os.path.expanduser(pattern.strip())
            if not expanded:
                continue
            # `**` never walks into a link to a folder: two links to `.` would never end.
            names = glob_paths(expanded, root_dir=None if os.path.isabs(expanded) else root)
            allowed = allowed_root(pattern, self.workspace)
            for name in names:
                path = Path(name) if os.path.isabs(name) else self.workspace / name
                rel = Path(os.path.relpath(path, root)).as_posix()
                if rel in found or path.is_dir() or self._is_excluded(rel):
                    continue
                if not path.is_file():  # a named pipe (never opened: it would block), a socket
                    skipped.append(f"{rel}: not a regular file; skipped")
                    continue
                if not resolves_within(path, allowed):
                    skipped.append(
                        f"{rel}: a link to {os.path.realpath(path)}, outside {allowed}; "
                        "skipped (memory files are read only where their pattern points)"
                    )
                    continue
                found[rel] = path
        return sorted(found.items())

    def _is_excluded(self, rel: str) -> bool:
        parts = rel.split("/")
        if parts[0] == STATE_DIR or (len(parts) == 1 and rel.casefold() == "scratchpad.md"):
            return True
        return any(matches(rel) for matches in self._excluded)

    def _read(self, path: Path) -> tuple[str | None, str | None, str | None]:
        """Given a file, return (text, content hash, None), or (None, None, why unusable). Of
        a file larger than `max_note_bytes`, the text is its whole lines up to that size."""
        try:
            # Not blocking: a named pipe among the notes would stop the sync for good.
            data, size = read_head(path, self.max_note_bytes)
        except OSError as error:
            return None, None, f"cannot be read ({_reason(error)}); fix its permissions"
        if size > len(data):
            data = _whole_lines(data)
        if b"\x00" in data:
            return None, None, "looks binary (it contains NUL bytes); only text is indexed"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            return (
                None,
                None,
                (f"is not UTF-8 text (bad byte at offset {error.start}); convert it to UTF-8"),
            )
        return text.removeprefix("\ufeff"), _digest(data), None

    def _write_file(
        self, rel: str, stat: os.stat_result, digest: str, chunks: Sequence[Chunk]
    ) -> None:
        # The file row is written in the same transaction as its chunks: a file either has
        # all its new chunks and its new stamp, or still looks changed to the next sync.
        with self._transaction() as tx:
            self._delete_file(tx, rel)
            for chunk in chunks:
                cursor = tx.execute(
                    "INSERT INTO chunks (path, start_line, end_line, text, hash, heading) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (rel, chunk.start_line, chunk.end_line, chunk.text, chunk.hash, chunk.heading),
                )
                tx.execute(
                    "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)",
                    (cursor.lastrowid, chunk.embed_text),
                )
            tx.execute(
                "INSERT OR REPLACE INTO files (path, mtime_ns, size, content_hash) "
                "VALUES (?, ?, ?, ?)",
                (rel, stat.st_mtime_ns, stat.st_size, digest),
            )

    @staticmethod
    def _delete_file(tx: sqlite3.Connection, rel: str) -> None:
        tx.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)", (rel,)
        )
        tx.execute("DELETE FROM chunks WHERE path = ?", (rel,))
        tx.execute("DELETE FROM files WHERE path = ?", (rel,))

    def _hashes_with_vectors(self, model_id: str, hashes: set[str]) -> set[str]:
        found: set[str] = set()
        ordered = sorted(hashes)
        for start in range(0, len(ordered), SQL_VARIABLES):
            part = ordered[start : start + SQL_VARIABLES]
            marks = ",".join("?" * len(part))
            found.update(
                row[0]
                for row in self._db.execute(
                    f"SELECT chunk_hash FROM embeddings WHERE model_id = ? "
                    f"AND chunk_hash IN ({marks})",
                    (model_id, *part),
                )
            )
        return found

    def _embed_missing(
        self, model_id: str, progress: Progress | None, stop: StopCheck | None = None
    ) -> int:
        """Embed every current chunk that has no vector for this model; return how many.

        Each batch is committed as soon as it is encoded, so work survives a kill (and a stop,
        which is looked for before each batch: StoppedError).
        """
        model = self._model
        assert model is not None
        missing = self._db.execute(
            "SELECT hash, heading, text FROM chunks c WHERE NOT EXISTS ("
            "SELECT 1 FROM embeddings e WHERE e.model_id = ? AND e.chunk_hash = c.hash"
            ") GROUP BY hash",
            (model_id,),
        ).fetchall()
        if not missing:
            return 0
        items = [(h, Chunk(0, 0, text, heading).embed_text) for h, heading, text in missing]
        # Longest first across all batches: each batch then pads to similar lengths.
        items.sort(key=lambda item: len(item[1]), reverse=True)
        total = len(items)
        _report(progress, "embed", 0, total)
        for start in range(0, total, self.embed_batch):
            _check_stop(stop)
            batch = items[start : start + self.embed_batch]
            vectors = checked_vectors(model.encode([t for _, t in batch]), len(batch))
            now = self._clock()
            with self._transaction() as tx:
                tx.executemany(
                    "INSERT OR REPLACE INTO embeddings (model_id, chunk_hash, vector, created) "
                    "VALUES (?, ?, ?, ?)",
                    [
                        (model_id, h, vector.tobytes(), now)
                        for (h, _), vector in zip(batch, vectors, strict=True)
                    ],
                )
            _report(progress, "embed", min(start + len(batch), total), total)
        return total

    def _forget_orphan_vectors(self) -> None:
        cutoff = self._clock() - ORPHAN_VECTOR_DAYS * 86400
        with self._transaction() as tx:
            tx.execute("DELETE FROM text_vectors WHERE created < ?", (cutoff,))
            tx.execute(
                "DELETE FROM embeddings WHERE created < ? AND NOT EXISTS "
                "(SELECT 1 FROM chunks WHERE chunks.hash = embeddings.chunk_hash)",
                (cutoff,),
            )

    # -- search ---------------------------------------------------------------------------

    def search(self, query: str, **options: Unpack[SearchOptions]) -> list[Hit]:
        """Given a query and search options, return up to k hits, best first (see
        `MemorySearch.search_many` for the options and the score). Raise ValueError for
        invalid options."""
        return self.search_many([query], **options)[0]

    def search_many(
        self, queries: Sequence[str], **options: Unpack[SearchOptions]
    ) -> list[list[Hit]]:
        """Given queries and search options, return the hits of each (as `search`), embedding
        the queries in one batch. A corrupt database gives no hits: it is moved aside, and the
        next sync rebuilds it and reports the repair. Raise ValueError for invalid options.
        """
        with self._lock:
            try:
                return self._search.search_many(queries, **options)
            except sqlite3.DatabaseError as error:
                if not is_corruption(error):
                    raise
                # The next sync rebuilds the fresh database and reports the repair.
                self._recover(error)
                return [[] for _ in queries]

    def chunk_count(self) -> int:
        """Return how many chunks the index holds now."""
        return self._search.chunk_count()

    def snippet_weights(self, query: str) -> dict[str, float]:
        """Given a query, return the stems a snippet looks for with their weights (see
        `MemorySearch.snippet_weights`)."""
        return self._search.snippet_weights(query)


class KnownVectors:
    """An Embedder over another that keeps, in its index, the vector of every text it encodes
    (by the model and a hash of the text), and encodes only the texts it has no vector of.

    What a search embeds is short and mostly the same from one run to the next: the recent
    human messages (its queries), the sentences of the hits it shows. A fresh process then
    embeds only what is new, and loads no model at all when nothing is.
    """

    def __init__(self, inner: Embedder, index: MemoryIndex) -> None:
        self.inner = inner
        self.index = index

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """Given texts, return their unit vectors: those kept in the index, the others encoded
        by the model (and kept). Raise what the model raises."""
        if not texts:
            return self.inner.encode(texts)
        model_id = self.inner.model_id
        keys = [text_key(text) for text in texts]
        found = self.index.known_vectors(model_id, list(dict.fromkeys(keys)))
        todo = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if todo:
            encoded = checked_vectors(self.inner.encode(list(todo.values())), len(todo))
            made = {key: row.tobytes() for key, row in zip(todo, encoded, strict=True)}
            self.index.keep_vectors(model_id, list(made.items()))
            found.update(made)
        width = len(found[keys[0]])
        if any(len(found[key]) != width for key in keys):
            # Kept by another export of the model with another size: the model decides.
            return self.inner.encode(texts)
        return np.frombuffer(b"".join(found[key] for key in keys), dtype=np.float32).reshape(
            len(keys), width // 4
        )


def text_key(text: str) -> str:
    """Given a text, return the hash its vector is kept under."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Given an exclude glob, return a test for relative POSIX paths.

    `**` spans folders, `*` and `?` stay within one, a trailing `/` means everything under
    that folder, and a pattern without `/` matches the file name at any depth.
    """
    text = pattern.strip().removeprefix("./")
    if text.endswith("/"):
        text += "**"
    regex = re.compile(_glob_regex(text))
    if "/" not in text:
        return lambda rel: regex.fullmatch(rel.rsplit("/", 1)[-1]) is not None
    return lambda rel: regex.fullmatch(rel) is not None


def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 2)) != -1:
            inner = pattern[i + 1 : close]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append(f"[{inner.replace(chr(92), chr(92) * 2)}]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _check_stop(stop: StopCheck | None) -> None:
    """Raise StoppedError if the stop check says stop."""
    if stop is not None and stop():
        raise StoppedError(
            "the memory index sync stopped as asked; what it finished is kept, and the next "
            "sync goes on from there"
        )


def _whole_lines(data: bytes) -> bytes:
    """Given the first bytes of a longer file, return them up to the end of their last whole
    line (else of their last whole UTF-8 character): the cut must not split either."""
    newline = data.rfind(b"\n")
    if newline >= 0:
        return data[: newline + 1]
    start = len(data) - 1
    while start > 0 and len(data) - start < 4 and data[start] & 0xC0 == 0x80:
        start -= 1  # back over continuation bytes to the last character's first byte
    lead = data[start] if data else 0
    length = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return data if len(data) - start >= length else data[:start]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _report(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)
