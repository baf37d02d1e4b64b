"""The working folder a host recorded at the head of a session file, which says whose
workspace the session is: found once per file, and read off a line's start where the line is
too long to parse. Where in a line a host puts it is the host's own module's knowledge.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

CACHE_SIZE: Final = 1024


class HeadCwds:
    """The working folders found at the heads of session files, remembered by file identity
    (path resolved, device, inode): a session's first working folder never changes, so the
    status page's watcher, which asks every second, reads each head once. Past `size` files
    the least recently asked is forgotten."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._found: OrderedDict[tuple[str, int, int], str] = OrderedDict()

    def get(self, path: Path, read: Callable[[Path], str | None]) -> str | None:
        """Given a session file and how to read the working folder its head names (which may
        raise OSError), return that folder, or None when the head names none or the file
        cannot be read."""
        try:
            info = os.stat(path)
        except OSError:
            return None
        key = (os.path.realpath(path), info.st_dev, info.st_ino)
        cached = self._found.get(key)
        if cached is not None:
            self._found.move_to_end(key)
            return cached
        try:
            found = read(path)
        except OSError:
            return None
        if found is not None:  # a session with no line yet may get one: not remembered
            self._found[key] = found
            while len(self._found) > self._size:
                self._found.popitem(last=False)
        return found


def named_cwd(value: Any) -> str | None:
    """Given the parsed value of a line's `cwd`, return it when it names a folder (a string
    that is not empty), else None."""
    return value if isinstance(value, str) and value else None


def literal_cwd(literal: bytes) -> str | None:
    """Given the JSON string a line's start holds as its `cwd` (quotes included), return the
    folder it names, or None."""
    try:
        value = json.loads(literal)
    except ValueError:
        return None
    return named_cwd(value)
