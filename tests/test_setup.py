"""Tests of assembler/hosts/setup.py (`assemble setup HOST`, `--remove`, `--apply`), of
hosts/removal.py, of `assemble systemd uninstall` and of the OpenClaw plugin setup points at:
the commands name the real plugin folder and this install's absolute `assemble`, and the
plugin's files agree with the program (its id, its tool's schema). The plugin itself runs in
OpenClaw in tests/test_e2e_openclaw.py; the removals run against the real hosts in
tests/test_e2e_setup.py."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e.turns import printed_openclaw_commands

from assembler.assembly.pipeline import run_once
from assembler.cli.main import main
from assembler.config.files import load_config, validate
from assembler.daemon.systemd import (
    assemble_executable,
    install_units,
    uninstall_units,
    user_unit_dir,
)
from assembler.hosts.claude_code.setup import claude_code_removal, strip_settings
from assembler.hosts.handoff import stale_line
from assembler.hosts.mcp.server import SCRATCHPAD_DESCRIPTION, SCRATCHPAD_SCHEMA, Tools
from assembler.hosts.mcp.setup import mcp_config_files, server_entry
from assembler.hosts.openclaw.setup import (
    OPENCLAW_FALLBACK_OUTPUT,
    OPENCLAW_PLUGIN_ID,
    openclaw_plugin_dir,
    openclaw_removal,
    openclaw_setup,
)
from assembler.hosts.registry import HOSTS
from assembler.hosts.removal import HostCommand, Removal, SettingsEdit, TomlEdit, apply_removal
from assembler.hosts.setup import setup_text
from assembler.hosts.toml_tables import TablePath

REPO = Path(__file__).resolve().parent.parent


def _setup(host: str, workspace: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["setup", host, "--workspace", str(workspace)]) == 0
    return capsys.readouterr().out


def test_setup_openclaw_prints_commands_naming_the_plugin_folder_and_this_assemble(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assemble = assemble_executable()

    text = _setup("openclaw", workspace, capsys)

    install, configure, inspect, cron, fallback = printed_openclaw_commands(text)
    assert install == [
        *("openclaw", "plugins", "install", "--link", str(REPO / "integrations" / "openclaw")),
        *("--force", "--accept-capabilities"),
    ]
    assert configure[:4] == ["openclaw", "config", "set", "--batch-json"]
    assert json.loads(configure[4]) == [
        {
            "path": f"plugins.entries.{OPENCLAW_PLUGIN_ID}.hooks.allowConversationAccess",
            "value": True,
        },
        {
            "path": f"plugins.entries.{OPENCLAW_PLUGIN_ID}.config",
            "value": {"workspace": str(workspace), "assemble": str(assemble)},
        },
    ]
    assert assemble.is_absolute() and assemble.name == "assemble"
    assert inspect == ["openclaw", "plugins", "inspect", OPENCLAW_PLUGIN_ID, "--runtime", "--json"]
    assert cron[:7] == ["openclaw", "cron", "add", "--name", OPENCLAW_PLUGIN_ID, "--every", "10m"]
    assert json.loads(cron[cron.index("--command-argv") + 1]) == [
        str(assemble),
        "--once",
        "--workspace",
        str(workspace),
    ]
    assert json.loads(fallback[4]) == {"enabled": True, "paths": [OPENCLAW_FALLBACK_OUTPUT]}
    assert f'path = "{OPENCLAW_FALLBACK_OUTPUT}"' in text
    assert f"{assemble} systemd install --workspace {workspace}" in text


def test_the_printed_openclaw_commands_are_the_ones_setup_gives_as_data(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = openclaw_setup(load_config(workspace), assemble_executable())

    printed = printed_openclaw_commands(_setup("openclaw", workspace, capsys))

    assert [list(command) for command in setup.plugin] == printed[:2]
    assert list(setup.cron) == printed[3]
    assert list(setup.fallback) == printed[4]


def test_no_printed_command_narrows_the_plugin_allowlist(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _setup("openclaw", workspace, capsys)

    # plugins.allow is exclusive: naming only this plugin would turn off the user's others.
    assert all("plugins.allow" not in " ".join(c) for c in printed_openclaw_commands(text))
    assert "never make it the only entry" in text


def test_the_cron_job_runs_well_within_a_short_ttl(workspace: Path) -> None:
    (workspace / "assembler.toml").write_text("[output]\nttl_minutes = 8\n")

    setup = openclaw_setup(load_config(workspace), assemble_executable())

    assert setup.cron[setup.cron.index("--every") + 1] == "4m"


@pytest.mark.parametrize("host", ["claude-code", "mcp"])
def test_the_other_hosts_setups_name_this_assemble_and_the_workspace(
    host: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _setup(host, workspace, capsys)

    assert f"{assemble_executable()} systemd install --workspace {workspace}" in text


# -- the plugin's own files ------------------------------------------------------------------


def test_the_plugin_folder_is_the_checkouts_and_holds_what_openclaw_loads() -> None:
    folder = openclaw_plugin_dir()
    manifest = json.loads((folder / "openclaw.plugin.json").read_text())
    package = json.loads((folder / "package.json").read_text())

    assert folder == REPO / "integrations" / "openclaw"
    assert manifest["id"] == OPENCLAW_PLUGIN_ID == package["name"]
    assert manifest["contracts"] == {"tools": ["scratchpad"]}
    assert set(manifest["configSchema"]["properties"]) == {
        "workspace",
        "assemble",
        "promptBudgetMs",
    }
    assert manifest["configSchema"]["additionalProperties"] is False
    assert package["type"] == "module"
    assert [(folder / entry).is_file() for entry in package["openclaw"]["extensions"]] == [True]
    # No build step and no dependencies of its own: the folder is what OpenClaw loads.
    assert not {"dependencies", "devDependencies", "scripts"} & set(package)


def test_the_plugins_scratchpad_tool_is_the_mcp_servers() -> None:
    tool = json.loads((openclaw_plugin_dir() / "scratchpad-tool.json").read_text())

    assert tool["name"] == "scratchpad"
    assert tool["description"] == SCRATCHPAD_DESCRIPTION
    assert tool["parameters"] == SCRATCHPAD_SCHEMA


# -- a fresh install: the folder, the first assembly, quoting ----------------------------------


def test_setup_on_a_fresh_install_creates_the_workspace_and_assembles_it_once(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = isolated_home / ".openclaw" / "workspace"  # OpenClaw makes it at its first run

    assert main(["setup", "openclaw", "--workspace", str(workspace)]) == 0

    out = capsys.readouterr().out
    assert workspace.is_dir()
    assert f"created the workspace folder {workspace}" in out
    assert f"assembled {workspace / 'SCRATCHPAD.md'} once" in out
    assert (workspace / "SCRATCHPAD.md").read_text().startswith("---\n")
    assert (workspace / ".scratchpad" / "prefix.json").is_file()


def test_setup_with_no_assemble_writes_no_file(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", "claude-code", "--no-assemble", "--workspace", str(workspace)]) == 0

    assert "assembled" not in capsys.readouterr().out
    assert not (workspace / "SCRATCHPAD.md").exists()


def test_a_failed_first_assembly_is_one_line_and_the_setup_is_still_printed(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "SCRATCHPAD.md").mkdir()  # where the file goes, a folder

    assert main(["setup", "mcp", "--workspace", str(workspace)]) == 0

    out, err = capsys.readouterr()
    [failed] = [line for line in out.splitlines() if line.startswith("first assembly failed: ")]
    assert failed.endswith(f"run assemble --once --workspace {workspace} to see why")
    assert "Traceback" not in out + err and '"mcpServers"' in out


@pytest.mark.parametrize("host", ["openclaw", "claude-code", "mcp"])
def test_every_path_printed_for_a_workspace_with_a_space_and_a_quote_splits_back_whole(
    tmp_path: Path, host: str
) -> None:
    workspace = tmp_path / "it's my workspace"
    workspace.mkdir()
    config = validate({}, source=None, workspace=workspace)

    text = setup_text(host, config, Path("/opt/assembler/bin/assemble"))

    commands = [shlex.split(line) for line in text.splitlines() if "--workspace" in line]
    given = [c[c.index("--workspace") + 1] for c in commands if "--workspace" in c]
    assert given and all(value == str(workspace) for value in given), given
    header = " ".join(text.splitlines()[:2])  # "..., for the workspace W"
    assert shlex.quote(str(workspace)) in header and str(workspace) not in header


# -- removal -----------------------------------------------------------------------------------


def _remove(host: str, workspace: Path, *flags: str) -> int:
    return main(["setup", host, "--remove", *flags, "--workspace", str(workspace)])


def test_remove_openclaw_prints_the_uninstall_the_left_over_entry_and_the_cron_job(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _remove("openclaw", workspace) == 0

    printed = printed_openclaw_commands(capsys.readouterr().out)
    assert printed == [
        ["openclaw", "plugins", "uninstall", OPENCLAW_PLUGIN_ID, "--force"],
        ["openclaw", "config", "unset", f"plugins.entries.{OPENCLAW_PLUGIN_ID}"],
        ["openclaw", "cron", "list", "--all", "--json"],
        ["openclaw", "cron", "rm", "<id>"],
        ["openclaw", "config", "unset", "hooks.internal.entries.bootstrap-extra-files"],
    ]
    assert not (workspace / "SCRATCHPAD.md").exists()  # a removal assembles nothing


def test_remove_of_a_workspace_deleted_already_still_prints_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = tmp_path / "gone"

    assert _remove("claude-code", gone) == 0

    assert "To disconnect Claude Code from the workspace" in capsys.readouterr().out
    assert not gone.exists()


def _hook(workspace: Path, assemble: str = "/opt/a/bin/assemble") -> dict[str, Any]:
    command = shlex.join([assemble, "hook", "claude-code", "--workspace", str(workspace)])
    return {"type": "command", "command": command}


def test_remove_apply_takes_only_our_hooks_and_rule_out_of_claude_codes_settings(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "my workspace"
    workspace.mkdir()
    mine = {"type": "command", "command": "notify-send prompt"}
    settings = {
        "model": "opus",
        "hooks": {
            "UserPromptSubmit": [{"hooks": [_hook(workspace), mine]}],
            "SessionStart": [{"matcher": "clear|compact", "hooks": [_hook(workspace)]}],
            "Stop": [{"hooks": [mine]}],
        },
        "permissions": {"allow": ["mcp__scratchpad", "Bash(ls:*)"]},
    }
    path = isolated_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(settings))

    assert _remove("claude-code", workspace, "--apply") == 0

    assert json.loads(path.read_text()) == {
        "model": "opus",
        "hooks": {"UserPromptSubmit": [{"hooks": [mine]}], "Stop": [{"hooks": [mine]}]},
        "permissions": {"allow": ["Bash(ls:*)"]},
    }
    assert "removed: the hooks that run `assemble hook claude-code` for this workspace, and " in (
        capsys.readouterr().out
    )
    assert _remove("claude-code", workspace, "--apply") == 0  # again: nothing left of ours
    assert "absent: " in capsys.readouterr().out


def test_the_allow_rule_stays_while_another_workspaces_hook_needs_it(tmp_path: Path) -> None:
    workspace, other = tmp_path / "a", tmp_path / "b"
    settings = {
        "hooks": {"UserPromptSubmit": [{"hooks": [_hook(workspace)]}, {"hooks": [_hook(other)]}]},
        "permissions": {"allow": ["mcp__scratchpad"]},
    }

    stripped = strip_settings(json.loads(json.dumps(settings)), workspace)

    assert stripped == {
        "hooks": {"UserPromptSubmit": [{"hooks": [_hook(other)]}]},
        "permissions": {"allow": ["mcp__scratchpad"]},
    }


def test_remove_apply_deletes_only_the_mcp_entry_that_serves_this_workspace(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    cursor = isolated_home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    ours = server_entry(workspace, Path("/opt/a/bin/assemble"))["mcpServers"]["scratchpad"]
    other = {"command": "npx", "args": ["-y", "some-server"]}
    cursor.write_text(json.dumps({"mcpServers": {"scratchpad": ours, "other": other}}))
    desktop = isolated_home / "xdg_config_home" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    elsewhere = server_entry(tmp_path / "elsewhere", Path("/opt/a/bin/assemble"))
    desktop.write_text(json.dumps(elsewhere))

    assert _remove("mcp", workspace, "--apply") == 0

    assert json.loads(cursor.read_text()) == {"mcpServers": {"other": other}}
    assert json.loads(desktop.read_text()) == elsewhere  # another workspace's: untouched


def test_a_settings_file_that_is_a_link_in_a_project_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [_hook(tmp_path)]}]}}))
    link = tmp_path / "settings.local.json"
    link.symlink_to(target)
    step = SettingsEdit("ours", link, lambda value: strip_settings(value, tmp_path))

    [outcome] = apply_removal(Removal("Claude Code", tmp_path, (step,)))

    assert outcome.status == "failed" and "edit it by hand" in outcome.detail
    assert "hook" in target.read_text()


def _edit(kind: str, path: Path, during: Callable[[], object]) -> SettingsEdit | TomlEdit:
    """An edit of `path` ("json" or "toml") that takes out the key or table "ours", calling
    `during` between the file's read and its write."""

    def strip(value: Any) -> Any:
        during()
        return {key: item for key, item in value.items() if key != "ours"}

    def tables(value: dict[str, Any]) -> list[TablePath]:
        during()
        return [("ours",)] if "ours" in value else []

    return SettingsEdit("ours", path, strip) if kind == "json" else TomlEdit("ours", path, tables)


