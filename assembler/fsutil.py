"""File writes that no reader ever sees half of."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, text: str, *, encoding: str = "utf-8") -> None:
    """Given a path and its new text, replace the file so readers see the old or the new whole.

    The text goes to a temp file in the same folder (so the rename cannot cross filesystems),
    is flushed and fsynced, then renamed over the target; the folder is fsynced so the rename
    survives a crash. The temp file is removed if anything fails. An existing file's
    permissions are kept. Raise OSError if the folder cannot be written.
    """
    folder = path.parent
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    # Not every platform lets a folder be opened for fsync; the rename already happened.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
