"""End to end: Codex's real program (`codex exec`, pinned), set up exactly as `assemble setup
codex` prints it (its hooks.json, and its lines for config.toml: the feature flag, the hooks'
trust, the MCP server), runs turns against the mock model's Responses API; what it sent the
model is read from the mock's log, what it wrote from its rollout files.

The workspace's name has a space in it, so the printed paths must be quoted for the shell that
runs the hooks and in TOML. Codex runs in the workspace (its `cwd`), with its home folder
(`~/.codex`) in the test's isolated HOME, so an assembly finds its rollouts with no
configuration.

What the real program showed (0.171.0), which the hook and the setup text follow:
- `codex exec` runs hooks: SessionStart (source "startup") before a new session's first
  prompt, UserPromptSubmit before every prompt; what either adds becomes a `developer`
  message that the rollout keeps, so `codex exec resume` sends it again with the history.
- A hook of the user's hooks.json runs only when config.toml trusts it
  (`[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash`); an untrusted one is
  skipped without a word. The printed trust is what makes these tests' hooks run: no
  `--dangerously-bypass-hook-trust`.
- The model provider is a config.toml table (`[model_providers.mock]`, `wire_api =
  "responses"`) whose `env_key` names the variable holding the key: no login is needed.
  `--skip-git-repo-check` lets it run in a folder that is not a Git repository.
- MCP tools reach the model as a namespace (`mcp__scratchpad`, its tools inside). Codex waits
  1 s for an optional MCP server before its first request, then sends it without the server's
  tools; the harness sets the documented `mcp_optional_startup_grace_ms = 0` (wait up to the
  server's `startup_timeout_sec`), so a loaded machine's slow `assemble mcp` start does not
  race the first request. The request goes as soon as the server answered.
"""

from __future__ import annotations

import json
import textwrap
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e.daemon import RunningDaemon
from e2e.host_setup import HostSetup
from e2e.hosts import Hosts
from e2e.mock_model import MODEL_ID, LoggedRequest, MockModel, Reply, Text
from e2e.turns import base_env, run_host
from e2e.workspace import unique

from assembler.assembly.pipeline import run_once
from assembler.config.files import load_config
from assembler.daemon.systemd import assemble_executable
from assembler.hosts.codex.setup import codex_setup
from assembler.hosts.registry import HOSTS

pytestmark = pytest.mark.e2e

CODEX_TIMEOUT_S = 180.0
KEY_VARIABLE = "SCRATCHPAD_E2E_MOCK_KEY"
HEADER = "[Session Scratchpad - your persistent working memory]"
UPDATE = "[Scratchpad update since "
MCP_TOOLS = (
    "scratchpad",
    "session_scratchpad",
    "scratchpad_put",
    "scratchpad_read",
    "scratchpad_view",
    "memory_search",
)


@dataclass
class Codex(HostSetup):
    """Codex set up for a workspace as `assemble setup codex` says."""

    goal: str  # a line of the scratchpad found nowhere else: the agent's goal section

    def turn(
        self,
        prompt: str,
        *replies: Reply,
        resume: str | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        """Run `codex exec PROMPT` (or `codex exec resume ID PROMPT`) in the workspace, with
        `env` added to its environment (which its hooks inherit), the mock answering with
        `replies`; return the session's id, after checking the run succeeded and used every
        reply."""
        self.model.script(*replies)
        head = ["exec", "resume", resume] if resume else ["exec"]
        argv = [str(self.hosts.codex), *head, "--skip-git-repo-check", "--json", prompt]
        env = {**base_env(self.hosts, self.home), KEY_VARIABLE: "sk-e2e-dummy-key", **(env or {})}
        run = run_host(argv, env=env, cwd=self.workspace, timeout=CODEX_TIMEOUT_S)
        assert run.returncode == 0, self.failure(run)
        assert self.model.pending() == [], self.failure(run)
        events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        assert any(event.get("type") == "turn.completed" for event in events), self.failure(run)
        # Nothing of the printed config is deprecated or refused (Codex reports it as an item).
        notices = [
            event["item"].get("message", "")
            for event in events
            if event.get("type") == "item.completed" and event["item"].get("type") == "error"
        ]
        assert [n for n in notices if "config" in n or "deprecated" in n] == [], notices
        [thread] = [event["thread_id"] for event in events if event["type"] == "thread.started"]
        return str(thread)

    def rollouts(self, session_id: str) -> list[Path]:
        """The rollout files Codex wrote for a session."""
        return sorted(
            (self.home / ".codex" / "sessions").glob(f"*/*/*/rollout-*{session_id}.jsonl")
        )


MakeCodex = Callable[..., Codex]


@pytest.fixture
def codex(hosts: Hosts, model: MockModel, tmp_path: Path, isolated_home: Path) -> MakeCodex:
    """Return a function that sets Codex up for a new workspace holding a fresh scratchpad;
    `transcript` whether the workspace names a transcript of its own (so what Codex writes
    does not change the scratchpad), else the assemblies find Codex's sessions themselves."""

    def make(transcript: bool = False) -> Codex:
        setup = Codex.create(
            hosts,
            model,
            home=isolated_home,
            workspace=tmp_path / "my workspace",
            transcript=transcript,
            goal=unique("goal"),
        )
        setup.fresh_scratchpad(setup.goal)
        _configure(setup)
        return setup

    return make


def _configure(setup: Codex) -> None:
    """Apply what `assemble setup codex` prints: its hooks.json, and its config.toml lines
    after the mock's model provider."""
    printed = setup.assemble("setup", "codex")
    hooks, config_lines = _parse_setup(printed.stdout)
    expected = codex_setup(setup.workspace, assemble_executable(), {"HOME": str(setup.home)})
    assert hooks == expected.hooks, printed.stdout
    assert config_lines == expected.config_lines(), printed.stdout
    assert str(expected.hooks_json) in printed.stdout
    assert expected.hooks_json == setup.home / ".codex" / "hooks.json"

    codex_home = setup.home / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "hooks.json").write_text(json.dumps(hooks, indent=2) + "\n")
    provider = textwrap.dedent(
        f"""\
        model = "{MODEL_ID}"
        model_provider = "mock"
        mcp_optional_startup_grace_ms = 0

        [model_providers.mock]
        name = "Mock"
        base_url = "{setup.model.base_url}/v1"
        env_key = "{KEY_VARIABLE}"
        wire_api = "responses"

        """
    )
    config = provider + "\n".join(config_lines) + "\n"
    tomllib.loads(config)  # what was printed is TOML
    (codex_home / "config.toml").write_text(config)


