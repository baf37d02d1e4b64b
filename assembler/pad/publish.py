"""Publishing the ready block (`assembler.pad.ready`): its one writer, `publish_ready`. Every
assembly that writes SCRATCHPAD.md calls it with what it rendered, and so does every change of
the agent sections made through the program (`assemble pad`, `tool`, `section`, the MCP tools:
see `scratchpad_with_ready`) with the sections as just committed, so that what the agent saved
in one turn is in the next turn's block. The same block as it would be now, from the file and
the journal, is `prefix_for` (for `show --format prefix` and the MCP view).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from assembler.errors import ScratchpadError, SectionError
from assembler.file.codec import (
    auto_part,
    find_agent_region,
    plain_region,
    prefix_text,
    read_page,
    read_scratchpad,
)
from assembler.file.records import read_assembly_state
from assembler.file.render import renderer_for
from assembler.fsutil import atomic_write, real_dir
from assembler.pad.agent_part import plan_agent_part
from assembler.pad.guidance import guidance_for
from assembler.pad.journal import SectionState, in_zone
from assembler.pad.ready import READY_VERSION, Ready, digest_of, read_ready, ready_path, sha256_text
from assembler.pad.sections import Scratchpad, scratchpad_for
from assembler.tokens import get_counter

if TYPE_CHECKING:
    from assembler.config.schema import Config

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rendered:
    """What the ready block takes from a render of SCRATCHPAD.md: the file's auto part ('' when
    the file is stale), the digest of what the auto part says (see `Assembly.auto_digest`),
    when the file was made and when it expires (the block is fresh as long as the file), and
    the guidance for the agent's system prompt."""

    auto: str
    auto_digest: str
    updated: datetime
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
    return _write(config, rendered, text)


def last_render(config: Config, now: datetime) -> Rendered | None:
    """Given a config and the clock, return what the last render of SCRATCHPAD.md gives the
    ready block: the file's auto part while it is fresh and its expiry, with the digest and the
    guidance of the block that render wrote (made anew when there is none). Return None when
    the file is missing, unreadable or broken.
    """
    page = read_page(config.output_path, config.state_dir)
    if page is None:
        return None
    expires, body = page.expires, page.body
    auto = auto_part(body).strip() if page.is_fresh(now, config.output.ttl) else ""
    previous = read_ready(config.state_dir)
    if previous is not None:
        # The auto part did not change since the render: its digest is the one the render wrote.
        return Rendered(auto, previous.auto_digest, page.updated, expires, previous.guidance)
    return Rendered(auto, sha256_text(auto), page.updated, expires, guidance_for(config))


def agent_text(config: Config, states: Mapping[str, SectionState], now: datetime, auto: str) -> str:
    """Given a config, folded sections, the clock and the auto part they follow, return the
    agent sections as the block shows them ('' for none): under the same caps as the file, as
    written (no markers, escapes or editing intro, since a message cannot be edited).
    """
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


def _write(config: Config, rendered: Rendered, agent: str) -> Ready:
    """Given a config, the render and its agent sections as the block shows them, write the
    ready block atomically and return it. Raise OSError if the state folder cannot be written.
    """
    try:
        info = os.lstat(config.output_path)
        mtime_ns, size = info.st_mtime_ns, info.st_size
    except OSError:
        mtime_ns, size = 0, -1
    block = prefix_text([rendered.auto, agent])
    ready = Ready(
        updated=rendered.updated,
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
        "updated": ready.updated.isoformat(timespec="seconds"),
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
    try:
        page = read_scratchpad(config.output_path)
        fresh = page.is_fresh(now, config.output.ttl)
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
