"""Codex as the core sees it: the rollouts of the workspace's sessions, and their format."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.config.schema import STATE_DIR
from assembler.hosts.codex.reader import LINE_TYPES, CodexReader
from assembler.hosts.codex.receipts import codex_turns
from assembler.hosts.codex.sessions import codex_sources
from assembler.hosts.host import PlainHost

if TYPE_CHECKING:
    from assembler.delivery.turns import Turn
    from assembler.transcripts.reader import Reader

CODEX: Final = "codex"  # its format's name, as `transcripts.format` names it


class Codex(PlainHost):
    """OpenAI's Codex CLI rollout files."""

    label = "Codex"
    formats: tuple[str, ...] = (CODEX,)
    # Where `sources` finds a workspace's sessions, as the docs' table of the hosts says it.
    sessions_at = (
        "the rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`, `~/.codex` without "
        "`CODEX_HOME`) whose recorded working folder is the workspace or inside it"
    )
    reader_class: type[Reader] = CodexReader

    def sources(self, workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
        # A project's state is kept outside it: its sessions are those of no nested project.
        own_project = state_dir != workspace / STATE_DIR
        return codex_sources(workspace, environ, own_project=own_project)

    def delivery_turns(self, path: Path) -> tuple[str, list[Turn]] | None:
        """The session's turns, with what hooks added to each by the host's own record."""
        return codex_turns(path)

    def claims(self, line: Mapping[str, Any]) -> str | None:
        if line.get("type") in LINE_TYPES and isinstance(line.get("payload"), dict):
            return CODEX
        return None


HOST: Final = Codex()
