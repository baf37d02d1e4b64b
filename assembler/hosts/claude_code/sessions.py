"""Where Claude Code keeps a workspace's transcripts: its projects folder, and the sessions
the hook recorded in the state folder.

The agent can write the state folder, so the record is only a list of candidates. A recorded
transcript is read when it lies inside Claude Code's projects folder and its session belongs
to this workspace, as Claude Code itself wrote it down: the working folder (`cwd`) on the
transcript's own lines is the workspace or a folder inside it, or Claude Code's settings for
that folder (the user's `settings.json`, the folder's `.claude/settings.json` and
`.claude/settings.local.json`, the managed settings) run the hook for this workspace
(`assemble hook claude-code --workspace <this workspace>`, as `assemble setup claude-code`
prints it). A session of another project, named in a forged record, is not read.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from assembler.fsutil import (
    describe_kind,
    is_within,
    open_regular,
    read_regular,
    resolves_within,
)
from assembler.hosts.command_hooks import hook_commands
from assembler.hosts.host import expand_home, user_home
from assembler.hosts.session_cwd import HeadCwds, literal_cwd, named_cwd

# What the hook keeps in the state folder: {"<session id>": {"transcript_path", "cwd", "seen"}}.
HOOK_SESSIONS_NAME: Final = "claude-code-sessions.json"
# The settings every Claude Code on this machine reads, over the user's (Linux).
MANAGED_SETTINGS: Final = Path("/etc/claude-code/managed-settings.json")

_HOOK_SESSIONS_MAX_BYTES = 4 * 1024 * 1024
_SETTINGS_MAX_BYTES = 1024 * 1024
# How far into a transcript its first `cwd` is looked for: Claude Code writes it on every
# conversation line, so it comes within the first few lines; a huge first line (a long paste)
# is looked at through its start, where Claude Code puts `cwd`.
_HEAD_BYTES = 1024 * 1024
_CHUNK_BYTES = 16 * 1024
_LINE_PARSED_BYTES = 64 * 1024
# `"cwd": "<string>"` among a line's first keys, before any nested object or array.
_CWD_KEY = re.compile(rb'^\{[^{}\[\]]*?"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_CWDS: Final = HeadCwds()


def projects_dir(environ: Mapping[str, str]) -> Path:
    """Given the environment, return Claude Code's transcript folder:
    `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    return config_dir(environ) / "projects"


def config_dir(environ: Mapping[str, str]) -> Path:
    """Given the environment, return Claude Code's own folder: `$CLAUDE_CONFIG_DIR`, else
    `~/.claude`."""
    configured = environ.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        return Path(os.path.abspath(expand_home(configured, environ)))
    return Path(user_home(environ)) / ".claude"


# Claude Code cuts a project's folder name at this length and adds a digest of the whole path.
_PROJECT_NAME_MAX = 200


def project_folder_name(path: str) -> str:
    """Given a project's path, return the name of its folder under Claude Code's projects
    folder, as Claude Code makes it: each UTF-16 unit that is no ASCII letter or digit becomes
    `-`; a name over 200 units is cut there, then `-` and the base-36 digits of the path's
    32-bit string hash (`(h << 5) - h + unit`) follow."""
    name = "".join(
        c if c.isascii() and c.isalnum() else "-" * (2 if ord(c) > 0xFFFF else 1) for c in path
    )
    if len(name) <= _PROJECT_NAME_MAX:
        return name
    units = path.encode("utf-16-le", "surrogatepass")
    digest = 0
    for index in range(0, len(units), 2):
        digest = (digest * 31 + int.from_bytes(units[index : index + 2], "little")) & 0xFFFFFFFF
    signed = digest - (1 << 32) if digest >= 1 << 31 else digest
    number, digits = abs(signed), ""
    while True:
        number, rest = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
        if not number:
            break
    return f"{name[:_PROJECT_NAME_MAX]}-{digits}"


def auto_memory_dir(root: Path, environ: Mapping[str, str]) -> Path:
    """Given a project's folder (its git top level, as Claude Code finds it) and the
    environment, return the folder of the notes Claude Code's auto memory keeps for it:
    `<config dir>/projects/<project folder name>/memory`."""
    return projects_dir(environ) / project_folder_name(str(root)) / "memory"


def claude_code_sources(workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
    """Given the workspace, its state folder and the environment, return the Claude Code
    transcripts the hook recorded there that exist, resolve inside Claude Code's projects
    folder and belong to this workspace (see the module's docstring): the agent can write the
    state folder, so a path leading anywhere else, or to another project's session, is
    ignored."""
    found = recorded_transcripts(workspace, state_dir, environ)
    read = [
        glob.escape(os.path.normpath(path)) for path, skipped in found.candidates if skipped is None
    ]
    return list(dict.fromkeys(read))


def claude_code_served(workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
    """Given the same, return the transcripts the hook recorded there that exist and resolve
    inside Claude Code's projects folder, whether or not their session still belongs to the
    workspace: the sessions the hook served, whose delivery receipts are read
    (`delivery.report`). A session run outside the workspace belongs to it by the settings
    that run the hook, so it would drop out of `claude_code_sources` exactly when those hooks
    are taken out, the missed delivery the receipts are read to tell."""
    found = recorded_transcripts(workspace, state_dir, environ, any_folder=True)
    read = [
        glob.escape(os.path.normpath(path)) for path, skipped in found.candidates if skipped is None
    ]
    return list(dict.fromkeys(read))


@dataclass(frozen=True)
class Recorded:
    """What the hook's record in the state folder held: why it could not be read (`problem`,
    None when it was), and each transcript it names with why it is not read (None: read)."""

    record: Path
    root: Path  # Claude Code's projects folder, as resolved: only transcripts in it are read
    problem: str | None
    candidates: list[tuple[str, str | None]]


def recorded_transcripts(
    workspace: Path, state_dir: Path, environ: Mapping[str, str], *, any_folder: bool = False
) -> Recorded:
    """Given the workspace, its state folder and the environment, return the transcripts the
    hook recorded there, each with why it is not read (None when it is; see the module's
    docstring); with `any_folder`, a session's working folder is not asked about."""
    path = state_dir / HOOK_SESSIONS_NAME
    root = Path(os.path.realpath(projects_dir(environ)))
    sessions, problem = _hook_record(path)
    recorded = [
        entry.get("transcript_path") for entry in sessions.values() if isinstance(entry, dict)
    ]
    paths = [transcript for transcript in recorded if isinstance(transcript, str)]
    # The settings are read only when there is a session to ask about.
    belongs = Belonging(workspace, environ) if paths and not any_folder else None
    candidates = [
        (transcript, _skipped(transcript, root, belongs, any_folder)) for transcript in paths
    ]
    return Recorded(path, root, problem, candidates)


def _hook_record(path: Path) -> tuple[dict[Any, Any], str | None]:
    """Given the hook's record, return its sessions, and why it could not be read (or None)."""
    try:
        if os.lstat(path).st_size > _HOOK_SESSIONS_MAX_BYTES:
            return {}, f"larger than {_HOOK_SESSIONS_MAX_BYTES // (1024 * 1024)} MiB"
        data = read_regular(path).data
    except FileNotFoundError:
        return {}, "not there: the hook has not run for this workspace yet"
    except OSError as error:
        return {}, f"cannot be read ({error.strerror or error})"
    if data is None:
        return {}, "not a regular file"
    try:
        sessions = json.loads(data)
    except (ValueError, RecursionError):
        return {}, "not JSON"
    if not isinstance(sessions, dict):
        return {}, "not a JSON object"
    return sessions, None


def _skipped(
    transcript: str, root: Path, belongs: Belonging | None, any_folder: bool = False
) -> str | None:
    """Given a recorded transcript path, Claude Code's projects folder, the workspace's
    belonging test and whether any working folder will do, return why it is not read, or None
    when it is."""
    if not os.path.isabs(transcript):
        return "not an absolute path"
    candidate = Path(os.path.normpath(transcript))
    if candidate.suffix != ".jsonl":
        return "not a .jsonl file"
    if not resolves_within(candidate, root):
        return (
            f"outside {root}, the only folder a recorded path is read from; to read it, add "
            f'"{glob.escape(str(candidate.parent))}/*.jsonl" to transcripts.sources in your own '
            "config"
        )
    try:
        mode = os.stat(candidate).st_mode
    except OSError:
        return "no such file"
    if not stat.S_ISREG(mode):
        # Never opened: a named pipe there would stop the run.
        kind = describe_kind(mode)
        return kind if kind == "not a regular file" else f"{kind}, not a regular file"
    if any_folder:
        return None
    cwd = transcript_cwd(candidate)
    if cwd is None:
        return "its first lines name no working folder (cwd)"
    if belongs is None or not belongs(cwd):
        return (
            f"its session ran in {cwd}, not in this workspace, and no Claude Code settings of "
            "that folder run the hook for this workspace"
        )
    return None


def claude_code_looked(workspace: Path, state_dir: Path, environ: Mapping[str, str]) -> list[str]:
    """Given the workspace, its state folder and the environment, return where Claude Code's
    transcripts were looked for, one line each: the hook's record, the projects folder
    (`$CLAUDE_CONFIG_DIR` honoured), and each recorded transcript with why it is skipped."""
    found = recorded_transcripts(workspace, state_dir, environ)
    named = " (from CLAUDE_CONFIG_DIR)" if environ.get("CLAUDE_CONFIG_DIR", "").strip() else ""
    lines = [f"the sessions the hook recorded in {found.record}, read only inside {found.root}"]
    lines[0] += named
    if found.problem is not None:
        lines.append(f"{found.record}: {found.problem}")
    elif not found.candidates:
        lines.append(f"{found.record}: no session recorded yet")
    for path, skipped in found.candidates:
        lines.append(f"recorded {path}: " + ("read" if skipped is None else f"skipped, {skipped}"))
    return lines


class Belonging:
    """Whether a session's working folder belongs to one workspace: it is the workspace or
    inside it, or Claude Code's settings for it run the hook for this workspace. Settings are
    read once per folder asked about (one call of `claude_code_sources`)."""

    def __init__(self, workspace: Path, environ: Mapping[str, str]) -> None:
        self.workspace = os.path.realpath(workspace)
        self.environ = environ
        self._user = _hook_workspaces(config_dir(environ) / "settings.json", environ)
        self._user |= _hook_workspaces(MANAGED_SETTINGS, environ)
        self._asked: dict[str, bool] = {}

    def __call__(self, cwd: str | None) -> bool:
        """Given a session's working folder as Claude Code recorded it (None: none found),
        return whether the session belongs to the workspace."""
        if cwd is None or not os.path.isabs(cwd):
            return False
        if cwd not in self._asked:
            self._asked[cwd] = self._belongs(cwd)
        return self._asked[cwd]

    def _belongs(self, cwd: str) -> bool:
        real = os.path.realpath(cwd)
        if is_within(real, self.workspace):
            return True
        named = set(self._user)
        for name in ("settings.json", "settings.local.json"):
            named |= _hook_workspaces(Path(real) / ".claude" / name, self.environ)
        return self.workspace in named


def _hook_workspaces(settings: Path, environ: Mapping[str, str]) -> set[str]:
    """Given a Claude Code settings file, return the workspaces (resolved) its command hooks
    run `assemble hook claude-code --workspace W` for; none when it is missing, too large,
    a link or not JSON."""
    try:
        if os.lstat(settings).st_size > _SETTINGS_MAX_BYTES:
            return set()
        data = read_regular(settings).data
        value: Any = json.loads(data) if data is not None else None
    except (OSError, ValueError, RecursionError):
        return set()
    hooks = value.get("hooks") if isinstance(value, dict) else None
    if not isinstance(hooks, dict):
        return set()
    found: set[str] = set()
    for command in hook_commands(hooks):
        named = _hook_workspace(command)
        if named is not None:
            found.add(os.path.realpath(expand_home(named, environ)))
    return found


def _hook_workspace(command: str) -> str | None:
    """Given a hook's command line, return the `--workspace` of the `hook claude-code` it runs,
    or None when it runs no such hook or names no absolute workspace."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for start in range(len(words) - 1):
        if words[start : start + 2] != ["hook", "claude-code"]:
            continue
        rest = words[start + 2 :]
        for index, word in enumerate(rest):
            if word == "--workspace" and index + 1 < len(rest):
                value = rest[index + 1]
            elif word.startswith("--workspace="):
                value = word.partition("=")[2]
            else:
                continue
            return value if value.startswith(("/", "~")) else None
    return None


def transcript_cwd(path: Path) -> str | None:
    """Given a Claude Code transcript, return the working folder its first conversation line
    names (`cwd`), or None when its first MiB names none or it cannot be read."""
    return _CWDS.get(path, _first_cwd)


def _first_cwd(path: Path) -> str | None:
    """Given a transcript, return the first `cwd` of its lines within its first MiB."""
    # Not blocking, and only a regular file: a named pipe there would stop every run.
    with os.fdopen(open_regular(path, follow_links=True), "rb") as handle:
        pending = b""
        skipping = False  # inside a long line whose start named no `cwd`
        total = 0
        while total < _HEAD_BYTES:
            chunk = handle.read(_CHUNK_BYTES)
            if not chunk:
                ended = not skipping and pending
                return _line_cwd(pending, whole=True) if ended else None
            total += len(chunk)
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                if skipping:  # the end of the long line
                    skipping = False
                    continue
                found = _line_cwd(line, whole=True)
                if found is not None:
                    return found
            if skipping:
                pending = b""
            elif len(pending) > _LINE_PARSED_BYTES:
                # A long line (a long paste): its start tells, the rest of it is skipped.
                found = _line_cwd(pending, whole=False)
                if found is not None:
                    return found
                skipping, pending = True, b""
    return None if skipping else _line_cwd(pending, whole=False)


def _line_cwd(line: bytes, *, whole: bool) -> str | None:
    """Given a transcript line (or the start of one, `whole` False), return its `cwd`."""
    line = line.strip()
    if whole and len(line) <= _LINE_PARSED_BYTES:
        try:
            value: Any = json.loads(line)
        except (ValueError, RecursionError):
            return None
        return named_cwd(value.get("cwd")) if isinstance(value, dict) else None
    found = _CWD_KEY.match(line)
    return literal_cwd(found.group(1)) if found is not None else None
