"""The ready block: what an agent host adds to the model's context before a turn, kept in one
small JSON file in the state folder (`.scratchpad/prefix.json`), so that a per-turn hook or
plugin reads it in about a millisecond instead of starting Python or parsing SCRATCHPAD.md.

Every assembly that writes SCRATCHPAD.md writes it, and so does every change of the agent
sections made through the program (`assemble pad`, `tool`, `section`, the MCP tools), so that
what the agent saved in one turn is in the next turn's block. The fields:

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
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.fsutil import atomic_write, read_state_file, real_dir

if TYPE_CHECKING:
    from assembler.config.schema import Config

READY_NAME = "prefix.json"
READY_VERSION = 1


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

    def is_fresh(self, now: datetime) -> bool:
        return now < self.expires

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


def write_ready(
    config: Config,
    *,
    now: datetime,
    expires: datetime,
    block: str,
    auto_digest: str,
    agent: str,
    guidance: str,
) -> Ready:
    """Given a config, the clock, the file's expiry, the block, the digest of its auto part,
    its agent sections as written and the guidance, write the ready block atomically and
    return it. Raise OSError if the state folder cannot be written.
    """
    try:
        info = os.lstat(config.output_path)
        mtime_ns, size = info.st_mtime_ns, info.st_size
    except OSError:
        mtime_ns, size = 0, -1
    ready = Ready(
        updated=now,
        expires=expires,
        block=block,
        digest=digest_of(auto_digest, agent),
        auto_digest=auto_digest,
        guidance=guidance,
        file_path=str(config.output_path),
        file_mtime_ns=mtime_ns,
        file_size=size,
    )
    data = {
        "version": READY_VERSION,
        "updated": now.isoformat(timespec="seconds"),
        "expires": expires.isoformat(timespec="seconds"),
        "expires_ms": int(expires.timestamp() * 1000),
        "block": block,
        "digest": ready.digest,
        "auto_digest": auto_digest,
        "guidance": guidance,
        "file": {"path": ready.file_path, "mtime_ns": mtime_ns, "size": size},
    }
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    atomic_write(ready_path(real_dir(config.state_dir)), text.encode("utf-8", "surrogatepass"))
    return ready


def read_ready(state_dir: Path) -> Ready | None:
    """Given the state folder, return the ready block, or None when it is missing, unreadable,
    a link, or not what this version writes."""
    try:
        data = read_state_file(ready_path(state_dir)).data
        value: Any = json.loads(data) if data is not None else None
    except (OSError, ValueError):
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
