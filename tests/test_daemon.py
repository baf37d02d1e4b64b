"""Tests of assembler/daemon.py: the scheduling decisions with an injected clock, the lock, the
watch plan, sd_notify, and the real daemon started as a subprocess on a temp workspace."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path

import pytest

from assembler.config.files import load_config, validate
from assembler.daemon.lock import NUDGE_NAME, DaemonLock, DaemonRunningError, lock_holder, nudge
from assembler.daemon.service import (
    ActiveHours,
    Daemon,
    Debouncer,
    Planner,
    classify,
    configure_logging,
    refresh_time,
    sd_notify,
    watch_for,
    watch_plan,
    watchdog_period,
)
from assembler.errors import ConfigError
from assembler.hosts.registry import HOSTS

ASSEMBLE = Path(sys.executable).parent / "assemble"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


# --- Scheduling decisions, with the clock as an argument -----------------------------------


def test_active_hours_contain_their_start_but_not_their_end() -> None:
    hours = ActiveHours(dt_time(7), dt_time(23))
    assert hours.contains(T0.replace(hour=7))
    assert hours.contains(T0.replace(hour=22, minute=59))
    assert not hours.contains(T0.replace(hour=23))
    assert not hours.contains(T0.replace(hour=3))


def test_active_hours_that_end_before_they_start_wrap_past_midnight() -> None:
    night = ActiveHours(dt_time(22), dt_time(6, 30))
    assert night.contains(T0.replace(hour=23))
    assert night.contains(T0.replace(hour=6, minute=29))
    assert not night.contains(T0.replace(hour=6, minute=30))
    assert not night.contains(T0.replace(hour=12))


def test_a_burst_of_changes_gives_one_run_debounce_after_the_last() -> None:
    debouncer = Debouncer(timedelta(seconds=2))
    runs = {debouncer.change(T0 + timedelta(milliseconds=100 * i)) for i in range(50)}
    assert max(runs) == T0 + timedelta(seconds=4.9 + 2)
    # The scheduler replaces the one pending job, so only the last time matters.
    assert debouncer.change(T0 + timedelta(seconds=5)) == T0 + timedelta(seconds=7)


def test_a_stream_that_never_pauses_still_runs_within_the_maximum_deferral() -> None:
    debouncer = Debouncer(timedelta(seconds=2), max_defer=timedelta(seconds=20))
    last = T0
    for i in range(100):
        last = debouncer.change(T0 + timedelta(seconds=i))
    assert last == T0 + timedelta(seconds=20)


def test_after_a_run_fires_the_next_change_starts_a_new_burst() -> None:
    debouncer = Debouncer(timedelta(seconds=2), max_defer=timedelta(seconds=20))
    debouncer.change(T0)
    assert debouncer.pending
    debouncer.fired()
    assert not debouncer.pending
    later = T0 + timedelta(minutes=5)
    assert debouncer.change(later) == later + timedelta(seconds=2)


def test_refresh_comes_the_configured_margin_before_expiry() -> None:
    expires = T0 + timedelta(minutes=30)
    assert refresh_time(T0, expires, timedelta(minutes=2)) == T0 + timedelta(minutes=28)


def test_refresh_margin_is_at_most_half_the_ttl_so_it_cannot_loop() -> None:
    expires = T0 + timedelta(minutes=1)
    assert refresh_time(T0, expires, timedelta(minutes=5)) == T0 + timedelta(seconds=30)


def test_planner_pauses_interval_and_refresh_outside_active_hours_but_not_changes() -> None:
    planner = Planner(
        interval=timedelta(minutes=10),
        debounce=timedelta(seconds=2),
        refresh_before=timedelta(minutes=2),
        active_hours=ActiveHours(dt_time(7), dt_time(23)),
    )
    night = T0.replace(hour=3)
    assert not planner.scheduled_run_due("interval", night)
    assert not planner.scheduled_run_due("refresh", night)
    assert planner.scheduled_run_due("change", night)
    assert planner.scheduled_run_due("start", night)
    assert planner.scheduled_run_due("interval", T0)


def test_planner_skips_a_refresh_that_would_fall_outside_active_hours() -> None:
    planner = Planner(
        interval=timedelta(minutes=10),
        debounce=timedelta(seconds=2),
        refresh_before=timedelta(minutes=2),
        active_hours=ActiveHours(dt_time(7), dt_time(23)),
    )
    late = T0.replace(hour=22, minute=50)
    assert planner.refresh_at(late, late + timedelta(minutes=30)) is None
    assert planner.refresh_at(T0, T0 + timedelta(minutes=30)) == T0 + timedelta(minutes=28)


def test_planner_reads_the_daemon_keys_of_the_config(tmp_path: Path) -> None:
    data = {"daemon": {"interval": "5m", "active_hours": "07:00-23:30", "debounce": "0.5s"}}
    planner = Planner.from_config(validate(data, source=None, workspace=tmp_path))
    assert planner.interval == timedelta(minutes=5)
    assert planner.debounce == timedelta(milliseconds=500)
    assert planner.active_hours == ActiveHours(dt_time(7), dt_time(23, 30))


@pytest.mark.parametrize("bad", ["7-23", "07:00-07:00", "25:00-06:00", "07:00"])
def test_malformed_active_hours_are_a_config_error_naming_the_key(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match=r"At 'daemon\.active_hours'"):
        validate({"daemon": {"active_hours": bad}}, source=None, workspace=tmp_path)


# --- What is watched -----------------------------------------------------------------------


def test_a_glob_is_watched_at_the_folder_before_its_first_wildcard(tmp_path: Path) -> None:
    flat = watch_for("transcript", "sessions/*.jsonl", tmp_path)
    assert (flat.folder, flat.name, flat.recursive) == (tmp_path / "sessions", "*.jsonl", False)
    deep = watch_for("memory", "memory/**/*.md", tmp_path)
    assert (deep.folder, deep.name, deep.recursive) == (tmp_path / "memory", "*.md", True)
    assert deep.matches(tmp_path / "memory" / "2026" / "03-02.md")
    assert not flat.matches(tmp_path / "sessions" / "old" / "a.jsonl")
    home = watch_for("transcript", "~/.openclaw/agents/main/sessions/*.jsonl", tmp_path)
    assert home.folder == Path.home() / ".openclaw/agents/main/sessions"


def test_own_temp_files_and_the_index_never_trigger_but_the_nudge_does(tmp_path: Path) -> None:
    config = validate({"memory": {"sources": ["**/*"]}}, source=None, workspace=tmp_path)
    watches = watch_plan(config, HOSTS)
    state = config.state_dir
    assert classify(tmp_path / ".SCRATCHPAD.md.x1y2.tmp", watches, state) is None
    assert classify(state / "index.sqlite-wal", watches, state) is None
    assert classify(state / NUDGE_NAME, watches, state) == "nudge"
    assert classify(tmp_path / "SCRATCHPAD.md", watches, state) == "scratchpad"
    assert classify(tmp_path / "MEMORY.md", watches, state) == "memory"


def test_the_daemons_own_write_does_not_trigger_it_but_an_agent_edit_does(
    tmp_path: Path,
) -> None:
    config = validate({"memory": {"enabled": False}}, source=None, workspace=tmp_path)
    daemon = Daemon(config, clock=lambda: T0, hosts=HOSTS)
    pad = config.output_path
    # An event that arrives while an assembly runs is held until the run has recorded what it
    # wrote: then it is recognised as the daemon's own.
    daemon._running_since = time.monotonic()
    pad.write_text("written by the daemon\n")
    daemon.on_path_changed(pad)
    daemon._finish_run()
    daemon.on_path_changed(pad)  # the same event delivered late
    assert daemon.stats.changes == 0
    pad.write_text("edited by the agent, a little longer\n")
    daemon.on_path_changed(pad)
    assert daemon.stats.changes == 1


def test_a_memory_file_event_and_every_scheduled_run_sync_the_warm_index(
    tmp_path: Path,
) -> None:
    from assembler.memory.lifecycle import WarmMemory, synced_memory

    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    daemon = Daemon(config, clock=lambda: T0, hosts=HOSTS)
    daemon._memory = warm = WarmMemory(watched=True)
    synced_memory(config, warm=warm)
    assert not warm.sync_due
    daemon.on_path_changed(tmp_path / "chat.jsonl")  # not a memory file
    assert not warm.sync_due
    daemon.on_path_changed(tmp_path / "MEMORY.md")
    assert warm.sync_due
    synced_memory(config, warm=warm)
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "garden.md").write_text("# Garden\n\nTomatoes.\n")  # no event
    assert not warm.sync_due
    daemon._assemble("interval")
    assert daemon.stats.assemblies["interval"] == 1
    assert not warm.sync_due
    with synced_memory(config, warm=warm) as index:  # the interval run's sync found it
        assert index.search("tomatoes", k=1)[0].path == "memory/garden.md"
    warm.close()


# --- The warm memory the daemon keeps --------------------------------------------------------


def test_remembered_queries_embed_only_the_new_query_of_a_cycle() -> None:
    from fakes import FakeEmbedder

    from assembler.memory.recall import RememberedQueries

    fake = FakeEmbedder()
    remembered = RememberedQueries(fake, size=8)
    first = remembered.encode(["deploy failing", "pods crash"])
    assert fake.texts_encoded == 2
    second = remembered.encode(["rollback done", "deploy failing", "pods crash"])
    assert fake.texts_encoded == 3  # only "rollback done" was new
    assert (second[1:] == first).all()
    assert (second[0] == fake.encode(["rollback done"])[0]).all()
    remembered.encode([f"chunk {i}" for i in range(20)])  # a sync's batch passes through
    remembered.encode(["pods crash"])
    assert fake.texts_encoded == 3 + 1 + 20


def test_warm_memory_keeps_one_index_open_across_assemblies(tmp_path: Path) -> None:
    from assembler.memory.lifecycle import WarmMemory, synced_memory

    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    warm = WarmMemory()
    with synced_memory(config, warm=warm) as first:
        pass
    with synced_memory(config, warm=warm) as second:
        assert second is first
        assert second.search("command", k=1)[0].path == "MEMORY.md"  # still open
    warm.close()


def test_memory_model_none_by_choice_is_neither_warned_about_nor_listed_as_degraded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    daemon = Daemon(config, clock=lambda: T0, hosts=HOSTS)
    caplog.set_level(logging.DEBUG, logger="assembler")
    for _ in range(2):
        daemon._assemble("interval")
    assert daemon.stats.assemblies["interval"] == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any("memory" in message for message in warnings), warnings
    written = (tmp_path / "SCRATCHPAD.md").read_text()
    assert "memory search" not in written.split("\n---\n", 1)[0]  # not under `degraded`
    assert any("keyword (BM25)" in r.getMessage() for r in caplog.records)  # said, at debug


def test_daemon_transcripts_glob_that_matches_nothing_exits_1_naming_glob_and_folder(
    tmp_path: Path,
) -> None:
    # A subprocess with a timeout: a daemon that starts anyway fails the test, not hangs it.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = subprocess.run(
        [str(ASSEMBLE), "daemon", "--workspace", "ws", "--transcripts", "chat/*.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    err = result.stderr
    assert err.count("\n") == 1 and "'chat/*.jsonl'" in err and str(tmp_path) in err
    assert lock_holder(workspace / ".scratchpad") is None  # it never started


# --- One daemon per workspace --------------------------------------------------------------


def test_a_second_lock_names_the_holders_pid_and_a_released_lock_can_be_taken(
    tmp_path: Path,
) -> None:
    first = DaemonLock.acquire(tmp_path)
    assert lock_holder(tmp_path) == os.getpid()
    with pytest.raises(DaemonRunningError, match=f"pid {os.getpid()}"):
        DaemonLock.acquire(tmp_path)
    first.release()
    assert lock_holder(tmp_path) is None
    DaemonLock.acquire(tmp_path).release()


def test_nudge_writes_the_nudge_file_only_when_a_daemon_holds_the_lock(tmp_path: Path) -> None:
    assert not nudge(tmp_path)
    assert not (tmp_path / NUDGE_NAME).exists()
    lock = DaemonLock.acquire(tmp_path)
    try:
        assert nudge(tmp_path, "UserPromptSubmit")
        assert (tmp_path / NUDGE_NAME).read_text().startswith("UserPromptSubmit ")
    finally:
        lock.release()


# --- systemd and logging -------------------------------------------------------------------


def test_sd_notify_sends_the_message_to_the_notify_socket(tmp_path: Path) -> None:
    address = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(address)
        server.settimeout(5)
        assert sd_notify("READY=1", {"NOTIFY_SOCKET": address})
        assert server.recv(100) == b"READY=1"
    assert not sd_notify("READY=1", {})


def test_watchdog_period_is_half_of_watchdog_usec_for_this_process() -> None:
    env = {"WATCHDOG_USEC": "120000000", "WATCHDOG_PID": str(os.getpid())}
    assert watchdog_period(env) == 60.0
    assert watchdog_period({**env, "WATCHDOG_PID": "1"}) is None
    assert watchdog_period({}) is None


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restore_logging")
def test_logs_for_journald_carry_a_priority_prefix_and_no_timestamp() -> None:
    configure_logging(0, False, {"JOURNAL_STREAM": "8:1234"})
    handler = logging.getLogger().handlers[0]
    record = logging.LogRecord("assembler.daemon", logging.WARNING, "", 0, "disk full", (), None)
    assert handler.format(record) == "<4>WARNING assembler.daemon: disk full"
    configure_logging(0, True, {})
    assert logging.getLogger().level == logging.ERROR
    stamped = logging.getLogger().handlers[0].format(record)
    assert re.match(r"\d\d:\d\d:\d\d WARNING assembler\.daemon: disk full", stamped)


# --- The real daemon, as a subprocess ------------------------------------------------------


WORDS = (
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
)


def _message(text: str) -> str:
    stamp = datetime.now(UTC).isoformat()
    return json.dumps({"role": "user", "content": text, "timestamp": stamp}) + "\n"


def _wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")
        time.sleep(0.05)


def _messages_read(workspace: Path) -> int | None:
    try:
        text = (workspace / "SCRATCHPAD.md").read_text()
    except FileNotFoundError:
        return None
    # The frontmatter's one-line source: "1 transcript, 2 messages; memory off".
    found = re.search(r"^source: .*?(\d+) messages?;", text, re.MULTILINE)
    return int(found.group(1)) if found else None


@pytest.fixture
def live_workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    (folder / "chat").mkdir(parents=True)
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat/*.jsonl"]\nmax_messages = 200\n'
        "[memory]\nenabled = false\n"
        '[daemon]\ndebounce = "0.3s"\n'
    )
    (folder / "chat" / "session.jsonl").write_text(
        _message("why is the deploy failing again") + _message("the pods crash on start")
    )
    return folder


class Running:
    """A daemon subprocess with its stderr in a file."""

    def __init__(self, workspace: Path, log: Path) -> None:
        self.log = log
        self.handle = log.open("w")
        self.process = subprocess.Popen(
            [str(ASSEMBLE), "daemon", "--workspace", str(workspace), "-v"],
            stdout=subprocess.DEVNULL,
            stderr=self.handle,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def text(self) -> str:
        return self.log.read_text()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        code = self.process.wait(timeout=10)
        self.handle.close()
        return code


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[Path], Running]]:
    started: list[Running] = []

    def launch(workspace: Path) -> Running:
        running = Running(workspace, tmp_path / f"daemon{len(started)}.log")
        started.append(running)
        return running

    yield launch
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait()
        running.handle.close()


def test_appending_a_human_message_updates_the_scratchpad(
    live_workspace: Path, start: Callable[[Path], Running]
) -> None:
    daemon = start(live_workspace)
    _wait_for(lambda: _messages_read(live_workspace) == 2)
    with (live_workspace / "chat" / "session.jsonl").open("a") as handle:
        handle.write(_message("ok it works now, thanks"))
    _wait_for(lambda: _messages_read(live_workspace) == 3)
    assert daemon.stop() == 0
    assert "(change)" in daemon.text()


def test_a_burst_of_50_writes_gives_at_most_a_few_assemblies(
    live_workspace: Path, start: Callable[[Path], Running]
) -> None:
    daemon = start(live_workspace)
    _wait_for(lambda: _messages_read(live_workspace) == 2)
    with (live_workspace / "chat" / "session.jsonl").open("a") as handle:
        for i in range(50):
            # Each line its own words: a text a session repeats three times is a host's prompt.
            handle.write(_message(f"still failing on {WORDS[i % 10]} {WORDS[i // 10]}"))
            handle.flush()
    _wait_for(lambda: _messages_read(live_workspace) == 52)
    assert daemon.stop() == 0
    stopped = re.search(r"stopped: (\d+) assemblies \((.*?)\)", daemon.text())
    assert stopped is not None, daemon.text()
    counts = dict(part.split(" ") for part in stopped.group(2).split(", "))
    assert counts["start"] == "1"
    assert 1 <= int(counts["change"]) <= 3
    assert "scratchpad changed" not in daemon.text()  # its own writes did not trigger it


def test_sigterm_stops_it_promptly_with_exit_0_and_no_temp_files(
    live_workspace: Path, start: Callable[[Path], Running]
) -> None:
    daemon = start(live_workspace)
    _wait_for(lambda: _messages_read(live_workspace) == 2)
    assert daemon.stop() == 0
    # Promptly: it stops on the signal, not after its next scheduled run (minutes away), which
    # `stop()` would not wait for.
    assert "SIGTERM received, stopping" in daemon.text()
    leftovers = [p.name for p in live_workspace.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    assert lock_holder(live_workspace / ".scratchpad") is None


def test_a_second_daemon_on_the_workspace_exits_1_naming_the_holders_pid(
    live_workspace: Path, start: Callable[[Path], Running]
) -> None:
    first = start(live_workspace)
    _wait_for(lambda: lock_holder(live_workspace / ".scratchpad") == first.process.pid)
    second = subprocess.run(
        [str(ASSEMBLE), "daemon", "--workspace", str(live_workspace)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 1
    assert f"pid {first.process.pid}" in second.stderr
    assert first.process.poll() is None


def test_after_kill_9_a_new_daemon_takes_the_lock_over(
    live_workspace: Path, start: Callable[[Path], Running]
) -> None:
    first = start(live_workspace)
    _wait_for(lambda: lock_holder(live_workspace / ".scratchpad") == first.process.pid)
    first.stop(signal.SIGKILL)
    second = start(live_workspace)
    _wait_for(lambda: lock_holder(live_workspace / ".scratchpad") == second.process.pid)
    assert second.stop() == 0


def test_a_failed_assembly_is_logged_and_the_next_one_runs(
    live_workspace: Path, start: Callable[[Path], Running]
) -> None:
    # The output folder is a file: the first assembly cannot write.
    with (live_workspace / "assembler.toml").open("a") as handle:
        handle.write('[output]\npath = "out/SCRATCHPAD.md"\n')
    (live_workspace / "out").write_text("in the way")
    daemon = start(live_workspace)
    _wait_for(lambda: "assembly (start) failed" in daemon.text())
    (live_workspace / "out").unlink()
    with (live_workspace / "chat" / "session.jsonl").open("a") as handle:
        handle.write(_message("and now?"))
    _wait_for(lambda: (live_workspace / "out" / "SCRATCHPAD.md").exists())
    assert daemon.stop() == 0
    assert re.search(r"stopped: 1 assemblies .*, 1 failed", daemon.text())


def test_the_daemon_runs_with_the_config_it_was_given(live_workspace: Path) -> None:
    config = load_config(live_workspace)
    assert config.daemon.debounce_delta == timedelta(seconds=0.3)
    assert [w.kind for w in watch_plan(config, HOSTS)][:3] == ["nudge", "sections", "scratchpad"]


def test_with_no_sources_configured_the_hosts_own_stores_are_watched_with_their_log(
    tmp_path: Path, isolated_home: Path
) -> None:
    store = isolated_home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"")
    config = validate({"memory": {"enabled": False}}, source=None, workspace=tmp_path)
    watches = watch_plan(config, HOSTS)
    state = config.state_dir
    assert classify(store, watches, state) == "transcript"
    assert classify(store.with_name(store.name + "-wal"), watches, state) == "transcript"
    assert (
        classify(store.with_name("openclaw-agent.sqlite.memory-reindex-1"), watches, state) is None
    )


def test_an_event_on_a_transcript_that_did_not_change_is_no_change(
    tmp_path: Path, isolated_home: Path
) -> None:
    # Reading a host's database read-only closes its write-ahead log "for writing": the daemon
    # must not take its own reads for the host's writes, or it never goes quiet.
    store = isolated_home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"")
    wal = store.with_name(store.name + "-wal")
    wal.write_bytes(b"")
    config = validate({"memory": {"enabled": False}}, source=None, workspace=tmp_path)
    daemon = Daemon(config, clock=lambda: T0, hosts=HOSTS)
    daemon.on_path_changed(wal)
    assert daemon.stats.changes == 1
    for _ in range(5):  # the same unchanged file, closed again by each of our reads
        daemon.on_path_changed(wal)
    assert daemon.stats.changes == 1
    wal.write_bytes(b"a new frame")
    daemon.on_path_changed(wal)
    assert daemon.stats.changes == 2


def test_a_store_that_appears_after_the_start_is_read_without_another_trigger(
    tmp_path: Path, isolated_home: Path
) -> None:
    config = validate({"memory": {"enabled": False}}, source=None, workspace=tmp_path)
    daemon = Daemon(config, clock=lambda: T0, hosts=HOSTS)
    daemon._check_sources()  # nothing yet: nothing to do
    assert daemon.stats.changes == 0
    store = isolated_home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"")  # a fresh install's first turn made the agent's store

    daemon._check_sources()
    assert daemon.stats.changes == 1
    assert classify(store, daemon.watches, config.state_dir) == "transcript"
    daemon._check_sources()  # known now: no second assembly
    assert daemon.stats.changes == 1
