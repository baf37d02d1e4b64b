"""What Claude Code's transcript records of each turn: the prompts the human typed (`user`
lines with a `promptId`) and what a hook added to them, as Claude Code keeps it
(`attachment` lines of type `hook_additional_context`, 2.1). The agent writes neither kind of
line, so the block's text elsewhere (its replies, a tool's output) is no receipt."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from assembler.delivery.sent import text_digest
from assembler.delivery.turns import Turn, read_tail
from assembler.transcripts.message import parse_time


def _typed(line: dict[str, Any]) -> bool:
    """Whether a `user` line is a prompt the human typed (not a tool's result or a meta line)."""
    if line.get("isMeta") or not isinstance(line.get("promptId"), str):
        return False
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(item, dict) and item.get("type") == "tool_result" for item in content
    )


def claude_code_turns(path: Path) -> tuple[str, list[Turn]] | None:
    """Given a Claude Code transcript, return its session's id and its turns, each with the
    digests of what hooks added to it; None when it cannot be read."""
    data = read_tail(path)
    if data is None:
        return None
    session = path.stem
    turns: list[tuple[datetime, list[str], str | None]] = []
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(line, dict):
            continue
        if isinstance(line.get("sessionId"), str):
            session = line["sessionId"]
        at = parse_time(line.get("timestamp"))
        if line.get("type") == "user" and at is not None and _typed(line):
            version = line.get("version")
            turns.append((at, [], version if isinstance(version, str) else None))
            continue
        attachment = line.get("attachment")
        if (
            line.get("type") == "attachment"
            and isinstance(attachment, dict)
            and attachment.get("type") == "hook_additional_context"
            and turns
        ):
            content = attachment.get("content")
            texts = [c for c in content if isinstance(c, str)] if isinstance(content, list) else []
            digests = [text_digest(text) for text in texts]
            if texts:
                digests.append(text_digest("".join(texts)))
            turns[-1][1].extend(digests)
    return session, [Turn(at, tuple(dict.fromkeys(added)), v) for at, added, v in turns]
