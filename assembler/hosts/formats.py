"""The names of the transcript formats the hosts write: what `transcripts.format` may force
(`auto` tells them apart by their first lines)."""

from __future__ import annotations

from typing import Final

AUTO: Final = "auto"
OPENCLAW: Final = "openclaw"
OPENCLAW_STORE: Final = "openclaw-sqlite"
CLAUDE_CODE: Final = "claude-code"
CODEX: Final = "codex"
GENERIC: Final = "generic"

