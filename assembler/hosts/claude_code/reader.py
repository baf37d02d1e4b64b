"""Claude Code's project transcript lines (1.x and 2.x): the messages on the active branch, the
compaction summaries, and the session titles it writes as `summary` lines.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from assembler.hosts.claude_code.turns import user_turn
from assembler.transcripts.message import (
    Message,
    Role,
    Summary,
    impossible_time,
    message_text,
    parse_time,
    str_or_none,
    text_of,
)
from assembler.transcripts.reader import Node, Reader, Unit, Verdict


class ClaudeCodeReader(Reader):
    """Claude Code project transcript lines (1.x and 2.x).

    Besides the messages it collects the session titles Claude Code writes as `summary` lines
    (`{"type": "summary", "summary": ..., "leafUuid": ...}`), dated by the message they end at.
    """

    def __init__(
        self,
        source: str,
        cutoff: datetime | None,
        limit: int,
        session_id: str | None,
        until: datetime | None = None,
    ) -> None:
        super().__init__(source, cutoff, limit, session_id, until)
        self._titles: dict[str, str | None] = {}  # title -> the uuid of its last message
        self._stamps: dict[str, datetime] = {}  # uuid -> time, of the lines walked

    def header(self, value: dict[str, Any]) -> None:
        self._title(value)  # resumed sessions open with the titles of what they continue

    def unit(self, fallback_time: datetime) -> Unit:
        unit = super().unit(fallback_time)
        titles: list[Summary] = []
        for title, leaf in self._titles.items():
            at = self._stamps.get(leaf) if leaf is not None else None
            if not self._later(at):
                titles.append(Summary(title, at, "title"))
        unit.summaries = sorted(
            [*unit.summaries, *titles],
            key=lambda s: s.timestamp or datetime.min.replace(tzinfo=UTC),
        )
        return unit

    def _title(self, value: dict[str, Any]) -> None:
        title = value.get("summary")
        if value.get("type") == "summary" and isinstance(title, str) and title.strip():
            leaf = value.get("leafUuid")
            self._titles.setdefault(title.strip(), leaf if isinstance(leaf, str) else None)

    def node(self, value: object) -> Verdict:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return "bad"
        kind = value["type"]
        self._title(value)
        key = value.get("uuid")
        when = parse_time(value.get("timestamp"))
        if isinstance(key, str) and when is not None:
            self._stamps[key] = when
        if value.get("isSidechain") is True:
            return "ignore"  # subagent traffic has its own tree
        if kind in ("user", "assistant"):
            message = value.get("message")
            if not isinstance(message, dict):
                return "bad"
            content = message.get("content")
            if not isinstance(content, str | list):
                return "bad"
            if (
                isinstance(content, list)
                and content
                and not any(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content)
            ):
                return "bad"
        if not isinstance(key, str) and kind not in ("user", "assistant"):
            return "ignore"  # summaries, file-history snapshots: not part of the tree
        parent = value.get("parentUuid")
        if not isinstance(parent, str):
            # A compaction starts a new root but remembers where it came from.
            logical = value.get("logicalParentUuid")
            parent = logical if isinstance(logical, str) else None
        return Node(
            key if isinstance(key, str) else None,
            parent,
            True,
            value,
            can_lead=kind in ("user", "assistant"),
        )

    def take(self, value: dict[str, Any]) -> bool:
        kind = value["type"]
        if kind not in ("user", "assistant"):
            return True  # attachments, system lines: links of the tree, not messages
        body: dict[str, Any] = value["message"]
        if value.get("isCompactSummary") is True:
            summary = text_of(body.get("content"))
            at = parse_time(value.get("timestamp"))
            if summary and not self._later(at):
                self.summaries.append(Summary(summary, at))
            return True
        role = body.get("role") if body.get("role") in ("user", "assistant") else kind
        if role == "assistant":
            if body.get("model") == "<synthetic>":
                return True  # errors and notices Claude Code writes itself
            text = text_of(body.get("content"))
            if not text or self._bad_time(value):
                return True
            return self._reply(self._message("assistant", text, value, None))
        turn = user_turn(value)
        if turn.said == "host":
            self._host_turn()
            return True
        if turn.said == "none" or self._bad_time(value):
            return True
        return self._said(self._message("user", turn.text, value, turn.speaker))

    def _bad_time(self, value: dict[str, Any]) -> bool:
        if impossible_time(value.get("timestamp")):
            self.bad_lines += 1
            return True
        return False

    def _message(
        self, role: Role, text: str, value: dict[str, Any], speaker: str | None
    ) -> Message:
        kept, length = message_text(text)
        return Message(
            role=role,
            text=kept,
            timestamp=parse_time(value.get("timestamp")),
            source=self.source,
            speaker=speaker,
            session_id=str_or_none(value.get("sessionId")) or self.session_id,
            cwd=str_or_none(value.get("cwd")),
            original_length=length,
        )
