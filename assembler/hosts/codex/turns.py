"""Codex's side of the transcript reader: which words of a `user` message are the human's.

What Codex sends the model as the user's turn is written as a `response_item` message of role
`user`, and the host puts its own text there too, each part in a content item of its own: the
environment it runs in (`<environment_context>`), the project's AGENTS.md, a turn the human
interrupted, a shell command the human ran with `!`, a sub-agent's report, a skill's body, the
prompts of /init, /review and compaction, an image's wrapper... `host_text.CATALOGUE` lists them
all, as Codex's released code writes them; an item that opens with one of them, or is wholly one
tagged block (`<some_tag>...</some_tag>`), is the host's. Since 0.142 each content item also
names its provenance (`internal_chat_message_metadata_passthrough`: `{"provenance": {"type":
"user"}}` for what the human typed, `harness`, `skills`, ... for the host's): where it does, that
decides. What a hook adds is a message of role `developer`, never the human's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from assembler.hosts.codex.host_text import CATALOGUE
from assembler.transcripts.message import NOTHING, UserTurn

# The content item types that hold text, in what the model is sent and what it answers.
INPUT_TEXT: Final = "input_text"
OUTPUT_TEXT: Final = "output_text"

# A block that is wholly one tagged part (`<some_part>...</some_part>`), Codex's way of marking
# what it adds even where the catalogue does not name the tag.
_TAGGED = re.compile(r"\A\s*<([a-z][a-z0-9]*(?:_[a-z0-9]+)+)>.*</\1>\s*\Z", re.DOTALL)


def _opener(opens: str) -> str:
    """Given how a host text opens, return a pattern of it: a tag's name that attributes follow
    (`<hook_prompt hook_run_id=...>`) must end there, not run on into a longer name."""
    open_tag = opens.startswith("<") and ">" not in opens and opens[-1].isalnum()
    return re.escape(opens) + (r"(?=[\s>/])" if open_tag else "")


# How the catalogue's texts that are wholly the host's open, and the markers in an item that the
# human's words follow.
_HOST_OPENER = re.compile(
    r"\A\s*(?:" + "|".join(_opener(e.opens) for e in CATALOGUE if e.words_after is None) + ")"
)
_WORDS_AFTER: Final = tuple(e.words_after for e in CATALOGUE if e.words_after)


def content_texts(content: object, kind: str) -> Iterator[tuple[int, str]]:
    """Given a message's `content` (a list of items) and the text item type to take
    (`input_text` or `output_text`), yield each such item's position and text."""
    if isinstance(content, str):
        yield 0, content
        return
    if not isinstance(content, list):
        return
    for index, item in enumerate(content):
        if isinstance(item, dict) and item.get("type") == kind:
            text = item.get("text")
            if isinstance(text, str):
                yield index, text


def user_turn(payload: Mapping[str, Any]) -> UserTurn:
    """Given a `response_item` message of role `user` (its `payload`), return the human's words
    in it, without the host's parts; NOTHING when it holds none."""
    provenance = _provenance(payload)
    words: list[str] = []
    for index, text in content_texts(payload.get("content"), INPUT_TEXT):
        said = provenance.get(index)
        if said is not None:
            if said == "user" and text.strip():
                words.append(text.strip())
            continue
        own = human_words(text)
        if own:
            words.append(own)
    return UserTurn("human", "\n".join(words)) if words else NOTHING


def is_host_text(text: str) -> bool:
    """Given one text item of a user message, return whether Codex wrote all of it (its
    environment, the project's instructions, an interruption, a shell command's record, ...)."""
    return _HOST_OPENER.match(text) is not None or _TAGGED.match(text) is not None


def human_words(text: str) -> str:
    """Given one text item of a user message without a provenance, return the human's words in
    it: none in the host's texts; of an item holding `## My request for Codex:` (what an IDE
    puts after its open files), what follows it, as Codex itself shows the human's message;
    else all of it, stripped."""
    if is_host_text(text):
        return ""
    for marker in _WORDS_AFTER:
        _, found, after = text.partition(marker)
        if found:
            return after.strip()
    return text.strip()


def _provenance(payload: Mapping[str, Any]) -> dict[int, str]:
    """Given a message's payload, return the provenance Codex recorded for each content item
    (its position: "user", "harness", ...), where it recorded one."""
    meta = payload.get("internal_chat_message_metadata_passthrough")
    items = meta.get("content_item_metadata") if isinstance(meta, dict) else None
    found: dict[int, str] = {}
    for index, item in enumerate(items if isinstance(items, list) else ()):
        origin = item.get("provenance") if isinstance(item, dict) else None
        kind = origin.get("type") if isinstance(origin, dict) else None
        if isinstance(kind, str):
            found[index] = kind
    return found
