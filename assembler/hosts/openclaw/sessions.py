"""Where an OpenClaw install keeps a workspace's sessions: its state folder and config (JSON5),
each agent's workspace and session folder or store, and which files of a session folder are
sessions rather than the host's artifacts or the sessions it runs itself (cron jobs,
subagents, hooks, heartbeats).
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from assembler.fsutil import load_json, read_regular
from assembler.hosts.host import user_home

INDEX_NAME: Final = "sessions.json"


_CHECKPOINT_NAME = re.compile(
    r"^.+\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    r"\.jsonl$",
    re.IGNORECASE,
)


_ARCHIVE_NAME = re.compile(
    r"\.(?:deleted|reset|bak)\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{3})?Z$|"
    r"\.jsonl\.bak-\d+-\d+$|^sessions\.json\.bak\.\d+$"
)


# The index holds every session's settings (and, in some releases, its skills prompt): a
# larger file is not read, and the files are then told apart by their content alone.
_INDEX_MAX_BYTES = 64 * 1024 * 1024
# OpenClaw's config is a few kilobytes; more is not read.
_CONFIG_MAX_BYTES = 16 * 1024 * 1024


def is_session_artifact(name: str) -> bool:
    """Given a file name, return whether OpenClaw writes it beside its sessions without it being
    one: run traces, compaction checkpoint copies, archives and the index."""
    return (
        name.endswith((".trajectory.jsonl", ".trajectory-path.json"))
        or name == INDEX_NAME
        or bool(_CHECKPOINT_NAME.match(name))
        or bool(_ARCHIVE_NAME.search(name))
    )


def is_host_session_key(key: str) -> bool:
    """Given a session key, return whether the host runs that session rather than a human: a
    cron job, a spawned subagent, a webhook or mail hook, or an isolated heartbeat."""
    lowered = key.strip().lower()
    parts = lowered.split(":", 2)
    rest = parts[2] if len(parts) == 3 and parts[0] == "agent" else lowered
    return (
        rest.startswith(("cron:", "subagent:", "hook:"))
        or ":subagent:" in rest
        or rest.endswith(":heartbeat")
        or rest == "heartbeat"
    )


def host_session_files(folder: Path) -> frozenset[str]:
    """Given a session folder, return the names of the transcript files that its
    `sessions.json` gives to host sessions (see `is_host_session_key`); none when there is no
    readable index."""
    index = folder / INDEX_NAME
    try:
        # Not blocking (a named pipe there would stop every run), and bounded in size and depth.
        raw = read_regular(index, limit=_INDEX_MAX_BYTES, follow_links=True).data
        data = load_json(raw) if raw is not None else None
    except (OSError, ValueError):
        return frozenset()
    if not isinstance(data, dict):
        return frozenset()
    names: set[str] = set()
    for key, entry in data.items():
        if not isinstance(key, str) or not isinstance(entry, dict) or not is_host_session_key(key):
            continue
        session_file = entry.get("sessionFile")
        if isinstance(session_file, str) and session_file:
            names.add(os.path.basename(session_file))
        session_id = entry.get("sessionId")
        if isinstance(session_id, str) and session_id:
            names.add(f"{session_id}.jsonl")
    return frozenset(names)


STORE_NAME: Final = "openclaw-agent.sqlite"


_DEFAULT_AGENT: Final = "main"


_AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def state_dir(environ: Mapping[str, str]) -> Path:
    """Given the environment, return OpenClaw's state folder: `$OPENCLAW_STATE_DIR`, else
    `~/.openclaw` (its resolveStateDir; `$OPENCLAW_HOME` moves the home)."""
    override = environ.get("OPENCLAW_STATE_DIR", "").strip()
    if override:
        return Path(_expand_user(override, environ))
    home = _home(environ)
    new = home / ".openclaw"
    legacy = home / ".clawdbot"  # the name before the rename; used only when it is the one there
    return legacy if not new.exists() and legacy.is_dir() else new


def config_path(environ: Mapping[str, str], state: Path) -> Path:
    """Given the environment and the state folder, return OpenClaw's config file:
    `$OPENCLAW_CONFIG_PATH`, else `openclaw.json` (or the older `clawdbot.json`) in it."""
    override = environ.get("OPENCLAW_CONFIG_PATH", "").strip()
    if override:
        return Path(_expand_user(override, environ))
    for name in ("openclaw.json", "clawdbot.json"):
        if (state / name).is_file():
            return state / name
    return state / "openclaw.json"


def openclaw_sources(workspace: Path, environ: Mapping[str, str]) -> list[str]:
    """Given the workspace and the environment, return the existing transcript sources of the
    OpenClaw agents that serve it: each agent's session JSONL files and its SQLite store.

    The agents are those whose workspace (by OpenClaw's config, as OpenClaw resolves it) is
    this one; when the config cannot be read or names none, every agent of the state folder.
    """
    state = state_dir(environ)
    agents_dir = state / "agents"
    try:
        on_disk = sorted(
            entry.name
            for entry in os.scandir(agents_dir)
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".")
        )
    except OSError:
        on_disk = []
    config = _read_config(config_path(environ, state))
    agents = _agents_of(config, state, environ)
    ids = list(dict.fromkeys([*on_disk, *(agent.id for agent in agents.values())]))
    here = os.path.realpath(workspace)
    if config is not None:
        mine = [
            agent_id
            for agent_id in ids
            if os.path.realpath(_workspace_of(agent_id, config, agents, state, environ)) == here
        ]
        ids = mine or ids
    sources: list[str] = []
    for agent_id in ids:
        agent = agents.get(agent_id)
        sessions = _sessions_dir(agent_id, config, state, environ)
        if sessions.is_dir():
            sources.append(os.path.join(glob.escape(str(sessions)), "*.jsonl"))
        # The store is in the agent's folder (resolveAgentDir): its own `agentDir`, else
        # `<state>/agents/<id>/agent`.
        agent_dir = (
            Path(agent.agent_dir) if agent and agent.agent_dir else agents_dir / agent_id / "agent"
        )
        store = agent_dir / STORE_NAME
        if store.is_file():
            sources.append(glob.escape(str(store)))
    return sources


def openclaw_workspaces(environ: Mapping[str, str]) -> list[Path]:
    """Given the environment, return the workspace of every agent OpenClaw's config names (as
    OpenClaw resolves it), and the default agent's when it names none; none when there is no
    config. The folders that do not exist (an agent never run) are left out."""
    state = state_dir(environ)
    config = _read_config(config_path(environ, state))
    if config is None:
        return []
    agents = _agents_of(config, state, environ)
    ids = list(agents) or [_default_agent(agents)]
    found = [Path(_workspace_of(agent_id, config, agents, state, environ)) for agent_id in ids]
    return [folder for folder in dict.fromkeys(found) if folder.is_absolute() and folder.is_dir()]


@dataclass(frozen=True)
class _Agent:
    id: str
    workspace: str | None
    agent_dir: str | None
    default: bool


def _agents_of(
    config: Mapping[str, Any] | None, state: Path, environ: Mapping[str, str]
) -> dict[str, _Agent]:
    """Given the config, return its agent entries by id (`agents.list`, or `agents.entries`
    from 2026.9), in order."""
    agents_table = config.get("agents") if config else None
    if not isinstance(agents_table, dict):
        return {}
    raw: list[tuple[object, object]] = []
    if isinstance(agents_table.get("entries"), dict):
        raw = [(key, value) for key, value in agents_table["entries"].items()]
    elif isinstance(agents_table.get("list"), list):
        raw = [(None, value) for value in agents_table["list"]]
    agents: dict[str, _Agent] = {}
    for key, entry in raw:
        if not isinstance(entry, dict):
            continue
        name = entry.get("id", key)
        if not isinstance(name, str) or not name.strip():
            continue
        agent_id = _normalize_agent_id(name)
        workspace = entry.get("workspace")
        agent_dir = entry.get("agentDir")
        agents.setdefault(
            agent_id,
            _Agent(
                agent_id,
                _expand(workspace, environ) if isinstance(workspace, str) and workspace else None,
                _expand(agent_dir, environ) if isinstance(agent_dir, str) and agent_dir else None,
                entry.get("default") is True,
            ),
        )
    return agents


def _workspace_of(
    agent_id: str,
    config: Mapping[str, Any],
    agents: Mapping[str, _Agent],
    state: Path,
    environ: Mapping[str, str],
) -> str:
    """Given an agent, return its workspace as OpenClaw resolves it (resolveAgentWorkspaceDir):
    its own setting; else, for the default agent, `agents.defaults.workspace` or the default
    workspace; for another, `<agents.defaults.workspace>/<id>` or `<state>/workspace-<id>`."""
    agent = agents.get(agent_id)
    if agent is not None and agent.workspace:
        return agent.workspace
    defaults = config.get("agents", {}).get("defaults") if isinstance(config, dict) else None
    fallback = defaults.get("workspace") if isinstance(defaults, dict) else None
    fallback = _expand(fallback, environ) if isinstance(fallback, str) and fallback else None
    if agent_id == _default_agent(agents):
        return fallback or _default_workspace(state, environ)
    if fallback:
        return os.path.join(fallback, agent_id)
    return str(state / f"workspace-{agent_id}")


def _default_agent(agents: Mapping[str, _Agent]) -> str:
    if not agents:
        return _DEFAULT_AGENT
    marked = [agent.id for agent in agents.values() if agent.default]
    return marked[0] if marked else next(iter(agents))


def _default_workspace(state: Path, environ: Mapping[str, str]) -> str:
    """The default agent's workspace when the config names none (resolveDefaultAgentWorkspaceDir):
    `$OPENCLAW_WORKSPACE_DIR`, else `workspace` in the state folder (or the profile's)."""
    override = environ.get("OPENCLAW_WORKSPACE_DIR", "").strip()
    if override:
        return _expand_user(override, environ)
    if environ.get("OPENCLAW_STATE_DIR", "").strip():
        return str(state / "workspace")
    profile = environ.get("OPENCLAW_PROFILE", "").strip()
    if profile and profile.lower() != "default":
        return str(_home(environ) / f".openclaw-{profile}" / "workspace")
    return str(_home(environ) / ".openclaw" / "workspace")


def _sessions_dir(
    agent_id: str, config: Mapping[str, Any] | None, state: Path, environ: Mapping[str, str]
) -> Path:
    """An agent's session folder: `session.store`'s folder when the config names one (with
    `{agentId}` in it), else `<state>/agents/<id>/sessions`."""
    session = config.get("session") if config else None
    store = session.get("store") if isinstance(session, dict) else None
    if isinstance(store, str) and store.strip():
        return Path(_expand(store.replace("{agentId}", agent_id), environ)).parent
    return state / "agents" / agent_id / "sessions"


def _normalize_agent_id(value: str) -> str:
    lowered = value.strip().lower()
    if _AGENT_ID.match(lowered):
        return lowered
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", lowered).strip("-")[:64]
    return cleaned or _DEFAULT_AGENT


def _home(environ: Mapping[str, str]) -> Path:
    explicit = environ.get("OPENCLAW_HOME", "").strip()
    home = user_home(environ)
    if explicit:
        return Path(home + explicit[1:] if explicit.startswith("~") else explicit)
    return Path(home)


def _expand_user(path: str, environ: Mapping[str, str]) -> str:
    if path == "~" or path.startswith("~/"):
        return str(_home(environ)) + path[1:]
    return os.path.abspath(path)


_ENV_REFERENCE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


def _expand(value: str, environ: Mapping[str, str]) -> str:
    """A path from the config: `${VAR}` substituted (as OpenClaw does), `~` expanded."""
    substituted = _ENV_REFERENCE.sub(lambda m: environ.get(m.group(1), m.group(0)), value.strip())
    return _expand_user(substituted, environ)


def _read_config(path: Path) -> dict[str, Any] | None:
    """Given OpenClaw's config file, return its data; `{}` when there is none (every setting at
    its default), None when it cannot be read."""
    try:
        raw = read_regular(path, limit=_CONFIG_MAX_BYTES, follow_links=True).data
        if raw is None:
            return {}
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = load_json(text)
    except ValueError:
        try:
            data = load_json(_json5_to_json(text))
        except (ValueError, RecursionError):
            return None
    return data if isinstance(data, dict) else None


_JSON5_TOKEN = re.compile(
    r"""
      (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    | (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<comma>,(?=\s*(?://[^\n]*\s*|/\*.*?\*/\s*)*[}\]]))
    | (?P<key>(?<=[{,\s])[A-Za-z_$][\w$]*(?=\s*:))
    """,
    re.VERBOSE | re.DOTALL,
)


def _json5_to_json(text: str) -> str:
    """Given JSON5 as OpenClaw's config allows it (comments, trailing commas, unquoted keys,
    single-quoted strings), return the same data as JSON. Hex numbers, Infinity and multi-line
    strings are not supported: such a config reads as unreadable (every agent is then read)."""

    def replace(match: re.Match[str]) -> str:
        if match.group("string") is not None:
            token = match.group("string")
            if token.startswith("'"):
                inner = token[1:-1].replace("\\'", "'").replace('"', '\\"')
                return f'"{inner}"'
            return token
        if match.group("comment") is not None or match.group("comma") is not None:
            return ""
        return json.dumps(match.group("key"))

    return _JSON5_TOKEN.sub(replace, text)
