"""A host's real program set up for a workspace, as every end-to-end test sets one up: the
installed programs, the mock model they talk to, the host's HOME, the workspace, and the
environment `assemble` runs in there as the user's; what the tests do with it (run `assemble`
on the workspace, read the ready block, read a transcript back, set OpenClaw up and run it),
and what a failure shows.

    setup = HostSetup.create(hosts, model, home=home, workspace=tmp_path / "my workspace")
    setup.fresh_scratchpad(unique("goal"))      # its goal section, then `assemble --once`
    printed = setup.assemble("setup", "codex")  # checked to have succeeded
    block = setup.ready()["block"]

A host's own steps (its turn, its printed setup applied) are its test module's, in a subclass
(`ClaudeCode` in test_e2e_claude_code.py, `Codex` in test_e2e_codex.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from assembler.daemon.systemd import assemble_executable
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import TranscriptRead, read_recent
from e2e.background import home_env
from e2e.hosts import Hosts
from e2e.mock_model import MockModel
from e2e.turns import (
    HostRun,
    OpenClawApi,
    openclaw_config,
    openclaw_gateway_settings,
    run_host,
    run_openclaw,
    run_openclaw_cli,
    write_openclaw_config,
)
from e2e.workspace import write_workspace

ASSEMBLE_TIMEOUT_S = 120.0
# The hosts' own variables that would move their folders out of the test's HOME.
HOST_FOLDERS = (
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_CONFIG_PATH",
    "OPENCLAW_HOME",
)
GATEWAY_TOKEN = "e2e-gateway-token"


def user_env(home: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Given the user's HOME and an environment (else this process's; a flow in a thread must
    give the copy it was started with, see `e2e.background`), return the environment the user
    runs `assemble` in: that one without the hosts' folder settings, with HOME and the XDG
    folders under `home`."""
    base = os.environ if environ is None else environ
    return {**{k: v for k, v in base.items() if k not in HOST_FOLDERS}, **home_env(home)}


@dataclass
class HostSetup:
    """A host set up for a workspace (see the module's docstring)."""

    hosts: Hosts
    model: MockModel
    home: Path  # the host's HOME
    workspace: Path
    env: dict[str, str]  # what `assemble` runs in: the user's environment (`user_env`)

    @classmethod
    def create(
        cls,
        hosts: Hosts,
        model: MockModel,
        *,
        home: Path,
        workspace: Path,
        transcript: bool = False,
        user_home: Path | None = None,
        environ: Mapping[str, str] | None = None,
        **more: Any,
    ) -> Self:
        """Given the installed hosts, the mock, the host's HOME and a workspace folder to make:
        make both, the workspace with its config and, with `transcript`, a chat of its own
        (`e2e.workspace.write_workspace`); return the set-up, `assemble` run as the user of
        `user_home` (else the host's HOME) in `environ` (see `user_env`), with `more` (a
        subclass's fields)."""
        home.mkdir(parents=True, exist_ok=True)
        workspace.mkdir(parents=True)
        write_workspace(workspace, transcript=transcript)
        env = user_env(user_home or home, environ)
        return cls(hosts, model, home, workspace, env, **more)

    def assemble(
        self,
        *args: str,
        cwd: Path | None = None,
        path: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = ASSEMBLE_TIMEOUT_S,
    ) -> HostRun:
        """Given `assemble`'s arguments, run `assemble ARGS --workspace WORKSPACE` as the user
        would, in `cwd` (else the workspace), with `path` first on PATH (a host's program) and
        `env` over the user's environment; return the run, after checking it succeeded."""
        environ = {**self.env, **(env or {})}
        if path is not None:
            environ["PATH"] = os.pathsep.join([path, environ.get("PATH", "")])
        argv = [str(assemble_executable()), *args, "--workspace", str(self.workspace)]
        run = run_host(argv, env=environ, cwd=cwd or self.workspace, timeout=timeout)
        assert run.returncode == 0, run.describe()
        return run

    def fresh_scratchpad(self, goal: str) -> None:
        """Given a line found nowhere else, save it as the agent's goal section and assemble:
        the workspace's ready block is fresh and carries it."""
        self.assemble("pad", "append", "--section", "goal", goal)
        self.assemble("--once")

    def ready(self) -> dict[str, Any]:
        """The ready block the hosts' hooks and plugin send (`.scratchpad/prefix.json`)."""
        value: dict[str, Any] = json.loads(
            (self.workspace / ".scratchpad" / "prefix.json").read_text()
        )
        return value

    def failure(self, run: HostRun) -> str:
        """Given a host's run, return it and the mock's last requests, for an assertion's
        message."""
        return f"{run.describe()}\n--- requests ---\n{self.model.log_path.read_text()[-8000:]}"

    def read_back(self, *sources: str | Path) -> TranscriptRead:
        """Given transcript globs (what a host wrote), return what reading them now gives,
        with the registry's hosts, no window and no limit but 100 messages."""
        return read_recent(
            [str(source) for source in sources],
            base=self.home,
            now=datetime.now(UTC),
            max_messages=100,
            lookback=None,
            hosts=HOSTS,
        )

    # -- OpenClaw ------------------------------------------------------------------------

    def write_openclaw_config(
        self, *, api: OpenClawApi = "openai-completions", gateway_port: int | None = None
    ) -> Path:
        """Write OpenClaw's config into the host's HOME: the mock as its model (through `api`),
        the workspace as its agent's, its log in HOME and, given a port, a local Gateway on it;
        return the config's path."""
        config = openclaw_config(self.model, self.workspace, api=api)
        if gateway_port is not None:
            config["gateway"] = openclaw_gateway_settings(gateway_port, GATEWAY_TOKEN)
        return write_openclaw_config(self.home, config)

    def openclaw_cli(self, *commands: Sequence[str]) -> HostRun:
        """Given `openclaw ...` commands as `assemble setup openclaw` prints them, run each in
        the workspace with HOME at the host's, checking each succeeded; return the last run."""
        runs = []
        for command in commands:
            run = run_openclaw_cli(self.hosts, command, home=self.home, cwd=self.workspace)
            assert run.returncode == 0, run.describe()
            runs.append(run)
        return runs[-1]

    def openclaw_turn(self, prompt: str) -> HostRun:
        """Given a prompt, run one local OpenClaw turn on it in the workspace; return the run,
        after checking it succeeded."""
        run = run_openclaw(self.hosts, home=self.home, workspace=self.workspace, prompt=prompt)
        assert run.returncode == 0, self.failure(run)
        return run
