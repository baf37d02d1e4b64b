"""`assemble mcp` (assembler/mcp_server.py) as a subprocess, driven by the MCP SDK's own stdio
client: the tools it lists, what each call does, and the errors an agent gets back; then fed raw
bytes, for the JSON-RPC errors a broken line gets.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters, types

from assembler.config.files import load_config
from assembler.hosts.mcp.server import RejectedLine, read_message
from assembler.hosts.registry import HOSTS
from assembler.observations.store import store_for
from assembler.pad.sections import scratchpad_for

REPO = Path(__file__).resolve().parent.parent
TOOLS = {
    "scratchpad",
    "session_scratchpad",
    "scratchpad_put",
    "scratchpad_read",
    "scratchpad_view",
    "memory_search",
}


LOG = "".join(f"line {i} ok\n" for i in range(1, 2001)) + "line 2001 FATAL disk full\n"
BINARY = b"PK\x03\x04" + bytes(range(256)) * 40  # a zip-like file that is not UTF-8
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def make_workspace(folder: Path) -> Path:
    # BM25 only: the server never loads torch in these tests.
    (folder / "assembler.toml").write_text(
        '[memory]\nmodel = "none"\n[caps]\nagent = 200\n[observations]\nmax_read_chars = 10000\n'
    )
    (folder / "MEMORY.md").write_text(
        "# Infra\n\nThe staging cluster runs on k3s; kubeconfig lives in ~/.kube/staging.\n\n"
        "# People\n\nRay prefers the command first, explanations after.\n\n"
        f"# Keys\n\nThe release bot pushes with GITHUB_TOKEN={TOKEN}.\n"
    )
    return folder


def server_command(workspace: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from assembler.cli.main import main; sys.exit(main())",
        "mcp",
        "--workspace",
        str(workspace),
    ]


def server_environment(home: Path) -> dict[str, str]:
    environment = {"HOME": str(home)}
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        environment[name] = str(home / name.lower())
    return environment


def with_server(workspace: Path, home: Path, script: Callable[[Client], Awaitable[None]]) -> None:
    """Start `assemble mcp` on the workspace, run the script against it, and stop it."""
    command, *args = server_command(workspace)
    server = StdioServerParameters(
        command=command, args=args, env=server_environment(home), cwd=str(REPO)
    )

    async def session() -> None:
        with anyio.fail_after(60):
            async with Client(server) as client:
                await script(client)

    anyio.run(session)


@dataclass
class Session:
    """One server run (starting it costs a second or two), and what each call returned."""

    workspace: Path
    results: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    entry_id: str = ""
    earlier_id: str = ""
    binary_id: str = ""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    home = tmp_path_factory.mktemp("home")
    run = Session(make_workspace(tmp_path_factory.mktemp("workspace")))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        config = load_config(run.workspace)
    with store_for(config) as store:
        store.start_turn("earlier")
        run.earlier_id = store.put("x" * 5000 + "END")["scratchpad_id"]
        store.start_turn("now")
        # As a host's runtime parks a tool's binary output (fs_read with encoding=binary).
        binary = {"ok": True, "content": BINARY, "path": "/tmp/a.zip", "encoding": "binary"}
        run.binary_id = store.put(binary, step=2, executor="fs_read")["scratchpad_id"]
    results = run.results

    async def script(client: Client) -> None:
        run.tools.update({tool.name: tool for tool in (await client.list_tools()).tools})

        async def call(key: str, tool: str, arguments: dict[str, Any]) -> Any:
            results[key] = await client.call_tool(tool, arguments)
            return results[key]

        # Sections.
        await call("write", "scratchpad", {"action": "write", "section": "goal", "content": "Fix"})
        await call("op", "scratchpad", {"op": "write", "content": "x"})
        await call(
            "session", "session_scratchpad", {"content": "## Plan\n1. logs", "mode": "replace"}
        )
        await call("over", "session_scratchpad", {"content": "word " * 400, "mode": "append"})
        await call("no_content", "session_scratchpad", {"mode": "append"})
        await call("read", "scratchpad", {"action": "read"})
        await call("unknown", "no_such_tool", {})
        # Observations.
        put = await call(
            "put",
            "scratchpad_put",
            {"content": LOG, "metadata": {"path": "/var/log/app.log"}, "step": 1},
        )
        run.entry_id = entry_id = put.structured_content["scratchpad_id"]
        for mode, extra in (
            ("head", {"n": 20}),
            ("tail", {"n": 26}),
            ("range", {"start": 11, "end": 22}),
            ("lines", {"start": 2000, "end": 2001}),
            ("grep", {"pattern": "FATAL", "context": 1}),
        ):
            await call(mode, "scratchpad_read", {"scratchpad_id": entry_id, "mode": mode, **extra})
        read = "scratchpad_read"
        await call("bad_regex", read, {"scratchpad_id": entry_id, "mode": "grep", "pattern": "(["})
        await call("too_big", read, {"scratchpad_id": entry_id, "mode": "full"})
        await call("missing", read, {"scratchpad_id": "0000"})
        await call("wrong_key", read, {"id": entry_id})
        earlier = {"scratchpad_id": run.earlier_id, "mode": "tail", "n": 3}
        await call("hidden", read, earlier)
        await call("asked", read, {**earlier, "any_turn": True})
        await call("full", read, {**earlier, "mode": "full", "any_turn": True})
        await call("tiny", "scratchpad_put", {"content": "port is 8080"})
        # A binary observation: byte ranges, shown as a hex dump.
        binary = {"scratchpad_id": run.binary_id}
        await call("binary_head", read, {**binary, "n": 20})
        await call("binary_range", read, {**binary, "mode": "range", "start": 260, "end": 276})
        await call("binary_tail", read, {**binary, "mode": "tail", "n": 4})
        await call("binary_grep", read, {**binary, "mode": "grep", "pattern": "PK"})
        # The scratchpad as hosts prepend it: a tool and a resource.
        await call("view", "scratchpad_view", {})
        results["resources"] = (await client.list_resources()).resources
        results["resource"] = await client.read_resource("scratchpad://current")
        # Memory.
        await call("hit", "memory_search", {"query": "staging kubeconfig"})
        await call("bad_k", "memory_search", {"query": "x", "k": 0})
        await call("secret", "memory_search", {"query": "release bot pushes token"})

    with_server(run.workspace, home, script)
    return run


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_the_server_lists_its_tools_with_the_seeds_schemas(session: Session) -> None:
    listed = session.tools
    assert set(listed) == TOOLS
    pad = listed["scratchpad"].input_schema
    assert pad["required"] == ["action"]
    assert pad["properties"]["action"]["enum"] == ["write", "append", "read", "clear"]
    assert set(pad["properties"]) == {"action", "section", "content"}
    assert listed["session_scratchpad"].input_schema["properties"]["mode"]["enum"] == [
        "replace",
        "append",
    ]
    read = listed["scratchpad_read"].input_schema
    assert read["required"] == ["scratchpad_id"]
    assert read["properties"]["mode"]["enum"] == ["full", "head", "tail", "range", "lines", "grep"]
    # Each description tells the agent when to reach for the tool.
    assert "When to use" in listed["scratchpad"].description
    assert "survives context compaction" in listed["session_scratchpad"].description
    assert "Budget: ~200 tokens" in listed["session_scratchpad"].description
    assert "scratchpad_id" in listed["scratchpad_read"].description
    assert "before answering questions about prior work" in listed["memory_search"].description


def test_scratchpad_calls_reach_the_sections_journal(session: Session) -> None:
    results = session.results
    assert not results["write"].is_error
    assert results["write"].structured_content["ok"] is True
    assert not results["session"].is_error
    read = text_of(results["read"])
    assert "## goal\nFix" in read and "## main\n## Plan\n1. logs" in read
    # What the agent wrote over MCP is in the workspace's journal, for SCRATCHPAD.md.
    pad = scratchpad_for(load_config(session.workspace))
    assert pad.read("goal").data["content"] == "Fix"
    assert pad.read("main").data["content"] == "## Plan\n1. logs"


def test_scratchpad_mistakes_come_back_as_tool_errors_with_the_helpful_text(
    session: Session,
) -> None:
    results = session.results
    for name, message in (
        ("op", "The parameter is called `action`, not `op`"),
        ("over", "Use mode 'replace' to rewrite, or reduce content."),
        ("no_content", "Missing `content`"),
        ("unknown", "Unknown tool 'no_such_tool'"),
    ):
        assert results[name].is_error, name
        assert message in text_of(results[name]), name


def test_put_parks_the_text_and_returns_the_synthetic_observation(session: Session) -> None:
    result = session.results["put"]
    put = result.structured_content
    assert put["size_bytes"] == len(LOG) and put["kind"] == "text"
    assert put["metadata"] == {"path": "/var/log/app.log"}
    assert f"[... {len(LOG) - 1000} characters omitted ...]" in put["summary"]
    assert json.loads(text_of(result))["scratchpad_id"] == put["scratchpad_id"]
    assert put["_note"].startswith("Large observation saved in scratchpad.")


def test_put_of_a_tiny_text_parks_it_with_a_note_that_does_not_call_it_large(
    session: Session,
) -> None:
    tiny = session.results["tiny"]
    assert not tiny.is_error
    put = tiny.structured_content
    assert put["summary"] == "port is 8080" and put["size_bytes"] == 12
    assert "Large" not in put["_note"]
    assert put["_note"].startswith("Observation saved in scratchpad as asked (it is under the")


def test_read_returns_each_mode_s_slice_after_a_line_saying_where_it_is(session: Session) -> None:
    results = session.results
    assert results["head"].content[1].text == LOG[:20]
    assert results["head"].content[0].text.startswith(f"[scratchpad {session.entry_id}: ")
    assert "next: mode=range start=20" in results["head"].content[0].text
    assert results["tail"].content[1].text == "line 2001 FATAL disk full\n"
    assert results["range"].content[1].text == LOG[11:22]
    assert results["lines"].content[1].text == "line 2000 ok\nline 2001 FATAL disk full\n"
    assert results["grep"].content[1].text == "2000-line 2000 ok\n2001:line 2001 FATAL disk full"
    assert results["grep"].structured_content["matches"] == 1


def test_read_sends_the_slice_once_as_text_and_only_its_place_as_structured_content(
    session: Session,
) -> None:
    results = session.results
    full = results["full"]
    assert not full.is_error
    assert full.content[1].text == "x" * 5000 + "END"
    structured = full.structured_content
    assert "content" not in structured and "content_base64" not in structured
    assert (structured["start"], structured["end"], structured["total"]) == (0, 5003, 5003)
    assert structured["position"] == full.content[0].text.strip("[]")
    assert len(json.dumps(structured)) < 500
    for name in ("head", "tail", "range", "lines", "binary_head"):
        data = results[name].structured_content
        assert "content" not in data and "content_base64" not in data, name
    grep = results["grep"].structured_content
    assert grep["hits"] == [{"line": 2000, "match": False}, {"line": 2001, "match": True}]


def test_a_binary_observation_is_read_over_mcp_by_bytes_as_a_hex_dump(session: Session) -> None:
    results = session.results
    head = results["binary_head"]
    assert not head.is_error
    assert head.content[0].text == (
        f"[scratchpad {session.binary_id}: bytes 0-20 of {len(BINARY)}; next: mode=range start=20]"
    )
    assert head.content[1].text == (
        "00000000: 504b 0304 0001 0203 0405 0607 0809 0a0b  PK..............\n"
        "00000010: 0c0d 0e0f                                ...."
    )
    assert head.structured_content["kind"] == "binary"
    assert head.structured_content["unit"] == "bytes"
    middle = results["binary_range"]
    assert middle.content[1].text == (
        "00000104: 0001 0203 0405 0607 0809 0a0b 0c0d 0e0f  ................"
    )
    assert (middle.structured_content["start"], middle.structured_content["end"]) == (260, 276)
    assert results["binary_tail"].content[1].text == f"00002800: {'fcfd feff':<39}  ...."
    assert results["binary_grep"].is_error
    assert "is binary" in text_of(results["binary_grep"])


def test_read_errors_come_back_as_tool_errors_with_the_helpful_text(session: Session) -> None:
    results = session.results
    for name, message in (
        ("bad_regex", "is not a valid regular expression"),
        ("too_big", "more than the 10000 one read may return (observations.max_read_chars)"),
        ("missing", "No observation with scratchpad_id '0000'"),
        ("wrong_key", "Unknown argument 'id': scratchpad_read takes scratchpad_id"),
        ("hidden", "belongs to turn 'earlier'"),
    ):
        assert results[name].is_error, name
        assert message in text_of(results[name]), name


def test_read_shows_an_earlier_turn_s_observation_when_asked_for_explicitly(
    session: Session,
) -> None:
    asked = session.results["asked"]
    assert not asked.is_error and asked.content[1].text == "END"


def test_memory_search_finds_the_memory_on_bm25_and_rejects_a_bad_k(session: Session) -> None:
    results = session.results
    hits = results["hit"].structured_content["hits"]
    assert hits and hits[0]["path"] == "MEMORY.md"
    assert "kubeconfig" in hits[0]["snippet"]
    assert "MEMORY.md:" in text_of(results["hit"])
    assert "keyword (BM25) search only" in results["hit"].structured_content["degraded"]
    assert results["bad_k"].is_error
    assert "give a number of hits from 1 to 50" in text_of(results["bad_k"])


def test_memory_search_never_hands_the_agent_a_secret_from_a_memory_note(
    session: Session,
) -> None:
    result = session.results["secret"]
    (hit,) = [h for h in result.structured_content["hits"] if "release bot" in h["snippet"]]
    assert "GITHUB_TOKEN=[redacted GitHub token]" in hit["snippet"]
    assert TOKEN not in text_of(result) and TOKEN not in json.dumps(result.structured_content)


def test_every_tool_says_whether_it_only_reads_or_may_overwrite(session: Session) -> None:
    hints = {
        name: (tool.annotations.read_only_hint, tool.annotations.destructive_hint)
        for name, tool in session.tools.items()
    }
    assert hints == {
        "scratchpad": (False, True),
        "session_scratchpad": (False, True),
        "scratchpad_put": (False, False),
        "scratchpad_read": (True, None),
        "scratchpad_view": (True, None),
        "memory_search": (True, None),
    }
    assert all(tool.annotations.open_world_hint is False for tool in session.tools.values())
    assert all(tool.annotations.title for tool in session.tools.values())


def test_the_scratchpad_is_a_read_only_tool_and_a_resource_for_hosts_that_never_see_the_file(
    session: Session,
) -> None:
    view = text_of(session.results["view"])
    # No assembly ran: only the agent's own sections, and a line that says why.
    assert "has not been written yet" in view
    assert "[Session Scratchpad - your persistent working memory]" in view and "Fix" in view
    (resource,) = session.results["resources"]
    assert (resource.uri, resource.mime_type) == ("scratchpad://current", "text/markdown")
    (content,) = session.results["resource"].contents
    assert content.mime_type == "text/markdown" and "## Goal" in content.text


def test_the_view_shows_the_assembled_part_while_the_file_is_fresh(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    from assembler.assembly.pipeline import run_once
    from assembler.hosts.mcp.server import Tools

    workspace = make_workspace(tmp_path)
    config = load_config(workspace)
    now = datetime.fromisoformat("2026-03-02T23:25:00+11:00")
    run_once(config, now=now, hosts=HOSTS)
    tools = Tools(config, clock=lambda: now + timedelta(minutes=1))
    assert tools.call("scratchpad", {"action": "write", "content": "port 8080"}).texts
    view = tools.call("scratchpad_view", {}).texts[0]
    assert view.startswith("[Session Scratchpad") and "## Active Context" in view
    assert "port 8080" in view  # written after the assembly: the journal's sections now
    later = Tools(config, clock=lambda: now + timedelta(hours=1))
    assert "## Active Context" not in later.read_resource("scratchpad://current")


def test_the_first_observation_call_of_a_session_collects_what_expired(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    from assembler.hosts.mcp.server import Tools

    config = load_config(make_workspace(tmp_path))
    parked_at = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
    with store_for(config, clock=lambda: parked_at) as store:
        store.start_turn("morning")
        entry_id = store.put("x" * 5000)["scratchpad_id"]  # lives an hour
    tools = Tools(config, clock=lambda: parked_at + timedelta(hours=2))

    assert not tools.call("scratchpad_view", {}).is_error
    with store_for(config, clock=lambda: parked_at) as store:
        assert store.get(entry_id, any_turn=True).id == entry_id  # starting collected nothing
    read = tools.call("scratchpad_read", {"scratchpad_id": entry_id, "any_turn": True})

    # Collected before the read, which finds no such entry (else: "expired at ...").
    assert read.is_error
    assert "it was never stored, or it expired and was removed" in read.texts[0]


def test_the_handshake_is_answered_before_anything_a_tool_needs_is_loaded(tmp_path: Path) -> None:
    # A host sends its first request without the tools if they come late (Claude Code waits
    # 2 s): the server imports what a tool needs on the tool's first call.
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    command = server_command(make_workspace(workspace))
    process = subprocess.Popen(
        [command[0], "-X", "importtime", *command[1:]],
        env=server_environment(tmp_path / "home"),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    handshake = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    process.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in handshake))
    process.stdin.flush()
    answers = [json.loads(process.stdout.readline()) for _ in range(2)]
    _, stderr = process.communicate(timeout=60)  # closes stdin: the session ends

    assert [answer["id"] for answer in answers] == [1, 2]
    assert {tool["name"] for tool in answers[1]["result"]["tools"]} == TOOLS
    imported = re.findall(r"^import time:.*\| +(\S+)$", stderr.decode(), re.MULTILINE)
    assert "assembler.hosts.mcp.server" in imported
    heavy = ("assembler.memory", "assembler.observations", "assembler.file", "assembler.mood")
    loaded = [name for name in imported if name.startswith(heavy) or name in ("numpy", "jinja2")]
    assert loaded == []


# Raw lines on the server's stdin: what a broken or hand-rolled client may send.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
BAD_UTF8 = b'{"jsonrpc": "2.0", "id": 3, "method": "ping\xff"}'


def exchange_raw_lines(workspace: Path, home: Path, lines: list[bytes]) -> tuple[list[Any], bytes]:
    """Start `assemble mcp`, write the lines to its stdin, read its answers until the one to
    request id 2, then close stdin. Return the answers, and what it wrote after that.
    """

    async def run() -> tuple[list[Any], bytes]:
        with anyio.fail_after(60):
            process = await anyio.open_process(
                server_command(workspace), env=server_environment(home), cwd=str(REPO)
            )
            async with process:
                assert process.stdin is not None and process.stdout is not None
                await process.stdin.send(b"".join(line + b"\n" for line in lines))
                stdout = BufferedByteReceiveStream(process.stdout)
                answers = []
                while not answers or answers[-1].get("id") != 2:
                    answers.append(json.loads(await stdout.receive_until(b"\n", 1 << 20)))
                await process.stdin.aclose()
                rest = b""
                with pytest.raises(anyio.EndOfStream):
                    while True:
                        rest += await stdout.receive()
                assert await process.wait() == 0
        return answers, rest

    return anyio.run(run)


def test_broken_lines_get_json_rpc_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_workspace(workspace)
    answers, rest = exchange_raw_lines(
        workspace,
        tmp_path / "home",
        [
            b"not json",
            BAD_UTF8,
            b"",
            b"   \r",
            b'{"foo": 1}',
            b'{"jsonrpc":"2.0","id":7,"method":5}',
            json.dumps(INITIALIZE).encode(),
            b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
            b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}',
        ],
    )
    errors = [(answer["id"], answer["error"]["code"]) for answer in answers[:4]]
    assert errors == [(None, -32700), (None, -32700), (None, -32600), (7, -32600)]
    assert all(answer["jsonrpc"] == "2.0" for answer in answers)
    messages = [answer["error"]["message"] for answer in answers[:4]]
    assert messages[0].startswith("Parse error: the line is not valid JSON (")
    assert f"not valid UTF-8 at byte {BAD_UTF8.index(0xFF)} (0xff" in messages[1]
    assert messages[2].startswith('Invalid Request: a JSON-RPC message needs "method"')
    assert messages[3] == "Invalid Request: at 'method': Input should be a valid string"
    # The valid requests after them are answered as usual, and the blank lines not at all.
    initialized, listed = answers[4:]
    assert initialized["id"] == 1
    assert initialized["result"]["serverInfo"]["name"] == "scratchpad-assembler"
    assert listed["id"] == 2
    assert {tool["name"] for tool in listed["result"]["tools"]} == TOOLS
    assert rest == b""


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": "a", "method": "ping", "params": {"x": "caf\xc3\xa9"}}\r\n',
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n',
        b'{"jsonrpc": "2.0", "id": 4, "result": {}}',
        b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "boom"}}',
    ],
)
def test_a_valid_line_reads_as_the_sdk_reads_it(line: bytes) -> None:
    sdk = types.jsonrpc_message_adapter.validate_json(line.decode(), by_name=False)
    assert read_message(line) == sdk


@pytest.mark.parametrize("line", [b"", b"\n", b" \t\r\n"])
def test_a_blank_line_is_no_message(line: bytes) -> None:
    assert read_message(line) is None


@pytest.mark.parametrize(
    ("line", "code", "request_id", "message"),
    [
        # What errors="replace" would have turned into U+FFFD and let through.
        (b'{"jsonrpc": "2.0", "id": 1, "method": "a\xed\xa0\x80"}', -32700, None, "byte 40"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\xc0\xaf"}', -32700, None, "byte 39"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\xe2\x82"}', -32700, None, "byte 39"),
        (b"\xef\xbb\xbf{}", -32700, None, "not valid JSON"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700, None, "not valid JSON"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\\ud800"}', -32700, None, "not valid JSON"),
        (b"[]", -32600, None, "got an array (batches are not supported)"),
        (b"42", -32600, None, "got a scalar"),
        (b'{"jsonrpc": "1.0", "id": "x", "method": "ping"}', -32600, "x", "at 'jsonrpc'"),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": []}', -32600, 5, "'params'"),
        # Ids the SDK would drop, reading the request as a notification that gets no answer.
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None, "got true"),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None, "got null"),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None, "got 1.5"),
        (b'{"jsonrpc": "2.0", "method": 5}', -32600, None, "at 'method'"),
        # A broken response: its id is one of the server's, so it is not echoed.
        (b'{"jsonrpc": "2.0", "id": 9, "result": 5}', -32600, None, "at 'result'"),
        (b'{"jsonrpc": "2.0", "id": 9, "error": "no"}', -32600, None, "at 'error'"),
    ],
)
def test_a_broken_line_is_rejected_with_the_code_id_and_what_is_wrong(
    line: bytes, code: int, request_id: int | str | None, message: str
) -> None:
    with pytest.raises(RejectedLine) as rejected:
        read_message(line)
    response = rejected.value.response
    assert (response.error.code, response.id) == (code, request_id)
    assert message in response.error.message
    written = json.loads(response.model_dump_json(by_alias=True, exclude_unset=True))
    assert written["id"] == request_id and "id" in written


@given(
    request_id=st.integers() | st.text(),
    method=st.text(),
    params=st.dictionaries(st.text(), st.text() | st.integers() | st.none()),
)
def test_any_request_the_server_could_write_reads_back_unchanged(
    request_id: int | str, method: str, params: dict[str, Any]
) -> None:
    request = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)
    line = request.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    assert read_message(line) == request


# --- The answer to initialize before the SDK is imported -------------------------------------


def first_answers(workspace: Path, home: Path, lines: list[dict[str, Any]]) -> list[Any]:
    """Start `assemble mcp`, write the lines, close stdin, return every answer it wrote."""
    process = subprocess.run(
        server_command(workspace),
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        env=server_environment(home),
        cwd=REPO,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert b"differs" not in process.stderr
    return [json.loads(line) for line in process.stdout.splitlines()]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "1999-01-01"])
def test_the_early_answer_to_initialize_is_the_one_the_sdk_gives(
    tmp_path: Path, version: str
) -> None:
    workspace = make_workspace(tmp_path)
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    # Answered early: initialize is the first line.
    (early,) = first_answers(workspace, tmp_path / "home", [initialize])
    # Answered by the SDK alone: a ping comes first, so nothing is answered before it starts.
    ping = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    _, by_sdk = first_answers(workspace, tmp_path / "home", [ping, initialize])
    assert early == by_sdk
    expected = "2025-11-25" if version == "1999-01-01" else version
    assert early["result"]["protocolVersion"] == expected


def test_an_initialize_out_of_the_ordinary_is_left_to_the_sdk(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    odd = {**INITIALIZE, "params": {"protocolVersion": "2025-11-25"}}  # no clientInfo
    (answer,) = first_answers(workspace, tmp_path / "home", [odd])
    assert answer["id"] == 1
    assert answer["error"]["code"] == -32602


def test_the_early_answer_negotiates_the_versions_the_sdk_does() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from assembler.hosts.mcp.handshake import HANDSHAKE_VERSIONS

    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


def test_what_was_read_before_the_server_started_is_read_first() -> None:
    from assembler.hosts.mcp.server import _lines

    async def stdin() -> Any:
        for line in (b"rest of two\n", b"three\n"):
            yield line

    async def read() -> list[bytes]:
        return [line async for line in _lines(b"one\ntwo, ", stdin())]

    assert anyio.run(read) == [b"one\n", b"two, rest of two\n", b"three\n"]


# --- The wire is the transport's alone --------------------------------------------------------

# Serves each request on stdin by reading stdin, writing stdout and running a child that does
# both, as a careless tool would; answers with what it read and what a second transport got.
CARELESS_SERVER = """
import os, subprocess, sys
import anyio
from mcp import types
from mcp.shared.message import SessionMessage
from assembler.hosts.mcp.server import stdio_transport

