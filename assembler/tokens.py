"""Token counting. The default is a fast estimate; any `module:function` can replace it."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable

from assembler.errors import ConfigError

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """Given a text, return an estimate of its token count.

    English and code average about four characters a token in BPE tokenizers; characters
    outside ASCII (CJK, emoji) are closer to one token each, so they count in full.
    """
    if not text:
        return 0
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return math.ceil((len(text) - non_ascii) / 4) + non_ascii


def count_chars(text: str) -> int:
    """Given a text, return its length in characters (for hosts that budget by characters)."""
    return len(text)


def get_counter(spec: str) -> TokenCounter:
    """Given 'estimate', 'chars' or 'module:function', return the counting function.

    Raise ConfigError if a named function cannot be imported.
    """
    if spec == "estimate":
        return estimate_tokens
    if spec == "chars":
        return count_chars
    module_name, _, attr = spec.partition(":")
    try:
        counter = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(
            f"At 'tokens.counter': cannot import {spec!r} ({error}); install the module or use "
            "'estimate'"
        ) from error
    if not callable(counter):
        raise ConfigError(f"At 'tokens.counter': {spec!r} is not a function; name a function")
    return counter  # type: ignore[no-any-return]
