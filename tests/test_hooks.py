"""Tests of assembler/hooks.py: Claude Code hook JSON in, the JSON Claude Code reads out."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assembler.cli import main
from assembler.daemon import NUDGE_NAME, DaemonLock
from assembler.hooks import (
    HookInputError,
    fresh_context,
    parse_claude_code_input,
    run_claude_code_hook,
)
from assembler.render import compose, prefix_block, read_scratchpad
from assembler.sections import remember_render

NOW = datetime(2026, 3, 2, 23, 25, tzinfo=UTC)
BODY = "# SCRATCHPAD.md\n\n## Emotional Context\n- **Primary:** frustrated (0.71)\n"


def _event(name: str, workspace: Path, **extra: str) -> str:
    # The fields Claude Code sends on every hook event, plus the event's own.
    data = {
        "session_id": "130bc834-285a-4160-9b5d-bc2cf004fec9",
        "transcript_path": str(workspace / "130bc834.jsonl"),
        "cwd": str(workspace),
        "permission_mode": "default",
        "hook_event_name": name,
        **extra,
    }
    return json.dumps(data)


def _write_pad(workspace: Path, updated: datetime, body: str = BODY) -> Path:
    meta = {
        "generator": "scratchpad-assembler test",
        "updated": updated.isoformat(timespec="seconds"),
        "expires": (updated + timedelta(minutes=30)).isoformat(timespec="seconds"),
        "ttl_minutes": 30,
    }
    path = workspace / "SCRATCHPAD.md"
    text = compose(meta, body)
    path.write_text(text, encoding="utf-8")
    remember_render(workspace / ".scratchpad", text)  # as every render does
    return path


def test_user_prompt_submit_gets_the_fresh_scratchpad_as_additional_context(
    workspace: Path,
) -> None:
    _write_pad(workspace, NOW - timedelta(minutes=5))
    stdin = _event("UserPromptSubmit", workspace, prompt="why is it failing again?")
    output = json.loads(run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW))
    assert set(output) == {"hookSpecificOutput"}
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "UserPromptSubmit"
    context = specific["additionalContext"]
    assert context.startswith("[Session Scratchpad - your persistent working memory]\n# SCRATCH")
    assert "- **Primary:** frustrated (0.71)" in context
    assert context.endswith("[End Scratchpad]\n")


def test_session_start_gets_it_too(workspace: Path) -> None:
    _write_pad(workspace, NOW)
    stdin = _event("SessionStart", workspace, source="startup")
    output = json.loads(run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW))
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"


@pytest.mark.parametrize("event", ["PreToolUse", "Stop", "Notification", "SessionEnd"])
def test_other_events_print_nothing(workspace: Path, event: str) -> None:
    _write_pad(workspace, NOW)
    assert run_claude_code_hook(_event(event, workspace), workspace=None, config_path=None) == ""


def test_a_stale_or_missing_scratchpad_prints_nothing(workspace: Path) -> None:
    stdin = _event("UserPromptSubmit", workspace, prompt="hi")
    assert run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW) == ""
    _write_pad(workspace, NOW - timedelta(minutes=31))
    assert run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW) == ""


def test_the_fast_reader_agrees_with_the_full_parser_on_an_assembled_file(
    workspace: Path,
) -> None:
    from assembler.assemble import run_once
    from assembler.config import validate

    config = validate({"memory": {"enabled": False}}, source=None, workspace=workspace)
    assembly = run_once(config, now=NOW)
    pad = read_scratchpad(assembly.path)
    assert fresh_context(assembly.path, NOW) == prefix_block(pad, NOW) != ""
    assert fresh_context(assembly.path, pad.expires) == prefix_block(pad, pad.expires) == ""


def test_the_hook_gives_the_same_block_as_show_prefix_without_the_section_markers(
    workspace: Path,
) -> None:
    from assembler.assemble import run_once
    from assembler.config import validate
    from assembler.sections import prefix_for, scratchpad_for

    config = validate({"memory": {"enabled": False}}, source=None, workspace=workspace)
    scratchpad_for(config, now=lambda: NOW).write("Ship 1.14.4 tonight", section="goal")
    assembly = run_once(config, now=NOW)
    block = fresh_context(assembly.path, NOW)
    assert block == prefix_for(config, NOW, fresh_only=True)
    assert "Ship 1.14.4 tonight" in block
    assert "scratchpad:" not in block  # no markers: a message cannot be edited


def test_a_hand_edited_frontmatter_falls_back_to_the_full_parser(workspace: Path) -> None:
    expires = (NOW + timedelta(minutes=10)).isoformat()
    path = workspace / "SCRATCHPAD.md"
    path.write_text(f"---\nupdated: {NOW.isoformat()}\nexpires:\n  {expires}\n---\nhello\n")
    assert "hello" in fresh_context(path, NOW)


def test_the_workspace_is_the_sessions_cwd_unless_given(workspace: Path, tmp_path: Path) -> None:
    _write_pad(workspace, NOW)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    stdin = _event("UserPromptSubmit", elsewhere, prompt="hi")
    assert run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW) == ""
    given = run_claude_code_hook(stdin, workspace=str(workspace), config_path=None, now=NOW)
    assert "frustrated" in given


def test_a_running_daemon_is_nudged(workspace: Path) -> None:
    state = workspace / ".scratchpad"
    stdin = _event("UserPromptSubmit", workspace, prompt="hi")
    run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW)
    assert not (state / NUDGE_NAME).exists()
    lock = DaemonLock.acquire(state)
    try:
        run_claude_code_hook(stdin, workspace=None, config_path=None, now=NOW)
    finally:
        lock.release()
    assert (state / NUDGE_NAME).read_text().startswith("UserPromptSubmit ")


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("not json", "stdin is not JSON"),
        ("[1, 2]", "not an object"),
        ('{"session_id": "x"}', "no 'hook_event_name'"),
    ],
)
def test_bad_input_is_a_one_line_error(stdin: str, message: str) -> None:
    with pytest.raises(HookInputError, match=message):
        parse_claude_code_input(stdin)


def test_bad_input_exits_1_which_does_not_block_the_prompt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("{truncated"))
    code = main(["hook", "claude-code", "--workspace", str(workspace)])
    out, err = capsys.readouterr()
    assert code == 1  # Claude Code blocks the prompt on exit 2 only
    assert out == ""
    assert err.count("\n") == 1 and "stdin is not JSON" in err


def test_the_hook_command_prints_the_json_through_the_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    _write_pad(workspace, datetime.now(UTC))
    monkeypatch.setattr(sys, "stdin", io.StringIO(_event("UserPromptSubmit", workspace)))
    assert main(["hook", "claude-code"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert "frustrated" in output["hookSpecificOutput"]["additionalContext"]


def test_the_hook_imports_no_torch_numpy_yaml_or_jinja2(workspace: Path) -> None:
    _write_pad(workspace, datetime.now(UTC))
    probe = (
        "import sys\n"
        "from assembler.cli import main\n"
        "code = main(['hook', 'claude-code'])\n"
        "heavy = [m for m in ('torch', 'numpy', 'sentence_transformers', 'yaml', 'jinja2')"
        " if m in sys.modules]\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        input=_event("UserPromptSubmit", workspace),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stderr.strip() == "0 []"
    assert "frustrated" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
