"""What connects an MCP host (Claude Desktop, Cursor, ...) to a workspace: the server's entry
under `mcpServers`, and what removes it again.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import AssemblerError
from assembler.fsutil import load_json, read_regular
from assembler.hosts.host import user_home
from assembler.hosts.links import Link
from assembler.hosts.removal import SETTINGS_MAX_BYTES, Removal, SettingsEdit
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


def server_link(name: str, found: Sequence[tuple[str, Any]], fix: str) -> Link:
    """Given the link's name, each registration of this workspace's server found (where,
    its entry) and the command that registers it, return `assemble doctor`'s link of it: the
    server registered and the program it runs there. Not registered is said and does not
    count: the hooks carry the block without it; the server gives the agent its tools."""
    if not found:
        return Link(name, None, f"not registered: the agent has no scratchpad tools ({fix})")
    for where, entry in found:
        command = entry.get("command") if isinstance(entry, dict) else None
        if not (
            isinstance(command, str)
            and os.path.isabs(command)
            and os.path.isfile(command)
            and os.access(command, os.X_OK)
        ):
            state = f"{command!r} in {where} is not an executable file (moved, or gone)"
            return Link(name, False, state, fix)
    wheres = ", ".join(where for where, _ in found)
    commands = ", ".join(sorted({str(entry["command"]) for _, entry in found}))
    return Link(name, True, f"registered in {wheres}, runs {commands}")


def registered_in(path: Path, workspace: Path) -> Any:
    """Given an `mcpServers` file and the workspace, return our server's entry there when it
    serves the workspace, else None (no file, not JSON, another workspace's)."""
    try:
        data = read_regular(path, limit=SETTINGS_MAX_BYTES, follow_links=True).data
        value = load_json(data) if data is not None else None
    except (AssemblerError, OSError, ValueError):
        return None
    servers = value.get("mcpServers") if isinstance(value, dict) else None
    entry = servers.get(MCP_SERVER_NAME) if isinstance(servers, dict) else None
    return entry if names_workspace(entry, workspace) else None


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


def setup_links(config: Config, assemble: Path, environ: Mapping[str, str]) -> list[Link]:
    """Given the config, this install's `assemble` and the environment, return what `assemble
    doctor` checks of the MCP hosts whose place is known: the server registered there for this
    workspace and the program it runs; none where no such host registers it."""
    found = [
        (str(path), entry)
        for path in mcp_config_files(environ)
        if (entry := registered_in(path, config.workspace)) is not None
    ]
    if not found:
        return []
    command = shlex.join([str(assemble), "setup", "mcp", "--workspace", str(config.workspace)])
    return [
        server_link(
            "the MCP server of Claude Desktop or Cursor",
            found,
            f"{command} (put the entry it prints in place)",
        )
    ]
