"""The projects the all-projects setup serves: a session's project (the git top level of its
working folder, else the folder), whether the user's config serves it, and its config.

A project's state folder is not in its work tree: it is `<user state dir>/projects/<key>`,
the key made of the project's folder name and a digest of its real path, so that no two
projects share one and nothing a project's files say can move it (the state folder is no key
of any config file). Its SCRATCHPAD.md stays there too, unless the project's config asks for
it in the tree (`output.in_tree = true`): the hooks put the block before the prompt either way.

Its memory: the notes its own config names inside it (`memory.sources`, MEMORY.md and
memory/ by default), the folder the user's config names for it (`projects.folders`), one
user-wide folder (`projects.notes`), and the notes the host keeps for the project, which the
host's hook passes in (Claude Code's auto memory, `projects.host_notes`).

`project.json` in the state folder records the project's folder for `assemble daemon --all`,
which serves every project a hook announced; a record is believed only for the folder whose
key it is kept under. The workspaces set up by name (`assemble setup HOST --workspace W`) are
listed in `<user state dir>/workspaces.json`, which that daemon serves too.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from assembler.config.files import (
    ConfigFile,
    config_files,
    load_config,
    read_config_file,
    user_state_dir,
    validate_layers,
)
from assembler.config.schema import Config, ProjectsConfig
from assembler.errors import AssemblerError
from assembler.fsutil import atomic_write, is_within, read_regular, real_dir

PROJECTS_DIR = "projects"
# A file of this name at a project's top level keeps the all-projects setup out of it.
OPT_OUT_NAME = ".scratchpad-off"
RECORD_NAME = "project.json"
WORKSPACES_NAME = "workspaces.json"
_RECORD_MAX_BYTES = 64 * 1024


class ProjectNotServed(AssemblerError):
    """The user's config (or the project's marker file) keeps the all-projects setup out."""


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """Given a session's working folder, return its project, resolved: the nearest folder at
    or above it that holds `.git` (a repository's folder, or a worktree's file), else the
    folder itself."""
    start = Path(os.path.realpath(cwd))
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return start


def project_key(root: Path) -> str:
    """Given a project's real path, return the name of its state folder: the folder's name
    (made safe, at most 40 characters) and 16 hex digits of the path's SHA-256."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name)[:40].strip("-.") or "root"
    digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    return f"{name}-{digest}"


def projects_home() -> Path:
    """Return the folder that holds every served project's state folder."""
    return user_state_dir() / PROJECTS_DIR


def project_state_dir(root: Path) -> Path:
    """Given a project's real path, return its state folder (outside its work tree)."""
    return projects_home() / project_key(root)


def _folder(written: str) -> str:
    return os.path.realpath(os.path.expanduser(written.strip()))


def not_served(root: Path, projects: ProjectsConfig) -> str | None:
    """Given a project's real path and the user's `[projects]` table, return why the
    all-projects setup does not serve it, or None when it does."""
    marker = root / OPT_OUT_NAME
    if os.path.lexists(marker):
        return f"{marker} opts the project out"
    if is_within(root, projects_home()):
        return "it is a state folder of this program"
    for folder in projects.exclude:
        if folder.strip() and is_within(root, _folder(folder)):
            return f"projects.exclude names {folder}"
    if projects.include and not any(
        folder.strip() and is_within(root, _folder(folder)) for folder in projects.include
    ):
        return "projects.include does not name it"
    return None


def user_projects(root: Path, config_path: str | os.PathLike[str] | None) -> ProjectsConfig:
    """Given a project's real path and --config (or None), return the `[projects]` table of
    the user's own config (or of the file named): a project's config may not set it. Raise
    ConfigError if that config is broken."""
    found, _ = config_files(root, config_path)
    trusted = [ConfigFile(path, read_config_file(path), True) for path, ok in found if ok]
    return validate_layers(trusted, root).projects


def project_config(
    root: Path,
    config_path: str | os.PathLike[str] | None = None,
    host_notes: Sequence[Path] = (),
) -> Config:
    """Given a project's folder (`project_root`), --config (or None) and the folders of notes
    the hosts keep for the project, return its config (see the module's docstring). Raise
    ProjectNotServed when the user's config or the project's marker keeps it out, ConfigError
    or WorkspaceError for a bad config or folder."""
    projects = user_projects(root, config_path)
    why = not_served(root, projects)
    if why is not None:
        raise ProjectNotServed(f"{root} is not served by the all-projects setup: {why}")
    config = load_config(root, config_path)
    config.state_home = project_state_dir(root)
    own = [notes for folder, notes in projects.folders.items() if _folder(folder) == str(root)]
    folders = [Path(_folder(notes)) for notes in [*own, projects.notes] if notes.strip()]
    if projects.host_notes:
        folders += [Path(os.path.realpath(folder)) for folder in host_notes]
    config.memory.sources = [
        *config.memory.sources,
        *(glob.escape(str(folder)) + "/**/*.md" for folder in dict.fromkeys(folders)),
    ]
    return config


def announce(config: Config, host: str, now: datetime) -> bool:
    """Given a project's config, the host whose hook serves it and the clock, record the
    project in its state folder for `assemble daemon --all` (once: a record that already
    names the folder and the host is left alone). Return whether it was written."""
    if config.state_home is None:
        return False
    path = real_dir(config.state_home) / RECORD_NAME
    record = _read_record(path) or {}
    listed = record.get("hosts")
    hosts = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
    if record.get("root") == str(config.workspace) and host in hosts:
        return False
    record = {
        "root": str(config.workspace),
        "hosts": sorted({*hosts, host}),
        "announced": now.isoformat(timespec="seconds"),
    }
    atomic_write(path, json.dumps(record, indent=1) + "\n")
    return True


def _read_record(path: Path) -> dict[str, object] | None:
    try:
        data = read_regular(path, limit=_RECORD_MAX_BYTES).data
        value = json.loads(data) if data is not None else None
    except (AssemblerError, OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def announced_projects() -> Iterator[Path]:
    """Yield the folder of every project a hook announced that still exists, each only from
    the state folder its key names (a record moved or copied to another folder is not
    believed)."""
    try:
        names = sorted(os.listdir(projects_home()))
    except OSError:
        return
    for name in names:
        record = _read_record(projects_home() / name / RECORD_NAME)
        root = record.get("root") if record else None
        if not isinstance(root, str) or "\x00" in root or not os.path.isabs(root):
            continue
        folder = Path(root)
        if project_key(folder) == name and folder.is_dir():
            yield folder


def register_workspace(workspace: Path) -> bool:
    """Given a workspace set up by name, list it in the user's state folder for `assemble
    daemon --all`; return whether it was new."""
    path = real_dir(user_state_dir()) / WORKSPACES_NAME
    listed = list(_listed(path))
    folder = str(workspace.resolve())
    if folder in listed:
        return False
    atomic_write(path, json.dumps({"workspaces": [*listed, folder]}, indent=1) + "\n")
    return True


def _listed(path: Path) -> Iterator[str]:
    record = _read_record(path)
    listed = record.get("workspaces") if record else None
    for folder in listed if isinstance(listed, list) else []:
        if isinstance(folder, str) and "\x00" not in folder and os.path.isabs(folder):
            yield folder


def registered_workspaces() -> list[Path]:
    """Return the workspaces set up by name that still exist."""
    found = (Path(folder) for folder in _listed(user_state_dir() / WORKSPACES_NAME))
    return [folder for folder in found if folder.is_dir()]
