"""systemd user units: the daemon's service, or a oneshot service with its timer, rendered from
the templates in `systemd/` for this install's `assemble` and one workspace, or the daemon of
every workspace (`assemble daemon --all`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assembler.config.files import (
    config_files,
    load_config,
    read_config_file,
    user_log_dir,
    user_state_dir,
)
from assembler.config.projects import registered_workspaces
from assembler.config.schema import bundled_dir
from assembler.errors import AssemblerError
from assembler.fsutil import atomic_write, is_within

DAEMON_UNITS = ("scratchpad-assembler.service",)
TIMER_UNITS = ("scratchpad-assembler-once.service", "scratchpad-assembler-once.timer")


def user_unit_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return the folder of the user's own units: $XDG_CONFIG_HOME/systemd/user."""
    env = environ if environ is not None else os.environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def assemble_executable() -> Path:
    """Return the absolute path of this install's `assemble` command: the one beside the
    running Python (a virtualenv or pipx), else the one on $PATH, else the running script.

    Raise AssemblerError if there is none (e.g. run from a source checkout without install).
    """
    candidates = [Path(sys.executable).parent / "assemble"]
    if found := shutil.which("assemble"):
        candidates.append(Path(found))
    candidates.append(Path(sys.argv[0]))
    for candidate in candidates:
        if candidate.name == "assemble" and candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    raise AssemblerError(
        "Cannot find the 'assemble' command of this install; install the package (pip install "
        "or pipx install) so that the units can start it"
    )


def _specifier_safe(text: str) -> str:
    # systemd expands %-specifiers in unit files; a literal % is written %%.
    return text.replace("%", "%%")


def unit_path(path: Path, home: Path | None = None) -> str:
    """Given an absolute path, return it as a unit file writes it: `%h/...` under the home
    folder (the unit then survives a renamed home), escaped and quoted when needed."""
    home = home or Path.home()
    try:
        text = "%h/" + _specifier_safe(str(path.relative_to(home)))
    except ValueError:
        text = _specifier_safe(str(path))
    if any(c.isspace() for c in text) or '"' in text or "\\" in text:
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def _exec_arg(path: Path) -> str:
    # ExecStart= also expands $VARIABLES; a literal $ is written $$.
    return unit_path(path).replace("$", "$$")


def _environment(name: str, folder: Path | None) -> str:
    """Return the unit's Environment= line that pins one of the user's folders, or ''."""
    if folder is None:
        return ""
    value = f"{name}={unit_path(folder)}"
    if value.count('"'):  # a quoted path: quote the whole assignment instead
        value = f'"{name}={unit_path(folder)[1:-1]}"'
    return f"Environment={value}\n"


def named_config(config_path: str | None) -> Path | None:
    """Given --config (or None), return the config file the user names (--config, else
    $ASSEMBLER_CONFIG) by its absolute path, or None when none is named.

    Raise ConfigError if the file does not exist or is not TOML.
    """
    if config_path is None and not os.environ.get("ASSEMBLER_CONFIG"):
        return None
    # A named file is read alone: the folder passed only decides whether it is trusted.
    found, _ = config_files(Path.home(), config_path)
    read_config_file(found[0][0])
    return found[0][0].absolute()


def moved_state_dir() -> Path | None:
    """Return the user's state folder when $ASSEMBLER_STATE_HOME or $XDG_STATE_HOME moves it,
    else None. A service started by the user's manager does not see this shell's variables,
    so the units and the agent pin a moved folder."""
    if os.environ.get("ASSEMBLER_STATE_HOME") or os.environ.get("XDG_STATE_HOME"):
        return user_state_dir().absolute()
    return None


def _optional_path(path: Path) -> str:
    # ReadWritePaths= skips a path prefixed with "-" that does not exist instead of failing the
    # start; the "-" goes inside the quotes of a quoted path.
    text = unit_path(path)
    return '"-' + text[1:] if text.startswith('"') else "-" + text


