"""Tests for assembler/scratchpad_file.py: the frontmatter, the markers and escaping, reading
and composing the file, the prefix block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import frontmatter
import pytest
from hypothesis import HealthCheck, given, settings
from pads import (
    agent,
    section_texts,
    texts,
)

from assembler.agent_part import encode_sections
from assembler.errors import ScratchpadError
from assembler.handedits import file_edits
from assembler.pad import Scratchpad
from assembler.scratchpad_file import (
    REGION_BEGIN,
    REGION_END,
    compose,
    decode_sections,
    escape_text,
    find_agent_region,
    prefix_block,
    read_scratchpad,
    unescape_text,
)
from assembler.view import check_freshness

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def write_pad(
    path: Path, *, updated: datetime, ttl: int = 30, body: str = "# Pad\nhello\n"
) -> None:
    meta = {
        "updated": updated.isoformat(),
        "expires": (updated + timedelta(minutes=ttl)).isoformat(),
        "ttl_minutes": ttl,
    }
    path.write_text(compose(meta, body))


def test_compose_writes_frontmatter_that_parses_back(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    write_pad(path, updated=NOW)
    post = frontmatter.loads(path.read_text())
    assert list(post.metadata)[:3] == ["updated", "expires", "ttl_minutes"]
    assert isinstance(post.metadata["updated"], str)  # quoted, so it stays ISO with offset
    assert "body_sha256" in post.metadata
    pad = read_scratchpad(path)
    assert pad.expires - pad.updated == timedelta(minutes=30)
    assert pad.body.startswith("# Pad")


def test_check_reports_fresh_stale_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    missing = check_freshness(path, NOW)
    assert missing.code == 2
    assert "does not exist; run 'assemble --once'" in missing.message
    write_pad(path, updated=NOW)
    fresh = check_freshness(path, NOW + timedelta(minutes=10))
    assert (fresh.code, fresh.message.split(":")[0]) == (0, "fresh")
    assert "20m left" in fresh.message
    stale = check_freshness(path, NOW + timedelta(minutes=45))
    assert (stale.code, stale.message.split(":")[0]) == (1, "stale")
    assert "15m ago" in stale.message


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter at all\n",
        "---\nupdated: [unclosed\n---\nbody\n",
        "---\nupdated: 2026-03-02T12:00:00\nexpires: 2026-03-02T12:30:00\n---\nnaive times\n",
        "---\nexpires: 2026-03-02T12:30:00+00:00\n---\nno updated\n",
    ],
)
def test_unusable_files_are_reported_as_unreadable(tmp_path: Path, text: str) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    path.write_text(text)
    with pytest.raises(ScratchpadError, match="run 'assemble --once' to rewrite it"):
        read_scratchpad(path)
    assert check_freshness(path, NOW).code == 2


def test_prefix_block_wraps_a_fresh_body_and_is_empty_when_stale(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    write_pad(path, updated=NOW, body="# Pad\nremember X\n")
    pad = read_scratchpad(path)
    block = prefix_block(pad, NOW)
    assert block == (
        "[Session Scratchpad - your persistent working memory]\n# Pad\nremember X\n"
        "[End Scratchpad]\n"
    )
    assert prefix_block(pad, NOW + timedelta(hours=1)) == ""


@settings(max_examples=300, deadline=None)
@given(section_texts)
def test_any_text_in_any_sections_survives_encode_then_decode(sections: dict[str, str]) -> None:
    states = [agent(name, text) for name, text in sections.items()]

    assert decode_sections(encode_sections(states)) == sections


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(section_texts, texts)
def test_any_text_survives_a_whole_file_with_frontmatter_and_an_auto_part(
    sections: dict[str, str], auto_text: str
) -> None:
    auto = f"# Scratchpad\n\n## Daily Context\n{escape_text(auto_text)}\n\n"
    body = auto + encode_sections([agent(n, t) for n, t in sections.items()])
    text = frontmatter.dumps(frontmatter.Post(body, generator="test", ttl_minutes=30))

    # Decoded from the file's raw text: python-frontmatter's `content` turns "\r\n" into "\n".
    assert decode_sections(text) == sections
    assert frontmatter.loads(text).metadata == {"generator": "test", "ttl_minutes": 30}


@given(texts)
def test_unescape_reverses_escape_for_any_text(text: str) -> None:
    assert unescape_text(escape_text(text)) == text


def test_markers_and_fences_get_one_backslash_and_other_lines_stay_as_they_are() -> None:
    text = '---\n<!-- scratchpad:end section="main" -->\n\\---\n\\n is a newline\n-- not a fence'

    assert escape_text(text) == (
        '\\---\n\\<!-- scratchpad:end section="main" -->\n\\\\---\n\\n is a newline\n-- not a fence'
    )


def test_encoded_sections_have_a_heading_and_markers_inside_the_agent_region() -> None:
    encoded = encode_sections([agent("main", "plan"), agent("goal", "---")])

    assert encoded == (
        f"{REGION_BEGIN}\n"
        "## Goal\n"
        '<!-- scratchpad:begin section="goal" -->\n'
        "\\---\n"
        '<!-- scratchpad:end section="goal" -->\n'
        "\n"
        "## Main\n"
        '<!-- scratchpad:begin section="main" -->\n'
        "plan\n"
        '<!-- scratchpad:end section="main" -->\n'
        f"{REGION_END}\n"
    )


def test_decode_ignores_marker_text_in_the_auto_part_above_the_agent_region() -> None:
    auto = (
        "## Relevant Memories\n"
        '<!-- scratchpad:begin section="goal" -->\nfake\n<!-- scratchpad:end section="goal" -->\n'
        f"{REGION_BEGIN}\nquoted region start\n"
    )
    body = auto + encode_sections([agent("findings", "real")])

    assert decode_sections(body) == {"findings": "real"}


def test_find_agent_region_returns_none_when_the_file_has_none() -> None:
    assert find_agent_region("# Scratchpad\n\nno agent sections\n") is None
    assert find_agent_region(encode_sections([])) == ""


def test_a_section_whose_end_marker_was_deleted_keeps_its_text() -> None:
    body = (
        f"{REGION_BEGIN}\n"
        '<!-- scratchpad:begin section="goal" -->\nfix it\n'
        '<!-- scratchpad:begin section="main" -->\nplan\n<!-- scratchpad:end section="main" -->\n'
        f"{REGION_END}\n"
    )

    assert decode_sections(body) == {"goal": "fix it", "main": "plan"}


def test_an_agent_edit_made_in_the_file_comes_back_through_the_journal(
    pad: Scratchpad,
) -> None:
    pad.write("fix it", section="goal")
    pad.write("port 8080", section="findings")
    rendered_states = list(pad.state().values())
    file_text = "# Scratchpad\n\n" + encode_sections(rendered_states)
    rendered = decode_sections(file_text)

    edited_text = file_text.replace("port 8080", "port 8081\n---\nsee /etc/app")
    edited_text = edited_text.replace("fix it", "")  # emptied by hand, markers kept
    pad.import_file_edits(file_edits(rendered, decode_sections(edited_text)))

    assert pad.read("findings").data["content"] == "port 8081\n---\nsee /etc/app"
    assert pad.read("goal").data["content"] == ""
    reencoded = encode_sections(list(pad.state().values()))
    assert decode_sections(reencoded)["findings"] == "port 8081\n---\nsee /etc/app"
