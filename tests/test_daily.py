"""Today's daily note in the file: `assembler.context.active.daily_context` (which lines, newest
first) and the Daily Context section beside Relevant Memories in a whole assembly."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

from assembler.assembly.pipeline import run_once
from assembler.config.files import load_config
from assembler.context.daily import daily_context
from assembler.hosts.registry import HOSTS

NOW = datetime.fromisoformat("2026-03-02T23:25:00+11:00")

# The shape of workspace-example's note: timed entries, then lessons under their own heading.
NOTE = """# 2026-03-02 (Mon)

## Morning
- 08:45 Morning brief: 1.14.3 release today, standup 09:30.
- 11:20 Deploy attempt 1 timed out after 5m.

## Evening
- 21:45 Deployed 1.14.4: 3/3 ready, migrations 48 and 49 applied.
  Health check 200 on all three pods.
- 21:52 Ray: "ok that did it, thanks". Relieved.
- 23:07 Ray: "long day, I'm fried". Everything else waits till tomorrow.

## For MEMORY.md
- AUTOCOMMIT off in psqlrc plus a forgotten prod psql session can take prod down.
- release.yml now also matches plain 1.2.3 tags.
"""


def write_note(workspace: Path, text: str = NOTE) -> Path:
    path = workspace / "memory" / "2026-03-02.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_newest_entries_are_kept_before_lessons_and_old_entries(tmp_path: Path) -> None:
    write_note(tmp_path)
    daily = daily_context(tmp_path, "memory", NOW, tail_bytes=140)
    assert daily.lines == [
        '- 21:52 Ray: "ok that did it, thanks". Relieved.',
        '- 23:07 Ray: "long day, I\'m fried". Everything else waits till tomorrow.',
    ]
    assert daily.newness == [1, 0]
    assert daily.truncated


def test_lessons_come_after_every_timed_entry_and_headings_never_show(tmp_path: Path) -> None:
    write_note(tmp_path)
    daily = daily_context(tmp_path, "memory", NOW, tail_bytes=10_000)
    assert not any(line.startswith("#") for line in daily.lines)
    by_newness = [line for _, line in sorted(zip(daily.newness, daily.lines, strict=True))]
    assert by_newness[0].startswith("- 23:07")
    assert by_newness[-2:] == [
        "- release.yml now also matches plain 1.2.3 tags.",
        "- AUTOCOMMIT off in psqlrc plus a forgotten prod psql session can take prod down.",
    ]
    # An indented line goes with its entry, and the lines keep the note's order.
    at = daily.lines.index("Health check 200 on all three pods.")
    assert daily.lines[at - 1].startswith("- 21:45")
    assert daily.line_numbers == sorted(daily.line_numbers)
    assert not daily.truncated


def test_entries_after_the_clock_are_not_shown(tmp_path: Path) -> None:
    write_note(tmp_path)
    earlier = datetime.fromisoformat("2026-03-02T21:50:00+11:00")
    daily = daily_context(tmp_path, "memory", earlier, tail_bytes=10_000)
    assert daily.lines[-2].startswith("- 21:45")
    assert not any(
        "21:52" in line or "23:07" in line or "AUTOCOMMIT" in line for line in daily.lines
    )


def test_a_note_without_times_is_read_from_its_end(tmp_path: Path) -> None:
    write_note(tmp_path, "# day\n\n- one\n- two\n- three\n")
    daily = daily_context(tmp_path, "memory", NOW, tail_bytes=16)
    assert (daily.lines, daily.truncated, daily.start_line) == (["- two", "- three"], True, 4)
    whole = daily_context(tmp_path, "memory", NOW, tail_bytes=1000)
    assert (whole.lines, whole.truncated, whole.start_line) == (
        ["- one", "- two", "- three"],
        False,
        3,
    )


# --- In a whole assembly ----------------------------------------------------------------------


def make_workspace(folder: Path, daily_cap: int) -> Path:
    write_note(folder)
    (folder / "MEMORY.md").write_text(
        "# Ray\n\n- After 23:00: suggest deferring non-urgent work; he says so if it can't wait.\n"
    )
    lines = [
        (60, "user", "long day, I'm fried. can everything else wait till tomorrow?"),
        (58, "assistant", "Yes."),
        (20, "user", "is 1.14.4 deployed, did migrations 48 and 49 apply?"),
    ]
    with (folder / "chat.jsonl").open("w") as handle:
        for minutes, role, text in lines:
            stamp = (NOW - timedelta(minutes=minutes)).isoformat()
            handle.write(json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n")
    (folder / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n'
        '[memory]\nmodel = "none"\nkeyword_floor = 0.0\nrelative_floor = 0.0\n'
        f"[caps.sections]\ndaily_context = {daily_cap}\n"
        '[time]\ntimezone = "Australia/Sydney"\n'
    )
    return folder


def section(text: str, title: str) -> str:
    """The section's text, "" when the file has no such section (its heading may name a source
    in parentheses: "## Daily Context (memory/2026-03-02.md, newest lines)")."""
    parts = re.split(rf"^## {re.escape(title)}(?: \([^\n]*\))?\n", text, maxsplit=1, flags=re.M)
    return parts[1].split("\n## ", 1)[0] if len(parts) == 2 else ""


def test_a_memory_is_skipped_as_shown_only_when_its_line_survives_the_caps(
    workspace: Path,
) -> None:
    roomy = run_once(
        load_config(make_workspace(workspace, daily_cap=400)), now=NOW, hosts=HOSTS, dry_run=True
    )
    daily = section(roomy.text, "Daily Context")
    assert "21:45 Deployed 1.14.4" in daily
    assert "21:45 Deployed" not in section(roomy.text, "Relevant Memories")

    tight = run_once(
        load_config(make_workspace(workspace, daily_cap=60)), now=NOW, hosts=HOSTS, dry_run=True
    )
    daily = section(tight.text, "Daily Context")
    assert "23:07" in daily  # the newest line stays under the cap
    assert "21:45 Deployed" not in daily
    # The cap cut the 1.14.4 line from Daily Context: the memory that found it is shown.
    assert "Deployed 1.14.4" in section(tight.text, "Relevant Memories")


def test_a_memory_that_only_repeats_the_time_note_is_not_shown(workspace: Path) -> None:
    assembly = run_once(
        load_config(make_workspace(workspace, daily_cap=400)), now=NOW, hosts=HOSTS, dry_run=True
    )
    assert "suggest deferring non-urgent work" in section(assembly.text, "Time Context")
    assert "suggest deferring" not in section(assembly.text, "Relevant Memories")
    found = [line for line in assembly.explain() if "memories: query" in line]
    assert any("-> MEMORY.md:" in line for line in found)  # found, and then not shown:
    assert any(
        line.startswith("relevant_memories: `MEMORY.md:") and line.endswith("(already shown)")
        for line in assembly.fitted.dropped
    )
