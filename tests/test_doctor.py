"""`assemble doctor`: every link from the host's setup to the last delivery, in order; exit 0
only when each holds, and a broken one names the command that fixes it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fixtures.claude_code.session import ClaudeSession

from assembler.assembly.pipeline import run_once
from assembler.cli.main import main
from assembler.config.files import load_config
from assembler.daemon.service import Daemon
from assembler.hosts.claude_code.setup import claude_code_setup
from assembler.hosts.registry import HOSTS


@pytest.fixture
def now() -> datetime:
    """The clock at the test's start: the daemon these tests run assembles by the real one."""
    return datetime.now().astimezone().replace(microsecond=0)


@pytest.fixture
def set_up(workspace: Path, isolated_home: Path, now: datetime) -> Path:
    """A workspace with Claude Code's hooks in the user's settings, as setup prints them."""
    (workspace / "assembler.toml").write_text('[memory]\nmodel = "none"\n')
    (workspace / "MEMORY.md").write_text("# Notes\n\nThe deploy needs the staging key.\n")
    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    assemble = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "assemble"
    value = claude_code_setup(workspace.resolve(), assemble).settings
    settings.write_text(json.dumps(value))
    main(["index", "-w", str(workspace)])
    run_once(load_config(workspace), hosts=HOSTS, now=now)
    return workspace


@pytest.fixture
def daemon(set_up: Path) -> Iterator[Daemon]:
    running = Daemon(load_config(set_up), hosts=HOSTS, notify=False)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    assert running.ready.wait(60)
    yield running
    running.stop()
    thread.join(60)


def _doctor(workspace: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["doctor", "-w", str(workspace), *more])  # by the real clock, as the daemon
    return code, capsys.readouterr().out


def test_every_link_holds_after_prompts_that_carried_the_block(
    set_up: Path,
    daemon: Daemon,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    now: datetime,
) -> None:
    session = ClaudeSession(isolated_home, set_up)
    session.prompt("why does the deploy fail", now)
    session.prompt("and staging?", now + timedelta(seconds=30))
    code, out = _doctor(set_up, capsys)
    assert code == 0, out
    names = [line.split(":")[0][5:] for line in out.splitlines() if line[:4] in ("ok  ", "--  ")]
    assert names == [
        "Claude Code hooks",
        "the program the Claude Code hooks run",
        "the Claude Code MCP server",
        "the daemon",
        "the memory index",
        "the file",
        "the last delivery",
    ]
    assert "2/2 turns carried the block" in out and "every link holds" in out
    # Not registered: said, with the command that adds it, and no broken link.
    [server] = [line for line in out.splitlines() if "the Claude Code MCP server" in line]
    assert server.startswith("--   the Claude Code MCP server: not registered"), out
    assert "claude mcp add scratchpad -- " in server


def _register(home: Path, workspace: Path, command: str) -> None:
    """Register the workspace's MCP server with Claude Code, scope local, as `claude mcp add`
    writes it into ~/.claude.json."""
    entry = {"type": "stdio", "command": command, "args": ["mcp", "--workspace", str(workspace)]}
    state = {"projects": {str(workspace.resolve()): {"mcpServers": {"scratchpad": entry}}}}
    (home / ".claude.json").write_text(json.dumps(state))


def test_a_registered_mcp_server_holds_and_one_whose_program_is_gone_is_broken(
    set_up: Path,
    daemon: Daemon,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    now: datetime,
) -> None:
    session = ClaudeSession(isolated_home, set_up)
    session.prompt("why does the deploy fail", now)
    assemble = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "assemble"
    _register(isolated_home, set_up, str(assemble))
    code, out = _doctor(set_up, capsys)
    assert code == 0, out
    assert f"ok   the Claude Code MCP server: registered in {isolated_home / '.claude.json'}" in out
    assert "(scope local)" in out and f"runs {assemble}" in out

    _register(isolated_home, set_up, str(isolated_home / "gone" / "assemble"))
    code, out = _doctor(set_up, capsys)
    assert code == 1, out
    lines = out.splitlines()
    broken = lines.index(next(line for line in lines if "MCP server" in line))
    assert lines[broken].startswith("FAIL the Claude Code MCP server: ")
    assert "is not an executable file" in lines[broken]
    assert lines[broken + 1].startswith("     fix: claude mcp add scratchpad -- ")
    assert f"(run in {set_up.resolve()})" in lines[broken + 1]


