"""The README's demo: `assemble --once` on workspace-example/ with the clock of the session."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import frontmatter
import pytest

from assembler.cli.main import main
from assembler.hosts.registry import HOSTS

EXAMPLE = Path(__file__).resolve().parent.parent / "workspace-example"
NOW = "2026-03-02T23:25:00+11:00"  # the Makefile's DEMO_NOW: just after the session ended
FRUSTRATED_AT = "2026-03-02T19:57:00+11:00"  # the third failed deploy of the evening


@pytest.fixture
def example(tmp_path: Path) -> Path:
    copy = tmp_path / "workspace-example"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("SCRATCHPAD.md", ".scratchpad"))
    return copy


def test_the_demo_renders_every_section_from_both_transcripts(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--once", "--workspace", str(example), "--now", NOW]) == 0
    post = frontmatter.load(example / "SCRATCHPAD.md")
    meta = post.metadata
    assert datetime.fromisoformat(meta["expires"]) - datetime.fromisoformat(
        meta["updated"]
    ) == timedelta(minutes=meta["ttl_minutes"])
    # What the agent reads of the frontmatter: the times and one line of source, ~40 tokens.
    assert set(meta) == {"updated", "expires", "ttl_minutes", "source"}
    assert meta["source"] == "2 transcripts, 45 messages; memory 14 chunks"
    state = json.loads((example / ".scratchpad" / "last-assembly.json").read_text())
    recorded = state["diagnostics"]
    formats = sorted(s["format"] for s in recorded["sources"])
    assert formats == ["claude-code", "openclaw"]
    assert all(s["bad_lines"] == 0 and s["messages"] > 0 for s in recorded["sources"])
    assert recorded["degraded"] == []
    tokens = recorded["tokens"]
    assert tokens["auto"] <= tokens["caps"]["auto"]
    assert tokens["frontmatter"] <= 50
    assert tokens["total"] <= tokens["caps"]["total"]
    for title in ("Emotional Context", "Active Context", "Daily Context", "Time Context"):
        assert f"## {title}" in post.content
    # The strategy has its section when an emotion is clear; else the mood's line says it.
    clear = "- **Primary:** " in post.content
    assert ("## Response Strategy" in post.content) == clear
    assert ("- **Mood:** no clear emotion" in post.content) == (not clear)
    # Nothing sensitive and an ordinary task: no routing hint to act on.
    assert "## Routing Hint" not in post.content
    assert "late night" in post.content
    assert "memory/2026-03-02.md" in post.content
    # The plan was written at 20:12, in this session (from 19:41): its age, no warning.
    assert "\n## Main (updated 3h ago)\n" in post.content


def test_the_demo_file_has_no_line_that_carries_nothing(example: Path) -> None:
    for clock in (NOW, FRUSTRATED_AT):
        assert main(["--once", "--workspace", str(example), "--now", clock]) == 0
        text = (example / "SCRATCHPAD.md").read_text()
        lines = text.splitlines()
        # A continuous session, how many messages were read (the frontmatter's source), the
        # default model tier, the complexity label, a strategy of no signal, a neutral
        # secondary, the agent part's preamble: none of them is a line.
        for empty in (
            "**Session gap:**",
            "**Messages read:**",
            "**Suggested model:** standard",
            "**Task complexity:**",
            "**No clear signal:**",
            "**Secondary:** neutral",
            "**Confidence:**",
            "> Written by the agent",
        ):
            assert empty not in text, (clock, empty)
        # The title is one line that says until when the file holds.
        title = next(i for i, line in enumerate(lines) if line.startswith("# "))
        assert lines[title].startswith("# SCRATCHPAD.md — valid until ")
        assert lines[title + 1] == "" and lines[title + 2].startswith("## ")
        # A mood without a clear emotion is one line, and then there is no strategy section.
        mood = text.split("## Emotional Context\n", 1)[1].split("\n\n", 1)[0].splitlines()
        if mood[0].startswith("- **Mood:**"):
            assert len(mood) == 1 and "## Response Strategy" not in text


def test_the_demo_sees_frustration_early_and_a_calmer_end(example: Path) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    assembly = run_once(
        load_config(example), now=datetime.fromisoformat(NOW), hosts=HOSTS, dry_run=True
    )
    assert assembly.mood is not None
    state = assembly.mood.combined
    assert len(state.points) >= 10
    # Ray starts the window frustrated (the third failed deploy) and ends it tired, not angry.
    third = len(state.points) // 3
    assert sum(p.mood in ("frustrated", "urgent") for p in state.points[:third]) >= 2
    assert not any(p.mood in ("frustrated", "urgent") for p in state.points[-third:])
    assert state.primary != "frustrated"
    assert "tired" in (state.primary, state.secondary)
    # Told as a person would: from when, and what it is now.
    assert re.search(r"tired (from|now \(since) \d\d:\d\d", state.trajectory)
    assert "now" in state.trajectory


def test_at_the_frustrated_moment_the_strategy_fires(example: Path) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    # 19:57, the third failed deploy: "WHY is it still failing?? ... the third time today"
    assembly = run_once(
        load_config(example), now=datetime.fromisoformat(FRUSTRATED_AT), hosts=HOSTS, dry_run=True
    )
    assert assembly.mood is not None and assembly.strategy is not None
    assert assembly.mood.combined.primary == "frustrated"
    assert not assembly.strategy.no_signal
    assert "concise" in assembly.strategy.style


README = EXAMPLE.parent / "README.md"
_DEMO_BLOCK = re.compile(r"<!-- demo: (\S+) -->\n```markdown\n(.*?)```", re.DOTALL)


def readme_demos() -> list[tuple[str, list[str]]]:
    """The README's excerpts of the demo's file: (clock, lines), each line quoted verbatim."""
    found = [
        (clock, block.splitlines()) for clock, block in _DEMO_BLOCK.findall(README.read_text())
    ]
    assert found, "the README shows no demo output"
    return found


@pytest.mark.parametrize(("clock", "lines"), readme_demos())
def test_the_readmes_demo_outputs_are_what_the_demo_writes(
    example: Path, clock: str, lines: list[str]
) -> None:
    assert main(["--once", "--workspace", str(example), "--now", clock]) == 0
    written = (example / "SCRATCHPAD.md").read_text().splitlines()
    # Every line the README quotes is in the file, in the README's order ("…" marks a cut).
    at = 0
    for line in (line for line in lines if line != "…"):
        assert line in written[at:], f"{line!r} not in the file at {clock} (after line {at})"
        at = written.index(line, at) + 1


def test_the_readmes_status_page_recipe_shows_the_frustrated_stretch_and_its_easing(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As the README says: `make demo`, then `assemble serve --workspace ... --now ...`.
    assert main(["--once", "--workspace", str(example), "--now", NOW]) == 0
    command = [sys.executable, "-m", "assembler", "serve", "--workspace", str(example)]
    command += ["--now", NOW, "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            url = ""
            for _ in range(5):  # it prints the URL on its second line, before listening
                line = server.stdout.readline().strip()
                if line.startswith("http://"):
                    url = line
                    break
            assert url, "serve printed no URL"
            token = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["token"][0]
            base = url.split("/?")[0].rstrip("/")
            with urllib.request.urlopen(f"{base}/api/mood?token={token}", timeout=60) as answer:
                mood = json.load(answer)
        finally:
            server.terminate()
    [human] = mood["speakers"]
    points = human["points"]
    assert len(points) == mood["window"]["messages"] == 22
    angry = [p for p in points if p["primary"] in ("frustrated", "urgent")]
    # The frustrated stretch is the first hour of the evening (before 21:00 local, 10:00 UTC);
    # the last third of the evening has none of it, and the valence there is higher.
    assert len(angry) >= 3
    assert all(p["at"] < "2026-03-02T10:00" for p in angry)
    third = len(points) // 3
    early = sum(p["valence"] for p in points[:third]) / third
    late = sum(p["valence"] for p in points[-third:]) / third
    assert late > early


def test_a_run_in_the_past_reads_nothing_written_after_its_clock(example: Path) -> None:
    # The OpenClaw session's scratchpad entry is stamped 20:12, the daily note runs to 23:07.
    assert main(["--once", "--workspace", str(example), "--now", "2026-03-02T19:42:00+11:00"]) == 0
    text = (example / "SCRATCHPAD.md").read_text()
    assert "## Main" not in text
    for late in ("20:00 Upgrade", "21:52", "23:07", "1.14.4"):
        assert late not in text
