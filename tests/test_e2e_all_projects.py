"""End to end: one all-projects setup (`assemble setup HOST --all-projects --apply`) of the real
Claude Code and the real Codex, one `assemble daemon --all`, two git repositories, a session in
each: each session's block names its own task and never the other's; nothing is written
inside either repository; the removal (`--all-projects --remove --apply`) leaves no trace of
ours in the host's user settings. What each host sent is read from the mock model's log. The
commands are those of the host's page (docs/hosts/<host>.md, "Every project with one setup").

The hooks run in the host's environment (HOME alone, no XDG folders), so `assemble` runs here
in that one too: both find the projects' state under HOME's `.local/state`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e.daemon import RunningDaemon
from e2e.host_setup import user_env
from e2e.hosts import Hosts
from e2e.mock_model import MODEL_ID, LoggedRequest, MockModel, Text
from e2e.turns import base_env, run_claude, run_host
from e2e.workspace import unique

from assembler.config.projects import project_key
from assembler.daemon.systemd import assemble_executable

pytestmark = pytest.mark.e2e

HEADER = "[Session Scratchpad - your persistent working memory]"
SERVED_WAIT_S = 120.0
CODEX_TIMEOUT_S = 180.0
KEY_VARIABLE = "SCRATCHPAD_E2E_MOCK_KEY"
# The hook's wait for the daemon's answer: long, so that a loaded machine cannot race it.
BUDGET = {"ASSEMBLER_PROMPT_BUDGET_MS": "10000"}


DOCS = Path(__file__).resolve().parent.parent / "docs" / "hosts"


def _recipe(page: str) -> tuple[list[str], list[str], list[str]]:
    """The commands of a host page's all-projects section, as the reader runs them: the setup,
    the daemon, the removal (each split into words, `assemble` as the first)."""
    text = (DOCS / page).read_text()
    start = text.index("### Every project with one setup\n")
    end = text.find("\n#", start + 1)
    blocks = re.findall(r"```sh\n(.*?)```", text[start : end if end != -1 else None], re.DOTALL)
    lines = [shlex.split(line) for block in blocks for line in block.strip().splitlines()]
    setup, daemon, removal = lines
    assert setup[0] == daemon[0] == removal[0] == "assemble", lines
    assert daemon == ["assemble", "daemon", "--all"]  # what RunningDaemon(None, ...) runs
    return setup[1:], daemon[1:], removal[1:]


def _env(home: Path) -> dict[str, str]:
    """The user's environment as the hosts' hooks get it: HOME, no XDG folders."""
    env = user_env(home)
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env.pop(name, None)
    return env


def _assemble(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(assemble_executable()), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"assemble {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


def _repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
    (folder / "README.md").write_text(f"# {folder.name}\n")
    return folder.resolve()


def _tree(folder: Path) -> list[str]:
    """Every path in the work tree (not in .git), relative."""
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if ".git" not in path.relative_to(folder).parts
    )


def _state_file(home: Path, repo: Path) -> Path:
    state = home / ".local" / "state" / "scratchpad-assembler" / "projects"
    return state / project_key(repo) / "SCRATCHPAD.md"


def _wait_for(predicate: Callable[[], bool], what: str, log: Callable[[], str]) -> None:
    deadline = time.monotonic() + SERVED_WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            # The file watcher's own debug lines say nothing here.
            lines = [line for line in log().splitlines() if "watchdog.observers" not in line]
            raise AssertionError(
                f"timed out waiting for {what}; the daemon's log:\n" + "\n".join(lines[-80:])
            )
        time.sleep(0.2)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _blocks(request: LoggedRequest) -> list[str]:
    """The scratchpad blocks in what the host sent: every string holding the header, from it."""
    return [s[s.index(HEADER) :] for s in _strings(request.body) if HEADER in s]


def _check_own_blocks(
    blocks: dict[str, list[str]], tasks: dict[str, tuple[str, str, str]], log: Callable[[], str]
) -> None:
    """Each project's second turn carried a block naming its own task, none of the other's."""
    for name, found in blocks.items():
        assert found, f"the second turn in {name} carried no block; the log:\n{log()}"
        text = "\n".join(found)
        assert tasks[name][2] in text, text
        for other, (_, _, mark) in tasks.items():
            if other != name:
                assert mark not in text, text


def _tasks() -> dict[str, tuple[str, str, str]]:
    """Two requests a person would type in each project, and the mark of this run both name."""
    tasks = {}
    for name, what in (("one", "yaml"), ("two", "csv")):
        mark = unique(what).split()[-1]
        tasks[name] = (
            f"Please fix the {what} parser in loader {mark}, it drops the last row.",
            f"Now can you add a test for the {what} parser in loader {mark}?",
            mark,
        )
    return tasks


def _two_projects(
    repos: dict[str, Path],
    home: Path,
    env: dict[str, str],
    folder: Path,
    model: MockModel,
    turn: Callable[[Path, str, str | None], str],
) -> None:
    """With one `assemble daemon --all` running, two turns of a session in each repository
    (`turn(repo, prompt, session)` runs one, `session` None for the first, and returns the
    session to continue): after the first, the daemon serves the project the hook announced;
    the second turn's block is that project's own (`_check_own_blocks`)."""
    tasks = _tasks()
    blocks: dict[str, list[str]] = {}
    with RunningDaemon(None, folder, env) as daemon:
        for name, repo in repos.items():
            first, second, mark = tasks[name]
            model.script(Text("Looking."))
            session = turn(repo, first, None)
            # The hook announced the project; the daemon serves it and assembles its file.
            state = _state_file(home, repo)
            _wait_for(state.is_file, f"the file of {repo}", daemon.log_text)
            _wait_for(lambda s=state, m=mark: m in s.read_text(), "the task", daemon.log_text)
            seen = len(model.turn_calls())
            model.script(Text("Done."))
            turn(repo, second, session)
            blocks[name] = [b for r in model.turn_calls()[seen:] for b in _blocks(r)]
        log = daemon.log_text()
    _check_own_blocks(blocks, tasks, lambda: log)


def test_claude_code_all_projects_each_session_gets_its_own_projects_block(
    hosts: Hosts, model: MockModel, tmp_path: Path, isolated_home: Path
) -> None:
    home, env = isolated_home, _env(isolated_home)
    repos = {name: _repository(tmp_path / f"repo {name}") for name in ("one", "two")}
    trees = {name: _tree(repo) for name, repo in repos.items()}
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"theme": "dark"}, indent=2) + "\n")
    before = json.loads(settings.read_text())

    setup, _, removal = _recipe("claude-code.md")
    assert setup == ["setup", "claude-code", "--all-projects", "--apply"]
    applied = _assemble(env, *setup, cwd=tmp_path)
    value = json.loads(settings.read_text())
    assert value["theme"] == "dark"
    assert "--all-projects" in json.dumps(value["hooks"]), applied.stdout
    value.setdefault("env", {}).update(BUDGET)
    settings.write_text(json.dumps(value, indent=2) + "\n")

    def turn(repo: Path, prompt: str, session: str | None) -> str:
        args = ("--continue",) if session else ()
        run = run_claude(hosts, model, home=home, cwd=repo, prompt=prompt, args=args)
        assert run.returncode == 0, run.describe()
        return "continued"

    _two_projects(repos, home, env, tmp_path, model, turn)
    for name, repo in repos.items():
        assert _tree(repo) == trees[name], f"written inside {repo}"

    _assemble(env, *removal, cwd=tmp_path)
    left = json.loads(settings.read_text())
    left.get("env", {}).pop("ASSEMBLER_PROMPT_BUDGET_MS", None)
    if left.get("env") == {}:
        del left["env"]
    assert "assemble" not in json.dumps(left)
    assert left == before


def _codex_turn(
    hosts: Hosts, model: MockModel, home: Path, repo: Path, prompt: str, resume: str | None
) -> str:
    head = ["exec", "resume", resume] if resume else ["exec"]
    argv = [str(hosts.codex), *head, "--skip-git-repo-check", "--json", prompt]
    env = {**base_env(hosts, home), KEY_VARIABLE: "sk-e2e-dummy-key", **BUDGET}
    run = run_host(argv, env=env, cwd=repo, timeout=CODEX_TIMEOUT_S)
    assert run.returncode == 0, run.describe()
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert any(event.get("type") == "turn.completed" for event in events), run.describe()
    [thread] = [event["thread_id"] for event in events if event["type"] == "thread.started"]
    return str(thread)


def test_codex_all_projects_each_session_gets_its_own_projects_block(
    hosts: Hosts, model: MockModel, tmp_path: Path, isolated_home: Path
) -> None:
    home, env = isolated_home, _env(isolated_home)
    repos = {name: _repository(tmp_path / f"repo {name}") for name in ("one", "two")}
    trees = {name: _tree(repo) for name, repo in repos.items()}
    codex_home = home / ".codex"
    codex_home.mkdir()
    provider = textwrap.dedent(
        f"""\
        model = "{MODEL_ID}"
        model_provider = "mock"
        mcp_optional_startup_grace_ms = 0

        [model_providers.mock]
        name = "Mock"
        base_url = "{model.base_url}/v1"
        env_key = "{KEY_VARIABLE}"
        wire_api = "responses"
        """
    )
    (codex_home / "config.toml").write_text(provider)
    setup, _, removal = _recipe("codex.md")
    assert setup == ["setup", "codex", "--all-projects", "--apply"]
    _assemble(env, *setup, cwd=tmp_path)
    assert "--all-projects" in (codex_home / "hooks.json").read_text()

    def turn(repo: Path, prompt: str, session: str | None) -> str:
        return _codex_turn(hosts, model, home, repo, prompt, session)

    _two_projects(repos, home, env, tmp_path, model, turn)
    for name, repo in repos.items():
        assert _tree(repo) == trees[name], f"written inside {repo}"

    _assemble(env, *removal, cwd=tmp_path)
    hooks_left = codex_home / "hooks.json"
    assert not hooks_left.exists() or "assemble" not in hooks_left.read_text()
    config_left = (codex_home / "config.toml").read_text()
    assert "assemble" not in config_left and "hooks.state" not in config_left
    assert config_left.strip() == provider.strip()
    assert os.path.isdir(codex_home / "sessions")  # Codex wrote its rollouts there
