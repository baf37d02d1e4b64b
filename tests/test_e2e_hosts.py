"""End-to-end smoke tests: each agent host's real program (installed from npm, pinned) runs one
turn against the mock model on 127.0.0.1, with an isolated HOME, and the transcript it writes
reads back through `assembler.transcripts.read.read_recent`.

The tests marked `e2e` need npm (they skip, saying why, without it) and install the hosts into
a cache on first use (about 20 s and 1.1 GB; see tests/e2e/hosts.py). The unmarked tests here
check the harness itself (the mock's wire format, the install cache) and run everywhere.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from e2e.host_setup import HostSetup, user_env
from e2e.hosts import (
    CODEX_PINS,
    MARKER,
    PINS,
    Hosts,
    HostsUnavailable,
    default_cache_dir,
    ensure_hosts,
    installed_hosts,
)
from e2e.mock_model import MockModel, Text, ToolCall
from e2e.turns import (
    DUMMY_ANTHROPIC_KEY,
    DUMMY_OPENAI_KEY,
    OpenClawApi,
    claude_env,
    claude_session_files,
    openclaw_events,
    openclaw_store,
    run_claude,
)


@pytest.mark.e2e
def test_claude_code_completes_a_turn_with_a_tool_call_and_its_transcript_reads_back(
    hosts: Hosts, model: MockModel, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    setup = HostSetup(hosts, model, home, project, user_env(home))
    note = project / "NOTE.md"
    note.write_text("The secret word is pineapple.\n")
    prompt = "What is the secret word in NOTE.md? (e2e smoke test)"
    model.script(
        ToolCall("Read", {"file_path": str(note)}, text="Let me read NOTE.md."),
        Text("The secret word is pineapple."),
    )

    run = run_claude(hosts, model, home=home, cwd=project, prompt=prompt)

    assert run.returncode == 0, setup.failure(run)
    result = run.json()
    assert result["result"] == "The secret word is pineapple.", run.describe()
    assert model.pending() == []
    # What it sent: every request answered, two model calls (the tool result went back).
    assert [(r.method, r.route, r.status) for r in model.requests] == [
        ("POST", "/v1/messages", 200),
        ("POST", "/v1/messages", 200),
    ]
    first, second = model.turn_calls()
    assert first.headers["x-api-key"] == DUMMY_ANTHROPIC_KEY
    assert first.body["stream"] is True
    assert prompt in first.texts("user")
    assert any("Claude" in text for text in first.texts("system"))
    assert {"Read", "Bash", "Edit", "Write"} <= set(first.tool_names())
    assert any("The secret word is pineapple." in text for text in second.tool_results())

    # What it wrote: one session file, read back as the human's and the assistant's messages.
    files = claude_session_files(home, result["session_id"])
    assert len(files) == 1, sorted(home.rglob("*.jsonl"))
    read = setup.read_back(home / ".claude" / "projects" / "**" / "*.jsonl")
    assert [(m.role, m.text) for m in read.messages] == [
        ("user", prompt),
        ("assistant", "Let me read NOTE.md."),
        ("assistant", "The secret word is pineapple."),
    ], f"reader returned {read.messages}; the host wrote {files[0].read_text()[-6000:]}"
    assert [(s.path, s.format, s.messages) for s in read.sources] == [
        (str(files[0]), "claude-code", 3)
    ]
    assert {(m.session_id, m.cwd) for m in read.messages} == {(result["session_id"], str(project))}


# What OpenClaw's two provider adapters send the mock: route, the key's header and its value.
OPENCLAW_APIS = {
    "openai-completions": ("/v1/chat/completions", "authorization", f"Bearer {DUMMY_OPENAI_KEY}"),
    "anthropic-messages": ("/v1/messages", "x-api-key", DUMMY_ANTHROPIC_KEY),
}


@pytest.mark.e2e
def test_openclaw_completes_a_local_turn_with_a_tool_call_and_its_sqlite_transcript_reads_back(
    hosts: Hosts, tmp_path: Path
) -> None:
    # Each provider adapter in its own HOME with its own mock, side by side.
    with ThreadPoolExecutor(max_workers=len(OPENCLAW_APIS)) as pool:
        turns = [pool.submit(_openclaw_turn, hosts, tmp_path / api, api) for api in OPENCLAW_APIS]
        for turn in turns:
            turn.result()


def _openclaw_turn(hosts: Hosts, root: Path, api: OpenClawApi) -> None:
    """One local turn with a tool call through OpenClaw's `api` adapter, checked from what the
    mock got to what the store reads back as."""
    home, workspace = root / "home", root / "workspace"
    home.mkdir(parents=True)
    workspace.mkdir()
    with MockModel(root / "model-requests.jsonl") as model:
        _check_openclaw_turn(HostSetup(hosts, model, home, workspace, user_env(home)), api)


def _check_openclaw_turn(setup: HostSetup, api: OpenClawApi) -> None:
    model, home, workspace = setup.model, setup.home, setup.workspace
    (workspace / "NOTE.md").write_text("The secret word is mango.\n")
    setup.write_openclaw_config(api=api)
    prompt = "What is the secret word in NOTE.md? (e2e smoke test)"
    model.script(
        ToolCall("read", {"path": "NOTE.md"}, text="Reading NOTE.md."),
        Text("The secret word is mango."),
    )

    run = setup.openclaw_turn(prompt)

    result = run.json()
    assert [p["text"] for p in result["payloads"]] == ["The secret word is mango."], run.describe()
    session_id = result["meta"]["agentMeta"]["sessionId"]
    assert model.pending() == []
    route, key_header, key = OPENCLAW_APIS[api]
    assert [(r.method, r.route, r.status) for r in model.requests] == [
        ("POST", route, 200),
        ("POST", route, 200),
    ]
    first, second = model.turn_calls()
    assert first.headers[key_header] == key
    assert first.body["stream"] is True
    assert any(prompt in text for text in first.texts("user"))
    system = "\n".join(first.texts("system"))
    assert "OpenClaw" in system
    assert str(workspace / "AGENTS.md") in system  # the workspace's bootstrap files go there
    assert {"read", "write", "edit", "exec"} <= set(first.tool_names())
    assert any("The secret word is mango." in text for text in second.tool_results())

    # What it wrote: the agent's SQLite store, read back as the human's and assistant's messages.
    store = openclaw_store(home)
    assert store.is_file(), sorted(str(p) for p in home.rglob("*.sqlite"))
    read = setup.read_back(store)
    written = [
        (row["seq"], row["event"].get("type"), row["event"].get("message"))
        for row in openclaw_events(store)
    ]
    assert [(m.role, m.text) for m in read.messages] == [
        ("user", prompt),
        ("assistant", "Reading NOTE.md."),
        ("assistant", "The secret word is mango."),
    ], f"reader returned {read.messages}; the host wrote {written}"
    assert [(s.path, s.format, s.messages) for s in read.sources] == [
        (str(store), "openclaw-sqlite", 3)
    ]
    assert {m.session_id for m in read.messages} == {session_id}


# -- the harness itself (no host needed) ---------------------------------------------------


def test_without_npm_the_hosts_are_unavailable_with_a_reason_that_says_so(tmp_path: Path) -> None:
    with pytest.raises(HostsUnavailable, match="npm is not on PATH"):
        ensure_hosts(tmp_path / "cache", environ={"PATH": str(tmp_path / "no-bin")})


def _fake_install(cache: Path, pins: dict[str, str]) -> Hosts:
    hosts = installed_hosts(cache)
    for path in (hosts.node_bin / "node", hosts.openclaw, hosts.claude, hosts.codex):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
    (cache / MARKER).write_text(json.dumps({"pins": pins}))
    (cache / "codex" / MARKER).write_text(json.dumps({"pins": CODEX_PINS}))
    return hosts


def test_a_complete_install_of_the_pins_is_reused_without_running_npm(tmp_path: Path) -> None:
    expected = _fake_install(tmp_path / "cache", PINS)

    found = ensure_hosts(tmp_path / "cache", environ={"PATH": str(tmp_path / "no-bin")})

    assert found == expected


def test_an_install_of_other_versions_is_not_reused(tmp_path: Path) -> None:
    _fake_install(tmp_path / "cache", {**PINS, "openclaw": "2026.1.1"})

    with pytest.raises(HostsUnavailable, match="npm is not on PATH"):  # it set out to install
        ensure_hosts(tmp_path / "cache", environ={"PATH": str(tmp_path / "no-bin")})


def test_the_cache_folder_comes_from_the_environment_else_the_home_cache(tmp_path: Path) -> None:
    assert default_cache_dir({"SCRATCHPAD_E2E_CACHE": str(tmp_path / "c")}) == tmp_path / "c"
    assert default_cache_dir({"HOME": str(tmp_path)}) == (
        tmp_path / ".cache" / "scratchpad-assembler-e2e"
    )


def _post(model: MockModel, path: str, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(
        model.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sse_events(text: str) -> list[tuple[str | None, Any]]:
    events = []
    for frame in text.strip().split("\n\n"):
        name, data = None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                payload = line.removeprefix("data: ")
                data = payload if payload == "[DONE]" else json.loads(payload)
        events.append((name, data))
    return events


TOOLS_ANTHROPIC = [{"name": "scratchpad", "input_schema": {"type": "object"}}]
TOOLS_OPENAI = [{"type": "function", "function": {"name": "scratchpad", "parameters": {}}}]


def test_the_mock_streams_anthropic_events_in_the_real_order_with_a_tool_call(
    model: MockModel,
) -> None:
    model.script(ToolCall("mcp__scratchpad__scratchpad", {"action": "show"}, text="Checking."))
    body = {"model": "m", "stream": True, "tools": TOOLS_ANTHROPIC, "messages": []}

    status, text = _post(model, "/v1/messages", body)

    assert status == 200
    events = _sse_events(text)
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    text_parts = [d["delta"]["text"] for _, d in events if d.get("index") == 0 and "delta" in d]
    json_parts = [
        d["delta"]["partial_json"] for _, d in events if d.get("index") == 1 and "delta" in d
    ]
    assert "".join(text_parts) == "Checking."
    assert events[6][1]["content_block"]["name"] == "mcp__scratchpad__scratchpad"
    assert json.loads("".join(json_parts)) == {"action": "show"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_the_mock_answers_openai_streaming_and_plain_requests_from_the_script(
    model: MockModel,
) -> None:
    model.script(ToolCall("scratchpad", {"action": "show"}), Text("All done."))
    streamed = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": TOOLS_OPENAI,
        "messages": [{"role": "user", "content": "hi"}],
    }

    _, text = _post(model, "/v1/chat/completions", streamed)
    status, plain = _post(model, "/v1/chat/completions", {**streamed, "stream": False})

    chunks = [data for _, data in _sse_events(text)]
    assert chunks[-1] == "[DONE]"
    assert chunks[-2]["usage"]["total_tokens"] > 0
    calls = [c for chunk in chunks[:-2] for c in chunk["choices"][0]["delta"].get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "scratchpad"
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"action": "show"}
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    assert status == 200
    answer = json.loads(plain)["choices"][0]
    assert (answer["message"]["content"], answer["finish_reason"]) == ("All done.", "stop")


def test_the_mock_keeps_its_script_for_turn_calls_and_logs_everything(model: MockModel) -> None:
    model.script(Text("scripted"))

    _post(model, "/v1/messages", {"model": "m", "messages": []})  # a side call: no tools
    _, turn = _post(model, "/v1/messages", {"model": "m", "tools": TOOLS_ANTHROPIC})
    status, _ = _post(model, "/v1/unknown", {})

    assert json.loads(turn)["content"] == [{"type": "text", "text": "scripted"}]
    assert status == 404
    logged = [json.loads(line) for line in model.log_path.read_text().splitlines()]
    assert [(r["path"], r["turn"], r["status"]) for r in logged] == [
        ("/v1/messages", False, 200),
        ("/v1/messages", True, 200),
        ("/v1/unknown", False, 404),
    ]
    assert model.wait_for(lambda requests: len(requests) == 3, timeout=5)[1].body["model"] == "m"


def test_the_hosts_get_a_clean_environment(
    tmp_path: Path, model: MockModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "a real token of the user's")
    hosts = installed_hosts(tmp_path / "cache")

    env = claude_env(hosts, tmp_path / "home", model)

    assert "ANTHROPIC_AUTH_TOKEN" not in env
    assert (env["HOME"], env["ANTHROPIC_BASE_URL"]) == (str(tmp_path / "home"), model.base_url)
    assert env["PATH"].split(os.pathsep)[0] == str(hosts.node_bin)
    # `claude -p` waits for the MCP servers before its first request instead of its 2 s default.
    assert int(env["CLAUDE_CODE_MCP_STARTUP_WAIT_MS"]) >= 30_000
