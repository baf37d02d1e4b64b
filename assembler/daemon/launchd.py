"""The launchd user agent on macOS: the daemon's plist for this install's `assemble` and one
workspace (or every workspace, `assemble daemon --all`), written to ~/Library/LaunchAgents and
loaded with `launchctl`, or the commands that load it named where there is no `launchctl` to
run.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.config.files import user_log_dir
from assembler.daemon.systemd import assemble_executable, moved_state_dir
from assembler.errors import AssemblerError
from assembler.fsutil import atomic_write

LABEL = "com.scratchpad-assembler.daemon"
LOG_NAME = "daemon.log"

# The comment every plist we write carries after its header: how a plist of ours is told from
# one the user wrote under the same name. A comment, not a key: launchd reads every key.
_OURS = b"<!-- Written by `assemble launchd install`"
_MARK = _OURS + b"; `assemble launchd uninstall` removes it. -->\n"

# How long one launchctl call may take (bootout waits for the daemon's SIGTERM to end it).
LAUNCHCTL_TIMEOUT_S = 60.0
# What launchctl exits with when the service is not loaded: ESRCH ("No such process") or 113
# ("Could not find service").
_NOT_LOADED = frozenset({3, 113})
# Right after a bootout the old job may still be exiting, and bootstrap fails with EIO (5)
# until it is gone; a bootstrap of a bad plist fails the same way, so the tries are few.
_STILL_EXITING = 5
_BOOTSTRAP_TRIES = 10
_BOOTSTRAP_PAUSE_S = 0.5


def launch_agents_dir() -> Path:
    """Return the folder of the user's own agents: ~/Library/LaunchAgents."""
    return Path.home() / "Library" / "LaunchAgents"


def _domain(uid: int | None) -> str:
    return f"gui/{os.getuid() if uid is None else uid}"


