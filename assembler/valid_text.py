"""Text as it comes in, made valid Unicode: a JavaScript host writes half of a cut emoji as a
lone surrogate (`"\ud83d"` in its JSON), and a NUL can be typed into any field; neither can be
written as UTF-8, stored in SQLite as text, nor be part of a path. Each becomes U+FFFD, the
replacement character, where text enters: the transcripts' messages and the hooks' input.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
# Every surrogate in a str is a lone one: a JSON decoder joins an escaped pair into its
# character, and strict UTF-8 decoding makes none.
_INVALID = re.compile("[\ud800-\udfff\x00]")


def valid_text(text: str) -> str:
    """Given a text, return it with each lone surrogate and NUL replaced by U+FFFD."""
    return _INVALID.sub(REPLACEMENT, text) if _INVALID.search(text) else text


def valid_or_none(text: str | None) -> str | None:
    """`valid_text` of a text that may be None."""
    return None if text is None else valid_text(text)
