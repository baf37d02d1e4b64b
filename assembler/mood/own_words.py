"""The part of a human message that says how they feel: their own words, without what they
quote or paste. A word inside a quotation, a code block or span, a quoted line ("> ...") or a
pasted log line is about something else (a meme, a spec, an error message), and the mood is
read without it; a message that is only code or pasted lines reads as no emotion, and one
that is only a quotation is read whole (a message put in quotes, speech reported).
"""

from __future__ import annotations

import re
from typing import Final

_FENCED: Final = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE: Final = re.compile(r"`[^`\n]+`")
_QUOTED_LINE: Final = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
# A quotation of some length in straight, curly or CJK quotes ("..." of a word or two is how
# people stress it, and stays).
_QUOTATION: Final = re.compile(r'"[^"\n]{12,}"|“[^”\n]{12,}”|「[^」\n]{6,}」|『[^』\n]{6,}』')
_GAP: Final = re.compile(r"[ \t]{2,}")  # where something was taken out, or spaces were
# A line that is mostly not words: a log line, a table row, a path, JSON.
_WORDISH: Final = 0.6


def own_words(text: str) -> str:
    """Given a human message, return it without quotations, code and pasted lines (see the
    module's description), its lines otherwise as they were. A message that is all quotation
    marks and words between them is the writer's: what else they say is in it."""
    text = _FENCED.sub("\n", text)
    text = _QUOTED_LINE.sub("", text)
    text = _INLINE_CODE.sub(" ", text)
    said = _lines(_QUOTATION.sub(" ", text))
    return said or _lines(text)


def _lines(text: str) -> str:
    lines = [_GAP.sub(" ", line).strip() for line in text.split("\n") if _is_words(line)]
    return "\n".join(lines).strip()


def _is_words(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    # Letters of any script, and emoji and other symbols beyond ASCII, are the writer's.
    wordish = sum(
        1 for c in stripped if c.isalpha() or c.isspace() or c in ",.!?'’;:-()" or ord(c) > 0x2000
    )
    return wordish >= _WORDISH * len(stripped)
