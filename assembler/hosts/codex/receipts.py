"""What a Codex rollout records of each turn: the prompts the human typed (`user` messages
whose item's provenance is the user's) and what a hook added to them, as Codex keeps it (a
`developer` message whose items are of kind `hooks.additional_context`, 0.171). The agent
writes neither, so the block's text elsewhere (its replies, a tool's output) is no receipt."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from assembler.delivery.sent import text_digest
from assembler.delivery.turns import Turn, read_tail
from assembler.transcripts.message import parse_time

HOOK_KIND = "hooks.additional_context"


def _meta(payload: dict[str, Any]) -> dict[str, Any]:
    meta = payload.get("internal_chat_message_metadata_passthrough")
    return meta if isinstance(meta, dict) else {}


def _typed(payload: dict[str, Any]) -> bool:
    items = _meta(payload).get("content_item_metadata")
    provenances = [
        item.get("provenance", {}).get("type")
        for item in items if isinstance(item, dict) and isinstance(item.get("provenance"), dict)
    ] if isinstance(items, list) else []  # fmt: skip
    return bool(provenances) and all(kind == "user" for kind in provenances)


def _texts(payload: dict[str, Any]) -> list[str]:
    content = payload.get("content")
    items = content if isinstance(content, list) else []
    return [i["text"] for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)]


def codex_turns(path: Path) -> tuple[str, list[Turn]] | None:
    """Given a Codex rollout, return its session's id and its turns, each with the digests of
    what hooks added to it; None when it cannot be read."""
    data = read_tail(path)
    if data is None:
        return None
    session = path.stem.rsplit("-", 5)[-5:]
    session_id = "-".join(session)
    turns: list[tuple[datetime, list[str], str | None]] = []
    version: str | None = None
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        payload = line.get("payload") if isinstance(line, dict) else None
        if not isinstance(payload, dict):
            continue
        if line.get("type") == "session_meta" and isinstance(payload.get("id"), str):
            session_id = payload["id"]
            cli = payload.get("cli_version")
            version = cli if isinstance(cli, str) else version
            continue
        if line.get("type") != "response_item" or payload.get("type") != "message":
            continue
        at = parse_time(line.get("timestamp"))
        role = payload.get("role")
        if role == "user" and at is not None and _typed(payload):
            turns.append((at, [], version))
        elif (
            role == "developer"
            and turns
            and HOOK_KIND in (_meta(payload).get("content_item_kinds") or [])
        ):
            turns[-1][1].extend(text_digest(text) for text in _texts(payload))
    return session_id, [Turn(at, tuple(added), v) for at, added, v in turns]
