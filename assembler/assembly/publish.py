"""The last step: the ready block of the file just written, which the hooks hand to the host."""

from __future__ import annotations

import logging

from assembler.assembly.cap import Assembly
from assembler.config.schema import Config
from assembler.file.codec import (
    auto_part,
    find_agent_region,
    plain_region,
    prefix_text,
    split_frontmatter,
)
from assembler.pad.guidance import guidance_for
from assembler.pad.publish import Rendered, publish_ready
from assembler.pad.ready import digest_of

log = logging.getLogger(__name__)


def publish(config: Config, assembly: Assembly) -> None:
    """Given the config and the assembly whose file was just written, publish its ready block
    (see `assembler.pad.ready`). A failure is logged, not raised: the file is written, and hooks
    fall back to reading it."""

    _, body = split_frontmatter(assembly.text)
    region = find_agent_region(body)
    rendered = Rendered(
        auto=auto_part(body),
        auto_digest=assembly.auto_digest,
        updated=assembly.measured.frontmatter.updated,
        expires=assembly.measured.frontmatter.expires,
        guidance=guidance_for(config),
    )
    try:
        publish_ready(
            config, assembly.now, plain_region(region) if region is not None else "", rendered
        )
    except OSError as error:
        log.warning("cannot write the ready block: %s", error)


def ready_parts(assembly: Assembly) -> tuple[str, str]:
    """Given an assembly, return the ready block its file gives (see `assembler.pad.ready`)
    and that block's content digest."""
    _, body = split_frontmatter(assembly.text)
    region = find_agent_region(body)
    agent = plain_region(region) if region is not None else ""
    return prefix_text([auto_part(body), agent]), digest_of(assembly.auto_digest, agent)
