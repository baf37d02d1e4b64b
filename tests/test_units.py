"""Tests of assembler/units.py: the systemd units, rendered, verified and installed."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assembler.cli.main import main
from assembler.config.files import user_config_dir, user_state_dir
from assembler.config.projects import register_workspace
from assembler.daemon.systemd import (
    DAEMON_UNITS,
    TIMER_UNITS,
    assemble_executable,
    every_workspace_folders,
    install_units,
    outside_folders,
    render_units,
    uninstall_units,
    unit_path,
)
from assembler.errors import AssemblerError

ASSEMBLE = Path(sys.executable).parent / "assemble"


def _exec_start(text: str, home: Path) -> list[str]:
    found = re.search(r"^ExecStart=(.*)$", text, re.MULTILINE)
    assert found is not None
    return shlex.split(found.group(1).replace("%h", str(home)))


def test_unit_paths_use_percent_h_under_home_and_escape_what_systemd_expands(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert unit_path(home / ".openclaw" / "workspace", home) == "%h/.openclaw/workspace"
    assert unit_path(Path("/srv/agent 1/50%"), home) == '"/srv/agent 1/50%%"'


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    # System mode: a container has no user manager for --user. verify also checks that
    # ExecStart's program exists, so the units start the installed `assemble`.
    paths = []
    config = tmp_path / "my config.toml"
    config.write_text("")
    outside = tmp_path / "host dir"
    outside.mkdir()
    for timer in (False, True):
        units = render_units(
            timer=timer, workspace=tmp_path, assemble=ASSEMBLE, config=config, writable=[outside]
        )
        for name, text in units.items():
            (tmp_path / name).write_text(text)
            paths.append(str(tmp_path / name))
    # The daemon of every workspace, under another name: the same name would be one unit.
    every = render_units(
        timer=False,
        workspace=None,
        assemble=ASSEMBLE,
        config=config,
        state_home=tmp_path / "state dir",
        writable=[outside],
    )[DAEMON_UNITS[0]]
    (tmp_path / "scratchpad-assembler-all.service").write_text(every)
    paths.append(str(tmp_path / "scratchpad-assembler-all.service"))
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *paths],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (0, "")


def test_every_directive_that_is_not_obvious_has_a_comment_above_it() -> None:
    obvious = {"Description", "ExecStart", "WantedBy", "Type"}
    units = render_units(timer=False, workspace=Path("/w"), assemble=ASSEMBLE)
    units |= render_units(timer=True, workspace=Path("/w"), assemble=ASSEMBLE)
    every = render_units(
        timer=False,
        workspace=None,
        assemble=ASSEMBLE,
        config_home=Path("/c"),
        state_home=Path("/s"),
    )
    units |= {f"every {name}": text for name, text in every.items()}
    for name, text in units.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            key = line.split("=", 1)[0]
            if "=" not in line or line.startswith("#") or key in obvious:
                continue
            # Directives may come in a commented group: walk up to the group's comment.
            above = i - 1
            while above >= 0 and "=" in lines[above] and not lines[above].startswith("#"):
                above -= 1
            assert above >= 0 and lines[above].startswith("#"), f"{name}: {line}"


def test_install_writes_the_daemon_service_with_a_working_exec_start(
    workspace: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["systemd", "install", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    unit = isolated_home / "xdg_config_home" / "systemd" / "user" / DAEMON_UNITS[0]
    assert f"wrote {unit}" in out
    assert "systemctl --user daemon-reload && systemctl --user enable --now " in out
    command = _exec_start(unit.read_text(), isolated_home)
    assert command[1:] == ["daemon", "--workspace", str(workspace)]
    assert Path(command[0]).is_absolute()
    result = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "usage: assemble daemon" in result.stdout


def test_install_timer_writes_a_oneshot_that_really_assembles(
    workspace: Path, isolated_home: Path
) -> None:
    (workspace / "assembler.toml").write_text("[memory]\nenabled = false\n")
    folder = isolated_home / "units"
    installed = install_units(timer=True, workspace=workspace, unit_dir=folder)
    assert [p.name for p in installed.written] == list(TIMER_UNITS)
    assert installed.enable_command.endswith("enable --now scratchpad-assembler-once.timer")
    timer = (folder / TIMER_UNITS[1]).read_text()
    assert "Persistent=true" in timer and "RandomizedDelaySec=" in timer
    service = (folder / TIMER_UNITS[0]).read_text()
    assert "Type=oneshot" in service
    command = _exec_start(service, isolated_home)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (workspace / "SCRATCHPAD.md").is_file()


def test_install_leaves_same_units_and_refuses_to_replace_others_without_force(
    workspace: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "units"
    install_units(timer=False, workspace=workspace, unit_dir=folder)
    again = install_units(timer=False, workspace=workspace, unit_dir=folder)
    assert again.written == [] and len(again.unchanged) == 1
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(AssemblerError, match="--force"):
        install_units(timer=False, workspace=other, unit_dir=folder)
    replaced = install_units(timer=False, workspace=other, unit_dir=folder, force=True)
    assert str(other) in replaced.written[0].read_text()


def test_a_config_file_is_passed_to_the_units(workspace: Path, tmp_path: Path) -> None:
    config = workspace / "agent.toml"
    units = render_units(timer=False, workspace=workspace, assemble=ASSEMBLE, config=config)
    command = _exec_start(units[DAEMON_UNITS[0]], tmp_path)
    assert command[-2:] == ["--config", str(config)]


def _read_write_paths(text: str, home: Path) -> list[str]:
    found = re.search(r"^ReadWritePaths=(.*)$", text, re.MULTILINE)
    assert found is not None
    return shlex.split(found.group(1).replace("%h", str(home)))


def test_install_passes_the_config_found_in_the_environment_as_an_absolute_path(
    workspace: Path,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = tmp_path / "elsewhere" / "agent.toml"
    config.parent.mkdir()
    config.write_text("[memory]\nenabled = false\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASSEMBLER_CONFIG", "elsewhere/agent.toml")  # relative, as users type it
    assert main(["systemd", "install", "--workspace", str(workspace)]) == 0
    unit = isolated_home / "xdg_config_home" / "systemd" / "user" / DAEMON_UNITS[0]
    command = _exec_start(unit.read_text(), isolated_home)
    assert command[-2:] == ["--config", str(config)]


def test_units_let_the_service_write_an_output_folder_outside_the_workspace(
    workspace: Path, tmp_path: Path, isolated_home: Path
) -> None:
    host = tmp_path / "host"
    # A place outside the workspace: only the user's own config may name one.
    user = isolated_home / "xdg_config_home" / "scratchpad-assembler" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'[output]\npath = "{host}/SCRATCHPAD.md"\n')
    assert main(["systemd", "install", "--timer", "--workspace", str(workspace)]) == 0
    unit = isolated_home / "xdg_config_home" / "systemd" / "user" / TIMER_UNITS[0]
    paths = _read_write_paths(unit.read_text(), isolated_home)
    assert paths[0] == str(workspace)
    assert f"-{host}" in paths  # "-": a missing folder does not stop the service from starting


def test_units_add_no_path_for_an_output_file_inside_the_workspace(workspace: Path) -> None:
    assert outside_folders(workspace, workspace / "scratchpad" / "TOOLS.md") == []
    assert outside_folders(workspace, workspace / "sub" / ".." / ".." / "x.md") == [
        workspace.parent
    ]
    units = render_units(timer=False, workspace=workspace, assemble=ASSEMBLE)
    # The workspace, and the state folder with the log of unexpected errors.
    assert _read_write_paths(units[DAEMON_UNITS[0]], Path.home()) == [
        str(workspace),
        f"-{user_state_dir()}",
    ]


def test_units_of_the_default_state_folder_write_it_under_percent_h_and_pin_nothing(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_STATE_HOME")
    installed = install_units(timer=True, workspace=workspace, unit_dir=tmp_path / "units")
    service = installed.written[0].read_text()
    assert "ASSEMBLER_STATE_HOME" not in service
    assert _read_write_paths(service, Path("/h"))[-1] == "-/h/.local/state/scratchpad-assembler"


def test_units_pin_a_state_folder_the_environment_moves_and_let_the_service_write_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "my state"
    monkeypatch.setenv("ASSEMBLER_STATE_HOME", str(state))
    installed = install_units(timer=False, workspace=workspace, unit_dir=tmp_path / "units")
    service = installed.written[0].read_text()
    assert f'Environment="ASSEMBLER_STATE_HOME={state}"\n' in service
    assert _read_write_paths(service, Path.home()) == [str(workspace), f"-{state}"]


# -- The daemon of every workspace (--all) ---------------------------------------------------


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's state folder, outside the home folder."""
    folder = tmp_path / "state"
    monkeypatch.setenv("ASSEMBLER_STATE_HOME", str(folder))
    return folder


