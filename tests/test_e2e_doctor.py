"""End to end, with the hosts' real programs (pinned, tests/e2e/hosts.py) and the mock model:
the delivery receipts and `assemble doctor` read what the real hosts wrote. Each host is set up
for a workspace exactly as `assemble setup HOST` prints it (the fixtures of
test_e2e_claude_code.py and test_e2e_codex.py), with the daemon serving it; a session of three
prompts carries the block on every turn, by the host's own record (Claude Code's
`hook_additional_context` attachments, Codex's `hooks.additional_context` developer messages),
and every link of the doctor's chain holds. Then the user takes our hooks out of the host's
settings and the same session gets one more prompt: the doctor names the missing link and the
command that puts it back, and `assemble check` exits 4, a missed delivery.

`assemble` runs as the user runs it, in the user's environment with the host's HOME, so that it
reads the settings, Claude Code's projects folder and Codex's sessions folder the hosts used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e.daemon import RunningDaemon
from e2e.host_setup import HostSetup
from e2e.mock_model import Text
from e2e.turns import HostRun, run_host
from test_e2e_claude_code import MakeClaudeCode, claude_code  # noqa: F401
from test_e2e_codex import MakeCodex, codex  # noqa: F401

from assembler.daemon.systemd import assemble_executable

pytestmark = pytest.mark.e2e

# The hook's wait for the daemon's answer: long, so that a loaded machine cannot make these
# tests race it (as in test_e2e_claude_code.py and test_e2e_codex.py).
WAIT = {"ASSEMBLER_PROMPT_BUDGET_MS": "10000"}
PROMPTS = (
    "why does the deploy keep failing? (e2e)",
    "is it the staging config? (e2e)",
    "give me the command to check it (e2e)",
)
AFTER = "and the other host? (e2e)"  # the prompt after the hooks were taken out


def _assemble(setup: HostSetup, *args: str) -> HostRun:
    """Run `assemble ARGS --workspace WORKSPACE` as the user would (any exit code)."""
    argv = [str(assemble_executable()), *args, "--workspace", str(setup.workspace)]
    return run_host(argv, env=setup.env, cwd=setup.workspace, timeout=120)


def _lines(run: HostRun, start: str) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith(start)]


def _all_delivered(setup: HostSetup, label: str, turns: int) -> None:
    """`assemble doctor` holds every link, the last delivery saying each of the session's
    `turns` carried the block; `assemble check` says so too and exits 0."""
    doctor = _assemble(setup, "doctor")
    assert doctor.returncode == 0, doctor.describe()
    assert _lines(doctor, "FAIL") == [], doctor.describe()
    assert f"ok   {label} hooks: " in doctor.stdout, doctor.describe()
    assert f"ok   the program the {label} hooks run: " in doctor.stdout, doctor.describe()
    assert "ok   the daemon: " in doctor.stdout, doctor.describe()
    assert "ok   the file: " in doctor.stdout, doctor.describe()
    [last] = _lines(doctor, "ok   the last delivery: ")
    assert f"{label} session " in last and f"{turns}/{turns} turns carried the block" in last, (
        doctor.describe()
    )
    assert "missed" not in last, doctor.describe()
    assert doctor.stdout.rstrip().endswith("every link holds"), doctor.describe()

    check = _assemble(setup, "check")
    assert check.returncode == 0, check.describe()
    [line] = _lines(check, "deliveries, ")
    assert f"{label} session" in line and f"{turns}/{turns} turns carried the block" in line
    assert "missed" not in check.stdout, check.describe()


def _missed(setup: HostSetup, label: str, host: str, turns: int) -> None:
    """`assemble doctor` exits 1 naming the host's hooks as the broken link, with the setup
    command as its fix, and the last delivery as missed; `assemble check` exits 4."""
    doctor = _assemble(setup, "doctor")
    assert doctor.returncode == 1, doctor.describe()
    lines = doctor.stdout.splitlines()
    hooks = next(i for i, line in enumerate(lines) if line.startswith(f"FAIL {label} hooks: "))
    fix = lines[hooks + 1]
    assert fix.startswith("     fix: "), doctor.describe()
    assert f"assemble setup {host} --workspace " in fix, doctor.describe()
    assert str(setup.workspace) in fix, doctor.describe()
    [last] = _lines(doctor, "FAIL the last delivery: ")
    assert f"{turns - 1}/{turns} turns carried the block" in last and "1 missed" in last, (
        doctor.describe()
    )
    assert f"{label} hooks first" in lines[-1], doctor.describe()

    check = _assemble(setup, "check")
    assert check.returncode == 4, check.describe()
    [line] = _lines(check, "deliveries, ")
    assert f"{turns - 1}/{turns} turns carried the block" in line and "1 missed" in line
    assert "missed delivery" in check.stdout, check.describe()


def test_claude_code_every_turn_carries_the_block_until_the_hooks_are_taken_out(
    claude_code: MakeClaudeCode,  # noqa: F811
    tmp_path: Path,
) -> None:
    setup = claude_code()
    settings_path = setup.home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings.setdefault("env", {}).update(WAIT)
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")

    with RunningDaemon(setup.workspace, tmp_path, setup.env):
        first = setup.turn(PROMPTS[0], Text("Looking at the deploy."))
        for prompt in PROMPTS[1:]:
            # `--continue`: the same session, so the transcript the hook recorded stays its.
            later = setup.turn(prompt, Text("Still looking."), args=("--continue",))
            assert later["session_id"] == first["session_id"]

        _all_delivered(setup, "Claude Code", turns=3)

        # The user deletes our hooks from their settings; the rest stays.
        settings = json.loads(settings_path.read_text())
        del settings["hooks"]
        settings_path.write_text(json.dumps(settings, indent=2) + "\n")
        after = setup.turn(AFTER, Text("Hello."), args=("--continue",))
        assert after["session_id"] == first["session_id"]

        _missed(setup, "Claude Code", "claude-code", turns=4)


def test_codex_every_turn_carries_the_block_until_the_hooks_are_taken_out(
    codex: MakeCodex,  # noqa: F811
    tmp_path: Path,
) -> None:
    setup = codex()

    with RunningDaemon(setup.workspace, tmp_path, setup.env):
        session = setup.turn(PROMPTS[0], Text("Looking at the deploy."), env=WAIT)
        for prompt in PROMPTS[1:]:
            assert setup.turn(prompt, Text("Still looking."), resume=session, env=WAIT) == session

        _all_delivered(setup, "Codex", turns=3)

        # The user takes the hooks (and the MCP server) out as `setup --remove` does it.
        removed = setup.assemble("setup", "codex", "--remove", "--apply")
        assert json.loads((setup.home / ".codex" / "hooks.json").read_text()) == {"hooks": {}}, (
            removed.describe()
        )
        assert setup.turn(AFTER, Text("Hello."), resume=session, env=WAIT) == session

        _missed(setup, "Codex", "codex", turns=4)
