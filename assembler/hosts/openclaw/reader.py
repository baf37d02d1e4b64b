"""OpenClaw's session entries (JSONL lines or SQLite rows, session versions 1 to 4, as pi writes
them too): which entries are messages, which user turns and replies are the host's, and the
compactions that decide what the model still sees.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

from assembler.hosts.openclaw.time_line import STATUS_TOOL, time_line_zone
from assembler.hosts.openclaw.turns import is_host_assistant, user_turn
from assembler.transcripts.message import (
    Message,
    Role,
    Summary,
    ZoneSeen,
    impossible_time,
    message_text,
    parse_time,
    stamp_offset,
    text_of,
)
from assembler.transcripts.reader import Node, Reader, Verdict

# Housekeeping replies of OpenClaw's silent turns and heartbeat, possibly decorated.
_SILENT_REPLY = re.compile(r"^\W*NO_REPLY\W*$")


_HEARTBEAT_REPLY = re.compile(r"^\W*HEARTBEAT_OK\W*$")


_OPENCLAW_ROLES = frozenset({"user", "assistant"})


_SENDER_KEYS = ("senderName", "sender", "from")


class OpenClawReader(Reader):
    """OpenClaw / pi session entries (JSONL lines or SQLite rows), session versions 1 to 4."""

    stamps_zones = True  # the envelopes of the human's messages
    zone_line_keys = (b'"toolResult"',)  # the session_status results: their time line

    def __init__(
        self,
        source: str,
        cutoff: datetime | None,
        limit: int,
        session_id: str | None,
        until: datetime | None = None,
    ) -> None:
        super().__init__(source, cutoff, limit, session_id, until)
        self._compacted = False
        self._first_kept: str | None = None
        self._keep_from: int | None = None  # version 1: the offset of the first kept entry
        # Set by a HEARTBEAT_OK reply: the user message it answers (newer-first walk: the next
        # user message taken) is the host's heartbeat or cron prompt, not the human. NO_REPLY
        # is the agent choosing silence after a real human message (a group chat): only the
        # reply is dropped, the human's message stays.
        self._skip_prompt = False

    def header(self, value: dict[str, Any]) -> None:
        if value.get("type") != "session":
            return
        if isinstance(value.get("id"), str) and value["id"]:
            self.session_id = value["id"]
        if isinstance(value.get("cwd"), str):
            self.cwd = value["cwd"]

    def zone_of(self, value: dict[str, Any]) -> ZoneSeen | None:
        body = value.get("message")
        if value.get("type") != "message" or not isinstance(body, dict):
            return None
        if _status_result(body):
            return time_line_zone(text_of(body.get("content")), _when(value, body))
        if body.get("role") != "user":
            return None
        text = text_of(body.get("content"))
        turn = user_turn(body, text)
        at = _when(value, body)
        if turn.said == "host" and (named := time_line_zone(text, at)) is not None:
            return named
        stamp = turn.stamp
        if stamp is None:
            return None
        offset = stamp_offset(stamp, at)
        return ZoneSeen(at, offset, stamp.zone or None) if offset is not None else None

    def node(self, value: object) -> Verdict:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return "bad"
        kind = value["type"]
        if kind == "session":
            return "ignore"
        if kind == "message":
            message = value.get("message")
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                return "bad"
            if message["role"] in _OPENCLAW_ROLES and not isinstance(
                message.get("content"), str | list
            ):
                return "bad"
        key = value.get("id")
        parent = value.get("parentId")
        if not isinstance(key, str):
            # Version 1 sessions had no ids: their entries simply follow each other.
            return Node(None, None, True, value)
        if kind == "leaf":
            # Version 4 moves the active branch with leaf entries: what follows continues from
            # `targetId` (null: from nothing, the branch was rewound to the start).
            target = value.get("targetId")
            return Node(key, target if isinstance(target, str) else None, False, value)
        # A side entry (version 4) is written beside the branch without moving it.
        side = value.get("appendMode") == "side"
        return Node(key, parent if isinstance(parent, str) else None, False, value, not side)

    def take(self, value: dict[str, Any]) -> bool:
        if self._keep_from is not None and (self.line_start or 0) < self._keep_from:
            return False  # before the first entry a version 1 compaction kept
        kind = value["type"]
        if value.get("appendMode") == "side":
            return True
        if kind in ("compaction", "reset") and self._later(parse_time(value.get("timestamp"))):
            return True  # not made yet by the run's clock: the entries before it were live
        if kind in ("compaction", "reset") and not self._compacted:
            # Only the newest compaction (or reset, version 4) on the branch defines the live
            # context: entries from its first kept one on.
            self._compacted = True
            summary = value.get("summary")
            if kind == "compaction" and isinstance(summary, str) and summary.strip():
                self.summaries.append(Summary(summary, parse_time(value.get("timestamp"))))
            first_kept = value.get("firstKeptEntryId")
            index = value.get("firstKeptEntryIndex")
            if isinstance(first_kept, str):
                self._first_kept = first_kept
            elif isinstance(index, int) and not isinstance(index, bool) and self.entry_offset:
                offset = self.entry_offset(index)
                self.bytes_scanned += offset or 0
                if offset is None:
                    return False
                self._keep_from = offset
            else:
                return False
        elif kind == "message":
            body: dict[str, Any] = value["message"]
            if body["role"] == "assistant":
                reply = self._assistant(value, body)
                if reply is not None:
                    self._skip_prompt = False
                    if not self._reply(reply):
                        return False
            elif body["role"] == "user" and not self._user(value, body):
                return False
            elif self.zone is None and _status_result(body):
                at = _when(value, body)
                if not self._later(at):
                    self.zone = time_line_zone(text_of(body.get("content")), at)
        return not (self._first_kept is not None and value.get("id") == self._first_kept)

    def _assistant(self, entry: dict[str, Any], body: dict[str, Any]) -> Message | None:
        if is_host_assistant(body):
            return None  # a copy of delivered text, or the gateway's own notice
        text = text_of(body.get("content"))
        if _HEARTBEAT_REPLY.match(text):
            self._skip_prompt = True
            return None
        if not text or _SILENT_REPLY.match(text):
            return None
        if impossible_time(body.get("timestamp")) or impossible_time(entry.get("timestamp")):
            self.bad_lines += 1
            return None
        return self._message("assistant", text, entry, body, None)

    def _user(self, entry: dict[str, Any], body: dict[str, Any]) -> bool:
        """Take a user message; return False when done walking."""
        text = text_of(body.get("content"))
        turn = user_turn(body, text)
        if turn.said == "none":
            return True
        if turn.said == "host" or self._skip_prompt:
            self._skip_prompt = False
            self._host_turn()
            at = _when(entry, body)
            if self.zone is None and not self._later(at):
                # The prompt's own time line names the user's configured zone; its envelope
                # is in the gateway's zone unless set otherwise.
                self.zone = time_line_zone(text, at)
            if self.zone is None and turn.stamp is not None and not self._later(at):
                offset = stamp_offset(turn.stamp, at)
                if offset is not None:
                    self.zone = ZoneSeen(at, offset, turn.stamp.zone or None)
            return True
        if impossible_time(body.get("timestamp")) or impossible_time(entry.get("timestamp")):
            self.bad_lines += 1
            return True
        speaker = _sender(entry, body) or turn.speaker
        message = self._message("user", turn.text, entry, body, speaker)
        if turn.stamp is not None:
            offset = stamp_offset(turn.stamp, message.timestamp)
            if offset is not None:
                message = replace(message, utc_offset=offset, zone=turn.stamp.zone or None)
        return self._said(message)

    def _message(
        self,
        role: Role,
        text: str,
        entry: dict[str, Any],
        body: dict[str, Any],
        speaker: str | None,
    ) -> Message:
        kept, length = message_text(text)
        return Message(
            role=role,
            text=kept,
            timestamp=parse_time(body.get("timestamp")) or parse_time(entry.get("timestamp")),
            source=self.source,
            speaker=speaker,
            session_id=self.session_id,
            cwd=self.cwd,
            original_length=length,
        )


def _status_result(body: dict[str, Any]) -> bool:
    """Whether a message is the result of OpenClaw's `session_status` tool."""
    return body.get("role") == "toolResult" and body.get("toolName") == STATUS_TOOL


def _when(entry: dict[str, Any], body: dict[str, Any]) -> datetime | None:
    """When a message was written: its own time, else its entry's."""
    return parse_time(body.get("timestamp")) or parse_time(entry.get("timestamp"))


def _sender(entry: dict[str, Any], body: dict[str, Any]) -> str | None:
    """Given a user entry, return who spoke in a group chat, if the host recorded it."""
    for holder in (entry, body):
        for key in _SENDER_KEYS:
            value = holder.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, dict):
                for name_key in ("name", "displayName", "username", "id"):
                    name = value.get(name_key)
                    if isinstance(name, str | int) and not isinstance(name, bool) and str(name):
                        return str(name)
    return None