def _unit(home: Path) -> Path:
    return home / "xdg_config_home" / "systemd" / "user" / DAEMON_UNITS[0]


def test_install_all_runs_the_daemon_of_every_workspace_and_lets_it_write_them(
    workspace: Path,
    isolated_home: Path,
    state: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_workspace(workspace)  # outside the home folder (tmp_path)
    assert main(["systemd", "install", "--all"]) == 0
    out = capsys.readouterr().out
    unit = _unit(isolated_home)
    assert f"wrote {unit}" in out
    assert "assemble systemd install --all --force" in out
    text = unit.read_text()
    command = _exec_start(text, isolated_home)
    assert command[1:] == ["daemon", "--all"]
    assert "--workspace" not in text
    assert "Description=scratchpad-assembler daemon (every workspace)" in text
    assert text.splitlines()[1].startswith("# Written by `assemble systemd install --all`")
    # The home folder, the workspace set up outside it, the state folder (projects, the log).
    assert _read_write_paths(text, isolated_home) == [
        str(isolated_home),
        f"-{workspace}",
        f"-{state}",
    ]
    assert "ProtectSystem=strict" in text
    # The service finds the same config and state as this command did.
    assert f"Environment=ASSEMBLER_STATE_HOME={state}" in text
    assert f"ASSEMBLER_CONFIG_HOME={unit_path(user_config_dir())}" in text
    result = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "usage: assemble daemon" in result.stdout


def test_install_all_lists_an_output_folder_outside_the_home_and_not_workspaces_inside_it(
    tmp_path: Path, isolated_home: Path, state: Path
) -> None:
    inside = isolated_home / "agent"
    outside = tmp_path / "outside"
    host = tmp_path / "host"
    for folder in (inside, outside):
        folder.mkdir()
        register_workspace(folder)
    (outside / "assembler.toml").write_text("[memory]\nenabled = false\n")
    user = user_config_dir() / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'[output]\npath = "{host}/SCRATCHPAD.md"\n')
    # The workspace in the home folder is writable as %h, its output folder outside it is not.
    assert every_workspace_folders(None) == [host, outside]
    installed = install_units(timer=False, workspace=None, unit_dir=tmp_path / "units")
    paths = _read_write_paths(installed.written[0].read_text(), isolated_home)
    assert paths == [str(isolated_home), f"-{host}", f"-{outside}", f"-{state}"]


