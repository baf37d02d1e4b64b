"""Run one headless turn of a host's real program against the mock model, in an isolated
HOME: the environment, the config files and the command line each host needs.

Each host gets a clean environment built here, not the test process's: PATH (Node 24 first,
then the system folders), HOME and TMPDIR in the test's folder, and the host's own settings.
Nothing of the real user's config or credentials is seen, and nothing is written outside
the test's folder but OpenClaw's empty lock files in `/tmp/openclaw-state-locks-<uid>/`
(a path it hard-codes, for locks between all its processes on the machine) and its compile
cache, in the install cache (see `base_env`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import zstandard

from e2e.hosts import Hosts
from e2e.mock_model import MODEL_ID, MockModel

CLAUDE_TIMEOUT_S = 120.0
# How long `claude -p`'s first request waits for MCP servers still connecting. Claude Code's
# default is 2 s, after which it sends the request without their tools ("still connecting"),
# which a loaded test machine sometimes exceeds while `assemble mcp` starts. The documented way
# to wait longer is CLAUDE_CODE_MCP_STARTUP_WAIT_MS (Claude Code >= 2.1.274, see its env-vars
# and Agent SDK "Connection timing" pages): the request goes as soon as the servers are
# connected, so this is a bound, not a sleep.
CLAUDE_MCP_STARTUP_WAIT_MS = 60_000
OPENCLAW_TIMEOUT_S = 180.0
DUMMY_ANTHROPIC_KEY = "sk-ant-e2e-dummy-key"
DUMMY_OPENAI_KEY = "sk-e2e-dummy-key"
OPENCLAW_PROVIDER = "mock"
OPENCLAW_AGENT = "main"  # OpenClaw's default agent id


@dataclass
class HostRun:
    """A finished host process."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        """The command, exit code and output, for an assertion message."""
        return (
            f"$ {' '.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f} s\n"
            f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}"
        )

    def json(self) -> Any:
        """stdout parsed as JSON (both hosts' `--json`/`--output-format json`)."""
        return json.loads(self.stdout)


class HostTimeout(AssertionError):
    """The host did not exit within its deadline (it was killed with its children)."""


def run_host(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float) -> HostRun:
    """Run `argv` in its own process group; wait for it to exit, up to `timeout` seconds.

    Raise HostTimeout, after killing the whole group, if it does not: a host's children
    (OpenClaw re-executes itself under Node) must not outlive the test.
    """
    started = time.monotonic()
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        run = HostRun(list(argv), -9, stdout, stderr, time.monotonic() - started)
        raise HostTimeout(f"did not exit within {timeout:.0f} s:\n{run.describe()}") from None
    return HostRun(list(argv), process.returncode, stdout, stderr, time.monotonic() - started)


def base_env(hosts: Hosts, home: Path) -> dict[str, str]:
    """The environment both hosts start from: nothing inherited from the test process."""
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    # OpenClaw compiles its 3,000 modules into `$TMPDIR/node-compile-cache` (30 MB) on a
    # first start; a user's /tmp keeps it between runs, so every test shares one, which its
    # first start finds warm (and the run leaves 30 MB less to delete per HOME).
    shared = tmp / "node-compile-cache"
    if not os.path.lexists(shared):
        hosts.compile_cache.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another thread's, for the same HOME
            shared.symlink_to(hosts.compile_cache, target_is_directory=True)
    return {
        "PATH": hosts.path(),
        "HOME": str(home),
        "TMPDIR": str(tmp),  # the hosts' logs, locks and compile caches stay in the test
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }


# -- Claude Code -------------------------------------------------------------------------


def claude_env(hosts: Hosts, home: Path, model: MockModel) -> dict[str, str]:
    """Claude Code headless against the mock: an API key (so no login), the mock's base
    URL, no traffic but the model's (no telemetry, error reports or update checks), and a
    first request that waits for the MCP servers to connect (`CLAUDE_MCP_STARTUP_WAIT_MS`)."""
    return {
        **base_env(hosts, home),
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": DUMMY_ANTHROPIC_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MCP_STARTUP_WAIT_MS": str(CLAUDE_MCP_STARTUP_WAIT_MS),
    }


def run_claude(
    hosts: Hosts,
    model: MockModel,
    *,
    home: Path,
    cwd: Path,
    prompt: str,
    args: Sequence[str] = (),
    timeout: float = CLAUDE_TIMEOUT_S,
) -> HostRun:
    """Run `claude -p PROMPT --output-format json ARGS` (print mode: one turn, then exit)
    in `cwd`, with HOME at `home`."""
    argv = [str(hosts.claude), "-p", prompt, "--output-format", "json", *args]
    return run_host(argv, env=claude_env(hosts, home, model), cwd=cwd, timeout=timeout)


def run_claude_command_line(
    hosts: Hosts, model: MockModel, *, home: Path, cwd: Path, line: str, timeout: float = 60.0
) -> HostRun:
    """Run a shell command line as a user would type it (`claude mcp add ...` as a setup text
    prints it), with `claude` on PATH and the environment of `run_claude`."""
    env = claude_env(hosts, home, model)
    env["PATH"] = os.pathsep.join([str(hosts.claude.parent), env["PATH"]])
    return run_host(["/bin/sh", "-c", line], env=env, cwd=cwd, timeout=timeout)


def claude_session_files(home: Path, session_id: str) -> list[Path]:
    """The transcript files Claude Code wrote for `session_id` under `home`: one,
    `~/.claude/projects/<the cwd, with '-' for '/'>/<session id>.jsonl`."""
    return sorted((home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))


# -- OpenClaw ----------------------------------------------------------------------------

OpenClawApi = Literal["openai-completions", "anthropic-messages"]


def openclaw_config(
    model: MockModel, workspace: Path, *, api: OpenClawApi = "openai-completions"
) -> dict[str, Any]:
    """A minimal `openclaw.json`: one custom provider at the mock, as the default model, and
    the agent workspace at `workspace`. Tests add to it (plugins, hooks) before writing it."""
    base_url = f"{model.base_url}/v1" if api == "openai-completions" else model.base_url
    return {
        "agents": {
            "defaults": {
                "workspace": str(workspace),
                "model": {"primary": f"{OPENCLAW_PROVIDER}/{MODEL_ID}"},
            }
        },
        "models": {
            "mode": "merge",
            "providers": {
                OPENCLAW_PROVIDER: {
                    "baseUrl": base_url,
                    "apiKey": DUMMY_ANTHROPIC_KEY
                    if api == "anthropic-messages"
                    else DUMMY_OPENAI_KEY,
                    "api": api,
                    "models": [
                        {
                            "id": MODEL_ID,
                            "name": "Mock model",
                            "reasoning": False,
                            "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": 128000,
                            "maxTokens": 4096,
                        }
                    ],
                }
            },
        },
    }


def write_openclaw_config(home: Path, config: Mapping[str, Any]) -> Path:
    """Write `config` where OpenClaw reads it under `home`, with its log file there too unless
    the config names one (OpenClaw's default is /tmp/openclaw/, outside the test); return the
    config's path."""
    config = {"logging": {"file": str(home / "openclaw.log")}, **config}
    path = home / ".openclaw" / "openclaw.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def openclaw_env(hosts: Hosts, home: Path) -> dict[str, str]:
    """OpenClaw headless: state and config under HOME; no helper downloads, no updates.
    The model's base URL and key are in the config file, not the environment."""
    return {**base_env(hosts, home), "OPENCLAW_OFFLINE": "1", "OPENCLAW_NO_AUTO_UPDATE": "1"}


def run_openclaw(
    hosts: Hosts,
    *,
    home: Path,
    workspace: Path,
    prompt: str,
    agent: str = OPENCLAW_AGENT,
    args: Sequence[str] = (),
    timeout: float = OPENCLAW_TIMEOUT_S,
) -> HostRun:
    """Run one embedded agent turn, `openclaw agent --local --agent AGENT --message PROMPT
    --json ARGS`, from `workspace`, with HOME at `home` (write the config first)."""
    argv = [
        str(hosts.openclaw),
        "agent",
        "--local",
        "--agent",
        agent,
        "--message",
        prompt,
        "--json",
        "--timeout",
        str(int(timeout)),
        *args,
    ]
    # The host's own deadline is the same; ours waits a little longer for its cleanup.
    return run_host(argv, env=openclaw_env(hosts, home), cwd=workspace, timeout=timeout + 30)


def openclaw_store(home: Path, agent: str = OPENCLAW_AGENT) -> Path:
    """The agent's SQLite store, which holds its sessions' transcripts (`transcript_events`)."""
    return home / ".openclaw" / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def openclaw_events(store: Path) -> list[dict[str, Any]]:
    """Every transcript event in the store, oldest first, decoded: what the host wrote, to
    set beside what the reader made of it when the two disagree."""
    connection = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT session_id, seq, event_json, event_zstd FROM transcript_events"
            " ORDER BY created_at, session_id, seq"
        ).fetchall()
    finally:
        connection.close()
    events = []
    for session_id, seq, event_json, event_zstd in rows:
        text = event_json
        if text is None:
            text = zstandard.ZstdDecompressor().decompressobj().decompress(event_zstd).decode()
        events.append({"session_id": session_id, "seq": seq, "event": json.loads(text)})
    return events


