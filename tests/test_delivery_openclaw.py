"""Delivery receipts for OpenClaw: the plugin records what it put before each prompt
(`.scratchpad/deliveries.jsonl`), and OpenClaw's own trace of the prompts it submitted to the
model (`prompt.submitted` in its run trace: the store's `trajectory_runtime_events` from 2026.7,
a `.trajectory.jsonl` beside the session file before) says what reached it. Only what comes
before the human's words in a run the human's message started counts: the block's text that
the agent writes anywhere (its reply, a message to another session, the history the trace
copies) is no receipt. And the plugin's side, run with the system's Node: the line it appends,
never through a link, bounded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fixtures.delivery import fresh_workspace, run_check
from fixtures.openclaw.trace import BLOCK, MAIN, OpenClawSession, model_prompt, trace_event

from assembler.cli.main import main
from assembler.config.files import load_config
from assembler.delivery.sent import SENT_NAME, read_sent, text_digest
from assembler.hosts.openclaw.host import HOST
from assembler.hosts.openclaw.receipts import openclaw_turns, piece_digests
from assembler.hosts.openclaw.setup import openclaw_plugin_dir

NOW = datetime.fromisoformat("2026-03-02T12:00:00+00:00")


@pytest.fixture
def fresh(workspace: Path) -> Path:
    return fresh_workspace(workspace, NOW)


def _minutes(n: float) -> datetime:
    return NOW + timedelta(minutes=n)


# -- What OpenClaw's trace says reached the model ---------------------------------------------


@pytest.mark.parametrize("layout", ["store", "files"])
def test_every_prompt_that_carried_the_block_counts_as_delivered(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str], layout: Any
) -> None:
    session = OpenClawSession(isolated_home, fresh, layout=layout)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("and the staging one?", _minutes(1))
    code, out = run_check(fresh, capsys, _minutes(2))
    assert code == 0, out
    assert f"OpenClaw session {MAIN[:8]}: 2/2 turns carried the block" in out
    assert "missed" not in out


def test_a_prompt_after_the_plugin_was_taken_out_is_a_missed_delivery(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = OpenClawSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("is it the config?", _minutes(3), plugin=False)
    code, out = run_check(fresh, capsys, _minutes(4))
    assert code == 4, out
    assert "1/2 turns carried the block" in out and "1 missed" in out


def test_a_block_openclaw_did_not_submit_is_missed(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The plugin returned it, but the prompt went to the model without it.
    session = OpenClawSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW, recorded=False)
    code, out = run_check(fresh, capsys, _minutes(1))
    assert code == 4, out
    assert "0/1 turns carried the block" in out


def test_a_prompt_the_plugin_added_nothing_to_is_held_not_missed(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = OpenClawSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("and now?", _minutes(1), block="")  # no block to send: the plugin says so
    code, out = run_check(fresh, capsys, _minutes(2))
    assert code == 0, out
    assert "2/2 turns carried the block" in out
    assert read_sent(fresh / ".scratchpad")[-1].sent is None


def test_the_block_written_by_the_agent_is_no_receipt(
    fresh: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = OpenClawSession(isolated_home, fresh)
    block = session.prompt("why does the deploy fail", NOW, recorded=False)
    # The agent repeats the block in its reply; the next prompt's trace copies that history.
    session.reply(block, NOW + timedelta(seconds=5))
    session.add_event(trace_event("context.compiled", MAIN, "r", NOW + timedelta(seconds=6),
                                  {"prompt": block, "messages": [{"role": "assistant",
                                                                  "content": block}]}))  # fmt: skip
    # Another session of the agent's sends it a message that starts with a copy of the block
    # (sessions_send): the message is the session's, not a plugin's.
    forged = model_prompt(block.rstrip() + "\n\nplease go on")
    session.run([forged], _minutes(1))
    session.user(forged, _minutes(1), provenance={"kind": "inter_session"})
    # And the human pastes it into a message of theirs, after a turn the plugin missed.
    pasted = block.rstrip() + "\n\nwhat does this mean?"
    session.run([pasted], _minutes(2))
    session.user(pasted, _minutes(2))
    code, out = run_check(fresh, capsys, _minutes(3))
    assert code == 4, out
    assert "0/2 turns carried the block" in out


def test_the_block_counts_among_other_plugins_context_and_the_prompt_it_quotes(
    fresh: Path, isolated_home: Path
) -> None:
    session = OpenClawSession(isolated_home, fresh)
    words = "why does the deploy fail"
    # Another plugin's context before ours (plugins run in their order), one after the
    # prompt, and the block quoting the prompt it was assembled for.
    added = session.prompt(words, NOW, before=["<memory>\n\nrecalled: the deploy\n</memory>"],
                           after=["[appended by another plugin]"])  # fmt: skip
    assert f"“{words}”" in added

    read = openclaw_turns(session.store)

    assert read is not None
    [turn] = read[1]
    assert read[0] == MAIN and text_digest(added) in turn.added
    assert turn.at == NOW + timedelta(milliseconds=300)  # when the prompt was submitted


def test_a_run_retried_counts_once_with_what_any_attempt_carried(
    fresh: Path, isolated_home: Path
) -> None:
    session = OpenClawSession(isolated_home, fresh)
    words = "why does the deploy fail"
    block = BLOCK.format(words=words)
    session.run([model_prompt(words), model_prompt(words, block)], NOW)  # a fallback model
    session.user(words, NOW + timedelta(seconds=1))

    read = openclaw_turns(session.store)

    assert read is not None
    [turn] = read[1]
    assert text_digest(block) in turn.added


def test_runs_the_human_did_not_start_are_no_turns(fresh: Path, isolated_home: Path) -> None:
    session = OpenClawSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    # A heartbeat run, a run whose start the trace no longer keeps, a prompt too long for the
    # trace (it keeps an object saying so), and a run with no message of the human's.
    session.run(["[OpenClaw heartbeat poll]"], _minutes(1), trigger="heartbeat")
    session.user("[OpenClaw heartbeat poll]", _minutes(1))
    session.run(["no start"], _minutes(2), started=False)
    session.user("no start", _minutes(2))
    run = session.run([], _minutes(3))
    session.add_event(trace_event("prompt.submitted", MAIN, run, _minutes(3), {
        "prompt": {"truncated": True, "reason": "trajectory-field-size-limit"}}))  # fmt: skip
    session.user("x" * 40_000, _minutes(3))
    session.run(["nobody said this"], _minutes(4))

    read = openclaw_turns(session.store)

    assert read is not None and [turn.at for turn in read[1]] == [NOW + timedelta(milliseconds=300)]


def test_the_stores_newest_human_session_is_read(fresh: Path, isolated_home: Path) -> None:
    old = OpenClawSession(isolated_home, fresh, session="0" * 8 + MAIN[8:])
    old.prompt("an older session", NOW)
    new = OpenClawSession(isolated_home, fresh, session="1" * 8 + MAIN[8:], connection=old.db)
    new.prompt("a newer one", _minutes(1))
    cron = OpenClawSession(isolated_home, fresh, session="2" * 8 + MAIN[8:],
                           key="agent:main:cron:job:run:x", connection=old.db)  # fmt: skip
    cron.prompt("a cron job's prompt", _minutes(2))

    read = HOST.delivery_turns(old.store)

    assert read is not None and read[0] == new.session and len(read[1]) == 1


def test_without_a_trace_no_turn_is_read(fresh: Path, isolated_home: Path) -> None:
    # OPENCLAW_TRAJECTORY=0: the session has its messages and no trace; nothing to tell.
    session = OpenClawSession(isolated_home, fresh, layout="files")
    session.user("why does the deploy fail", NOW)
    assert openclaw_turns(session.file) == (MAIN, [])
    # The trace beside the session and the other artifacts are not sessions.
    session.prompt("and now?", _minutes(1))
    assert openclaw_turns(session.trace) is None
    assert openclaw_turns(session.file.with_name("sessions.json")) is None


def test_a_trace_kept_elsewhere_is_found_through_its_pointer(
    fresh: Path, isolated_home: Path
) -> None:
    session = OpenClawSession(isolated_home, fresh, layout="files")
    added = session.prompt("why does the deploy fail", NOW)
    moved = isolated_home / "traces" / f"{MAIN}.jsonl"  # OPENCLAW_TRAJECTORY_DIR
    moved.parent.mkdir()
    shutil.move(session.trace, moved)
    pointer = {"traceSchema": "openclaw-trajectory-pointer", "schemaVersion": 1,
               "sessionId": MAIN, "runtimeFile": str(moved)}  # fmt: skip
    session.file.with_name(f"{MAIN}.trajectory-path.json").write_text(json.dumps(pointer))

    read = openclaw_turns(session.file)

    assert read is not None and [text_digest(added) in t.added for t in read[1]] == [True]


def test_the_digests_of_the_pieces_are_those_of_each_run_of_whole_pieces() -> None:
    pieces = ["first\n", "second  \nline", "[Session Scratchpad]\n\n\nx\n[End]\n"]
    region = "\n\n".join(pieces) + "\n\n"

    found = set(piece_digests(region))

    for start in range(len(pieces)):
        for end in range(start + 1, len(pieces) + 1):
            assert text_digest("\n\n".join(pieces[start:end])) in found
    assert text_digest("ond  \nline") not in found  # not a whole piece
    assert piece_digests("") == []


# -- The plugin's side: the line it appends ---------------------------------------------------

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="no `node` on PATH to run the plugin with")

# Runs the plugin's before_prompt_build handler once per case: node probe.mjs <entry> <cases>,
# each case {workspace, session, prompt, now_ms, ready: prefix.json's fields or null}; prints
# what each returned and logged, and the digests of `digest_of`.
PROBE = """
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [entry, cases] = process.argv.slice(2);
const plugin = await import(pathToFileURL(entry).href);
const out = { cases: [], digests: [] };
const spec = JSON.parse(cases);
for (const c of spec.cases) {
  if (c.ready) writeFileSync(c.workspace + "/.scratchpad/prefix.json", JSON.stringify(c.ready));
  const logged = [];
  const ctx = c.session === null ? {} : { sessionId: c.session };
  const result = await plugin.promptBuild(
    { workspace: c.workspace, promptBudgetMs: 0 }, { prompt: c.prompt }, ctx,
    (m) => logged.push(m), c.now_ms);
  out.cases.push({ result, logged });
}
for (const text of spec.digest_of) out.digests.push(plugin.textDigest(text));
console.log(JSON.stringify(out));
"""


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _ready(block: str, at: datetime) -> dict[str, Any]:
    return {"version": 1, "updated": at.isoformat(), "block": block,
            "expires_ms": _ms(at + timedelta(minutes=30))}  # fmt: skip


def _probe(
    tmp_path: Path, cases: list[dict[str, Any]], digest_of: Sequence[str] = ()
) -> dict[str, Any]:
    script = tmp_path / "probe.mjs"
    script.write_text(PROBE, encoding="utf-8")
    assert NODE is not None
    spec = json.dumps({"cases": cases, "digest_of": list(digest_of)})
    done = subprocess.run(
        [NODE, str(script), str(openclaw_plugin_dir() / "index.js"), spec],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _case(workspace: Path, at: datetime, **fields: Any) -> dict[str, Any]:
    block = "[Session Scratchpad - x]\nthe goal\n[End Scratchpad]\n"
    return {"workspace": str(workspace), "session": MAIN, "prompt": "hi", "now_ms": _ms(at),
            "ready": _ready(block, at - timedelta(minutes=1))} | fields  # fmt: skip


@needs_node
def test_the_plugin_records_each_prompt_as_the_program_reads_it(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".scratchpad").mkdir(parents=True)
    tricky = "[Session Scratchpad]\nnon-breaking\u00a0\n\u2003\x1c\n"

    out = _probe(tmp_path, [
        _case(workspace, NOW),
        _case(workspace, _minutes(1), ready={**_ready("  \n", NOW)}),  # nothing to add
        _case(workspace, _minutes(2), ready=_ready("old", NOW - timedelta(hours=2))),  # stale
        _case(workspace, _minutes(3), session=None),  # no session: nothing to record
    ], digest_of=[tricky, "zero width\ufeff"])  # fmt: skip

    runs = read_sent(workspace / ".scratchpad")
    sent = out["cases"][0]["result"]["prependContext"]
    stale = out["cases"][2]["result"]["prependContext"]
    assert [(r.at, r.host, r.session, r.sent) for r in runs] == [
        (NOW, "openclaw", MAIN, text_digest(sent)),
        (_minutes(1), "openclaw", MAIN, None),
        (_minutes(2), "openclaw", MAIN, text_digest(stale)),
    ]
    line = json.loads((workspace / ".scratchpad" / SENT_NAME).read_text().splitlines()[0])
    assert line["at"] == "2026-03-02T12:00:00.000+00:00"
    assert out["digests"] == [text_digest(tricky), text_digest("zero width\ufeff")]
    assert all(case["logged"] == [] for case in out["cases"][:2])


@needs_node
def test_the_plugin_writes_no_record_through_a_link_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file\n")
    linked = tmp_path / "linked"
    (linked / ".scratchpad").mkdir(parents=True)
    (linked / ".scratchpad" / SENT_NAME).symlink_to(outside)
    fifo = tmp_path / "fifo"
    (fifo / ".scratchpad").mkdir(parents=True)
    os.mkfifo(fifo / ".scratchpad" / SENT_NAME)
    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (folder / ".scratchpad").symlink_to(tmp_path / "elsewhere")

    out = _probe(tmp_path, [_case(linked, NOW), _case(fifo, NOW), _case(folder, NOW)])

    assert outside.read_text() == "the user's file\n"
    assert list((tmp_path / "elsewhere").iterdir()) == [tmp_path / "elsewhere" / "prefix.json"]
    for case in out["cases"][:2]:
        assert case["result"]["prependContext"].startswith("[Session Scratchpad - x]")
        assert any("cannot record the delivery" in line for line in case["logged"])
    assert "prependContext" not in out["cases"][2]["result"]  # a linked folder is not read


@needs_node
def test_the_plugins_record_is_cut_to_its_newest_lines(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    state = workspace / ".scratchpad"
    state.mkdir(parents=True)
    old = json.dumps({"at": NOW.isoformat(), "host": "openclaw", "session": "s", "sent": None})
    (state / SENT_NAME).write_text((old + "\n") * 7000)  # over 512 KiB

    _probe(tmp_path, [_case(workspace, _minutes(1))])

    lines = (state / SENT_NAME).read_text().splitlines()
    assert len(lines) == 2000 and json.loads(lines[-1])["session"] == MAIN
    assert sorted(p.name for p in state.iterdir()) == ["deliveries.jsonl", "prefix.json"]


# -- `assemble doctor`: the plugin in OpenClaw's config, and the program it runs ---------------


def _openclaw_config(home: Path, **plugins: Any) -> Path:
    """OpenClaw's config as `assemble setup openclaw`'s commands leave it (the plugin linked
    from the checkout, enabled, its hook allowed, its config), with `plugins` over it."""
    path = home / ".openclaw" / "openclaw.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"plugins": plugins}))
    return path


def _plugin(workspace: Path | None, assemble: Path | None, **entry: Any) -> dict[str, Any]:
    config = {"workspace": str(workspace)} if workspace else {}
    config |= {"assemble": str(assemble)} if assemble else {}
    return {
        "load": {"paths": [str(openclaw_plugin_dir())]},
        "entries": {
            "scratchpad-assembler": {
                "enabled": True,
                "hooks": {"allowConversationAccess": True},
                "config": config,
            }
            | entry
        },
    }


@pytest.fixture
def assemble(tmp_path: Path) -> Path:
    program = tmp_path / "bin" / "assemble"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return program


def _links(workspace: Path, assemble: Path) -> list[tuple[str, bool | None, str | None]]:
    from assembler.hosts.openclaw.setup import setup_links

    links = setup_links(load_config(workspace), assemble, os.environ)
    return [(link.name, link.holds, link.fix) for link in links]


def test_a_plugin_set_up_as_setup_prints_holds_with_the_program_it_runs(
    fresh: Path, isolated_home: Path, assemble: Path
) -> None:
    _openclaw_config(isolated_home, **_plugin(fresh, assemble))
    assert _links(fresh, assemble) == [
        ("the OpenClaw plugin", True, None),
        ("the program the OpenClaw plugin runs", True, None),
    ]
    # No workspace in its config: it serves the agent's, which this one is.
    plugins = _plugin(None, assemble)
    settings = {"plugins": plugins, "agents": {"defaults": {"workspace": str(fresh)}}}
    (isolated_home / ".openclaw" / "openclaw.json").write_text(json.dumps(settings))
    assert [holds for _, holds, _ in _links(fresh, assemble)] == [True, True]


def test_openclaw_not_set_up_here_has_no_links_until_its_plugin_ran_here(
    fresh: Path, isolated_home: Path, assemble: Path, tmp_path: Path
) -> None:
    assert _links(fresh, assemble) == []  # no OpenClaw at all
    _openclaw_config(isolated_home, **_plugin(tmp_path / "another", assemble))
    assert _links(fresh, assemble) == []  # the plugin serves another workspace

    OpenClawSession(isolated_home, fresh).prompt("why does the deploy fail", NOW)

    [(name, holds, fix)] = _links(fresh, assemble)
    assert (name, holds) == ("the OpenClaw plugin", False)
    assert fix is not None and "openclaw plugins install --link" in fix
    assert "openclaw config set --batch-json" in fix and str(fresh) in fix


@pytest.mark.parametrize(
    ("plugins", "broken", "fix"),
    [
        ({"enabled": False}, "plugins.enabled is false", "openclaw config set plugins.enabled"),
        ({"deny": ["scratchpad-assembler"]}, "plugins.deny", "openclaw plugins install"),
        ({"allow": ["voice-call"]}, "plugins.allow", "openclaw plugins install"),
        ({"load": {"paths": ["/gone"]}}, "no folder OpenClaw loads", "openclaw plugins install"),
    ],
)
def test_a_plugin_openclaw_does_not_load_is_the_broken_link(
    fresh: Path,
    isolated_home: Path,
    assemble: Path,
    plugins: dict[str, Any],
    broken: str,
    fix: str,
) -> None:
    _openclaw_config(isolated_home, **(_plugin(fresh, assemble) | plugins))
    [link] = _links(fresh, assemble)
    assert link[:2] == ("the OpenClaw plugin", False)
    assert link[2] is not None and link[2].startswith(fix)

    from assembler.hosts.openclaw.setup import setup_links

    [found] = setup_links(load_config(fresh), assemble, os.environ)
    assert broken in found.state


@pytest.mark.parametrize(
    ("entry", "fix"),
    [
        ({"enabled": False}, "openclaw plugins enable scratchpad-assembler"),
        ({"hooks": {}}, "openclaw plugins install"),
        (
            {"hooks": {"allowConversationAccess": True, "allowPromptInjection": False}},
            "openclaw config unset plugins.entries.scratchpad-assembler.hooks",
        ),
    ],
)
def test_a_plugin_disabled_or_denied_its_prompt_hook_is_the_broken_link(
    fresh: Path, isolated_home: Path, assemble: Path, entry: dict[str, Any], fix: str
) -> None:
    _openclaw_config(isolated_home, **_plugin(fresh, assemble, **entry))
    [(name, holds, found)] = _links(fresh, assemble)
    assert (name, holds) == ("the OpenClaw plugin", False)
    assert found is not None and found.startswith(fix)


def test_the_program_the_plugin_runs_must_be_there(
    fresh: Path, isolated_home: Path, assemble: Path
) -> None:
    _openclaw_config(isolated_home, **_plugin(fresh, assemble.parent / "moved"))
    assert _links(fresh, assemble)[1][:2] == ("the program the OpenClaw plugin runs", False)
    _openclaw_config(isolated_home, **_plugin(fresh, None))
    [_, (_, holds, fix)] = _links(fresh, assemble)
    assert holds is False and fix is not None and fix.startswith("openclaw config set")


def test_doctor_follows_openclaw_from_its_config_to_the_last_delivery(
    fresh: Path, isolated_home: Path, assemble: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _openclaw_config(isolated_home, **_plugin(fresh, assemble))
    session = OpenClawSession(isolated_home, fresh)
    session.prompt("why does the deploy fail", NOW)
    session.prompt("is it the config?", _minutes(1), plugin=False)
    capsys.readouterr()

    code = main(["doctor", "-w", str(fresh), "--now", _minutes(2).isoformat()])

    out = capsys.readouterr().out
    assert code == 1, out
    assert "ok   the OpenClaw plugin" in out
    assert "FAIL the last delivery: deliveries, OpenClaw session f71ed876: 1/2 turns" in out
