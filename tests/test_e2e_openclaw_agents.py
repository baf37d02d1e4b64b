"""End to end: two agents of one real OpenClaw Gateway (2026.9), each with its own workspace,
served by one `assemble daemon --all`, each against a mock model of its own (so that each
agent's requests are told apart, and its turns run beside the other's).

OpenClaw's config names both agents (`agents.entries.<id>.workspace`); the plugin is installed
and configured once for the Gateway, with the commands `assemble setup openclaw` prints for the
first workspace, less the `workspace` its config pins: the plugin then takes each agent's own
workspace from OpenClaw's hook and tool context (`ctx.workspaceDir`; docs/hosts/openclaw.md:
"without `workspace` it uses the agent's workspace"), where the printed value would give both
agents the first workspace's scratchpad. Only the first workspace is set up by name; the daemon
finds the second in OpenClaw's config, under the HOME the Gateway runs in.

    turn 1  each agent, its own made-up task: the daemon answers the plugin's prompt hand-off
            with that workspace's block; the model saves a finding with the agent's
            `scratchpad` tool, which lands in that workspace's journal
    then    each workspace's SCRATCHPAD.md names its own task and finding (the daemon read its
            agent's store), never the other's
    turn 2  each agent, the same nudge ("any update?", no task of its own): the block names the
            agent's own task (from its own transcript) and finding; nothing of the other
            agent's is in any of its requests
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from e2e.daemon import RunningDaemon
from e2e.host_setup import GATEWAY_TOKEN, HostSetup
from e2e.hosts import Hosts
from e2e.mock_model import MODEL_ID, LoggedRequest, MockModel, Text, ToolCall
from e2e.turns import (
    OPENCLAW_PROVIDER,
    HostRun,
    OpenClawGateway,
    free_port,
    openclaw_config,
    openclaw_gateway_settings,
    printed_openclaw_commands,
    run_host,
    run_openclaw_gateway_turn,
    wait_until,
    write_openclaw_config,
)
from e2e.workspace import unique, write_workspace

from assembler.daemon.systemd import assemble_executable
from assembler.hosts.openclaw.setup import OPENCLAW_PLUGIN_ID

pytestmark = pytest.mark.e2e

HEADER = "[Session Scratchpad - your persistent working memory]"
FOOTER = "[End Scratchpad]"
AGENTS = ("alpha", "beta")
# A turn that names no task (a nudge): the block's task must come from the agent's transcript.
NUDGE = "any update?"
# The plugin's wait for the daemon's answer: long, so that a loaded machine cannot race it.
PROMPT_BUDGET_MS = 10000
# The daemon looks for new transcript stores every 20 s (a fresh agent has none at its start).
READ_WAIT_S = 120.0

T = TypeVar("T")


def _block(request: LoggedRequest, prompt: str) -> str:
    """The scratchpad block in the user message of `request` that carries `prompt` (the
    newest such message)."""
    found = [text for text in request.texts("user") if prompt in text]
    assert found, f"{prompt!r} is not in the request: {request.texts('user')}"
    text = found[-1]
    assert HEADER in text and FOOTER in text, f"no scratchpad block before {prompt!r}: {text}"
    return text[text.index(HEADER) : text.index(FOOTER)]


def _journal(workspace: Path) -> list[tuple[str, str, str]]:
    """The tool's entries in the workspace's sections journal: (section, action, content)."""
    path = workspace / ".scratchpad" / "sections.jsonl"
    entries = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [(e["section"], e["action"], e["content"]) for e in entries if e["source"] == "tool"]


def _openclaw_config(models: dict[str, MockModel], workspaces: dict[str, Path]) -> dict[str, Any]:
    """OpenClaw's config: each agent in `agents.entries` with its workspace and, as its model,
    a provider at its own mock (the first agent's is the default model too), and a Gateway."""
    first = AGENTS[0]
    config = openclaw_config(models[first], workspaces[first])
    agents = config["agents"]
    del agents["defaults"]["workspace"]  # each agent's own entry names its workspace
    providers = config["models"]["providers"]
    template = providers.pop(OPENCLAW_PROVIDER)
    agents["entries"] = {}
    for agent in AGENTS:
        provider = f"{OPENCLAW_PROVIDER}-{agent}"
        providers[provider] = {**template, "baseUrl": f"{models[agent].base_url}/v1"}
        model = {"primary": f"{provider}/{MODEL_ID}"}
        agents["entries"][agent] = {"workspace": str(workspaces[agent]), "model": model}
    agents["defaults"]["model"] = agents["entries"][first]["model"]
    agents["ownership"] = "explicit"  # OpenClaw 2026.9 asks it of a roster of two
    config["gateway"] = openclaw_gateway_settings(free_port(), GATEWAY_TOKEN)
    return config


def _each(run: Callable[[str], T]) -> dict[str, T]:
    """`run(agent)` for every agent at once (their turns are mostly waiting); the results."""
    with ThreadPoolExecutor(max_workers=len(AGENTS)) as pool:
        futures = {agent: pool.submit(run, agent) for agent in AGENTS}
        return {agent: future.result() for agent, future in futures.items()}


def test_two_agents_of_one_gateway_each_get_their_own_workspaces_scratchpad_from_one_daemon(
    hosts: Hosts, model: MockModel, tmp_path: Path
) -> None:
    with MockModel(tmp_path / "beta-model-requests.jsonl") as other_model:
        _two_agents(hosts, {AGENTS[0]: model, AGENTS[1]: other_model}, tmp_path)


def test_the_openclaw_pages_daemon_of_every_agent_is_the_one_run_here() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "hosts" / "openclaw.md").read_text()
    section = page[page.index("### Every agent with one daemon\n") :]
    [block] = re.findall(r"```sh\n(.*?)```", section.split("\n#")[0], re.DOTALL)
    assert block.strip() == "assemble daemon --all"  # what RunningDaemon(None, ...) runs


