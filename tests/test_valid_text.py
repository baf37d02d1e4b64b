"""Text is valid Unicode where it comes in: a lone surrogate (what a JavaScript host writes for
half of a cut emoji, `"\ud83d"` in its JSON) or a NUL in a transcript line or a hook's input is
replaced by U+FFFD, never written into a file as invalid UTF-8, never a failed run."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assembler.cli.main import main
from assembler.hosts.claude_code.hook import run_hook
from assembler.valid_text import REPLACEMENT, valid_text

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_lone_surrogates_and_nul_become_the_replacement_character_and_pairs_stay() -> None:
    assert valid_text("cut \ud83d here, \udc00 there, \x00 NUL") == (
        f"cut {REPLACEMENT} here, {REPLACEMENT} there, {REPLACEMENT} NUL"
    )
    whole = json.loads('"an emoji \\ud83d\\ude00 whole"')  # a JSON escaped pair is one character
    assert valid_text(whole) is whole and "😀" in whole


def _line(minutes: int, role: str, escaped: str) -> str:
    at = (NOW - timedelta(minutes=minutes)).isoformat()
    return f'{{"role": "{role}", "content": "{escaped}", "timestamp": "{at}"}}\n'


def test_a_transcript_with_lone_surrogates_assembles_a_valid_file(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "transcripts").mkdir()
    (workspace / "assembler.toml").write_text(
        '[memory]\nenabled = false\n[transcripts]\nsources = ["transcripts/*.jsonl"]\n'
        'lookback = "none"\n'
    )
    (workspace / "transcripts" / "chat.jsonl").write_text(
        _line(5, "user", "the deploy broke \\ud83d again, why?")
        + _line(4, "assistant", "Looking \\udc00 at it \\u0000 now")
        + _line(3, "user", "still broken \\ud83d\\ude20")
    )
    ws, at = str(workspace), NOW.isoformat()
    assert main(["--once", "-w", ws, "--now", at, "--no-daemon"]) == 0
    text = (workspace / "SCRATCHPAD.md").read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert f"the deploy broke {REPLACEMENT} again" in text
    capsys.readouterr()
    assert main(["check", "-w", ws, "--now", at]) == 0
    assert capsys.readouterr().out.startswith("fresh: ")
    # Again, with the mood history holding the first run's rows: the daemon's every cycle.
    assert main(["--once", "-w", ws, "--now", at, "--no-daemon"]) == 0


def test_a_hook_event_with_lone_surrogates_and_a_nul_in_its_path_is_served(
    workspace: Path,
) -> None:
    (workspace / "assembler.toml").write_text("[memory]\nenabled = false\n")
    (workspace / "MEMORY.md").write_text("# Notes\n")
    assert main(["--once", "-w", str(workspace), "--now", NOW.isoformat(), "--no-daemon"]) == 0
    event = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s\ud83d1",
        "transcript_path": str(workspace / "a\x00b.jsonl"),
        "cwd": str(workspace),
        "prompt": "why \ud83d does it fail",
    }
    raw = json.dumps(event)  # ensure_ascii: the surrogate as the escape a host writes
    output = run_hook(raw, workspace=str(workspace), config_path=None, now=NOW, budget=0)
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[Session Scratchpad")
    # Every record the hook wrote is valid UTF-8.
    for path in (workspace / ".scratchpad").iterdir():
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            path.read_bytes().decode("utf-8")
