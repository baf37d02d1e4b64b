"""What readers are shown between renders: whether SCRATCHPAD.md is fresh (`check`), the block
hosts prepend to each message as it is now (the file's auto part while it is fresh, and the
agent sections as the journal holds them), the listing `pad read` prints, the guidance for the
agent's system prompt, and the ready block kept up to date when the agent changes its sections.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.clock import aware, format_duration, local_now
from assembler.errors import ScratchpadError, SectionError
from assembler.file.codec import (
    REGION_BEGIN,
    auto_part,
    find_agent_region,
    plain_region,
    prefix_text,
    read_scratchpad,
)
from assembler.file.ready import Ready, read_ready, sha256_text, write_ready
from assembler.file.render import renderer_for
from assembler.pad.agent_part import agent_context, plan_agent_part, shown_section
from assembler.pad.journal import (
    AGENT_SECTIONS,
    DEFAULT_SECTION,
    NAME_RULE,
    SectionState,
    in_zone,
    ordered,
)
from assembler.pad.sections import Scratchpad, scratchpad_for
from assembler.tokens import get_counter

if TYPE_CHECKING:
    from assembler.config.schema import Config

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Freshness:
    """What `check` reports: 0 fresh, 1 stale, 2 missing or unreadable."""

    code: int
    message: str


def check_freshness(path: Path, now: datetime) -> Freshness:
    """Given the path of SCRATCHPAD.md and the clock, return whether it is fresh, and a line
    saying so (for heartbeat scripts and monitoring).
    """
    try:
        pad = read_scratchpad(path)
    except ScratchpadError as error:
        return Freshness(2, f"missing or unreadable: {error}")
    if pad.is_fresh(now):
        left = format_duration(pad.expires - now)
        return Freshness(0, f"fresh: {path} valid until {pad.expires.isoformat()} ({left} left)")
    ago = format_duration(now - pad.expires)
    return Freshness(1, f"stale: {path} expired at {pad.expires.isoformat()} ({ago} ago)")


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
    the journal holds them now, even when the file is stale (under the same caps as the file,
    as written: no markers, escapes or editing intro, since a message cannot be edited).
    """
    try:
        page = read_scratchpad(config.output_path)
        fresh = page.is_fresh(now)
    except ScratchpadError:
        page, fresh = None, False
    auto = auto_part(page.body).strip() if page is not None and fresh else ""
    count = get_counter(config.tokens.counter)
    try:
        states = in_zone(scratchpad_for(config, now=lambda: now).state(), now)
        agent = ""
        if states:
            part = plan_agent_part(
                states,
                render=renderer_for(config).agent_part,
                count=count,
                agent_cap=config.caps.agent,
                limit=config.caps.total - count(auto) - 1,
                markers=False,
                now=now,
            )
            agent = part.text.strip()
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


def refresh_ready(config: Config, now: datetime) -> Ready | None:
    """Given a config and the clock, rewrite the ready block from SCRATCHPAD.md's auto part and
    the agent sections as the journal holds them now (after a change of the sections, so the
    next turn has it). Return it, or None when there is no file to take the auto part from.
    Problems (an unwritable state folder) return None: the next assembly writes it anyway.
    """
    parts = prefix_parts(config, now)
    if parts.expires is None:
        return None
    previous = read_ready(config.state_dir)
    # The auto part did not change since the render: its digest is the one the render wrote.
    auto_digest = previous.auto_digest if previous is not None else sha256_text(parts.auto)
    try:
        return write_ready(
            config,
            now=now,
            expires=parts.expires,
            block=prefix_text([parts.auto, parts.agent]),
            auto_digest=auto_digest,
            agent=parts.agent,
            guidance=previous.guidance if previous is not None else guidance_for(config),
        )
    except OSError:
        return None


def listing_for(config: Config, states: Mapping[str, SectionState]) -> str:
    """Given a config and folded sections, return them whole as plain Markdown (pad read)."""
    count = get_counter(config.tokens.counter)
    shown = [shown_section(s, None, count) for s in ordered(states.values())]
    text: str = renderer_for(config).agent_part(agent_context(shown, markers=False))
    return text


def guidance_context(config: Config) -> dict[str, Any]:
    """Given a loaded config, return the context of `guidance.md.j2`: the budgets and names."""
    caps = config.caps.journal_section_caps
    return {
        "agent_cap": config.caps.agent,
        "total_cap": config.caps.total,
        "section_caps": caps,
        "main_cap": caps.get(DEFAULT_SECTION, config.caps.agent),
        "sections": AGENT_SECTIONS,
        "default_section": DEFAULT_SECTION,
        "output": config.output.path,
        "region_begin": REGION_BEGIN,
        "name_rule": NAME_RULE,
    }


def guidance_for(config: Config) -> str:
    """Given a config, return the system-prompt guidance from `guidance.md.j2`."""
    template = renderer_for(config).env.get_template("guidance.md.j2")
    text: str = template.render(**guidance_context(config))
    return text


def scratchpad_with_ready(config: Config) -> Scratchpad:
    """Given a loaded config, return the workspace's Scratchpad for the agent's and the
    subsystems' own calls: every change also rewrites the ready block hosts inject, so the next
    turn has it without waiting for an assembly.
    """

    def refresh() -> None:
        try:
            refresh_ready(config, aware(local_now()))
        except Exception:  # the journal has the change; the next assembly writes the block
            log.exception("cannot refresh the ready block")

    return scratchpad_for(config, on_change=refresh)
