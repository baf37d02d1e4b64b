"""The memory index's lifecycle: opening it, keeping it in sync with the memory files, and
closing it.

Where the workspace's index is kept and with which search options; opening it with its
embedding model (loaded only when something needs embedding), or on keywords alone when the
model cannot be loaded; one index kept open and warm from one assembly to the next
(`WarmMemory`); a throwaway copy for a dry run (`memory_copy`). Which hits a conversation is
shown is `assembler.memory.recall`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import ModelError, Problem, UnsafePathError, WorkspaceError
from assembler.fsutil import read_state_file
from assembler.memory.embeddings import LazyEmbedder
from assembler.memory.index import MemoryIndex, SyncReport
from assembler.memory.recall import RememberedQueries
from assembler.tokens import get_counter

if TYPE_CHECKING:
    from assembler.config.schema import Config


def index_options(config: Config) -> dict[str, Any]:
    """Return the search options of `config.memory`, as `MemoryIndex.search` takes them."""
    memory = config.memory
    return {
        "vector_weight": memory.vector_weight,
        "bm25_weight": memory.bm25_weight,
        "min_score": memory.min_score,
        "mmr_lambda": memory.mmr_lambda if memory.mmr else None,
        "recency_weight": memory.recency_weight,
        "recency_half_life_days": memory.recency_half_life_days,
    }


def index_path(config: Config) -> Path:
    """Given the config, return where the workspace's memory index is kept."""
    return config.state_dir / config.memory.index_path


def open_memory(
    config: Config, *, embedder_off: bool = False, db_path: Path | None = None
) -> tuple[MemoryIndex, str | None]:
    """Given the config, return the workspace's memory index (or the one at `db_path`) and why
    it has no embeddings (None when it has them). The model loads only when something needs
    embedding.
    """
    memory = config.memory
    off = embedder_off or memory.model == "none"
    embedder = None if off else LazyEmbedder(memory.model, batch_size=memory.batch_size)
    index = MemoryIndex(
        config.workspace,
        db_path=db_path if db_path is not None else index_path(config),
        sources=memory.sources,
        exclude=[*memory.exclude, config.output.path],
        embedder=embedder,
        chunk_tokens=memory.chunk_tokens,
        overlap_tokens=memory.chunk_overlap,
        count=get_counter(config.tokens.counter),
    )
    reason = "memory.model is 'none': keyword (BM25) search only" if embedder is None else None
    return index, reason


