"""Tests for assembler/scratchpad_file.py: the frontmatter, the markers and escaping, reading
and composing the file, the prefix block."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import frontmatter
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pads import (
    agent,
    section_texts,
    texts,
)

from assembler.errors import ScratchpadError
from assembler.file.codec import (
    REGION_BEGIN,
    REGION_END,
    compose,
    decode_sections,
    escape_text,
    find_agent_region,
    heading_shift,
    nest_headings,
    plain_frontmatter,
    prefix_block,
    read_scratchpad,
    split_frontmatter,
    unescape_text,
    unnest_headings,
)
from assembler.file.freshness import check_freshness
from assembler.file.records import (
    ASSEMBLY_NAME,
    MAX_ASSEMBLY_BYTES,
    AssemblyState,
    RenderRecord,
    assembly_state_path,
    closest_record,
    file_record,
    read_assembly_state,
    remember_render,
    render_record,
    same_frontmatter,
    write_assembly_state,
)
from assembler.pad.agent_part import encode_sections
from assembler.pad.hand_edits import file_edits
from assembler.pad.sections import Scratchpad

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
TTL = timedelta(minutes=30)  # the default output.ttl_minutes


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
    assert "body_sha256" not in post.metadata  # kept in the state folder, not read by the agent
    pad = read_scratchpad(path)
    assert pad.expires - pad.updated == timedelta(minutes=30)
    assert pad.body.startswith("# Pad")


# Frontmatter lines YAML reads in ways a string reader must not guess: booleans, nulls, octal and
# sexagesimal numbers, timestamps, comments, quotes, keys that are not ours, repeats.
TRICKY_FIELDS = [
    "source: on",
    "source: yes please",
    "source: null",
    "source: ~",
    "ttl_minutes: 012",
    "ttl_minutes: 1:30",
    "ttl_minutes: -5",
    "ttl_minutes: 1_000",
    "updated: 2026-03-02 12:00:00",
    "updated: 2026-03-02T12:00:00+00:00",
    "source: 2026-03-02",
    "source: 1 transcript # and a comment",
    "source: 'it''s quoted'",
    "source: 'unclosed",
    'source: "double"',
    "source: two  spaces inside",
    "source: trailing space ",
    "source:  leading space",
    "source: 1.5e3",
    "source: caf\u00e9 au lait",
    "source: [a, list]",
    "source: - dash",
    "on: 1",
    "title: not ours",
    "ttl_minutes: 30\nttl_minutes: 31",
    "",
]


@pytest.mark.parametrize("field", TRICKY_FIELDS)
def test_the_plain_frontmatter_reader_agrees_with_yaml_or_leaves_it_to_yaml(field: str) -> None:
    text = f"---\nupdated: '2026-03-02T12:00:00+00:00'\n{field}\n---\n\n# Pad\nhello\n"
    plain = plain_frontmatter(text)
    try:
        post = frontmatter.loads(text)
    except (yaml.YAMLError, TypeError):  # TypeError: a key YAML reads as True ("on")
        assert plain is None, field
        return
    assert plain is None or plain == (post.metadata, post.content), field


def test_a_body_with_carriage_returns_is_left_to_the_yaml_reader() -> None:
    text = "---\nttl_minutes: 30\n---\n0\r\n0"
    assert plain_frontmatter(text) is None
    assert frontmatter.loads(text).content == "0\n0"


@given(
    st.text(alphabet=st.sampled_from("ab1 :#'-,;%.()\t\u00e9"), max_size=20),
    st.sampled_from(["updated", "expires", "ttl_minutes", "source", "other"]),
    st.text(max_size=40),
)
@settings(max_examples=300)
def test_any_frontmatter_the_plain_reader_reads_is_read_as_yaml_reads_it(
    value: str, key: str, body: str
) -> None:
    text = f"---\nttl_minutes: 30\n{key}: {value}\n---\n{body}"
    plain = plain_frontmatter(text)
    if plain is not None:
        post = frontmatter.loads(text)
        assert plain == (post.metadata, post.content)


def test_the_frontmatter_compose_writes_is_read_without_a_yaml_parser(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    meta = {
        "updated": NOW.isoformat(timespec="seconds"),
        "expires": (NOW + timedelta(minutes=30)).isoformat(timespec="seconds"),
        "ttl_minutes": 30,
        "source": "2 transcripts, 45 messages; memory 38 chunks",
    }
    path.write_text(compose(meta, "# Pad\nhello\n"))
    assert plain_frontmatter(path.read_text()) == (meta, "# Pad\nhello")
    probe = (
        "import sys; from pathlib import Path\n"
        "from assembler.file.codec import read_scratchpad\n"
        f"pad = read_scratchpad(Path({str(path)!r}))\n"
        "print(pad.meta['source'], 'yaml' in sys.modules, 'frontmatter' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == f"{meta['source']} False False"


def test_a_frontmatter_of_another_form_is_still_read_as_yaml(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    path.write_text(
        "---\nupdated: 2026-03-02T12:00:00+00:00\nexpires: '2026-03-02T12:30:00+00:00'\n"
        "tags: [a, b]\n---\n# Pad\n"
    )
    pad = read_scratchpad(path)
    assert pad.meta["tags"] == ["a", "b"]
    assert pad.expires - pad.updated == timedelta(minutes=30)
    path.write_text("---\nupdated: [unclosed\n---\n# Pad\n")
    with pytest.raises(ScratchpadError, match="broken frontmatter"):
        read_scratchpad(path)


def test_check_reports_fresh_stale_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    missing = check_freshness(path, NOW, TTL)
    assert missing.code == 2
    assert "does not exist; run 'assemble --once'" in missing.message
    write_pad(path, updated=NOW)
    fresh = check_freshness(path, NOW + timedelta(minutes=10), TTL)
    assert (fresh.code, fresh.message.split(":")[0]) == (0, "fresh")
    assert "20m left" in fresh.message
    stale = check_freshness(path, NOW + timedelta(minutes=45), TTL)
    assert (stale.code, stale.message.split(":")[0]) == (1, "stale")
    assert "15m ago" in stale.message


@pytest.mark.parametrize(
    ("updated", "expires", "fresh"),
    [
        (NOW - timedelta(minutes=5), NOW + timedelta(minutes=25), True),
        # The agent's frontmatter: an `expires` far past the TTL counts as updated + TTL...
        (NOW - timedelta(minutes=40), datetime(2999, 1, 1, tzinfo=UTC), False),
        (NOW - timedelta(minutes=5), datetime(2999, 1, 1, tzinfo=UTC), True),
        # ...and a file updated later than the clock is never fresh (as `--once --now 2999`).
        (datetime(2999, 1, 1, tzinfo=UTC), datetime(2999, 1, 1, 0, 30, tzinfo=UTC), False),
        (NOW + timedelta(minutes=2), NOW + timedelta(minutes=32), False),
    ],
)
def test_freshness_is_bounded_by_the_clock_and_the_ttl_whatever_the_file_says(
    tmp_path: Path, updated: datetime, expires: datetime, fresh: bool
) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    path.write_text(compose({"updated": updated.isoformat(), "expires": expires.isoformat()}, "x"))
    pad = read_scratchpad(path)
    result = check_freshness(path, NOW, TTL)
    assert (result.code == 0) is fresh and pad.is_fresh(NOW, TTL) is fresh, result.message
    assert (prefix_block(pad, NOW, TTL) != "") is fresh
    if fresh:
        assert "2999" not in result.message  # the time it is fresh until: updated + TTL at most
    if updated > NOW:
        assert "later than the clock" in result.message


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
    assert check_freshness(path, NOW, TTL).code == 2


def test_prefix_block_wraps_a_fresh_body_and_is_empty_when_stale(tmp_path: Path) -> None:
    path = tmp_path / "SCRATCHPAD.md"
    write_pad(path, updated=NOW, body="# Pad\nremember X\n")
    pad = read_scratchpad(path)
    block = prefix_block(pad, NOW, TTL)
    assert block == (
        "[Session Scratchpad - your persistent working memory]\n# Pad\nremember X\n"
        "[End Scratchpad]\n"
    )
    assert prefix_block(pad, NOW + timedelta(hours=1), TTL) == ""


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


# --- the agent's own headings, nested below the section's --------------------------------

heading_texts = st.lists(
    st.one_of(
        st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 8), st.text(max_size=8)),
        st.sampled_from(["```", "~~~", "````", "    # indented", "#", "#tag", "######", ""]),
        st.text(max_size=12),
    ),
    max_size=8,
).map("\n".join)


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(heading_texts)
def test_nesting_headings_then_unnesting_them_returns_any_text_unchanged(text: str) -> None:
    shift = heading_shift(text)
    assert unnest_headings(nest_headings(text, shift), shift) == text
    # A rendered section decodes to the text written, whatever its headings.
    body = encode_sections([agent("main", text)])
    assert decode_sections(body) == {"main": text}


def test_the_agents_top_headings_sit_one_level_below_the_sections_heading() -> None:
    text = "## Plan\n1. deploy\n\n### Detail\n- x\n\n## Findings\n- y"
    body = encode_sections([agent("main", text)])
    assert '<!-- scratchpad:begin section="main" headings="+1" -->' in body
    assert "## Main\n" in body and "\n### Plan\n" in body and "\n#### Detail\n" in body
    assert "\n## Plan" not in body and "\n## Findings" not in body
    assert heading_shift("# Title\n## Sub") == 2
    assert heading_shift("### Already nested") == 0  # nothing collides: shown as written
    assert heading_shift("no headings at all") == 0


def test_a_hash_comment_in_a_code_block_is_no_heading_and_is_never_moved() -> None:
    text = "## Steps\n```sh\n# install the chart\nhelm upgrade api\n```\n~~~\n## not either\n~~~"
    nested = nest_headings(text, heading_shift(text))
    assert nested.startswith("### Steps\n```sh\n# install the chart\n")
    assert "~~~\n## not either\n~~~" in nested


def test_a_rendered_nested_heading_imported_again_does_not_move_deeper() -> None:
    shown = encode_sections([agent("main", "## Plan\n- a")])
    # The file read back and rendered again, as each run does: the heading stays put.
    for _ in range(3):
        text = decode_sections(shown)["main"]
        assert text == "## Plan\n- a"
        shown = encode_sections([agent("main", text)])
    assert "### Plan" in shown and "#### Plan" not in shown


# --- the record of the last assembly, in the state folder ----------------------------------


def record(text: str, sections: dict[str, str] | None = None) -> RenderRecord:
    return render_record(text, sections or {}, carried=False)


def test_the_render_a_file_came_from_is_found_by_body_then_by_frontmatter() -> None:
    first = compose({"updated": "09:00"}, "# one\n")
    second = compose({"updated": "09:05"}, "# two\n")
    state = AssemblyState([record(second), record(first)])

    def found(text: str) -> RenderRecord | None:
        front, body = split_frontmatter(text)
        return file_record(state, front, body, None)

    assert found(second) == record(second)  # unedited
    assert found(first) == record(first)  # an older copy, unedited
    assert found(first.replace("# one", "# one, edited")) == record(first)
    assert found(second.replace("# two", "# two, edited")) == record(second)
    # Edited frontmatter or two renders with one frontmatter: not known, never guessed.
    assert found(second.replace("09:05", "10:00").replace("# two", "# 2")) is None
    twin = compose({"updated": "09:05"}, "# two, again\n")
    state.renders.insert(0, record(twin))
    assert found(twin.replace("again", "edited")) is None


def test_of_two_renders_of_one_second_the_edit_is_read_against_the_one_it_started_from(
    tmp_path: Path,
) -> None:
    older = compose({"updated": "09:05"}, "# Plan\n- a\n- b\n- c\n- d\n")
    newer = compose({"updated": "09:05"}, "# Plan\n- a\n- B rewritten\n- C rewritten\n- d\n")
    for text in (older, newer):
        assert remember_render(tmp_path, text)
    state = AssemblyState([record(newer), record(older)])
    front, body = split_frontmatter(older.replace("- d", "- d, edited"))

    assert file_record(state, front, body, None) is None  # not told apart by the frontmatter
    assert same_frontmatter(state, front) == [record(newer), record(older)]
    assert closest_record(tmp_path, same_frontmatter(state, front), body) == record(older)
    _, newer_body = split_frontmatter(newer.replace("- a", "- a, edited"))
    assert closest_record(tmp_path, same_frontmatter(state, front), newer_body) == record(newer)
    # Without the kept copies there is nothing to compare with: not known.
    assert closest_record(tmp_path / "elsewhere", same_frontmatter(state, front), body) is None


def test_a_missing_corrupt_or_forged_record_of_the_last_assembly_is_not_trusted(
    tmp_path: Path,
) -> None:
    state_dir = tmp_path / ".scratchpad"
    assert read_assembly_state(state_dir) is None
    state_dir.mkdir()
    path = assembly_state_path(state_dir)
    for junk in (b"{not json", b"[]", b'{"version": 99}', b"\xff\xfe", b"[" * 100_000):
        path.write_bytes(junk)
        assert read_assembly_state(state_dir) is None
    forged = {
        "version": 1,
        "renders": [
            {"frontmatter": "x", "body_sha256": 5, "auto_sha256": "", "agent_sections": {}},
            {"frontmatter": "", "body_sha256": "a", "auto_sha256": "", "agent_sections": [1]},
            {"frontmatter": "", "body_sha256": "b", "auto_sha256": "", "agent_sections": {}},
        ],
        "pending": "nonsense",
        "diagnostics": ["not", "a", "mapping"],
    }
    path.write_text(json.dumps(forged))
    state = read_assembly_state(state_dir)
    assert state is not None and [r.body_sha256 for r in state.renders] == ["b"]
    assert state.pending is None and state.diagnostics == {}
    path.write_bytes(b" " * (MAX_ASSEMBLY_BYTES + 1))
    assert read_assembly_state(state_dir) is None


def test_a_link_in_place_of_the_record_is_never_read_through(tmp_path: Path) -> None:
    state_dir = tmp_path / ".scratchpad"
    state_dir.mkdir()
    outside = tmp_path / "outside.json"
    write_assembly_state(tmp_path, AssemblyState([record(compose({"a": 1}, "x"))]))
    (tmp_path / ASSEMBLY_NAME).rename(outside)
    assembly_state_path(state_dir).symlink_to(outside)
    assert read_assembly_state(state_dir) is None
    with pytest.raises(OSError):
        write_assembly_state(state_dir, AssemblyState())
    assert json.loads(outside.read_text())["version"] == 1  # untouched


def test_a_file_of_an_earlier_version_is_read_with_the_hashes_in_its_frontmatter() -> None:
    text = compose({"updated": "x", "body_sha256": "f" * 64, "agent_sections": {"main": "ab"}}, "b")
    front, body = split_frontmatter(text)
    meta = frontmatter.loads(text).metadata
    found = file_record(None, front, body, meta)
    assert found is not None and found.agent_sections == {"main": "ab"}
    assert file_record(AssemblyState([record("---\ny: 1\n---\nz")]), front, body, meta) is None


def test_only_what_must_survive_a_crash_waits_for_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    text = compose({"a": 1}, "x")
    state = AssemblyState([record(text)])

    write_assembly_state(tmp_path, state)  # the record before a swap: file and folder
    assert len(synced) == 2
    write_assembly_state(tmp_path, state, durable=False)  # after it: renamed into place only
    assert remember_render(tmp_path, text)  # copies the next run can do without
    assert len(synced) == 2
    assert read_assembly_state(tmp_path) == state
    assert (tmp_path / "rendered.md").read_text() == text
