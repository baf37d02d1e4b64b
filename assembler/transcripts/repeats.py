"""User turns no person typed, told by their structure rather than by their words: a text that
comes back three or more times in one session, its times and numbers aside, is a host's or a
plugin's prompt (a heartbeat, a cron job, a scheduled check), whatever its wording and
whichever version wrote it. Copies within minutes of each other count once: that is a person
sending a message again when no answer came, not a schedule.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from assembler.transcripts.message import Message

# How often one text must come back in a session to be the host's, not a person's.
REPEATS: Final = 3
# Shorter texts are what people do say again and again ("yes", "ok, continue", "status?").
MIN_CHARS: Final = 24
# Copies closer than this to the copy counted before them are one sending, re-sent.
RESENT_WITHIN: Final = timedelta(minutes=10)

# Times, dates, numbers and ids change from one run of a prompt to the next.
_VARIABLE = re.compile(r"[0-9a-f]{8,}|\d+", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def shape(text: str) -> str:
    """Given a turn's text, return it with its numbers, ids and spacing folded: two runs of one
    prompt at different times have the same shape."""
    return _SPACE.sub(" ", _VARIABLE.sub("#", text.casefold())).strip()


def without_repeats(messages: Sequence[Message]) -> list[Message]:
    """Given one session's messages (oldest first), return them without the user turns whose
    shape comes back `REPEATS` times or more, copies within `RESENT_WITHIN` of the one counted
    before counting once (see the module's description), and without the replies that answer
    those turns (the assistant messages up to the next user turn)."""
    shapes = [shape(m.text) if m.role == "user" else "" for m in messages]
    counts: Counter[str] = Counter()
    counted: dict[str, datetime] = {}  # each shape's copy counted last, when it had a time
    for message, said in zip(messages, shapes, strict=True):
        if len(said) < MIN_CHARS:
            continue
        last, at = counted.get(said), message.timestamp
        if last is not None and at is not None and at - last < RESENT_WITHIN:
            continue  # sent again: the same sending
        counts[said] += 1
        if at is not None:
            counted[said] = at
    repeated = {s for s, n in counts.items() if n >= REPEATS}
    if not repeated:
        return list(messages)
    kept: list[Message] = []
    answering_host = False
    for message, said in zip(messages, shapes, strict=True):
        if message.role == "user":
            answering_host = said in repeated
        if not answering_host:
            kept.append(message)
    return kept
