"""End to end, with the hosts' real programs (pinned, tests/e2e/hosts.py) and the mock model:
what `assemble setup HOST --remove` prints (and `--apply` does) removes everything setup added,
so that a turn carries no scratchpad and the host's config names nothing of ours; and the
daemon with OpenClaw's Gateway: a fresh install whose agent store appears after the daemon
started gets its first turn read, and an idle Gateway does not keep the daemon assembling.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.hosts import Hosts
from e2e.mock_model import MockModel, Text
from e2e.turns import (
    HostRun,
    OpenClawGateway,
    free_port,
    openclaw_config,
    openclaw_env,
    openclaw_gateway_settings,
    openclaw_store,
    printed_openclaw_commands,
    run_claude_command_line,
    run_host,
    run_openclaw,
    run_openclaw_cli,
    run_openclaw_gateway_turn,
    wait_until,
    write_openclaw_config,
)
from test_e2e_claude_code import HEADER, MCP_TOOLS, MakeClaudeCode, claude_code  # noqa: F401

from assembler.daemon.systemd import assemble_executable
from assembler.hosts.openclaw.setup import OPENCLAW_PLUGIN_ID, openclaw_plugin_dir

pytestmark = pytest.mark.e2e

# How long the idle Gateway is watched: the count is of assemblies in this span, not a timing.
IDLE_S = 60.0


def _assemble(
    *args: str, cwd: Path, path: str | None = None, env: dict[str, str] | None = None
) -> HostRun:
    """Run this install's `assemble` as the user would (HOME is the test's), checking it
    succeeded; `path` puts a host's program on PATH, `env` sets a host's environment."""
    environ = {**os.environ, **(env or {})}
    if path is not None:
        environ["PATH"] = os.pathsep.join([path, environ.get("PATH", "")])
    run = run_host([str(assemble_executable()), *args], env=environ, cwd=cwd, timeout=600)
    assert run.returncode == 0, run.describe()
    return run


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "it's my workspace"  # a space and a quote, for every printed line
    workspace.mkdir()
    (workspace / "assembler.toml").write_text('[memory]\nmodel = "none"\n')
    return workspace


def _openclaw_home(home: Path, model: MockModel, workspace: Path) -> Path:
    """Write OpenClaw's config into HOME (the mock as its model, a local Gateway); return the
    config's path."""
    config = openclaw_config(model, workspace)
    config["gateway"] = openclaw_gateway_settings(free_port(), "e2e-gateway-token")
    return write_openclaw_config(home, config)


def _ok(run: HostRun) -> HostRun:
    assert run.returncode == 0, run.describe()
    return run


def _our_jobs(hosts: Hosts, home: Path, cwd: Path) -> list[dict[str, Any]]:
    listing = _ok(
        run_openclaw_cli(hosts, ["openclaw", "cron", "list", "--all", "--json"], home=home, cwd=cwd)
    )
    return [job for job in listing.json()["jobs"] if job.get("name") == OPENCLAW_PLUGIN_ID]


@pytest.mark.parametrize("how", ["printed", "apply"])
def test_the_openclaw_removal_leaves_no_plugin_no_cron_job_no_hook_and_no_scratchpad(
    hosts: Hosts, model: MockModel, tmp_path: Path, isolated_home: Path, how: str
) -> None:
    workspace, home = _workspace(tmp_path), isolated_home
    config_path = _openclaw_home(home, model, workspace)
    setup = _assemble("setup", "openclaw", "--workspace", str(workspace), cwd=workspace).stdout
    install, configure, _inspect, cron, fallback = printed_openclaw_commands(setup)
    for command in (install, configure, fallback):
        _ok(run_openclaw_cli(hosts, command, home=home, cwd=workspace))
    argv = ["setup", "openclaw", "--remove", "--workspace", str(workspace)]
    removal = _assemble(*argv, cwd=workspace)
    uninstall, unset, listing, remove, unhook = printed_openclaw_commands(removal.stdout)
    assert (listing[1:3], remove[1:4]) == (["cron", "list"], ["cron", "rm", "<id>"])

    with OpenClawGateway(hosts, home=home, cwd=workspace) as gateway:
        _ok(run_openclaw_cli(hosts, cron, home=home, cwd=workspace))
        [job] = _our_jobs(hosts, home, workspace)
        if how == "printed":  # the user reads the job's id off `list` and puts it in `rm`
            for command in (uninstall, unset):
                _ok(run_openclaw_cli(hosts, command, home=home, cwd=workspace))
            jobs = _ok(run_openclaw_cli(hosts, listing, home=home, cwd=workspace)).json()
            assert job["id"] in [j["id"] for j in jobs["jobs"]]
            for command in ([*remove[:3], job["id"]], unhook):
                _ok(run_openclaw_cli(hosts, command, home=home, cwd=workspace))
        else:
            env = {**openclaw_env(hosts, home), "PATH": f"{hosts.openclaw.parent}:{hosts.path()}"}
            applied = _assemble(*argv, "--apply", cwd=workspace, env=env).stdout
            assert [line.split(":")[0] for line in applied.splitlines()[:4]] == ["removed"] * 4, (
                applied
            )
            assert f"openclaw cron rm {job['id']}" in applied
        assert _our_jobs(hosts, home, workspace) == [], gateway.log()[-2000:]

    settings = json.loads(config_path.read_text())
    plugins = settings.get("plugins", {})
    assert OPENCLAW_PLUGIN_ID not in plugins.get("entries", {})  # not even "enabled": false
    assert str(openclaw_plugin_dir()) not in plugins.get("load", {}).get("paths", [])
    assert "bootstrap-extra-files" not in json.dumps(settings.get("hooks", {}))
    # The setup's first assembly left a fresh block, which the plugin would have sent.
    ready = json.loads((workspace / ".scratchpad" / "prefix.json").read_text())
    assert ready["expires_ms"] > time.time() * 1000 and HEADER in ready["block"]
    model.script(Text("Hello."))
    turn = run_openclaw(hosts, home=home, workspace=workspace, prompt="after the removal")
    assert turn.returncode == 0, turn.describe()
    (request,) = model.turn_calls()
    assert HEADER not in request.dump() and "scratchpad" not in request.tool_names()


