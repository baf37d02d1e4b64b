"""The ready block: what an agent host adds to the model's context before a turn, kept in one
small JSON file in the state folder (`.scratchpad/prefix.json`), so that a per-turn hook or
plugin reads it in about a millisecond instead of starting Python or parsing SCRATCHPAD.md.

`publish_ready` is its one writer. Every assembly that writes SCRATCHPAD.md calls it with what
it rendered, and so does every change of the agent sections made through the program (`assemble
pad`, `tool`, `section`, the MCP tools: see `scratchpad_with_ready`) with the sections as just
committed, so that what the agent saved in one turn is in the next turn's block. The fields:

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
none. The same block as it would be now, from the file and the journal, is `prefix_for` (for
`show --format prefix` and the MCP view).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import ScratchpadError, SectionError
from assembler.file.codec import (
    auto_part,
    find_agent_region,
    plain_region,
    prefix_text,
    read_assembly_state,
    read_page,
    read_scratchpad,
)
from assembler.fsutil import atomic_write, load_json, read_state_file, real_dir
from assembler.tokens import get_counter

# A hook reads the block before every prompt and imports this module for `read_ready`: what
# only making the block needs (the sections, the templates) is imported where it is made.
if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.pad.journal import SectionState
    from assembler.pad.sections import Scratchpad

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


# --------------------------------------------------------------------------------------------
# Publishing: the one writer of the block.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """What the ready block takes from a render of SCRATCHPAD.md: the file's auto part ('' when
    the file is stale), the digest of what the auto part says (see `Assembly.auto_digest`),
    when the file expires, and the guidance for the agent's system prompt."""

    auto: str
    auto_digest: str
    expires: datetime
    guidance: str


def publish_ready(
    config: Config,
    now: datetime,
    agent: str | Mapping[str, SectionState],
    rendered: Rendered | None = None,
) -> Ready | None:
    """Given a config, the clock, the agent sections and the render they go with, write the
    ready block atomically and return it: the one writer of `prefix.json`.

    An assembly passes what it rendered: the agent sections as the file shows them (text) and
    `rendered`. A change of the sections passes the sections as just folded and no `rendered`:
    they are shown under the file's caps after the auto part of the last render (see
    `last_render`). Return None when there is no render to go with (no readable file). Raise
    OSError if the state folder cannot be written.
    """
    if rendered is None:
        rendered = last_render(config, now)
        if rendered is None:
            return None
    text = agent if isinstance(agent, str) else agent_text(config, agent, now, rendered.auto)
    return _write(config, now, rendered, text)


def last_render(config: Config, now: datetime) -> Rendered | None:
    """Given a config and the clock, return what the last render of SCRATCHPAD.md gives the
    ready block: the file's auto part while it is fresh and its expiry, with the digest and the
    guidance of the block that render wrote (made anew when there is none). Return None when
    the file is missing, unreadable or broken.
    """
    page = read_page(config.output_path, config.state_dir)
    if page is None:
        return None
    expires, body = page
    auto = auto_part(body).strip() if now < expires else ""
    previous = read_ready(config.state_dir)
    if previous is not None:
        # The auto part did not change since the render: its digest is the one the render wrote.
        return Rendered(auto, previous.auto_digest, expires, previous.guidance)
    from assembler.pad.guidance import guidance_for

    return Rendered(auto, sha256_text(auto), expires, guidance_for(config))


def agent_text(config: Config, states: Mapping[str, SectionState], now: datetime, auto: str) -> str:
    """Given a config, folded sections, the clock and the auto part they follow, return the
    agent sections as the block shows them ('' for none): under the same caps as the file, as
    written (no markers, escapes or editing intro, since a message cannot be edited).
    """
    from assembler.file.render import renderer_for
    from assembler.pad.agent_part import plan_agent_part
    from assembler.pad.journal import in_zone

    shown = in_zone(states, now)
    if not shown:
        return ""
    count = get_counter(config.tokens.counter)
    part = plan_agent_part(
        shown,
        render=renderer_for(config).agent_part,
        count=count,
        agent_cap=config.caps.agent,
        limit=config.caps.total - count(auto) - 1,
        markers=False,
        now=now,
        session_start=_session_start(config),
    )
    return part.text.strip()