def _parse_setup(text: str) -> tuple[dict[str, Any], list[str]]:
    """Given the setup text, return its hooks.json (the first indented `{ ... }` block) and
    its config.toml lines (from `[features]` to the MCP server's `args`), dedented."""
    lines = text.splitlines()
    start = lines.index("   {")
    end = lines.index("   }", start)
    hooks: dict[str, Any] = json.loads(textwrap.dedent("\n".join(lines[start : end + 1])))
    first = lines.index("   [features]")
    last = next(i for i in range(first, len(lines)) if lines[i].startswith("   args = "))
    return hooks, [line.removeprefix("   ") for line in lines[first : last + 1]]


def _count(request: LoggedRequest, needle: str) -> int:
    """How often `needle` occurs in the strings of the request's body."""
    found = 0
    stack: list[Any] = [request.body]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found += value.count(needle)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _developer_texts(request: LoggedRequest) -> list[str]:
    return request.texts("developer")


# -- the tests ------------------------------------------------------------------------------


def test_the_first_prompt_sends_the_scratchpad_once_and_the_mcp_tools(codex: MakeCodex) -> None:
    setup = codex()
    block = setup.ready()["block"].strip()
    prompt = "why does the deploy keep failing? (e2e)"

    setup.turn(prompt, Text("Looking at the deploy."))

    (request,) = setup.model.turn_calls()
    assert prompt in request.texts("user")
    # The hook ran before the prompt: the block went once, whole, as a developer message.
    assert _count(request, block) == 1, _developer_texts(request)
    assert _count(request, HEADER) == 1
    assert _count(request, setup.goal) == 1
    assert any(block in text for text in _developer_texts(request))
    # The MCP server connected: its tools are offered to the model, in a namespace of their own.
    offered = {
        tool["name"]: sorted(inner["name"] for inner in tool.get("tools", []))
        for tool in request.body["tools"]
        if tool.get("type") == "namespace"
    }
    assert offered.get("mcp__scratchpad") == sorted(MCP_TOOLS), request.tool_names()


def test_a_resumed_session_gets_no_second_copy_then_only_what_changed(codex: MakeCodex) -> None:
    setup = codex(transcript=True)
    # Notes that make the block long enough for a change to be sent as a change: a short block
    # is sent whole again, which costs about as much.
    for index in range(4):
        note = f"note {index}: " + " ".join(
            f"the staging host {index}-{word}" for word in range(12)
        )
        setup.assemble("pad", "append", "--section", "notes", note)
    session = setup.turn("first prompt (e2e)", Text("First answer."))
    before = setup.ready()
    # An assembly with nothing new: the clock lines move, the content does not. Earlier, not
    # later: a file made later than the clock is stale.
    earlier = datetime.fromisoformat(before["updated"]) - timedelta(minutes=3)
    setup.assemble("--once", "--now", earlier.isoformat())
    assert setup.ready()["block"] != before["block"]
    assert setup.ready()["digest"] == before["digest"]

    assert setup.turn("second prompt (e2e)", Text("Second answer."), resume=session) == session

    _, second = setup.model.turn_calls()
    assert "First answer." in second.texts("assistant")  # the session's history came along
    assert _count(second, HEADER) == 1  # the first turn's copy, and no other
    assert _count(second, setup.goal) == 1
    assert _count(second, UPDATE) == 0
    assert "Scratchpad stale" not in second.dump()  # the file was fresh: held, not dropped

    finding = unique("finding: staging uses port 8443")
    setup.assemble("pad", "append", "--section", "findings", finding)
    setup.turn("third prompt (e2e)", Text("Third answer."), resume=session)

    *_, third = setup.model.turn_calls()
    assert _count(third, HEADER) == 1  # still the one whole copy
    assert _count(third, setup.goal) == 1
    assert _count(third, UPDATE) == 1  # and the change alone
    assert _count(third, finding) == 1
    [update] = [text for text in _developer_texts(third) if UPDATE in text]
    assert finding in update and setup.goal not in update


