"""What the agent is told about its sections: the guidance for its system prompt (how to use
the scratchpad, its budgets and section names, from `guidance.md.j2`) and the listing of the
sections `pad read` prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from assembler.file.codec import REGION_BEGIN
from assembler.file.render import renderer_for
from assembler.pad.agent_part import agent_context, shown_section
from assembler.pad.journal import AGENT_SECTIONS, DEFAULT_SECTION, SectionState, ordered
from assembler.section_names import NAME_RULE
from assembler.tokens import get_counter

if TYPE_CHECKING:
    from assembler.config.schema import Config


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
