"""Delivery receipts: what the hooks handed each session, set beside what the host recorded it
added to each turn; `assemble check` says which turns carried the block and exits 4 when the
newest one missed it. A receipt is read only where the host records what a hook added: the
block's text written by the agent anywhere else is no delivery."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fixtures.claude_code.lines import cc_line
from fixtures.claude_code.session import SESSION, ClaudeSession
from fixtures.codex.lines import (
    assistant_message,
    rollout_name,
    session_meta,
    sessions_folder,
    user_message,
)
from fixtures.delivery import fresh_workspace, run_check
from fixtures.transcript_lines import iso

from assembler.config.files import load_config
from assembler.delivery.report import describe
from assembler.delivery.sent import SENT_NAME, Sent, read_sent, record_sent, text_digest
from assembler.delivery.turns import Turn, session_deliveries
from assembler.hosts.codex.hook import run_hook as codex_hook

NOW = datetime.fromisoformat("2026-03-02T12:00:00+00:00")


@pytest.fixture
def fresh(workspace: Path) -> Path:
    return fresh_workspace(workspace, NOW)


def _context(output: str) -> str:
    return str(json.loads(output)["hookSpecificOutput"]["additionalContext"])


# -- Claude Code -------------------------------------------------------------------------------


def test_every_prompt_that_carried_the_block_counts_as_delivered(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = ClaudeSession(isolated_home, fresh)
    assert session.prompt("why does the deploy fail", NOW).startswith("[Session Scratchpad")
    # Nothing changed: the hook sends nothing, the session holds the block.
    assert session.prompt("and the staging one?", NOW + timedelta(minutes=1)) == ""
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=2))
    assert code == 0, out
    assert "2/2 turns carried the block" in out
    assert "missed" not in out


def test_a_prompt_after_the_hook_was_removed_is_a_missed_delivery(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = ClaudeSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("is it the config?", NOW + timedelta(minutes=3), hook=False)
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=4))
    assert code == 4, out
    assert "1/2 turns carried the block" in out and "1 missed" in out
    assert "missed delivery" in out and "Claude Code" in out
    assert "  missed " not in out  # the turns themselves only with --explain

    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=4), "--explain")
    assert code == 4, out
    [why] = [line for line in out.splitlines() if line.startswith("  missed ")]
    at = (NOW + timedelta(minutes=3)).astimezone()
    assert why.startswith(f"  missed {at:%Y-%m-%d %H:%M:%S}: no hook ran for this prompt"), out


def test_a_block_the_host_did_not_record_is_missed(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hook printed it, but the host never added it (a renamed field, say).
    session = ClaudeSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW, recorded=False)
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=1), "--explain")
    assert code == 4, out
    assert "0/1 turns carried the block" in out
    assert "the hook handed the block over, but the host's record of the turn holds nothing" in out


def test_the_block_written_by_the_agent_is_no_receipt(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = ClaudeSession(isolated_home, fresh)
    block = session.prompt("why does the deploy fail", NOW, recorded=False)
    # The agent repeats the block in its reply, and a tool's result carries it too.
    session.reply(block, NOW + timedelta(seconds=5))
    session._add(cc_line("user", "t1", None, [{"type": "tool_result", "content": block}],
                         NOW + timedelta(seconds=6), session=SESSION, promptId="p1"))  # fmt: skip
    (fresh / "MEMORY.md").write_text(block)
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=1))
    assert code == 4, out
    assert "0/1 turns carried the block" in out


def test_a_stale_file_is_not_reported_as_a_missed_delivery(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = ClaudeSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("hello?", NOW + timedelta(minutes=1), hook=False)
    code, out = run_check(fresh, capsys, NOW + timedelta(hours=2))
    assert code == 1, out  # stale says stale; the missed turn is listed, not the exit code
    assert "1 missed" in out


def test_check_without_any_hook_run_prints_only_the_freshness(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=1))
    assert code == 0
    assert len(out.strip().splitlines()) == 1 and "deliveries" not in out


# -- Codex -------------------------------------------------------------------------------------


def test_codex_turns_count_the_hook_context_codex_recorded_and_nothing_else(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = sessions_folder(isolated_home, NOW)
    folder.mkdir(parents=True)
    rollout = folder / rollout_name(SESSION, NOW)
    lines = [session_meta(SESSION, str(fresh), NOW)]
    event = {"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "cwd": str(fresh),
             "transcript_path": str(rollout), "prompt": "why does the deploy fail"}  # fmt: skip
    added = _context(codex_hook(json.dumps(event), workspace=str(fresh), config_path=None,
                                now=NOW, budget=0))  # fmt: skip
    developer = {
        "timestamp": iso(NOW + timedelta(seconds=1)),
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": added}],
            "internal_chat_message_metadata_passthrough": {
                "content_item_kinds": ["hooks.additional_context"],
                "content_item_metadata": [{"provenance": {"type": "harness", "hook": True}}],
            },
        },
    }
    later = NOW + timedelta(minutes=2)
    lines += [user_message("why does the deploy fail", NOW), developer]
    # The second prompt: the hook is gone; the agent's reply repeats the block.
    lines += [user_message("still failing", later), assistant_message(added, later)]
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out = run_check(fresh, capsys, later + timedelta(minutes=1))
    assert code == 4, out
    assert "Codex session" in out and "1/2 turns carried the block" in out


# -- the record and the matching ---------------------------------------------------------------


def test_the_record_skips_bad_lines_and_refuses_a_link(tmp_path: Path) -> None:
    state = tmp_path / "state"
    record_sent(state, "codex", "s1", "block", NOW)
    with (state / SENT_NAME).open("a") as handle:
        handle.write("not json\n{}\n")
    record_sent(state, "codex", "s1", "", NOW)
    runs = read_sent(state)
    assert [(r.session, r.sent) for r in runs] == [("s1", text_digest("block")), ("s1", None)]
    (state / SENT_NAME).unlink()
    target = tmp_path / "user-file"
    target.write_text("keep\n")
    (state / SENT_NAME).symlink_to(target)
    with pytest.raises(OSError):
        record_sent(state, "codex", "s1", "block", NOW)
    assert target.read_text() == "keep\n"


def test_a_turn_without_a_hook_run_near_it_is_missed_and_the_streak_counts_the_newest() -> None:
    digest = text_digest("block")
    turns = [
        Turn(NOW, (digest,)),
        Turn(NOW + timedelta(minutes=5)),
        Turn(NOW + timedelta(minutes=9)),
    ]
    # The first turn's run, and the second's, which sent nothing (unchanged); none for the
    # third.
    runs = [Sent(NOW, "x", "s", digest), Sent(NOW + timedelta(minutes=5), "x", "s", None)]
    state = session_deliveries("Host", "s", turns, runs)
    assert (state.delivered, state.held, state.missed, state.missed_last) == (1, 1, 1, 1)
    assert state.carried == 2 and state.last_delivery == NOW


def test_an_upgrade_of_the_host_before_the_missed_turns_is_named() -> None:
    digest = text_digest("block")
    turns = [
        Turn(NOW, (digest,), "2.1.331"),
        Turn(NOW + timedelta(minutes=5), (), "2.1.400"),
        Turn(NOW + timedelta(minutes=6), (), "2.1.400"),
    ]
    state = session_deliveries("Claude Code", "s", turns, [Sent(NOW, "x", "s", digest)])
    assert state.upgraded == ("2.1.331", "2.1.400") and state.missed_last == 2
    assert "went from 2.1.331 to 2.1.400" in describe(state)
    assert [mark.at for mark in state.missed_marks] == [turn.at for turn in turns[1:]]
    assert all("went from 2.1.331 to 2.1.400" in mark.why for mark in state.missed_marks)
    # No upgrade when the versions agree.
    same = [Turn(t.at, t.added, "2.1.331") for t in turns]
    assert (
        session_deliveries("Claude Code", "s", same, [Sent(NOW, "x", "s", digest)]).upgraded is None
    )


def test_the_status_page_shows_each_session_with_a_mark_per_turn(
    fresh: Path, isolated_home: Path
) -> None:
    from assembler.serve.data import Status, deliveries_data

    session = ClaudeSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("hello?", NOW + timedelta(minutes=1), hook=False)
    later = NOW + timedelta(minutes=2)
    status = Status.open(load_config(fresh), lambda: later)
    try:
        data = deliveries_data(status, later)
    finally:
        status.close()
    [shown] = data["sessions"]
    assert [turn["mark"] for turn in shown["turns"]] == ["delivered", "missed"]
    assert shown["turns"][0]["why"] == "" and "no hook ran" in shown["turns"][1]["why"]
    assert shown["missed_last"] == 1 and "1/2 turns carried the block" in shown["line"]


# -- found against the real hosts (tests/test_e2e_doctor.py) ------------------------------------


class _ProjectSession(ClaudeSession):
    """A Claude Code session run in a project of its own, outside the workspace, as Claude Code
    writes it: every line's `cwd` is the project's. It is the workspace's by the user's
    settings, whose hooks run for the workspace."""

    def __init__(self, home: Path, workspace: Path, project: Path) -> None:
        super().__init__(home, workspace)
        self.project = project

    def _add(self, line: dict[str, object]) -> None:
        super()._add(line)
        for item in self.lines:
            item["cwd"] = str(self.project)
        self.path.write_text("".join(json.dumps(item) + "\n" for item in self.lines))


def test_a_session_run_outside_the_workspace_is_missed_once_the_hooks_are_taken_out(
    fresh: Path, isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.daemon.systemd import assemble_executable
    from assembler.hosts.claude_code.setup import claude_code_setup

    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    printed = claude_code_setup(fresh.resolve(), assemble_executable()).settings
    settings.write_text(json.dumps(printed))
    project = tmp_path / "project"
    project.mkdir()
    session = _ProjectSession(isolated_home, fresh, project)
    session.prompt("why does the deploy fail", NOW)
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=1))
    assert code == 0 and "1/1 turns carried the block" in out, out
    # The user deletes the hooks from their settings: the session no longer belongs to the
    # workspace by them, but the hook served it here, and its next prompt got nothing.
    settings.write_text(json.dumps({k: v for k, v in printed.items() if k != "hooks"}))
    session.prompt("is it the config?", NOW + timedelta(minutes=2), hook=False)
    code, out = run_check(fresh, capsys, NOW + timedelta(minutes=3))
    assert code == 4, out
    assert "1/2 turns carried the block" in out and "1 missed" in out


def test_a_hook_run_counts_for_the_prompt_nearest_to_it_only() -> None:
    # The first prompt's hook ran and rightly sent nothing; the hook was taken out before the
    # second, 20 s later: that one borrows no run, it is missed.
    turns = [Turn(NOW), Turn(NOW + timedelta(seconds=20))]
    state = session_deliveries("Host", "s", turns, [Sent(NOW, "x", "s", None)])
    assert (state.held, state.missed, state.missed_last) == (1, 1, 1)
    # Its own run, a little after it, still counts for it.
    late = [Sent(NOW, "x", "s", None), Sent(NOW + timedelta(seconds=21), "x", "s", None)]
    assert session_deliveries("Host", "s", turns, late).held == 2


def test_a_block_the_host_changed_on_the_way_is_missed_saying_so() -> None:
    # The host recorded something a hook added, but not what ours handed over.
    turns = [Turn(NOW, (text_digest("the block, cut short"),))]
    state = session_deliveries("Host", "s", turns, [Sent(NOW, "x", "s", text_digest("block"))])
    [mark] = state.missed_marks
    assert mark.at == NOW and "what the host recorded as added differs from it" in mark.why


def test_the_daemon_says_once_in_its_log_that_a_host_upgrade_stopped_the_block(
    fresh: Path, isolated_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from assembler.daemon.service import Daemon
    from assembler.hosts.registry import HOSTS

    session = ClaudeSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW, version="2.1.331")
    # Claude Code was upgraded and no longer runs the hook.
    session.prompt("is it the config?", NOW + timedelta(minutes=3), hook=False, version="2.1.400")
    later = NOW + timedelta(minutes=4)
    clock = [later]
    daemon = Daemon(load_config(fresh), hosts=HOSTS, clock=lambda: clock[0])

    with caplog.at_level("WARNING", logger="assembler"):
        daemon._assemble("change")
        clock[0] = later + timedelta(minutes=5)  # past the watch's pause between looks
        daemon._assemble("change")
    said = [
        r.getMessage() for r in caplog.records if "went from 2.1.331 to 2.1.400" in r.getMessage()
    ]
    assert len(said) == 1, caplog.text
    assert f"session {SESSION[:8]}" in said[0] and "newest 1 turn(s) got no scratchpad" in said[0]
    assert "assemble doctor" in said[0]