def render_plist(
    *,
    workspace: Path | None,
    assemble: Path,
    log_dir: Path,
    config: Path | None = None,
    config_home: Path | None = None,
    state_home: Path | None = None,
    home: Path | None = None,
) -> bytes:
    """Given the workspace (None: every workspace, `assemble daemon --all`), the `assemble`
    executable, the folder of the log, an optional config file, optional folders of the user's
    config and state to pin, and the home folder (default: the user's), return the agent's
    plist."""
    if workspace is None:
        # No workspace to start in: the daemon of every workspace starts in the home folder.
        arguments = [str(assemble), "daemon", "--all"]
        folder = home or Path.home()
    else:
        arguments = [str(assemble), "daemon", "--workspace", str(workspace)]
        folder = workspace
    if config is not None:
        arguments += ["--config", str(config)]
    log = str(log_dir / LOG_NAME)
    agent: dict[str, Any] = {
        "Label": LABEL,
        "ProgramArguments": arguments,
        "WorkingDirectory": str(folder),
        # Started when loaded: at install, and at every login.
        "RunAtLoad": True,
        # A crash or a failed start brings it back; a clean stop (SIGTERM) does not.
        "KeepAlive": {"SuccessfulExit": False},
        # At most one start every 10 s, as systemd's RestartSec=: a daemon that fails at once
        # (another holds the workspace's lock) does not spin.
        "ThrottleInterval": 10,
        # Background work: leave the CPU and the disk to the agent host and the human.
        "Nice": 10,
        "LowPriorityIO": True,
        # The daemon logs on stderr; launchd keeps no journal of its own.
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    environment: dict[str, str] = {}
    if config_home is not None:
        # Where the daemon finds your own config (the folder `assemble launchd install` saw).
        environment["ASSEMBLER_CONFIG_HOME"] = str(config_home)
    if state_home is not None:
        # Where it keeps its state: launchd does not pass this shell's $XDG_STATE_HOME on.
        environment["ASSEMBLER_STATE_HOME"] = str(state_home)
    if environment:
        agent["EnvironmentVariables"] = environment
    head, plist_tag, rest = plistlib.dumps(agent, sort_keys=False).partition(b"<plist")
    return head + _MARK + plist_tag + rest


@dataclass(frozen=True)
class Ran:
    """A launchctl command that ran, as a shell line, and whether it found nothing loaded."""

    line: str
    not_loaded: bool = False


@dataclass(frozen=True)
class Installed:
    """The plist written (or left as it was), its log, and the launchctl commands run, or to
    run where there is no launchctl."""

    plist: Path
    written: bool
    log: Path
    ran: list[Ran]
    to_run: list[str]


@dataclass(frozen=True)
class Uninstalled:
    """The plist removed, or kept as not ours (or none there), and the launchctl command run,
    or to run where there is no launchctl."""

    plist: Path
    removed: bool
    kept: bool
    ran: list[Ran]
    to_run: list[str]


def _first_line(result: subprocess.CompletedProcess[str]) -> str:
    for line in (result.stderr or "").splitlines() + (result.stdout or "").splitlines():
        if line.strip():
            return line.strip()
    return f"exit status {result.returncode}"


def _launchctl(program: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    line = shlex.join(["launchctl", *args])
    try:
        return subprocess.run(
            [program, *args],
            capture_output=True,
            text=True,
            timeout=LAUNCHCTL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise AssemblerError(
            f"{line} did not finish within {LAUNCHCTL_TIMEOUT_S:.0f} s; run it yourself and see "
            "what it says"
        ) from error
    except OSError as error:
        raise AssemblerError(
            f"Cannot run {program} ({error.strerror or error}); run {line} yourself"
        ) from error


def install_agent(
    *,
    workspace: Path | None,
    config: Path | None = None,
    config_home: Path | None = None,
    force: bool = False,
    agent_dir: Path | None = None,
    log_dir: Path | None = None,
    assemble: Path | None = None,
    uid: int | None = None,
    which: Callable[[str], str | None] = shutil.which,
    sleep: Callable[[float], None] = time.sleep,
) -> Installed:
    """Given the workspace (None: every workspace), the config file the daemon must read (passed
    as --config) or the user's config folder it must find its config in, write the agent's
    plist (with the user's state folder pinned when this environment moves it) to the user's
    agent folder (default: `launch_agents_dir()`), its log folder (default: macOS's
    `user_log_dir`), then, when `which` finds launchctl, boot out the agent loaded under the
    same label and bootstrap this one in the user's GUI domain; return what was written and
    run, or the commands to run.

    Raise AssemblerError if a plist of the same name exists with other content and `force` is
    false, if a folder cannot be written, or if launchctl fails.
    """
    folder = agent_dir or launch_agents_dir()
    logs = log_dir or user_log_dir("darwin")
    path = folder / f"{LABEL}.plist"
    data = render_plist(
        workspace=workspace,
        assemble=assemble or assemble_executable(),
        log_dir=logs,
        config=config.absolute() if config else None,
        config_home=config_home.absolute() if config_home else None,
        state_home=moved_state_dir(),
    )
    try:
        existing = path.read_bytes() if path.is_file() else None
    except OSError as error:
        raise AssemblerError(
            f"Cannot read {path} ({error.strerror or error}); check the file's permissions"
        ) from error
    if existing is not None and existing != data and not force:
        raise AssemblerError(
            f"{path} already exists with other content (the agent of another workspace or of "
            "every workspace, or edited by hand); pass --force to replace it"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # launchd opens the log itself and does not create its folder.
        logs.mkdir(parents=True, exist_ok=True)
        if existing != data:
            atomic_write(path, data)
    except AssemblerError:  # a link in its place, a full disk: its own message says the fix
        raise
    except OSError as error:
        raise AssemblerError(
            f"Cannot write {path} or the log folder {logs} ({error.strerror or error}); check "
            "both folders' permissions"
        ) from error
    domain = _domain(uid)
    bootout = ["bootout", f"{domain}/{LABEL}"]
    bootstrap = ["bootstrap", domain, str(path)]
    lines = [shlex.join(["launchctl", *args]) for args in (bootout, bootstrap)]
    installed = Installed(path, existing != data, logs / LOG_NAME, [], [])
    program = which("launchctl")
    if program is None:
        installed.to_run.extend(lines)
        return installed
    # The agent loaded under this label (an earlier install) runs the old plist until booted
    # out; bootstrap alone would fail while it is loaded.
    out = _launchctl(program, bootout)
    if out.returncode != 0 and out.returncode not in _NOT_LOADED:
        raise AssemblerError(
            f"{lines[0]} failed ({_first_line(out)}); {path} is written: stop the running agent, "
            f"then run {lines[1]}"
        )
    installed.ran.append(Ran(lines[0], not_loaded=out.returncode != 0))
    for attempt in range(_BOOTSTRAP_TRIES):
        result = _launchctl(program, bootstrap)
        if result.returncode != _STILL_EXITING or out.returncode != 0:
            break
        if attempt + 1 < _BOOTSTRAP_TRIES:
            sleep(_BOOTSTRAP_PAUSE_S)
    if result.returncode != 0:
        raise AssemblerError(
            f"{lines[1]} failed ({_first_line(result)}); check {path} with plutil -lint, and "
            "run it from a session logged in at the Mac (the gui domain is its user's)"
        )
    installed.ran.append(Ran(lines[1]))
    return installed


def _is_ours(path: Path) -> bool:
    """Given the plist's path, return whether `install_agent` wrote it (its comment is in the
    first lines; a link, or a plist rewritten by another program, is not ours)."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as handle:
        head = [handle.readline(1024) for _ in range(4)]
    return any(line.startswith(_OURS) for line in head)


def uninstall_agent(
    *,
    agent_dir: Path | None = None,
    uid: int | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Uninstalled:
    """Given the user's agent folder (default: `launch_agents_dir()`), boot out the agent of
    ours (when `which` finds launchctl) and remove the plist that `install_agent` wrote; a plist
    of the same name that it did not write is kept and its agent left alone. Return what was
    removed, kept and run, or the command to run.

    Raise AssemblerError if launchctl fails to stop the agent (the plist is then kept, so that
    uninstall can run again) or the plist cannot be removed.
    """
    folder = agent_dir or launch_agents_dir()
    path = folder / f"{LABEL}.plist"
    try:
        exists, ours = path.exists() or path.is_symlink(), _is_ours(path)
    except OSError as error:
        raise AssemblerError(
            f"Cannot read {path} ({error.strerror or error}); check the file's permissions"
        ) from error
    if exists and not ours:
        return Uninstalled(path, removed=False, kept=True, ran=[], to_run=[])
    bootout = ["bootout", f"{_domain(uid)}/{LABEL}"]
    line = shlex.join(["launchctl", *bootout])
    uninstalled = Uninstalled(path, removed=exists, kept=False, ran=[], to_run=[])
    program = which("launchctl")
    if program is None:
        uninstalled.to_run.append(line)
    else:
        out = _launchctl(program, bootout)
        if out.returncode != 0 and out.returncode not in _NOT_LOADED:
            raise AssemblerError(
                f"{line} failed ({_first_line(out)}); {path} is kept: stop the agent, then run "
                "assemble launchd uninstall again"
            )
        uninstalled.ran.append(Ran(line, not_loaded=out.returncode != 0))
    if exists:
        try:
            path.unlink()
        except OSError as error:
            raise AssemblerError(
                f"Cannot remove {path} ({error.strerror or error}); remove it yourself"
            ) from error
    return uninstalled
