"""The daemon: what triggers an assembly, and the one process per workspace that runs them.

Triggers: an APScheduler interval job (`daemon.interval`, paused outside
`daemon.active_hours`); watchdog observers on the transcript sources, the memory files,
SCRATCHPAD.md (agent edits), the sections journal and a nudge file the hooks touch, debounced
(`daemon.debounce`) so a burst of writes gives one assembly; and a refresh shortly before the
file's TTL lapses (`daemon.refresh_before`), so a live daemon never leaves a stale file. Its own
writes do not trigger it again. The memory index and its model stay loaded between runs:
they are loaded at start, before the first change arrives, and `assemble --once` runs in the
daemon with them when it listens (`daemon.control`), one assembly at a time; so does the
block a host's hook asks for with the prompt about to be sent (`serve_prompt`).

The decisions (active hours, debounce, refresh time) are the pure `ActiveHours`, `Debouncer`
and `Planner`, given the clock; `Daemon` only wires them to APScheduler, watchdog, signals and
systemd. The lock and the nudge a hook sends are `daemon.lock`'s: a hook does not load this
module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import logging
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from assembler.assembly.draft import memory_for
from assembler.assembly.hosts import Hosts
from assembler.assembly.log import record_run
from assembler.assembly.pipeline import run_for_prompt, run_once
from assembler.assembly.publish import ready_parts
from assembler.clock import local_timezone
from assembler.config.schema import Config
from assembler.daemon.control import (
    ControlServer,
    NotServed,
    OnceRequest,
    PromptAnswer,
    PromptRequest,
    captured_log,
    options_digest,
)
from assembler.daemon.lock import NUDGE_NAME, DaemonLock
from assembler.daemon.output import LogLine, OnceOutput, once_output
from assembler.delivery.upgrades import UpgradeWatch
from assembler.errors import AssemblerError, Problem
from assembler.memory.index import stopping_syncs
from assembler.memory.lifecycle import WarmMemory
from assembler.mood.history import KeptHistory
from assembler.mood.model import load_mood_model
from assembler.pad.journal import JOURNAL_NAME, journal_path
from assembler.transcripts.message import Message, message_text
from assembler.transcripts.read import default_sources, sources_to_read

if TYPE_CHECKING:
    from assembler.assembly.cap import Assembly

log = logging.getLogger("assembler.daemon")

# A stream of writes that never pauses still gets an assembly every this many debounce periods.
MAX_DEFER_FACTOR = 10
# An assembly running longer than this is taken as hung: the systemd watchdog pings stop, so
# systemd restarts the service. A first index of a large memory on a slow CPU takes minutes.
HUNG_AFTER = timedelta(minutes=15)
# How often the hosts' default sources are looked for anew: a store or session file that
# appears where no folder was watched yet is read within this.
SOURCES_CHECK = timedelta(seconds=20)
# systemd fails a start that takes longer than TimeoutStartSec (90 s by default), and a first
# index of a large memory can: while loading, the daemon asks for this much more, this often.
EXTEND_START = timedelta(minutes=1)
EXTEND_EVERY = timedelta(seconds=20)
# A prompt request waits this long for an assembly in progress, then is declined: its caller
# (a hook before a prompt) has a budget of about 150 ms in all. A caller that says how long it
# waits (`wait_ms`) gets that, less PROMPT_ANSWER_MARGIN for the answer itself.
PROMPT_LOCK_WAIT = timedelta(milliseconds=100)
PROMPT_ANSWER_MARGIN = timedelta(milliseconds=50)
_GLOB_CHARS = frozenset("*?[")


# --- Scheduling decisions (pure, the clock is an argument) -----------------------------------


@dataclass(frozen=True)
class ActiveHours:
    """Local hours in which scheduled assemblies run; `end` before `start` wraps past midnight."""

    start: dt_time
    end: dt_time

    def contains(self, now: datetime) -> bool:
        """Given a local time, return whether it falls within the hours (start included)."""
        moment = now.time()
        if self.start < self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


class Debouncer:
    """Turns a burst of changes into one run: each change moves the run to `delay` after it,
    but never further than `max_defer` after the first change of the burst.
    """

    def __init__(self, delay: timedelta, max_defer: timedelta | None = None) -> None:
        self.delay = delay
        self.max_defer = max_defer if max_defer is not None else delay * MAX_DEFER_FACTOR
        self._first: datetime | None = None

    def change(self, now: datetime) -> datetime:
        """Given the time of a change, return when the run should happen."""
        if self._first is None:
            self._first = now
        return min(now + self.delay, self._first + self.max_defer)

    def fired(self) -> None:
        """Start a new burst: the run the last changes asked for is starting."""
        self._first = None

    @property
    def pending(self) -> bool:
        return self._first is not None


def refresh_time(updated: datetime, expires: datetime, before: timedelta) -> datetime:
    """Given when the file was written, when it expires and how long before that to refresh,
    return when to re-render it. The margin is at most half the TTL, so a short TTL cannot
    make the daemon re-render in a tight loop.
    """
    return expires - min(before, (expires - updated) / 2)


@dataclass
class Planner:
    """When the daemon assembles: interval and refresh runs only within the active hours;
    changes always count (someone is active when a transcript grows)."""

    interval: timedelta
    debounce: timedelta
    refresh_before: timedelta
    active_hours: ActiveHours | None = None

    @classmethod
    def from_config(cls, config: Config) -> Planner:
        """Given the config, return its planner."""
        daemon = config.daemon
        hours = daemon.active_range
        return cls(
            interval=daemon.interval_delta,
            debounce=daemon.debounce_delta,
            refresh_before=daemon.refresh_before_delta,
            active_hours=ActiveHours(*hours) if hours else None,
        )

    def is_active(self, now: datetime) -> bool:
        """Given the local time, return whether scheduled runs may happen now."""
        return self.active_hours is None or self.active_hours.contains(now)

    def scheduled_run_due(self, reason: str, now: datetime) -> bool:
        """Given why a run was triggered and the local time, return whether it should run."""
        return reason not in ("interval", "refresh") or self.is_active(now)

    def refresh_at(self, updated: datetime, expires: datetime) -> datetime | None:
        """Given the written file's times, return when to refresh it, or None when that falls
        outside the active hours (the next interval run within them renders it anew)."""
        when = refresh_time(updated, expires, self.refresh_before)
        return when if self.is_active(when) else None


# --- What is watched -----------------------------------------------------------------------


@dataclass(frozen=True)
class Watch:
    """Files named like `name` (fnmatch) in `folder` (and below, if `recursive`)."""

    kind: str
    folder: Path
    name: str
    recursive: bool

    def matches(self, path: Path) -> bool:
        if not fnmatch.fnmatchcase(path.name, self.name):
            return False
        if path.parent == self.folder:
            return True
        return self.recursive and self.folder in path.parents


def watch_for(kind: str, pattern: str, base: Path) -> Watch:
    """Given a glob (absolute, `~`, or relative to `base`), return what to watch for it: the
    folder before the first wildcard, and whether files below it count too.
    """
    path = Path(os.path.expanduser(pattern.strip()))
    if not path.is_absolute():
        path = base / path
    parts = path.parts
    first = next((i for i, part in enumerate(parts) if _GLOB_CHARS & set(part)), None)
    if first is None or first == len(parts) - 1:
        return Watch(kind, path.parent, path.name, recursive=False)
    return Watch(kind, Path(*parts[:first]), parts[-1], recursive=True)


def watch_plan(
    config: Config, hosts: Hosts, transcript_globs: Sequence[str] | None = None
) -> list[Watch]:
    """Given the config (and --transcripts, which replaces its sources), return the watches,
    most specific kind first: a path is classified by the first watch that matches it.

    With no sources configured, the transcripts found where the hosts keep them are watched
    (see `transcripts.default_sources`); an SQLite store is watched with its write-ahead log,
    which is what the host writes to between checkpoints.
    """
    workspace = config.workspace
    state = config.state_dir
    watches = [
        Watch("nudge", state, NUDGE_NAME, recursive=False),
        Watch("sections", state, JOURNAL_NAME, recursive=False),
        Watch("scratchpad", config.output_path.parent, config.output_path.name, recursive=False),
    ]
    sources = sources_to_read(hosts, config.transcripts.sources, workspace, state, transcript_globs)
    for pattern in sources:
        watch = watch_for("transcript", pattern, workspace)
        watches.append(watch)
        if pattern.endswith(".sqlite"):
            watches.append(Watch("transcript", watch.folder, f"{watch.name}-wal", watch.recursive))
    if config.memory.enabled:
        watches.extend(watch_for("memory", p, workspace) for p in config.memory.sources)
    return watches


def classify(path: Path, watches: Iterable[Watch], state_dir: Path) -> str | None:
    """Given a changed path, return the kind of the first watch it matches, or None for files
    that never trigger: temp files of atomic writes and the state folder's other files (the
    index, the lock)."""
    if path.name.startswith(".") and path.name.endswith(".tmp"):
        return None
    for watch in watches:
        if watch.matches(path):
            if watch.kind not in ("nudge", "sections") and state_dir in path.parents:
                return None
            return watch.kind
    return None


def sd_notify(message: str, environ: Mapping[str, str] | None = None) -> bool:
    """Given a notification such as "READY=1", send it to systemd's $NOTIFY_SOCKET; return
    whether it was sent (False when not run by systemd, the socket is gone, or its queue is
    full: a notification nobody reads is dropped, never waited on)."""
    address = (environ if environ is not None else os.environ).get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.send(message.encode(), socket.MSG_DONTWAIT)
    except OSError as error:
        log.debug("sd_notify %s failed: %s", message, error)
        return False
    return True


def watchdog_period(environ: Mapping[str, str] | None = None) -> float | None:
    """Return how often to send WATCHDOG=1 (half of systemd's WatchdogSec), in seconds, or None
    when systemd does not watch this process."""
    env = environ if environ is not None else os.environ
    usec = env.get("WATCHDOG_USEC", "")
    pid = env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2e6


_SYSLOG_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


class _JournalFormatter(logging.Formatter):
    """`<priority>LEVEL name: message`: journald reads the priority prefix and stamps the time
    itself, so the line carries none."""

    def format(self, record: logging.LogRecord) -> str:
        priority = _SYSLOG_PRIORITY.get(record.levelno, 6)
        return f"<{priority}>{super().format(record)}"


def configure_logging(verbose: int, quiet: bool, environ: Mapping[str, str] | None = None) -> None:
    """Set up the daemon's logging on stderr: info by default (one line per assembly), debug
    with -v (the file watcher's own events with -vv), errors only with -q; journald's format
    when $JOURNAL_STREAM says stderr goes there, else with timestamps."""
    env = environ if environ is not None else os.environ
    level = logging.ERROR if quiet else logging.DEBUG if verbose else logging.INFO
    handler = logging.StreamHandler()
    if env.get("JOURNAL_STREAM"):
        handler.setFormatter(_JournalFormatter("%(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
        )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # APScheduler logs every job start at info, tzlocal how it found the zone: their warnings
    # and errors are enough.
    for chatty in ("apscheduler", "tzlocal"):
        logging.getLogger(chatty).setLevel(max(level, logging.WARNING))
    # The file watcher logs every inotify event at debug (hundreds a minute, our own reads
    # included): only -vv shows them.
    logging.getLogger("watchdog").setLevel(
        logging.DEBUG if verbose >= 2 else max(level, logging.INFO)
    )


# --- The daemon ----------------------------------------------------------------------------


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


@dataclass
class Stats:
    """What the daemon did, for its log and its stop line."""

    assemblies: Counter[str] = field(default_factory=Counter)
    failures: int = 0
    changes: int = 0

    def summary(self) -> str:
        runs = sum(self.assemblies.values())
        parts = ", ".join(f"{reason} {n}" for reason, n in sorted(self.assemblies.items()))
        return (
            f"{runs} assemblies ({parts or 'none'}), {self.failures} failed, "
            f"{self.changes} changes seen"
        )


class Daemon:
    """Assembles the workspace's SCRATCHPAD.md whenever a trigger says so, until stopped."""

    def __init__(
        self,
        config: Config,
        *,
        hosts: Hosts,
        transcript_globs: Sequence[str] | None = None,
        clock: Callable[[], datetime] | None = None,
        notify: bool = True,
    ) -> None:
        self.config = config
        # Whether this daemon speaks for the process to systemd (readiness, the watchdog,
        # stopping); one of many workspaces' daemons in one process does not.
        self.notify = notify
        self.hosts = hosts
        self.transcript_globs = list(transcript_globs) if transcript_globs else None
        self.tz = tz = local_timezone(config.time.timezone)
        self.clock = clock or (lambda: datetime.now(tz))
        self.planner = Planner.from_config(config)
        self.watches = watch_plan(config, hosts, self.transcript_globs)
        self.stats = Stats()
        self._stop = threading.Event()
        # Set once the models and the index are loaded and --once requests are answered.
        self.ready = threading.Event()
        self._lock = threading.Lock()
        # Held through each assembly, scheduled or asked for over the socket: one at a time.
        self._assembly = threading.Lock()
        self._server: ControlServer | None = None
        self._debouncer = Debouncer(self.planner.debounce)
        self._running_since: float | None = None
        # Files the assembly itself writes, with their signature after our last write; an event
        # on them during a run is checked once the run is over.
        self._own: dict[Path, tuple[int, int, int] | None] = {}
        self._held: dict[Path, str] = {}
        # Each transcript file's signature when it was last read or seen changed: an event on
        # one that did not change (our own read-only open of a host's database closes its
        # write-ahead log for writing) is no change.
        self._seen: dict[Path, tuple[int, int, int] | None] = {}
        self._read: list[Path] = []  # the transcripts the last assembly read
        # The sources the hosts had when the watches were last planned.
        self._sources: tuple[str, ...] = ()
        self._scheduler: Any = None
        self._observer: Any = None
        self._watched: set[tuple[Path, bool]] = set()
        self._memory: WarmMemory | None = None
        self._moods: KeptHistory | None = None  # the mood history, open between cycles
        # When the last event came (a change, a nudge, a request); a daemon serving many
        # workspaces rests one idle for long (`rest_if_idle`) until its next event.
        self._last_event = time.monotonic()
        self.resting = False
        self._upgrades = UpgradeWatch()

    # -- lifecycle ------------------------------------------------------------------------

    def run(self) -> None:
        """Take the workspace lock, run until SIGTERM/SIGINT (or `stop()`), then stop cleanly.

        Raise DaemonRunningError if another daemon serves this workspace.
        """
        # The handlers come first: a SIGTERM during start-up still stops cleanly. Only the main
        # thread may set them; a daemon run on another thread (the tests) is stopped by stop().
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {
                sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
            }
        try:
            lock = DaemonLock.acquire(self.config.state_dir)
        except BaseException:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            raise
        try:
            self._start()
            self._wait()
        finally:
            self._notify("STOPPING=1")
            self._shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            lock.release()
            log.info("stopped: %s", self.stats.summary())

    def stop(self) -> None:
        """Ask the daemon to stop (thread-safe)."""
        self._stop.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("%s received, stopping", signal.Signals(signum).name)
        self.stop()

    def _start(self) -> None:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler
        from apscheduler.triggers.interval import IntervalTrigger
        from watchdog.observers import Observer

        # Watched: a transcript change re-assembles without re-checking every memory file;
        # memory events and every scheduled run (start, interval, refresh) sync the index.
        self._memory = WarmMemory(watched=True)
        self._moods = KeptHistory()
        self._warm_up()
        self._listen()
        # One worker: assemblies never overlap. Coalesced, never dropped as misfired, and a few
        # instances may queue so that a change during a run is not lost.
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(1)},
            job_defaults={"coalesce": True, "misfire_grace_time": None, "max_instances": 3},
            timezone=UTC,
        )
        interval = self.planner.interval.total_seconds()
        self._scheduler.add_job(
            self._assemble, IntervalTrigger(seconds=interval), args=["interval"], id="interval"
        )
        self._scheduler.add_job(self._assemble, args=["start"], id="start")
        self._scheduler.add_job(
            self._check_sources,
            IntervalTrigger(seconds=SOURCES_CHECK.total_seconds()),
            id="sources",
        )
        self._observer = Observer()
        self._sync_watches()
        self._observer.start()
        self._scheduler.start()
        hours = self.planner.active_hours
        log.info(
            "daemon %d serving %s: every %s%s, debounce %s, %d folders watched",
            os.getpid(),
            self.config.workspace,
            self.config.daemon.interval,
            f" within {self.config.daemon.active_hours}" if hours else "",
            self.config.daemon.debounce,
            len(self._watched),
        )
        self._notify(f"READY=1\nSTATUS=serving {self.config.workspace}\nMAINPID={os.getpid()}")
        self.ready.set()

    def _warm_up(self) -> None:
        """Load what an assembly needs before the first change arrives: the mood model, the
        memory index (opened and synced) and its embedding model, so the first cycle after a
        turn is warm. A part that fails is logged; the assemblies degrade as they would."""

        started = time.perf_counter()
        loaded = threading.Event()
        extender = threading.Thread(target=self._extend_start, args=(loaded,), daemon=True)
        if self.notify:
            extender.start()
        try:
            load_mood_model()
        except Exception as error:
            log.warning("the mood model did not load: %s", error)
        try:
            # A first index of a large memory takes minutes: SIGTERM stops it between files.
            with stopping_syncs(self._stop.is_set):
                memory = memory_for(self.config, warm=self._memory)
            if isinstance(memory, Problem):
                log.warning("the memory index did not open: %s", memory.why)
            elif memory is not None:
                with memory as index:
                    index.load_model()  # the model itself, not the vectors the index keeps
        except Exception as error:
            log.warning("the memory search did not load: %s", error)
        finally:
            loaded.set()
            if extender.is_alive():
                extender.join()
        log.info("loaded the models and the index in %.0f ms", self._ms_since(started))

    @staticmethod
    def _extend_start(loaded: threading.Event) -> None:
        """Ask systemd for more time to start, again and again until `loaded` is set."""
        usec = int(EXTEND_START.total_seconds() * 1e6)
        message = f"EXTEND_TIMEOUT_USEC={usec}\nSTATUS=loading the models and the memory index"
        while True:
            sd_notify(message)
            if loaded.wait(EXTEND_EVERY.total_seconds()):
                return

    def _listen(self) -> None:
        """Answer `assemble --once` on the state folder's socket. Without it (a folder in its
        place, a path too long for a socket where /proc is missing) --once runs in its own
        process, as it always could."""
        server = ControlServer(self.config.state_dir, self.serve_once, prompt=self.serve_prompt)
        try:
            server.start()
        except OSError as error:
            log.warning("cannot listen on %s (%s); --once runs without us", server.path, error)
            return
        self._server = server
        log.debug("answering --once on %s", server.path)

    @staticmethod
    def _ms_since(started: float) -> float:
        return (time.perf_counter() - started) * 1000

    def _wait(self) -> None:
        period = watchdog_period()
        while not self._stop.wait(timeout=period):
            if self._healthy():
                self._notify("WATCHDOG=1")
            else:
                log.error("an assembly has run for over %s; systemd may restart us", HUNG_AFTER)

    def _notify(self, message: str) -> None:
        if self.notify:
            sd_notify(message)

    def healthy(self) -> bool:
        """Whether the scheduler runs and no assembly has hung (thread-safe)."""
        return self._healthy()

    def _healthy(self) -> bool:
        started = self._running_since
        hung = started is not None and time.monotonic() - started > HUNG_AFTER.total_seconds()
        return bool(self._scheduler is not None and self._scheduler.running) and not hung

    def _shutdown(self) -> None:
        # APScheduler's shutdown holds its job store lock while it waits for a running job;
        # under our lock, set `_stop` first so that job adds no new job (it would deadlock).
        with self._lock:
            self._stop.set()
        if self._server is not None:
            self._server.close()  # no new --once requests; those being served finish below
        if self._observer is not None:
            self._observer.stop()
        if self._scheduler is not None and self._scheduler.running:
            # Waits for a running assembly: its atomic write leaves no temp file behind.
            self._scheduler.shutdown(wait=True)
        if self._observer is not None and self._observer.is_alive():
            self._observer.join(timeout=5)
        with self._assembly:  # after a --once run in progress; queued ones are declined
            if self._memory is not None:
                self._memory.close()
            if self._moods is not None:
                self._moods.close()

    # -- resting --------------------------------------------------------------------------

    def _woken(self) -> None:
        self._last_event = time.monotonic()
        if self.resting:
            self.resting = False
            log.info("%s: an event; its index is opened again", self.config.workspace)

    def rest_if_idle(self, idle_for: float) -> bool:
        """Given how many seconds without an event make the workspace idle, drop its memory
        index and mood history from memory once it is idle (they are opened again by the next
        event's assembly), and skip the interval's and the refresh's runs until then: nothing
        changed. Return whether it rested now."""
        if self.resting or time.monotonic() - self._last_event < idle_for:
            return False
        if not self._assembly.acquire(blocking=False):
            return False
        try:
            if self._memory is not None:
                self._memory.close()
            if self._moods is not None:
                self._moods.close()
            self.resting = True
        finally:
            self._assembly.release()
        log.info("%s: idle; its index is out of memory until its next event", self.config.workspace)
        return True

    # -- watching -------------------------------------------------------------------------

    def _sync_watches(self) -> None:
        """Watch every planned folder that exists; folders that appear later (a transcript
        folder made by the host's first session) are picked up after the next assembly."""
        if self._observer is None or self._stop.is_set():
            return
        # The default sources change as hosts start sessions (a new Claude Code session the
        # hook recorded, a new OpenClaw agent): plan again.
        self.watches = watch_plan(self.config, self.hosts, self.transcript_globs)
        if not (self.transcript_globs or self.config.transcripts.sources):
            sources = tuple(
                default_sources(self.hosts, self.config.workspace, self.config.state_dir)
            )
            with self._lock:
                self._sources = sources
        folders = {(w.folder, w.recursive) for w in self.watches}
        # A folder watched recursively needs no second, flat watch.
        recursive = {folder for folder, deep in folders if deep}
        for folder, deep in sorted(folders):
            if (folder, deep) in self._watched or (not deep and folder in recursive):
                continue
            if not folder.is_dir():
                continue
            try:
                self._observer.schedule(_Handler(self), str(folder), recursive=deep)
            except OSError as error:
                log.warning("cannot watch %s (%s); the interval still runs", folder, error)
                continue
            self._watched.add((folder, deep))
            log.debug("watching %s%s", folder, " and below" if deep else "")

    def on_path_changed(self, path: Path) -> None:
        """Given a path that changed on disk, schedule a debounced assembly if it matters."""
        kind = classify(path, self.watches, self.config.state_dir)
        if kind is None:
            return
        if kind == "memory" and self._memory is not None:
            self._memory.files_changed()
        with self._lock:
            if kind == "transcript":
                signature = _signature(path)
                if path in self._seen and self._seen[path] == signature:
                    return
                self._seen[path] = signature
            if kind in ("scratchpad", "sections"):
                if self._running_since is not None:
                    self._held[path] = kind  # maybe our own write: decided when the run ends
                    return
                if path in self._own and _signature(path) == self._own[path]:
                    return
            self._schedule_change(kind, path)

    def _schedule_change(self, kind: str, path: Path) -> None:
        # Called with self._lock held; our own writes never get here.
        self._woken()
        self.stats.changes += 1
        when = self._debouncer.change(self.clock())
        log.debug("%s changed: %s; assembling at %s", kind, path, f"{when:%H:%M:%S.%f}")
        if self._scheduler is not None and not self._stop.is_set():
            self._scheduler.add_job(
                self._assemble,
                "date",
                run_date=when,
                args=["change"],
                id="change",
                replace_existing=True,
            )

    # -- assembling -----------------------------------------------------------------------

    def _assemble(self, reason: str) -> None:
        """Run one scheduled assembly (on the scheduler's only worker). A failure is logged;
        the next trigger runs as planned."""
        with self._assembly:
            if self._stop.is_set():
                return
            now = self.clock()
            if not self.planner.scheduled_run_due(reason, now):
                log.debug("%s run skipped: outside the active hours", reason)
                return
            if self.resting and reason in ("interval", "refresh"):
                log.debug("%s run skipped: the workspace is idle", reason)
                return
            with self._lock:
                if reason == "change":
                    self._debouncer.fired()
                elif self._memory is not None:
                    # A safety net for events the watcher missed (a folder made later, a
                    # network file system): scheduled runs always check the memory files.
                    self._memory.files_changed()
            try:
                self._cycle(reason, now)
            except AssemblerError as error:
                self.stats.failures += 1
                log.error("assembly (%s) failed: %s", reason, error)
            except Exception:
                self.stats.failures += 1
                log.exception(
                    "assembly (%s) failed unexpectedly; the next one runs as planned", reason
                )
            self._say_upgrades(now)
        self._sync_watches()

    def _say_upgrades(self, now: datetime) -> None:
        """Say once in the log each host upgrade after which the block stopped reaching the
        model (`delivery.upgrades`); reading the hosts' records never fails a run."""
        try:
            lines = self._upgrades.new_notices(
                self.config.workspace, self.config.state_dir, self.hosts, os.environ, now
            )
        except Exception:
            log.debug("the hosts' delivery records could not be read", exc_info=True)
            return
        for line in lines:
            log.warning("%s", line)

    def serve_once(self, request: OnceRequest) -> OnceOutput:
        """Given an `assemble --once` request from the socket, run it as one of our cycles,
        with the warm memory, and return what --once prints.

        Raise NotServed if our options differ from the client's (its --config, --transcripts,
        time zone or version: it assembles itself), we are stopping, or the assembly fails
        (the client runs it again itself and reports the failure as it always did).
        """
        self._woken()
        if request.options != options_digest(self.config, self.hosts, self.transcript_globs):
            raise NotServed(
                "options", "it runs with other options (config, --transcripts, time zone, version)"
            )
        with self._assembly:
            if self._stop.is_set():
                raise NotServed("stopping", "the daemon is stopping")
            asked = request.time(self.tz)
            now = self.clock() if asked is None else asked
            try:
                assembly, lines = self._cycle(
                    "once", now, dry_run=request.dry_run, log_level=request.log_level
                )
            except AssemblerError as error:
                self.stats.failures += 1
                log.error("assembly (once) failed: %s", error)
                raise NotServed("failed", str(error)) from error
            except Exception as error:
                self.stats.failures += 1
                log.exception("assembly (once) failed unexpectedly")
                raise NotServed("failed", f"{type(error).__name__}: {error}") from error
        self._sync_watches()
        output = once_output(
            assembly, as_json=request.as_json, explain=request.explain, dry_run=request.dry_run
        )
        return dataclasses.replace(output, log=lines)

    def serve_prompt(self, request: PromptRequest) -> PromptAnswer:
        """Given a prompt a hook or plugin is about to send the model, return the ready block
        assembled with it counted as the newest human message, with the warm models and index
        (see `assembly.pipeline.run_for_prompt`): nothing is written, and neither the prompt
        nor anything about it is logged (the request is hostile input, and the transcript the
        host writes is the record of what was said).

        Raise NotServed ("busy") when an assembly holds the lock past the caller's wait less
        PROMPT_ANSWER_MARGIN (PROMPT_LOCK_WAIT when it says none), ("stopping") when we are
        stopping, ("failed") when the assembly fails.
        """

        self._woken()
        wait = PROMPT_LOCK_WAIT.total_seconds()
        if request.wait_ms is not None:
            wait = max(request.wait_ms / 1000 - PROMPT_ANSWER_MARGIN.total_seconds(), 0.0)
        if not self._assembly.acquire(timeout=wait):
            raise NotServed("busy", "an assembly is running")
        try:
            if self._stop.is_set():
                raise NotServed("stopping", "the daemon is stopping")
            now = self.clock()
            text, clipped = message_text(request.prompt)
            whole = max(request.length, clipped or len(text))
            prompt = Message(
                "user",
                text,
                now.astimezone(UTC),
                f"{request.host} prompt",
                session_id=request.session,
                original_length=whole if whole != len(text) else None,
            )
            try:
                with stopping_syncs(self._stop.is_set):
                    assembly = run_for_prompt(
                        self.config,
                        hosts=self.hosts,
                        now=now,
                        prompt=prompt,
                        memory=self._memory,
                        transcript_globs=self.transcript_globs,
                        moods=self._moods,
                    )
            except Exception as error:
                # The type alone: a message could quote what the prompt said.
                log.warning("answering a prompt failed (%s)", type(error).__name__)
                raise NotServed("failed", type(error).__name__) from None
        finally:
            self._assembly.release()
        self.stats.assemblies["prompt"] += 1
        block, digest = ready_parts(assembly)
        expires = assembly.measured.frontmatter.expires
        return PromptAnswer(block, digest, assembly.now, expires)

    def _cycle(
        self, reason: str, now: datetime, *, dry_run: bool = False, log_level: int | None = None
    ) -> tuple[Assembly, list[LogLine]]:
        """Given why and the clock, run one assembly and record it; the caller holds the
        assembly lock. Return it, with its log records at or above `log_level` (none without
        one). Raise what the assembly raises."""

        with self._lock:
            self._running_since = time.monotonic()
            # What the transcripts looked like before this run read them (see _remember_read).
            before = {path: _signature(path) for path in self._read}
        started = time.perf_counter()
        capture: contextlib.AbstractContextManager[list[LogLine]] = (
            captured_log(log_level) if log_level is not None else contextlib.nullcontext([])
        )
        try:
            # A stop request ends the memory index sync between files; the run goes on without it.
            with capture as lines, stopping_syncs(self._stop.is_set):
                assembly = run_once(
                    self.config,
                    hosts=self.hosts,
                    now=now,
                    dry_run=dry_run,
                    transcript_globs=self.transcript_globs,
                    memory=self._memory,
                    moods=self._moods,
                )
                if not dry_run:
                    record_run(self.config, assembly, reason, time.perf_counter() - started)
        finally:
            self._finish_run(wrote=not dry_run)
        measured = assembly.measured
        if dry_run:
            log.debug("dry run (%s) in %.0f ms", reason, self._ms_since(started))
            return assembly, lines
        self.stats.assemblies[reason] += 1
        log.info(
            "assembled %s (%s): %d messages, valid until %s, in %.0f ms",
            assembly.path,
            reason,
            measured.messages_read,
            measured.frontmatter.expires.isoformat(timespec="seconds"),
            self._ms_since(started),
        )
        for problem in assembly.degraded:
            log.warning("degraded: %s: %s", problem.what, problem.why)
        self._plan_refresh(assembly.now, measured.frontmatter.expires)
        self._remember_read(assembly, before)
        return assembly, lines

    def _check_sources(self) -> None:
        """Assemble when the hosts have a transcript the watches do not know yet (a store made
        by a fresh install's first turn, a session the hook just recorded), so its first turn
        is read without waiting for another trigger."""
        if self.transcript_globs or self.config.transcripts.sources or self._stop.is_set():
            return  # configured sources are watched as globs: new files match them already
        sources = tuple(default_sources(self.hosts, self.config.workspace, self.config.state_dir))
        with self._lock:
            known, self._sources = self._sources, sources
            if not (set(sources) - set(known)) or self._stop.is_set():
                return
            self.watches = watch_plan(self.config, self.hosts, self.transcript_globs)
            self._schedule_change("transcript", self.config.workspace)
        self._sync_watches()

    def _remember_read(
        self, assembly: Assembly, before: dict[Path, tuple[int, int, int] | None]
    ) -> None:
        """Given an assembly and the signatures its transcripts had before it read them,
        record those, so that the events our own reads cause are recognised as no change,
        while a write during the run (a signature other than the one before) still counts."""
        paths = [Path(s.path) for s in assembly.transcripts.sources if not s.error]
        paths += [Path(f"{path}-wal") for path in paths]
        with self._lock:
            self._read = paths
            for path in paths:
                if path in before:
                    self._seen[path] = before[path]

    def _finish_run(self, wrote: bool = True) -> None:
        """Record what our run wrote (a dry run wrote nothing), then decide on the events held
        during it."""
        own = [self.config.output_path, journal_path(self.config.state_dir)]
        with self._lock:
            if wrote:
                self._own = {path: _signature(path) for path in own}
            self._running_since = None
            held, self._held = self._held, {}
            for path, kind in held.items():
                if _signature(path) != self._own.get(path):
                    self._schedule_change(kind, path)

    def _plan_refresh(self, updated: datetime, expires: datetime) -> None:
        when = self.planner.refresh_at(updated, expires)
        with self._lock:
            if when is None or self._scheduler is None or self._stop.is_set():
                return
            self._scheduler.add_job(
                self._assemble,
                "date",
                run_date=when,
                args=["refresh"],
                id="refresh",
                replace_existing=True,
            )


class _Handler:
    """watchdog's event handler protocol (`dispatch`), passing changed paths to the daemon."""

    # Reads (opened, closed without writing) and folder events never trigger an assembly.
    _KINDS = frozenset({"created", "modified", "moved", "deleted", "closed"})

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def dispatch(self, event: Any) -> None:
        if event.is_directory or event.event_type not in self._KINDS:
            return
        paths = [event.src_path, getattr(event, "dest_path", "")]
        for raw in paths:
            if raw:
                text = raw.decode() if isinstance(raw, bytes) else raw
                self.daemon.on_path_changed(Path(text))


def run_daemon(
    config: Config,
    *,
    hosts: Hosts,
    transcript_globs: Sequence[str] | None = None,
) -> Stats:
    """Given the config and the hosts whose sessions it reads, run the daemon until SIGTERM or
    SIGINT; return what it did.

    Raise DaemonRunningError if another daemon serves the workspace.
    """
    daemon = Daemon(config, hosts=hosts, transcript_globs=transcript_globs)
    daemon.run()
    return daemon.stats