@pytest.mark.parametrize("kind", ["json", "toml"])
def test_an_edit_of_a_file_that_is_not_there_finds_nothing_and_creates_nothing(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "settings"
    step = _edit(kind, path, lambda: None)

    [outcome] = apply_removal(Removal("Host", tmp_path, (step,)))

    assert outcome.status == "absent" and "does not exist" in outcome.detail
    assert not path.exists()


@pytest.mark.parametrize(
    ("kind", "text", "left"),
    [
        ("json", '{"ours": 1, "theirs": 2}', '{\n  "theirs": 2\n}\n'),
        ("toml", "[theirs]\na = 1\n\n[ours]\nb = 2\n", "[theirs]\na = 1\n"),
    ],
)
def test_an_edit_writes_the_file_without_ours_and_says_so(
    tmp_path: Path, kind: str, text: str, left: str
) -> None:
    path = tmp_path / "settings"
    path.write_text(text, encoding="utf-8")
    step = _edit(kind, path, lambda: None)

    [outcome] = apply_removal(Removal("Host", tmp_path, (step,)))

    assert outcome.status == "removed" and outcome.detail.startswith(f"edited {path}")
    assert path.read_text(encoding="utf-8") == left


@pytest.mark.parametrize(
    ("kind", "text"),
    [("json", '{"ours": 1, "theirs": 2}'), ("toml", "[theirs]\na = 1\n\n[ours]\nb = 2\n")],
)
def test_a_file_another_writer_changes_during_the_edit_keeps_what_they_wrote(
    tmp_path: Path, kind: str, text: str
) -> None:
    path = tmp_path / "settings"
    path.write_text(text, encoding="utf-8")
    theirs = text.replace("theirs", "changed")
    step = _edit(kind, path, lambda: path.write_text(theirs, encoding="utf-8"))

    [outcome] = apply_removal(Removal("Host", tmp_path, (step,)))

    assert outcome.status == "failed" and "changed while it was edited" in outcome.detail
    assert path.read_text(encoding="utf-8") == theirs


class _Fails(str):
    """What a lookup prints when it fails (exit 1)."""


class _FakeOpenClaw:
    """`openclaw` as a function: the JSON each lookup prints (an unknown `config get` fails
    as OpenClaw's does for an unset path), and every command it was given."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.ran: list[list[str]] = []

    def __call__(self, argv: Sequence[str], cwd: Path | None) -> subprocess.CompletedProcess[str]:
        words = list(argv[1:])
        self.ran.append(words)
        answer = self.answers.get(" ".join(words))
        if answer is None and "get" in words:
            answer = _Fails(f"Config path is valid but unset: {words[2]}.")
        if isinstance(answer, _Fails):
            error = {"ok": False, "error": {"type": "cli_error", "message": str(answer)}}
            return subprocess.CompletedProcess(argv, 1, json.dumps(error), f"{answer}\n")
        out = json.dumps(answer) if answer is not None else ""
        return subprocess.CompletedProcess(argv, 0, out, "")


def test_remove_apply_for_openclaw_runs_what_its_lookups_find_ours(workspace: Path) -> None:
    assemble = Path("/opt/a/bin/assemble")
    ours = {"kind": "command", "argv": [str(assemble), "--once", "--workspace", str(workspace)]}
    theirs = {**ours, "argv": [str(assemble), "--once", "--workspace", "/other"]}
    jobs = [
        {"id": "j1", "name": OPENCLAW_PLUGIN_ID, "payload": ours},
        {"id": "j2", "name": OPENCLAW_PLUGIN_ID, "payload": theirs},
        {"id": "j3", "name": "backup", "payload": ours},
    ]
    fake = _FakeOpenClaw(
        {
            f"config get plugins.entries.{OPENCLAW_PLUGIN_ID} --json": {"enabled": False},
            "cron list --all --json": {"jobs": jobs},
            "config get hooks.internal.entries.bootstrap-extra-files --json": {
                "enabled": True,
                "paths": ["docs/AGENTS.md"],  # the user's own use of the hook
            },
        }
    )
    removal = openclaw_removal(load_config(workspace), assemble)

    outcomes = apply_removal(removal, run=fake, which=lambda name: f"/usr/bin/{name}")

    assert [o.status for o in outcomes] == ["absent", "removed", "removed", "absent"]
    ran = [words for words in fake.ran if "get" not in words and "list" not in words]
    assert ran == [
        ["config", "unset", f"plugins.entries.{OPENCLAW_PLUGIN_ID}"],
        ["cron", "rm", "j1"],
    ]


def test_without_the_hosts_program_on_path_apply_prints_the_command_instead(
    workspace: Path,
) -> None:
    removal = openclaw_removal(load_config(workspace), Path("/opt/a/bin/assemble"))

    outcomes = apply_removal(removal, run=_FakeOpenClaw({}), which=lambda name: None)

    assert {o.status for o in outcomes} == {"manual"}
    assert outcomes[0].detail == (
        f"openclaw is not on PATH; run: openclaw plugins uninstall {OPENCLAW_PLUGIN_ID} --force"
    )


# -- systemd uninstall -------------------------------------------------------------------------


def test_systemd_uninstall_removes_our_units_and_their_links_and_keeps_a_strangers(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = user_unit_dir()
    install_units(timer=False, workspace=workspace, unit_dir=folder, assemble=Path("/bin/true"))
    wants = folder / "default.target.wants" / "scratchpad-assembler.service"
    wants.parent.mkdir()
    wants.symlink_to(folder / "scratchpad-assembler.service")
    (folder / "scratchpad-assembler-once.timer").write_text("[Timer]\nOnCalendar=daily\n")

    assert main(["systemd", "uninstall"]) == 0

    out = capsys.readouterr().out
    assert sorted(p.name for p in folder.rglob("*")) == [
        "default.target.wants",
        "scratchpad-assembler-once.timer",
    ]
    assert f"removed {folder / 'scratchpad-assembler.service'}" in out
    assert f"kept {folder / 'scratchpad-assembler-once.timer'}" in out
    assert "systemctl --user stop scratchpad-assembler.service" in out


# -- the docs' recipes are what the program prints and says --------------------------------------

DOCS = REPO / "docs"


def _section(page: Path, heading: str) -> str:
    text = page.read_text()
    start = text.index(f"### {heading}\n")
    end = text.find("\n#", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(text: str, language: str) -> list[list[str]]:
    return [
        block.strip("\n").splitlines()
        for block in re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)
    ]


def test_the_openclaw_docs_removal_is_what_remove_prints(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, printed_block, *_ = _blocks(_section(DOCS / "hosts" / "openclaw.md", "Remove"), "sh")

    assert _remove("openclaw", workspace) == 0

    printed = printed_openclaw_commands(capsys.readouterr().out)
    assert [shlex.split(line) for line in printed_block] == printed


def test_the_claude_code_docs_removal_names_the_commands_apply_runs(tmp_path: Path) -> None:
    workspace, project = tmp_path / "ws", tmp_path / "project"
    entry = server_entry(workspace, Path("/opt/a/bin/assemble"))["mcpServers"]
    state = {"mcpServers": entry, "projects": {str(project): {"mcpServers": entry}}}
    (tmp_path / ".claude.json").write_text(json.dumps(state))
    [block] = _blocks(_section(DOCS / "hosts" / "claude-code.md", "Remove"), "sh")[1:]

    removal = claude_code_removal(workspace, {"HOME": str(tmp_path)})

    lines = [step.shell_line() for step in removal.steps if isinstance(step, HostCommand)]
    assert lines == [block[0], block[1].replace("/path/to/project", str(project))]


def test_the_mcp_docs_removal_names_the_files_apply_edits(tmp_path: Path) -> None:
    section = _section(DOCS / "hosts" / "mcp.md", "Remove")

    files = mcp_config_files({"HOME": str(tmp_path)})

    assert [f"`~/{path.relative_to(tmp_path)}`" in section for path in files] == [True, True]


def test_the_stale_lines_in_the_docs_are_the_ones_the_hosts_get(workspace: Path) -> None:
    stale = "When the file is stale"
    [[claude]] = _blocks(_section(DOCS / "hosts" / "claude-code.md", stale), "text")
    [[openclaw]] = _blocks(_section(DOCS / "hosts" / "openclaw.md", stale), "text")
    [[mcp]] = _blocks(_section(DOCS / "hosts" / "mcp.md", stale), "text")
    now = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
    (workspace / "assembler.toml").write_text('[memory]\nmodel = "none"\n')
    config = load_config(workspace)
    run_once(config, now=now, hosts=HOSTS)

    assert claude + "\n" == stale_line(now.replace(hour=9, minute=14), now, daemon_running=False)
    script = (openclaw_plugin_dir() / "index.js").read_text()
    [template] = re.findall(r"return `(\[Scratchpad stale since [^`]*)`;", script)
    pattern = re.escape(template).replace(
        re.escape('${since.replace("T", " ").slice(0, 16)}'), r"\d{4}-\d\d-\d\d \d\d:\d\d"
    )
    assert re.fullmatch(pattern, openclaw), (pattern, openclaw)
    later = Tools(config, clock=lambda: now + timedelta(hours=2)).view_text()
    assert later.splitlines()[0] == mcp


def test_the_running_docs_stop_command_is_the_one_uninstall_prints(tmp_path: Path) -> None:
    text = (DOCS / "running.md").read_text()
    start = text.index("assemble systemd uninstall\n")

    removed = uninstall_units(tmp_path)

    assert removed.stop_command in _blocks(text[start:], "sh")[0]


def test_a_lookup_that_fails_for_another_reason_leaves_the_step_to_the_user(
    workspace: Path,
) -> None:
    down = _Fails("Gateway not reachable at ws://127.0.0.1:18789 (ECONNREFUSED).")
    fake = _FakeOpenClaw({"cron list --all --json": down})
    removal = openclaw_removal(load_config(workspace), Path("/opt/a/bin/assemble"))

    outcomes = apply_removal(removal, run=fake, which=lambda name: f"/usr/bin/{name}")

    assert [o.status for o in outcomes] == ["absent", "absent", "manual", "absent"]
    assert outcomes[2].detail == (
        f"{down}; run: openclaw cron list --all --json then openclaw cron rm <id>"
    )
    assert not [words for words in fake.ran if "get" not in words and "list" not in words]