def _session_start(config: Config) -> datetime | None:
    """When the session the last assembly read began (its record's `session_start`), or None:
    the sections written before it say so in the block too. Only a hint for a heading."""
    state = read_assembly_state(config.state_dir)
    value = state.diagnostics.get("session_start") if state is not None else None
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _write(config: Config, now: datetime, rendered: Rendered, agent: str) -> Ready:
    """Given a config, the clock, the render and its agent sections as the block shows them,
    write the ready block atomically and return it. Raise OSError if the state folder cannot be
    written.
    """
    try:
        info = os.lstat(config.output_path)
        mtime_ns, size = info.st_mtime_ns, info.st_size
    except OSError:
        mtime_ns, size = 0, -1
    block = prefix_text([rendered.auto, agent])
    ready = Ready(
        updated=now,
        expires=rendered.expires,
        block=block,
        digest=digest_of(rendered.auto_digest, agent),
        auto_digest=rendered.auto_digest,
        guidance=rendered.guidance,
        file_path=str(config.output_path),
        file_mtime_ns=mtime_ns,
        file_size=size,
    )
    data = {
        "version": READY_VERSION,
        "updated": now.isoformat(timespec="seconds"),
        "expires": ready.expires.isoformat(timespec="seconds"),
        "expires_ms": int(ready.expires.timestamp() * 1000),
        "block": block,
        "digest": ready.digest,
        "auto_digest": ready.auto_digest,
        "guidance": ready.guidance,
        "file": {"path": ready.file_path, "mtime_ns": mtime_ns, "size": size},
    }
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    # Not fsynced: every run rewrites it, and a block a crash left stale or missing does not
    # match the file's mtime and size, so hooks read the file instead.
    path = ready_path(real_dir(config.state_dir))
    atomic_write(path, text.encode("utf-8", "surrogatepass"), durable=False)
    return ready


def scratchpad_with_ready(config: Config) -> Scratchpad:
    """Given a loaded config, return the workspace's Scratchpad for the agent's and the
    subsystems' own calls: every change also publishes the ready block hosts inject, from the
    sections as just committed and the time of the change, so the next turn has it without
    waiting for an assembly.
    """
    from assembler.pad.sections import scratchpad_for

    def publish(states: Mapping[str, SectionState], now: datetime) -> None:
        try:
            publish_ready(config, now, states)
        except OSError as error:  # an unwritable state folder: the next assembly tries again
            log.debug("cannot publish the ready block: %s", error)
        except Exception:  # the journal has the change; the next assembly writes the block
            log.exception("cannot publish the ready block")

    return scratchpad_for(config, on_change=publish)


# --------------------------------------------------------------------------------------------
# The block as it would be now (`show --format prefix`, the MCP view).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrefixParts:
    """What the prefix block is made of: SCRATCHPAD.md's auto part ('' when the file is stale
    or missing) and the agent sections as written; and the file's expiry (None: no file)."""

    auto: str
    agent: str
    expires: datetime | None
    fresh: bool


def prefix_parts(config: Config, now: datetime) -> PrefixParts:
    """Given a config and the clock, return the parts of the block hosts prepend to each
    message: the auto part of SCRATCHPAD.md while the file is fresh, and the agent sections as
    the journal holds them now, even when the file is stale (see `agent_text`).
    """
    from assembler.pad.sections import scratchpad_for

    try:
        page = read_scratchpad(config.output_path)
        fresh = page.is_fresh(now)
    except ScratchpadError:
        page, fresh = None, False
    auto = auto_part(page.body).strip() if page is not None and fresh else ""
    try:
        agent = agent_text(config, scratchpad_for(config, now=lambda: now).state(), now, auto)
    except SectionError:
        # The journal cannot be read: the sections as last rendered are the best there is.
        region = find_agent_region(page.body) if page is not None and fresh else None
        agent = plain_region(region) if region is not None else ""
    return PrefixParts(auto, agent, page.expires if page is not None else None, fresh)


def prefix_for(config: Config, now: datetime, *, fresh_only: bool = False) -> str | None:
    """Given a config and the clock, return the block hosts prepend to each message, from
    `prefix_parts`: empty when neither part has anything. With `fresh_only`, return None
    when the file is stale or missing.
    """
    parts = prefix_parts(config, now)
    if fresh_only and not parts.fresh:
        return None
    return prefix_text([parts.auto, parts.agent])
