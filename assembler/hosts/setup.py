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
from assembler.hosts.removal import HostCommand, Removal, TomlEdit

if TYPE_CHECKING:
    from assembler.config.schema import Config


def setup_text(host: str, config: Config, assemble: Path) -> str:
    """Given a host's name (`registry.PLUGINS`), the config and this install's `assemble`,
    return the instructions that connect the host to the workspace (its `setup.setup_text`).
    Raise AssemblerError if no host of that name has a setup."""
    text: str = registry.plugin(host).load("setup").setup_text(config, assemble)
    return text


def host_removal(
    host: str, config: Config, assemble: Path, environ: Mapping[str, str] = os.environ
) -> Removal:
    """Given a host's name, the config, this install's `assemble` and the environment (where
    the host keeps its settings), return what disconnects the host from the workspace (its
    `setup.removal`)."""
    removal: Removal = registry.plugin(host).load("setup").removal(config, assemble, environ)
    return removal


def common_context(config: Config, assemble: Path) -> dict[str, Any]:
    """Given the config and this install's `assemble`, return what every host's setup text
    shows, each path quoted for a shell (a space, a quote in it)."""
    return {
        "assemble": shlex.quote(str(assemble)),
        "workspace": shlex.quote(str(config.workspace)),
        "prefix_json": shlex.quote(str(config.workspace / ".scratchpad" / "prefix.json")),
        "user_config": shlex.quote(str(user_config_dir() / "config.toml")),
        "systemd_install": shlex.join(
            [str(assemble), "systemd", "install", "--workspace", str(config.workspace)]
        ),
    }


def render_setup(host: str, context: Mapping[str, Any]) -> str:
    """Given a host's name and what its text shows, return the text of
    `templates/setup/<host>.txt.j2`."""
    return Renderer().env.get_template(f"setup/{host}.txt.j2").render(**context)


def indented(value: Any) -> str:
    """Given a JSON value, return it as the setup texts show it: indented by three spaces."""
    return "\n".join("   " + line for line in json.dumps(value, indent=2).splitlines())


def removal_text(host: str, removal: Removal, assemble: Path) -> str:
    """Given a host's name, its removal and this install's `assemble`, return the
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
    # Here, not at the top: a removal or a setup text needs nothing of the pipeline.
    from assembler.assembly.log import record_run
    from assembler.assembly.pipeline import run_once

    started = time.perf_counter()
    assembly = run_once(config, hosts=registry.HOSTS, now=now)
    record_run(config, assembly, "once", time.perf_counter() - started)
    return assembly.path
