"""End to end, with the hosts' real programs (pinned, tests/e2e/hosts.py) and the mock model:
what `assemble setup HOST --remove` prints (and `--apply` does) removes everything setup added,
so that a turn carries no scratchpad and the host's config names nothing of ours; and the
daemon with OpenClaw's Gateway: a fresh install whose agent store appears after the daemon
started gets its first turn read, and an idle Gateway does not keep the daemon assembling.

The OpenClaw removal's two ways (printed, applied) run side by side, each on its own HOME,
Gateway and mock. The daemon-and-Gateway flow runs alone: run beside the removal it once counted
3 assemblies in its idle minute (the Gateway still writing the turn when the minute began).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e.background import in_background
from e2e.host_setup import HostSetup
from e2e.hosts import Hosts
from e2e.mock_model import MockModel, Text
from e2e.turns import (
    OpenClawGateway,
    free_port,
    openclaw_env,
    openclaw_store,
    printed_openclaw_commands,
    run_claude_command_line,
    run_openclaw_gateway_turn,
    wait_until,
)
from test_e2e_claude_code import HEADER, MCP_TOOLS, MakeClaudeCode, claude_code  # noqa: F401

from assembler.daemon.systemd import assemble_executable
from assembler.hosts.openclaw.setup import OPENCLAW_PLUGIN_ID, openclaw_plugin_dir

pytestmark = pytest.mark.e2e

# How long the idle Gateway is watched: the count is of assemblies in this span, not a timing.
IDLE_S = 60.0
# `--apply` runs the hosts' own commands, OpenClaw's through its Gateway.
APPLY_TIMEOUT_S = 600.0
WORKSPACE = "it's my workspace"  # a space and a quote, for every printed line


def _our_jobs(setup: HostSetup) -> list[dict[str, Any]]:
    listing = setup.openclaw_cli(["openclaw", "cron", "list", "--all", "--json"])
    return [job for job in listing.json()["jobs"] if job.get("name") == OPENCLAW_PLUGIN_ID]


def _distinct_ports(count: int) -> list[int]:
    """`count` free ports, no two alike (each flow's Gateway listens on its own)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _remove_openclaw(hosts: Hosts, root: Path, how: str, port: int) -> None:
    """Set OpenClaw up as printed in a HOME of its own under `root`, then remove it `how`:
    "printed" runs the commands the removal prints (the job's id read off `cron list`),
    "apply" lets `--apply` run them; check that nothing of ours is left and that a turn
    carries no scratchpad."""
    with MockModel(root / "model-requests.jsonl") as model:
        # One HOME for OpenClaw and `assemble`, as a user has.
        setup = HostSetup.create(
            hosts, model, home=root / "home", workspace=root / "tmp" / WORKSPACE
        )
        home, workspace = setup.home, setup.workspace
        config_path = setup.write_openclaw_config(gateway_port=port)
        text = setup.assemble("setup", "openclaw").stdout
        install, configure, _inspect, cron, fallback = printed_openclaw_commands(text)
        setup.openclaw_cli(install, configure, fallback)
        argv = ["setup", "openclaw", "--remove"]
        removal = setup.assemble(*argv)
        uninstall, unset, listing, remove, unhook = printed_openclaw_commands(removal.stdout)
        assert (listing[1:3], remove[1:4]) == (["cron", "list"], ["cron", "rm", "<id>"])

        with OpenClawGateway(hosts, home=home, cwd=workspace) as gateway:
            setup.openclaw_cli(cron)
            [job] = _our_jobs(setup)
            if how == "printed":  # the user reads the job's id off `list` and puts it in `rm`
                setup.openclaw_cli(uninstall, unset)
                jobs = setup.openclaw_cli(listing).json()
                assert job["id"] in [j["id"] for j in jobs["jobs"]]
                setup.openclaw_cli([*remove[:3], job["id"]], unhook)
            else:
                env = {
                    **openclaw_env(hosts, home),
                    "PATH": f"{hosts.openclaw.parent}:{hosts.path()}",
                }
                applied = setup.assemble(*argv, "--apply", env=env, timeout=APPLY_TIMEOUT_S).stdout
                assert [line.split(":")[0] for line in applied.splitlines()[:4]] == [
                    "removed"
                ] * 4, applied
                assert f"openclaw cron rm {job['id']}" in applied
            assert _our_jobs(setup) == [], gateway.log()[-2000:]

        settings = json.loads(config_path.read_text())
        plugins = settings.get("plugins", {})
        assert OPENCLAW_PLUGIN_ID not in plugins.get("entries", {})  # not even "enabled": false
        assert str(openclaw_plugin_dir()) not in plugins.get("load", {}).get("paths", [])
        assert "bootstrap-extra-files" not in json.dumps(settings.get("hooks", {}))
        # The setup's first assembly left a fresh block, which the plugin would have sent.
        ready = json.loads((workspace / ".scratchpad" / "prefix.json").read_text())
        assert ready["expires_ms"] > time.time() * 1000 and HEADER in ready["block"]
        model.script(Text("Hello."))
        setup.openclaw_turn("after the removal")
        (request,) = model.turn_calls()
        assert HEADER not in request.dump() and "scratchpad" not in request.tool_names()


def test_the_openclaw_removal_leaves_no_plugin_no_cron_job_no_hook_and_no_scratchpad(
    hosts: Hosts, tmp_path: Path
) -> None:
    # Printed and applied, each in its own HOME with its own Gateway and model, side by side.
    ways = ["printed", "apply"]
    with ThreadPoolExecutor(max_workers=len(ways)) as pool:
        flows = [
            pool.submit(_remove_openclaw, hosts, tmp_path / how, how, port)
            for how, port in zip(ways, _distinct_ports(len(ways)), strict=True)
        ]
        for flow in flows:
            flow.result()


@pytest.mark.parametrize("scope", ["user", "local"])
def test_remove_apply_with_the_real_claude_leaves_no_hook_no_server_and_no_scratchpad(
    claude_code: MakeClaudeCode,  # noqa: F811 (the fixture, imported)
    hosts: Hosts,
    scope: str,
) -> None:
    setup = claude_code(scope)
    argv = ["setup", "claude-code", "--remove"]
    printed = setup.assemble(*argv, cwd=setup.project).stdout
    assert "claude mcp remove scratchpad --scope " + scope in printed

    applied = setup.assemble(
        *argv, "--apply", cwd=setup.project, path=str(hosts.claude.parent), timeout=APPLY_TIMEOUT_S
    )

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


@dataclass
class QuietGateway:
    """What the daemon-and-Gateway flow saw: the assemblies logged while the Gateway idled,
    and the daemon's log."""

    during: list[tuple[float, str]]
    log: str


def _daemon_and_gateway(
    hosts: Hosts, root: Path, environ: dict[str, str], stop: threading.Event
) -> QuietGateway:
    """A fresh install: start the daemon (in `environ`, HOME under `root`) before OpenClaw
    made the agent's store, run a first turn through the Gateway, check the daemon reads it,
    then watch the idle Gateway for IDLE_S (cut short only if `stop` is set, when the module
    is torn down without the test that checks it)."""
    log_path = root / "daemon.log"
    with MockModel(root / "model-requests.jsonl") as model, log_path.open("wb") as log:
        setup = HostSetup.create(
            hosts, model, home=root / "home", workspace=root / "tmp" / WORKSPACE, environ=environ
        )
        home, workspace = setup.home, setup.workspace
        store = openclaw_store(home)
        setup.write_openclaw_config(gateway_port=free_port())
        daemon = subprocess.Popen(
            [str(assemble_executable()), "daemon", "--workspace", str(workspace), "-v"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=setup.env,
        )
        try:
            wait_until(lambda: _messages_read(workspace) >= 0, 120, "the daemon's first assembly")
            assert _messages_read(workspace) == 0
            assert not store.exists()

            with OpenClawGateway(hosts, home=home, cwd=workspace) as gateway:
                model.script(Text("On it."))
                prompt = "why does the staging deploy fail? (first turn)"
                turn = run_openclaw_gateway_turn(
                    hosts, home=home, workspace=workspace, prompt=prompt
                )
                assert turn.returncode == 0, f"{turn.describe()}\n{gateway.log()[-3000:]}"
                assert store.exists()
                # No trigger but the daemon's own check for new sources (every 20 s) finds it.
                wait_until(lambda: _messages_read(workspace) >= 2, 120, "the daemon to read turn 1")
                assert "staging deploy" in (workspace / "SCRATCHPAD.md").read_text()

                # The turn's last writes (the reply, the session's metadata) may still be
                # arriving: the idle minute starts once no assembly came for SETTLE_S.
                _settle(workspace, stop)
                # The Gateway idles: its own housekeeping of the store is no change to assemble.
                start = time.time()
                deadline = time.monotonic() + IDLE_S
                while time.monotonic() < deadline and not stop.is_set():
                    assert daemon.poll() is None, log_path.read_text()[-3000:]
                    stop.wait(1.0)
                return QuietGateway(
                    [run for run in _assemblies(workspace) if run[0] >= start],
                    log_path.read_text(),
                )
        finally:
            if daemon.poll() is None:
                daemon.terminate()
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()


SETTLE_S = 10.0


def _settle(workspace: Path, stop: threading.Event, most: float = 120.0) -> None:
    """Return once no assembly was logged in `workspace` for SETTLE_S (at most `most` s, or
    when `stop` is set)."""
    deadline = time.monotonic() + most
    seen, since = len(_assemblies(workspace)), time.monotonic()
    while time.monotonic() < deadline and not stop.is_set():
        stop.wait(1.0)
        now = len(_assemblies(workspace))
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            return


@pytest.fixture(scope="module")
def quiet_gateway(
    hosts: Hosts, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Future[QuietGateway]]:
    """The daemon-and-Gateway flow, in a thread (`stop` ends its idle minute early if the module
    is torn down without the test that checks it)."""
    stop = threading.Event()
    root = tmp_path_factory.mktemp("quiet-gateway")
    with in_background(_daemon_and_gateway, hosts, root, stop) as flow:
        yield flow
        stop.set()  # only matters if the checking test did not run (deselected)


def test_a_daemon_started_before_openclaws_first_turn_reads_it_and_an_idle_gateway_stays_quiet(
    quiet_gateway: Future[QuietGateway],
) -> None:
    seen = quiet_gateway.result()
    print(f"assemblies while the Gateway idled {IDLE_S:.0f} s: {len(seen.during)} {seen.during}")
    assert len(seen.during) <= 2, (seen.during, seen.log[-4000:])