def outside_folders(workspace: Path, output_file: Path) -> list[Path]:
    """Given the workspace and the output file, return the folders the units must also let the
    service write: the output file's folder when it is outside the workspace, else none."""
    folder = output_file.parent.resolve()
    inside = folder == workspace.resolve() or workspace.resolve() in folder.parents
    return [] if inside else [folder]


def every_workspace_folders(config: Path | None, home: Path | None = None) -> list[Path]:
    """Given the config file named to the daemon of every workspace (or None) and the home
    folder (default: the user's), return the folders outside the home folder, besides the state
    folder, that the daemon writes: each workspace set up by name (`registered_workspaces`) and
    its output file's folder when that is outside it. A workspace whose config is broken adds
    its own folder only (the daemon leaves it out until the config is fixed)."""
    home = home or Path.home()
    homes = (str(home), os.path.realpath(home))
    found: list[Path] = []
    for workspace in registered_workspaces():
        found.append(workspace)
        try:
            output = load_config(workspace, config).output_path
        except AssemblerError:
            continue
        found += outside_folders(workspace, output)
    return [
        folder
        for folder in dict.fromkeys(found)
        if not any(is_within(folder, inside) for inside in homes)
    ]


@dataclass(frozen=True)
class Installed:
    """The unit files written (or left as they were) and the command that enables them."""

    written: list[Path]
    unchanged: list[Path]
    enable_command: str


def _read_write_paths(
    workspace: Path | None, writable: Sequence[Path], state_home: Path | None
) -> str:
    """Return the value of the units' ReadWritePaths=: the workspace (for every workspace, the
    home folder: see the service's template), the other folders the service writes, and the
    state folder with the log of unexpected errors ("-": not there yet is no error)."""
    state = [state_home] if state_home is not None else [user_state_dir(), user_log_dir()]
    first = unit_path(workspace) if workspace is not None else "%h"
    optional = [_optional_path(folder) for folder in dict.fromkeys([*writable, *state])]
    return " ".join([first, *optional])


def render_units(
    *,
    timer: bool,
    workspace: Path | None,
    assemble: Path,
    config: Path | None = None,
    config_home: Path | None = None,
    state_home: Path | None = None,
    writable: Sequence[Path] = (),
) -> dict[str, str]:
    """Given the kind (daemon service, or oneshot service and timer), the workspace (None: the
    daemon of every workspace, `assemble daemon --all`), the `assemble` executable, an optional
    config file, an optional folder of the user's config and of the user's state to pin, and the
    folders outside the workspace that the service writes, return each unit's name and text.

    Raise AssemblerError for a timer of every workspace.
    """
    import jinja2

    if timer and workspace is None:
        raise AssemblerError(
            "assemble systemd install --all installs the daemon of every workspace, which has "
            "no timer: leave out --timer, or pass --workspace W for one workspace's timer"
        )

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(bundled_dir("systemd"))),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # unit files, not HTML
    )
    args = " --all" if workspace is None else f" --workspace {_exec_arg(workspace)}"
    if config is not None:
        args += f" --config {_exec_arg(config)}"
    context = {
        "every": workspace is None,
        "exec_start": _exec_arg(assemble),
        "exec_args": args,
        "read_write": _read_write_paths(workspace, writable, state_home),
        "workspace_label": "every workspace" if workspace is None else str(workspace),
        "environment": _environment("ASSEMBLER_CONFIG_HOME", config_home),
        "state_environment": _environment("ASSEMBLER_STATE_HOME", state_home),
    }
    names = TIMER_UNITS if timer else DAEMON_UNITS
    return {name: env.get_template(f"{name}.j2").render(**context) for name in names}


