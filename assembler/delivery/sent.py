"""What the hooks handed each session, one line per hook run in `.scratchpad/deliveries.jsonl`:
when, the host and session, and the digest of the text printed for the host to add (None when
nothing was printed: the session holds the block already, or there was none). The hosts' own
records say what reached the model (`delivery.turns`); this record says what was handed over,
so that a turn with no receipt can be told from one the hook rightly left alone.

A hook appends one short line per prompt; the file is cut to its newest lines when it grows
past `MAX_BYTES`. A line that cannot be read is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from assembler.errors import AssemblerError
from assembler.fsutil import atomic_write, open_nofollow, read_regular, real_dir

SENT_NAME = "deliveries.jsonl"
MAX_BYTES = 512 * 1024
KEPT_LINES = 2000


def text_digest(text: str) -> str:
    """Given what a hook printed for the host to add, return its digest as both sides keep
    it: 16 hex digits of the SHA-256 of the text without trailing white space."""
    return hashlib.sha256(text.rstrip().encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class Sent:
    """One hook run: when, for which host and session, and the digest of what it printed
    (None: nothing)."""

    at: datetime
    host: str
    session: str
    sent: str | None


def record_sent(state_dir: Path, host: str, session: str, printed: str, now: datetime) -> None:
    """Given the state folder, the host, the session, what the hook printed ("" for nothing)
    and the clock, append the hook run to the record. Raise OSError if it cannot be written
    (the caller goes on: the block matters more than the record)."""
    line = {
        "at": now.isoformat(timespec="milliseconds"),
        "host": host,
        "session": session,
        "sent": text_digest(printed) if printed else None,
    }
    path = real_dir(state_dir) / SENT_NAME
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
    # Not through a link: the agent could point one at a file of the user's.
    fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, data)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        kept = path.read_bytes().splitlines(keepends=True)[-KEPT_LINES:]
        atomic_write(path, b"".join(kept))


def read_sent(state_dir: Path) -> list[Sent]:
    """Given the state folder, return the hook runs recorded there, oldest first; a line that
    is not one is skipped."""
    try:
        data = read_regular(state_dir / SENT_NAME, limit=4 * MAX_BYTES).data
    except (AssemblerError, OSError):  # a link, a FIFO, a file far too large: no record
        return []
    runs = []
    for raw in (data or b"").splitlines():
        try:
            line = json.loads(raw)
            at = datetime.fromisoformat(line["at"])
            host, session = line["host"], line["session"]
            sent = line.get("sent")
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
        if at.tzinfo is None or not isinstance(host, str) or not isinstance(session, str):
            continue
        runs.append(Sent(at, host, session, sent if isinstance(sent, str) else None))
    return runs
