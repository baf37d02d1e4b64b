"""One daemon for every workspace of the user (`assemble daemon --all`): each workspace set up
on the machine (`assemble setup`, `assemble systemd install`), each agent's workspace the
hosts' own config names (OpenClaw's agents), and each project a hook of the all-projects
setup announced, served by one process, with one copy of the models in memory.

Each workspace gets a `service.Daemon` of its own on a thread: its lock, its socket, its
watches and its schedule, so the hooks and `--once` find it as they find a daemon of one
workspace. A workspace idle for `IDLE_AFTER` drops its index and mood history from memory
(`Daemon.rest_if_idle`); its next event (a transcript, a note, a hook's nudge or prompt)
opens them again. The workspaces are looked for again every `SCAN_EVERY`: a project a hook
announces is served within seconds. A workspace that another daemon serves, or whose config is
broken, is left out, said once in the log and in the fleet's record, and tried again later.

What is served is recorded in `<user state dir>/daemon-all.json` for `assemble status`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

from assembler.assembly.hosts import Hosts
from assembler.config.files import load_config, user_state_dir
from assembler.config.projects import (
    ProjectNotServed,
    announced_projects,
    project_config,
    registered_workspaces,
)
from assembler.config.schema import Config
from assembler.daemon.lock import DaemonLock
from assembler.daemon.service import Daemon, sd_notify, watchdog_period
from assembler.errors import AssemblerError
from assembler.fsutil import atomic_write, real_dir

log = logging.getLogger(__name__)

# A workspace with no event for this long drops its index from memory.
IDLE_AFTER = timedelta(hours=3)
# How often the workspaces are looked for again, and resting ones checked.
SCAN_EVERY = timedelta(seconds=2)
# How long a workspace that could not be served waits before it is tried again.
RETRY_AFTER = timedelta(minutes=1)
RECORD_NAME = "daemon-all.json"
# How long a stopping fleet waits for each workspace's daemon.
STOP_WAIT_S = 30.0


@dataclass(frozen=True)
class Wanted:
    """A workspace the fleet should serve, and why: "set up", "project", or a host's name."""

    folder: Path
    kind: str


@dataclass
class _Served:
    wanted: Wanted
    daemon: Daemon
    thread: threading.Thread
    since: datetime
    failed: list[str] = field(default_factory=list)


def fleet_record_path() -> Path:
    """Return where the fleet records what it serves."""
    return user_state_dir() / RECORD_NAME


