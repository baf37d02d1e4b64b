"""Tests of assembler/setup.py (`assemble setup HOST`) and of the OpenClaw plugin it points at:
the commands name the real plugin folder and this install's absolute `assemble`, and the
plugin's files agree with the program (its id, its tool's schema). The plugin itself runs in
OpenClaw in tests/test_e2e_openclaw.py."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from e2e.turns import printed_openclaw_commands

from assembler.cli.main import main
from assembler.config.files import load_config, validate
from assembler.daemon.systemd import assemble_executable
from assembler.hosts.mcp.server import SCRATCHPAD_DESCRIPTION, SCRATCHPAD_SCHEMA
from assembler.hosts.openclaw.setup import (
    OPENCLAW_FALLBACK_OUTPUT,
    OPENCLAW_PLUGIN_ID,
    openclaw_plugin_dir,
    openclaw_setup,
)
from assembler.hosts.setup import setup_text

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
    assert set(manifest["configSchema"]["properties"]) == {"workspace", "assemble"}
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


@pytest.mark.parametrize("host", ["openclaw", "claude-code", "mcp"])
def test_every_command_printed_for_a_workspace_with_a_space_quotes_it(
    tmp_path: Path, host: str
) -> None:
    workspace = tmp_path / "my workspace"
    workspace.mkdir()
    config = validate({}, source=None, workspace=workspace)

    text = setup_text(host, config, Path("/opt/assembler/bin/assemble"))

    commands = [shlex.split(line) for line in text.splitlines() if "--workspace" in line]
    given = [c[c.index("--workspace") + 1] for c in commands if "--workspace" in c]
    assert given and all(value == str(workspace) for value in given), given
