"""Helpers of the status page's tests: a workspace with a group chat's transcript (two humans,
an evening that turns frustrated and eases), a rendered SCRATCHPAD.md with hostile Markdown in
it, an agent section and a parked observation."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from assembler.config.files import load_config
from assembler.config.schema import Config
from assembler.file.codec import compose
from assembler.file.records import AssemblyState, render_record, write_assembly_state
from assembler.observations.store import store_for
from assembler.pad.sections import scratchpad_for

NOW = datetime(2026, 3, 2, 12, 25, tzinfo=UTC)
START = NOW - timedelta(hours=3)

# (minutes after START, speaker, text): our own lines, written for these tests.
LINES = [
    (0, "ray", "morning. can you check why the deploy of the api failed?"),
    (20, "ray", "WHY is it failing AGAIN?? third time today, I just want it deployed"),
    (40, "sam", "the chart still points at the old secret, that is the bug"),
    (60, "ray", "ffs. this is so annoying, nothing works"),
    (90, "sam", "fixed the chart, try again"),
    (120, "ray", "ok that did it, thanks a lot! great work"),
    (150, "ray", "long day. I'm tired, let's stop here"),
]
HOSTILE = '<script>window.__pwned = 1</script> <img src="http://evil.example/x.png">'
TRANSCRIPT = "transcripts/chat.jsonl"


def transcript_line(minutes: float, speaker: str | None, text: str, role: str = "user") -> str:
    entry = {
        "role": role,
        "content": text,
        "timestamp": (START + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z"),
    }
    if speaker is not None:
        entry["speaker"] = speaker
    return json.dumps(entry) + "\n"


def append_line(workspace: Path, minutes: float, speaker: str | None, text: str) -> None:
    with (workspace / TRANSCRIPT).open("a", encoding="utf-8") as handle:
        handle.write(transcript_line(minutes, speaker, text))


def make_status_workspace(folder: Path, *, memory: bool = False) -> Config:
    """Write the workspace into `folder` and return its config."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "transcripts").mkdir()
    lines = []
    for minutes, speaker, text in LINES:
        lines.append(transcript_line(minutes, speaker, text))
        lines.append(transcript_line(minutes + 1, None, "On it.", role="assistant"))
    (folder / TRANSCRIPT).write_text("".join(lines), encoding="utf-8")
    (folder / "assembler.toml").write_text(
        "[transcripts]\n"
        f'sources = ["{TRANSCRIPT}"]\n'
        'lookback = "6h"\n'
        "[time]\n"
        'timezone = "UTC"\n'
        f"[memory]\nenabled = {'true' if memory else 'false'}\n",
        encoding="utf-8",
    )
    config = load_config(str(folder), None)
    body = (
        "# SCRATCHPAD.md — Working Memory (auto-generated)\n\n"
        "## Emotional Context\n- **Primary:** frustrated (0.80)\n\n"
        f"## Active Context\n- **Working on:** the api deploy {HOSTILE}\n"
        "- [a link](javascript:alert(1))\n"
    )
    meta = {
        "updated": NOW.isoformat(),
        "expires": (NOW + timedelta(minutes=30)).isoformat(),
        "ttl_minutes": 30,
    }
    # What the last assembly measured lives beside the file, in the state folder.
    diagnostics = {
        "tokens": {
            "auto": 60,
            "agent": 0,
            "total": 60,
            "caps": {"auto": 500, "agent": 2000, "total": 2600},
        },
        "messages_read": 14,
        "sections": ["emotional_context", "active_context"],
        "dropped": ["relevant_memories: an old note"],
        "degraded": [],
    }
    text = compose(meta, body)
    (folder / "SCRATCHPAD.md").write_text(text, encoding="utf-8")
    render = render_record(text, {}, carried=False)
    write_assembly_state(config.state_dir, AssemblyState([render], None, diagnostics))
    pad = scratchpad_for(config, now=lambda: NOW - timedelta(minutes=30))
    assert pad.write("Fix the failing prod deploy", section="goal").ok
    assert pad.append("Port is 8080", section="findings").ok
    with store_for(config, clock=lambda: NOW) as store:
        store.put({"ok": True, "content": "x" * 6000 + "\nERROR at the end"}, executor="fs_read")
    return config
