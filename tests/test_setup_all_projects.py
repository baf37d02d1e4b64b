"""Tests of `assemble setup claude-code|codex --all-projects [--apply] [--remove]` (the
all-projects parts of hosts/claude_code/setup.py, hosts/codex/setup.py, hosts/setup.py and
hosts/command_hooks.py), and of the per-workspace setup listing its workspace for `assemble
daemon --all`. Every host folder is in tmp_path (CLAUDE_CONFIG_DIR, CODEX_HOME)."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest

from assembler.cli.main import main
from assembler.config.projects import OPT_OUT_NAME, WORKSPACES_NAME, projects_home
from assembler.daemon.systemd import assemble_executable
from assembler.hosts.claude_code.setup import all_projects_hooks as claude_hooks
from assembler.hosts.claude_code.setup import claude_code_setup
from assembler.hosts.codex.setup import all_projects_hooks as codex_hooks
from assembler.hosts.codex.setup import codex_setup, trusted_hash
from assembler.hosts.command_hooks import strip_our_hooks

LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit"}
MINE = {"type": "command", "command": "notify-send prompt"}


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude Code's folder ($CLAUDE_CONFIG_DIR); return its settings.json's path."""
    folder = tmp_path / "claude config"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    return folder / "settings.json"


@pytest.fixture
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Codex's folder ($CODEX_HOME)."""
    folder = tmp_path / "codex home"
    folder.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(folder))
    return folder


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("ASSEMBLER_STATE_HOME", str(folder))
    return folder


def _command(host: str, assemble: Path | str | None = None) -> str:
    return shlex.join([str(assemble or assemble_executable()), "hook", host, "--all-projects"])


def _setup(host: str, *flags: str) -> int:
    return main(["setup", host, "--all-projects", *flags])


def _json_block(text: str) -> Any:
    lines = text.splitlines()
    start, end = lines.index("   {"), lines.index("   }")
    return json.loads("\n".join(lines[start : end + 1]))


def _users_claude_settings() -> dict[str, Any]:
    return {
        "model": "opus",
        "env": {"EDITOR": "vim"},
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "UserPromptSubmit": [{"hooks": [MINE]}],
            "Stop": [{"matcher": "", "hooks": [MINE]}],
        },
    }


# -- what is printed ------------------------------------------------------------------------


def test_the_claude_code_text_names_the_all_projects_hook_the_daemon_and_the_opt_outs(
    claude: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)

    assert _setup("claude-code") == 0

    text = capsys.readouterr().out
    assert _json_block(text) == {"hooks": claude_hooks(assemble_executable())}
    commands = [h["command"] for g in _json_block(text)["hooks"].values() for h in g[0]["hooks"]]
    assert commands == [_command("claude-code")] * 2
    assert shlex.quote(str(claude)) in text
    assert f"{assemble_executable()} daemon --all" in text
    assert f"{assemble_executable()} systemd install --all" in text
    assert str(projects_home()) in text and OPT_OUT_NAME in text
    assert "exclude = [" in text and "include = [" in text
    assert "No MCP server" in text and "setup claude-code --workspace FOLDER" in text
    # No workspace, no first assembly, nothing written.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claude config"]


