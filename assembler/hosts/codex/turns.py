"""Codex's side of the transcript reader: which words of a `user` message are the human's.

Taken from Codex's own rollouts and code (codex-rs `protocol`, `core/src/rollout`), not from its
documentation. What Codex sends the model as the user's turn is written as a `response_item`
message of role `user`, and the host puts its own text there too: the environment it runs in
(`<environment_context>`), the project's AGENTS.md (`# AGENTS.md instructions for <folder>`
with `<INSTRUCTIONS>`, before 0.2x `<user_instructions>`), a turn the human interrupted
(`<turn_aborted>`), a shell command the human ran with `!` (`<user_shell_command>`), a
sub-agent's report (`<subagent_notification>`), a skill's body (`<skill>`). Since 0.16x each
content item also names its provenance (`internal_chat_message_metadata_passthrough`:
`{"provenance": {"type": "user"}}` for what the human typed, `harness`, `skills`, ... for the
host's): where it does, that decides. What a hook adds is a message of role `developer`, never
the human's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from assembler.transcripts.message import NOTHING, UserTurn

# The content item types that hold text, in what the model is sent and what it answers.
INPUT_TEXT: Final = "input_text"
OUTPUT_TEXT: Final = "output_text"

# A block that is wholly one of the host's tagged parts (`<environment_context>...`), or opens
# with the header Codex puts over a project's AGENTS.md.
_TAGGED = re.compile(r"\A\s*<([a-z][a-z0-9]*(?:_[a-z0-9]+)+)>.*</\1>\s*\Z", re.DOTALL)
_AGENTS_HEADER = re.compile(r"\A\s*# AGENTS\.md instructions for ")
_HOST_TAGS: Final = (
    "environment_context",
    "user_instructions",
    "turn_aborted",
    "user_shell_command",
    "subagent_notification",
    "skill",
    "INSTRUCTIONS",
)
_HOST_TAG = re.compile(r"\A\s*<(?:" + "|".join(_HOST_TAGS) + r")>")


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
        if is_host_text(text):
            continue
        if text.strip():
            words.append(text.strip())
    return UserTurn("human", "\n".join(words)) if words else NOTHING


def is_host_text(text: str) -> bool:
    """Given one text item of a user message, return whether Codex wrote it (its environment,
    the project's instructions, an interruption, a shell command's record, ...)."""
    if _AGENTS_HEADER.match(text) or _HOST_TAG.match(text):
        return True
    return _TAGGED.match(text) is not None


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
