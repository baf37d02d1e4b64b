"""`assemble setup HOST`: the exact commands and settings that connect a host to this install
and workspace, with absolute paths (hooks and MCP servers do not run with your shell's PATH),
and (`--remove`) those that disconnect it again.

Setting up changes no host's configuration: the text says what to run and where to paste.
Each host's commands are data in its own module (`hosts/<host>/setup.py`): the templates print
them and the end-to-end tests run what was printed, so the printed setup is the tested one.
A removal is data of the same kind (`hosts/removal.py`), which `--remove --apply` performs.

A host whose hooks can serve every project (`--all-projects`) has three more functions in its
setup module, found by name: `all_projects_text(assemble, environ)`, what it prints;
`all_projects_apply(assemble, environ)`, which merges the hooks into the host's user settings
(the one setup that edits them, and only when asked, `--apply`) and returns a line per change;
and `all_projects_removal(assemble, environ)`, what takes them out again.
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
from types import ModuleType
from typing import TYPE_CHECKING, Any

from assembler.config.files import user_config_dir
from assembler.config.projects import OPT_OUT_NAME, projects_home
from assembler.errors import AssemblerError
from assembler.file.render import Renderer
from assembler.fsutil import load_json, read_regular, replace_if_unchanged
from assembler.hosts import registry
from assembler.hosts.removal import SETTINGS_MAX_BYTES, HostCommand, Removal, TomlEdit

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


def all_projects_hosts() -> list[str]:
    """Return the names of the hosts whose setup has the all-projects hooks, in the
    registry's order."""
    return [p.name for p in registry.having("setup") if _has_all_projects(p.load("setup"))]


def _has_all_projects(module: ModuleType) -> bool:
    return all(
        callable(getattr(module, name, None))
        for name in ("all_projects_text", "all_projects_apply", "all_projects_removal")
    )


def _all_projects_setup(host: str) -> ModuleType:
    """The host's setup module, if it has the all-projects hooks. Raise AssemblerError if it
    has none, naming the hosts that do."""
    module = registry.plugin(host).load("setup")
    if not _has_all_projects(module):
        names = " and ".join(all_projects_hosts())
        raise AssemblerError(
            f"setup {host}: --all-projects is for {names} only; for {host}, set up one "
            f"workspace: assemble setup {host} --workspace FOLDER"
        )
    return module


def all_projects_text(host: str, assemble: Path, environ: Mapping[str, str] = os.environ) -> str:
    """Given a host's name, this install's `assemble` and the environment (where the host
    keeps its settings), return the instructions that connect the host to every project (its
    `setup.all_projects_text`). Raise AssemblerError if the host has no all-projects setup."""
    text: str = _all_projects_setup(host).all_projects_text(assemble, environ)
    return text


def all_projects_apply(
    host: str, assemble: Path, environ: Mapping[str, str] = os.environ
) -> list[str]:
    """Given a host's name, this install's `assemble` and the environment, merge the
    all-projects hooks into the host's user settings (its `setup.all_projects_apply`) and
    return a line per change, or per entry that was there already. Raise AssemblerError if the
    host has no all-projects setup, or a settings file cannot be read, parsed or written."""
    lines: list[str] = _all_projects_setup(host).all_projects_apply(assemble, environ)
    return lines


def all_projects_removal(
    host: str, assemble: Path, environ: Mapping[str, str] = os.environ
) -> Removal:
    """Given a host's name, this install's `assemble` and the environment, return what takes
    the all-projects hooks out of the host's user settings (its `setup.all_projects_removal`).
    Raise AssemblerError if the host has no all-projects setup."""
    removal: Removal = _all_projects_setup(host).all_projects_removal(assemble, environ)
    return removal


def all_projects_context(host: str, assemble: Path) -> dict[str, Any]:
    """Given a host's name and this install's `assemble`, return what every all-projects
    setup text shows: the daemon that serves every project, where their state is kept, the
    user's config and the commands that apply and remove the setup, quoted for a shell."""

    def command(*words: str) -> str:
        return shlex.join([str(assemble), *words])

    return {
        "assemble": shlex.quote(str(assemble)),
        "daemon_all": command("daemon", "--all"),
        "systemd_all": command("systemd", "install", "--all"),
        "launchd_all": command("launchd", "install", "--all"),
        "projects_home": shlex.quote(str(projects_home())),
        "opt_out": OPT_OUT_NAME,
        "user_config": shlex.quote(str(user_config_dir() / "config.toml")),
        "apply_command": command("setup", host, "--all-projects", "--apply"),
        "remove_command": command("setup", host, "--all-projects", "--remove"),
        "workspace_setup": command("setup", host, "--workspace", "FOLDER"),
    }


def read_settings(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """Given the path of a user's JSON settings file (a link followed: the user's own file,
    perhaps linked from their dotfiles), return its bytes (None when it does not exist) and
    its value ({} then). Raise AssemblerError, naming the file and the fix, if it cannot be
    read or is not a JSON object."""
    shown = shlex.quote(str(path))
    try:
        data = read_regular(path, limit=SETTINGS_MAX_BYTES, follow_links=True).data
    except (AssemblerError, OSError) as error:
        raise AssemblerError(
            f"Cannot read {shown} ({error}); fix it, then run this again"
        ) from None
    if data is None:
        return None, {}
    try:
        value = load_json(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise AssemblerError(
            f"{shown} is not JSON ({error}); fix it or move it aside, then run this again"
        ) from None
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), "value")
        raise AssemblerError(
            f"{shown} holds a JSON {kind}, not an object of settings; fix it or move it aside, "
            "then run this again"
        )
    return data, value


# A JSON value's kind by its Python type, for a message.
_JSON_KINDS: dict[type, str] = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def settings_hooks(value: dict[str, Any], path: Path) -> dict[str, Any]:
    """Given a settings file's value and its path, return its "hooks" object, made when there
    is none. Raise AssemblerError, naming the file, if "hooks" is not an object."""
    hooks = value.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise AssemblerError(
            f'{shlex.quote(str(path))}: "hooks" is not an object of events; fix it, then run '
            "this again"
        )
    return hooks


def write_settings(path: Path, data: bytes, before: bytes | None) -> None:
    """Given a user's settings file (a link followed), its new bytes and the bytes read from
    it (None: it did not exist), replace it atomically, only if it still holds what was read.
    Raise AssemblerError, naming the file, if it cannot be written or changed meanwhile."""
    shown = shlex.quote(str(path))
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        replaced = replace_if_unchanged(target, data, before)
    except (AssemblerError, OSError) as error:
        raise AssemblerError(
            f"Cannot write {shown} ({error}); fix it, then run this again"
        ) from None
    if not replaced.done:
        raise AssemblerError(f"{shown} changed while it was edited; run this again")


def json_bytes(value: Any) -> bytes:
    """Given a settings file's value, return the file's bytes as the setup writes them."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


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
    every = removal.workspace is None
    return template.render(
        host=removal.host,
        name=host,
        workspace=None if every else shlex.quote(str(removal.workspace)),
        all_projects=" --all-projects" if every else "",
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
