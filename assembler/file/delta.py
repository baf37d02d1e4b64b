"""What changed, not everything again: the copy of the ready block each session holds, and the
difference between two blocks, for hosts that keep what a hook adds in the session's history.

A host whose hook output stays in the conversation (Claude Code, Codex) would otherwise carry
a whole copy of the block (~700 tokens) for every change. After the first copy in a session,
the hook sends only what changed since the copy the session holds:

    copies = HeldCopies(config.state_dir, "claude-code")
    held = copies.get(session_id)                       # None: nothing held, or unreadable
    send = plan_copy(held, block, digest, valid_until, now, full=new_context)
    if send.text: print(send.text)
    copies.put(session_id, send.held)

`plan_copy` decides: a full copy when the session holds none (a new, cleared or compacted
session: `full=True`), when the held copy expired, or when the changes would be nearly as long
as the block; nothing when the content is the one held (equal digests: only clock lines
moved); else the changes (`diff_blocks`, written by `render_delta`): the sections added,
removed and changed, a changed one line by line (`-` a line gone, `+` a line new) or whole
when that is shorter.

The held copies live in `.scratchpad/held/`, a small file per session named by a hash of the
host and the session id (so no id names a path), at most MAX_HELD of them (the oldest go).
The agent can write the state folder: a record that is missing, a link, too large, not JSON or
not of this shape is no copy, and the session gets a full one.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from assembler.file.codec import PREFIX_FOOTER, PREFIX_HEADER, parse_time
from assembler.fsutil import atomic_write, load_json, read_state_file, real_dir

HELD_DIR = "held"
# Sessions whose copy is remembered; the least recently sent are forgotten (they get a full
# copy if they come back).
MAX_HELD = 64
# The most of a held record read: a block is a few KiB (the caps), far under this.
MAX_HELD_BYTES = 256 * 1024
# Changes at least this share of the full block's length are sent as the full block instead.
FULL_RATIO = 0.8
DELTA_HEADER = "[Scratchpad update since {since}"
DELTA_FOOTER = "[End Scratchpad update]"
_NAME = re.compile(r"^[0-9a-f]{40}\.json$")
# A section heading's age ("## Plan (updated 3h ago)") is a clock, not the section's name.
_AGE = re.compile(r" \(updated [^()\n]*\)$")
# A time of day: a line whose times alone moved ("Local time: 23:26", "valid until 23:56") says
# nothing new; the update's header says until when the copy is valid.
_CLOCK = re.compile(r"\b\d{1,2}:\d\d\b")


@dataclass(frozen=True)
class Held:
    """The copy of the block a session holds: its text (after the changes sent since the last
    full copy), the digest of its content, when it was last sent to (full or changes) and
    until when it says it is valid (None: not known)."""

    text: str
    digest: str
    sent: datetime
    valid_until: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "digest": self.digest,
            "sent": self.sent.isoformat(),
            "valid_until": self.valid_until.isoformat() if self.valid_until else None,
        }

    @classmethod
    def from_json(cls, value: Any) -> Held | None:
        """Given a parsed record, return the copy, or None when it is not one."""
        if not isinstance(value, dict):
            return None
        text, digest = value.get("text"), value.get("digest")
        if not isinstance(text, str) or not isinstance(digest, str):
            return None
        sent = _time(value.get("sent"))
        until = value.get("valid_until")
        valid_until = _time(until) if until is not None else None
        if sent is None or (until is not None and valid_until is None):
            return None
        return cls(text, digest, sent, valid_until)


def _time(value: Any) -> datetime | None:
    """An aware time of a held record, None for anything else (a forged long string too)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    return parse_time(value)


# --- The difference of two blocks ------------------------------------------------------------


@dataclass(frozen=True)
class SectionChange:
    """One section's change: `added` (lines: the section), `removed` (no lines), `changed`
    (lines: `-old` and `+new`) or `replaced` (lines: the section as it is now)."""

    kind: Literal["added", "removed", "changed", "replaced"]
    heading: str  # as the new block shows it ("" for the lines before the first section)
    lines: tuple[str, ...]


