"""The rule of a section's name, which the config (its caps) and the agent's sections share."""

from __future__ import annotations

import re
from typing import Final

NAME_RULE: Final = (
    "a section is goal, findings, artifacts, errors, main, or a custom name of 1 to 32 "
    "characters: a lowercase letter, then lowercase letters, digits, '-' or '_' "
    "(e.g. 'api-notes')"
)
_SECTION_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def is_valid_section_name(name: object) -> bool:
    """Given any value, return whether it is a usable name for an agent's section."""
    return isinstance(name, str) and _SECTION_NAME.fullmatch(name) is not None