def install_units(
    *,
    timer: bool,
    workspace: Path | None,
    config: Path | None = None,
    config_home: Path | None = None,
    output_file: Path | None = None,
    force: bool = False,
    unit_dir: Path | None = None,
    assemble: Path | None = None,
) -> Installed:
    """Given the kind of units, the workspace (None: the daemon of every workspace), the config
    file the service must read (passed as --config) or the user's config folder it must find
    its config in, and the output file, write the units to the user's unit folder and return
    what was written and the `systemctl --user` command that enables them. The daemon of every
    workspace may write the workspaces set up by name now (`every_workspace_folders`).

    Raise AssemblerError for a timer of every workspace, if a unit file exists with other
    content and `force` is false, or if the folder cannot be written.
    """
    folder = unit_dir or user_unit_dir()
    config = config.absolute() if config else None
    if workspace is None:
        # With a timer: none, and render_units refuses it.
        writable = [] if timer else every_workspace_folders(config)
    else:
        writable = outside_folders(workspace, output_file) if output_file else []
    units = render_units(
        timer=timer,
        workspace=workspace,
        assemble=assemble or assemble_executable(),
        config=config,
        config_home=config_home.absolute() if config_home else None,
        state_home=moved_state_dir(),
        writable=writable,
    )
    targets = {folder / name: text for name, text in units.items()}
    conflicts = [
        path
        for path, text in targets.items()
        if path.exists() and path.read_text(encoding="utf-8") != text
    ]
    if conflicts and not force:
        names = ", ".join(str(p) for p in conflicts)
        raise AssemblerError(
            f"{names} already exists with other content (the units of another workspace or of "
            "every workspace, or edited by hand); pass --force to replace it"
        )
    written, unchanged = [], []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in targets.items():
            if path.exists() and path.read_text(encoding="utf-8") == text:
                unchanged.append(path)
                continue
            atomic_write(path, text)
            written.append(path)
    except OSError as error:
        raise AssemblerError(
            f"Cannot write the units to {folder} ({error.strerror or error}); check the folder "
            "or set $XDG_CONFIG_HOME"
        ) from error
    start = TIMER_UNITS[-1] if timer else DAEMON_UNITS[0]
    command = f"systemctl --user daemon-reload && systemctl --user enable --now {start}"
    return Installed(written, unchanged, command)


# The line every unit we write starts its second line with: how a unit of ours is told from
# one the user wrote under the same name.
_OURS = "# Written by `assemble systemd install"
# Where `systemctl --user enable` links each unit that has an [Install] section.
_WANTED_BY = {
    DAEMON_UNITS[0]: "default.target.wants",
    TIMER_UNITS[1]: "timers.target.wants",
}


@dataclass(frozen=True)
class Uninstalled:
    """The unit files (and their enablement links) removed, those of the same names kept as
    not ours, and the command that stops what runs and makes systemd forget the units."""

    folder: Path
    removed: list[Path]
    kept: list[Path]
    stop_command: str


def uninstall_units(unit_dir: Path | None = None) -> Uninstalled:
    """Given the user's unit folder (default: `user_unit_dir()`), remove the unit files that
    `install_units` wrote there (told by their header line; a file of the same name without it
    is kept) and the links that enabled them; return what was removed and kept.

    Raise AssemblerError if a file of ours cannot be removed.
    """
    folder = unit_dir or user_unit_dir()
    removed: list[Path] = []
    kept: list[Path] = []
    try:
        for name in (*DAEMON_UNITS, *TIMER_UNITS):
            path = folder / name
            if not path.is_file() or path.is_symlink():
                continue
            with path.open(encoding="utf-8", errors="replace") as handle:
                head = [handle.readline(), handle.readline()]
            if not any(line.startswith(_OURS) for line in head):
                kept.append(path)
                continue
            link = folder / _WANTED_BY.get(name, "") / name
            if name in _WANTED_BY and link.is_symlink() and link.resolve() == path.resolve():
                link.unlink()
                removed.append(link)
            path.unlink()
            removed.append(path)
    except OSError as error:
        raise AssemblerError(
            f"Cannot remove the units in {folder} ({error.strerror or error}); remove "
            "scratchpad-assembler*.service and .timer there yourself"
        ) from error
    # A unit whose file is gone still runs until stopped; the reload makes systemd forget it.
    units = " ".join((DAEMON_UNITS[0], TIMER_UNITS[1], TIMER_UNITS[0]))
    command = f"systemctl --user stop {units}; systemctl --user daemon-reload"
    return Uninstalled(folder, removed, kept, command)
