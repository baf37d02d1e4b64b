"""Tests of assembler/daemon/launchd.py and `assemble launchd`: the macOS agent's plist, rendered,
installed and removed, with a stub `launchctl` that logs its arguments and exits as told."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assembler.config.files import user_config_dir, user_log_dir, user_state_dir
from assembler.config.schema import APP_NAME
from assembler.daemon.launchd import (
    LABEL,
    LOG_NAME,
    install_agent,
    launch_agents_dir,
    render_plist,
    uninstall_agent,
)
from assembler.errors import AssemblerError

ASSEMBLE = Path(sys.executable).parent / "assemble"
PLIST_NAME = f"{LABEL}.plist"
OUR_COMMENT = b"<!-- Written by `assemble launchd install`"
UID = os.getuid()

# The stub: appends its argv (as one JSON list) to $LAUNCHCTL_LOG, then exits with the code
# $LAUNCHCTL_EXITS names for its sub-command, {"bootstrap": [5, 5, 0]}: the n-th call of that
# sub-command takes the n-th code (the last one once they run out), and 0 for any other.
STUB = """\
import json, os, sys

log = os.environ["LAUNCHCTL_LOG"]
args = sys.argv[1:]
calls = []
if os.path.exists(log):
    with open(log) as handle:
        calls = [json.loads(line) for line in handle if line.strip()]
with open(log, "a") as handle:
    handle.write(json.dumps(args) + "\\n")
codes = json.loads(os.environ.get("LAUNCHCTL_EXITS", "{}")).get(args[0] if args else "", [0])
code = codes[min(sum(1 for c in calls if c[:1] == args[:1]), len(codes) - 1)]
if code:
    print(f"{args[0]} failed: {code}: Input/output error", file=sys.stderr)
