"""`assemble setup HOST`: the exact commands and settings that connect a host to this install
and workspace, with absolute paths (hooks and MCP servers do not run with your shell's PATH).

Nothing here changes a host's configuration: the text says what to run and where to paste.
Each host's commands are data in its own module (`hosts/<host>/setup.py`): the templates print
them and the end-to-end tests run what was printed, so the printed setup is the tested one.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.files import user_config_dir
from assembler.file.render import Renderer
from assembler.hosts.claude_code.setup import claude_code_setup
from assembler.hosts.mcp.setup import server_entry
from assembler.hosts.openclaw.setup import (
    OPENCLAW_FALLBACK_OUTPUT,
    OPENCLAW_PLUGIN_ID,
    openclaw_plugin_dir,
    openclaw_setup,
)

if TYPE_CHECKING:
    from assembler.config.schema import Config

HOSTS = ("claude-code", "openclaw", "mcp")


def setup_text(host: str, config: Config, assemble: Path) -> str:
    """Given a host (one of HOSTS), the config and this install's `assemble`, return the
    instructions that connect the host to the workspace."""
    workspace = str(config.workspace)
    claude_code = claude_code_setup(config.workspace, assemble)
    context: dict[str, Any] = {
        "assemble": str(assemble),
        "workspace": workspace,
        "user_config": str(user_config_dir() / "config.toml"),
        "settings_json": _indented(claude_code.settings),
        "mcp_add": shlex.join(claude_code.mcp_add),
        "mcp_add_user": shlex.join(claude_code.mcp_add_user),
        "systemd_install": shlex.join(
            [str(assemble), "systemd", "install", "--workspace", workspace]
        ),
        "server_json": _indented(server_entry(config.workspace, assemble)),
        "plugin_dir": str(openclaw_plugin_dir()),
        "plugin_id": OPENCLAW_PLUGIN_ID,
    }
    if host == "openclaw":
        openclaw = openclaw_setup(config, assemble)
        context |= {
            "plugin_commands": [shlex.join(command) for command in openclaw.plugin],
            "cron_command": shlex.join(openclaw.cron),
            "fallback_command": shlex.join(openclaw.fallback),
            "fallback_output": OPENCLAW_FALLBACK_OUTPUT,
            "ttl_minutes": config.output.ttl_minutes,
        }
    template = Renderer().env.get_template(f"setup/{host}.txt.j2")
    return template.render(**context)


def _indented(value: Any) -> str:
    return "\n".join("   " + line for line in json.dumps(value, indent=2).splitlines())
