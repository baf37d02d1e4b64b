"""End to end: Claude Code's real program, set up exactly as `assemble setup claude-code` prints
it (the hooks and the allow rule in settings.json, the `claude mcp add` line run as printed),
runs `claude -p` turns against the mock model; what it sent the model is read from the mock's
log.

The workspace's name has a space in it, so the printed paths must be quoted for the shell that
runs the hooks and the `claude mcp add` line. Claude Code's HOME is the test's isolated HOME, so
an assembly in this process finds the transcripts Claude Code wrote there.

What the real program showed (2.1.331), which the hook and the setup text follow:
- A SessionStart hook without a matcher runs before the first prompt of every `claude -p`
  (source "startup"), and again, source "resume", before each turn of a resumed session
  (`--resume`, `--continue`); "compact" after a compaction, "clear" (a new session id) after
  /clear. UserPromptSubmit runs before every prompt. What either adds goes into a message of
  the conversation, which the session's history keeps: a resumed session holds the copy sent
  before. The setup runs SessionStart only for "clear|compact" (its matcher), so a prompt
  costs one hook run.
- MCP tools are deferred: the model sees their names in a message and loads a tool with
  ToolSearch before calling it, except a tool whose `_meta` says `anthropic/alwaysLoad` (the
  server's `scratchpad`), whose schema every request carries. Without an allow rule,
  `claude -p` refuses the call.
- `claude -p` connects its MCP servers in the background and its first request waits for those
  still connecting 2 s at most, then goes without their tools. The harness sets that wait
  (CLAUDE_CODE_MCP_STARTUP_WAIT_MS, see `e2e.turns.claude_env`), so the first request of each
  turn waits until `assemble mcp` has answered, however loaded the machine.
"""

from __future__ import annotations

import json
import shlex
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from e2e.daemon import RunningDaemon
from e2e.host_setup import HostSetup
from e2e.hosts import Hosts
from e2e.mock_model import LoggedRequest, MockModel, Reply, Text, ToolCall
from e2e.turns import (
    claude_env,
    claude_session_files,
    run_claude,
    run_claude_command_line,
    run_host,
)
from e2e.workspace import QUESTION, unique

from assembler.assembly.pipeline import run_once
from assembler.config.files import load_config
from assembler.daemon.systemd import assemble_executable
from assembler.hosts.claude_code.setup import claude_code_setup
from assembler.hosts.registry import HOSTS

pytestmark = pytest.mark.e2e

Scope = Literal["user", "local"]
MCP_TOOLS = (
    "mcp__scratchpad__scratchpad",
    "mcp__scratchpad__session_scratchpad",
    "mcp__scratchpad__scratchpad_put",
    "mcp__scratchpad__scratchpad_read",
    "mcp__scratchpad__scratchpad_view",
    "mcp__scratchpad__memory_search",
)
HEADER = "[Session Scratchpad - your persistent working memory]"
ALWAYS_LOADED = "mcp__scratchpad__scratchpad"  # its schema in every request, never deferred


@dataclass
class ClaudeCode(HostSetup):
    """Claude Code set up for a workspace as `assemble setup claude-code` says."""

    project: Path
    goal: str  # a line of the scratchpad found nowhere else: the agent's goal section

    def turn(self, prompt: str, *replies: Reply, args: tuple[str, ...] = ()) -> dict[str, Any]:
        """Run `claude -p PROMPT ARGS` in the project, the mock answering with `replies`;
        return Claude Code's JSON result, after checking it succeeded and used every reply."""
        self.model.script(*replies)
        run = run_claude(
            self.hosts, self.model, home=self.home, cwd=self.project, prompt=prompt, args=args
        )
        assert run.returncode == 0, self.failure(run)
        result: dict[str, Any] = run.json()
        assert result["is_error"] is False, self.failure(run)
        assert self.model.pending() == [], self.failure(run)
        return result

    def requests_since(self, mark: int) -> list[LoggedRequest]:
        """The turn requests the mock got after the first `mark` of them."""
        return self.model.turn_calls()[mark:]

    def sessions(self) -> dict[str, Any]:
        """What the hook remembers of each session (`.scratchpad/claude-code-sessions.json`)."""
        value: dict[str, Any] = json.loads(
            (self.workspace / ".scratchpad" / "claude-code-sessions.json").read_text()
        )
        return value


