"""`assemble setup HOST`: the exact commands and settings that connect a host to this install
and workspace, with absolute paths (hooks and MCP servers do not run with your shell's PATH).

Nothing here changes a host's configuration: the text says what to run and where to paste.
The commands are also data (`claude_code_setup`, `openclaw_setup`): the templates print them
and the end-to-end tests run what was printed, so the printed setup is the tested one.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.files import user_config_dir
from assembler.config.schema import Config, bundled_dir
from assembler.file.render import Renderer

if TYPE_CHECKING:
    from assembler.config.schema import Config

HOSTS = ("claude-code", "openclaw", "mcp")
OPENCLAW_PLUGIN_ID = "scratchpad-assembler"
# The bootstrap-file fallback: OpenClaw 2026.9 injects extra bootstrap files only under its own
# basenames (AGENTS.md, SOUL.md, IDENTITY.md, USER.md, BOOTSTRAP.md, MEMORY.md), so the file
# goes in a subfolder under one of them, beside the agent's own AGENTS.md at the root.
OPENCLAW_FALLBACK_OUTPUT = "scratchpad/AGENTS.md"
# How often the OpenClaw cron job assembles, at most; less than the TTL so the file never lapses.
OPENCLAW_CRON_MINUTES = 10


@dataclass(frozen=True)
class OpenClawSetup:
    """The OpenClaw commands for one workspace, each an argument list (`openclaw` first)."""

    install: tuple[str, ...]  # link the plugin folder, which enables it
    configure: tuple[str, ...]  # conversation access for its hook, and its config
    cron: tuple[str, ...]  # a Gateway cron job with a command payload: `assemble --once`
    fallback: tuple[str, ...]  # the bundled bootstrap-extra-files hook, without the plugin

    @property
    def plugin(self) -> tuple[tuple[str, ...], ...]:
        """The commands that install, configure and enable the plugin, in order."""
        return (self.install, self.configure)


MCP_SERVER_NAME = "scratchpad"


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


def openclaw_plugin_dir() -> Path:
    """Return the OpenClaw plugin shipped with the program (in the wheel, or the checkout)."""
    return bundled_dir("integrations") / "openclaw"


def openclaw_setup(config: Config, assemble: Path) -> OpenClawSetup:
    """Given the config and this install's `assemble`, return the OpenClaw commands that
    connect the workspace: the plugin's, the cron job's and the fallback's."""
    workspace = str(config.workspace)
    entry = f"plugins.entries.{OPENCLAW_PLUGIN_ID}"
    settings = [
        {"path": f"{entry}.hooks.allowConversationAccess", "value": True},
        {"path": f"{entry}.config", "value": {"workspace": workspace, "assemble": str(assemble)}},
    ]
    every = max(1, min(OPENCLAW_CRON_MINUTES, config.output.ttl_minutes // 2))
    extra = {"enabled": True, "paths": [OPENCLAW_FALLBACK_OUTPUT]}
    return OpenClawSetup(
        # --force and --accept-capabilities: the non-interactive yes to "this local folder is
        # yours" and to its declared surface (one tool, one hook); without them it only asks.
        install=(
            *("openclaw", "plugins", "install", "--link", str(openclaw_plugin_dir())),
            *("--force", "--accept-capabilities"),
        ),
        # One batch: both settings are validated together, against the plugin's schema.
        configure=("openclaw", "config", "set", "--batch-json", json.dumps(settings)),
        cron=(
            *("openclaw", "cron", "add", "--name", OPENCLAW_PLUGIN_ID, "--every", f"{every}m"),
            *("--command-argv", json.dumps([str(assemble), "--once", "--workspace", workspace])),
            "--no-deliver",
        ),
        fallback=(
            *("openclaw", "config", "set", "hooks.internal.entries.bootstrap-extra-files"),
            *(json.dumps(extra), "--strict-json"),
        ),
    )


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
        "server_json": _indented(
            {
                "mcpServers": {
                    "scratchpad": {
                        "command": str(assemble),
                        "args": ["mcp", "--workspace", workspace],
                    }
                }
            }
        ),
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
