from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import frontmatter
import pytest

from assembler.errors import ScratchpadError
from assembler.render import (
    Item,
    Renderer,
    Section,
    check_freshness,
    compose,
    fit_sections,
    prefix_block,
    read_scratchpad,
)
from assembler.tokens import estimate_tokens

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def section(name: str, *items: Item) -> Section:
    return Section(name, name.title(), tuple(items))


def test_sections_render_from_the_bundled_templates() -> None:
    text = Renderer().section(section("mood", Item("frustrated (0.71)", "Primary")))
    assert text == "## Mood\n- **Primary:** frustrated (0.71)\n"


def test_a_user_template_folder_overrides_the_bundled_one(tmp_path: Path) -> None:
    (tmp_path / "sections").mkdir()
    (tmp_path / "sections" / "mood.md.j2").write_text("### {{ section.title }}!\n")
    renderer = Renderer(tmp_path)
    assert renderer.section(section("mood", Item("x"))) == "### Mood!\n"
    # Sections without an override still use the bundled default.
    assert renderer.section(section("other", Item("y"))) == "## Other\n- y\n"


def test_everything_fits_when_under_the_cap() -> None:
    sections = [section("a", Item("one", "A")), section("b", Item("two", "B"))]
    fitted = fit_sections(sections, Renderer(), estimate_tokens, cap=500, section_caps={})
    assert fitted.dropped == []
    assert [s.name for s in fitted.sections] == ["a", "b"]


def test_over_the_cap_the_highest_priority_numbers_go_first() -> None:
    sections = [
        section("a", Item("keep me " * 5, "Vital", 1), Item("extra " * 20, "Extra", 5)),
        section("b", Item("medium " * 10, "Medium", 3)),
    ]
    renderer = Renderer()
    full = sum(estimate_tokens(renderer.section(s)) for s in sections)
    fitted = fit_sections(sections, renderer, estimate_tokens, cap=full - 5, section_caps={})
    assert fitted.dropped == ["a: Extra"]
    assert fitted.tokens <= full - 5
    tight = fit_sections(sections, renderer, estimate_tokens, cap=25, section_caps={})
    assert tight.dropped == ["a: Extra", "b: Medium"]
    assert [s.name for s in tight.sections] == ["a"]  # b lost its only item, so b is gone
    assert tight.tokens <= 25


def test_a_section_left_with_only_its_heading_item_is_dropped_whole() -> None:
    daily = section(
        "daily",
        Item("memory/2026-03-02.md (tail)", "From", 1, heading=True),
        Item("- 23:07 long day " * 6, None, 5),
    )
    other = section("other", Item("keep " * 5, "Keep", 1))
    renderer = Renderer()
    cap = estimate_tokens(renderer.section(other)) + 2
    fitted = fit_sections([daily, other], renderer, estimate_tokens, cap=cap, section_caps={})
    assert [s.name for s in fitted.sections] == ["other"]
    assert fitted.dropped[-1] == "daily: From"
    assert any(d.startswith("daily: - 23:07") for d in fitted.dropped)


def test_a_section_cap_trims_only_that_section() -> None:
    lines = [Item(f"line {i} " * 4, None, 10 - i) for i in range(8)]
    sections = [section("daily", *lines), section("other", Item("x " * 30, "Other", 9))]
    fitted = fit_sections(
        sections, Renderer(), estimate_tokens, cap=1000, section_caps={"daily": 30}
    )
    daily = fitted.sections[0]
    assert estimate_tokens(fitted.texts[0]) <= 30
    assert daily.items[-1].text.startswith("line 7")  # the lowest number stays longest
    assert fitted.sections[1].items[0].label == "Other"
    assert all(d.startswith("daily: line") for d in fitted.dropped)


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