sys.exit(code)
"""


class Launchctl:
    """A stub `launchctl` in its own folder (`bin`, to put on PATH), logging to `log`."""

    def __init__(self, folder: Path) -> None:
        self.bin = folder / "stub-bin"
        self.bin.mkdir()
        self.program = self.bin / "launchctl"
        self.program.write_text(f"#!{sys.executable}\n{STUB}")
        self.program.chmod(0o755)
        self.log = folder / "launchctl.log"

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def which(self, name: str) -> str | None:
        return str(self.program) if name == "launchctl" else None

    def env(self, monkeypatch: pytest.MonkeyPatch, **exits: list[int]) -> None:
        """Set, for in-process calls, the log and the exit codes the stub reads."""
        monkeypatch.setenv("LAUNCHCTL_LOG", str(self.log))
        monkeypatch.setenv("LAUNCHCTL_EXITS", json.dumps(exits))


@pytest.fixture
def launchctl(tmp_path: Path) -> Launchctl:
    return Launchctl(tmp_path)


@pytest.fixture
def no_launchctl(tmp_path: Path) -> Path:
    """An empty folder to be the whole PATH: no launchctl on it."""
    folder = tmp_path / "empty-bin"
    folder.mkdir()
    return folder


def _plist_path(home: Path) -> Path:
    return home / "Library" / "LaunchAgents" / PLIST_NAME


def _load_plist(path: Path) -> dict[str, Any]:
    """Parse the plist with plistlib; where plutil exists (macOS), lint it too."""
    data = path.read_bytes()
    agent = plistlib.loads(data)
    assert isinstance(agent, dict)
    if plutil := shutil.which("plutil"):
        result = subprocess.run(
            [plutil, "-lint", str(path)], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stdout + result.stderr
    return agent


def _assemble(
    args: list[str],
    *,
    home: Path,
    path: Path,
    cwd: Path,
    launchctl: Launchctl | None = None,
    exits: dict[str, list[int]] | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real `assemble` with HOME, PATH (one folder) and none of the XDG or ASSEMBLER
    variables but those in `env`."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("XDG_", "ASSEMBLER_", "LAUNCHCTL_"))
    }
    environment |= {"HOME": str(home), "PATH": str(path)}
    if launchctl is not None:
        environment["LAUNCHCTL_LOG"] = str(launchctl.log)
        environment["LAUNCHCTL_EXITS"] = json.dumps(exits or {})
    environment |= env or {}
    return subprocess.run(
        [str(ASSEMBLE), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=120,
        check=False,
    )


def _bootout() -> list[str]:
    return ["bootout", f"gui/{UID}/{LABEL}"]


def _bootstrap(plist: Path) -> list[str]:
    return ["bootstrap", f"gui/{UID}", str(plist)]


# -- The plist -------------------------------------------------------------------------------


def test_render_plist_is_the_daemon_on_the_workspace_with_the_config_folder_pinned(
    tmp_path: Path,
) -> None:
    workspace, logs, config_home = tmp_path / "ws", tmp_path / "logs", tmp_path / "cfg"
    data = render_plist(
        workspace=workspace, assemble=ASSEMBLE, log_dir=logs, config_home=config_home
    )
    agent = plistlib.loads(data)
    assert agent["Label"] == LABEL
    assert agent["ProgramArguments"] == [str(ASSEMBLE), "daemon", "--workspace", str(workspace)]
    assert agent["WorkingDirectory"] == str(workspace)
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["StandardOutPath"] == agent["StandardErrorPath"] == str(logs / LOG_NAME)
    assert agent["EnvironmentVariables"] == {"ASSEMBLER_CONFIG_HOME": str(config_home)}
    # Our comment, by which uninstall knows the plist, comes in the first lines, after the
    # XML declaration (which must stay first).
    lines = data.splitlines()
    assert lines[0].startswith(b"<?xml")
    assert any(line.startswith(OUR_COMMENT) for line in lines[:4])


def test_render_plist_names_a_config_file_and_then_pins_no_folder(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    agent = plistlib.loads(
        render_plist(workspace=tmp_path / "ws", assemble=ASSEMBLE, log_dir=tmp_path, config=config)
    )
    assert agent["ProgramArguments"] == [
        str(ASSEMBLE),
        "daemon",
        "--workspace",
        str(tmp_path / "ws"),
        "--config",
        str(config),
    ]
    assert "EnvironmentVariables" not in agent


def test_render_plist_keeps_paths_xml_would_mangle(tmp_path: Path) -> None:
    workspace = tmp_path / "a & <b> 'c' \"d\" é"
    data = render_plist(workspace=workspace, assemble=ASSEMBLE, log_dir=tmp_path / "l & <m>")
    agent = plistlib.loads(data)
    assert agent["ProgramArguments"][3] == str(workspace)
    assert agent["StandardOutPath"] == str(tmp_path / "l & <m>" / LOG_NAME)
    path = tmp_path / PLIST_NAME
    path.write_bytes(data)
    assert _load_plist(path)["WorkingDirectory"] == str(workspace)


# -- `assemble launchd install` --------------------------------------------------------------


def test_cli_install_writes_the_agent_and_boots_out_then_bootstraps_it(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    config_home = tmp_path / "my config"
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        env={"ASSEMBLER_CONFIG_HOME": str(config_home)},
    )
    assert result.returncode == 0, result.stderr
    plist = _plist_path(isolated_home)
    agent = _load_plist(plist)
    logs = isolated_home / "Library" / "Logs" / APP_NAME
    assert agent["Label"] == LABEL
    assert agent["ProgramArguments"] == [str(ASSEMBLE), "daemon", "--workspace", str(workspace)]
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["StandardOutPath"] == agent["StandardErrorPath"] == str(logs / LOG_NAME)
    assert agent["EnvironmentVariables"] == {"ASSEMBLER_CONFIG_HOME": str(config_home)}
    assert logs.is_dir()  # launchd does not create the log's folder
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)]
    out = result.stdout.splitlines()
    assert out[0] == f"wrote {plist}"
    assert f"its log: {logs / LOG_NAME}" in out
    assert f"ran launchctl bootout gui/{UID}/{LABEL}" in out
    assert f"ran launchctl bootstrap gui/{UID} {plist}" in out
    assert "not on PATH" not in result.stdout


def test_cli_install_pins_the_default_config_folder(
    workspace: Path,
    isolated_home: Path,
    tmp_path: Path,
    launchctl: Launchctl,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
    )
    assert result.returncode == 0, result.stderr
    # What this platform's own lookup gives with the same environment.
    monkeypatch.delenv("XDG_CONFIG_HOME")
    expected = user_config_dir()
    assert expected.is_relative_to(isolated_home)
    agent = _load_plist(_plist_path(isolated_home))
    assert agent["EnvironmentVariables"] == {"ASSEMBLER_CONFIG_HOME": str(expected)}


def test_cli_install_passes_a_named_config_file_by_its_absolute_path(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    config = tmp_path / "elsewhere" / "agent.toml"
    config.parent.mkdir()
    config.write_text("[memory]\nenabled = false\n")
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace), "--config", "elsewhere/agent.toml"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
    )
    assert result.returncode == 0, result.stderr
    agent = _load_plist(_plist_path(isolated_home))
    assert agent["ProgramArguments"] == [
        str(ASSEMBLE),
        "daemon",
        "--workspace",
        str(workspace),
        "--config",
        str(config),
    ]
    assert "EnvironmentVariables" not in agent


def test_cli_install_logs_to_the_state_folder_an_xdg_variable_names(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    state = tmp_path / "xdg state"
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        env={"XDG_STATE_HOME": str(state)},
    )
    assert result.returncode == 0, result.stderr
    agent = _load_plist(_plist_path(isolated_home))
    assert agent["StandardOutPath"] == str(state / APP_NAME / LOG_NAME)
    assert (state / APP_NAME).is_dir()


@pytest.mark.parametrize("code", [3, 113])
def test_cli_install_takes_bootout_of_an_agent_not_loaded_as_fine(
    code: int, workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        exits={"bootout": [code]},
    )
    assert result.returncode == 0, result.stderr
    plist = _plist_path(isolated_home)
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)]
    assert f"ran launchctl bootout gui/{UID}/{LABEL} (it was not loaded)" in result.stdout
    assert "the daemon runs now" in result.stdout


@pytest.mark.parametrize("code", [1, 5, 37])
def test_cli_install_stops_with_one_line_when_bootout_fails_and_keeps_the_plist(
    code: int, workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        exits={"bootout": [code]},
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"assemble: error: launchctl bootout gui/{UID}/{LABEL} failed")
    assert f"{code}: Input/output error" in lines[0]  # what launchctl said
    assert "Traceback" not in result.stderr
    plist = _plist_path(isolated_home)
    assert _load_plist(plist)["Label"] == LABEL
    assert launchctl.calls() == [_bootout()]  # no bootstrap over a loaded agent


def test_cli_install_says_clearly_when_bootstrap_fails(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        exits={"bootstrap": [37]},
    )
    assert result.returncode == 1
    plist = _plist_path(isolated_home)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"assemble: error: launchctl bootstrap gui/{UID} {plist} failed")
    assert "37: Input/output error" in lines[0]
    assert "plutil -lint" in lines[0]
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)]  # 37 is not retried
    assert plist.is_file()


def test_cli_install_without_launchctl_prints_the_commands_and_runs_nothing(
    workspace: Path,
    isolated_home: Path,
    tmp_path: Path,
    launchctl: Launchctl,
    no_launchctl: Path,
) -> None:
    result = _assemble(
        ["launchd", "install", "--workspace", str(workspace)],
        home=isolated_home,
        path=no_launchctl,
        cwd=tmp_path,
        launchctl=launchctl,  # its log is named, but it is not on PATH
    )
    assert result.returncode == 0, result.stderr
    plist = _plist_path(isolated_home)
    assert _load_plist(plist)["Label"] == LABEL
    out = result.stdout.splitlines()
    assert out[0] == f"wrote {plist}"
    assert "launchctl is not on PATH" in result.stdout
    assert out[-2:] == [
        f"  launchctl bootout gui/{UID}/{LABEL}",
        f"  launchctl bootstrap gui/{UID} {plist}",
    ]
    assert not any(line.startswith("ran ") for line in out)
    assert launchctl.calls() == []


def test_cli_install_again_leaves_the_same_plist_and_reloads_it(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    args = ["launchd", "install", "--workspace", str(workspace)]
    first = _assemble(
        args, home=isolated_home, path=launchctl.bin, cwd=tmp_path, launchctl=launchctl
    )
    assert first.returncode == 0, first.stderr
    plist = _plist_path(isolated_home)
    before = plist.stat().st_ino, plist.read_bytes()
    again = _assemble(
        args, home=isolated_home, path=launchctl.bin, cwd=tmp_path, launchctl=launchctl
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"unchanged {plist}"
    assert (plist.stat().st_ino, plist.read_bytes()) == before  # not rewritten
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)] * 2


def test_cli_install_refuses_other_content_without_force_and_replaces_it_with_force(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    run: dict[str, Any] = {
        "home": isolated_home,
        "path": launchctl.bin,
        "cwd": tmp_path,
        "launchctl": launchctl,
    }
    assert _assemble(["launchd", "install", "--workspace", str(workspace)], **run).returncode == 0
    plist = _plist_path(isolated_home)
    old = plist.read_bytes()
    other = tmp_path / "other"
    other.mkdir()
    launchctl.log.unlink()

    refused = _assemble(["launchd", "install", "--workspace", str(other)], **run)
    assert refused.returncode == 1
    assert "already exists with other content" in refused.stderr
    assert "--force" in refused.stderr
    assert plist.read_bytes() == old
    assert launchctl.calls() == []  # the loaded agent is left running

    forced = _assemble(["launchd", "install", "--force", "--workspace", str(other)], **run)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines()[0] == f"wrote {plist}"
    agent = _load_plist(plist)
    assert agent["ProgramArguments"][2:] == ["--workspace", str(other)]
    assert agent["WorkingDirectory"] == str(other)
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)]


# -- install_agent, in-process ---------------------------------------------------------------


def test_install_agent_retries_bootstrap_while_the_old_agent_is_still_exiting(
    workspace: Path, tmp_path: Path, launchctl: Launchctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    launchctl.env(monkeypatch, bootstrap=[5, 5, 0])
    pauses: list[float] = []
    installed = install_agent(
        workspace=workspace,
        agent_dir=tmp_path / "agents",
        log_dir=tmp_path / "logs",
        assemble=ASSEMBLE,
        uid=501,
        which=launchctl.which,
        sleep=pauses.append,
    )
    plist = tmp_path / "agents" / PLIST_NAME
    bootstrap = ["bootstrap", "gui/501", str(plist)]
    assert launchctl.calls() == [["bootout", f"gui/501/{LABEL}"], bootstrap, bootstrap, bootstrap]
    assert len(pauses) == 2  # between the tries, not after the last
    assert [step.line for step in installed.ran] == [
        f"launchctl bootout gui/501/{LABEL}",
        f"launchctl bootstrap gui/501 {plist}",
    ]
    assert installed.written and installed.to_run == []
    assert installed.log == tmp_path / "logs" / LOG_NAME
    assert _load_plist(plist)["ProgramArguments"][0] == str(ASSEMBLE)


def test_install_agent_gives_up_on_a_bootstrap_that_keeps_failing_with_eio(
    workspace: Path, tmp_path: Path, launchctl: Launchctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    launchctl.env(monkeypatch, bootstrap=[5])
    pauses: list[float] = []
    with pytest.raises(AssemblerError, match=r"launchctl bootstrap gui/501 .* failed"):
        install_agent(
            workspace=workspace,
            agent_dir=tmp_path / "agents",
            log_dir=tmp_path / "logs",
            assemble=ASSEMBLE,
            uid=501,
            which=launchctl.which,
            sleep=pauses.append,
        )
    tries = [call for call in launchctl.calls() if call[0] == "bootstrap"]
    assert 1 < len(tries) <= 20  # retried, but a bounded number of times
    assert len(pauses) == len(tries) - 1


def test_install_agent_does_not_retry_eio_when_nothing_was_booted_out(
    workspace: Path, tmp_path: Path, launchctl: Launchctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing was loaded, so nothing is still exiting: EIO means a bad plist.
    launchctl.env(monkeypatch, bootout=[113], bootstrap=[5, 0])
    pauses: list[float] = []
    with pytest.raises(AssemblerError, match=r"bootstrap .* failed .*5: Input/output error"):
        install_agent(
            workspace=workspace,
            agent_dir=tmp_path / "agents",
            log_dir=tmp_path / "logs",
            assemble=ASSEMBLE,
            uid=501,
            which=launchctl.which,
            sleep=pauses.append,
        )
    assert [call[0] for call in launchctl.calls()] == ["bootout", "bootstrap"]
    assert pauses == []


def test_install_agent_without_launchctl_returns_the_commands(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    installed = install_agent(
        workspace=workspace,
        log_dir=tmp_path / "logs",
        assemble=ASSEMBLE,
        uid=501,
        which=lambda name: None,
        sleep=lambda seconds: pytest.fail("no launchctl, nothing to wait for"),
    )
    plist = isolated_home / "Library" / "LaunchAgents" / PLIST_NAME
    assert launch_agents_dir() == plist.parent
    assert installed.plist == plist and installed.written
    assert installed.ran == []
    assert installed.to_run == [
        f"launchctl bootout gui/501/{LABEL}",
        f"launchctl bootstrap gui/501 {plist}",
    ]
    assert _load_plist(plist)["Label"] == LABEL


def test_install_agent_quotes_a_plist_path_with_a_space_in_the_commands(
    workspace: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "Launch Agents"
    installed = install_agent(
        workspace=workspace,
        agent_dir=folder,
        log_dir=tmp_path / "logs",
        assemble=ASSEMBLE,
        uid=501,
        which=lambda name: None,
    )
    assert installed.to_run[1] == f"launchctl bootstrap gui/501 '{folder / PLIST_NAME}'"


def test_install_agent_does_not_write_through_a_link_in_the_plists_place(
    workspace: Path, tmp_path: Path, launchctl: Launchctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    launchctl.env(monkeypatch)
    folder = tmp_path / "agents"
    folder.mkdir()
    target = tmp_path / "elsewhere.plist"
    target.write_bytes(b"not ours")
    (folder / PLIST_NAME).symlink_to(target)
    with pytest.raises(AssemblerError):
        install_agent(
            workspace=workspace,
            agent_dir=folder,
            log_dir=tmp_path / "logs",
            assemble=ASSEMBLE,
            uid=501,
            force=True,
            which=launchctl.which,
        )
    assert target.read_bytes() == b"not ours"
    assert (folder / PLIST_NAME).is_symlink()
    assert launchctl.calls() == []


# -- `assemble launchd uninstall` ------------------------------------------------------------


def test_cli_uninstall_boots_out_and_removes_our_plist(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    run: dict[str, Any] = {
        "home": isolated_home,
        "path": launchctl.bin,
        "cwd": tmp_path,
        "launchctl": launchctl,
    }
    assert _assemble(["launchd", "install", "--workspace", str(workspace)], **run).returncode == 0
    plist = _plist_path(isolated_home)
    launchctl.log.unlink()
    result = _assemble(["launchd", "uninstall"], **run)
    assert result.returncode == 0, result.stderr
    assert not plist.exists()
    assert launchctl.calls() == [_bootout()]
    assert result.stdout.splitlines() == [
        f"ran launchctl bootout gui/{UID}/{LABEL}",
        f"removed {plist}",
    ]


def test_cli_uninstall_removes_our_plist_of_an_agent_not_loaded(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    run: dict[str, Any] = {
        "home": isolated_home,
        "path": launchctl.bin,
        "cwd": tmp_path,
        "launchctl": launchctl,
    }
    assert _assemble(["launchd", "install", "--workspace", str(workspace)], **run).returncode == 0
    result = _assemble(["launchd", "uninstall"], **run, exits={"bootout": [113]})
    assert result.returncode == 0, result.stderr
    assert not _plist_path(isolated_home).exists()
    assert "(it was not loaded)" in result.stdout


def test_cli_uninstall_keeps_the_plist_when_bootout_fails(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    run: dict[str, Any] = {
        "home": isolated_home,
        "path": launchctl.bin,
        "cwd": tmp_path,
        "launchctl": launchctl,
    }
    assert _assemble(["launchd", "install", "--workspace", str(workspace)], **run).returncode == 0
    plist = _plist_path(isolated_home)
    result = _assemble(["launchd", "uninstall"], **run, exits={"bootout": [1]})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"assemble: error: launchctl bootout gui/{UID}/{LABEL} failed")
    assert "uninstall again" in lines[0]
    assert _load_plist(plist)["Label"] == LABEL


def test_cli_uninstall_keeps_a_plist_of_the_same_name_it_did_not_write(
    isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    plist = _plist_path(isolated_home)
    plist.parent.mkdir(parents=True)
    theirs = plistlib.dumps({"Label": LABEL, "ProgramArguments": ["/usr/local/bin/mine"]})
    plist.write_bytes(theirs)
    result = _assemble(
        ["launchd", "uninstall"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
    )
    assert result.returncode == 0, result.stderr
    assert plist.read_bytes() == theirs
    assert launchctl.calls() == []  # its agent is left alone
    assert result.stdout.startswith(f"kept {plist} (not written by assemble launchd install")


@pytest.mark.parametrize("dangling", [False, True])
def test_cli_uninstall_does_not_take_a_link_in_the_plists_place_for_ours(
    dangling: bool, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    target = tmp_path / "target.plist"
    if not dangling:  # even a link to a plist of ours is not the file install wrote
        target.write_bytes(render_plist(workspace=tmp_path, assemble=ASSEMBLE, log_dir=tmp_path))
    plist = _plist_path(isolated_home)
    plist.parent.mkdir(parents=True)
    plist.symlink_to(target)
    result = _assemble(
        ["launchd", "uninstall"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
    )
    assert result.returncode == 0, result.stderr
    assert plist.is_symlink()
    assert target.exists() is not dangling
    assert launchctl.calls() == []
    assert result.stdout.startswith(f"kept {plist}")


def test_cli_uninstall_with_nothing_installed_says_so(
    isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    result = _assemble(
        ["launchd", "uninstall"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        exits={"bootout": [113]},
    )
    assert result.returncode == 0, result.stderr
    folder = isolated_home / "Library" / "LaunchAgents"
    assert f"no agent of ours in {folder}" in result.stdout
    assert "removed" not in result.stdout
    assert not folder.exists()  # uninstall creates nothing


def test_cli_uninstall_without_launchctl_prints_the_bootout_and_removes_the_plist(
    workspace: Path,
    isolated_home: Path,
    tmp_path: Path,
    launchctl: Launchctl,
    no_launchctl: Path,
) -> None:
    run: dict[str, Any] = {"home": isolated_home, "cwd": tmp_path, "launchctl": launchctl}
    installed = _assemble(
        ["launchd", "install", "--workspace", str(workspace)], path=no_launchctl, **run
    )
    assert installed.returncode == 0, installed.stderr
    plist = _plist_path(isolated_home)
    assert plist.is_file()
    result = _assemble(["launchd", "uninstall"], path=no_launchctl, **run)
    assert result.returncode == 0, result.stderr
    assert not plist.exists()
    assert f"removed {plist}" in result.stdout
    assert "launchctl is not on PATH" in result.stdout
    assert result.stdout.splitlines()[-1] == f"  launchctl bootout gui/{UID}/{LABEL}"
    assert launchctl.calls() == []


def test_uninstall_agent_in_process_removes_only_our_plist(
    workspace: Path, tmp_path: Path, launchctl: Launchctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    launchctl.env(monkeypatch)
    folder = tmp_path / "agents"
    install_agent(
        workspace=workspace,
        agent_dir=folder,
        log_dir=tmp_path / "logs",
        assemble=ASSEMBLE,
        uid=501,
        which=launchctl.which,
    )
    launchctl.log.unlink()
    removed = uninstall_agent(agent_dir=folder, uid=501, which=launchctl.which)
    assert (removed.removed, removed.kept) == (True, False)
    assert not (folder / PLIST_NAME).exists()
    assert launchctl.calls() == [["bootout", f"gui/501/{LABEL}"]]
    again = uninstall_agent(agent_dir=folder, uid=501, which=lambda name: None)
    assert (again.removed, again.kept) == (False, False)
    assert again.to_run == [f"launchctl bootout gui/501/{LABEL}"]


# -- The agent of every workspace (--all) ----------------------------------------------------


def test_render_plist_of_every_workspace_runs_daemon_all_in_the_home_folder(
    tmp_path: Path,
) -> None:
    home, config = tmp_path / "home", tmp_path / "agent.toml"
    agent = plistlib.loads(
        render_plist(workspace=None, assemble=ASSEMBLE, log_dir=tmp_path / "logs", home=home)
    )
    assert agent["ProgramArguments"] == [str(ASSEMBLE), "daemon", "--all"]
    assert agent["WorkingDirectory"] == str(home)
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    named = plistlib.loads(
        render_plist(workspace=None, assemble=ASSEMBLE, log_dir=tmp_path, config=config)
    )
    assert named["ProgramArguments"] == [str(ASSEMBLE), "daemon", "--all", "--config", str(config)]
    assert named["WorkingDirectory"] == str(Path.home())


def test_cli_install_all_writes_the_agent_of_every_workspace_and_loads_it_the_same_way(
    isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    result = _assemble(
        ["launchd", "install", "--all"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
    )
    assert result.returncode == 0, result.stderr
    plist = _plist_path(isolated_home)
    agent = _load_plist(plist)
    logs = isolated_home / "Library" / "Logs" / APP_NAME
    assert agent["ProgramArguments"] == [str(ASSEMBLE), "daemon", "--all"]
    assert agent["WorkingDirectory"] == str(isolated_home)
    assert agent["RunAtLoad"] is True
    assert agent["StandardOutPath"] == agent["StandardErrorPath"] == str(logs / LOG_NAME)
    assert set(agent["EnvironmentVariables"]) == {"ASSEMBLER_CONFIG_HOME"}
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)]
    assert result.stdout.splitlines()[0] == f"wrote {plist}"


def test_cli_install_all_passes_a_named_config_file_by_its_absolute_path(
    isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    config = tmp_path / "elsewhere" / "agent.toml"
    config.parent.mkdir()
    config.write_text("[memory]\nenabled = false\n")
    result = _assemble(
        ["launchd", "install", "--all"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        env={"ASSEMBLER_CONFIG": "elsewhere/agent.toml"},  # relative, as users type it
    )
    assert result.returncode == 0, result.stderr
    agent = _load_plist(_plist_path(isolated_home))
    assert agent["ProgramArguments"] == [
        str(ASSEMBLE),
        "daemon",
        "--all",
        "--config",
        str(config),
    ]
    assert "EnvironmentVariables" not in agent


def test_cli_install_all_pins_the_state_folder_an_xdg_variable_names(
    isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    # The hooks announce projects there; launchd does not pass the shell's variable on.
    state = tmp_path / "xdg state"
    result = _assemble(
        ["launchd", "install", "--all"],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
        env={"XDG_STATE_HOME": str(state)},
    )
    assert result.returncode == 0, result.stderr
    agent = _load_plist(_plist_path(isolated_home))
    assert agent["EnvironmentVariables"]["ASSEMBLER_STATE_HOME"] == str(state / APP_NAME)
    assert agent["StandardOutPath"] == str(state / APP_NAME / LOG_NAME)


def test_cli_install_all_refuses_a_workspace_in_one_line(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    result = _assemble(
        ["launchd", "install", "--all", "--workspace", str(workspace)],
        home=isolated_home,
        path=launchctl.bin,
        cwd=tmp_path,
        launchctl=launchctl,
    )
    assert result.returncode == 1
    assert "leave out --workspace" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not _plist_path(isolated_home).exists()
    assert launchctl.calls() == []


def test_cli_install_all_over_one_workspaces_agent_needs_force(
    workspace: Path, isolated_home: Path, tmp_path: Path, launchctl: Launchctl
) -> None:
    run: dict[str, Any] = {
        "home": isolated_home,
        "path": launchctl.bin,
        "cwd": tmp_path,
        "launchctl": launchctl,
    }
    assert _assemble(["launchd", "install", "--workspace", str(workspace)], **run).returncode == 0
    plist = _plist_path(isolated_home)
    old = plist.read_bytes()
    launchctl.log.unlink()

    refused = _assemble(["launchd", "install", "--all"], **run)
    assert refused.returncode == 1
    assert "already exists with other content" in refused.stderr and "--force" in refused.stderr
    assert plist.read_bytes() == old
    assert launchctl.calls() == []

    forced = _assemble(["launchd", "install", "--all", "--force"], **run)
    assert forced.returncode == 0, forced.stderr
    assert _load_plist(plist)["ProgramArguments"][1:] == ["daemon", "--all"]
    assert launchctl.calls() == [_bootout(), _bootstrap(plist)]
    removed = uninstall_agent(agent_dir=plist.parent, uid=UID, which=lambda name: None)
    assert removed.removed and not plist.exists()  # known as ours


# -- The macOS folders -----------------------------------------------------------------------


@pytest.fixture
def bare_env(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME set, and none of the XDG or ASSEMBLER folder variables."""
    for name in (
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "ASSEMBLER_CONFIG_HOME",
        "ASSEMBLER_STATE_HOME",
    ):
        monkeypatch.delenv(name, raising=False)
    return isolated_home


