"""End to end, with the hosts' real programs (pinned, tests/e2e/hosts.py) and the mock model:
the delivery receipts and `assemble doctor` read what the real hosts wrote. Each host is set up
for a workspace exactly as `assemble setup HOST` prints it (the fixtures of
test_e2e_claude_code.py, test_e2e_codex.py and test_e2e_openclaw.py), with the daemon serving
it; a session of three prompts carries the block on every turn, by the host's own record
(Claude Code's `hook_additional_context` attachments, Codex's `hooks.additional_context`
developer messages, OpenClaw's run trace of each prompt submitted to the model), and every link
of the doctor's chain holds. Then the user takes our hooks out of the host's settings (for
OpenClaw: disables the plugin) and the same session gets one more prompt: the doctor names the
missing link and the command that puts it back, and `assemble check` exits 4, a missed delivery.

`assemble` runs as the user runs it, in the user's environment with the host's HOME, so that it
reads the settings, Claude Code's projects folder and Codex's sessions folder the hosts used.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest
from e2e.background import in_background
from e2e.daemon import RunningDaemon
from e2e.host_setup import HostSetup
from e2e.hosts import Hosts
from e2e.mock_model import MockModel, Text
from e2e.turns import HostRun, printed_openclaw_commands, run_host
from test_e2e_claude_code import MakeClaudeCode, claude_code  # noqa: F401
from test_e2e_codex import MakeCodex, codex  # noqa: F401
from test_e2e_openclaw import setup_openclaw

from assembler.daemon.systemd import assemble_executable
from assembler.hosts.openclaw.setup import OPENCLAW_PLUGIN_ID

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
# Each host's links of the doctor's chain, as they hold once it is set up as setup prints it.
CLAUDE_CODE_LINKS = (
    "Claude Code hooks",
    "the program the Claude Code hooks run",
    "the Claude Code MCP server",
)
CODEX_LINKS = ("Codex hooks", "the program the Codex hooks run", "the Codex MCP server")
OPENCLAW_LINKS = ("the OpenClaw plugin", "the program the OpenClaw plugin runs")


def _assemble(setup: HostSetup, *args: str) -> HostRun:
    """Run `assemble ARGS --workspace WORKSPACE` as the user would (any exit code), with the
    host's HOME (where OpenClaw keeps its config and sessions; the other hosts' already is)."""
    argv = [str(assemble_executable()), *args, "--workspace", str(setup.workspace)]
    env = {**setup.env, "HOME": str(setup.home)}
    return run_host(argv, env=env, cwd=setup.workspace, timeout=120)


def _lines(run: HostRun, start: str) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith(start)]


def _all_delivered(setup: HostSetup, label: str, links: tuple[str, ...], turns: int) -> None:
    """`assemble doctor` holds every link, the host's `links` among them, the last delivery
    saying each of the session's `turns` carried the block; `assemble check` says so too and
    exits 0."""
    doctor = _assemble(setup, "doctor")
    assert doctor.returncode == 0, doctor.describe()
    assert _lines(doctor, "FAIL") == [], doctor.describe()
    for link in links:
        assert f"ok   {link}: " in doctor.stdout, doctor.describe()
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


def _missed(setup: HostSetup, link: str, fix: str, turns: int) -> str:
    """`assemble doctor` exits 1 naming the host's `link` as the broken one, with `fix` in its
    fix, and the last delivery as missed; `assemble check` exits 4, and with --explain says no
    hook ran for the missed turn. Return the fix the doctor printed."""
    doctor = _assemble(setup, "doctor")
    assert doctor.returncode == 1, doctor.describe()
    lines = doctor.stdout.splitlines()
    broken = next(i for i, line in enumerate(lines) if line.startswith(f"FAIL {link}: "))
    said = lines[broken + 1]
    assert said.startswith("     fix: ") and fix in said, doctor.describe()
    [last] = _lines(doctor, "FAIL the last delivery: ")
    assert f"{turns - 1}/{turns} turns carried the block" in last and "1 missed" in last, (
        doctor.describe()
    )
    assert f"{link} first" in lines[-1], doctor.describe()

    check = _assemble(setup, "check")
    assert check.returncode == 4, check.describe()
    [line] = _lines(check, "deliveries, ")
    assert f"{turns - 1}/{turns} turns carried the block" in line and "1 missed" in line
    assert "missed delivery" in check.stdout, check.describe()
    explained = _assemble(setup, "check", "--explain")
    [why] = [line for line in explained.stdout.splitlines() if line.startswith("  missed ")]
    assert "no hook ran for this prompt" in why, explained.describe()
    return said.removeprefix("     fix: ")


@pytest.mark.usefixtures("openclaw_flow")  # OpenClaw's flow runs beside this one
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

        # The fixture registered the MCP server with `claude mcp add`, as setup prints it.
        _all_delivered(setup, "Claude Code", CLAUDE_CODE_LINKS, turns=3)

        # The user deletes our hooks from their settings; the rest stays.
        settings = json.loads(settings_path.read_text())
        del settings["hooks"]
        settings_path.write_text(json.dumps(settings, indent=2) + "\n")
        after = setup.turn(AFTER, Text("Hello."), args=("--continue",))
        assert after["session_id"] == first["session_id"]

        _missed(
            setup,
            "Claude Code hooks",
            f"assemble setup claude-code --workspace {shlex.quote(str(setup.workspace))}",
            turns=4,
        )


def test_codex_every_turn_carries_the_block_until_the_hooks_are_taken_out(
    codex: MakeCodex,  # noqa: F811
    tmp_path: Path,
) -> None:
    setup = codex()

    with RunningDaemon(setup.workspace, tmp_path, setup.env):
        session = setup.turn(PROMPTS[0], Text("Looking at the deploy."), env=WAIT)
        for prompt in PROMPTS[1:]:
            assert setup.turn(prompt, Text("Still looking."), resume=session, env=WAIT) == session

        _all_delivered(setup, "Codex", CODEX_LINKS, turns=3)

        # The user takes the hooks (and the MCP server) out as `setup --remove` does it.
        removed = setup.assemble("setup", "codex", "--remove", "--apply")
        assert json.loads((setup.home / ".codex" / "hooks.json").read_text()) == {"hooks": {}}, (
            removed.describe()
        )
        assert setup.turn(AFTER, Text("Hello."), resume=session, env=WAIT) == session

        _missed(
            setup,
            "Codex hooks",
            f"assemble setup codex --workspace {shlex.quote(str(setup.workspace))}",
            turns=4,
        )


def _openclaw_flow(hosts: Hosts, root: Path, environ: dict[str, str]) -> None:
    """OpenClaw's doctor flow, on a HOME and a mock of its own: two prompts (an OpenClaw turn
    takes about 20 s here), the plugin disabled, one more prompt, then the fix run as the doctor
    printed it and one more."""
    with MockModel(root / "model-requests.jsonl") as model:
        setup = setup_openclaw(hosts, model, root, root / "user", environ=environ)
        setup.assemble("--once")
        text = setup.assemble("setup", "openclaw", "--no-assemble").stdout
        install, configure, *_ = printed_openclaw_commands(text)
        setup.openclaw_cli(install, configure)
        config_path = setup.home / ".openclaw" / "openclaw.json"
        config = json.loads(config_path.read_text())
        entry = config["plugins"]["entries"][OPENCLAW_PLUGIN_ID]
        entry["config"]["promptBudgetMs"] = 10000  # as WAIT, for the plugin
        config_path.write_text(json.dumps(config, indent=2) + "\n")

        with RunningDaemon(setup.workspace, root, {**setup.env, "HOME": str(setup.home)}):
            for prompt in PROMPTS[:2]:
                model.script(Text("Looking at the deploy."))
                setup.openclaw_turn(prompt)

            _all_delivered(setup, "OpenClaw", OPENCLAW_LINKS, turns=2)

            # The user disables the plugin with OpenClaw's own command; the rest stays.
            setup.openclaw_cli(("openclaw", "plugins", "disable", OPENCLAW_PLUGIN_ID))
            model.script(Text("Hello."))
            setup.openclaw_turn(AFTER)

            fix = _missed(
                setup,
                "the OpenClaw plugin",
                f"openclaw plugins enable {OPENCLAW_PLUGIN_ID}",
                turns=3,
            )

            # The fix the doctor printed, run as printed, puts the block back on the next turn.
            setup.openclaw_cli(shlex.split(fix))
            model.script(Text("Back."))
            setup.openclaw_turn(f"{AFTER} again")
            doctor = _assemble(setup, "doctor")
            assert "ok   the OpenClaw plugin: " in doctor.stdout, doctor.describe()
            [last] = _lines(doctor, "ok   the last delivery: ")
            assert "3/4 turns carried the block" in last, doctor.describe()


@pytest.fixture(scope="module")
def openclaw_flow(hosts: Hosts, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[None]]:
    """OpenClaw's flow, started in a thread when first asked for (by the Claude Code test), so
    that it runs beside the other hosts' tests."""
    with in_background(_openclaw_flow, hosts, tmp_path_factory.mktemp("openclaw")) as flow:
        yield flow


def test_openclaw_every_turn_carries_the_block_until_the_plugin_is_disabled(
    openclaw_flow: Future[None],
) -> None:
    openclaw_flow.result()