class Fleet:
    """Serves every workspace of the user from one process until stopped."""

    def __init__(
        self,
        *,
        hosts: Hosts,
        config_path: str | None = None,
        environ: Mapping[str, str] = os.environ,
        idle_after: timedelta = IDLE_AFTER,
        scan_every: timedelta = SCAN_EVERY,
        retry_after: timedelta = RETRY_AFTER,
    ) -> None:
        self.hosts = hosts
        self.config_path = config_path
        self.environ = environ
        self.idle_after = idle_after
        self.scan_every = scan_every
        self.retry_after = retry_after
        self.served: dict[Path, _Served] = {}
        # Workspaces left out, with why and when they may be tried again (monotonic).
        self.left_out: dict[Path, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._recorded: str | None = None
        self.started = datetime.now(UTC)

    # -- what to serve --------------------------------------------------------------------

    def wanted(self) -> list[Wanted]:
        """Return the workspaces to serve now, each once (a set-up one before a project)."""
        found: dict[str, Wanted] = {}

        def add(folder: Path, kind: str) -> None:
            found.setdefault(os.path.realpath(folder), Wanted(folder, kind))

        for folder in registered_workspaces():
            add(folder, "set up")
        for host in self.hosts:
            for folder in host.workspaces(self.environ):
                add(folder, getattr(host, "label", "host"))
        for folder in announced_projects():
            add(folder, "project")
        return list(found.values())

    def config_of(self, wanted: Wanted) -> Config:
        """Given a workspace to serve, return its config. Raise ProjectNotServed, ConfigError
        or WorkspaceError when it cannot be served."""
        if wanted.kind != "project":
            return load_config(wanted.folder, self.config_path)
        notes = [n for host in self.hosts for n in host.project_notes(wanted.folder, self.environ)]
        return project_config(wanted.folder, self.config_path, notes)

    # -- running --------------------------------------------------------------------------

    def run(self) -> None:
        """Take the fleet's lock, serve until SIGTERM/SIGINT (or `stop()`), then stop every
        workspace's daemon. Raise DaemonRunningError if another fleet runs."""
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {
                sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
            }
        try:
            lock = DaemonLock.acquire(user_state_dir())
        except BaseException:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            raise
        try:
            log.info("daemon %d serving every workspace of the user", os.getpid())
            self.scan()
            self._wait_ready()
            sd_notify(
                f"READY=1\nSTATUS=serving {len(self.served)} workspaces\nMAINPID={os.getpid()}"
            )
            period = watchdog_period()  # None: systemd watches nothing, so nothing is sent
            pinged = time.monotonic()
            while not self._stop.wait(self.scan_every.total_seconds()):
                self.scan()
                if period is not None and time.monotonic() - pinged >= period:
                    pinged = time.monotonic()
                    self._ping_watchdog()
        finally:
            sd_notify("STOPPING=1")
            self._stop_all()
            self._record()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            lock.release()
            log.info("stopped serving %d workspaces", len(self.served))

    def _ping_watchdog(self) -> None:
        """Tell systemd's watchdog the service lives while every workspace's daemon is well
        (one still loading its index is not counted): one wedged assembly gets the whole
        service restarted, as it would a daemon of one workspace."""
        ready = [s.daemon for s in self.served.values() if s.daemon.ready.is_set()]
        if all(daemon.healthy() for daemon in ready):
            sd_notify("WATCHDOG=1")

    def _wait_ready(self) -> None:
        """Wait until the daemons of the first scan serve (their models loaded), or ended."""
        for served in list(self.served.values()):
            while not self._stop.is_set() and served.thread.is_alive():
                if served.daemon.ready.wait(0.2):
                    break

    def stop(self) -> None:
        """Ask the fleet to stop (thread-safe)."""
        self._stop.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("%s received, stopping", signal.Signals(signum).name)
        self.stop()

    def scan(self) -> None:
        """Serve each wanted workspace not served yet, forget those whose daemon ended, rest
        the idle ones, and record what is served."""
        for path, served in list(self.served.items()):
            if not served.thread.is_alive():
                why = served.failed[0] if served.failed else "its daemon stopped"
                log.warning("%s is no longer served: %s", served.wanted.folder, why)
                del self.served[path]
                self.left_out[path] = (why, time.monotonic() + self.retry_after.total_seconds())
        for wanted in self.wanted():
            key = Path(os.path.realpath(wanted.folder))
            if key in self.served or self._stop.is_set():
                continue
            left = self.left_out.get(key)
            if left is not None and time.monotonic() < left[1]:
                continue
            self._serve(key, wanted)
        for served in self.served.values():
            served.daemon.rest_if_idle(self.idle_after.total_seconds())
        self._record()

    def _serve(self, key: Path, wanted: Wanted) -> None:
        retry = time.monotonic() + self.retry_after.total_seconds()
        try:
            config = self.config_of(wanted)
        except ProjectNotServed as error:
            self._leave_out(key, str(error), retry, level=logging.INFO)
            return
        except AssemblerError as error:
            self._leave_out(key, str(error).splitlines()[0], retry)
            return
        daemon = Daemon(config, hosts=self.hosts, notify=False)
        failed: list[str] = []
        thread = threading.Thread(
            target=self._run_one,
            args=(daemon, wanted.folder, failed),
            name=f"workspace {key.name}",
            daemon=True,
        )
        served = _Served(wanted, daemon, thread, datetime.now(UTC), failed)
        self.served[key] = served
        self.left_out.pop(key, None)
        served.thread.start()
        log.info("serving %s (%s)", wanted.folder, wanted.kind)

    def _leave_out(self, key: Path, why: str, retry: float, level: int = logging.WARNING) -> None:
        if self.left_out.get(key, ("",))[0] != why:
            log.log(level, "not serving %s: %s", key, why)
        self.left_out[key] = (why, retry)

    @staticmethod
    def _run_one(daemon: Daemon, folder: Path, failed: list[str]) -> None:
        """Run one workspace's daemon until it stops; why it failed, if it did, goes into
        `failed` (its record's)."""
        try:
            daemon.run()
        except AssemblerError as error:
            failed.append(str(error).splitlines()[0])
        except Exception as error:
            log.exception("the daemon of %s failed", folder)
            failed.append(f"{type(error).__name__}: {error}")

    def _stop_all(self) -> None:
        for served in self.served.values():
            served.daemon.stop()
        deadline = time.monotonic() + STOP_WAIT_S
        for served in self.served.values():
            served.thread.join(timeout=max(deadline - time.monotonic(), 0.1))

    # -- the record -----------------------------------------------------------------------

    def record(self) -> dict[str, Any]:
        """Return what the fleet serves and leaves out, as `assemble status` reads it."""
        running = not self._stop.is_set()
        return {
            "pid": os.getpid(),
            "started": self.started.isoformat(timespec="seconds"),
            "running": running,
            "workspaces": [
                {
                    "workspace": str(served.wanted.folder),
                    "kind": served.wanted.kind,
                    "state_dir": str(served.daemon.config.state_dir),
                    "output": str(served.daemon.config.output_path),
                    "ttl_minutes": served.daemon.config.output.ttl_minutes,
                    "resting": served.daemon.resting,
                    "since": served.since.isoformat(timespec="seconds"),
                }
                for served in self.served.values()
                if running and served.thread.is_alive()
            ],
            "left_out": [
                {"workspace": str(path), "why": why} for path, (why, _) in self.left_out.items()
            ],
        }

    def _record(self) -> None:
        text = json.dumps(self.record(), indent=1) + "\n"
        if text == self._recorded:
            return
        try:
            atomic_write(real_dir(user_state_dir()) / RECORD_NAME, text)
            self._recorded = text
        except (AssemblerError, OSError) as error:
            log.warning("cannot record what is served (%s)", error)


def read_fleet_record() -> dict[str, Any] | None:
    """Return the fleet's record, or None when there is none or it cannot be read."""
    try:
        value = json.loads(fleet_record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def run_fleet(hosts: Hosts, config_path: str | None, environ: Mapping[str, str]) -> Fleet:
    """Given the hosts, --config (or None) and the environment, serve every workspace until
    SIGTERM or SIGINT; return the fleet. Raise DaemonRunningError if another one runs."""
    fleet = Fleet(hosts=hosts, config_path=config_path, environ=environ)
    fleet.run()
    return fleet
