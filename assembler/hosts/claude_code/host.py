"""Claude Code as the core sees it: the transcripts its hook recorded, and their format."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.hosts.claude_code.reader import ClaudeCodeReader
from assembler.hosts.claude_code.receipts import claude_code_turns
from assembler.hosts.claude_code.sessions import (
    auto_memory_dir,
    claude_code_looked,
    claude_code_served,
    claude_code_sources,
)
from assembler.hosts.host import PlainHost

if TYPE_CHECKING:
    from assembler.delivery.turns import Turn
    from assembler.transcripts.reader import Reader

CLAUDE_CODE: Final = "claude-code"  # its format's name (`transcripts.format`)


class ClaudeCode(PlainHost):
    """Claude Code 1.x and 2.x project transcripts."""

    label = "Claude Code"
    formats: tuple[str, ...] = (CLAUDE_CODE,)
    # Where `sources` finds a workspace's sessions, as the docs' table of the hosts says it.
    sessions_at = (
        "the transcripts (`~/.claude/projects/<slug>/*.jsonl`) the hook recorded whose "
        "session belongs to the workspace"
    )
    reader_class: type[Reader] = ClaudeCodeReader

    def sources(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        return claude_code_sources(workspace, state_dir, environ)

    def looked(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        """Where `sources` looked, and why each recorded transcript was skipped (--explain)."""
        return claude_code_looked(workspace, state_dir, environ)

    def project_notes(self, root: Path, environ: Mapping[str, str]) -> list[Path]:
        """The auto memory Claude Code keeps for the project, when it keeps one."""
        folder = auto_memory_dir(root, environ)
        return [folder] if folder.is_dir() else []

    def delivery_sources(
        self, workspace: Path, state_dir: Path, environ: Mapping[str, str]
    ) -> list[str]:
        """The transcripts the hook recorded here, whether or not the settings still run it
        for this workspace: a session run outside it would drop out with the hooks."""
        return claude_code_served(workspace, state_dir, environ)

    def delivery_turns(self, path: Path) -> tuple[str, list[Turn]] | None:
        """The session's turns, with what hooks added to each by the host's own record."""
        return claude_code_turns(path)

    def claims(self, line: Mapping[str, Any]) -> str | None:
        kind = line.get("type")
        if kind in ("user", "assistant", "system", "summary"):
            message = line.get("message")
            if (isinstance(message, dict) and "role" in message) or any(
                key in line for key in ("uuid", "sessionId", "leafUuid")
            ):
                return CLAUDE_CODE
        if "uuid" in line and "sessionId" in line:
            return CLAUDE_CODE
        return None


HOST: Final = ClaudeCode()