@pytest.mark.parametrize("scope", ["user", "local"])
def test_remove_apply_with_the_real_claude_leaves_no_hook_no_server_and_no_scratchpad(
    claude_code: MakeClaudeCode,  # noqa: F811 (the fixture, imported)
    hosts: Hosts,
    scope: str,
) -> None:
    setup = claude_code(scope)
    argv = ["setup", "claude-code", "--remove", "--workspace", str(setup.workspace)]
    printed = _assemble(*argv, cwd=setup.project).stdout
    assert "claude mcp remove scratchpad --scope " + scope in printed

    applied = _assemble(*argv, "--apply", cwd=setup.project, path=str(hosts.claude.parent))

    assert "failed:" not in applied.stdout and "manual:" not in applied.stdout, applied.stdout
    settings = (
        setup.home / ".claude" / "settings.json"
        if scope == "user"
        else setup.project / ".claude" / "settings.local.json"
    )
    assert json.loads(settings.read_text()) == {}  # setup's keys were all it held
    listed = run_claude_command_line(
        setup.hosts, setup.model, home=setup.home, cwd=setup.project, line="claude mcp list"
    )
    assert "scratchpad" not in listed.stdout, listed.describe()
    setup.turn("after the removal (e2e)", Text("Hello."))
    (request,) = setup.model.turn_calls()
    assert HEADER not in request.dump() and setup.goal not in request.dump()
    assert not any(name in request.dump() for name in MCP_TOOLS)


# -- the daemon and the Gateway --------------------------------------------------------------


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Daemons started by the test, stopped (SIGTERM, then SIGKILL) on the way out."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _messages_read(workspace: Path) -> int:
    """The messages the file's last assembly read (its frontmatter's `source:` line)."""
    try:
        text = (workspace / "SCRATCHPAD.md").read_text()
    except FileNotFoundError:
        return -1
    found = re.search(r"^source: .*?(\d+) messages?;", text, re.MULTILINE)
    return int(found.group(1)) if found else 0  # "source: no transcripts; ..."


def _assemblies(workspace: Path) -> list[tuple[float, str]]:
    """Every assembly logged in the workspace's `.scratchpad/assemblies.sqlite`: (at, reason)."""
    path = workspace / ".scratchpad" / "assemblies.sqlite"
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT at, reason FROM runs ORDER BY id").fetchall()
        return [(float(at), str(why)) for at, why in rows]
    finally:
        connection.close()


def test_a_daemon_started_before_openclaws_first_turn_reads_it_and_an_idle_gateway_stays_quiet(
    hosts: Hosts,
    model: MockModel,
    tmp_path: Path,
    isolated_home: Path,
    daemon: list[subprocess.Popen[bytes]],
) -> None:
    workspace, home = _workspace(tmp_path), isolated_home
    _openclaw_home(home, model, workspace)
    store = openclaw_store(home)
    log = (tmp_path / "daemon.log").open("wb")
    # A fresh install: the daemon runs before OpenClaw made the agent's store.
    daemon.append(
        subprocess.Popen(
            [str(assemble_executable()), "daemon", "--workspace", str(workspace), "-v"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    )
    wait_until(lambda: _messages_read(workspace) >= 0, 120, "the daemon's first assembly")
    assert _messages_read(workspace) == 0
    assert not store.exists()

    with OpenClawGateway(hosts, home=home, cwd=workspace) as gateway:
        model.script(Text("On it."))
        prompt = "why does the staging deploy fail? (first turn)"
        turn = run_openclaw_gateway_turn(hosts, home=home, workspace=workspace, prompt=prompt)
        assert turn.returncode == 0, f"{turn.describe()}\n{gateway.log()[-3000:]}"
        assert store.exists()
        # No trigger but the daemon's own check for new sources (every 20 s) finds the store.
        wait_until(lambda: _messages_read(workspace) >= 2, 120, "the daemon to read turn 1")
        assert "staging deploy" in (workspace / "SCRATCHPAD.md").read_text()

        # The Gateway idles: its own housekeeping of the store is no change to assemble for.
        start = time.time()
        deadline = time.monotonic() + IDLE_S
        while time.monotonic() < deadline:
            assert daemon[0].poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
            time.sleep(1.0)
        during = [run for run in _assemblies(workspace) if run[0] >= start]
        print(f"assemblies while the Gateway idled {IDLE_S:.0f} s: {len(during)} {during}")
        assert len(during) <= 2, (during, (tmp_path / "daemon.log").read_text()[-4000:])
    log.close()