MakeClaudeCode = Callable[..., ClaudeCode]


@pytest.fixture
def claude_code(
    hosts: Hosts, model: MockModel, tmp_path: Path, isolated_home: Path
) -> MakeClaudeCode:
    """Return a function that sets Claude Code up for a new workspace holding a fresh
    scratchpad; `scope` says where the printed settings and MCP server go ("user": every
    project; "local": the project alone), `transcript` whether the workspace names a transcript
    (else it finds the sessions the hook recorded)."""

    def make(scope: Scope = "user", transcript: bool = True) -> ClaudeCode:
        project = tmp_path / "project"
        project.mkdir()
        setup = ClaudeCode.create(
            hosts,
            model,
            home=isolated_home,
            workspace=tmp_path / "my workspace",
            transcript=transcript,
            project=project,
            goal=unique("goal"),
        )
        setup.fresh_scratchpad(setup.goal)
        _configure(setup, scope)
        return setup

    return make


def _configure(setup: ClaudeCode, scope: Scope) -> None:
    """Apply what `assemble setup claude-code` prints: its settings JSON and its `claude mcp
    add` line for `scope`, the line run through a shell with the real `claude` on PATH."""
    printed = setup.assemble("setup", "claude-code", cwd=setup.project)
    settings, lines = _parse_setup(printed.stdout)
    expected = claude_code_setup(setup.workspace, assemble_executable())
    assert settings == expected.settings, printed.stdout
    assert lines == [shlex.join(expected.mcp_add_user), shlex.join(expected.mcp_add)]

    target = (
        setup.home / ".claude" / "settings.json"
        if scope == "user"
        else setup.project / ".claude" / "settings.local.json"
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(settings, indent=2) + "\n")
    line = lines[0] if scope == "user" else lines[1]
    added = run_claude_command_line(
        setup.hosts, setup.model, home=setup.home, cwd=setup.project, line=line
    )
    assert added.returncode == 0, added.describe()
    assert "Added stdio MCP server scratchpad" in added.stdout, added.describe()


def _parse_setup(text: str) -> tuple[dict[str, Any], list[str]]:
    """Given the setup text, return its settings JSON (the first indented `{ ... }` block)
    and its `claude mcp add` lines, in order."""
    lines = text.splitlines()
    start = lines.index("   {")
    end = lines.index("   }", start)
    settings: dict[str, Any] = json.loads(textwrap.dedent("\n".join(lines[start : end + 1])))
    commands = [line.strip() for line in lines if line.strip().startswith("claude mcp add ")]
    return settings, commands


