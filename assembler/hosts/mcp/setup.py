"""What connects an MCP host (Claude Desktop, Cursor, ...) to a workspace: the server's entry
under `mcpServers`, and what removes it again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.hosts.host import user_home
from assembler.hosts.removal import Removal, SettingsEdit
from assembler.hosts.setup import common_context, indented, render_setup

if TYPE_CHECKING:
    from assembler.config.schema import Config

MCP_SERVER_NAME = "scratchpad"


def server_entry(workspace: Path, assemble: Path) -> dict[str, Any]:
    """Given the workspace and this install's `assemble` (both absolute), return the
    `mcpServers` entry that runs the server for that workspace."""
    args = ["mcp", "--workspace", str(workspace)]
    return {"mcpServers": {MCP_SERVER_NAME: {"command": str(assemble), "args": args}}}


def names_workspace(entry: Any, workspace: Path) -> bool:
    """Whether an `mcpServers` entry runs `assemble mcp --workspace W` for this workspace."""
    args = entry.get("args") if isinstance(entry, dict) else None
    if not isinstance(args, list) or args[:2] != ["mcp", "--workspace"] or len(args) < 3:
        return False
    named = args[2]
    return isinstance(named, str) and os.path.realpath(named) == os.path.realpath(workspace)


def mcp_config_files(environ: Mapping[str, str]) -> list[Path]:
    """Given the environment, return the `mcpServers` files of the MCP hosts whose place is
    known: Claude Desktop's and Cursor's (global) configuration."""
    home = Path(user_home(environ))
    config = Path(environ.get("XDG_CONFIG_HOME", "").strip() or home / ".config")
    return [config / "Claude" / "claude_desktop_config.json", home / ".cursor" / "mcp.json"]


def mcp_removal(
    workspace: Path, environ: Mapping[str, str], files: list[Path] | None = None
) -> Removal:
    """Given the workspace, the environment and the hosts' `mcpServers` files (default: the
    known ones), return what removes this workspace's server entry from each."""

    def strip(value: Any) -> Any:
        servers = value.get("mcpServers") if isinstance(value, dict) else None
        if isinstance(servers, dict) and names_workspace(servers.get(MCP_SERVER_NAME), workspace):
            del servers[MCP_SERVER_NAME]
        return value

    what = f'the "{MCP_SERVER_NAME}" entry under "mcpServers" that serves this workspace'
    chosen = mcp_config_files(environ) if files is None else files
    return Removal(
        "MCP hosts",
        workspace,
        tuple(SettingsEdit(what, path, strip, follow_links=True) for path in chosen),
        notes=("Another host's MCP configuration: delete the same entry there.",),
    )


def setup_text(config: Config, assemble: Path) -> str:
    """Given the config and this install's `assemble`, return what `assemble setup mcp`
    prints."""
    context = common_context(config, assemble)
    return render_setup(
        "mcp", context | {"server_json": indented(server_entry(config.workspace, assemble))}
    )


def removal(config: Config, assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given the config, this install's `assemble` and the environment, return what
    `assemble setup mcp --remove` undoes (`mcp_removal`)."""
    return mcp_removal(config.workspace, environ)
