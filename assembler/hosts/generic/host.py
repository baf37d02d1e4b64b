"""Generic JSONL transcripts, for any other agent: one `{"role", "content", "timestamp",
"speaker"?}` object per line, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from assembler.hosts.host import PlainHost
from assembler.transcripts.message import (
    Message,
    Role,
    impossible_time,
    message_text,
    parse_time,
    str_or_none,
    text_of,
)
from assembler.transcripts.reader import Node, Reader, Verdict

GENERIC: Final = "generic"  # its format's name, as `transcripts.format` names it


_GENERIC_ROLES: Final[dict[str, Role]] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "agent": "assistant",
    "ai": "assistant",
}


class GenericReader(Reader):
    """One `{"role", "content", "timestamp", "speaker"?}` object per line, in order."""

    def node(self, value: object) -> Verdict:
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("role"), str)
            or not isinstance(value.get("content"), str | list)
        ):
            return "bad"
        return Node(None, None, True, value)

    def take(self, value: dict[str, Any]) -> bool:
        role = _GENERIC_ROLES.get(value["role"].strip().lower())
        if role is None:
            return True  # system prompts, tool output: not a party of the conversation
        text = text_of(value["content"])
        if not text:
            return True
        if impossible_time(value.get("timestamp")):
            self.bad_lines += 1
            return True
        kept, length = message_text(text)
        message = Message(
            role=role,
            text=kept,
            timestamp=parse_time(value.get("timestamp")),
            source=self.source,
            speaker=str_or_none(value.get("speaker")) if role == "user" else None,
            session_id=str_or_none(value.get("session_id") or value.get("sessionId"))
            or self.session_id,
            cwd=str_or_none(value.get("cwd")),
            original_length=length,
        )
        return self._said(message) if role == "user" else self._reply(message)


class Generic(PlainHost):
    """Any agent that writes its conversation as generic JSONL, named in the config."""

    label = "generic JSONL"
    formats: tuple[str, ...] = (GENERIC,)
    # Where `sources` finds a workspace's sessions, as the docs' table of the hosts says it.
    sessions_at = "nowhere by itself: only what `transcripts.sources` names"
    reader_class: type[Reader] = GenericReader

    def sources(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        return []  # only where the config says

    def claims(self, line: Mapping[str, Any]) -> str | None:
        return GENERIC if "role" in line and "content" in line else None


HOST: Final = Generic()
