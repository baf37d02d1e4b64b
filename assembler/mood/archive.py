"""The mood model's weights files: NumPy archives (`.npz`) with a JSON `meta` array, read
whole, their format checked, and every way they can be broken said as one ModelError."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assembler.errors import ModelError

# What reading a damaged or foreign archive raises: a missing array or meta key, a meta value
# of the wrong type, a truncated zip.
_BROKEN = (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile)


@dataclass(frozen=True)
class Archive:
    """The arrays of a weights file, its `meta` and a short digest of its bytes."""

    arrays: dict[str, npt.NDArray[Any]]
    meta: dict[str, Any]
    digest: str  # the first 12 hex digits of the file's SHA-256


def read_archive(path: Path, *, what: str, fix: str, formats: Collection[int]) -> Archive:
    """Given a weights file, what it is ("Mood layer"), the fix to suggest and the formats
    this code reads, return its arrays and meta.

    Raise ModelError naming the file and the fix if it is missing, unreadable or of another
    format.
    """
    if not path.is_file():
        raise ModelError(f"{what} not found at {path}; {fix}")
    with broken_as_error(path, what=what, fix=fix):
        raw = path.read_bytes()
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        meta = json.loads(str(arrays["meta"]))
        if meta.get("format") not in formats:
            raise ModelError(
                f"{what} {path} has format {meta.get('format')!r}, this code reads "
                f"{' or '.join(map(str, formats))}; {fix}"
            )
    return Archive(arrays, meta, hashlib.sha256(raw).hexdigest()[:12])


@contextmanager
def broken_as_error(path: Path, *, what: str, fix: str) -> Iterator[None]:
    """Within it, what a damaged weights file raises (a missing key, a wrong type, a truncated
    zip) becomes a ModelError naming the file and the fix; a ModelError passes as it is."""
    try:
        yield
    except ModelError:
        raise
    except _BROKEN as error:
        raise ModelError(f"{what} {path} is unreadable or corrupt ({error}); {fix}") from error
