"""Token counting (a fast estimate by default; any `module:function` can replace it), and
cutting text down to a number of tokens or characters."""

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


def truncate_to_tokens(text: str, limit: int, count: TokenCounter = estimate_tokens) -> str:
    """Given a text, a token limit and a counter, return the longest prefix within the limit.

    The cut is at a character boundary; a line end, else a word end, is preferred when it keeps
    at least 80% of the prefix.
    """
    if count(text) <= limit:
        return text
    if limit <= 0:
        return ""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    floor = (low * 4) // 5
    for separators in (("\n",), ("\n", " ", "\t")):
        at = max(text.rfind(sep, 0, low + 1) for sep in separators)
        if at >= floor and at > 0:
            candidate = text[:at].rstrip(" \t\r")
            if candidate and count(candidate) <= limit:
                return candidate
    return text[:low]


def clip(text: str, width: int = 60) -> str:
    """Given a text, return it on one line (runs of whitespace made one space) and at most
    `width` characters long, cut with "…" when it is longer: for messages and explanations
    that quote a text."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"
