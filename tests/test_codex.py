"""Tests of assembler/hosts/codex/: Codex's rollouts read (the human's words only, the host's
parts dropped, bad lines counted), the sessions found by their working folder, the hook, and
the setup. The fixtures in tests/fixtures/codex/ were written by us in the shapes Codex 0.171
(provenance on each content item) and 0.3x (none) write."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assembler.cli.main import main
from assembler.daemon.control import PromptAnswer, PromptRequest
from assembler.daemon.lock import DaemonLock
from assembler.file.codec import compose
from assembler.file.records import remember_render
from assembler.hosts.codex.hook import parse_codex_input, run_hook
from assembler.hosts.codex.sessions import MAX_SOURCES, codex_sources
from assembler.hosts.codex.setup import codex_setup, trusted_hash
from assembler.hosts.codex.turns import is_host_text
from assembler.hosts.handoff import HookInputError
from assembler.hosts.registry import HOSTS
from assembler.transcripts.hosts import classify
from assembler.transcripts.read import read_recent

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "codex"
NEW = FIXTURES / "rollout-2026-11-20T09-00-00-01a2c0de-0000-7000-8000-00000000c0de.jsonl"
OLD = FIXTURES / "rollout-2025-09-10T14-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
NOW = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
ASSEMBLE = Path("/opt/scratchpad assembler/bin/assemble")


def _read(*paths: Path) -> object:
    return read_recent(
        [str(path) for path in paths],
        base=FIXTURES,
        now=NOW,
        max_messages=100,
        lookback=None,
        hosts=HOSTS,
    )


def _rollout(
    sessions: Path, cwd: str, said: str, *, day: str = "2026/11/20", name: str = "a"
) -> Path:
    """Write a short rollout of a session run in `cwd` in which the human says `said`."""
    path = sessions / day / f"rollout-2026-11-20T09-00-00-{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {
            "timestamp": "2026-11-20T09:00:00Z",
            "type": "session_meta",
            "payload": {"id": name, "cwd": cwd},
        },
        {
            "timestamp": "2026-11-20T09:00:01Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": said}],
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# -- the reader -------------------------------------------------------------------------------


def test_a_rollout_yields_the_humans_words_and_the_replies_and_nothing_of_the_host() -> None:
    read = _read(NEW)

    assert [(m.role, m.text) for m in read.messages] == [  # type: ignore[attr-defined]
        ("user", "the nightly export keeps timing out, can you look?"),
        ("assistant", "The export query scans the whole table; I will add an index."),
        ("user", "ok do it, and rerun the export"),
        ("assistant", "Index added; the export finished in 40 s."),
    ]
    [source] = read.sources  # type: ignore[attr-defined]
    assert (source.format, source.messages, source.bad_lines, source.error) == ("codex", 4, 0, None)
    first = read.messages[0]  # type: ignore[attr-defined]
    assert first.session_id == "01a2c0de-0000-7000-8000-00000000c0de"
    assert first.cwd == "/home/dev/agent"


def test_an_older_rollout_without_provenance_drops_the_hosts_tags_and_counts_each_turn_once() -> (
    None
):
    read = _read(OLD)

    # The event_msg copies of the turns are not read again; the instructions, the environment
    # and the shell command's record are the host's.
    assert [(m.role, m.text) for m in read.messages] == [  # type: ignore[attr-defined]
        ("user", "why is the login endpoint returning 500?"),
        ("assistant", "The session secret is unset in staging."),
        ("user", "thanks!! set it and redeploy"),
        ("assistant", "Set and redeployed."),
    ]
    [summary] = read.summaries  # type: ignore[attr-defined]
    assert summary.text.startswith("The human asked about login 500s")


@pytest.mark.parametrize(
    ("text", "host"),
    [
        ("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>", True),
        ("# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nbe brief\n</INSTRUCTIONS>", True),
        ("<user_instructions>\nAlways run ruff.\n</user_instructions>", True),
        ("<turn_aborted>\ninterrupted\n</turn_aborted>", True),
        ("<subagent_notification>{}</subagent_notification>", True),
        ("why does <b>this</b> render bold?", False),
        ("<b>bold</b>", False),
        ("fix the <environment_context> parser", False),
    ],
)
def test_host_text_is_told_from_the_humans(text: str, host: bool) -> None:
    assert is_host_text(text) is host


def test_bad_lines_are_counted_and_skipped_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-11-20T09-00-00-bad.jsonl"
    shutil.copy(NEW, path)
    with path.open("a", encoding="utf-8") as out:
        out.write("{not json\n")
        out.write(json.dumps({"timestamp": "x", "type": "response_item", "payload": "text"}) + "\n")
        impossible = {
            "timestamp": "0001-01-01T00:00:00+14:00",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "from year one"}],
            },
        }
        out.write(json.dumps(impossible) + "\n")

    read = _read(path)

    [source] = read.sources  # type: ignore[attr-defined]
    assert source.bad_lines == 3
    assert source.messages == 4
    assert "from year one" not in [m.text for m in read.messages]  # type: ignore[attr-defined]


def test_rollout_lines_are_claimed_as_codex_and_no_other_hosts_lines_are() -> None:
    first = json.loads(NEW.read_text(encoding="utf-8").splitlines()[0])
    assert classify(HOSTS, first) == "codex"
    assert classify(HOSTS, {"type": "user", "message": {"role": "user"}, "uuid": "u"}) != "codex"
    assert classify(HOSTS, {"role": "user", "content": "hi"}) == "generic"


# -- which sessions belong to the workspace ----------------------------------------------------


def test_sessions_run_in_the_workspace_or_inside_it_are_found_newest_first(tmp_path: Path) -> None:
    sessions = tmp_path / "home" / ".codex" / "sessions"
    workspace = tmp_path / "ws"
    (workspace / "api").mkdir(parents=True)
    here = _rollout(sessions, str(workspace), "check the deploy", name="here")
    inside = _rollout(sessions, str(workspace / "api"), "fix the api", day="2026/11/21", name="in")
    _rollout(sessions, str(tmp_path / "ws-old"), "a sibling's secret", name="sibling")
    _rollout(sessions, "/home/ray/billing", "another project's secret", name="other")
    _rollout(sessions, "relative/ws", "no absolute folder", name="relative")
    os.utime(here, (1, 1))

    found = codex_sources(workspace, {"HOME": str(tmp_path / "home")})

    assert found == [str(inside), str(here)]


def test_codex_home_is_honoured_over_the_home_folder(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    default = _rollout(tmp_path / "home" / ".codex" / "sessions", str(workspace), "a", name="d")
    moved = _rollout(tmp_path / "codex-home" / "sessions", str(workspace), "b", name="m")

    assert codex_sources(workspace, {"HOME": str(tmp_path / "home")}) == [str(default)]
    environ = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex-home")}
    assert codex_sources(workspace, environ) == [str(moved)]
    # A `~` in CODEX_HOME is the home of the environment Codex runs with, not this process's.
    nested = _rollout(tmp_path / "home" / "tools" / "codex" / "sessions", str(workspace), "c")
    environ = {"HOME": str(tmp_path / "home"), "CODEX_HOME": "~/tools/codex"}
    assert codex_sources(workspace, environ) == [str(nested)]


def test_an_assembly_with_no_sources_configured_reads_this_workspaces_codex_sessions(
    tmp_path: Path, isolated_home: Path
) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    workspace = tmp_path / "ws"
    (workspace / ".scratchpad").mkdir(parents=True)
    (workspace / ".scratchpad" / "config.toml").write_text(
        '[memory]\nmodel = "none"\n[time]\ntimezone = "UTC"\n', encoding="utf-8"
    )
    sessions = isolated_home / ".codex" / "sessions"
    said = "please fix the nightly export job, it keeps timing out"
    mine = _rollout(sessions, str(workspace), said, name="m")
    _rollout(sessions, "/home/ray/billing", "zebrafish payroll secret", name="o")

    assembly = run_once(load_config(workspace), now=NOW, hosts=HOSTS)

    assert [(s.path, s.format) for s in assembly.transcripts.sources] == [(str(mine), "codex")]
    assert assembly.measured.messages_read == 1
    [working_on] = [line for line in assembly.text.splitlines() if "**Working on:**" in line]
    assert "nightly export" in working_on, assembly.text
    assert "zebrafish" not in assembly.text


def test_a_link_to_a_folder_outside_the_sessions_folder_is_not_followed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "home" / ".codex" / "sessions"
    sessions.mkdir(parents=True)
    elsewhere = _rollout(tmp_path / "elsewhere", str(workspace), "planted", name="p")
    (sessions / "2026").symlink_to(elsewhere.parent.parent.parent, target_is_directory=True)
    linked_file = sessions / "rollout-2026-11-20T09-00-00-f.jsonl"
    linked_file.symlink_to(elsewhere)
    (sessions / "loop").symlink_to(sessions, target_is_directory=True)

    assert codex_sources(workspace, {"HOME": str(tmp_path / "home")}) == []


def test_a_forged_working_folder_in_a_later_line_does_not_claim_a_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "home" / ".codex" / "sessions"
    path = _rollout(sessions, "/home/ray/billing", "secret", name="f")
    # A human message quoting a session_meta line names the workspace: only the head's first
    # session_meta or turn_context counts.
    quoted = {"type": "session_meta", "payload": {"cwd": str(workspace)}}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(quoted) + "\n")

    assert codex_sources(workspace, {"HOME": str(tmp_path / "home")}) == []


def test_a_huge_first_line_still_names_its_folder_and_a_pipe_is_skipped(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "home" / ".codex" / "sessions" / "2026" / "11" / "20"
    sessions.mkdir(parents=True)
    meta = {
        "timestamp": "2026-11-20T09:00:00Z",
        "type": "session_meta",
        "payload": {"id": "h", "cwd": str(workspace), "base_instructions": "x" * 3_000_000},
    }
    huge = sessions / "rollout-2026-11-20T09-00-00-huge.jsonl"
    huge.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    nameless = sessions / "rollout-2026-11-20T09-00-00-nameless.jsonl"
    nameless.write_text('{"type": "session_meta", "payload": {"x": "' + "y" * 3_000_000 + '"}}\n')
    os.mkfifo(sessions / "rollout-2026-11-20T09-00-00-pipe.jsonl")

    found = codex_sources(workspace, {"HOME": str(tmp_path / "home")})

    assert found == [str(huge)]


def test_the_sessions_returned_are_bounded(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "home" / ".codex" / "sessions"
    for index in range(MAX_SOURCES + 5):
        _rollout(sessions, str(workspace), "hi", name=f"s{index:03d}")

    assert len(codex_sources(workspace, {"HOME": str(tmp_path / "home")})) == MAX_SOURCES


# -- the hook ---------------------------------------------------------------------------------


def _event(name: str, workspace: Path, session: str = "01a2-session", **extra: str) -> str:
    # The fields Codex 0.171 sends on every hook event, plus the event's own.
    data = {
        "session_id": session,
        "transcript_path": str(workspace / "rollout.jsonl"),
        "cwd": str(workspace),
        "hook_event_name": name,
        "model": "gpt-5.5",
        "permission_mode": "bypassPermissions",
        **extra,
    }
    return json.dumps(data)


def _write_pad(workspace: Path, body: str, updated: datetime = NOW) -> None:
    meta = {
        "generator": "scratchpad-assembler test",
        "updated": updated.isoformat(timespec="seconds"),
        "expires": (updated + timedelta(minutes=30)).isoformat(timespec="seconds"),
        "ttl_minutes": 30,
    }
    text = compose(meta, body)
    (workspace / "SCRATCHPAD.md").write_text(text, encoding="utf-8")
    remember_render(workspace / ".scratchpad", text)


NOTES = "".join(
    f"- note {index}: the export writes batch {index} to the bucket\n" for index in range(12)
)
BODY = (
    "# SCRATCHPAD.md\n\n## Goal\nship the export fix\n\n## Notes\n"
    + NOTES
    + "\n## Findings\n- the index is missing\n"
)


def _context(output: str) -> str:
    return str(json.loads(output)["hookSpecificOutput"]["additionalContext"])


def test_the_hook_sends_the_block_once_then_only_what_changed(workspace: Path) -> None:
    _write_pad(workspace, BODY)

    def hook(name: str, when: datetime, **extra: str) -> str:
        stdin = _event(name, workspace, **extra)
        return run_hook(stdin, workspace=None, config_path=None, now=when)

    first = hook("UserPromptSubmit", NOW, prompt="look at the export")
    assert "ship the export fix" in _context(first)
    assert hook("UserPromptSubmit", NOW + timedelta(minutes=1), prompt="go on") == ""

    _write_pad(workspace, BODY + "- the query runs 40 s\n", NOW + timedelta(minutes=2))
    update = _context(hook("UserPromptSubmit", NOW + timedelta(minutes=3), prompt="and now?"))
    assert update.startswith("[Scratchpad update since ")
    assert "+- the query runs 40 s" in update
    assert "ship the export fix" not in update

    # A compaction dropped what the session held: it gets the block whole again.
    again = _context(hook("SessionStart", NOW + timedelta(minutes=4), source="compact"))
    assert "ship the export fix" in again and "the query runs 40 s" in again


def test_a_stale_file_sends_nothing_of_its_content(workspace: Path) -> None:
    _write_pad(workspace, BODY, updated=NOW - timedelta(hours=2))
    stdin = _event("UserPromptSubmit", workspace, prompt="hi")

    assert run_hook(stdin, workspace=None, config_path=None, now=NOW) == ""


def _rendered(workspace: Path, now: datetime) -> None:
    """A workspace rendered by a real assembly at `now` (its ready block with it): a chat,
    memory off, UTC."""
    stamp = (now - timedelta(minutes=3)).isoformat()
    line = {"role": "user", "content": "why does the export keep failing", "timestamp": stamp}
    (workspace / "chat.jsonl").write_text(json.dumps(line) + "\n")
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["chat.jsonl"]\n[memory]\nenabled = false\n'
        '[time]\ntimezone = "UTC"\n'
    )
    assert main(["--once", "-w", str(workspace), "--now", now.isoformat()]) == 0


def test_the_stale_line_goes_once_whole_then_not_again(workspace: Path) -> None:
    _rendered(workspace, NOW - timedelta(hours=2))

    def hook(when: datetime) -> str:
        stdin = _event("UserPromptSubmit", workspace, prompt="hi")
        return run_hook(stdin, workspace=None, config_path=None, now=when)

    first = _context(hook(NOW))
    assert first.startswith("[Scratchpad stale since ") and "not running" in first
    assert "## Active Context" not in first
    assert hook(NOW + timedelta(minutes=1)) == ""


PROMPT = "third time it fails, just give me the command"
ANSWER = "[Session Scratchpad - answered]\n## Response Strategy\n- **How to answer:** concise\n"


def _answering_daemon(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[PromptRequest], DaemonLock]:
    """The workspace's lock held as a running daemon holds it, and its socket's answer to a
    prompt: ANSWER, valid 30 minutes; return the requests it got and the lock."""
    import assembler.daemon.control as control

    asked: list[PromptRequest] = []

    def ask_prompt(
        state_dir: Path, request: PromptRequest, *, budget: float, pid: int | None
    ) -> PromptAnswer:
        assert state_dir == workspace / ".scratchpad" and budget == 0.15 and pid == os.getpid()
        asked.append(request)
        return PromptAnswer(ANSWER, "digest-of-the-answer", NOW, NOW + timedelta(minutes=30))

    monkeypatch.setattr(control, "ask_prompt", ask_prompt)
    return asked, DaemonLock.acquire(workspace / ".scratchpad")


def test_a_prompt_goes_to_the_running_daemon_as_codexs_and_its_answer_is_sent(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rendered(workspace, NOW)
    asked, lock = _answering_daemon(workspace, monkeypatch)
    stdin = _event("UserPromptSubmit", workspace, prompt=PROMPT, turn_id="t1")
    try:
        output = run_hook(stdin, workspace=None, config_path=None, now=NOW)
    finally:
        lock.release()

    assert asked == [PromptRequest("codex", "01a2-session", PROMPT, len(PROMPT), 150)]
    assert _context(output) == ANSWER


def test_without_a_daemon_or_with_the_budget_at_0_the_prompt_goes_nowhere(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rendered(workspace, NOW)
    asked, lock = _answering_daemon(workspace, monkeypatch)
    lock.release()  # the lock file stays, held by nobody: a daemon that stopped
    stdin = _event("UserPromptSubmit", workspace, prompt=PROMPT)

    stopped = _context(run_hook(stdin, workspace=None, config_path=None, now=NOW))

    lock = DaemonLock.acquire(workspace / ".scratchpad")
    monkeypatch.setenv("ASSEMBLER_PROMPT_BUDGET_MS", "0")  # the hand-off turned off
    session = _event("UserPromptSubmit", workspace, session="another", prompt=PROMPT)
    try:
        turned_off = _context(run_hook(session, workspace=None, config_path=None, now=NOW))
    finally:
        lock.release()

    assert asked == []
    # The ready block as it is, which the prompt could not count.
    ready = json.loads((workspace / ".scratchpad" / "prefix.json").read_text())["block"]
    assert stopped == turned_off == ready != ANSWER


def test_other_events_print_nothing(workspace: Path) -> None:
    _write_pad(workspace, BODY)
    stdin = _event("Stop", workspace)
    assert run_hook(stdin, workspace=None, config_path=None, now=NOW) == ""


@pytest.mark.parametrize("stdin", ["not json", "[1, 2]", '{"session_id": "x"}', "[" * 100_000])
def test_bad_hook_input_is_one_clear_error(stdin: str) -> None:
    with pytest.raises(HookInputError, match=r"hook codex: .*Codex hook"):
        parse_codex_input(stdin)


def test_the_hook_command_exits_1_not_2_on_bad_input(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("not json"))
    assert main(["hook", "codex", "--workspace", str(workspace)]) == 1
    assert "hook codex: stdin is not JSON" in capsys.readouterr().err


# -- the setup --------------------------------------------------------------------------------


def test_the_trust_hash_is_the_one_codex_accepted() -> None:
    # Codex 0.171 ran this hook from a user's hooks.json with exactly this trusted_hash in
    # config.toml (and skipped it without one); the end-to-end tests check the printed setup's.
    group = {
        "matcher": "startup|resume|clear|compact",
        "hooks": [{"type": "command", "command": "/tmp/codex-explore/run/hook.sh"}],
    }
    assert trusted_hash("SessionStart", group) == (
        "sha256:4481027d85c691e66008375370cbbdd07d8542b3c5c7e029c2bb85d951f3f22d"
    )
    # With the context limit the setup sets: part of what is trusted.
    command = {"type": "command", "command": "/tmp/codex-explore/run/bighook.sh"}
    limited = {"hooks": [{**command, "additionalContextLimit": 0}]}
    assert trusted_hash("UserPromptSubmit", limited) == (
        "sha256:0b05111a0174b9cdffbe26bbb07734bd4c8b451bdd846c3564ebe333890c5139"
    )


def test_setup_codex_prints_hooks_json_and_toml_with_quoted_absolute_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    workspace = tmp_path / "my ws"
    workspace.mkdir()

    assert main(["setup", "codex", "--workspace", str(workspace)]) == 0

    text = capsys.readouterr().out
    lines = text.splitlines()
    start, end = lines.index("   {"), lines.index("   }")
    hooks = json.loads("\n".join(lines[start : end + 1]))
    expected = codex_setup(workspace.resolve(), _assemble(), {"HOME": str(isolated_home)})
    assert hooks == expected.hooks
    command = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert f"--workspace '{workspace.resolve()}'" in command
    first = lines.index("   [features]")
    last = next(i for i in range(first, len(lines)) if lines[i].startswith("   args = "))
    config = tomllib.loads("\n".join(line.strip() for line in lines[first : last + 1]))
    assert config["features"] == {"hooks": True}
    assert config["mcp_servers"]["scratchpad"]["args"] == [
        "mcp",
        "--workspace",
        str(workspace.resolve()),
    ]
    trusted = config["hooks"]["state"]
    assert sorted(trusted) == sorted(expected.trust)
    assert all(key.startswith(str(isolated_home / ".codex" / "hooks.json")) for key in trusted)


def test_setup_codex_remove_names_each_entry_and_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()

    assert main(["setup", "codex", "--remove", "--workspace", str(workspace)]) == 0

    text = capsys.readouterr().out
    hooks_json = isolated_home / ".codex" / "hooks.json"
    config_toml = isolated_home / ".codex" / "config.toml"
    flowing = " ".join(text.split())  # a heading wraps
    assert f"In {hooks_json}, delete the SessionStart and UserPromptSubmit hooks" in flowing
    assert f"In {config_toml}, delete the tables that trust those hooks" in flowing
    assert f'   [hooks.state."{hooks_json}:session_start:0:0"]' in text
    assert f'   [hooks.state."{hooks_json}:user_prompt_submit:0:0"]' in text
    assert "   [mcp_servers.scratchpad]" in text


def test_remove_apply_takes_only_our_hooks_out_of_hooks_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    workspace, other = tmp_path / "ws", tmp_path / "other ws"
    workspace.mkdir()
    other.mkdir()
    ours = codex_setup(workspace, ASSEMBLE, {"HOME": str(isolated_home)}).hooks["hooks"]
    theirs = codex_setup(other, ASSEMBLE, {"HOME": str(isolated_home)}).hooks["hooks"]
    mine = {"type": "command", "command": "notify-send prompt"}
    hooks = {
        "SessionStart": ours["SessionStart"] + theirs["SessionStart"],
        "UserPromptSubmit": [
            {"hooks": [*ours["UserPromptSubmit"][0]["hooks"], mine]},
            *theirs["UserPromptSubmit"],
        ],
        "Stop": [{"hooks": [mine]}],
    }
    path = isolated_home / ".codex" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": hooks}), encoding="utf-8")

    code = main(["setup", "codex", "--remove", "--apply", "--workspace", str(workspace)])

    assert code == 0, capsys.readouterr()
    left = json.loads(path.read_text(encoding="utf-8"))["hooks"]
    assert left == {
        "SessionStart": theirs["SessionStart"],
        "UserPromptSubmit": [{"hooks": [mine]}, *theirs["UserPromptSubmit"]],
        "Stop": [{"hooks": [mine]}],
    }
    assert "removed:" in capsys.readouterr().out


def _configured(home: Path, workspace: Path, other: Path) -> tuple[Path, str, str]:
    """config.toml as a user keeps it after setting up two workspaces: theirs (the model, a
    comment, another MCP server) around the tables the setup printed for `other` and then for
    `workspace`; return its path, its text, and the text of `other`'s tables."""
    ours = codex_setup(workspace, ASSEMBLE, {"HOME": str(home)})
    theirs = codex_setup(other, ASSEMBLE, {"HOME": str(home)})
    other_trust = "".join(
        f"[hooks.state.{json.dumps(key)}]\ntrusted_hash = {json.dumps(digest)}\n\n"
        for key, digest in theirs.trust.items()
    ).replace(":0:0", ":1:0")  # the second group of each event in hooks.json
    mine = (
        '# my settings\nmodel = "gpt-5.5"\n\n'
        + other_trust
        + '# the linter server\n[mcp_servers.lint]\ncommand = "lint-mcp"  # keep\n\n'
    )
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(mine + "\n".join(ours.config_lines()) + "\n", encoding="utf-8")
    return path, mine, other_trust


