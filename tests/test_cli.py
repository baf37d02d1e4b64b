"""The `assemble` command end to end, in-process: real files, real templates, real mood model."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import frontmatter
import pytest

from assembler.cli import main
from assembler.tokens import estimate_tokens

NOW = "2026-03-02T23:25:00+11:00"
REPO = Path(__file__).resolve().parent.parent


def write_transcript(workspace: Path, lines: list[tuple[str, str, str]]) -> Path:
    """Write a generic JSONL transcript of (minutes before NOW, role, text) lines."""
    path = workspace / "chat.jsonl"
    end = datetime.fromisoformat(NOW)
    with path.open("w") as handle:
        for minutes, role, text in lines:
            stamp = (end - timedelta(minutes=float(minutes))).isoformat()
            handle.write(json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n")
    return path


@pytest.fixture
def frustrated_workspace(workspace: Path) -> Path:
    write_transcript(
        workspace,
        [
            ("50", "user", "can you check why the helm deploy of the api fails?"),
            ("49", "assistant", "Looking at the helm release now."),
            ("30", "user", "WHY is the helm deploy STILL failing?! third time today, so annoying"),
            ("29", "assistant", "The image tag is wrong."),
            ("10", "user", "this is ridiculous, just give me the command to fix the helm deploy"),
        ],
    )
    (workspace / "memory").mkdir()
    (workspace / "memory" / "2026-03-02.md").write_text(
        "# 2026-03-02\n- 09:00 standup\n- 21:40 api deploy broken again (ImagePullBackOff)\n"
    )
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[time]\ntimezone = "Australia/Sydney"\n'
    )
    return workspace


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_once_writes_a_fresh_scratchpad_with_every_section(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--once", "-w", str(frustrated_workspace), "--now", NOW)
    assert code == 0
    assert out.startswith(f"wrote {frustrated_workspace / 'SCRATCHPAD.md'}")
    post = frontmatter.load(frustrated_workspace / "SCRATCHPAD.md")
    meta = post.metadata
    updated = datetime.fromisoformat(meta["updated"])
    expires = datetime.fromisoformat(meta["expires"])
    assert expires - updated == timedelta(minutes=meta["ttl_minutes"]) == timedelta(minutes=30)
    assert updated == datetime.fromisoformat(NOW)
    assert meta["generator"].startswith("scratchpad-assembler")
    assert meta["messages_read"] == 5
    assert meta["sources"] == [
        {"path": "chat.jsonl", "format": "generic", "messages": 5, "bad_lines": 0}
    ]
    assert meta["degraded"] == []
    body = post.content
    for title in (
        "Emotional Context",
        "Response Strategy",
        "Active Context",
        "Daily Context",
        "Time Context",
        "Routing Hint",
    ):
        assert f"## {title}" in body
    assert "**Primary:** frustrated" in body
    assert "**Preamble:** NO" in body
    assert "helm deploy" in body
    assert "23:25 AEDT" in body and "late night" in body
    assert "api deploy broken again" in body
    assert "Valid until 2026-03-02 23:55 AEDT" in body
    assert meta["tokens"]["auto"] <= meta["tokens"]["caps"]["auto"] == 500
    assert meta["tokens"]["auto"] == estimate_tokens(body)


def test_the_auto_cap_drops_lowest_priority_lines_and_records_them(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (frustrated_workspace / "assembler.toml").open("a") as handle:
        handle.write("[caps]\nauto = 150\n")
    code, _, _ = run(capsys, "once", "-w", str(frustrated_workspace), "--now", NOW)
    assert code == 0
    post = frontmatter.load(frustrated_workspace / "SCRATCHPAD.md")
    assert post.metadata["tokens"]["auto"] <= 150
    assert estimate_tokens(post.content) <= 150
    dropped = post.metadata["dropped"]
    assert dropped, "a 150-token cap must drop something"
    assert "**Primary:** frustrated" in post.content  # the most important line stays
    for entry in dropped:
        label = entry.split(": ", 1)[1]
        assert f"**{label}:**" not in post.content


def test_dry_run_prints_and_writes_nothing(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--once", "--dry-run", "-w", str(frustrated_workspace), "--now", NOW)
    assert code == 0
    assert out.startswith("---\n")
    assert "## Emotional Context" in out
    assert not (frustrated_workspace / "SCRATCHPAD.md").exists()


def test_json_summary_and_explain(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "--once", "--json", "--explain", "-w", str(frustrated_workspace), "--now", NOW
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["written"] is True
    assert summary["mood"]["primary"] == "frustrated"
    assert summary["messages_read"] == 5
    assert any(line.startswith("strategy: rule 'frustrated'") for line in summary["explain"])
    assert any(line.startswith("sources: ") for line in summary["explain"])


def test_transcripts_flag_replaces_the_configured_sources(
    frustrated_workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    calm = write_transcript(other, [("5", "user", "thanks so much, that worked perfectly!")])
    code, out, _ = run(
        capsys,
        "--once",
        "--json",
        "-w",
        str(frustrated_workspace),
        "--now",
        NOW,
        "--transcripts",
        str(calm),
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["messages_read"] == 1
    assert summary["mood"]["primary"] in ("grateful", "happy")


def test_check_exit_codes_follow_freshness(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = str(frustrated_workspace)
    assert run(capsys, "check", "-w", ws, "--now", NOW)[0] == 2
    run(capsys, "--once", "-w", ws, "--now", NOW)
    code, out, _ = run(capsys, "check", "-w", ws, "--now", "2026-03-02T23:40:00+11:00")
    assert (code, out.split(":")[0]) == (0, "fresh")
    code, out, _ = run(capsys, "check", "-w", ws, "--now", "2026-03-03T01:00:00+11:00")
    assert (code, out.split(":")[0]) == (1, "stale")
    assert out.count("\n") == 1


def test_show_formats(frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = str(frustrated_workspace)
    run(capsys, "--once", "-w", ws, "--now", NOW)
    code, out, _ = run(capsys, "show", "-w", ws)
    assert code == 0 and out == (frustrated_workspace / "SCRATCHPAD.md").read_text()
    code, out, _ = run(capsys, "show", "--format", "json", "-w", ws, "--now", NOW)
    document = json.loads(out)
    assert document["fresh"] is True
    assert document["frontmatter"]["ttl_minutes"] == 30
    assert document["body"].startswith("# SCRATCHPAD.md")
    code, out, _ = run(capsys, "show", "--format", "prefix", "-w", ws, "--now", NOW)
    assert out.startswith("[Session Scratchpad - your persistent working memory]\n# SCRATCHPAD")
    assert out.endswith("[End Scratchpad]\n")
    later = "2026-03-03T09:00:00+11:00"
    code, out, _ = run(capsys, "show", "--format", "prefix", "-w", ws, "--now", later)
    assert (code, out) == (0, "")
    code, out, _ = run(capsys, "show", "--fresh-only", "-w", ws, "--now", later)
    assert (code, out) == (1, "")


def test_prefix_of_a_missing_file_is_empty_but_md_is_an_error(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "show", "--format", "prefix", "-w", str(workspace)) == (0, "", "")
    code, _, err = run(capsys, "show", "-w", str(workspace))
    assert code == 1
    assert "SCRATCHPAD.md does not exist; run 'assemble --once'" in err


def test_bad_config_is_one_error_line_per_problem_with_exit_1(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[output]\nttl_minutes = 0\n")
    code, out, err = run(capsys, "--once", "-w", str(workspace))
    assert code == 1 and out == ""
    assert err.startswith("assemble: error: ") and err.count("\n") == 1
    assert str(workspace / "assembler.toml") in err
    assert "At 'output.ttl_minutes': expected a positive number, got 0" in err


def test_bad_workspace_is_one_line_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--once", "-w", str(tmp_path / "nope"))
    assert code == 1
    assert err.count("\n") == 1
    assert "nope' does not exist; create it or pass --workspace" in err


def test_an_unreadable_transcript_still_writes_but_exits_1_naming_it(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = frustrated_workspace / "broken.jsonl"
    broken.mkdir()  # a folder where a transcript should be: it cannot be read
    code, _, err = run(capsys, "--once", "-w", str(frustrated_workspace), "--now", NOW)
    assert code == 1
    assert "broken.jsonl" in err
    lines = [line for line in err.splitlines() if line.startswith("assemble: error:")]
    assert len(lines) == 1
    post = frontmatter.load(frustrated_workspace / "SCRATCHPAD.md")
    assert post.metadata["messages_read"] == 5  # the readable source still counted
    assert any("broken.jsonl" in d["what"] for d in post.metadata["degraded"])


def test_bad_now_is_a_user_error(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--once", "-w", str(workspace), "--now", "yesterday")
    assert code == 1
    assert "--now 'yesterday' is not an ISO-8601 time" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2
    assert "usage: assemble" in err and "name a COMMAND or pass --once" in err


def test_mood_json_gives_one_object_per_stdin_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["WHY is this STILL broken?!", "", "thank you so much, that was perfect"] * 1500
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    code, out, _ = run(capsys, "mood", "--stdin", "--json")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == len(lines)
    first, third = records[0], records[2]
    assert set(first) >= {"valence", "arousal", "primary", "secondary", "scores"}
    assert first["valence"] < 0 < third["valence"]
    assert first["primary"] in ("frustrated", "urgent")
    assert third["primary"] in ("grateful", "happy")
    assert set(first["scores"]) >= {"frustrated", "urgent", "confused", "neutral"}


def test_mood_prints_one_line_per_argument(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "mood", "I'm so confused, how does this work?", "ok")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("valence ")


def test_mood_without_input_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "mood")
    assert code == 1 and "give TEXT arguments or pass --stdin" in err


def test_config_commands(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = str(workspace)
    code, out, _ = run(capsys, "config", "init", "-w", ws)
    assert code == 0 and (workspace / "assembler.toml").is_file()
    code, out, _ = run(capsys, "config", "validate", "-w", ws)
    assert code == 0 and out.startswith("ok: ")
    code, out, _ = run(capsys, "config", "show", "-w", ws)
    assert code == 0 and '[output]\npath = "SCRATCHPAD.md"' in out
    code, _, err = run(capsys, "config", "init", "-w", ws)
    assert code == 1 and "already exists; pass --force" in err


def test_unexpected_errors_exit_3_with_the_traceback_in_the_log(
    frustrated_workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    isolated_home: Path,
) -> None:
    import assembler.assemble

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(assembler.assemble, "run_once", explode)
    code, _, err = run(capsys, "--once", "-w", str(frustrated_workspace))
    assert code == 3
    assert "RuntimeError: boom" in err and "Traceback" not in err
    log = isolated_home / "xdg_state_home" / "scratchpad-assembler" / "assembler.log"
    assert "Traceback" in log.read_text()


def test_light_commands_do_not_import_torch_or_numpy(frustrated_workspace: Path) -> None:
    ws = str(frustrated_workspace)
    assert main(["--once", "-w", ws, "--now", NOW]) == 0
    # Each light command in a fresh process: nothing heavy at start-up or in the command.
    for argv in (["check"], ["show", "--format", "prefix"], ["config", "validate"]):
        probe = (
            "import sys; from assembler.cli import main\n"
            f"code = main({[*argv, '-w', ws]!r})\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'numpy', 'sentence_transformers', 'sklearn'))\n"
            "print(code, ','.join(heavy))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=False
        )
        last = result.stdout.strip().splitlines()[-1]
        assert last.split(" ", 1)[0] in ("0", "1"), result.stderr[-500:]
        assert last.split(" ", 1)[1:] in ([], [""]), (argv, last[:200])