def _occurrences(request: LoggedRequest, needle: str) -> list[str]:
    """Where `needle` occurs in the strings of the request's body (its system prompt, every
    message of the conversation, tool calls and results): one entry per occurrence, its place
    in the body and the text around it, for an assertion's message."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("body", request.body)]
    while stack:
        place, value = stack.pop()
        if isinstance(value, str):
            start = value.find(needle)
            while start != -1:
                around = value[max(0, start - 80) : start + len(needle) + 80]
                found.append(f"{place}: ...{around!r}...")
                start = value.find(needle, start + len(needle))
        elif isinstance(value, dict):
            stack.extend((f"{place}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{place}[{index}]", item) for index, item in enumerate(value))
    return sorted(found)


def _count(request: LoggedRequest, needle: str) -> int:
    return len(_occurrences(request, needle))


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["user", "local"])
def test_the_first_prompt_sends_the_model_the_scratchpad_exactly_once(
    claude_code: MakeClaudeCode, scope: Scope
) -> None:
    setup = claude_code(scope)
    block = setup.ready()["block"].strip()
    prompt = "why does the deploy keep failing? (e2e)"

    result = setup.turn(prompt, Text("Looking at the deploy."))

    (request,) = setup.model.turn_calls()
    assert prompt in request.texts("user")
    # The hook ran before the prompt; the block went once, and whole.
    assert _count(request, block) == 1, _occurrences(request, block)
    assert _count(request, HEADER) == 1
    assert _count(request, setup.goal) == 1
    # the block is the whole file: the assembled part (the workspace's question) and the
    # agent's goal
    assert "## Active Context" in block and QUESTION in block and setup.goal in block
    # The MCP server connected: its tools are offered, `scratchpad` loaded, the others
    # deferred (a line each in a list).
    assert ALWAYS_LOADED in request.tool_names()
    deferred = [name for name in MCP_TOOLS if name != ALWAYS_LOADED]
    unlisted = [name for name in deferred if _count(request, f"\n{name}\n") != 1]
    assert unlisted == [], _occurrences(request, "mcp__")
    # The hook saw the session and remembered what it sent and where the transcript is.
    record = setup.sessions()[result["session_id"]]
    assert record["sent"] == setup.ready()["digest"]
    [transcript] = claude_session_files(setup.home, result["session_id"])
    assert record["transcript_path"] == str(transcript)


@pytest.mark.parametrize("continue_with", ["--resume", "--continue"])
def test_a_resumed_session_with_an_unchanged_scratchpad_gets_no_second_copy(
    claude_code: MakeClaudeCode, continue_with: str
) -> None:
    setup = claude_code()
    first = setup.turn("first prompt (e2e)", Text("First answer."))
    before = setup.ready()
    # A render again with nothing new: the clock lines move, the content does not. Earlier,
    # not later: a file made later than the clock is stale.
    earlier = datetime.fromisoformat(before["updated"]) - timedelta(minutes=3)
    setup.assemble("--once", "--now", earlier.isoformat())
    after = setup.ready()
    assert after["block"] != before["block"] and after["digest"] == before["digest"]
    args = ("--resume", first["session_id"]) if continue_with == "--resume" else ("--continue",)

    second = setup.turn("second prompt (e2e)", Text("Second answer."), args=args)

    assert second["session_id"] == first["session_id"]
    _, request = setup.model.turn_calls()
    assert "second prompt (e2e)" in request.texts("user")
    assert "First answer." in request.texts("assistant")  # the session's history came along
    # One copy: the first turn's, which the history holds; neither hook added another.
    assert _count(request, setup.goal) == 1, _occurrences(request, setup.goal)
    assert _count(request, HEADER) == 1
    assert _count(request, before["block"].strip()) == 1
    assert "Scratchpad stale" not in request.dump()  # the file was fresh: held, not dropped


def test_a_stale_scratchpad_is_not_sent_only_one_line_saying_so(
    claude_code: MakeClaudeCode,
) -> None:
    setup = claude_code()
    # Rendered two hours ago: it expired 90 minutes ago.
    setup.assemble("--once", "--now", (datetime.now(UTC) - timedelta(hours=2)).isoformat())
    assert datetime.fromisoformat(setup.ready()["expires"]) < datetime.now(UTC)

    result = setup.turn("a new session (e2e)", Text("Hello."))

    (request,) = setup.model.turn_calls()
    assert _count(request, setup.goal) == 0, _occurrences(request, setup.goal)
    assert _count(request, HEADER) == 0
    # Instead of silence, one line: the model can tell "nothing new" from "not running".
    assert _count(request, "[Scratchpad stale since") == 1
    record = setup.sessions()[result["session_id"]]
    assert "transcript_path" in record and "sent" in record


def test_what_the_model_saves_with_the_mcp_tool_is_in_the_journal_and_the_next_prompt(
    claude_code: MakeClaudeCode,
) -> None:
    setup = claude_code()
    finding = unique("finding: staging uses port 8443")
    arguments = {"action": "append", "section": "findings", "content": finding}

    first = setup.turn(
        "remember the port (e2e)",
        # The scratchpad tool is always loaded: no ToolSearch before calling it.
        ToolCall("mcp__scratchpad__scratchpad", arguments, text="Saving it."),
        Text("Saved."),
    )

    call, answer = setup.model.turn_calls()
    assert "mcp__scratchpad__scratchpad" in call.tool_names()
    assert any('"ok":true' in text and "findings" in text for text in answer.tool_results()), (
        answer.tool_results()
    )
    journal = setup.workspace / ".scratchpad" / "sections.jsonl"
    saved = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [(e["section"], e["action"], e["content"], e["source"]) for e in saved][-1] == (
        "findings",
        "append",
        finding,
        "mcp",
    )
    block = setup.ready()["block"].strip()
    assert f"## Findings (updated just now)\n{finding}" in block  # the call rewrote the block
    assert _count(answer, block) == 0

    mark = len(setup.model.turn_calls())
    setup.turn(
        "what did you save? (e2e)", Text("The port."), args=("--resume", first["session_id"])
    )

    (request,) = setup.requests_since(mark)
    # The first turn's copy, and after it what changed: the finding, not the block again.
    assert _count(request, block) == 0 and _count(request, setup.goal) == 1
    assert _count(request, "[Scratchpad update since ") == 1
    assert _count(request, f"## Findings (updated just now) (new section)\n{finding}\n") == 1, (
        _occurrences(request, finding)
    )


def test_a_compacted_session_gets_the_scratchpad_again_once(claude_code: MakeClaudeCode) -> None:
    setup = claude_code()
    first = setup.turn("first prompt (e2e)", Text("First answer."))
    resume = ("--resume", first["session_id"])
    setup.turn("/compact", args=resume)  # the mock's default reply is the summary
    mark = len(setup.model.turn_calls())

    setup.turn("after the compaction (e2e)", Text("Still here."), args=resume)

    (request,) = setup.requests_since(mark)
    assert "First answer." not in request.texts("assistant")  # the history was summarised
    assert _count(request, setup.goal) == 1, _occurrences(request, setup.goal)
    assert _count(request, HEADER) == 1


def test_the_session_claude_code_wrote_reads_back_and_feeds_the_next_assembly(
    claude_code: MakeClaudeCode,
) -> None:
    setup = claude_code(transcript=False)
    first = setup.turn("the deploy failed again, why? (e2e)", Text("Checking the logs."))
    setup.turn(
        "still failing!! (e2e)", Text("The port is wrong."), args=("--resume", first["session_id"])
    )
    [transcript] = claude_session_files(setup.home, first["session_id"])
    now = datetime.now(UTC)

    read = setup.read_back(transcript)

    assert [(m.role, m.text) for m in read.messages] == [
        ("user", "the deploy failed again, why? (e2e)"),
        ("assistant", "Checking the logs."),
        ("user", "still failing!! (e2e)"),
        ("assistant", "The port is wrong."),
    ], f"reader returned {read.messages}; the host wrote {transcript.read_text()[-6000:]}"
    assert [(s.format, s.messages) for s in read.sources] == [("claude-code", 4)]

    # No transcript source configured: the assembly reads the sessions the hook recorded.
    config = load_config(setup.workspace)
    assert config.transcripts.sources == []
    assembly = run_once(config, now=now, hosts=HOSTS)
    assert [(s.path, s.format, s.messages) for s in assembly.transcripts.sources] == [
        (str(transcript), "claude-code", 4)
    ]
    assert assembly.frontmatter["source"].startswith("1 transcript, 4 messages;")


CONCISE = "- **How to answer:** concise"


def test_with_the_daemon_running_the_prompt_being_answered_counts_in_its_own_turn(
    claude_code: MakeClaudeCode, tmp_path: Path
) -> None:
    setup = claude_code()
    # The hook's wait for the daemon's answer: long, so that a loaded machine cannot make this
    # test race it (the budget's default is measured in bench/bench_prompt_answer.py).
    settings_path = setup.home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings.setdefault("env", {})["ASSEMBLER_PROMPT_BUDGET_MS"] = "10000"
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    prompt = "third time it fails, just give me the command"

    # Without a daemon: the ready block written before the prompt, which it cannot count.
    setup.turn(prompt, Text("Here it is."))
    (before,) = setup.model.turn_calls()
    assert _count(before, setup.goal) == 1 and _count(before, CONCISE) == 0

    with RunningDaemon(setup.workspace, tmp_path, setup.env) as daemon:
        mark = len(setup.model.turn_calls())
        setup.turn(prompt, Text("Here it is again."))
        log = daemon.log_text()

    (request,) = setup.requests_since(mark)
    # The hook sent the prompt to the daemon, which answered the block with it counted.
    assert _count(request, CONCISE) == 1, _occurrences(request, "How to answer")
    assert _count(request, setup.goal) == 1 and _count(request, HEADER) == 1
    assert _count(request, f"“{prompt}”") == 1  # the task the block names: this prompt
    assert CONCISE not in setup.ready()["block"]  # not published: the transcript is the record
    assert prompt not in log  # nor logged


def test_after_the_first_copy_a_session_gets_only_what_changed(
    claude_code: MakeClaudeCode,
) -> None:
    setup = claude_code()
    first = setup.turn("first prompt (e2e)", Text("First answer."))
    finding = unique("finding: staging uses port 8443")
    setup.assemble("pad", "append", "--section", "findings", finding)
    mark = len(setup.model.turn_calls())

    setup.turn("second prompt (e2e)", Text("Second."), args=("--resume", first["session_id"]))

    (request,) = setup.requests_since(mark)
    # One whole copy (the first turn's, in the history) and the change after it, not two.
    assert _count(request, HEADER) == 1 and _count(request, setup.goal) == 1
    assert _count(request, "[Scratchpad update since ") == 1
    assert _count(request, f"(new section)\n{finding}\n") == 1, _occurrences(request, finding)
    assert _count(request, "## Active Context") == 1


def test_a_slow_mcp_server_still_offers_the_scratchpad_tool_in_the_first_request_of_every_turn(
    claude_code: MakeClaudeCode,
) -> None:
    # Only the printed settings make claude wait: not the harness's own wait in the
    # environment. The server starts 3 s late (Claude Code's own wait is 2 s), so without the
    # printed wait the first request of each turn would go without its tools.
    setup = claude_code()
    _register_slow_server(setup, delay_s=3)
    env = claude_env(setup.hosts, setup.home, setup.model)
    del env["CLAUDE_CODE_MCP_STARTUP_WAIT_MS"]
    finding = unique("finding: the cache lives in /var/cache/app")
    arguments = {"action": "append", "section": "findings", "content": finding}
    turns = [
        [Text("First.")],
        [ToolCall("ToolSearch", {"query": "scratchpad", "max_results": 5}), Text("Second.")],
        [ToolCall(ALWAYS_LOADED, arguments, text="Saving it."), Text("Saved.")],
    ]
    session: list[str] = []
    firsts = []

    for number, replies in enumerate(turns):
        mark = len(setup.model.turn_calls())
        setup.model.script(*replies)
        argv = [str(setup.hosts.claude), "-p", f"turn {number} (e2e)", "--output-format", "json"]
        run = run_host([*argv, *session], env=env, cwd=setup.project, timeout=120)
        assert run.returncode == 0 and run.json()["is_error"] is False, setup.failure(run)
        session = ["--resume", run.json()["session_id"]]
        requests = setup.requests_since(mark)
        assert len(requests) == len(replies), setup.failure(run)
        firsts.append(requests[0])
        for request in requests:
            assert "still connecting" not in request.dump(), setup.failure(run)
            assert "no longer available" not in request.dump(), setup.failure(run)

    for request in firsts:
        assert ALWAYS_LOADED in request.tool_names(), request.tool_names()
    # Tool Search for "scratchpad" loads the deferred ones.
    after_search = setup.model.turn_calls()[2]
    assert set(MCP_TOOLS) <= set(after_search.tool_names()), after_search.tool_names()
    # The always loaded tool is called without a search, and saves.
    journal = setup.workspace / ".scratchpad" / "sections.jsonl"
    saved = [json.loads(line) for line in journal.read_text().splitlines()]
    assert (saved[-1]["section"], saved[-1]["content"], saved[-1]["source"]) == (
        "findings",
        finding,
        "mcp",
    )


def _register_slow_server(setup: ClaudeCode, delay_s: int) -> None:
    """Register the MCP server again, as printed (scope user), behind a shell that starts it
    `delay_s` seconds late."""
    printed = claude_code_setup(setup.workspace, assemble_executable()).mcp_add_user
    split = printed.index("--") + 1  # `claude mcp add ... scratchpad --` | the server's argv
    slow = ["/bin/sh", "-c", f'sleep {delay_s}; exec "$0" "$@"', *printed[split:]]
    for line in ("claude mcp remove --scope user scratchpad", shlex.join(printed[:split] + slow)):
        run = run_claude_command_line(
            setup.hosts, setup.model, home=setup.home, cwd=setup.project, line=line
        )
        assert run.returncode == 0, run.describe()
