"""Where the configuration comes from: the files found for a workspace (the user's own, with
the workspace's over it, or one file named with --config), how they are layered, what a file
in the workspace may say (the agent can edit it), and loading and validating them together,
with every problem reported at once and each named by its file and key. The schema the files
are validated against is `assembler.config.schema`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.config.schema import (
    APP_NAME,
    WORKSPACE_CONFIG_NAMES,
    Config,
    build,
    bundled_dir,
    folder_checks,
)
from assembler.errors import ConfigError, WorkspaceError
from assembler.fsutil import atomic_write, describe_kind, is_within, read_regular

# The settings of a config in the workspace that name code or places: the agent can edit that
# file, so they may only keep to the workspace (`_PLACES`, and relative globs) and name no code.
_PLACES = ("output.path", "daily.folder")


_GLOBS = ("transcripts.sources", "memory.sources")


# Settings whose other values name code: only these values may come from the workspace.
_NAMES_CODE = {
    "tokens.counter": (("estimate", "chars"), "names code to run"),
    "memory.model": (("bundled", "none"), "names a model to load"),
}


def _value(data: Mapping[str, Any], dotted: str) -> Any:
    table, _, key = dotted.partition(".")
    section = data.get(table)
    return section.get(key) if isinstance(section, Mapping) else None


def workspace_config_problems(data: Mapping[str, Any], workspace: Path) -> list[str]:
    """Given the raw data of a config file in the workspace, return what it may not say.

    The agent can write that file, so it may not name code (`tokens.counter` other than
    'estimate' or 'chars', `output.template_dir`: Jinja2 templates are code, `memory.model`
    other than 'bundled' or 'none': a model folder names classes to import) nor a place
    outside the workspace (`output.path`, `daily.folder`, the globs of `transcripts.sources`
    and `memory.sources`). Each problem says where the setting belongs instead.
    """
    where = (
        f"set it in your own config ({user_config_dir() / 'config.toml'}, which the agent does "
        "not write) or in a file passed with --config"
    )
    problems = []
    for key, (allowed, names) in _NAMES_CODE.items():
        value = _value(data, key)
        if isinstance(value, str) and value not in allowed:
            choices = " or ".join(repr(choice) for choice in allowed)
            problems.append(
                f"At '{key}': {value!r} {names}, which a config in the workspace may not do "
                f"(the agent can edit it; use {choices} here); {where}"
            )
    template_dir = _value(data, "output.template_dir")
    if isinstance(template_dir, str) and template_dir:
        problems.append(
            "At 'output.template_dir': templates are code (Jinja2), which a config in the "
            f"workspace may not name (the agent can edit it); {where}"
        )
    if "projects" in data:
        problems.append(
            "At 'projects': which projects are served and the notes they share are the user's "
            f"to say, not a project's (the agent can edit this file); {where}"
        )
    for key in _PLACES:
        value = _value(data, key)
        if isinstance(value, str) and not _stays_inside(value, workspace):
            problems.append(
                f"At '{key}': {value!r} is outside the workspace, which a config in the "
                f"workspace may not name (the agent can edit it); {where}"
            )
    for key in _GLOBS:
        value = _value(data, key)
        for pattern in value if isinstance(value, list) else []:
            if isinstance(pattern, str) and not _stays_inside(pattern, workspace):
                problems.append(
                    f"At '{key}': {pattern!r} reaches outside the workspace, which a config "
                    f"in the workspace may not do (the agent can edit it); {where}"
                )
    return problems


def _stays_inside(path: str, workspace: Path) -> bool:
    """Given a path or glob as written in the config, return whether it names only places in
    the workspace (as written: links are checked when the files are opened)."""
    expanded = os.path.expanduser(path.strip())
    return is_within(os.path.normpath(os.path.join(workspace, expanded)), workspace)


@dataclass(frozen=True)
class ConfigFile:
    """One config file's parsed data, and whether the agent can have written it (a file in the
    workspace), which limits what it may say (see `workspace_config_problems`)."""

    path: Path | None
    data: Mapping[str, Any]
    trusted: bool = True


def validate(
    data: Mapping[str, Any], *, source: Path | None, workspace: Path, trusted: bool = True
) -> Config:
    """Given parsed TOML data, return the Config it describes; `trusted=False` for data from a
    file the agent can edit (in the workspace).

    Raise ConfigError listing every problem (each with its key and fix) if the data is invalid.
    """
    return validate_layers([ConfigFile(source, data, trusted)], workspace)


def validate_layers(files: Sequence[ConfigFile], workspace: Path) -> Config:
    """Given config files, each over the ones before it, return the Config they describe
    together: a table is merged key by key, any other value replaces the one below.

    Raise ConfigError listing every problem, each with the file and key it is in.
    """
    merged, origins = _merge(files)
    found: list[str] = []
    config = build(Config, merged, "", found)
    found.extend(folder_checks(merged, workspace))
    fallback = next((f.path for f in reversed(files) if f.path is not None), None)
    problems = [(_origin(problem, origins, fallback), problem) for problem in found]
    for file in files:
        if not file.trusted:
            problems += [(file.path, p) for p in workspace_config_problems(file.data, workspace)]
    if problems:
        raise ConfigError(_describe_problems(problems))
    assert isinstance(config, Config)
    config.workspace = workspace
    config.source = fallback
    config.sources = tuple(f.path for f in files if f.path is not None)
    return config


def _merge(files: Sequence[ConfigFile]) -> tuple[dict[str, Any], dict[str, Path | None]]:
    """Merge the files' data, later over earlier; return it and, per dotted key, its file."""
    merged: dict[str, Any] = {}
    origins: dict[str, Path | None] = {}

    def put(into: dict[str, Any], data: Mapping[str, Any], prefix: str, path: Path | None) -> None:
        for key, value in data.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            origins[dotted] = path
            if isinstance(value, Mapping) and isinstance(into.get(key), dict):
                put(into[key], value, dotted, path)
            elif isinstance(value, Mapping):
                into[key] = {}
                put(into[key], value, dotted, path)
            else:
                into[key] = value

    for file in files:
        put(merged, file.data, "", file.path)
    return merged, origins


