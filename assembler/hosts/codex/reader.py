"""Codex's rollout lines: `{"timestamp", "type", "payload"}`, one per line, in order.

The first line is the session's `session_meta` (its id, working folder, the host's version);
the conversation is in `response_item` lines (what the model was sent and answered: messages,
tool calls and their output), beside `event_msg` lines (what the interface showed),
`turn_context` lines (each turn's settings) and `compacted` lines (a compaction's summary).
The human's clock: from 0.107 each `turn_context` names the zone (`timezone`, an IANA name, as
the `<environment_context>` block does); before that, Codex names each rollout by the machine's
local time when it began (`rollout-2025-10-31T19-02-58-<id>.jsonl`, codex-rs
`rollout/recorder.rs`) and stamps the lines in UTC, the two together the offset from UTC
(`rollout_zone`).
Only `response_item` messages are read, so a turn is never counted twice: `user` ones through
`turns.user_turn` (the host's parts dropped; of a custom prompt's expansion, the arguments:
`prompts.human_part`), `assistant` ones by their `output_text`; the
`developer` messages (the host's instructions, what hooks add) are not the conversation.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import PurePath
from typing import Any, Final

from assembler.hosts.codex.prompts import CustomPrompt, human_part, prompts_for
from assembler.hosts.codex.turns import OUTPUT_TEXT, content_texts, user_turn
from assembler.transcripts.message import (
    Message,
    Role,
    Summary,
    ZoneSeen,
    impossible_time,
    message_text,
    named_zone,
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


# A rollout's name: the local time it began, to the second.
_ROLLOUT_NAME = re.compile(r"\Arollout-(\d{4})-(\d\d)-(\d\d)T(\d\d)-(\d\d)-(\d\d)-")
# Offsets are whole quarter hours; a name and a stamp further apart than the widest zone (or
# than a few seconds off a quarter hour) are not a clock reading.
_QUARTER = 15 * 60
_WIDEST = timedelta(hours=14)
_SLACK_SECONDS = 90


class CodexReader(Reader):
    """Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`)."""

    # Whether the zone came from a turn's named zone (0.107 on), which the rollout's name
    # (an offset only) does not replace.
    _named_zone = False
    # The custom prompts of the rollout's Codex home, read at its first user message.
    _prompts: tuple[CustomPrompt, ...] | None = None

    def header(self, value: dict[str, Any]) -> None:
        payload = value.get("payload")
        if value.get("type") == "session_meta" and isinstance(payload, dict):
            self.session_id = str_or_none(payload.get("id")) or self.session_id
            self.cwd = str_or_none(payload.get("cwd"))
            began = parse_time(payload.get("timestamp")) or parse_time(value.get("timestamp"))
            self.zone = rollout_zone(PurePath(self.source).name, began) or self.zone

    def node(self, value: object) -> Verdict:
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("type"), str)
            or not isinstance(value.get("payload"), dict)
        ):
            return "bad"
        if value["type"] == "turn_context" and not self._named_zone:
            # Newest first: the newest turn's zone, by its name (daylight saving and all).
            named = named_zone(value["payload"].get("timezone"), parse_time(value.get("timestamp")))
            if named is not None:
                self.zone, self._named_zone = named, True
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
        if self._prompts is None:
            self._prompts = prompts_for(self.source)
        said = human_part(turn.text, self._prompts) or turn.text
        return self._said(self._message("user", said, value))

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


def rollout_zone(name: str, began: datetime | None) -> ZoneSeen | None:
    """Given a rollout's file name and when its session began (UTC, its first line's stamp),
    return the offset of the machine's clock that named it. None for a name that is not a
    rollout's, and for a zero offset: Codex names a rollout in UTC where it cannot read the
    local offset, so a name in UTC does not tell the human's zone."""
    match = _ROLLOUT_NAME.match(name)
    if match is None or began is None:
        return None
    try:
        local = datetime(*(int(part) for part in match.groups()))  # type: ignore[arg-type]
    except ValueError:
        return None
    seconds = (local - began.replace(tzinfo=None)).total_seconds()
    quarters = round(seconds / _QUARTER)
    if abs(seconds - quarters * _QUARTER) > _SLACK_SECONDS or quarters == 0:
        return None
    offset = timedelta(seconds=quarters * _QUARTER)
    return ZoneSeen(began, offset, None) if abs(offset) <= _WIDEST else None
