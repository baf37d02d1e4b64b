"""A fresh workspace for a host's end-to-end run: its config (memory search off) and, when
asked, a transcript of its own with one human question, so that what the host writes does not
change the scratchpad; and the unique strings the runs look for in the requests."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

QUESTION = "why does the deploy keep failing on staging"


def unique(what: str) -> str:
    """Given what a string stands for, return it made unique to this run."""
    return f"e2e {what} {uuid.uuid4().hex[:12]}"


def write_workspace(workspace: Path, *, transcript: bool) -> None:
    """Given a new workspace folder, write its assembler.toml and, with `transcript`, its
    chat.jsonl holding QUESTION, asked ten minutes ago (so that a render a few minutes
    earlier than the clock reads it too)."""
    config = '[memory]\nmodel = "none"\n'
    if transcript:
        config = '[transcripts]\nsources = ["chat.jsonl"]\n' + config
        asked = datetime.now(UTC) - timedelta(minutes=10)
        message = {"role": "user", "content": QUESTION, "timestamp": asked.isoformat()}
        (workspace / "chat.jsonl").write_text(json.dumps(message) + "\n")
    (workspace / "assembler.toml").write_text(config)