_PROBLEM_KEY = re.compile(r"At '([^']+)'")


def _origin(problem: str, origins: Mapping[str, Path | None], fallback: Path | None) -> Path | None:
    """Given a problem ("At 'key': ..."), return the file that set that key (or its table)."""
    match = _PROBLEM_KEY.match(problem)
    key = re.sub(r"\[\d+\]", "", match.group(1)) if match else ""
    while key:
        if key in origins:
            return origins[key]
        key = key.rpartition(".")[0]
    return fallback


def _describe_problems(problems: Sequence[tuple[Path | None, str]]) -> str:
    """Given (file, problem) pairs, return the error text: one line for one problem, else a
    line per problem under a count, grouped under the file when they share one."""
    files = {path for path, _ in problems}
    if len(files) == 1:
        (path,) = files
        where = str(path) if path else "the configuration"
        if len(problems) == 1:
            return f"{where}: {problems[0][1]}"
        lines = "\n  ".join(problem for _, problem in problems)
        return f"{where} has {len(problems)} problems:\n  {lines}"
    lines = "\n  ".join(f"{path or 'defaults'}: {problem}" for path, problem in problems)
    return f"The configuration has {len(problems)} problems:\n  {lines}"


def _on_macos(platform: str | None) -> bool:
    return (sys.platform if platform is None else platform) == "darwin"


def _macos_support_dir() -> Path:
    # macOS keeps an application's own files here; the XDG folders are a habit of Linux.
    return Path.home() / "Library" / "Application Support" / APP_NAME


def user_config_dir(platform: str | None = None) -> Path:
    """Given the platform (default: `sys.platform`), return the user's config folder:
    $ASSEMBLER_CONFIG_HOME, else $XDG_CONFIG_HOME's, else ~/.config's (on macOS
    ~/Library/Application Support/scratchpad-assembler)."""
    if override := os.environ.get("ASSEMBLER_CONFIG_HOME"):
        return Path(override)
    if base := os.environ.get("XDG_CONFIG_HOME"):
        return Path(base) / APP_NAME
    if _on_macos(platform):
        return _macos_support_dir()
    return Path.home() / ".config" / APP_NAME


def user_state_dir(platform: str | None = None) -> Path:
    """Given the platform (default: `sys.platform`), return the user's state folder, outside
    any workspace: $ASSEMBLER_STATE_HOME, else $XDG_STATE_HOME's, else ~/.local/state's (on
    macOS ~/Library/Application Support/scratchpad-assembler/state)."""
    if override := os.environ.get("ASSEMBLER_STATE_HOME"):
        return Path(override)
    if base := os.environ.get("XDG_STATE_HOME"):
        return Path(base) / APP_NAME
    if _on_macos(platform):
        return _macos_support_dir() / "state"
    return Path.home() / ".local" / "state" / APP_NAME


def user_log_dir(platform: str | None = None) -> Path:
    """Given the platform (default: `sys.platform`), return the folder of the logs outside any
    workspace: the state folder, except on macOS when neither $ASSEMBLER_STATE_HOME nor
    $XDG_STATE_HOME names one: ~/Library/Logs/scratchpad-assembler, where Console finds it."""
    if _on_macos(platform) and not (
        os.environ.get("ASSEMBLER_STATE_HOME") or os.environ.get("XDG_STATE_HOME")
    ):
        return Path.home() / "Library" / "Logs" / APP_NAME
    return user_state_dir(platform)