def _two_agents(hosts: Hosts, models: dict[str, MockModel], tmp_path: Path) -> None:
    # One HOME for OpenClaw and `assemble`, as a user has: the daemon finds OpenClaw's state
    # folder (`~/.openclaw`) as the Gateway does.
    setup = HostSetup.create(
        hosts, models[AGENTS[0]], home=tmp_path / "home", workspace=tmp_path / "workspace-alpha"
    )
    home = setup.home
    second = tmp_path / "workspace-beta"
    second.mkdir()
    write_workspace(second, transcript=False)
    workspaces = dict(zip(AGENTS, (setup.workspace, second), strict=True))
    others = {AGENTS[0]: AGENTS[1], AGENTS[1]: AGENTS[0]}
    config_path = write_openclaw_config(home, _openclaw_config(models, workspaces))

    # The plugin, as `assemble setup openclaw` prints it: one install and one config for the
    # Gateway, which serves every agent; its config without the one workspace it pins.
    text = setup.assemble("setup", "openclaw", "--no-assemble").stdout
    install, configure, *_ = printed_openclaw_commands(text)
    assert configure[1:4] == ["config", "set", "--batch-json"]
    settings = json.loads(configure[4])
    [plugin] = [s for s in settings if s["path"] == f"plugins.entries.{OPENCLAW_PLUGIN_ID}.config"]
    assemble = str(assemble_executable())
    assert plugin["value"] == {"workspace": str(setup.workspace), "assemble": assemble}
    del plugin["value"]["workspace"]
    plugin["value"]["promptBudgetMs"] = PROMPT_BUDGET_MS
    setup.openclaw_cli(install, [*configure[:4], json.dumps(settings)])
    entry = json.loads(config_path.read_text())["plugins"]["entries"][OPENCLAW_PLUGIN_ID]
    assert entry["config"] == {"assemble": assemble, "promptBudgetMs": PROMPT_BUDGET_MS}

    tasks = {agent: unique(f"{agent} export") for agent in AGENTS}
    prompts = {
        agent: f"Find out why the {tasks[agent]} job stalls every night." for agent in AGENTS
    }
    findings = {agent: unique(f"{agent} finding") for agent in AGENTS}

    with (
        OpenClawGateway(hosts, home=home, cwd=setup.workspace) as gateway,
        RunningDaemon(None, tmp_path, setup.env) as daemon,
    ):

        def turn(agent: str, prompt: str) -> HostRun:
            run = run_openclaw_gateway_turn(
                hosts, home=home, workspace=workspaces[agent], prompt=prompt, agent=agent
            )
            assert run.returncode == 0, (
                f"{run.describe()}\n--- gateway ---\n{gateway.log()[-4000:]}"
                f"\n--- daemon ---\n{daemon.log_text()[-4000:]}"
            )
            return run

        # Both workspaces served by the one daemon: the first set up by name, the second found
        # in OpenClaw's config.
        status = run_host([assemble, "status", "--json"], env=setup.env, cwd=tmp_path, timeout=60)
        served = {
            Path(known["workspace"]).resolve(): (known["kind"], known["served_by"])
            for known in json.loads(status.stdout)["workspaces"]
        }
        kinds = {agent: served.get(workspaces[agent].resolve(), ("", "")) for agent in AGENTS}
        assert [kind for kind, _by in kinds.values()] == ["set up", "OpenClaw"], status.describe()
        assert all(by.startswith("daemon --all") for _kind, by in kinds.values()), status.describe()

        # Turn 1: each agent's task; its model saves a finding with the agent's tool.
        for agent in AGENTS:
            models[agent].script(
                ToolCall(
                    "scratchpad",
                    {"action": "append", "section": "findings", "content": findings[agent]},
                    text="Noting that.",
                ),
                Text("Noted."),
            )
        firsts = _each(lambda agent: turn(agent, prompts[agent]))

        # Each workspace's file: its own task, once the daemon read its agent's store.
        def read_back() -> bool:
            files = {agent: workspaces[agent] / "SCRATCHPAD.md" for agent in AGENTS}
            return all(f.exists() and tasks[a] in f.read_text() for a, f in files.items())

        wait_until(read_back, READ_WAIT_S, "each workspace's file to name its agent's task")

        # Turn 2: the same nudge to each agent.
        for agent in AGENTS:
            models[agent].script(Text("Still on it."))
        seconds = _each(lambda agent: turn(agent, NUDGE))
        log = daemon.log_text()

    print(
        "turn seconds:",
        {agent: (round(firsts[agent].seconds), round(seconds[agent].seconds)) for agent in AGENTS},
    )
    for agent in AGENTS:
        other, workspace, model = others[agent], workspaces[agent], models[agent]
        assert model.pending() == []
        asked, after_tool, nudged = model.turn_calls()
        # Turn 1: the daemon's block, with this agent's task (prefix.json, from before the
        # turn, names none); the tool, on its own workspace.
        assert "scratchpad" in asked.tool_names()
        assert tasks[agent] in _block(asked, prompts[agent])
        answer = json.loads(after_tool.tool_results()[-1])
        assert answer["ok"] is True, answer
        assert _journal(workspace) == [("findings", "append", findings[agent])]
        # Turn 2: its own task (from its own transcript) and finding in the block.
        block = _block(nudged, NUDGE)
        assert tasks[agent] in block and findings[agent] in block, block
        assert nudged.dump().count(HEADER) == 1
        for request in model.requests:
            sent = json.dumps(request.body, ensure_ascii=False)
            assert tasks[other] not in sent and findings[other] not in sent, sent[-4000:]
        # Its own SCRATCHPAD.md.
        scratchpad = (workspace / "SCRATCHPAD.md").read_text()
        assert tasks[agent] in scratchpad and findings[agent] in scratchpad, scratchpad
        assert tasks[other] not in scratchpad and findings[other] not in scratchpad, scratchpad
    assert daemon.returncode == 0, log[-4000:]
    assert "Traceback" not in log, log[-4000:]
