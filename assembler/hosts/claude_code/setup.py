"""What connects Claude Code to a workspace, as data: the hooks for settings.json, the
permission for the MCP tools and the `claude mcp add` commands, and what removes them again;
`assemble setup claude-code` prints them and the end-to-end tests apply them to the real
`claude`.

The all-projects setup (`--all-projects`) is two hooks in the user's settings.json that run
`assemble hook claude-code --all-projects`, serving each session as its project; it has no MCP
server (a server serves one workspace) and so no allow rule and no wait for one.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.config.projects import projects_home
from assembler.errors import AssemblerError
from assembler.fsutil import load_json, read_regular, resolves_within
from assembler.hosts.claude_code.sessions import config_dir
from assembler.hosts.command_hooks import (
    ALL_PROJECTS_FLAG,
    Placed,
    add_hooks,
    hook_commands,
    strip_our_hooks,
    strip_settings_hooks,
)
from assembler.hosts.hook_links import hook_links
from assembler.hosts.links import Link
from assembler.hosts.mcp.setup import (
    MCP_SERVER_NAME,
    names_workspace,
    registered_in,
    server_link,
)
from assembler.hosts.removal import SETTINGS_MAX_BYTES, HostCommand, Removal, SettingsEdit, Step
from assembler.hosts.setup import (
    all_projects_context,
    common_context,
    indented,
    json_bytes,
    read_settings,
    render_setup,
    settings_hooks,
    write_settings,
)

if TYPE_CHECKING:
    from assembler.config.schema import Config

# How long a session's first request waits for MCP servers still connecting (Claude Code's
# default is 2 s, then it goes without their tools). A bound, not a delay: the request goes as
# soon as every server is connected; only a server that never answers costs the whole wait.
MCP_STARTUP_WAIT_ENV = "CLAUDE_CODE_MCP_STARTUP_WAIT_MS"
MCP_STARTUP_WAIT_MS = "30000"
# The host's name on the hook's command line (`assemble hook claude-code`).
HOOK_HOST = "claude-code"
# SessionStart's matcher, a regular expression on its `source`: the sessions that lost what
# the hooks added. A new session gets it from its first UserPromptSubmit.
AFTER_LOSS = "clear|compact"


@dataclass(frozen=True)
class ClaudeCodeSetup:
    """What `assemble setup claude-code` has the user configure, as data: the template prints
    it, and the end-to-end test applies it to the real `claude`."""

    hook_command: str  # a shell command line: Claude Code runs command hooks through a shell
    settings: dict[str, Any]  # for settings.json: the hooks, the MCP tools allowed, the wait
    mcp_add: list[str]  # `claude mcp add`, scope local: run in a project's folder, for it alone
    mcp_add_user: list[str]  # the same with scope user: every project


def claude_code_setup(workspace: Path, assemble: Path) -> ClaudeCodeSetup:
    """Given the workspace and this install's `assemble` (both absolute), return the hooks,
    the permission and the `claude mcp add` commands that connect Claude Code to it.

    UserPromptSubmit runs the hook before every prompt (it sends the scratchpad once per
    session, then only when it changed); SessionStart runs it only when a session lost what it
    held (cleared, compacted), as every `claude -p` turn would otherwise run two hooks. The
    allow rule lets the agent call the server's tools without a prompt, which `claude -p`
    could not answer (it refuses the call). The wait (`MCP_STARTUP_WAIT_ENV`) has a session's
    first request wait until the MCP servers are connected, up to that bound, instead of the
    2 s after which Claude Code sends it without their tools.
    """
    hook_command = shlex.join([str(assemble), "hook", HOOK_HOST, "--workspace", str(workspace)])
    hook = {"hooks": [{"type": "command", "command": hook_command}]}
    after_loss = {"matcher": AFTER_LOSS, **hook}
    server = [MCP_SERVER_NAME, "--", str(assemble), "mcp", "--workspace", str(workspace)]
    return ClaudeCodeSetup(
        hook_command=hook_command,
        settings={
            "hooks": {"SessionStart": [after_loss], "UserPromptSubmit": [hook]},
            "permissions": {"allow": [f"mcp__{MCP_SERVER_NAME}"]},
            "env": {MCP_STARTUP_WAIT_ENV: MCP_STARTUP_WAIT_MS},
        },
        mcp_add=["claude", "mcp", "add", *server],
        mcp_add_user=["claude", "mcp", "add", "--scope", "user", *server],
    )


def claude_code_removal(workspace: Path, environ: Mapping[str, str]) -> Removal:
    """Given the workspace and the environment, return what removes the Claude Code setup of
    the workspace: our hooks (and the allow rule, once no hook of ours is left) in the user's
    settings and in the local settings of each project Claude Code knows, and each registration
    of the MCP server that serves this workspace (`~/.claude.json` says where)."""
    user_settings = config_dir(environ) / "settings.json"
    registry = _registry_path(environ)
    read = _read_registry(registry)
    known = read or {}
    steps: list[Step] = [
        SettingsEdit(
            f"the hooks that run `assemble hook claude-code` for this workspace, and "
            f'"mcp__{MCP_SERVER_NAME}" in permissions.allow once no such hook is left',
            user_settings,
            lambda value: strip_settings(value, workspace),
            follow_links=True,  # your own file, perhaps linked from your dotfiles
        )
    ]
    listed = known.get("projects")
    projects: dict[str, Any] = listed if isinstance(listed, dict) else {}
    for folder in sorted(projects):
        local = Path(folder) / ".claude" / "settings.local.json"
        # A project's folder is the agent's to write: a link there leads nowhere we edit.
        inside = resolves_within(local, Path(os.path.realpath(folder)))
        if Path(folder).is_absolute() and local.is_file() and not local.is_symlink() and inside:
            steps.append(
                SettingsEdit(
                    "the same in this project's local settings",
                    local,
                    lambda value: strip_settings(value, workspace),
                )
            )
    servers = known.get("mcpServers")
    if _serves(servers, workspace):
        steps.append(
            HostCommand(
                f'the MCP server "{MCP_SERVER_NAME}" (scope user)',
                ("claude", "mcp", "remove", MCP_SERVER_NAME, "--scope", "user"),
            )
        )
    for folder, project in sorted(projects.items()):
        if isinstance(project, dict) and _serves(project.get("mcpServers"), workspace):
            steps.append(
                HostCommand(
                    f'the MCP server "{MCP_SERVER_NAME}" of the project {folder} (scope local)',
                    ("claude", "mcp", "remove", MCP_SERVER_NAME, "--scope", "local"),
                    cwd=Path(folder),
                )
            )
    if read is None:
        notes: tuple[str, ...] = (f"{registry} could not be read: look there for ours.",)
    elif not any(isinstance(step, HostCommand) for step in steps):
        notes = (f'No MCP server "{MCP_SERVER_NAME}" of this workspace is in {registry}.',)
    else:
        notes = ()
    return Removal("Claude Code", workspace, tuple(steps), notes)


def strip_settings(value: Any, workspace: Path) -> Any:
    """Given a settings file's JSON, return it without the command hooks that run `assemble
    hook claude-code` for the workspace (a matcher group, an event and `hooks` go when they
    held only those), and without the allow rule of the MCP tools once no `hook claude-code`
    of any workspace is left in it. Everything else stays as it was."""
    if not isinstance(value, dict):
        return value
    hooks = value.get("hooks")
    if isinstance(hooks, dict):
        strip_our_hooks(hooks, HOOK_HOST, workspace)
        if not hooks:
            del value["hooks"]
    # The permission and the MCP wait go with the last of our hooks (for any workspace).
    last_hook = not _runs_any_hook(value.get("hooks"))
    rule = f"mcp__{MCP_SERVER_NAME}"
    permissions = value.get("permissions")
    if last_hook and isinstance(permissions, dict):
        allow = permissions.get("allow")
        if isinstance(allow, list) and rule in allow:
            permissions["allow"] = [item for item in allow if item != rule]
            if not permissions["allow"]:
                del permissions["allow"]
            if not permissions:
                del value["permissions"]
    # The MCP wait too, when it is the value setup printed.
    env = value.get("env")
    ours = isinstance(env, dict) and env.get(MCP_STARTUP_WAIT_ENV) == MCP_STARTUP_WAIT_MS
    if isinstance(env, dict) and ours and last_hook:
        del env[MCP_STARTUP_WAIT_ENV]
        if not env:
            del value["env"]
    return value


def _runs_any_hook(hooks: Any) -> bool:
    """Whether settings' hooks still run `assemble hook claude-code` (for any workspace, or
    for every project: `--all-projects`)."""
    return any(f"hook {HOOK_HOST}" in command for command in hook_commands(hooks))


def _registry_path(environ: Mapping[str, str]) -> Path:
    """Claude Code's own state file, which holds the MCP servers of scopes user and local:
    `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`."""
    if environ.get("CLAUDE_CONFIG_DIR", "").strip():
        return config_dir(environ) / ".claude.json"
    return config_dir(environ).parent / ".claude.json"


def _read_registry(path: Path) -> dict[str, Any] | None:
    """Claude Code's state file as JSON ({} when there is none), or None if unreadable."""
    try:
        data = read_regular(path, limit=SETTINGS_MAX_BYTES, follow_links=True).data
        value = load_json(data) if data is not None else {}
    except (AssemblerError, OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _serves(servers: Any, workspace: Path) -> bool:
    entry = servers.get(MCP_SERVER_NAME) if isinstance(servers, dict) else None
    return names_workspace(entry, workspace)


def setup_text(config: Config, assemble: Path) -> str:
    """Given the config and this install's `assemble`, return what `assemble setup
    claude-code` prints."""
    setup = claude_code_setup(config.workspace, assemble)
    return render_setup(
        HOOK_HOST,
        common_context(config, assemble)
        | {
            "settings_json": indented(setup.settings),
            "mcp_add": shlex.join(setup.mcp_add),
            "mcp_add_user": shlex.join(setup.mcp_add_user),
        },
    )


def removal(config: Config, assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given the config, this install's `assemble` and the environment, return what
    `assemble setup claude-code --remove` undoes (`claude_code_removal`)."""
    return claude_code_removal(config.workspace, environ)


# -- every project: `assemble setup claude-code --all-projects` -------------------------------


def user_settings(environ: Mapping[str, str]) -> Path:
    """Given the environment, return the user's settings file of Claude Code, which holds the
    all-projects hooks: `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`."""
    return config_dir(environ) / "settings.json"


def all_projects_hooks(assemble: Path) -> dict[str, list[dict[str, Any]]]:
    """Given this install's `assemble` (absolute), return the hooks, by event, that serve every
    project: each runs `assemble hook claude-code --all-projects`, which serves the project
    (git top level) of the session's working folder. UserPromptSubmit runs before every
    prompt, SessionStart only when a session lost what the hooks added (cleared, compacted)."""
    command = shlex.join([str(assemble), "hook", HOOK_HOST, ALL_PROJECTS_FLAG])
    return {
        "SessionStart": [
            {"matcher": AFTER_LOSS, "hooks": [{"type": "command", "command": command}]}
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}],
    }


def all_projects_text(assemble: Path, environ: Mapping[str, str]) -> str:
    """Given this install's `assemble` and the environment, return what `assemble setup
    claude-code --all-projects` prints."""
    return render_setup(
        f"{HOOK_HOST}-all-projects",
        all_projects_context(HOOK_HOST, assemble)
        | {
            "settings_path": shlex.quote(str(user_settings(environ))),
            "settings_json": indented({"hooks": all_projects_hooks(assemble)}),
        },
    )


def all_projects_apply(assemble: Path, environ: Mapping[str, str]) -> list[str]:
    """Given this install's `assemble` and the environment, merge the all-projects hooks into
    the user's settings.json (each one not there already, by its command line; every other
    entry as it was) and return a line per hook: added, or there already. Raise AssemblerError,
    naming the file and the fix, if it is not a JSON object of settings or cannot be written."""
    path = user_settings(environ)
    before, value = read_settings(path)
    try:
        placed = add_hooks(settings_hooks(value, path), all_projects_hooks(assemble))
    except ValueError as error:
        shown = shlex.quote(str(path))
        raise AssemblerError(f"{shown}: {error}; fix it, then run this again") from None
    if any(place.added for place in placed):
        write_settings(path, json_bytes(value), before)
    return [_placed_line(place, path) for place in placed]


def _placed_line(place: Placed, path: Path) -> str:
    shown = shlex.quote(str(path))
    if place.added:
        return f"added the {place.event} hook to {shown}"
    return f"already there: the {place.event} hook in {shown}"


def all_projects_removal(assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given this install's `assemble` and the environment, return what takes the
    all-projects hooks (run by any `assemble`) out of the user's settings.json; the hooks of
    a workspace set up by name stay, and so does everything else."""
    edit = SettingsEdit(
        f"the hooks that run `assemble hook {HOOK_HOST} {ALL_PROJECTS_FLAG}`",
        user_settings(environ),
        lambda value: strip_settings_hooks(value, HOOK_HOST, None),
        follow_links=True,  # your own file, perhaps linked from your dotfiles
    )
    state = shlex.quote(str(projects_home()))
    note = f"Each project's state stays in {state}:\ndelete it yourself if you want."
    return Removal("Claude Code", None, (edit,), (note,))


# The hook's record of the sessions it served (`hosts.claude_code.hook.SESSIONS_NAME`).
_SESSIONS_RECORD = "claude-code-sessions.json"


def setup_links(config: Config, assemble: Path, environ: Mapping[str, str]) -> list[Link]:
    """Given the config, this install's `assemble` and the environment, return what `assemble
    doctor` checks of Claude Code here: its hooks for this workspace in the settings it reads
    (yours, the project's local and shared ones), and the program they run; none when Claude
    Code is not set up here and its hook never ran here."""
    every = config.is_project
    files = [
        config_dir(environ) / "settings.json",
        config.workspace / ".claude" / "settings.local.json",
        config.workspace / ".claude" / "settings.json",
    ]
    how = ["--all-projects", "--apply"] if every else ["--workspace", str(config.workspace)]
    links = hook_links(
        "Claude Code",
        HOOK_HOST,
        files,
        None if every else config.workspace,
        ran_here=(config.state_dir / _SESSIONS_RECORD).exists(),
        fix=shlex.join([str(assemble), "setup", HOOK_HOST, *how])
        + ("" if every else "  (merge the hooks it prints into ~/.claude/settings.json)"),
    )
    if every or not links:
        return links  # the all-projects hooks have no MCP server (a server serves one workspace)
    add = shlex.join(claude_code_setup(config.workspace, assemble).mcp_add)
    fix = f"{add}  (run in {config.workspace})"
    return [*links, server_link("the Claude Code MCP server", _registrations(config, environ), fix)]


def _registrations(config: Config, environ: Mapping[str, str]) -> list[tuple[str, Any]]:
    """Where Claude Code registers this workspace's MCP server for its sessions there: scope
    user and the workspace's scope local in its state file, scope project in `.mcp.json`."""
    registry = _registry_path(environ)
    known = _read_registry(registry) or {}
    scopes: list[tuple[str, Any]] = [(f"{registry} (scope user)", known.get("mcpServers"))]
    projects = known.get("projects")
    here = os.path.realpath(config.workspace)
    for folder, project in sorted(projects.items() if isinstance(projects, dict) else []):
        if os.path.realpath(folder) == here and isinstance(project, dict):
            scopes.append((f"{registry} (scope local)", project.get("mcpServers")))
    found = [
        (where, servers[MCP_SERVER_NAME])
        for where, servers in scopes
        if isinstance(servers, dict) and _serves(servers, config.workspace)
    ]
    shared = config.workspace / ".mcp.json"
    entry = registered_in(shared, config.workspace)
    if entry is not None:
        found.append((f"{shared} (scope project)", entry))
    return found