def test_macos_folders_are_application_support_and_logs(bare_env: Path) -> None:
    support = bare_env / "Library" / "Application Support" / APP_NAME
    assert user_config_dir(platform="darwin") == support
    assert user_state_dir(platform="darwin") == support / "state"
    assert user_log_dir(platform="darwin") == bare_env / "Library" / "Logs" / APP_NAME


def test_linux_folders_are_unchanged(bare_env: Path) -> None:
    assert user_config_dir(platform="linux") == bare_env / ".config" / APP_NAME
    assert user_state_dir(platform="linux") == bare_env / ".local" / "state" / APP_NAME
    assert user_log_dir(platform="linux") == bare_env / ".local" / "state" / APP_NAME


@pytest.mark.parametrize("platform", ["darwin", "linux"])
def test_xdg_variables_win_on_every_platform(
    platform: str, bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xs"))
    assert user_config_dir(platform=platform) == tmp_path / "xc" / APP_NAME
    assert user_state_dir(platform=platform) == tmp_path / "xs" / APP_NAME
    # A state folder named by the user takes the logs too, as on Linux.
    assert user_log_dir(platform=platform) == tmp_path / "xs" / APP_NAME


@pytest.mark.parametrize("platform", ["darwin", "linux"])
def test_assembler_variables_win_over_xdg_and_macos(
    platform: str, bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xs"))
    monkeypatch.setenv("ASSEMBLER_CONFIG_HOME", str(tmp_path / "ac"))
    monkeypatch.setenv("ASSEMBLER_STATE_HOME", str(tmp_path / "as"))
    assert user_config_dir(platform=platform) == tmp_path / "ac"
    assert user_state_dir(platform=platform) == tmp_path / "as"
    assert user_log_dir(platform=platform) == tmp_path / "as"


def test_macos_assembler_state_home_alone_takes_the_logs(
    bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSEMBLER_STATE_HOME", str(tmp_path / "as"))
    assert user_state_dir(platform="darwin") == tmp_path / "as"
    assert user_log_dir(platform="darwin") == tmp_path / "as"
    # The config folder is still macOS's own.
    assert user_config_dir(platform="darwin") == (
        bare_env / "Library" / "Application Support" / APP_NAME
    )
