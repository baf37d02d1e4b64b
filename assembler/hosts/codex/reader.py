"""Codex's rollout lines: `{"timestamp", "type", "payload"}`, one per line, in order.

The first line is the session's `session_meta` (its id, working folder, the host's version);
the conversation is in `response_item` lines (what the model was sent and answered: messages,
tool calls and their output), beside `event_msg` lines (what the interface showed),
`turn_context` lines (each turn's settings) and `compacted` lines (a compaction's summary).
Only `response_item` messages are read, so a turn is never counted twice: `user` ones through
`turns.user_turn` (the host's parts dropped), `assistant` ones by their `output_text`; the
`developer` messages (the host's instructions, what hooks add) are not the conversation.
"""

from __future__ import annotations

from typing import Any, Final

from assembler.hosts.codex.turns import OUTPUT_TEXT, content_texts, user_turn
from assembler.transcripts.message import (
    Message,
    Role,
    Summary,
    impossible_time,
    message_text,
    parse_time,
    str_or_none,
)
from assembler.transcripts.reader import Node, Reader, Verdict

# The line types Codex writes (codex-rs/protocol `RolloutItem`, and the newer ones of 0.16x).
LINE_TYPES: Final = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)


class CodexReader(Reader):
    """Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`)."""

    def header(self, value: dict[str, Any]) -> None:
        payload = value.get("payload")
        if value.get("type") == "session_meta" and isinstance(payload, dict):
            self.session_id = str_or_none(payload.get("id")) or self.session_id
            self.cwd = str_or_none(payload.get("cwd"))

    def node(self, value: object) -> Verdict:
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("type"), str)
            or not isinstance(value.get("payload"), dict)
        ):
            return "bad"
        if value["type"] not in ("response_item", "compacted"):
            return "ignore"  # the interface's events, settings, usage: not the conversation
        return Node(None, None, True, value)

    def take(self, value: dict[str, Any]) -> bool:
        payload: dict[str, Any] = value["payload"]
        if value["type"] == "compacted":
            summary = payload.get("message")
            at = parse_time(value.get("timestamp"))
            if isinstance(summary, str) and summary.strip() and not self._later(at):
                self.summaries.append(Summary(summary.strip(), at))
            return True
        if payload.get("type") != "message":
            return True  # tool calls and their output, reasoning
        role = payload.get("role")
        if role == "assistant":
            text = "\n".join(
                piece.strip()
                for _, piece in content_texts(payload.get("content"), OUTPUT_TEXT)
                if piece.strip()
            )
            if not text or self._bad_time(value):
                return True
            return self._reply(self._message("assistant", text, value))
        if role != "user":
            return True  # the host's instructions and what hooks add (`developer`, `system`)
        turn = user_turn(payload)
        if turn.said != "human" or self._bad_time(value):
            return True
        return self._said(self._message("user", turn.text, value))

    def _bad_time(self, value: dict[str, Any]) -> bool:
        if impossible_time(value.get("timestamp")):
            self.bad_lines += 1
            return True
        return False

    def _message(self, role: Role, text: str, value: dict[str, Any]) -> Message:
        kept, length = message_text(text)
        return Message(
            role=role,
            text=kept,
            timestamp=parse_time(value.get("timestamp")),
            source=self.source,
            session_id=self.session_id,
            cwd=self.cwd,
            original_length=length,
        )
