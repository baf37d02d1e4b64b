"""Tests of assembler/file/delta.py: the difference of two ready blocks, what a session is sent
(the whole block, the changes, or nothing) and the held copies kept in the state folder, which
the agent can forge."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assembler.errors import UnsafePathError
from assembler.file.delta import (
    DELTA_FOOTER,
    HELD_DIR,
    Held,
    HeldCopies,
    diff_blocks,
    plan_copy,
    sections_of,
)

NOW = datetime(2026, 3, 2, 23, 25, tzinfo=UTC)
FINDINGS = [f"- finding {n}: the staging port is {5400 + n}" for n in range(12)]


def block(
    *, mood: str = "neutral (0.44)", findings: list[str] | None = None, age: str = "3h"
) -> str:
    """A ready block as an assembly writes it: header, title line, auto sections, an agent
    section with its age, footer."""
    lines = [
        "[Session Scratchpad - your persistent working memory]",
        "# SCRATCHPAD.md — Valid until 2026-03-02 23:55 UTC, ignore it after that",
        "",
        "## Emotional Context",
        f"- **Primary:** {mood}",
        "- **Valence:** -0.13 (neutral)",
        "",
        "## Active Context",
        "- **Working on:** “the staging deploy” (in api)",
        "",
        f"## Findings (updated {age} ago)",
        *(FINDINGS if findings is None else findings),
        "[End Scratchpad]",
    ]
    return "\n".join(lines) + "\n"


def test_a_block_splits_into_its_top_lines_and_sections_without_header_or_footer() -> None:
    parts = sections_of(block())
    assert [heading for heading, _ in parts] == [
        "",
        "## Emotional Context",
        "## Active Context",
        "## Findings (updated 3h ago)",
    ]
    assert parts[0][1] == [
        "# SCRATCHPAD.md — Valid until 2026-03-02 23:55 UTC, ignore it after that"
    ]
    assert parts[3][1] == FINDINGS


def test_a_section_that_only_aged_is_no_change() -> None:
    assert diff_blocks(block(age="3h"), block(age="just now")) == []


def test_a_changed_line_is_sent_as_that_line_gone_and_its_new_text() -> None:
    moved = [*FINDINGS[:5], "- finding 5: the staging port is 5433", *FINDINGS[6:]]
    [change] = diff_blocks(block(), block(findings=moved))
    assert (change.kind, change.heading) == ("changed", "## Findings (updated 3h ago)")
    assert change.lines == (f"-{FINDINGS[5]}", "+- finding 5: the staging port is 5433")


def test_added_and_removed_sections_are_named_and_an_added_one_is_sent_whole() -> None:
    old = block()
    new = old.replace("## Active Context\n- **Working on:** “the staging deploy” (in api)\n", "")
    new = new.replace("[End Scratchpad]", "## Plan\n1. fix the port\n[End Scratchpad]")
    changes = diff_blocks(old, new)
    assert [(c.kind, c.heading, c.lines) for c in changes] == [
        ("added", "## Plan", ("1. fix the port",)),
        ("removed", "## Active Context", ()),
    ]


def test_a_section_rewritten_through_is_sent_whole_when_that_is_shorter() -> None:
    [change] = diff_blocks(block(), block(findings=["- none yet"]))
    assert (change.kind, change.lines) == ("replaced", ("- none yet",))


def test_the_first_copy_is_the_block_then_the_changes_then_nothing_while_nothing_changed() -> None:
    first = plan_copy(None, block(), "d1", NOW + timedelta(minutes=30), NOW)
    assert (first.kind, first.text) == ("full", block())

    later = NOW + timedelta(minutes=5)
    grown = block(findings=[*FINDINGS, "- finding 12: the fix is in"])
    delta = plan_copy(first.held, grown, "d2", NOW + timedelta(minutes=35), later)
    assert delta.kind == "delta"
    assert delta.text.startswith(
        "[Scratchpad update since 23:25, valid until 00:00: only what changed in your copy;"
    )
    assert delta.text.endswith(DELTA_FOOTER + "\n")
    assert "+- finding 12: the fix is in" in delta.text
    # Only the section that changed: the rest of the block is not repeated.
    assert "Emotional Context" not in delta.text and FINDINGS[0] not in delta.text
    assert len(delta.text) < len(grown) / 3
    assert delta.held == Held(grown, "d2", later, NOW + timedelta(minutes=35))

    same = plan_copy(delta.held, grown, "d2", NOW + timedelta(minutes=40), later)
    assert (same.kind, same.text, same.held) == ("none", "", delta.held)


@pytest.mark.parametrize("why", ["full", "expired", "large"])
def test_the_whole_block_goes_again_after_a_clear_an_expiry_or_when_most_of_it_changed(
    why: str,
) -> None:
    held = Held(block(), "d1", NOW, NOW + timedelta(minutes=30))
    now = NOW + timedelta(minutes=31 if why == "expired" else 1)
    new = block(mood="frustrated (0.71)")
    if why == "large":
        new = block(mood="frustrated", findings=[line + " (moved)" for line in FINDINGS])
    copy = plan_copy(held, new, "d2", None, now, full=why == "full")
    assert (copy.kind, copy.text) == ("full", new)
    assert copy.held == Held(new, "d2", now, None)


def test_an_empty_block_sends_nothing_and_keeps_the_copy_held() -> None:
    held = Held(block(), "d1", NOW, None)
    copy = plan_copy(held, "", "", None, NOW)
    assert (copy.kind, copy.text, copy.held) == ("none", "", held)


# --- The copies sessions hold ----------------------------------------------------------------


def test_a_held_copy_reads_back_per_host_and_session(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    copies = HeldCopies(state, "claude-code")
    held = Held(block(), "d1", NOW, NOW + timedelta(minutes=30))
    copies.put("s1", held)
    assert copies.get("s1") == held
    assert copies.get("s2") is None
    assert HeldCopies(state, "codex").get("s1") is None  # another host's session of that id
    copies.forget("s1")
    assert copies.get("s1") is None


def test_a_session_id_never_names_a_path(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".scratchpad"
    HeldCopies(state, "claude-code").put("../../../outside", Held("x", "d", NOW, None))
    [written] = (state / HELD_DIR).iterdir()
    assert len(written.name) == len("0" * 40 + ".json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]


def test_the_oldest_copies_over_the_limit_are_removed(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    copies = HeldCopies(state, "claude-code", max_held=3)
    for n in range(5):
        copies.put(f"s{n}", Held(f"block {n}", "d", NOW, None))
        path = state / HELD_DIR / copies._name(f"s{n}")
        os.utime(path, ns=(n * 10**9, n * 10**9))  # written in order, whatever the clock says
    assert [copies.get(f"s{n}") is not None for n in range(5)] == [False, False, True, True, True]
    assert len(list((state / HELD_DIR).iterdir())) == 3


@pytest.mark.parametrize(
    "forged",
    [
        b"{not json",
        b"[" * 100_000,
        b"[]",
        json.dumps({"text": 5, "digest": "d", "sent": NOW.isoformat()}).encode(),
        json.dumps({"text": "x", "digest": "d", "sent": "yesterday"}).encode(),
        json.dumps({"text": "x", "digest": "d", "sent": "2026-03-02T10:00:00"}).encode(),
        json.dumps(
            {"text": "x", "digest": "d", "sent": NOW.isoformat(), "valid_until": 7}
        ).encode(),
        b'{"text": "' + b"x" * 300_000 + b'"}',
    ],
)
def test_a_forged_record_is_no_copy_so_the_session_gets_the_whole_block(
    tmp_path: Path, forged: bytes
) -> None:
    state = tmp_path / ".scratchpad"
    copies = HeldCopies(state, "claude-code")
    copies.put("s1", Held("x", "d", NOW, None))
    (state / HELD_DIR / copies._name("s1")).write_bytes(forged)
    assert copies.get("s1") is None
    assert plan_copy(copies.get("s1"), block(), "d1", None, NOW).kind == "full"


def test_links_in_the_held_folder_are_never_followed(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    outside = tmp_path / "outside"
    outside.mkdir()
    copies = HeldCopies(state, "claude-code")
    secret = outside / "secret.json"
    secret.write_text(json.dumps(Held("outside text", "d", NOW, None).to_json()))
    (state / HELD_DIR).mkdir(parents=True)
    (state / HELD_DIR / copies._name("s1")).symlink_to(secret)
    assert copies.get("s1") is None
    copies.put("s1", Held("mine", "d", NOW, None))  # replaces the link, not what it names
    assert json.loads(secret.read_text())["text"] == "outside text"
    assert copies.get("s1") == Held("mine", "d", NOW, None)

    # The folder itself a link: nothing is read or written through it.
    (state / HELD_DIR / copies._name("s1")).unlink()
    (state / HELD_DIR).rmdir()
    (state / HELD_DIR).symlink_to(outside)
    (outside / copies._name("s2")).write_text(json.dumps(Held("o", "d", NOW, None).to_json()))
    assert copies.get("s2") is None
    with pytest.raises(UnsafePathError):
        copies.put("s3", Held("mine", "d", NOW, None))
    assert sorted(p.name for p in outside.iterdir()) == sorted(["secret.json", copies._name("s2")])


def test_lines_whose_times_alone_moved_are_no_change() -> None:
    old = block()
    new = old.replace("Valid until 2026-03-02 23:55", "Valid until 2026-03-02 23:58")
    assert diff_blocks(old, new) == []
    held = Held(old, "d1", NOW, None)
    moved = new.replace("neutral (0.44)", "tired (0.61)")
    copy = plan_copy(held, moved, "d2", NOW + timedelta(minutes=45), NOW + timedelta(minutes=15))
    assert copy.kind == "delta" and "Valid until" not in copy.text
    assert ", valid until 00:10: only what changed" in copy.text


def test_a_named_pipe_planted_as_a_record_is_no_copy_and_is_replaced(tmp_path: Path) -> None:
    state = tmp_path / ".scratchpad"
    copies = HeldCopies(state, "claude-code")
    (state / HELD_DIR).mkdir(parents=True)
    os.mkfifo(state / HELD_DIR / copies._name("s1"))
    assert copies.get("s1") is None  # not opened for a blocking read
    copies.put("s1", Held("mine", "d", NOW, None))
    assert copies.get("s1") == Held("mine", "d", NOW, None)


def test_a_new_digest_with_no_line_changed_sends_nothing_and_keeps_the_copys_validity() -> None:
    held = Held(block(age="3h"), "d1", NOW, NOW + timedelta(minutes=30))
    later = NOW + timedelta(minutes=10)
    copy = plan_copy(held, block(age="just now"), "d2", NOW + timedelta(minutes=40), later)
    assert (copy.kind, copy.text) == ("none", "")
    # The session's copy still says it is valid until NOW + 30 min: past that, a whole one.
    assert copy.held == Held(block(age="just now"), "d2", NOW, NOW + timedelta(minutes=30))
    assert plan_copy(copy.held, block(), "d3", None, NOW + timedelta(minutes=31)).kind == "full"