class WarmMemory:
    """One memory index kept open from one assembly to the next (the daemon's), so its loaded
    model, its search caches and the vectors of recent queries stay warm, and a cycle costs
    only what changed. A config whose memory settings or workspace differ from the last one's
    opens a new index.

    With `watched=True` the owner watches the memory files and calls `files_changed()` when
    one changes (and whenever it wants a full check, e.g. on its interval): the index is then
    synced only after such a call, not on every assembly, which saves listing and stat-ing
    every memory file when only a transcript changed.
    """

    def __init__(self, *, watched: bool = False) -> None:
        self.watched = watched
        self._index: MemoryIndex | None = None
        self._reason: str | None = None
        self._key: str | None = None
        self._stale = True
        self._last: SyncReport | None = None

    @property
    def sync_due(self) -> bool:
        """Whether the next assembly syncs the index (always, when not watched)."""
        return self._stale or not self.watched

    def files_changed(self) -> None:
        """Note that a memory file changed (thread-safe): the next assembly syncs the index."""
        self._stale = True

    def sync(
        self,
        index: MemoryIndex,
        *,
        rebuild: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> SyncReport:
        """Given the kept index, sync it, unless it is watched and no file changed since the
        last sync; then return the last sync's totals with nothing changed or embedded."""
        last = self._last
        if self.watched and not self._stale and not rebuild and last is not None:
            return replace(
                last,
                files_changed=0,
                files_removed=0,
                chunks_embedded=0,
                chunks_reused=0,
                files_read=0,
                seconds=0.0,
                skipped=list(last.skipped),
            )
        # Cleared before the sync: a change that lands while it runs marks it stale again.
        self._stale = False
        try:
            self._last = index.sync(rebuild=rebuild, progress=progress)
        except BaseException:
            self._stale = True
            raise
        return self._last

    def open(self, config: Config) -> tuple[MemoryIndex, str | None]:
        """Given the config, return its memory index (the one kept open when the settings are
        the same) and why it has no embeddings (None when it has them)."""
        key = repr((config.workspace, config.memory, config.output.path, config.tokens))
        if self._index is None or key != self._key:
            self.close()
            self._stale = True
            self._index, self._reason = open_memory(config)
            if self._index.embedder is not None:
                self._index.embedder = RememberedQueries(self._index.embedder)
            self._key = key
        return self._index, self._reason

    def close(self) -> None:
        """Close the kept index, if any."""
        if self._index is not None:
            self._index.close()
        self._index = self._key = None
        self._last = None


@dataclass
class OpenMemory:
    """A synced memory index, what the sync did, and why search runs on keywords (BM25) alone
    when it does.

    As a context manager it gives the index and closes it afterwards, unless a WarmMemory
    keeps it for the next assembly.
    """

    index: MemoryIndex
    report: SyncReport
    synced_fallback: Problem | None = None  # why the sync left the index without vectors
    kept: bool = False
    scratch: Path | None = None  # the temporary folder of a copy, removed on closing

    @property
    def fallback(self) -> Problem | None:
        """Why search runs on keywords alone, or None when it uses the embeddings too: the
        model failed on the queries of the last search, else the sync's reason (the model
        cannot be loaded, or the config asks for keyword search: kind "keyword search")."""
        if self.index.search_degraded:
            return Problem("memory search", self.index.search_degraded, "memory")
        return self.synced_fallback

    def __enter__(self) -> MemoryIndex:
        return self.index

    def __exit__(self, *exc: object) -> None:
        if not self.kept:
            self.index.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def synced_memory(
    config: Config,
    *,
    rebuild: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    warm: WarmMemory | None = None,
    db_path: Path | None = None,
) -> OpenMemory:
    """Given the config, open the memory index (the workspace's, or the one at `db_path`) and
    bring it up to date with the files.

    With `warm`, the index it keeps open is used (and stays open). If the embedding model
    cannot be loaded, the index is synced and searched on BM25 alone, and `fallback` says why:
    memory search degrades, it never fails the assembly.
    """
    if warm is not None:
        index, reason = warm.open(config)
    else:
        index, reason = open_memory(config, db_path=db_path)
    try:
        if warm is not None:
            report = warm.sync(index, rebuild=rebuild, progress=progress)
        else:
            report = index.sync(rebuild=rebuild, progress=progress)
    except ModelError as error:
        if warm is not None:
            warm.close()  # the next assembly tries the model again
        else:
            index.close()
        index, _ = open_memory(config, embedder_off=True, db_path=db_path)
        report = index.sync(rebuild=rebuild, progress=progress)
        failed = f"embeddings unavailable ({error}); keyword (BM25) search only"
        return OpenMemory(index, report, Problem("memory search", failed, "memory"))
    chosen = config.memory.model == "none"
    why = reason or report.degraded
    fallback = None
    if why is not None:
        fallback = Problem("memory search", why, "keyword search" if chosen else "memory")
    return OpenMemory(index, report, fallback, kept=warm is not None)


def memory_copy(config: Config) -> OpenMemory:
    """Given the config, return a copy of the workspace's memory index in a temporary folder,
    synced with the memory files, and removed when the OpenMemory is closed: what a dry run
    searches, so that it finds what a real run would and leaves the workspace as it was.

    The index is copied as bytes (the database and its write-ahead log): SQLite opens even a
    read-only connection to a database in WAL mode by creating files beside it. A copy taken
    while another process writes may be torn; the copy is then rebuilt from the memory files,
    as a corrupt index is. Raise AssemblerError (UnsafePathError for a link) if the index
    cannot be read.
    """
    source = index_path(config)
    folder = Path(tempfile.mkdtemp(prefix="assemble-dry-run-"))
    try:
        for suffix in ("", "-wal"):
            name = source.name + suffix
            try:
                data = read_state_file(source.with_name(name)).data
            except UnsafePathError:
                raise
            except OSError as error:
                raise WorkspaceError(
                    f"Cannot read the memory index {source.with_name(name)} ({error}); check "
                    "its permissions"
                ) from error
            if data is not None:
                (folder / name).write_bytes(data)
        memory = synced_memory(config, db_path=folder / source.name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    memory.scratch = folder
    return memory
