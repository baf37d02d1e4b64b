"""What connects Claude Code to a workspace, as data: the hooks for settings.json, the
permission for the MCP tools and the `claude mcp add` commands; `assemble setup claude-code`
prints them and the end-to-end tests apply them to the real `claude`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.hosts.mcp.setup import MCP_SERVER_NAME


@dataclass(frozen=True)
class ClaudeCodeSetup:
    """What `assemble setup claude-code` has the user configure, as data: the template prints
    it, and the end-to-end test applies it to the real `claude`."""

    hook_command: str  # a shell command line: Claude Code runs command hooks through a shell
    settings: dict[str, Any]  # for settings.json: the two hooks, and the MCP tools allowed
    mcp_add: list[str]  # `claude mcp add`, scope local: run in a project's folder, for it alone
    mcp_add_user: list[str]  # the same with scope user: every project


def claude_code_setup(workspace: Path, assemble: Path) -> ClaudeCodeSetup:
    """Given the workspace and this install's `assemble` (both absolute), return the hooks,
    the permission and the `claude mcp add` commands that connect Claude Code to it.

    UserPromptSubmit runs the hook before every prompt (it sends the scratchpad once per
    session, then only when it changed); SessionStart runs it only when a session lost what it
    held (cleared, compacted), as every `claude -p` turn would otherwise run two hooks. The
    allow rule lets the agent call the server's tools without a prompt, which `claude -p`
    could not answer (it refuses the call).
    """
    hook_command = shlex.join([str(assemble), "hook", "claude-code", "--workspace", str(workspace)])
    hook = {"hooks": [{"type": "command", "command": hook_command}]}
    # SessionStart's matcher is a regular expression on its `source`.
    after_loss = {"matcher": "clear|compact", **hook}
    server = [MCP_SERVER_NAME, "--", str(assemble), "mcp", "--workspace", str(workspace)]
    return ClaudeCodeSetup(
        hook_command=hook_command,
        settings={
            "hooks": {"SessionStart": [after_loss], "UserPromptSubmit": [hook]},
            "permissions": {"allow": [f"mcp__{MCP_SERVER_NAME}"]},
        },
        mcp_add=["claude", "mcp", "add", *server],
        mcp_add_user=["claude", "mcp", "add", "--scope", "user", *server],
    )
