from __future__ import annotations

from pathlib import Path

from assembler.file.render import Item, Renderer, Section, fit_sections
from assembler.tokens import estimate_tokens


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


def test_a_shortenable_line_is_cut_at_a_word_before_it_is_dropped() -> None:
    lines = [
        Item("best line, whole and short", None, 3),
        Item("second line " + "with many more words to say " * 4, None, 4),
        Item("third line, the weakest " + "of them all " * 5, None, 5),
    ]
    renderer = Renderer()
    full = estimate_tokens(renderer.section(section("memories", *lines)))
    caps = {"memories": full - 12}
    cut = fit_sections(
        [section("memories", *lines)],
        renderer,
        estimate_tokens,
        cap=1000,
        section_caps=caps,
        shortest={"memories": 30},
    )
    texts = [item.text for item in cut.sections[0].items]
    # The weakest line is tried first: cut as little as fits, it stays.
    assert texts[:2] == [lines[0].text, lines[1].text]
    assert texts[2].startswith("third line") and texts[2].endswith("…")
    assert cut.dropped == []
    # When no cut of a line down to its shortest fits, it goes, and the next one is cut.
    tight = fit_sections(
        [section("memories", *lines)],
        renderer,
        estimate_tokens,
        cap=1000,
        section_caps={"memories": full - 30},
        shortest={"memories": 40},
    )
    kept = [item.text for item in tight.sections[0].items]
    assert kept[0] == lines[0].text and kept[1].endswith("…") and len(kept) == 2
    assert len(tight.dropped) == 1 and tight.dropped[0].startswith("memories: third line")
    # Without `shortest` nothing is cut: lines are dropped whole, as for every other section.
    whole = fit_sections(
        [section("memories", *lines)], renderer, estimate_tokens, cap=1000, section_caps=caps
    )
    assert all(not item.text.endswith("…") for item in whole.sections[0].items)
