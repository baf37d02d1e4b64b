"""What connects OpenClaw to a workspace, as data: the plugin's install and configuration, the
Gateway cron job that assembles, and the bootstrap-file fallback, and what removes them again;
`assemble setup openclaw` prints them and the end-to-end tests run them.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.schema import bundled_dir
from assembler.hosts.removal import HostCommand, Removal
from assembler.hosts.setup import common_context, render_setup

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


def openclaw_removal(config: Config, assemble: Path) -> Removal:
    """Given the config and this install's `assemble`, return what removes the OpenClaw setup
    of the workspace: the plugin (and the `enabled: false` its uninstall leaves), the cron job
    that assembles this workspace, and the fallback hook when it points at our file."""
    entry = f"plugins.entries.{OPENCLAW_PLUGIN_ID}"
    get_entry = ("openclaw", "config", "get", entry, "--json")
    hook = "hooks.internal.entries.bootstrap-extra-files"
    ours = {"enabled": True, "paths": [OPENCLAW_FALLBACK_OUTPUT]}
    workspace = str(config.workspace)

    def installed(value: Any) -> list[str]:
        return [""] if isinstance(value, dict) and value != {"enabled": False} else []

    def left_behind(value: Any) -> list[str]:
        return [""] if value == {"enabled": False} else []

    def our_jobs(value: Any) -> list[str]:
        jobs = value.get("jobs") if isinstance(value, dict) else None
        candidates = jobs if isinstance(jobs, list) else []
        return [
            str(job["id"])
            for job in candidates
            if isinstance(job, dict) and _assembles(job, workspace) and "id" in job
        ]

    return Removal(
        host="OpenClaw",
        workspace=config.workspace,
        steps=(
            HostCommand(
                "the plugin: its settings, install record and load path",
                ("openclaw", "plugins", "uninstall", OPENCLAW_PLUGIN_ID, "--force"),
                lookup=get_entry,
                pick=installed,
                absent_if=_UNSET,
            ),
            HostCommand(
                f'the "enabled": false that the uninstall leaves under {entry}',
                ("openclaw", "config", "unset", entry),
                lookup=get_entry,
                pick=left_behind,
                absent_if=_UNSET,
            ),
            HostCommand(
                f"the cron job named {OPENCLAW_PLUGIN_ID} that assembles this workspace, if you "
                "added it (with the Gateway running; `rm` takes the id that `list` shows)",
                ("openclaw", "cron", "rm", "<id>"),
                lookup=("openclaw", "cron", "list", "--all", "--json"),
                pick=our_jobs,
                placeholder="<id>",
            ),
            HostCommand(
                f"the bootstrap-extra-files hook, if you set it for {OPENCLAW_FALLBACK_OUTPUT}",
                ("openclaw", "config", "unset", hook),
                lookup=("openclaw", "config", "get", hook, "--json"),
                pick=lambda value: [""] if value == ours else [],
                absent_if=_UNSET,
            ),
        ),
        notes=("If you set output.path for the fallback, set it back in your config.",),
    )


# What `openclaw config get` says of a path that holds nothing (it exits 1).
_UNSET = ("but unset", "not found")


def _assembles(job: dict[str, Any], workspace: str) -> bool:
    """Whether a cron job is the one setup prints: ours by name, running `assemble --once` on
    this workspace."""
    payload = job.get("payload")
    argv = payload.get("argv") if isinstance(payload, dict) else None
    return (
        job.get("name") == OPENCLAW_PLUGIN_ID
        and isinstance(argv, list)
        and argv[1:] == ["--once", "--workspace", workspace]
    )


def setup_text(config: Config, assemble: Path) -> str:
    """Given the config and this install's `assemble`, return what `assemble setup openclaw`
    prints."""
    openclaw = openclaw_setup(config, assemble)
    return render_setup(
        "openclaw",
        common_context(config, assemble)
        | {
            "plugin_dir": shlex.quote(str(openclaw_plugin_dir())),
            "plugin_id": OPENCLAW_PLUGIN_ID,
            "plugin_commands": [shlex.join(command) for command in openclaw.plugin],
            "cron_command": shlex.join(openclaw.cron),
            "fallback_command": shlex.join(openclaw.fallback),
            "fallback_output": OPENCLAW_FALLBACK_OUTPUT,
            "ttl_minutes": config.output.ttl_minutes,
        },
    )


def removal(config: Config, assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given the config, this install's `assemble` and the environment, return what
    `assemble setup openclaw --remove` undoes (`openclaw_removal`)."""
    return openclaw_removal(config, assemble)
