"""What connects OpenClaw to a workspace, as data: the plugin's install and configuration, the
Gateway cron job that assembles, and the bootstrap-file fallback; `assemble setup openclaw`
prints them and the end-to-end tests run them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.config.schema import bundled_dir

if TYPE_CHECKING:
    from assembler.config.schema import Config


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
