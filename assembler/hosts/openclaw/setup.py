"""What connects OpenClaw to a workspace, as data: the plugin's install and configuration, the
Gateway cron job that assembles, and the bootstrap-file fallback, and what removes them again;
`assemble setup openclaw` prints them and the end-to-end tests run them.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.schema import bundled_dir
from assembler.delivery.sent import read_sent
from assembler.errors import AssemblerError
from assembler.fsutil import load_json, read_regular
from assembler.hosts.links import Link
from assembler.hosts.openclaw.sessions import (
    _expand,
    _read_config,
    config_path,
    openclaw_workspaces,
    state_dir,
)
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


# -- What `assemble doctor` checks of OpenClaw here -------------------------------------------

# The plugin's name in the record of what it handed each session (index.js's recordDelivery).
_RECORD_HOST = "openclaw"
_MANIFEST = "openclaw.plugin.json"
_MANIFEST_MAX_BYTES = 256 * 1024


def setup_links(config: Config, assemble: Path, environ: Mapping[str, str]) -> list[Link]:
    """Given the config, this install's `assemble` and the environment, return what `assemble
    doctor` checks of OpenClaw here: the plugin in OpenClaw's config (installed, loaded,
    enabled, allowed its prompt hook, for this workspace) and the `assemble` it runs; none
    when OpenClaw's config does not set the plugin up for this workspace and the plugin never
    recorded a prompt here."""
    state = state_dir(environ)
    path = config_path(environ, state)
    settings = _read_config(path)
    ran = any(run.host == _RECORD_HOST for run in read_sent(config.state_dir))
    setup = openclaw_setup(config, assemble)
    configure = shlex.join(setup.configure)
    install = f"{shlex.join(setup.install)} && {configure}"
    plugins = settings.get("plugins") if isinstance(settings, dict) else None
    plugins = plugins if isinstance(plugins, dict) else {}
    entries = plugins.get("entries")
    entry = entries.get(OPENCLAW_PLUGIN_ID) if isinstance(entries, dict) else None
    entry = entry if isinstance(entry, dict) else None
    options = entry.get("config") if entry is not None else None
    options = options if isinstance(options, dict) else {}
    label = "the OpenClaw plugin"
    if entry is None or not _serves(options, config.workspace, environ):
        if not ran:
            return []
        if settings is None:
            found = f"{path} cannot be read (not JSON5, or not a file)"
        elif entry is None:
            found = f"{path} has no plugins.entries.{OPENCLAW_PLUGIN_ID}"
        elif isinstance(options.get("workspace"), str) and options["workspace"].strip():
            found = f"its config in {path} names {options['workspace']}, not this workspace"
        else:
            found = f"its config in {path} names no workspace, and no agent's is this one"
        return [Link(label, False, f"{found}, though it served this workspace before", install)]
    problem = _plugin_problem(plugins, entry, state, environ, install)
    if problem is not None:
        return [Link(label, False, f"{problem[0]} ({path})", problem[1])]
    links = [Link(label, True, f"enabled, with its prompt hook, for this workspace in {path}")]
    program = options.get("assemble")
    if not isinstance(program, str) or not os.path.isabs(program):
        state_text = f"no absolute assemble in its config in {path}: its scratchpad tool is off"
        links.append(Link(f"the program {label} runs", False, state_text, configure))
    elif not (os.path.isfile(program) and os.access(program, os.X_OK)):
        state_text = f"{program} is not an executable file (moved, or the install is gone)"
        links.append(Link(f"the program {label} runs", False, state_text, configure))
    else:
        links.append(Link(f"the program {label} runs", True, program))
    return links


def _serves(options: Mapping[str, Any], workspace: Path, environ: Mapping[str, str]) -> bool:
    """Whether the plugin's config serves the workspace: it names it, or it names none and
    the workspace is an agent's (the plugin then serves the agent's workspace)."""
    here = os.path.realpath(workspace)
    named = options.get("workspace")
    if isinstance(named, str) and named.strip():
        return os.path.isabs(named.strip()) and os.path.realpath(named.strip()) == here
    return any(os.path.realpath(folder) == here for folder in openclaw_workspaces(environ))


def _plugin_problem(
    plugins: Mapping[str, Any],
    entry: Mapping[str, Any],
    state: Path,
    environ: Mapping[str, str],
    install: str,
) -> tuple[str, str] | None:
    """Given OpenClaw's plugin settings and our entry, return why the plugin does not load or
    its prompt hook does not run, and the command that fixes it; None when nothing stops it
    (OpenClaw's rules: plugins.enabled, then deny, then allow, then the entry's enabled)."""
    entry_path = f"plugins.entries.{OPENCLAW_PLUGIN_ID}"
    if plugins.get("enabled") is False:
        return (
            "plugins.enabled is false: no plugin loads",
            "openclaw config set plugins.enabled true",
        )
    deny, allow = plugins.get("deny"), plugins.get("allow")
    if isinstance(deny, list) and OPENCLAW_PLUGIN_ID in deny:
        return f"plugins.deny names {OPENCLAW_PLUGIN_ID}", install
    if isinstance(allow, list) and allow and OPENCLAW_PLUGIN_ID not in allow:
        return f"plugins.allow does not name {OPENCLAW_PLUGIN_ID}", install
    if entry.get("enabled") is False:
        fix = f"openclaw plugins enable {OPENCLAW_PLUGIN_ID} --accept-capabilities"
        return f"{entry_path}.enabled is false", fix
    where = _installed_at(plugins, state, environ)
    if where is None:
        return "no folder OpenClaw loads plugins from holds it (moved, or not installed)", install
    hooks = entry.get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    if hooks.get("allowConversationAccess") is not True:
        why = f"{entry_path}.hooks.allowConversationAccess is not true: its prompt hook is blocked"
        return why, install
    if hooks.get("allowPromptInjection") is False:
        why = f"{entry_path}.hooks.allowPromptInjection is false: what its hook adds is dropped"
        return why, f"openclaw config unset {entry_path}.hooks.allowPromptInjection"
    return None


def _installed_at(
    plugins: Mapping[str, Any], state: Path, environ: Mapping[str, str]
) -> Path | None:
    """Where OpenClaw finds the plugin: a folder of `plugins.load.paths` (a linked install), or
    its copy in the state folder's extensions; None when neither holds it."""
    load = plugins.get("load")
    paths = load.get("paths") if isinstance(load, dict) else None
    candidates = [
        Path(_expand(item, environ)) for item in paths or [] if isinstance(item, str) and item
    ] if isinstance(paths, list) else []  # fmt: skip
    candidates.append(state / "extensions" / OPENCLAW_PLUGIN_ID)
    for candidate in candidates:
        folder = candidate if candidate.is_dir() else candidate.parent
        if _manifest_id(folder / _MANIFEST) == OPENCLAW_PLUGIN_ID:
            return folder
    return None


def _manifest_id(path: Path) -> str | None:
    try:
        data = read_regular(path, limit=_MANIFEST_MAX_BYTES, follow_links=True).data
        manifest = load_json(data) if data is not None else None
    except (AssemblerError, OSError, ValueError):
        return None
    found = manifest.get("id") if isinstance(manifest, dict) else None
    return found if isinstance(found, str) else None
