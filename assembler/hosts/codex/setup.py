"""What connects Codex to a workspace, as data: the hooks for `hooks.json`, the trust Codex
asks of each hook before it runs it, the feature flag and the MCP server's table for
`config.toml`, and what removes them again; `assemble setup codex [--remove]` prints them and
the end-to-end tests apply them to the real `codex`.

Codex runs a hook from a user's `hooks.json` only once it is trusted: `config.toml` holds
`[hooks.state."<hooks.json>:<event>:<group>:<handler>"]` with `trusted_hash`, the SHA-256 of
the hook's normalized definition (codex-rs `hooks/src/engine/discovery.rs`: the event's
snake_case label, the matcher, and the one command handler with its timeout, 600 s unless
set, `async` and `additionalContextLimit` when set, as JSON with sorted keys and no spaces).
Codex's `/hooks` screen writes the same entry when you trust a hook there; the setup prints it
so that nothing has to be clicked, and an edited hook (another command) is untrusted again.

The all-projects setup (`--all-projects`) is two hooks in the user's hooks.json that run
`assemble hook codex --all-projects`, serving each session as its project, and their trust in
config.toml; it has no MCP server (a server serves one workspace). With `--apply` it merges
them in: the trust's key names the place where the hook is once merged (after the user's own
groups of its event), so it is computed from the merged file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.config.projects import projects_home
from assembler.delivery.sent import read_sent
from assembler.errors import AssemblerError
from assembler.fsutil import read_regular
from assembler.hosts.codex.sessions import codex_home
from assembler.hosts.command_hooks import (
    ALL_PROJECTS_FLAG,
    Placed,
    add_hooks,
    our_handlers,
    strip_our_hooks,
    strip_settings_hooks,
)
from assembler.hosts.hook_links import hook_links
from assembler.hosts.links import Link
from assembler.hosts.mcp.setup import MCP_SERVER_NAME, names_workspace, server_link
from assembler.hosts.removal import (
    SETTINGS_MAX_BYTES,
    Removal,
    SettingsEdit,
    TomlEdit,
    table_header,
)
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
from assembler.hosts.toml_tables import TableCutError, TablePath, without_tables

if TYPE_CHECKING:
    from assembler.config.schema import Config

# The feature that turns hooks on. Codex 0.171 has it on by default and warns that the older
# name, `codex_hooks`, is deprecated: the setup names it so that a config that turned it off
# elsewhere does not silently skip the hooks.
HOOKS_FEATURE: Final = "hooks"
# Codex's default timeout of a command hook, part of the trusted definition.
HOOK_TIMEOUT_S: Final = 600
# SessionStart's matcher, a regular expression on its `source`: the sessions whose context
# lost the block. A new session gets it from its first UserPromptSubmit.
AFTER_LOSS: Final = "clear|compact"
# The host's name on the hook's command line (`assemble hook codex`).
HOOK_HOST: Final = "codex"
_EVENT_LABELS: Final = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit"}


@dataclass(frozen=True)
class CodexSetup:
    """What `assemble setup codex` has the user configure, as data."""

    hook_command: str  # a shell command line: Codex runs command hooks through a shell
    hooks_json: Path  # where the hooks go: `$CODEX_HOME/hooks.json`
    config_toml: Path  # where the rest goes: `$CODEX_HOME/config.toml`
    hooks: dict[str, Any]  # hooks.json's content (the two hooks)
    trust: dict[str, str]  # `hooks.state` key -> trusted_hash, for config.toml
    mcp_server: dict[str, Any]  # `[mcp_servers.scratchpad]`

    def config_lines(self) -> list[str]:
        """The lines to add to config.toml: the feature flag, the hooks' trust and the MCP
        server, as TOML."""
        lines = ["[features]", f"{HOOKS_FEATURE} = true", "", *trust_lines(self.trust), ""]
        lines.append(table_header(("mcp_servers", MCP_SERVER_NAME)))
        lines.append(f"command = {toml_string(self.mcp_server['command'])}")
        args = ", ".join(toml_string(arg) for arg in self.mcp_server["args"])
        lines.append(f"args = [{args}]")
        return lines


def codex_setup(workspace: Path, assemble: Path, environ: Mapping[str, str]) -> CodexSetup:
    """Given the workspace, this install's `assemble` (both absolute) and the environment
    (for CODEX_HOME), return the hooks, their trust and the MCP server that connect Codex.

    UserPromptSubmit runs the hook before every prompt (it sends the scratchpad once per
    session, then only what changed); SessionStart runs it only when a session lost what it
    held (cleared, compacted)."""
    home = codex_home(environ)
    hook_command = shlex.join([str(assemble), "hook", HOOK_HOST, "--workspace", str(workspace)])
    groups = _hook_groups(hook_command)
    hooks_json = home / "hooks.json"
    trust = {
        # The group's and the handler's place in the file are part of the key: these are the
        # first of their events in a hooks.json that holds no others.
        f"{hooks_json}:{_EVENT_LABELS[event]}:0:0": trusted_hash(event, group[0])
        for event, group in groups.items()
    }
    return CodexSetup(
        hook_command=hook_command,
        hooks_json=hooks_json,
        config_toml=home / "config.toml",
        hooks={"hooks": groups},
        trust=trust,
        mcp_server={
            "command": str(assemble),
            "args": ["mcp", "--workspace", str(workspace)],
        },
    )


def _hook_groups(command: str) -> dict[str, list[dict[str, Any]]]:
    """Given a hook's command line, return the matcher groups, by event, that run it:
    UserPromptSubmit before every prompt, SessionStart after a session lost what it held."""

    def handler() -> dict[str, Any]:
        # Codex cuts a hook's context over about 2,500 tokens to a preview and a file; the
        # hook caps what it sends itself (`hosts.handoff.block_limit`), so the model gets it
        # whole.
        return {"type": "command", "command": command, "additionalContextLimit": 0}

    return {
        "SessionStart": [{"matcher": AFTER_LOSS, "hooks": [handler()]}],
        "UserPromptSubmit": [{"hooks": [handler()]}],
    }


def trust_lines(trust: Mapping[str, str]) -> list[str]:
    """Given `hooks.state` keys and their trusted_hash, return the tables for config.toml."""
    lines: list[str] = []
    for key, digest in trust.items():
        if lines:
            lines.append("")
        lines += [table_header(("hooks", "state", key)), f"trusted_hash = {toml_string(digest)}"]
    return lines


def trusted_hash(event: str, group: Mapping[str, Any]) -> str:
    """Given a hook event and a matcher group of one command handler, return the hash Codex
    trusts it by (see the module's docstring)."""
    [handler] = group["hooks"]
    normalized = {
        "type": "command",
        "command": handler["command"],
        "timeout": max(int(handler.get("timeout", HOOK_TIMEOUT_S)), 1),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("additionalContextLimit") is not None:
        normalized["additionalContextLimit"] = int(handler["additionalContextLimit"])
    identity: dict[str, Any] = {"event_name": _EVENT_LABELS[event], "hooks": [normalized]}
    # UserPromptSubmit has no matcher: Codex drops one given.
    if group.get("matcher") is not None and event != "UserPromptSubmit":
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def toml_string(value: str) -> str:
    """Given a string, return it as a TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def codex_removal(workspace: Path, assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given the workspace, this install's `assemble` and the environment (for CODEX_HOME),
    return what removes the Codex setup of the workspace: our hooks in hooks.json, then the
    tables of config.toml that trust them and declare the MCP server (cut line by line: the
    file's comments stay). The feature flag stays: it turns on hooks, which Codex does by
    default, and other hooks of the user's may rely on it."""
    setup = codex_setup(workspace, assemble, environ)
    shown = [table_header(("hooks", "state", key)) for key in setup.trust]
    shown.append(table_header(("mcp_servers", MCP_SERVER_NAME)))
    hooks = SettingsEdit(
        "the SessionStart and UserPromptSubmit hooks that run `assemble hook codex` for this "
        "workspace",
        setup.hooks_json,
        lambda value: strip_hooks(value, workspace),
        follow_links=True,  # your own file, perhaps linked from your dotfiles
    )
    tables = TomlEdit(
        "the tables that trust those hooks and declare the `scratchpad` MCP server of this "
        "workspace",
        setup.config_toml,
        lambda value: our_tables(value, setup, workspace),
        shown=tuple(shown),
        follow_links=True,
    )
    note = (
        f"[features] {HOOKS_FEATURE} = true stays in {shlex.quote(str(setup.config_toml))}:\n"
        "it turns on hooks, as Codex does by default; delete it if no other hooks of yours "
        "need it."
    )
    return Removal("Codex", workspace, (hooks, tables), (note,))


def our_tables(value: dict[str, Any], setup: CodexSetup, workspace: Path) -> list[TablePath]:
    """Given config.toml's value, the setup and the workspace, return the key paths of the
    tables of ours in it: the MCP server that serves the workspace with an `assemble`, and the
    trust of our hooks (an entry of our hooks.json and event, whatever its place in the file,
    with the hash of our hook: run by this install's `assemble` or the server's)."""
    found: list[TablePath] = []
    setups = [setup]
    server = _table(_table(value, "mcp_servers"), MCP_SERVER_NAME)
    command = server.get("command")
    if (
        isinstance(command, str)
        and Path(command).name == "assemble"
        and names_workspace(server, workspace)
    ):
        found.append(("mcp_servers", MCP_SERVER_NAME))
        home = {"CODEX_HOME": str(setup.hooks_json.parent)}
        setups.append(codex_setup(workspace, Path(command), home))
    trusted = {
        (key.rsplit(":", 3)[1], digest) for one in setups for key, digest in one.trust.items()
    }
    for key, entry in _table(_table(value, "hooks"), "state").items():
        # "<hooks.json>:<event>:<group>:<handler>"; the file's path may hold colons itself
        parts = key.rsplit(":", 3)
        if len(parts) != 4 or parts[0] != str(setup.hooks_json) or not isinstance(entry, dict):
            continue
        if (parts[1], entry.get("trusted_hash")) in trusted:
            found.append(("hooks", "state", key))
    return found


def _table(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def strip_hooks(value: Any, workspace: Path) -> Any:
    """Given hooks.json's JSON, return it without the command hooks that run `assemble hook
    codex` for the workspace (a matcher group and an event go when they held only those).
    Everything else stays as it was."""
    hooks = value.get("hooks") if isinstance(value, dict) else None
    if isinstance(hooks, dict):
        strip_our_hooks(hooks, HOOK_HOST, workspace)
    return value


def setup_text(config: Config, assemble: Path) -> str:
    """Given the config and this install's `assemble`, return what `assemble setup codex`
    prints."""
    codex = codex_setup(config.workspace, assemble, os.environ)
    workspace = str(config.workspace)
    return render_setup(
        HOOK_HOST,
        common_context(config, assemble)
        | {
            "remove_command": shlex.join(
                [str(assemble), "setup", HOOK_HOST, "--remove", "--workspace", workspace]
            ),
            "hooks_json_path": shlex.quote(str(codex.hooks_json)),
            "config_toml_path": shlex.quote(str(codex.config_toml)),
            "hooks_json": indented(codex.hooks),
            "config_toml": "\n".join("   " + line if line else "" for line in codex.config_lines()),
        },
    )


def removal(config: Config, assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given the config, this install's `assemble` and the environment, return what
    `assemble setup codex --remove` undoes (`codex_removal`)."""
    return codex_removal(config.workspace, assemble, environ)


# -- every project: `assemble setup codex --all-projects` -------------------------------------


def all_projects_hooks(assemble: Path) -> dict[str, list[dict[str, Any]]]:
    """Given this install's `assemble` (absolute), return the hooks, by event, that serve every
    project: each runs `assemble hook codex --all-projects`, which serves the project (git top
    level) of the session's working folder."""
    return _hook_groups(shlex.join([str(assemble), "hook", HOOK_HOST, ALL_PROJECTS_FLAG]))


@dataclass(frozen=True)
class Merged:
    """The user's hooks.json with the all-projects hooks merged in, and their trust."""

    hooks_json: Path
    before: bytes | None  # the file as read (None: it did not exist)
    value: dict[str, Any]  # its value, merged
    placed: list[Placed]  # where each hook of ours is in it
    trust: dict[str, str]  # `hooks.state` key (of that place) -> trusted_hash

    @property
    def changed(self) -> bool:
        return any(place.added for place in self.placed)


def merged_hooks(assemble: Path, environ: Mapping[str, str]) -> Merged:
    """Given this install's `assemble` and the environment, return the user's hooks.json with
    the all-projects hooks merged in (each one not there already, by its command line,
    appended after the groups of its event) and the trust of each where it is. Raise
    AssemblerError, naming the file and the fix, if it is not a JSON object of hooks."""
    hooks_json = codex_home(environ) / "hooks.json"
    before, value = read_settings(hooks_json)
    return _merged(hooks_json, before, value, assemble)


def _merged(
    hooks_json: Path, before: bytes | None, value: dict[str, Any], assemble: Path
) -> Merged:
    hooks = settings_hooks(value, hooks_json)
    try:
        placed = add_hooks(hooks, all_projects_hooks(assemble))
        trust = dict(_trust_at(hooks_json, hooks, place) for place in placed)
    except (ValueError, TypeError) as error:  # a hook of that command, with a bad timeout
        shown = shlex.quote(str(hooks_json))
        raise AssemblerError(f"{shown}: {error}; fix it, then run this again") from None
    return Merged(hooks_json, before, value, placed, trust)


def _trust_at(hooks_json: Path, hooks: dict[str, Any], place: Placed) -> tuple[str, str]:
    """The `hooks.state` key of the hook at that place and the hash it is trusted by."""
    group = hooks[place.event][place.group]
    handler = group["hooks"][place.handler]
    key = f"{hooks_json}:{_EVENT_LABELS[place.event]}:{place.group}:{place.handler}"
    return key, trusted_hash(place.event, {**group, "hooks": [handler]})


def all_projects_text(assemble: Path, environ: Mapping[str, str]) -> str:
    """Given this install's `assemble` and the environment, return what `assemble setup codex
    --all-projects` prints: the trust keys name the places the hooks take when merged into
    the user's hooks.json as it is now (a fresh file's, if it cannot be read)."""
    home = codex_home(environ)
    try:
        trust = merged_hooks(assemble, environ).trust
    except AssemblerError:  # `--apply` says what is wrong with the file
        trust = _merged(home / "hooks.json", None, {}, assemble).trust
    lines = ["[features]", f"{HOOKS_FEATURE} = true", "", *trust_lines(trust)]
    return render_setup(
        f"{HOOK_HOST}-all-projects",
        all_projects_context(HOOK_HOST, assemble)
        | {
            "hooks_json_path": shlex.quote(str(home / "hooks.json")),
            "config_toml_path": shlex.quote(str(home / "config.toml")),
            "hooks_json": indented({"hooks": all_projects_hooks(assemble)}),
            "config_toml": "\n".join("   " + line if line else "" for line in lines),
        },
    )


def all_projects_apply(assemble: Path, environ: Mapping[str, str]) -> list[str]:
    """Given this install's `assemble` and the environment, merge the all-projects hooks into
    the user's hooks.json and their trust into config.toml (its other lines kept as they
    were, comments too; a trust of another hash at that place replaced), and return a line
    per hook and per trust: added, replaced or there already. Both files are checked before
    either is written. Raise AssemblerError, naming the file and the fix, if one cannot be
    read, parsed or written, or the trust cannot be added to config.toml line by line."""
    merged = merged_hooks(assemble, environ)
    config_toml = merged.hooks_json.parent / "config.toml"
    before, text = _read_toml(config_toml)
    edited, trust_said = with_trust(text, merged.trust, merged.placed, config_toml)
    if merged.changed:
        write_settings(merged.hooks_json, json_bytes(merged.value), merged.before)
    if edited != text:
        write_settings(config_toml, edited.encode("utf-8"), before)
    hooks_shown = shlex.quote(str(merged.hooks_json))
    said = [
        f"added the {place.event} hook to {hooks_shown}"
        if place.added
        else f"already there: the {place.event} hook in {hooks_shown}"
        for place in merged.placed
    ]
    return said + trust_said + _features_off(edited, config_toml)


def _read_toml(path: Path) -> tuple[bytes | None, str]:
    """config.toml's bytes (None when it does not exist) and its text ("" then)."""
    shown = shlex.quote(str(path))
    try:
        data = read_regular(path, limit=SETTINGS_MAX_BYTES, follow_links=True).data
        return data, data.decode("utf-8") if data is not None else ""
    except (AssemblerError, OSError, UnicodeDecodeError) as error:
        raise AssemblerError(
            f"Cannot read {shown} ({error}); fix it, then run this again"
        ) from None


def with_trust(
    text: str, trust: Mapping[str, str], placed: Iterable[Placed], path: Path
) -> tuple[str, list[str]]:
    """Given config.toml's text, the trust of our hooks (`hooks.state` key -> hash), their
    places (in the same order) and the file's path, return the text with each trust in it
    (appended; a table of that key with another hash cut out first) and a line per trust.
    Raise AssemblerError if the text is not TOML or a table cannot be cut or added so."""
    shown = shlex.quote(str(path))
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise AssemblerError(
            f"{shown} is not TOML ({error}); fix it, then run this again"
        ) from None
    state = _table(_table(value, "hooks"), "state")
    said: list[str] = []
    cut: list[TablePath] = []
    adding: dict[str, str] = {}
    for (key, digest), place in zip(trust.items(), placed, strict=True):
        entry = state.get(key)
        what = f"the trust of the {place.event} hook"
        if isinstance(entry, dict) and entry.get("trusted_hash") == digest:
            said.append(f"already there: {what} in {shown}")
            continue
        if key in state:
            cut.append(("hooks", "state", key))
            said.append(f"replaced {what} in {shown} (it trusted another command)")
        else:
            said.append(f"added {what} to {shown}")
        adding[key] = digest
    if not adding:
        return text, said
    headers = ", ".join(table_header(("hooks", "state", key)) for key in adding)
    by_hand = f"add by hand: {headers}, as `assemble setup codex --all-projects` prints them"
    try:
        edited = without_tables(text, cut) if cut else text
    except TableCutError as error:
        raise AssemblerError(f"{shown}: {error}; {by_hand}") from None
    if edited.strip():
        edited = edited.rstrip("\n") + "\n\n"
    edited += "\n".join(trust_lines(adding)) + "\n"
    try:
        left = _table(_table(tomllib.loads(edited), "hooks"), "state")
    except tomllib.TOMLDecodeError:
        left = {}
    if any(_table(left, key).get("trusted_hash") != digest for key, digest in trust.items()):
        # Its [hooks] or [hooks.state] is written inline, or by dotted keys: no table can be
        # appended to it.
        raise AssemblerError(f"{shown}: the trust of the hooks cannot be appended to it; {by_hand}")
    return edited, said


def _features_off(text: str, path: Path) -> list[str]:
    """A line when config.toml turns hooks off (`[features] hooks = false`, or the older name)."""
    features = _table(tomllib.loads(text), "features")
    off = [name for name in (HOOKS_FEATURE, "codex_hooks") if features.get(name) is False]
    return [
        f"[features] {name} = false in {shlex.quote(str(path))} keeps Codex from running hooks: "
        "set it to true"
        for name in off
    ]


def all_projects_removal(assemble: Path, environ: Mapping[str, str]) -> Removal:
    """Given this install's `assemble` and the environment, return what takes the
    all-projects hooks (run by any `assemble`) out of the user's hooks.json, then the tables
    of config.toml that trust them (at any place in the file); the hooks of a workspace set up
    by name and their trust stay, and so does everything else."""
    home = codex_home(environ)
    hooks_json, config_toml = home / "hooks.json", home / "config.toml"
    trusted = _all_projects_trust(assemble, hooks_json)
    hooks = SettingsEdit(
        f"the SessionStart and UserPromptSubmit hooks that run `assemble hook {HOOK_HOST} "
        f"{ALL_PROJECTS_FLAG}`",
        hooks_json,
        lambda value: strip_settings_hooks(value, HOOK_HOST, None),
        follow_links=True,  # your own file, perhaps linked from your dotfiles
    )
    tables = TomlEdit(
        "the tables that trust those hooks",
        config_toml,
        lambda value: trust_tables(value, hooks_json, trusted),
        shown=_shown_trust(config_toml, hooks_json, trusted),
        follow_links=True,
    )
    state = shlex.quote(str(projects_home()))
    note = f"Each project's state stays in {state}:\ndelete it yourself if you want."
    return Removal("Codex", None, (hooks, tables), (note,))


def _all_projects_trust(assemble: Path, hooks_json: Path) -> set[tuple[str, str]]:
    """The (event label, hash) of each all-projects hook: this install's, and each one in
    hooks.json now (another `assemble`'s, or edited), read before the removal takes them."""
    trusted = {
        (_EVENT_LABELS[event], trusted_hash(event, group))
        for event, groups in all_projects_hooks(assemble).items()
        for group in groups
    }
    try:
        _, value = read_settings(hooks_json)
    except AssemblerError:
        return trusted
    for event, group, hook in our_handlers(value.get("hooks"), HOOK_HOST, None):
        if event in _EVENT_LABELS:
            try:
                trusted.add((_EVENT_LABELS[event], trusted_hash(event, {**group, "hooks": [hook]})))
            except (ValueError, TypeError):  # a timeout that is no number: Codex trusts none
                continue
    return trusted


def trust_tables(
    value: dict[str, Any], hooks_json: Path, trusted: set[tuple[str, str]]
) -> list[TablePath]:
    """Given config.toml's value, the path of hooks.json and the (event label, hash) of the
    all-projects hooks, return the key paths of the tables that trust those hooks in that
    file, at any place."""
    found: list[TablePath] = []
    for key, entry in _table(_table(value, "hooks"), "state").items():
        # "<hooks.json>:<event>:<group>:<handler>"; the file's path may hold colons itself
        parts = key.rsplit(":", 3)
        if len(parts) != 4 or parts[0] != str(hooks_json) or not isinstance(entry, dict):
            continue
        if (parts[1], entry.get("trusted_hash")) in trusted:
            found.append(("hooks", "state", key))
    return found


def _shown_trust(
    config_toml: Path, hooks_json: Path, trusted: set[tuple[str, str]]
) -> tuple[str, ...]:
    """The headers of the tables of ours in config.toml now, for the printout."""
    try:
        _, text = _read_toml(config_toml)
        found = trust_tables(tomllib.loads(text), hooks_json, trusted)
    except (AssemblerError, tomllib.TOMLDecodeError):
        return ("# (config.toml cannot be read now: look for [hooks.state.*] tables there)",)
    return tuple(table_header(path) for path in found) or ("# (none in it now)",)


def setup_links(config: Config, assemble: Path, environ: Mapping[str, str]) -> list[Link]:
    """Given the config, this install's `assemble` and the environment, return what `assemble
    doctor` checks of Codex here: its hooks for this workspace in `hooks.json`, and the
    program they run; none when Codex is not set up here and its hook never ran here."""
    every = config.is_project
    ran = any(run.host == HOOK_HOST for run in read_sent(config.state_dir))
    how = ["--all-projects", "--apply"] if every else ["--workspace", str(config.workspace)]
    setup = shlex.join([str(assemble), "setup", HOOK_HOST, *how])
    links = hook_links(
        "Codex",
        HOOK_HOST,
        [codex_home(environ) / "hooks.json"],
        None if every else config.workspace,
        ran_here=ran,
        fix=setup + ("" if every else "  (put the hooks and the trust it prints in place)"),
    )
    if every or not links:
        return links  # the all-projects hooks have no MCP server (a server serves one workspace)
    config_toml = codex_home(environ) / "config.toml"
    try:
        server = _table(
            _table(tomllib.loads(_read_toml(config_toml)[1]), "mcp_servers"), MCP_SERVER_NAME
        )
    except (AssemblerError, tomllib.TOMLDecodeError, RecursionError):
        server = {}
    found = [(str(config_toml), server)] if names_workspace(server, config.workspace) else []
    fix = f"{setup}  (the [mcp_servers.{MCP_SERVER_NAME}] table it prints, in {config_toml})"
    return [*links, server_link("the Codex MCP server", found, fix)]
