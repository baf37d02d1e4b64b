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
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assembler.hosts.codex.sessions import codex_home
from assembler.hosts.command_hooks import strip_our_hooks
from assembler.hosts.mcp.setup import MCP_SERVER_NAME, names_workspace
from assembler.hosts.removal import Removal, SettingsEdit, TomlEdit, table_header
from assembler.hosts.setup import common_context, indented, render_setup
from assembler.hosts.toml_tables import TablePath

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
        lines = ["[features]", f"{HOOKS_FEATURE} = true", ""]
        for key, digest in self.trust.items():
            lines += [
                table_header(("hooks", "state", key)),
                f"trusted_hash = {toml_string(digest)}",
            ]
            lines.append("")
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
    # Codex cuts a hook's context over about 2,500 tokens to a preview and a file; the hook
    # caps what it sends itself (`hosts.handoff.block_limit`), so the model gets it whole.
    handler = {"type": "command", "command": hook_command, "additionalContextLimit": 0}
    groups: dict[str, list[dict[str, Any]]] = {
        "SessionStart": [{"matcher": AFTER_LOSS, "hooks": [handler]}],
        "UserPromptSubmit": [{"hooks": [handler]}],
    }
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