def test_remove_apply_cuts_only_our_tables_out_of_config_toml_keeping_its_comments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    workspace, other = tmp_path / "ws", tmp_path / "other ws"
    workspace.mkdir()
    other.mkdir()
    path, mine, _ = _configured(isolated_home, workspace, other)

    code = main(["setup", "codex", "--remove", "--apply", "--workspace", str(workspace)])

    out = capsys.readouterr().out
    assert code == 0, out
    # Every other line as it was; the feature flag stays (Codex's default, perhaps others').
    assert path.read_text(encoding="utf-8") == mine + "[features]\nhooks = true\n"
    assert "removed: the tables that trust those hooks" in out
    assert "[mcp_servers.scratchpad]" in out and "stays in" in out
    # Run again: nothing of ours is left, and nothing else is touched.
    assert main(["setup", "codex", "--remove", "--apply", "--workspace", str(workspace)]) == 0
    assert "absent: the tables" in capsys.readouterr().out


def test_remove_apply_leaves_another_workspaces_mcp_server_and_an_inline_one_for_the_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    workspace, other = tmp_path / "ws", tmp_path / "other ws"
    workspace.mkdir()
    other.mkdir()
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    served = codex_setup(other, ASSEMBLE, {"HOME": str(isolated_home)}).config_lines()
    path.write_text("\n".join(served) + "\n", encoding="utf-8")
    argv = ["setup", "codex", "--remove", "--apply", "--workspace", str(workspace)]

    assert main(argv) == 0
    assert path.read_text(encoding="utf-8") == "\n".join(served) + "\n"  # not ours at all
    assert "absent: the tables" in capsys.readouterr().out

    # Ours, written inline: no header line of its own to cut by, so the user is told.
    args = json.dumps(["mcp", "--workspace", str(workspace)])
    inline = f'mcp_servers = {{ scratchpad = {{ command = "{ASSEMBLE}", args = {args} }} }}\n'
    path.write_text(inline, encoding="utf-8")

    assert main(argv) == 0
    assert path.read_text(encoding="utf-8") == inline
    out = capsys.readouterr().out
    assert "manual: the tables" in out and "delete by hand: [mcp_servers.scratchpad]" in out


def test_remove_apply_reports_a_config_toml_that_is_not_toml_and_leaves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = isolated_home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[mcp_servers.scratchpad\n", encoding="utf-8")

    code = main(["setup", "codex", "--remove", "--apply", "--workspace", str(workspace)])

    assert code == 1
    assert path.read_text(encoding="utf-8") == "[mcp_servers.scratchpad\n"
    assert "is not TOML" in capsys.readouterr().out


def _assemble() -> Path:
    from assembler.daemon.systemd import assemble_executable

    return assemble_executable()