def test_install_all_lists_a_workspace_whose_config_is_broken_without_its_output(
    workspace: Path, state: Path
) -> None:
    (workspace / "assembler.toml").write_text("[output\n")
    register_workspace(workspace)
    assert every_workspace_folders(None) == [workspace]


def test_install_all_passes_a_named_config_by_its_absolute_path_and_pins_no_config_folder(
    isolated_home: Path, tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "elsewhere" / "agent.toml"
    config.parent.mkdir()
    config.write_text("[memory]\nenabled = false\n")
    monkeypatch.chdir(tmp_path)
    assert main(["systemd", "install", "--all", "--config", "elsewhere/agent.toml"]) == 0
    text = _unit(isolated_home).read_text()
    assert _exec_start(text, isolated_home)[1:] == ["daemon", "--all", "--config", str(config)]
    assert "ASSEMBLER_CONFIG_HOME" not in text


def test_install_all_refuses_a_named_config_that_does_not_exist(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.toml"
    assert main(["systemd", "install", "--all", "--config", str(missing)]) == 1
    assert f"Config file '{missing}' (from --config) does not exist" in capsys.readouterr().err
    assert not _unit(isolated_home).exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [(["--timer"], "leave out --timer"), (["--workspace", "."], "leave out --workspace")],
)
def test_install_all_refuses_a_timer_or_a_workspace_in_one_line(
    extra: list[str],
    says: str,
    isolated_home: Path,
    state: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["systemd", "install", "--all", *extra]) == 1
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
    assert not (isolated_home / "xdg_config_home" / "systemd").exists()


def test_render_units_refuses_a_timer_of_every_workspace() -> None:
    with pytest.raises(AssemblerError, match="leave out --timer"):
        render_units(timer=True, workspace=None, assemble=ASSEMBLE)


def test_install_all_over_one_workspaces_unit_needs_force_and_uninstall_knows_it_as_ours(
    workspace: Path, tmp_path: Path, state: Path
) -> None:
    folder = tmp_path / "units"
    install_units(timer=False, workspace=workspace, unit_dir=folder)
    with pytest.raises(AssemblerError, match="--force"):
        install_units(timer=False, workspace=None, unit_dir=folder)
    assert "--workspace" in (folder / DAEMON_UNITS[0]).read_text()
    replaced = install_units(timer=False, workspace=None, unit_dir=folder, force=True)
    assert replaced.written == [folder / DAEMON_UNITS[0]]
    assert " daemon --all" in replaced.written[0].read_text()
    with pytest.raises(AssemblerError, match="--force"):  # and back: one unit for both
        install_units(timer=False, workspace=workspace, unit_dir=folder)
    assert uninstall_units(folder).removed == [folder / DAEMON_UNITS[0]]


def test_the_assemble_executable_is_the_one_of_this_install() -> None:
    assert assemble_executable() == ASSEMBLE.absolute()