def sections_of(block: str) -> list[tuple[str, list[str]]]:
    """Given a block, return its parts in order: the lines before the first `## ` heading
    (under the heading ""), then each `## ` section with its heading line and its lines; the
    block's header and footer lines and blank lines at either end of a part are left out."""
    parts: list[tuple[str, list[str]]] = [("", [])]
    for line in block.splitlines():
        if line in (PREFIX_HEADER, PREFIX_FOOTER):
            continue
        if line.startswith("## "):
            parts.append((line, []))
        else:
            parts[-1][1].append(line)
    return [(heading, _trimmed(lines)) for heading, lines in parts if heading or _trimmed(lines)]


def _trimmed(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def section_key(heading: str) -> str:
    """Given a section's heading line, return its name: the heading without its age."""
    return _AGE.sub("", heading)


def diff_blocks(old: str, new: str) -> list[SectionChange]:
    """Given the block a session holds and the block now, return what changed, section by
    section in the new block's order (removed ones last); [] when the text is the same apart
    from section ages and times of day."""
    before = {section_key(heading): lines for heading, lines in sections_of(old)}
    changes: list[SectionChange] = []
    seen: set[str] = set()
    for heading, lines in sections_of(new):
        key = section_key(heading)
        seen.add(key)
        if key not in before:
            changes.append(SectionChange("added", heading, tuple(lines)))
            continue
        if _timeless(before[key]) == _timeless(lines):
            continue
        diff = _line_diff(before[key], lines)
        if sum(len(line) for line in diff) < sum(len(line) for line in lines):
            changes.append(SectionChange("changed", heading, tuple(diff)))
        else:
            changes.append(SectionChange("replaced", heading, tuple(lines)))
    for heading, _ in sections_of(old):
        if section_key(heading) not in seen:
            changes.append(SectionChange("removed", heading, ()))
    return changes


def _timeless(lines: list[str]) -> list[str]:
    return [_CLOCK.sub("#", line) for line in lines]


def _line_diff(old: list[str], new: list[str]) -> list[str]:
    """Given a section's lines before and now, return the lines gone (`-`) and new (`+`), each
    group of new lines after the lines it replaces; a line whose times alone moved is kept."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=_timeless(old), b=_timeless(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out += [f"-{line}" for line in old[i1:i2]]
        out += [f"+{line}" for line in new[j1:j2]]
    return out


_LABELS = {
    "added": "(new section)",
    "removed": "(section removed)",
    "changed": "(changed lines: -gone +new)",
    "replaced": "(changed, now reads)",
}


def render_delta(
    changes: list[SectionChange], since: datetime, valid_until: datetime | None = None
) -> str:
    """Given the changes, when the copy they apply to was sent and until when the updated copy
    is valid (None: not said), return them as the text the model gets: a header line that says
    what it is, each change under its section's heading, and a footer line."""
    until = f", valid until {valid_until.astimezone(since.tzinfo):%H:%M}" if valid_until else ""
    header = DELTA_HEADER.format(since=f"{since:%H:%M}")
    lines = [f"{header}{until}: only what changed in your copy; other sections unchanged]"]
    for change in changes:
        title = change.heading or "## (top lines)"
        lines.append(f"{title} {_LABELS[change.kind]}")
        lines += change.lines
    lines.append(DELTA_FOOTER)
    return "\n".join(lines) + "\n"


# --- What to send ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Copy:
    """What to send a session (`kind` "full", "delta" or "none", with `text`) and the copy it
    holds afterwards (`held`)."""

    kind: Literal["full", "delta", "none"]
    text: str
    held: Held


def plan_copy(
    held: Held | None,
    block: str,
    digest: str,
    valid_until: datetime | None,
    now: datetime,
    *,
    full: bool = False,
) -> Copy:
    """Given the copy a session holds (None: none known), the block now, its digest, until when
    it is valid, the clock, and whether the session's context lacks the block whatever it held
    (new, cleared, compacted: `full`), return what to send and what the session then holds.

    The block whole when `full`, nothing is held, the held copy has expired, or the changes
    would be at least FULL_RATIO of its length; nothing when the digest is the held one
    (only clock lines moved); else the changes since the held copy."""
    fresh = Held(block, digest, now, valid_until)
    if not block:
        return Copy("none", "", held if held is not None else fresh)
    expired = held is not None and held.valid_until is not None and now >= held.valid_until
    if full or held is None or expired:
        return Copy("full", block, fresh)
    if held.digest == digest:
        return Copy("none", "", held)
    changes = diff_blocks(held.text, block)
    if not changes:
        # The content digest moved but no line did (a section only re-aged, a time moved): the
        # copy held reads the same and stands for the new block, valid as long as it says.
        return Copy("none", "", Held(block, digest, held.sent, held.valid_until))
    text = render_delta(changes, held.sent, valid_until)
    if len(text) >= FULL_RATIO * len(block):
        return Copy("full", block, fresh)
    return Copy("delta", text, fresh)


# --- The copies sessions hold, in the state folder -------------------------------------------


class HeldCopies:
    """The copy each session of one host holds, one small file per session in
    `.scratchpad/held/`, at most `max_held` files (the least recently written are removed)."""

    def __init__(self, state_dir: Path, host: str, *, max_held: int | None = None) -> None:
        self.folder = state_dir / HELD_DIR
        self.state_dir = state_dir
        self.host = host
        self.max_held = MAX_HELD if max_held is None else max_held

    def _name(self, session_id: str) -> str:
        key = f"{self.host}\x00{session_id}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(key).hexdigest()[:40] + ".json"

    def get(self, session_id: str) -> Held | None:
        """Given a session id, return the copy it holds, or None when none is known or the
        record cannot be trusted (missing, a link, too large, not a record)."""
        try:
            data = read_state_file(self.folder / self._name(session_id), limit=MAX_HELD_BYTES)
            value = load_json(data.data) if data.data is not None else None
        except (OSError, ValueError, RecursionError):
            return None
        return Held.from_json(value)

    def put(self, session_id: str, held: Held) -> None:
        """Given a session id and the copy it now holds, keep it (atomically), then remove the
        oldest records over the limit. Raise OSError if the state folder cannot be written."""
        folder = real_dir(real_dir(self.state_dir) / HELD_DIR)
        name = self._name(session_id)
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.lstat(folder / name).st_mode):
                self._unlink(folder, [name])  # planted (a link, a pipe): the name is ours
        text = json.dumps(held.to_json(), ensure_ascii=False) + "\n"
        # Not fsynced: a copy lost in a crash only means the session gets the whole block again.
        atomic_write(folder / name, text.encode("utf-8", "surrogatepass"), durable=False)
        self._prune(folder)

    def forget(self, session_id: str) -> None:
        """Given a session id, drop its record (its next copy is a full one)."""
        with contextlib.suppress(OSError):
            self._unlink(self.folder, [self._name(session_id)])

    def _prune(self, folder: Path) -> None:
        try:
            entries = [
                (entry.stat(follow_symlinks=False).st_mtime_ns, entry.name)
                for entry in os.scandir(folder)
                if _NAME.match(entry.name)
            ]
        except OSError:
            return
        if len(entries) <= self.max_held:
            return
        entries.sort()
        with contextlib.suppress(OSError):
            self._unlink(folder, [name for _, name in entries[: len(entries) - self.max_held]])

    @staticmethod
    def _unlink(folder: Path, names: list[str]) -> None:
        # Through a descriptor of the folder, never through a link: only our own names go.
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISDIR(info.st_mode):
                        os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)