def resolve_workspace(path: str | os.PathLike[str] | None) -> Path:
    """Given --workspace (or None), return the workspace folder.

    The order is the argument, then $ASSEMBLER_WORKSPACE, then the current folder.
    Raise WorkspaceError if it is not an existing folder.
    """
    from_env = os.environ.get("ASSEMBLER_WORKSPACE")
    if path is not None:
        chosen, origin = path, "--workspace"
        fix = "pass --workspace with an existing folder"
    elif from_env:
        chosen, origin = from_env, "$ASSEMBLER_WORKSPACE"
        fix = "pass --workspace PATH, or fix or unset $ASSEMBLER_WORKSPACE"
    else:
        chosen, origin = ".", "the current folder"
        fix = "pass --workspace PATH or set $ASSEMBLER_WORKSPACE"
    workspace = Path(chosen).expanduser()
    # Say where the path came from: an exported variable is easy to forget about.
    if not workspace.exists():
        raise WorkspaceError(
            f"Workspace '{workspace}' does not exist; create it or {fix} (the path came from "
            f"{origin})"
        )
    if not workspace.is_dir():
        raise WorkspaceError(
            f"Workspace '{workspace}' is a file, not a folder; {fix} (the path came from {origin})"
        )
    return workspace.resolve()


def config_files(
    workspace: Path, explicit: str | os.PathLike[str] | None
) -> tuple[list[tuple[Path, bool]], bool]:
    """Given the workspace and --config (or None), return the config files to read, the base
    first, each with whether it is trusted, and whether the user named the file.

    A file the user names (--config, else $ASSEMBLER_CONFIG) is read alone. Otherwise the
    user's own config (`~/.config/scratchpad-assembler/config.toml`) is read, with the
    workspace's (`.scratchpad/config.toml`, else `assembler.toml`) over it. A file inside the
    workspace is never trusted: the agent can write it. Raise ConfigError if a named file does
    not exist, or if the workspace's config is a link.
    """

    def trusted(path: Path) -> bool:
        return not is_within(os.path.realpath(path), workspace)

    named = explicit if explicit is not None else os.environ.get("ASSEMBLER_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            how = "--config" if explicit is not None else "$ASSEMBLER_CONFIG"
            raise ConfigError(
                f"Config file '{path}' (from {how}) does not exist; fix the path or create it "
                "with 'assemble config init'"
            )
        return [(path, trusted(path))], True
    files: list[tuple[Path, bool]] = []
    user = user_config_dir() / "config.toml"
    if _is_config_file(user):
        files.append((user, trusted(user)))
    for name in WORKSPACE_CONFIG_NAMES:
        candidate = workspace / name
        if candidate.is_symlink():
            raise ConfigError(
                f"{candidate} is a symbolic link; the workspace's config must be a file in the "
                "workspace (the agent could point a link anywhere): replace it with a copy, or "
                f"move its settings to {user}"
            )
        if _is_config_file(candidate):
            files.append((candidate, False))
            break
    return files, False


def _is_config_file(path: Path) -> bool:
    """Given a config file's place, return whether a config file is there. Raise ConfigError
    if something other than a regular file is (a named pipe would block the read)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return stat.S_ISREG(mode)
    raise ConfigError(
        f"{path} is {describe_kind(mode)}, not a regular file; it is not read: replace it with "
        "a config file, or remove it"
    )


def find_config_file(workspace: Path, explicit: str | os.PathLike[str] | None) -> Path | None:
    """Given the workspace and --config (or None), return the most specific config file that
    applies (see `config_files`), if any."""
    files, _ = config_files(workspace, explicit)
    return files[-1][0] if files else None


def read_config_file(path: Path) -> dict[str, Any]:
    """Given a config file, return its parsed TOML. Raise ConfigError if it cannot be read or
    is not valid TOML."""
    try:
        # Not blocking: a named pipe put there after it was found is refused, not waited on.
        data = read_regular(path, follow_links=True).data
        if data is None:
            raise ConfigError(f"{path} is gone; run again")
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML ({error}); fix the syntax") from error
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} cannot be read ({error}); check its permissions") from error


def load_config(
    workspace: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
) -> Config:
    """Given --workspace and --config (either may be None), return the validated Config.

    Raise WorkspaceError for a missing workspace, ConfigError for a missing, malformed or
    invalid config file, or a config in the workspace that names code or places outside it.
    """
    folder = resolve_workspace(workspace)
    found, explicit = config_files(folder, config_path)
    files = [ConfigFile(path, read_config_file(path), trusted) for path, trusted in found]
    config = validate_layers(files, folder)
    config.explicit = explicit
    return config


def sample_config_path() -> Path:
    """Return the commented sample config shipped with the templates."""
    return bundled_dir("templates") / "config.toml"


def init_config(target: Path, *, force: bool = False) -> Path:
    """Given a path, write the commented sample config there and return the path.

    Raise ConfigError if the file exists and `force` is false.
    """
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists; pass --force to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, sample_config_path().read_text(encoding="utf-8"))
    return target


def to_toml(data: Mapping[str, Any]) -> str:
    """Given plain config data, return it as TOML text (tables after plain keys, as TOML needs)."""
    lines: list[str] = []
    _emit_table(data, [], lines)
    return "\n".join(lines).strip() + "\n"


def _emit_table(data: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    plain = {k: v for k, v in data.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    if path and (plain or not tables):
        lines.append(f"\n[{'.'.join(_toml_key(p) for p in path)}]")
    for key, value in plain.items():
        lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in tables.items():
        _emit_table(value, [*path, key], lines)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)