def test_an_mcp_host_that_registers_the_server_is_checked_too(
    set_up: Path, daemon: Daemon, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop = isolated_home / "xdg_config_home" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    entry = {"command": "/nowhere/assemble", "args": ["mcp", "--workspace", str(set_up)]}
    desktop.write_text(json.dumps({"mcpServers": {"scratchpad": entry}}))
    code, out = _doctor(set_up, capsys)
    assert code == 1, out
    assert (
        f"FAIL the MCP server of Claude Desktop or Cursor: '/nowhere/assemble' in {desktop}" in out
    )
    assert "setup mcp --workspace" in out


def test_a_removed_hook_is_the_broken_link_and_its_fix_is_printed(
    set_up: Path,
    daemon: Daemon,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    now: datetime,
) -> None:
    session = ClaudeSession(isolated_home, set_up)
    session.prompt("why does the deploy fail", now)
    (isolated_home / ".claude" / "settings.json").write_text("{}")
    session.prompt("hello?", now + timedelta(seconds=30), hook=False)
    code, out = _doctor(set_up, capsys)
    assert code == 1, out
    assert "FAIL Claude Code hooks: no hook in" in out
    assert f"assemble setup claude-code --workspace {set_up.resolve()}" in out
    assert "FAIL the last delivery" in out
    capsys.readouterr()
    assert main(["check", "-w", str(set_up)]) == 4
    assert "missed delivery" in capsys.readouterr().out


def test_without_a_daemon_and_with_notes_not_indexed_the_fixes_are_named(
    set_up: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (set_up / "memory").mkdir()
    (set_up / "memory" / "new.md").write_text("# New\n\nA note written since.\n")
    code, out = _doctor(set_up, capsys, "--json")
    assert code == 1
    links = {link["name"]: link for link in json.loads(out)["links"]}
    assert links["the daemon"]["holds"] is False
    assert "systemd install --workspace" in links["the daemon"]["fix"]
    assert links["the memory index"]["holds"] is False
    assert "new memory/new.md" in links["the memory index"]["state"]
    assert links["the last delivery"]["holds"] is None


def test_a_workspace_no_host_is_set_up_for_says_how_to_set_one_up(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[memory]\nenabled = false\n")
    code, out = _doctor(workspace, capsys)
    assert code == 1
    assert "FAIL a host set up for this workspace" in out
    assert "setup HOST --workspace" in out


def test_codex_hooks_and_its_mcp_server_as_setup_prints_them_hold(
    workspace: Path, tmp_path: Path
) -> None:
    from assembler.hosts.codex.setup import codex_setup
    from assembler.hosts.codex.setup import setup_links as codex_links

    (workspace / "assembler.toml").write_text("[memory]\nenabled = false\n")
    config = load_config(workspace)
    environ = {"CODEX_HOME": str(tmp_path / "codex"), "HOME": str(tmp_path)}
    assemble = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "assemble"
    setup = codex_setup(config.workspace, assemble, environ)
    setup.hooks_json.parent.mkdir()
    setup.hooks_json.write_text(json.dumps(setup.hooks))
    setup.config_toml.write_text("\n".join(setup.config_lines()) + "\n")

    links = {link.name: link for link in codex_links(config, assemble, environ)}
    assert links["Codex hooks"].holds is True
    server = links["the Codex MCP server"]
    assert server.holds is True and server.state.startswith(f"registered in {setup.config_toml}")

    # The table gone from config.toml: said, with the command that prints it, not broken.
    setup.config_toml.write_text("[features]\nhooks = true\n")
    server = {link.name: link for link in codex_links(config, assemble, environ)}[
        "the Codex MCP server"
    ]
    assert server.holds is None and "[mcp_servers.scratchpad]" in server.state