def test_a_stale_scratchpad_is_not_sent_only_one_line_saying_so(codex: MakeCodex) -> None:
    setup = codex()
    setup.assemble("--once", "--now", (datetime.now(UTC) - timedelta(hours=2)).isoformat())
    assert datetime.fromisoformat(setup.ready()["expires"]) < datetime.now(UTC)

    setup.turn("a new session (e2e)", Text("Hello."))

    (request,) = setup.model.turn_calls()
    assert _count(request, setup.goal) == 0
    assert _count(request, HEADER) == 0
    assert _count(request, "[Scratchpad stale since") == 1


def test_working_on_is_what_the_human_typed_in_the_rollout_codex_wrote(codex: MakeCodex) -> None:
    setup = codex()
    prompt = "fix the flaky payment retry test in billing (e2e)"
    session = setup.turn(prompt, Text("Looking at the retry test."))
    [rollout] = setup.rollouts(session)

    read = setup.read_back(rollout)

    # The human's words only: not the environment, the instructions or what the hook added.
    assert [(m.role, m.text) for m in read.messages] == [
        ("user", prompt),
        ("assistant", "Looking at the retry test."),
    ], rollout.read_text()[-6000:]
    assert [(s.format, s.messages, s.bad_lines) for s in read.sources] == [("codex", 2, 0)]

    # No transcript source configured: the assembly finds the rollout where Codex keeps it.
    config = load_config(setup.workspace)
    assert config.transcripts.sources == []
    assembly = run_once(config, now=datetime.now(UTC), hosts=HOSTS)
    assert [(s.path, s.format, s.messages) for s in assembly.transcripts.sources] == [
        (str(rollout), "codex", 2)
    ]
    [working_on] = [line for line in assembly.text.splitlines() if "**Working on:**" in line]
    assert "payment retry test" in working_on, assembly.text


def test_remove_apply_takes_the_hooks_out_and_codex_sends_no_scratchpad(codex: MakeCodex) -> None:
    setup = codex()
    setup.turn("first prompt (e2e)", Text("First answer."))
    (first,) = setup.model.turn_calls()
    assert _count(first, HEADER) == 1

    config_toml = setup.home / ".codex" / "config.toml"
    provider = config_toml.read_text().split("[features]")[0]

    removed = setup.assemble("setup", "codex", "--remove", "--apply")

    assert removed.stdout.count("removed:") == 2, removed.describe()
    assert json.loads((setup.home / ".codex" / "hooks.json").read_text()) == {"hooks": {}}
    # The trust and the MCP server's tables cut out; the rest of the file as it was.
    assert config_toml.read_text() == provider + "[features]\nhooks = true\n"
    setup.turn("a new session after the removal (e2e)", Text("Hello."))
    _, after = setup.model.turn_calls()
    assert _count(after, HEADER) == 0
    assert _count(after, setup.goal) == 0
    namespaces = [tool["name"] for tool in after.body["tools"] if tool.get("type") == "namespace"]
    assert "mcp__scratchpad" not in namespaces, after.tool_names()


CONCISE = "- **How to answer:** concise"


def test_with_the_daemon_running_the_prompt_being_answered_counts_in_its_own_turn(
    codex: MakeCodex, tmp_path: Path
) -> None:
    # The workspace's own chat feeds the scratchpad: what Codex writes of the prompt does not,
    # so only the hand-off can make the block count it.
    setup = codex(transcript=True)
    prompt = "third time it fails, just give me the command"
    # The hook's wait for the daemon's answer: long, so that a loaded machine cannot make this
    # test race it (the budget's default is measured in bench/bench_prompt_answer.py).
    wait = {"ASSEMBLER_PROMPT_BUDGET_MS": "10000"}

    # Without a daemon: the ready block written before the prompt, which it cannot count.
    setup.turn(prompt, Text("Here it is."), env=wait)
    (before,) = setup.model.turn_calls()
    assert _count(before, setup.goal) == 1 and _count(before, CONCISE) == 0

    with RunningDaemon(setup.workspace, tmp_path, setup.env) as daemon:
        mark = len(setup.model.turn_calls())
        setup.turn(prompt, Text("Here it is again."), env=wait)
        log = daemon.log_text()

    (request,) = setup.model.turn_calls()[mark:]
    # The hook sent the prompt to the daemon, which answered the block with it counted.
    assert _count(request, CONCISE) == 1, _developer_texts(request)
    assert _count(request, setup.goal) == 1 and _count(request, HEADER) == 1
    assert _count(request, f"“{prompt}”") == 1  # the task the block names: this prompt
    assert CONCISE not in setup.ready()["block"]  # not published: the transcript is the record
    assert prompt not in log  # nor logged
