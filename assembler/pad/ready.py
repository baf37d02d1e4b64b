"""The ready block: what an agent host adds to the model's context before a turn, kept in one
small JSON file in the state folder (`.scratchpad/prefix.json`), so that a per-turn hook or
plugin reads it in about a millisecond instead of starting Python or parsing SCRATCHPAD.md.

Its one writer is `assembler.pad.publish`; this module is the record and its reader, which a
hook imports before every prompt (nothing of the sections or the templates). The fields:

    version      1
    updated      when it was written (ISO 8601)
    expires      when SCRATCHPAD.md expires (ISO 8601); expires_ms the same in ms since 1970
    block        the prefix block: the auto part and the agent sections as written (no
                 frontmatter, markers or escapes), between its header and footer lines
    digest       a hash of the block's content apart from its clock lines (local time, "last
                 10m ago"): equal digests mean the model has seen this content already;
                 auto_digest the same of the auto part alone
    guidance     the system-prompt text that tells the agent how to use its scratchpad
    file         {"path", "mtime_ns", "size"} of SCRATCHPAD.md as the block was made from it:
                 a reader that finds the file changed since (an agent's edit) knows the block
                 may be behind it

Readers treat a block whose `expires` has passed as absent: a stale scratchpad is worse than
none.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.clock import fresh_until
from assembler.fsutil import load_json, read_state_file

log = logging.getLogger(__name__)

READY_NAME = "prefix.json"
READY_VERSION = 1
# The most of a ready block that is read: it holds the page's text, far less than this; the
# agent can write the state folder.
MAX_READY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Ready:
    """The ready block as a host reads it."""

    updated: datetime
    expires: datetime
    block: str
    digest: str
    auto_digest: str
    guidance: str
    file_path: str
    file_mtime_ns: int
    file_size: int

    def fresh_until(self, ttl: timedelta, now: datetime) -> datetime | None:
        """Until when the block is fresh, bounded by the clock and the TTL configured (the
        agent can write it: `clock.fresh_until`); None: never."""
        return fresh_until(self.updated, self.expires, ttl, now)

    def matches_file(self, path: Path) -> bool:
        """Whether SCRATCHPAD.md is still the file the block was made from (not edited)."""
        try:
            info = os.lstat(path)
        except OSError:
            return False
        return (info.st_mtime_ns, info.st_size) == (self.file_mtime_ns, self.file_size)


def ready_path(state_dir: Path) -> Path:
    """Given the state folder, return where the ready block is kept."""
    return state_dir / READY_NAME


# The age a section heading shows ("## Plan (updated 3h ago)"): a clock, not news.
_AGE = re.compile(r"^(#{1,6} .*?) \(updated [^()\n]*\)$", re.MULTILINE)


def digest_of(auto_digest: str, agent: str) -> str:
    """Given the auto part's digest (see `Assembly.auto_digest`) and the agent sections as
    written, return the digest hosts compare to tell new content from a new render (a section
    whose age alone moved is no news)."""
    news = _AGE.sub(r"\1", agent)
    return sha256_text(f"{auto_digest}\n\x1e\n{news}")


def sha256_text(text: str) -> str:
    """Given a text, return its SHA-256 in hex (lone surrogates kept, as the files keep them)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_ready(state_dir: Path) -> Ready | None:
    """Given the state folder, return the ready block, or None when it is missing, unreadable,
    a link, or not what this version writes."""
    try:
        data = read_state_file(ready_path(state_dir), limit=MAX_READY_BYTES).data
        value: Any = load_json(data) if data is not None else None
    except (OSError, ValueError):  # a pipe, a link, too large or too deep: not ours
        return None
    if not isinstance(value, dict) or value.get("version") != READY_VERSION:
        return None
    try:
        file = value["file"]
        updated = datetime.fromisoformat(value["updated"])
        expires = datetime.fromisoformat(value["expires"])
        ready = Ready(
            updated=updated,
            expires=expires,
            block=str(value["block"]),
            digest=str(value["digest"]),
            auto_digest=str(value["auto_digest"]),
            guidance=str(value["guidance"]),
            file_path=str(file["path"]),
            file_mtime_ns=int(file["mtime_ns"]),
            file_size=int(file["size"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
    if ready.expires.tzinfo is None or ready.updated.tzinfo is None:
        return None
    return ready
