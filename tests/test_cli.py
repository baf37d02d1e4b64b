"""The `assemble` command end to end, in-process: real files, real templates, real mood model."""

from __future__ import annotations

import importlib
import io
import json
import re
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import frontmatter
import pytest

from assembler.cli.main import COMMANDS, build_parser, main
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
            (
                "10",
                "user",
                "ugh, this is ridiculous. just give me the command to fix the helm deploy",
            ),
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


def recorded(capsys: pytest.CaptureFixture[str], workspace: Path) -> dict[str, Any]:
    """What the last assembly recorded, as `assemble show --format json` prints it."""
    code, out, _ = run(capsys, "show", "-w", str(workspace), "--format", "json", "--now", NOW)
    assert code == 0
    document = json.loads(out)
    assert document["diagnostics_current"] is True
    diagnostics: dict[str, Any] = document["diagnostics"]
    return diagnostics


def test_once_logs_its_run_with_each_stages_time_and_a_dry_run_logs_nothing(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.assembly.log import AssemblyLog, log_path

    state = frustrated_workspace / ".scratchpad"
    assert run(capsys, "--once", "--dry-run", "-w", str(frustrated_workspace), "--now", NOW)[0] == 0
    assert not log_path(state).exists()

    assert run(capsys, "--once", "-w", str(frustrated_workspace), "--now", NOW)[0] == 0

    with AssemblyLog(log_path(state)) as runs:
        [logged] = runs.last(10)
    assert logged.reason == "once"
    stages = logged.record["stages_ms"]
    assert list(stages) == ["transcripts", "mood", "context", "memory", "routing", "page"]
    assert all(ms >= 0 for ms in stages.values())
    assert sum(stages.values()) <= logged.seconds * 1000
    assert logged.record["messages_read"] == 5


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
    # The agent reads the frontmatter: only the times and a one-line source.
    assert set(meta) == {"updated", "expires", "ttl_minutes", "source"}
    assert meta["source"] == "1 transcript, 5 messages; memory 1 chunk"
    diagnostics = recorded(capsys, frustrated_workspace)
    assert diagnostics["generator"].startswith("scratchpad-assembler")
    assert diagnostics["messages_read"] == 5
    assert diagnostics["sources"] == [
        {"path": "chat.jsonl", "format": "generic", "messages": 5, "bad_lines": 0}
    ]
    assert diagnostics["degraded"] == []
    body = post.content
    for title in (
        "Emotional Context",
        "Response Strategy",
        "Active Context",
        "Daily Context",
        "Time Context",
    ):
        assert f"## {title}" in body
    # An ordinary task with nothing sensitive leaves the router nothing to act on.
    assert "## Routing Hint" not in body
    assert "**Primary:** frustrated" in body
    assert "**How to answer:** concise — lead with the answer, skip preamble; tone:" in body
    assert "no preamble" not in body  # the style says it already
    assert "helm deploy" in body
    assert "23:25 AEDT" in body and "late night" in body
    assert "api deploy broken again" in body
    assert "# SCRATCHPAD.md — valid until 23:55 AEDT;" in body
    tokens = diagnostics["tokens"]
    assert tokens["auto"] <= tokens["caps"]["auto"] == 350
    assert abs(tokens["auto"] - estimate_tokens(body)) <= 1  # the body read back is stripped
    assert tokens["total"] == estimate_tokens((frustrated_workspace / "SCRATCHPAD.md").read_text())


def test_the_auto_cap_drops_lowest_priority_lines_and_records_them(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (frustrated_workspace / "assembler.toml").open("a") as handle:
        handle.write("[caps]\nauto = 150\n")
    code, _, _ = run(capsys, "once", "-w", str(frustrated_workspace), "--now", NOW)
    assert code == 0
    post = frontmatter.load(frustrated_workspace / "SCRATCHPAD.md")
    diagnostics = recorded(capsys, frustrated_workspace)
    assert diagnostics["tokens"]["auto"] <= 150
    assert estimate_tokens(post.content) <= 150
    dropped = diagnostics["dropped"]
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


def tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry below `folder`: a file's bytes, else its kind ("folder", "link -> target")."""
    entries: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            entries[name] = f"link -> {path.readlink()}"
        elif path.is_dir():
            entries[name] = "folder"
        else:
            entries[name] = path.read_bytes()
    return entries


def test_a_dry_run_leaves_every_file_and_folder_of_the_workspace_as_it_was(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    write_transcript(workspace, [("10", "user", "why does the nightly backup job fail again?")])
    (workspace / "MEMORY.md").write_text("# Memory\n- The api runs on port 8080.\n")
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[memory]\nmodel = "none"\n'
        '[time]\ntimezone = "Australia/Sydney"\n'
    )
    ws = ["-w", str(workspace)]
    assert run(capsys, "pad", "write", "--section", "goal", "Fix the backup job", *ws)[0] == 0
    assert run(capsys, "--once", *ws, "--now", NOW)[0] == 0
    # Since the last run: a hand edit of a section, and a memory note the index has not seen.
    pad = workspace / "SCRATCHPAD.md"
    pad.write_text(pad.read_text().replace("Fix the backup job", "Fix the backup job by 9"))
    (workspace / "memory").mkdir()
    (workspace / "memory" / "2026-03-02.md").write_text(
        "# 2026-03-02\n- The nightly backup job fails: the disk of the backup host is full.\n"
    )
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = tree(workspace)
    assert ".scratchpad/index.sqlite" in before and ".scratchpad/sections.jsonl" in before

    code, out, _ = run(capsys, "--once", "--dry-run", *ws, "--now", NOW)

    assert code == 0 and out.startswith("---\n")
    assert "the disk of the backup host is full" in out  # the note found: the copy was synced
    assert tree(workspace) == before
    assert list(scratch.iterdir()) == []  # the copy of the index is gone too


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
    # The agent reads four fields; the source line says what could not be read.
    assert set(post.metadata) == {"updated", "expires", "ttl_minutes", "source"}
    assert post.metadata["source"] == "2 transcripts, 5 messages (1 unreadable); memory 1 chunk"
    diagnostics = recorded(capsys, frustrated_workspace)
    assert diagnostics["messages_read"] == 5  # the readable source still counted
    assert any("broken.jsonl" in d["what"] for d in diagnostics["degraded"])


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


@pytest.fixture
def notes_workspace(workspace: Path) -> Path:
    """A workspace with three memory notes and keyword search only (no model to load)."""
    (workspace / "memory" / "infra").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    (workspace / "memory" / "infra" / "k8s.md").write_text(
        "# Kubernetes\n\nThe api pods crashloop when the image tag is missing from the chart.\n"
    )
    (workspace / "memory" / "garden.md").write_text("# Garden\n\nTomatoes need staking in May.\n")
    (workspace / "assembler.toml").write_text('[memory]\nmodel = "none"\n')
    return workspace


def test_index_json_reports_the_work_done_and_a_second_run_changes_nothing(
    notes_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "index", "-w", str(notes_workspace), "--json")
    assert code == 0
    first = json.loads(out)
    assert first["files_seen"] == 3
    assert first["files_changed"] == 3
    assert first["chunks_total"] >= 3
    assert first["chunks_embedded"] == 0  # model "none": keyword search only
    code, out, _ = run(capsys, "index", "-w", str(notes_workspace), "--json")
    second = json.loads(out)
    assert (second["files_seen"], second["files_changed"]) == (3, 0)
    assert second["chunks_total"] == first["chunks_total"]


def test_search_prints_path_and_line_range_and_json_has_the_documented_keys(
    notes_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "search", "-w", str(notes_workspace), "image tag crashloop")
    assert code == 0
    assert out.splitlines()[0].startswith("1. memory/infra/k8s.md:1-3")
    code, out, _ = run(
        capsys, "search", "-w", str(notes_workspace), "tomatoes", "--json", "--explain", "-k", "1"
    )
    (hit,) = json.loads(out)
    assert hit["path"] == "memory/garden.md"
    assert {"path", "start_line", "end_line", "score", "snippet", "bm25", "vector"} <= set(hit)
    assert hit["vector"] is None  # no model: the vector part is not available


def test_search_stdin_prints_one_json_array_of_hits_per_query_line(
    notes_workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("tomatoes staking\nkubernetes pods\nzzqx\n"))
    code, out, _ = run(capsys, "search", "-w", str(notes_workspace), "--stdin", "-k", "2")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3
    assert lines[0][0]["path"] == "memory/garden.md"
    assert lines[1][0]["path"] == "memory/infra/k8s.md"
    assert lines[2] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-k", "0", "q"], "-k 0: give a positive number of hits"),
        (["q", "--stdin"], "give one QUERY, or pass --stdin"),
        ([], "give one QUERY, or pass --stdin"),
    ],
)
def test_bad_search_arguments_are_one_line_user_errors(
    notes_workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run(capsys, "search", "-w", str(notes_workspace), *argv)
    assert code == 1
    assert message in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.model
def test_search_with_the_bundled_model_finds_a_paraphrase(
    notes_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (notes_workspace / "assembler.toml").write_text('[memory]\nmodel = "bundled"\n')
    code, out, _ = run(
        capsys, "search", "-w", str(notes_workspace), "the rollout keeps crashing", "--json"
    )
    assert code == 0
    hits = json.loads(out)
    assert hits[0]["path"] == "memory/infra/k8s.md"


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
    import assembler.assembly.pipeline

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(assembler.assembly.pipeline, "run_once", explode)
    code, _, err = run(capsys, "--once", "-w", str(frustrated_workspace))
    assert code == 3
    assert "RuntimeError: boom" in err and "Traceback" not in err
    log = isolated_home / "xdg_state_home" / "scratchpad-assembler" / "assembler.log"
    assert "Traceback" in log.read_text()


def test_light_commands_do_not_import_torch_or_numpy(frustrated_workspace: Path) -> None:
    ws = str(frustrated_workspace)
    assert main(["--once", "-w", ws, "--now", NOW]) == 0
    # Each light command in a fresh process: nothing heavy at start-up or in the command, and
    # each one does its job (its exit code), so a broken command cannot pass.
    light = (
        (["check", "--now", NOW], 0),
        (["check", "--now", "2030-01-01T00:00:00+00:00"], 1),
        (["show", "--format", "prefix", "--now", NOW], 0),
        (["config", "validate"], 0),
        (["pad", "write", "--section", "goal", "ship it"], 0),
        (["pad", "append", "--section", "Not A Name", "x"], 1),
        (["pad", "read"], 0),
        (["tool", '{"action": "append", "section": "findings", "content": "port 8080"}'], 0),
        (["tool", '{"op": "append"}'], 1),
        (["section", "set", "alerts", "--ttl", "2h", "standup at 10:30"], 0),
        (["section", "rm", "alerts"], 0),
        (["guidance"], 0),
    )
    for argv, expected in light:
        probe = (
            "import sys; from assembler.cli.main import main\n"
            f"code = main({[*argv, '-w', ws]!r})\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'numpy', 'sentence_transformers', 'sklearn'))\n"
            "print(code, ','.join(heavy))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=False
        )
        last = result.stdout.strip().splitlines()[-1]
        assert last.split(" ", 1)[0] == str(expected), (argv, last[:200], result.stderr[-500:])
        assert last.split(" ", 1)[1:] in ([], [""]), (argv, last[:200])


# -- assemble obs ------------------------------------------------------------------------------


def obs_log(folder: Path) -> tuple[Path, str]:
    text = "".join(f"line {i} ok\n" for i in range(1, 501)) + "line 501 ERROR disk full\n"
    path = folder / "big.log"
    path.write_text(text)
    return path, text


def test_obs_put_prints_the_synthetic_observation_and_read_prints_the_slice(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, text = obs_log(workspace)
    ws = ["-w", str(workspace)]
    code, out, _ = run(capsys, "obs", "put", str(log), "--step", "1", "--executor", "fs_read", *ws)
    synthetic = json.loads(out)
    assert code == 0 and synthetic["size_bytes"] == len(text)
    assert synthetic["metadata"] == {"path": str(log), "bytes": len(text), "encoding": "utf-8"}
    assert f"[... {len(text) - 1000} characters omitted ...]" in synthetic["summary"]
    entry = synthetic["scratchpad_id"]
    assert run(capsys, "obs", "read", entry, "--mode", "tail", "-n", "25", *ws)[1] == text[-25:]
    assert run(capsys, "obs", "read", entry, "--mode", "full", *ws)[1] == text
    lines = run(capsys, "obs", "read", entry, "--mode", "lines", "--start", "500", *ws)[1]
    assert lines == "line 500 ok\nline 501 ERROR disk full\n"
    grep = run(capsys, "obs", "read", entry, "--mode", "grep", "--pattern", "ERROR", *ws)[1]
    assert grep == "499-line 499 ok\n500-line 500 ok\n501:line 501 ERROR disk full\n"
    code, out, _ = run(
        capsys, "obs", "read", entry, "--mode", "range", "--start", "5", "--json", *ws
    )
    data = json.loads(out)
    assert data["content"] == text[5:2005] and data["next_start"] == 2005
    assert entry in run(capsys, "obs", "ls", *ws)[1]


def test_obs_put_of_a_small_output_prints_it_unchanged(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = workspace / "small.json"
    small.write_text(json.dumps({"ok": True, "content": "tiny", "path": "/x"}))
    code, out, _ = run(capsys, "obs", "put", str(small), "--json-input", "-w", str(workspace))
    assert code == 0 and json.loads(out) == {"ok": True, "content": "tiny", "path": "/x"}
    assert "no parked observations" in run(capsys, "obs", "ls", "-w", str(workspace))[1]


def test_obs_read_errors_are_one_line_with_exit_1(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = obs_log(workspace)
    ws = ["-w", str(workspace)]
    entry = json.loads(run(capsys, "obs", "put", str(log), *ws)[1])["scratchpad_id"]
    code, _, err = run(capsys, "obs", "read", entry, "--mode", "grep", "--pattern", "(", *ws)
    assert code == 1 and "is not a valid regular expression" in err
    code, _, err = run(capsys, "obs", "read", "0000", *ws)
    assert code == 1 and "No observation with scratchpad_id '0000'" in err


def test_obs_turn_hides_the_last_turn_and_gc_removes_expired_entries(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, _ = obs_log(workspace)
    ws = ["-w", str(workspace)]
    entry = json.loads(run(capsys, "obs", "put", str(log), *ws)[1])["scratchpad_id"]
    assert run(capsys, "obs", "turn", "t2", *ws)[1] == "t2\n"
    code, _, err = run(capsys, "obs", "read", entry, *ws)
    assert code == 1 and "--any-turn" in err
    assert run(capsys, "obs", "read", entry, "--any-turn", "-n", "6", *ws)[1] == "line 1"
    later = (datetime.now().astimezone() + timedelta(hours=2)).isoformat()
    code, out, _ = run(capsys, "obs", "gc", "--now", later, *ws)
    assert code == 0 and out.startswith("removed 1 expired observations")
    assert "no parked observations" in run(capsys, "obs", "ls", "--all", *ws)[1]


def test_obs_resolve_replaces_step_references_with_the_full_content(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, text = obs_log(workspace)
    ws = ["-w", str(workspace)]
    run(capsys, "obs", "put", str(log), "--step", "1", *ws)
    call = workspace / "call.json"
    call.write_text(json.dumps({"path": "/tmp/out.txt", "content": "{{step1.content}}"}))
    code, out, _ = run(capsys, "obs", "resolve", str(call), *ws)
    assert code == 0 and json.loads(out) == {"path": "/tmp/out.txt", "content": text}
    call.write_text(json.dumps({"content": "{{step7.content}}"}))
    code, _, err = run(capsys, "obs", "resolve", str(call), *ws)
    assert code == 1 and "no observation of step 7" in err


def test_obs_commands_do_not_import_torch_or_numpy(workspace: Path) -> None:
    log, _ = obs_log(workspace)
    probe = (
        "import json, sys, io, contextlib; from assembler.cli.main import main\n"
        f"ws = ['-w', {str(workspace)!r}]\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['obs', 'put', {str(log)!r}, *ws])\n"
        "entry = json.loads(out.getvalue())['scratchpad_id']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    codes = [main(['obs', 'read', entry, '--mode', 'grep', '--pattern', 'x', *ws]),\n"
        "             main(['obs', 'ls', *ws]), main(['obs', 'gc', *ws])]\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'numpy', 'sentence_transformers', 'sklearn'))\n"
        "print(codes, heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert result.stdout.strip().splitlines()[-1] == "[0, 0, 0] []", result.stderr[-500:]


# -- agent-written sections: pad, tool, section, guidance, and the loop through the file -------


@pytest.fixture
def quiet_workspace(workspace: Path) -> Path:
    """A workspace with memory search off (no embedding model is loaded) and one transcript."""
    write_transcript(workspace, [("10", "user", "please fix the api deploy")])
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[memory]\nenabled = false\n'
        '[time]\ntimezone = "Australia/Sydney"\n'
    )
    return workspace


def test_pad_write_once_hand_edit_once_then_pad_read_shows_the_edit(
    quiet_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = ["-w", str(quiet_workspace)]
    assert run(capsys, "pad", "write", "--section", "findings", "port 8080", *ws)[0] == 0
    assert run(capsys, "--once", *ws, "--now", NOW)[0] == 0
    path = quiet_workspace / "SCRATCHPAD.md"
    text = path.read_text()
    assert '<!-- scratchpad:begin section="findings" -->\nport 8080\n' in text
    path.write_text(text.replace("\nport 8080\n", "\nport 8081 (edited by hand)\n"))

    assert run(capsys, "--once", *ws, "--now", "2026-03-02T23:30:00+11:00")[0] == 0

    assert run(capsys, "pad", "read", "--section", "findings", *ws) == (
        0,
        "port 8081 (edited by hand)",
        "",
    )
    _, out, _ = run(capsys, "show", *ws, "--format", "json", "--now", NOW)
    assert json.loads(out)["diagnostics"]["file_edits"]["imported"] == ["findings"]


def test_pad_read_prints_the_text_exactly_and_stdin_drops_one_newline(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = ["-w", str(workspace)]
    text = "line one\n---\n<!-- scratchpad:end -->\n  indented\n\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(text + "\n"))
    code, out, _ = run(capsys, "pad", "write", "-", *ws)
    assert code == 0 and out.startswith("Wrote section 'main' (")
    assert run(capsys, "pad", "read", "--section", "main", *ws) == (0, text, "")
    code, out, _ = run(capsys, "pad", "read", *ws)
    assert code == 0 and out.startswith("## Main\n" + text)


def test_pad_append_over_the_budget_exits_1_and_leaves_the_section(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[caps]\nagent = 20\n")
    ws = ["-w", str(workspace)]
    assert run(capsys, "pad", "write", "a" * 60, *ws)[0] == 0  # 15 tokens

    code, out, err = run(capsys, "pad", "append", "b" * 40, *ws)

    assert (code, out) == (1, "")
    assert err == (
        "assemble: Append would exceed the 20 token cap of section 'main' (current: 15, "
        "append: 11). Use write to rewrite the section, or reduce content.\n"
    )
    assert run(capsys, "pad", "read", "--section", "main", *ws)[1] == "a" * 60


def test_pad_write_over_the_budget_is_truncated_and_says_both_sizes(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[caps]\nagent = 20\n")

    code, out, _ = run(capsys, "pad", "write", "--json", "word " * 40, "-w", str(workspace))

    answer = json.loads(out)
    assert code == 0 and answer["ok"] is True
    assert answer["data"]["truncated"] is True and answer["data"]["original_tokens"] == 50
    assert answer["message"].startswith(
        "Section 'main' truncated to 20 tokens, within its section cap of 20 (original: 50)"
    )


def test_pad_write_cut_below_the_cap_says_the_size_kept_and_the_cap(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[caps]\nagent = 20\n")

    code, out, _ = run(capsys, "pad", "write", "abcdefghijk " * 17, "-w", str(workspace))

    assert code == 0
    assert out.startswith("Section 'main' truncated to 18 tokens, within its section cap of 20")


def test_pad_read_of_an_empty_section_prints_nothing_and_says_so_on_stderr(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = ["-w", str(workspace)]

    missing = run(capsys, "pad", "read", "--section", "goal", *ws)
    run(capsys, "pad", "write", "--section", "errors", "", *ws)
    written_empty = run(capsys, "pad", "read", "--section", "errors", *ws)
    run(capsys, "pad", "write", "--section", "findings", "x", *ws)
    one = run(capsys, "pad", "read", "--section", "findings", *ws)

    assert missing[:2] == (0, "") and missing[2].startswith("Section 'goal' is empty.")
    assert written_empty[:2] == (0, "") and written_empty[2].startswith(
        "Section 'errors' is empty (updated "
    )
    assert one == (0, "x", "")
    code, out, _ = run(capsys, "pad", "read", "--section", "findings", "--json", *ws)
    assert code == 0
    assert json.loads(out)["message"].startswith("Section 'findings' (1 token, updated ")


def test_pad_rejects_a_bad_section_name_with_the_rule(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "pad", "write", "--section", "My Notes", "x", "-w", str(workspace))
    assert code == 1 and "a lowercase letter, then lowercase letters" in err


def test_pad_write_without_text_is_a_user_error(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "pad", "write", "-w", str(workspace))
    assert code == 1 and "give the TEXT, or - to read it from stdin" in err


@pytest.mark.parametrize(
    ("call", "mistake"),
    [
        ('{"action": "write", "section": "findings"}', "missing-content"),
        ('{"op": "write", "content": "port 8080"}', "action-alias"),
        ('{"action": "the config file is at /etc/app.yml"}', "action-is-text"),
        ('{"action": "write", "section": "the port is 8080"}', "section-is-text"),
        ("{not json", "not-json"),
        ('["write"]', "not-an-object"),
    ],
)
def test_tool_answers_each_mistake_in_json_and_exits_1(
    workspace: Path, capsys: pytest.CaptureFixture[str], call: str, mistake: str
) -> None:
    code, out, _ = run(capsys, "tool", call, "-w", str(workspace))

    answer = json.loads(out)
    assert code == 1 and answer["ok"] is False and answer["data"]["mistake"] == mistake
    assert '{"action": ' in answer["message"]  # the right call is shown
    assert not (workspace / ".scratchpad" / "sections.jsonl").exists()


def test_tool_carries_out_the_sectioned_tool_workflow(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = ["-w", str(workspace)]
    calls = [
        {"action": "write", "section": "goal", "content": "Fix the database connection error"},
        {"action": "write", "section": "findings", "content": "connection refused on 5432"},
        {"action": "append", "section": "findings", "content": "PostgreSQL service is stopped"},
    ]
    for call in calls:
        assert run(capsys, "tool", json.dumps(call), *ws)[0] == 0

    code, out, _ = run(capsys, "tool", '{"action": "read"}', *ws)

    assert code == 0
    assert json.loads(out)["data"]["sections"] == {
        "goal": "Fix the database connection error",
        "findings": "connection refused on 5432\nPostgreSQL service is stopped",
    }


def test_tool_session_gives_the_whole_notepad_budget_messages(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[caps]\nagent = 10\n")
    ws = ["-w", str(workspace)]

    code, out, _ = run(capsys, "tool", "--session", json.dumps({"content": "a" * 80}), *ws)
    replaced = json.loads(out)
    code2, out2, _ = run(
        capsys, "tool", "--session", json.dumps({"content": "b" * 8, "mode": "append"}), *ws
    )
    appended = json.loads(out2)

    assert code == 0 and replaced["message"] == (
        "Scratchpad truncated to 10 tokens, within its 10 token budget (original: 20). "
        "Consider summarizing."
    )
    assert code2 == 1 and appended["message"] == (
        "Append would exceed 10 token budget (current: 10, append: 3). Use mode 'replace' to "
        "rewrite, or reduce content."
    )


@pytest.mark.parametrize(
    ("call", "mistake", "says"),
    [
        (
            {"text": "x"},
            "missing-content",
            "Missing `content`: the text to save goes in `content`; the call has `text` instead. "
            'Use {"content": "x", "mode": "replace"}',
        ),
        (
            {"mode": "append"},
            "missing-content",
            'Missing `content`: the text to save goes in `content`. Use {"content": "## Plan\\n1. '
            '...", "mode": "append"}',
        ),
        (
            {"content": "x", "mode": "overwrite"},
            "mode",
            "`mode` must be 'replace' (overwrite the scratchpad) or 'append' (add to it), got "
            '"overwrite". Use {"content": "x", "mode": "replace"}',
        ),
        (
            {"content": "x", "section": "goal"},
            "unknown-key",
            "Unknown parameter `section`: the call takes only `content` and `mode`, e.g. "
            '{"content": "x", "mode": "replace"}',
        ),
    ],
)
def test_tool_session_names_the_mistake_and_shows_the_right_call(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    call: dict[str, str],
    mistake: str,
    says: str,
) -> None:
    code, out, _ = run(capsys, "tool", "--session", json.dumps(call), "-w", str(workspace))

    answer = json.loads(out)
    assert code == 1 and answer["data"]["mistake"] == mistake
    assert answer["message"] == says
    assert not (workspace / ".scratchpad" / "sections.jsonl").exists()


def test_show_help_says_the_prefix_keeps_the_agent_sections_when_the_file_is_stale(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["show", "--help"])

    text = " ".join(capsys.readouterr().out.split())
    assert "empty when not fresh" not in text
    assert (
        "the agent's sections as they are now, as written (no markers), even when the file is "
        "stale" in text
    )


def test_section_set_shows_in_the_file_until_its_ttl_and_rm_removes_it(
    quiet_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = ["-w", str(quiet_workspace)]
    alert = ["proactive-alerts", "--ttl", "2h", "--source", "calendar", "Standup moved to 10:30"]
    code, out, _ = run(capsys, "section", "set", *alert, *ws)
    assert code == 0 and out.startswith("Section 'proactive-alerts' set (")
    now = datetime.now().astimezone()
    later = (now + timedelta(hours=1)).isoformat()
    run(capsys, "--once", *ws, "--now", later)
    body = (quiet_workspace / "SCRATCHPAD.md").read_text()
    assert "## Proactive alerts (updated 1h ago)\n> From calendar, until " in body
    assert "Standup moved to 10:30" in body
    run(capsys, "--once", *ws, "--now", (now + timedelta(hours=3)).isoformat())
    assert "Standup moved" not in (quiet_workspace / "SCRATCHPAD.md").read_text()

    assert run(capsys, "section", "rm", "proactive-alerts", *ws)[0] == 0
    code, _, err = run(capsys, "section", "set", "goal", "x", *ws)
    assert code == 1 and "is an agent section" in err
    code, _, err = run(capsys, "section", "set", "alerts", "--ttl", "soon", "x", *ws)
    assert code == 1 and "--ttl: expected a duration like '30m'" in err


def test_guidance_prints_the_budget_from_the_config(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "assembler.toml").write_text("[caps]\nagent = 1500\n")

    code, out, _ = run(capsys, "guidance", "-w", str(workspace))

    assert code == 0 and out.startswith("## Session Scratchpad\n")
    assert "about 1500 tokens for all your sections together" in out
    assert "assemble pad append --section findings" in out


def test_show_prefix_carries_the_agent_sections_even_when_the_file_is_stale(
    quiet_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = ["-w", str(quiet_workspace)]
    assert run(capsys, "show", "--format", "prefix", *ws, "--now", NOW) == (0, "", "")
    run(capsys, "--once", *ws, "--now", NOW)
    run(capsys, "pad", "write", "--section", "goal", "ship 1.14.4", *ws)

    _, fresh, _ = run(capsys, "show", "--format", "prefix", *ws, "--now", NOW)
    _, stale, _ = run(capsys, "show", "--format", "prefix", *ws, "--now", "2026-03-03T09:00+11:00")

    assert fresh.startswith("[Session Scratchpad - your persistent working memory]\n# SCRATCHPAD")
    assert "ship 1.14.4" in fresh and fresh.endswith("[End Scratchpad]\n")
    # The section's age is told from --now; the pad call ran on the real clock.
    assert re.fullmatch(
        r"\[Session Scratchpad - your persistent working memory\]\n"
        r"## Goal \(updated (just now|\d+[mhd] ago)\)\nship 1\.14\.4\n\[End Scratchpad\]\n",
        stale,
    )
    assert "scratchpad:" not in fresh and "Edit the text between" not in fresh
    code, out, _ = run(
        capsys, "show", "--format", "prefix", "--fresh-only", *ws, "--now", "2026-03-03T09:00+11:00"
    )
    assert (code, out) == (1, "")


# --- Hostile input at the command line ------------------------------------------------------------


def test_pad_write_to_an_empty_section_name_is_refused_not_written_to_main(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = str(workspace)
    assert run(capsys, "pad", "write", "-w", ws, "the plan")[0] == 0
    code, _, err = run(capsys, "pad", "write", "-w", ws, "--section", "", "overwritten?")
    assert code == 1 and "Section name '' is not valid" in err
    code, out, _ = run(capsys, "pad", "read", "-w", ws, "--section", "main")
    assert out == "the plan"


@pytest.mark.parametrize(
    "argv",
    [
        ["pad", "write", "-"],
        ["tool", "-"],
        ["section", "set", "alerts", "-"],
        ["mood", "--stdin"],
        ["hook", "claude-code"],
    ],
)
def test_invalid_utf8_on_stdin_is_refused_with_the_offset_not_replaced(
    workspace: Path, argv: list[str]
) -> None:
    (workspace / "assembler.toml").write_text("[memory]\nenabled = false\n")
    data = b'{"action": "write", "content": "caf\xe9"}\n' if argv[0] == "tool" else b"ok\ncaf\xe9\n"
    result = subprocess.run(
        [sys.executable, "-m", "assembler", *argv, "-w", str(workspace)],
        input=data,
        capture_output=True,
        timeout=60,
    )
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "is not UTF-8 text (byte 0xe9 at offset" in err and len(err.strip().splitlines()) == 1
    assert not (workspace / ".scratchpad" / "sections.jsonl").exists()


def test_check_says_broken_frontmatter_in_one_line_and_the_hook_agrees(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.hosts.claude_code.hook import run_hook

    ws = str(frustrated_workspace)
    assert run(capsys, "--once", "-w", ws, "--now", NOW)[0] == 0
    path = frustrated_workspace / "SCRATCHPAD.md"
    path.write_text(path.read_text().replace("ttl_minutes: 30", "ttl_minutes: [30", 1))
    code, out, _ = run(capsys, "check", "-w", ws, "--now", NOW)
    assert code == 2 and out.startswith("missing or unreadable: ")
    assert "has broken frontmatter (line " in out and len(out.strip().splitlines()) == 1
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": ws, "session_id": "s"})
    now = datetime.fromisoformat(NOW)
    assert run_hook(event, workspace=ws, config_path=None, now=now) == ""


def test_a_now_the_clock_cannot_carry_is_a_clear_error(
    frustrated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "--once", "-w", str(frustrated_workspace), "--now", "0001-01-01T00:00:00+14:00"
    )
    assert code == 1 and "is not an ISO-8601 time" in err


def test_search_never_prints_a_secret_that_a_memory_note_holds(
    notes_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    aws = "AKIA" + "IOSFODNN7EXAMPLQ"
    (notes_workspace / "memory" / "keys.md").write_text(
        f"# Deploy keys\n\nThe deploy uses GITHUB_TOKEN={token} and {aws}.\n"
    )
    ws = str(notes_workspace)
    for argv in (
        ["search", "-w", ws, "deploy keys token"],
        ["search", "-w", ws, "--json", "deploy keys"],
    ):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "keys.md" in out
        assert token not in out and aws not in out
        assert "[redacted GitHub token]" in out and "[redacted AWS access key]" in out


def test_every_command_module_has_one_entry_in_the_table_of_commands() -> None:
    modules = {path.stem for path in (REPO / "assembler" / "cli" / "commands").glob("[!_]*.py")}
    names = [command.name for command in COMMANDS]

    assert sorted(names) == sorted(modules)
    assert all(callable(importlib.import_module(c.module).run) for c in COMMANDS)


def test_the_help_lists_the_commands_in_the_tables_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = re.findall(r"^    (\S+) ", capsys.readouterr().out, flags=re.MULTILINE)

    assert listed == [command.name for command in COMMANDS]


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("show", ["-w", "W", "show", "--format", "prefix", "--fresh-only"]),
        ("section", ["section", "set", "alerts", "--ttl", "2h", "Standup at 10:30"]),
        ("obs", ["obs", "read", "485d7beae4e144eb", "--mode", "grep", "--pattern", "E", "-i"]),
        ("setup", ["setup", "codex", "--remove", "--apply"]),
        ("hook", ["hook", "claude-code", "-c", "C"]),
        ("config", ["config", "init", "--user", "--force"]),
    ],
)
def test_a_parser_built_for_one_command_reads_it_as_the_whole_parser_does(
    command: str, argv: list[str]
) -> None:
    alone = build_parser(command).parse_args(argv)

    assert vars(alone) == vars(build_parser().parse_args(argv))
