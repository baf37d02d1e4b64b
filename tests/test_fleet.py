"""One daemon for every workspace (`assemble daemon --all`): each workspace set up by name and
each announced project served from one process, each with its own lock and file; an idle
workspace rests until its next event; one another daemon serves is left out, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assembler.config.files import load_config
from assembler.config.projects import (
    announce,
    project_config,
    project_state_dir,
    register_workspace,
)
from assembler.daemon.fleet import Fleet, fleet_record_path, read_fleet_record
from assembler.daemon.lock import DaemonLock, lock_holder
from assembler.hosts.registry import HOSTS

ASSEMBLE = Path(sys.executable).with_name("assemble")


def _message(text: str) -> str:
    stamp = datetime.now(UTC).isoformat()
    return json.dumps({"role": "user", "content": text, "timestamp": stamp}) + "\n"


def _wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")
        time.sleep(0.05)


def _workspace(folder: Path, task: str) -> Path:
    (folder / "chat").mkdir(parents=True)
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat/*.jsonl"]\nlookback = "none"\n'
        '[memory]\nenabled = false\n[daemon]\ndebounce = "0.2s"\n'
    )
    (folder / "chat" / "session.jsonl").write_text(_message(f"please fix {task}"))
    return folder


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace set up by name and an announced git project."""
    named = _workspace(tmp_path / "named", "the login form")
    register_workspace(named)
    project = _workspace(tmp_path / "project", "the billing export")
    (project / ".git").mkdir()
    announce(project_config(project.resolve()), "claude-code", datetime.now(UTC))
    return named.resolve(), project.resolve()


@pytest.fixture
def running() -> Iterator[Callable[..., Fleet]]:
    started: list[tuple[Fleet, threading.Thread]] = []

    def start(**options: object) -> Fleet:
        fleet = Fleet(hosts=HOSTS, scan_every=timedelta(seconds=0.1), **options)  # type: ignore[arg-type]
        thread = threading.Thread(target=fleet.run, daemon=True)
        thread.start()
        started.append((fleet, thread))
        return fleet

    yield start
    for fleet, thread in started:
        fleet.stop()
        thread.join(timeout=60)
        assert not thread.is_alive()


def _file_of(folder: Path, project: bool) -> Path:
    config = project_config(folder) if project else load_config(folder)
    return config.output_path


def test_one_process_serves_each_workspace_with_its_own_lock_and_file(
    two: tuple[Path, Path], running: Callable[..., Fleet]
) -> None:
    named, project = two
    fleet = running()
    named_file, project_file = _file_of(named, False), _file_of(project, True)
    _wait_for(lambda: named_file.is_file() and project_file.is_file())
    assert "login form" in named_file.read_text()
    assert "billing export" not in named_file.read_text()
    assert "billing export" in project_file.read_text()
    assert "login form" not in project_file.read_text()
    # The project's file and state stay out of its tree; the named workspace keeps its own.
    assert project_file.parent == project_state_dir(project)
    assert sorted(os.listdir(project)) == [".git", "assembler.toml", "chat"]
    assert lock_holder(named / ".scratchpad") == os.getpid()
    assert lock_holder(project_state_dir(project)) == os.getpid()
    _wait_for(lambda: len((read_fleet_record() or {}).get("workspaces", [])) == 2)
    kinds = {entry["kind"] for entry in read_fleet_record()["workspaces"]}  # type: ignore[index]
    assert kinds == {"set up", "project"}
    assert len(fleet.served) == 2


def test_a_project_announced_while_it_runs_is_served_within_seconds(
    tmp_path: Path, running: Callable[..., Fleet]
) -> None:
    running()
    _wait_for(fleet_record_path().is_file)
    late = _workspace(tmp_path / "late", "the cache warmer")
    (late / ".git").mkdir()
    config = project_config(late.resolve())
    announce(config, "codex", datetime.now(UTC))
    _wait_for(config.output_path.is_file)
    assert "cache warmer" in config.output_path.read_text()


def test_an_idle_workspace_rests_and_its_next_event_wakes_it(
    two: tuple[Path, Path], running: Callable[..., Fleet]
) -> None:
    named, _ = two
    fleet = running(idle_after=timedelta(seconds=0))
    key = named
    _wait_for(lambda: key in fleet.served and fleet.served[key].daemon.resting)
    record = read_fleet_record() or {}
    _wait_for(lambda: any(e["resting"] for e in (read_fleet_record() or record)["workspaces"]))
    served = fleet.served[key].daemon
    _wait_for(_file_of(named, False).is_file)  # the start's assembly runs, resting or not
    before = _file_of(named, False).read_text()
    fleet.idle_after = timedelta(hours=1)  # awake once woken
    with (named / "chat" / "session.jsonl").open("a") as handle:
        handle.write(_message("now the signup page is broken"))
    _wait_for(lambda: not served.resting)
    _wait_for(lambda: "signup page" in _file_of(named, False).read_text())
    assert _file_of(named, False).read_text() != before


def test_a_workspace_another_daemon_serves_is_left_out_saying_why(
    two: tuple[Path, Path], running: Callable[..., Fleet]
) -> None:
    named, project = two
    held = DaemonLock.acquire(named / ".scratchpad")
    try:
        fleet = running()
        _wait_for(lambda: named in fleet.left_out)
        assert "already runs" in fleet.left_out[named][0]
        _wait_for(lambda: project in fleet.served)
        _wait_for(lambda: bool((read_fleet_record() or {}).get("left_out")))
        why = (read_fleet_record() or {})["left_out"][0]
        assert why["workspace"] == str(named)
    finally:
        held.release()


def test_status_lists_each_workspace_with_who_serves_it_and_its_freshness(
    two: tuple[Path, Path], running: Callable[..., Fleet]
) -> None:
    named, project = two
    running()
    _wait_for(lambda: _file_of(named, False).is_file() and _file_of(project, True).is_file())
    _wait_for(lambda: len((read_fleet_record() or {}).get("workspaces", [])) == 2)
    result = subprocess.run(
        [str(ASSEMBLE), "status", "--json"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    listed = {item["workspace"]: item for item in json.loads(result.stdout)["workspaces"]}
    assert set(listed) == {str(named), str(project)}
    for item in listed.values():
        assert item["served_by"] == f"daemon --all (pid {os.getpid()})"
        assert item["freshness"].startswith("fresh")
    text = subprocess.run([str(ASSEMBLE), "status"], capture_output=True, text=True, timeout=120)
    assert f"{project} (project; daemon --all" in text.stdout


def test_status_without_a_daemon_says_how_to_start_one(two: tuple[Path, Path]) -> None:
    result = subprocess.run([str(ASSEMBLE), "status"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert "daemon --all: not running" in result.stdout
    assert "no daemon" in result.stdout


def test_daemon_all_refuses_a_workspace_of_its_own(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ASSEMBLE), "daemon", "--all", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "leave out --workspace" in result.stderr
