"""systemd user units: the daemon's service, or a oneshot service with its timer, rendered from
the templates in `systemd/` for this install's `assemble` and one workspace.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assembler.config.schema import bundled_dir
from assembler.errors import AssemblerError
from assembler.fsutil import atomic_write

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


def _environment(config_home: Path | None) -> str:
    """Return the unit's Environment= line that pins the user's config folder, or ''."""
    if config_home is None:
        return ""
    value = f"ASSEMBLER_CONFIG_HOME={unit_path(config_home)}"
    if value.count('"'):  # a quoted path: quote the whole assignment instead
        value = f'"ASSEMBLER_CONFIG_HOME={unit_path(config_home)[1:-1]}"'
    return f"Environment={value}\n"


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


@dataclass(frozen=True)
class Installed:
    """The unit files written (or left as they were) and the command that enables them."""

    written: list[Path]
    unchanged: list[Path]
    enable_command: str


def render_units(
    *,
    timer: bool,
    workspace: Path,
    assemble: Path,
    config: Path | None = None,
    config_home: Path | None = None,
    writable: Sequence[Path] = (),
) -> dict[str, str]:
    """Given the kind (daemon service, or oneshot service and timer), the workspace, the
    `assemble` executable, an optional config file, an optional folder of the user's config
    and the folders outside the workspace that the service writes, return each unit's name and
    text."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(bundled_dir("systemd"))),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # unit files, not HTML
    )
    args = f" --workspace {_exec_arg(workspace)}"
    if config is not None:
        args += f" --config {_exec_arg(config)}"
    context = {
        "exec_start": _exec_arg(assemble),
        "exec_args": args,
        "workspace": unit_path(workspace),
        "extra_read_write": "".join(f" {_optional_path(folder)}" for folder in writable),
        "workspace_label": str(workspace),
        "environment": _environment(config_home),
    }
    names = TIMER_UNITS if timer else DAEMON_UNITS
    return {name: env.get_template(f"{name}.j2").render(**context) for name in names}


def install_units(
    *,
    timer: bool,
    workspace: Path,
    config: Path | None = None,
    config_home: Path | None = None,
    output_file: Path | None = None,
    force: bool = False,
    unit_dir: Path | None = None,
    assemble: Path | None = None,
) -> Installed:
    """Given the kind of units, the workspace, the config file the service must read (passed
    as --config) or the user's config folder it must find its config in, and the output file,
    write the units to the user's unit folder and return
    what was written and the `systemctl --user` command that enables them.

    Raise AssemblerError if a unit file exists with other content and `force` is false, or if
    the folder cannot be written.
    """
    folder = unit_dir or user_unit_dir()
    units = render_units(
        timer=timer,
        workspace=workspace,
        assemble=assemble or assemble_executable(),
        config=config.absolute() if config else None,
        config_home=config_home.absolute() if config_home else None,
        writable=outside_folders(workspace, output_file) if output_file else (),
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
            f"{names} already exists with other content (another workspace, or edited by "
            "hand); pass --force to replace it"
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