def openclaw_command(hosts: Hosts, argv: Sequence[str]) -> list[str]:
    """Given a command as `assemble setup openclaw` prints it (`openclaw ...`), return it with
    the installed program in place of `openclaw`."""
    if not argv or argv[0] != "openclaw":
        raise ValueError(f"not an openclaw command: {list(argv)}")
    return [str(hosts.openclaw), *argv[1:]]


def run_openclaw_cli(
    hosts: Hosts, argv: Sequence[str], *, home: Path, cwd: Path, timeout: float = 120.0
) -> HostRun:
    """Run an `openclaw ...` command (setup, config, cron) with HOME at `home`."""
    command = openclaw_command(hosts, argv)
    return run_host(command, env=openclaw_env(hosts, home), cwd=cwd, timeout=timeout)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def openclaw_gateway_settings(port: int, token: str) -> dict[str, Any]:
    """The `gateway` settings of a local Gateway on 127.0.0.1:`port` (the CLI finds it there,
    with the token, as on a user's machine)."""
    return {
        "mode": "local",
        "port": port,
        "bind": "loopback",
        "auth": {"mode": "token", "token": token},
    }


GATEWAY_READY_S = 120.0
GATEWAY_STOP_S = 30.0


class OpenClawGateway:
    """`openclaw gateway run` in the background, in its own process group, its output in
    `<home>/gateway.log`; `with` starts it and waits until it logs that it is ready, and
    stops it (SIGTERM, then SIGKILL of the whole group) on the way out."""

    def __init__(self, hosts: Hosts, *, home: Path, cwd: Path) -> None:
        self.hosts, self.home, self.cwd = hosts, home, cwd
        self.log_path = home / "gateway.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> OpenClawGateway:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(self.hosts.openclaw), "gateway", "run"],
                cwd=self.cwd,
                env=openclaw_env(self.hosts, self.home),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_until(self._ready, GATEWAY_READY_S, "the OpenClaw Gateway to log that it is ready")
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"the Gateway exited {self.process.returncode}:\n{self.log()}")
        return _GATEWAY_READY.search(self.log()) is not None

    def log(self) -> str:
        """What the Gateway printed so far, without colours."""
        text = self.log_path.read_bytes().decode("utf-8", "replace")
        return _ANSI.sub("", text)

    def stop(self) -> None:
        """Stop it and its children; wait for them."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=GATEWAY_STOP_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_GATEWAY_READY = re.compile(r"^\S+ \[gateway\] ready$", re.MULTILINE)


def run_openclaw_gateway_turn(
    hosts: Hosts,
    *,
    home: Path,
    workspace: Path,
    prompt: str,
    agent: str = OPENCLAW_AGENT,
    timeout: float = OPENCLAW_TIMEOUT_S,
) -> HostRun:
    """Run one agent turn through the running Gateway: `openclaw agent --agent AGENT
    --message PROMPT --json` (no --local)."""
    argv = ["openclaw", "agent", "--agent", agent, "--message", prompt, "--json"]
    argv += ["--timeout", str(int(timeout))]
    return run_openclaw_cli(hosts, argv, home=home, cwd=workspace, timeout=timeout + 30)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Check `condition` every 50 ms until it holds; raise TimeoutError naming `what` after
    `timeout` seconds. For state another process writes (files, logs), which has no event to
    wait on."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.05)


def printed_openclaw_commands(text: str) -> list[list[str]]:
    """The `openclaw ...` commands in the text `assemble setup openclaw` prints (its indented
    lines), each split as a shell splits it: what a user copies, and what the tests run."""
    return [shlex.split(line) for line in text.splitlines() if line.startswith("   openclaw ")]