async def serve():
    async with stdio_transport() as (read_stream, write_stream), write_stream:
        async for request in read_stream:
            print("stray print", flush=True)
            os.write(1, b"stray write\\n")
            subprocess.run(["/bin/sh", "-c", "echo stray child; cat"], check=True)
            read = os.read(0, 100).decode() + sys.stdin.read()
            try:
                async with stdio_transport():
                    second = "served"
            except RuntimeError as error:
                second = str(error)
            result = {"read": read, "second": second}
            answer = types.JSONRPCResponse(jsonrpc="2.0", id=request.message.id, result=result)
            await write_stream.send(SessionMessage(answer))
    print("after", flush=True)

anyio.run(serve)
"""


def test_stray_reads_and_writes_while_serving_miss_the_wire_and_it_is_restored_after() -> None:
    process = subprocess.run(
        [sys.executable, "-c", CARELESS_SERVER],
        input=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n',
        cwd=REPO,
        capture_output=True,
        timeout=60,
        check=True,
    )
    answer, after = process.stdout.decode().splitlines()
    assert json.loads(answer) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "read": "",
            "second": "Another MCP stdio transport in this process has claimed fd 0",
        },
    }
    assert after == "after"
    assert process.stderr.decode().splitlines() == ["stray print", "stray write", "stray child"]


def test_the_server_imports_no_private_name_of_the_mcp_sdk() -> None:
    # A private name can change or vanish in any release of the SDK, and nothing would say so.
    import ast

    import assembler.hosts.mcp.server as server

    tree = ast.parse(Path(server.__file__).read_text(), server.__file__)
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            paths = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            paths = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for path in paths:
            parts = path.split(".")
            if parts[0] in ("mcp", "mcp_types") and any(part.startswith("_") for part in parts):
                private.append(f"line {node.lineno}: {path}")
    assert private == []
