"""`assemble setup HOST`: the exact commands and settings that connect a host to this install
and workspace, with absolute paths (hooks and MCP servers do not run with your shell's PATH),
and (`--remove`) those that disconnect it again.

Setting up changes no host's configuration: the text says what to run and where to paste.
Each host's commands are data in its own module (`hosts/<host>/setup.py`): the templates print
them and the end-to-end tests run what was printed, so the printed setup is the tested one.
A removal is data of the same kind (`hosts/removal.py`), which `--remove --apply` performs.
"""

from __future__ import annotations

import json
import os
import shlex
import textwrap
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.files import user_config_dir
from assembler.file.render import Renderer
from assembler.hosts import registry
from assembler.hosts.claude_code.setup import claude_code_removal, claude_code_setup
from assembler.hosts.codex.setup import codex_removal, codex_setup
from assembler.hosts.mcp.setup import mcp_removal, server_entry
from assembler.hosts.openclaw.setup import (
    OPENCLAW_FALLBACK_OUTPUT,
    OPENCLAW_PLUGIN_ID,
    openclaw_plugin_dir,
    openclaw_removal,
    openclaw_setup,
)
from assembler.hosts.removal import HostCommand, Removal, TomlEdit

if TYPE_CHECKING:
    from assembler.config.schema import Config

HOSTS = ("claude-code", "codex", "openclaw", "mcp")


def setup_text(host: str, config: Config, assemble: Path) -> str:
    """Given a host (one of HOSTS), the config and this install's `assemble`, return the
    instructions that connect the host to the workspace."""
    workspace = str(config.workspace)
    claude_code = claude_code_setup(config.workspace, assemble)
    context: dict[str, Any] = {
        # Every path the text shows is quoted for a shell (a space, a quote in it).
        "assemble": shlex.quote(str(assemble)),
        "workspace": shlex.quote(workspace),
        "prefix_json": shlex.quote(str(config.workspace / ".scratchpad" / "prefix.json")),
        "user_config": shlex.quote(str(user_config_dir() / "config.toml")),
        "settings_json": _indented(claude_code.settings),
        "mcp_add": shlex.join(claude_code.mcp_add),
        "mcp_add_user": shlex.join(claude_code.mcp_add_user),
        "systemd_install": shlex.join(
            [str(assemble), "systemd", "install", "--workspace", str(config.workspace)]
        ),
        "server_json": _indented(server_entry(config.workspace, assemble)),
        "plugin_dir": shlex.quote(str(openclaw_plugin_dir())),
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
    if host == "codex":
        codex = codex_setup(config.workspace, assemble, os.environ)
        context |= {
            "remove_command": shlex.join(
                [str(assemble), "setup", "codex", "--remove", "--workspace", workspace]
            ),
            "hooks_json_path": shlex.quote(str(codex.hooks_json)),
            "config_toml_path": shlex.quote(str(codex.config_toml)),
            "hooks_json": _indented(codex.hooks),
            "config_toml": "\n".join("   " + line if line else "" for line in codex.config_lines()),
        }
    template = Renderer().env.get_template(f"setup/{host}.txt.j2")
    return template.render(**context)


def _indented(value: Any) -> str:
    return "\n".join("   " + line for line in json.dumps(value, indent=2).splitlines())


def host_removal(
    host: str, config: Config, assemble: Path, environ: Mapping[str, str] = os.environ
) -> Removal:
    """Given a host (one of HOSTS), the config, this install's `assemble` and the environment
    (where the host keeps its settings), return what disconnects the host from the
    workspace."""
    if host == "openclaw":
        return openclaw_removal(config, assemble)
    if host == "claude-code":
        return claude_code_removal(config.workspace, environ)
    if host == "codex":
        return codex_removal(config.workspace, assemble, environ)
    return mcp_removal(config.workspace, environ)


def removal_text(host: str, removal: Removal, assemble: Path) -> str:
    """Given a host (one of HOSTS), its removal and this install's `assemble`, return the
    instructions that disconnect it, every path quoted for a shell."""
    steps = []
    for number, step in enumerate(removal.steps, 1):
        if isinstance(step, HostCommand):
            heading = f"{number}. Remove {step.what}:"
            lines = step.shell_lines()
        elif isinstance(step, TomlEdit):
            heading = f"{number}. In {shlex.quote(str(step.path))}, delete {step.what}:"
            lines = list(step.shown)
        else:
            heading = f"{number}. In {shlex.quote(str(step.path))}, delete {step.what}."
            lines = []
        wrapped = textwrap.fill(heading, 92, subsequent_indent="   ", break_on_hyphens=False)
        steps.append({"heading": wrapped, "lines": lines})
    uninstall = [str(assemble), "systemd", "uninstall"]
    template = Renderer().env.get_template("setup/remove.txt.j2")
    return template.render(
        host=removal.host,
        name=host,
        workspace=shlex.quote(str(removal.workspace)),
        steps=steps,
        notes=removal.notes,
        uninstall=shlex.join(uninstall),
    )


def first_assembly(config: Config, now: datetime) -> Path:
    """Given the config and the clock, assemble SCRATCHPAD.md once, in this process (what
    `assemble --once --no-daemon` does), so that a host's first turn finds a file; return the
    file's path. Raise AssemblerError (or any error of the run) if it fails."""
    from assembler.assembly.log import record_run
    from assembler.assembly.pipeline import run_once

    started = time.perf_counter()
    assembly = run_once(config, hosts=registry.HOSTS, now=now)
    record_run(config, assembly, "once", time.perf_counter() - started)
    return assembly.path