def test_the_codex_text_trusts_the_hooks_where_merging_would_put_them(
    codex: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    users = {"hooks": {"UserPromptSubmit": [{"hooks": [MINE]}]}}
    (codex / "hooks.json").write_text(json.dumps(users))

    assert _setup("codex") == 0

    text = capsys.readouterr().out
    groups = _json_block(text)["hooks"]
    assert groups == codex_hooks(assemble_executable())
    handler = groups["UserPromptSubmit"][0]["hooks"][0]
    assert handler == {
        "type": "command",
        "command": _command("codex"),
        "additionalContextLimit": 0,
    }
    lines = text.splitlines()
    first = lines.index("   [features]")
    last = next(i for i in range(first, len(lines)) if "user_prompt_submit" in lines[i]) + 1
    config = tomllib.loads("\n".join(line.strip() for line in lines[first : last + 1]))
    hooks_json = codex / "hooks.json"
    assert config["hooks"]["state"] == {
        f"{hooks_json}:session_start:0:0": {
            "trusted_hash": trusted_hash("SessionStart", groups["SessionStart"][0])
        },
        # after the user's own UserPromptSubmit group
        f"{hooks_json}:user_prompt_submit:1:0": {
            "trusted_hash": trusted_hash("UserPromptSubmit", groups["UserPromptSubmit"][0])
        },
    }
    assert f"{assemble_executable()} daemon --all" in text and OPT_OUT_NAME in text


# -- --apply -------------------------------------------------------------------------------


def test_apply_adds_our_hooks_to_claude_codes_settings_and_keeps_everything_else(
    claude: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude.write_text(json.dumps(_users_claude_settings()))

    assert _setup("claude-code", "--apply") == 0

    out = capsys.readouterr().out
    ours = claude_hooks(assemble_executable())
    expected = _users_claude_settings()
    expected["hooks"]["UserPromptSubmit"].append(ours["UserPromptSubmit"][0])
    expected["hooks"]["SessionStart"] = ours["SessionStart"]
    assert json.loads(claude.read_text()) == expected
    assert f"added the SessionStart hook to {shlex.quote(str(claude))}" in out
    assert f"added the UserPromptSubmit hook to {shlex.quote(str(claude))}" in out


def test_a_second_apply_changes_nothing_and_says_so(
    claude: Path, codex: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude.write_text(json.dumps(_users_claude_settings()))
    (codex / "config.toml").write_text('model = "gpt-5.5"\n')
    assert _setup("claude-code", "--apply") == 0
    assert _setup("codex", "--apply") == 0
    files = [claude, codex / "hooks.json", codex / "config.toml"]
    before = [path.read_bytes() for path in files]
    capsys.readouterr()

    assert _setup("claude-code", "--apply") == 0
    assert _setup("codex", "--apply") == 0

    out = capsys.readouterr().out
    assert [path.read_bytes() for path in files] == before
    assert "added" not in out and "replaced" not in out
    assert out.count("already there: ") == 2 + 4  # two hooks; two hooks and their trust


def test_apply_follows_a_link_to_the_users_own_settings_file(claude: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps({"model": "opus"}))
    claude.symlink_to(dotfiles)

    assert _setup("claude-code", "--apply") == 0

    assert claude.is_symlink()
    written = json.loads(dotfiles.read_text())
    assert written == {"model": "opus", "hooks": claude_hooks(assemble_executable())}


def test_apply_trusts_each_codex_hook_at_the_place_it_takes_in_hooks_json(
    codex: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    users = {
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [MINE]}],
            "UserPromptSubmit": [{"hooks": [MINE]}, {"hooks": [MINE, MINE]}],
        }
    }
    (codex / "hooks.json").write_text(json.dumps(users))
    mine = '# my settings\nmodel = "gpt-5.5"\n\n[mcp_servers.lint]\ncommand = "lint-mcp"  # keep\n'
    (codex / "config.toml").write_text(mine)

    assert _setup("codex", "--apply") == 0

    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    text = (codex / "config.toml").read_text()
    assert text.startswith(mine)  # the user's lines, comments too, as they were
    config = tomllib.loads(text)
    assert config["model"] == "gpt-5.5" and config["mcp_servers"] == {
        "lint": {"command": "lint-mcp"}
    }
    assert "features" not in config
    state = config["hooks"]["state"]
    places = {"SessionStart": 1, "UserPromptSubmit": 2}  # after the user's groups
    for event, at in places.items():
        group = hooks[event][at]
        assert group["hooks"][0]["command"] == _command("codex")
        key = f"{codex / 'hooks.json'}:{LABELS[event]}:{at}:0"
        assert state[key] == {"trusted_hash": trusted_hash(event, group)}
    assert len(state) == 2
    assert hooks["SessionStart"][0] == users["hooks"]["SessionStart"][0]
    assert hooks["UserPromptSubmit"][:2] == users["hooks"]["UserPromptSubmit"]
    shown = shlex.quote(str(codex / "config.toml"))
    out = capsys.readouterr().out
    assert f"added the trust of the UserPromptSubmit hook to {shown}" in out


def test_apply_replaces_a_trust_of_another_hash_at_our_hooks_place(
    codex: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = f"{codex / 'hooks.json'}:session_start:0:0"
    old = f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "sha256:{"0" * 64}"\n'
    (codex / "config.toml").write_text('model = "gpt-5.5"\n\n' + old)

    assert _setup("codex", "--apply") == 0

    group = codex_hooks(assemble_executable())["SessionStart"][0]
    text = (codex / "config.toml").read_text()
    state = tomllib.loads(text)["hooks"]["state"]
    assert state[key] == {"trusted_hash": trusted_hash("SessionStart", group)}
    assert text.count(f"[hooks.state.{json.dumps(key)}]") == 1
    assert "replaced the trust of the SessionStart hook" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "said"),
    [('{"model": "opus",', "is not JSON"), ('["a list"]', "holds a JSON array")],
)
def test_a_broken_settings_file_is_refused_in_one_line_naming_it(
    claude: Path, content: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claude.write_text(content)

    assert _setup("claude-code", "--apply") == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(claude) in err and said in err
    assert "move it aside" in err
    assert claude.read_text() == content


def test_a_config_toml_that_is_not_toml_leaves_both_codex_files_as_they_were(
    codex: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (codex / "config.toml").write_text("[hooks.state\n")

    assert _setup("codex", "--apply") == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{shlex.quote(str(codex / 'config.toml'))} is not TOML" in err
    assert not (codex / "hooks.json").exists()
    assert (codex / "config.toml").read_text() == "[hooks.state\n"


# -- --remove ------------------------------------------------------------------------------


def test_remove_apply_returns_claude_codes_settings_to_the_users_own(
    claude: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude.write_text(json.dumps(_users_claude_settings()))
    assert _setup("claude-code", "--apply") == 0

    assert _setup("claude-code", "--remove", "--apply") == 0

    assert json.loads(claude.read_text()) == _users_claude_settings()
    assert "removed: the hooks that run `assemble hook claude-code --all-projects`" in (
        capsys.readouterr().out
    )
    assert _setup("claude-code", "--remove", "--apply") == 0  # again: nothing left of ours
    assert "absent: " in capsys.readouterr().out


def test_remove_apply_returns_codex_files_to_the_users_own(codex: Path) -> None:
    users = {
        "hooks": {"UserPromptSubmit": [{"hooks": [MINE]}], "Stop": [{"hooks": [MINE]}]},
        "version": 1,
    }
    (codex / "hooks.json").write_text(json.dumps(users))
    mine = (
        '# my settings\nmodel = "gpt-5.5"\n\n[features]\nhooks = true\n\n'
        '# the linter\n[mcp_servers.lint]\ncommand = "lint-mcp"  # keep\n'
    )
    (codex / "config.toml").write_text(mine)
    assert _setup("codex", "--apply") == 0
    assert "hooks.state" in (codex / "config.toml").read_text()

    assert _setup("codex", "--remove", "--apply") == 0

    assert json.loads((codex / "hooks.json").read_text()) == users
    text = (codex / "config.toml").read_text()
    assert tomllib.loads(text) == tomllib.loads(mine)
    assert text == mine


def test_remove_takes_the_trust_of_an_all_projects_hook_of_another_assemble_at_any_place(
    codex: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = {"type": "command", "command": _command("codex", "/old/bin/assemble")}
    groups = [{"hooks": [MINE]}, {"hooks": [MINE]}, {"hooks": [old]}]
    (codex / "hooks.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": groups}}))
    key = f"{codex / 'hooks.json'}:user_prompt_submit:2:0"
    theirs = f"{codex / 'hooks.json'}:user_prompt_submit:0:0"
    digest, mine = (
        trusted_hash("UserPromptSubmit", groups[2]),
        trusted_hash("UserPromptSubmit", groups[0]),
    )
    (codex / "config.toml").write_text(
        f'[hooks.state.{json.dumps(theirs)}]\ntrusted_hash = "{mine}"\n\n'
        f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "{digest}"\n'
    )

    assert _setup("codex", "--remove") == 0
    assert f"   [hooks.state.{json.dumps(key)}]" in capsys.readouterr().out
    assert _setup("codex", "--remove", "--apply") == 0

    assert json.loads((codex / "hooks.json").read_text()) == {
        "hooks": {"UserPromptSubmit": groups[:2]}
    }
    assert tomllib.loads((codex / "config.toml").read_text()) == {
        "hooks": {"state": {theirs: {"trusted_hash": mine}}}
    }


def test_the_all_projects_and_a_workspaces_claude_code_hooks_are_removed_apart(
    claude: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    per_workspace = claude_code_setup(workspace, assemble_executable()).settings
    claude.write_text(json.dumps(per_workspace))
    assert _setup("claude-code", "--apply") == 0
    both = json.loads(claude.read_text())

    assert _setup("claude-code", "--remove", "--apply") == 0
    assert json.loads(claude.read_text()) == per_workspace  # the workspace's hooks, rule, wait

    claude.write_text(json.dumps(both))
    argv = ["setup", "claude-code", "--remove", "--apply", "--workspace", str(workspace)]
    assert main(argv) == 0
    left = json.loads(claude.read_text())
    assert left["hooks"] == claude_hooks(assemble_executable())
    # The allow rule and the wait go with the last hook of ours: an all-projects one is left.
    assert left["permissions"] == per_workspace["permissions"]
    assert left["env"] == per_workspace["env"]


def test_the_all_projects_and_a_workspaces_codex_setup_are_removed_apart(
    codex: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    per_workspace = codex_setup(workspace, assemble_executable(), {"CODEX_HOME": str(codex)})
    (codex / "hooks.json").write_text(json.dumps(per_workspace.hooks))
    (codex / "config.toml").write_text("\n".join(per_workspace.config_lines()) + "\n")
    assert _setup("codex", "--apply") == 0
    both = [(codex / name).read_bytes() for name in ("hooks.json", "config.toml")]
    state = tomllib.loads(both[1].decode())["hooks"]["state"]
    assert len(state) == 4  # the workspace's two trusts, then ours at groups 1

    assert _setup("codex", "--remove", "--apply") == 0
    assert json.loads((codex / "hooks.json").read_text()) == per_workspace.hooks
    left = tomllib.loads((codex / "config.toml").read_text())
    assert left["hooks"]["state"] == {
        k: {"trusted_hash": v} for k, v in per_workspace.trust.items()
    }
    assert "scratchpad" in left["mcp_servers"]

    (codex / "hooks.json").write_bytes(both[0])
    (codex / "config.toml").write_bytes(both[1])
    argv = ["setup", "codex", "--remove", "--apply", "--workspace", str(workspace)]
    assert main(argv) == 0
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert hooks == codex_hooks(assemble_executable())  # ours, moved up to group 0
    left = tomllib.loads((codex / "config.toml").read_text())
    assert sorted(left["hooks"]["state"]) == sorted(
        f"{codex / 'hooks.json'}:{label}:1:0" for label in LABELS.values()
    )
    assert "mcp_servers" not in left
    # Their places moved: applying again trusts them where they are now.
    assert _setup("codex", "--apply") == 0
    state = tomllib.loads((codex / "config.toml").read_text())["hooks"]["state"]
    for event, groups in hooks.items():
        key = f"{codex / 'hooks.json'}:{LABELS[event]}:0:0"
        assert state[key] == {"trusted_hash": trusted_hash(event, groups[0])}


def test_strip_our_hooks_without_a_workspace_takes_only_the_all_projects_hook(
    tmp_path: Path,
) -> None:
    kept = [
        {"type": "command", "command": _command("codex")},  # another host's
        {"type": "command", "command": _command("claude-code") + " --verbose"},  # more words
        {"type": "command", "command": shlex.join(["assemble", "hook", "claude-code"])},
        {
            "type": "command",
            "command": shlex.join(["/a/assemble", "hook", "claude-code", "--workspace", "/w"]),
        },
        MINE,
    ]
    hooks = {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": _command("claude-code", "/x/assemble")}]},
            {"hooks": [{"command": _command("claude-code")}, *kept]},
        ],
        "SessionStart": [{"hooks": [{"command": _command("claude-code", "/y/bin/assemble")}]}],
    }

    strip_our_hooks(hooks, "claude-code", None)

    assert hooks == {"UserPromptSubmit": [{"hooks": kept}]}


# -- the flags ------------------------------------------------------------------------------


def test_all_projects_for_another_host_is_one_line_naming_the_hosts_that_have_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _setup("mcp") == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--all-projects is for claude-code and codex" in err


def test_apply_without_remove_or_all_projects_is_an_error(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", "claude-code", "--apply", "--workspace", str(workspace)]) == 1

    err = capsys.readouterr().err
    assert "--apply goes with --remove" in err and "--all-projects" in err
    assert not (workspace / "SCRATCHPAD.md").exists()


# -- the per-workspace setup lists its workspace --------------------------------------------


def test_setup_by_workspace_lists_it_once_for_the_daemon_of_every_workspace(
    workspace: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["setup", "claude-code", "--no-assemble", "--workspace", str(workspace)]

    assert main(argv) == 0
    assert main(argv) == 0

    listed = json.loads((state / WORKSPACES_NAME).read_text())
    assert listed == {"workspaces": [str(workspace.resolve())]}
    out = capsys.readouterr().out
    assert out.count("for `assemble daemon --all`") == 1
    assert "Claude Code, for the workspace" in out


def test_a_workspace_that_cannot_be_listed_is_one_line_and_the_setup_goes_on(
    workspace: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state.write_text("a file where the state folder goes")

    assert main(["setup", "codex", "--no-assemble", "--workspace", str(workspace)]) == 0

    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if line.startswith("not listed for ")]
    assert len(said) == 1 and "Codex, for the workspace" in out
    assert not (workspace / WORKSPACES_NAME).exists()
