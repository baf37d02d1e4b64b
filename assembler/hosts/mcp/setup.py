"""What connects an MCP host (Claude Desktop, Cursor, ...) to a workspace: the server's entry
under `mcpServers`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MCP_SERVER_NAME = "scratchpad"


def server_entry(workspace: Path, assemble: Path) -> dict[str, Any]:
    """Given the workspace and this install's `assemble` (both absolute), return the
    `mcpServers` entry that runs the server for that workspace."""
    args = ["mcp", "--workspace", str(workspace)]
    return {"mcpServers": {MCP_SERVER_NAME: {"command": str(assemble), "args": args}}}
