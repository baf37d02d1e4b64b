"""Parked observations (assembler/observations.py): put, every read mode, TTL, turns, references."""

from __future__ import annotations

import hashlib
import re
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler.config.files import validate
from assembler.errors import ObservationError
from assembler.observations import slices as observation_reads
from assembler.observations import store as observations
from assembler.observations.store import NOTE, ObservationStore, store_for

T0 = datetime(2026, 4, 26, 10, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> ObservationStore:
    opened = ObservationStore(tmp_path / ".scratchpad" / "observations.sqlite", clock=clock)
    opened.start_turn("turn-1")
    return opened


def log_text(lines: int) -> str:
    return (
        "".join(
            f"INFO 2026-04-26 10:{i // 60 % 60:02d}:{i % 60:02d} event number {i}\n"
            for i in range(lines)
        )
        + "ERROR 2026-04-26 23:59:59 LAST_CRITICAL_EVENT\n"
    )


def lines_of(text: str) -> list[str]:
    """The lines as the store numbers them: split after each newline, endings kept."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


# -- put -----------------------------------------------------------------------------------------


def test_an_observation_under_the_threshold_passes_through_unchanged(
    store: ObservationStore,
) -> None:
    small = {"ok": True, "content": "x" * 4000, "path": "/tmp/a.txt"}
    assert store.put(small, step=1) is small
    assert store.entries() == []  # recorded for {{step1...}}, but not parked


def test_a_small_observation_with_a_step_is_recorded_whole_so_references_resolve(
    store: ObservationStore, clock: Clock
) -> None:
    small = {"ok": True, "content": "hello " * 500, "path": "/tmp/a.txt", "bytes": 3000}
    assert store.put(small, step=1) is small
    assert store.put("plain text", step=2) == "plain text"
    assert store.put({"count": 3, "names": ["a", "b"]}, step=3) == {
        "count": 3,
        "names": ["a", "b"],
    }
    resolved = store.resolve_references(
        {
            "content": "{{step1.content}}",
            "where": "{{step1.path}}",
            "size": "{{step1.bytes}}",
            "text": "{{step2.content}}",
            "count": "{{step3.count}}",
        }
    )
    assert resolved == {
        "content": "hello " * 500,
        "where": "/tmp/a.txt",
        "size": 3000,
        "text": "plain text",
        "count": 3,
    }
    # Same TTL as a parked one: after it, the reference is to nothing.
    clock.advance(hours=1, seconds=1)
    with pytest.raises(ObservationError, match="no observations of any step yet"):
        store.resolve_references("{{step1.content}}")


def test_a_small_observation_without_a_step_is_not_stored(store: ObservationStore) -> None:
    store.put("tiny")
    (count,) = store._db.execute("SELECT COUNT(*) FROM entries").fetchone()
    assert count == 0


def test_a_small_observation_parked_on_request_says_so_in_its_note(
    store: ObservationStore,
) -> None:
    synthetic = store.put("tiny", force=True)
    assert synthetic["summary"] == "tiny"
    assert synthetic["_note"] != NOTE
    assert synthetic["_note"].startswith("Observation saved in scratchpad as asked")
    assert "under the 4096-byte threshold" in synthetic["_note"]
    assert "Large" not in synthetic["_note"]
    assert store.put("y" * 5000)["_note"] == NOTE


def test_a_large_observation_becomes_the_seeds_synthetic_observation(
    store: ObservationStore,
) -> None:
    text = log_text(3000)
    synthetic = store.put(
        {"ok": True, "content": text, "path": "/tmp/big_log.txt", "encoding": "utf-8"},
        step=1,
        executor="fs_read",
    )
    omitted = len(text) - 1000
    assert synthetic["ok"] is True
    assert re.fullmatch(r"[0-9a-f]{16}", synthetic["scratchpad_id"])
    assert synthetic["size_bytes"] == len(text.encode())
    assert synthetic["kind"] == "text"
    assert synthetic["summary"] == (
        f"{text[:500]}\n[... {omitted} characters omitted ...]\n{text[-500:]}"
    )
    assert synthetic["metadata"] == {"path": "/tmp/big_log.txt", "encoding": "utf-8"}
    assert synthetic["_note"] == NOTE
    assert synthetic["lines"] == 3001
    (entry,) = store.entries()
    assert (entry.step, entry.executor, entry.turn_id) == (1, "fs_read", "turn-1")


def test_the_omitted_count_is_in_characters_even_for_multibyte_and_astral_text(
    store: ObservationStore,
) -> None:
    text = "é" * 700 + "😀" * 900 + "日本" * 400
    synthetic = store.put(text)
    assert synthetic["size_bytes"] == len(text.encode("utf-8"))
    assert f"[... {len(text) - 1000} characters omitted ...]" in synthetic["summary"]
    assert synthetic["summary"].startswith("é" * 500)
    assert synthetic["summary"].endswith("日本" * 250)


def test_a_parked_text_no_longer_than_head_and_tail_is_summarised_whole(
    store: ObservationStore,
) -> None:
    text = "short but forced\n" * 10
    synthetic = store.put(text, force=True)
    assert synthetic["summary"] == text
    assert "omitted" not in synthetic["summary"]


def test_the_threshold_counts_bytes_of_json_and_is_configurable(tmp_path: Path) -> None:
    config = validate(
        {"observations": {"threshold_bytes": 100, "ttl": "2h", "summary_chars": 10}},
        source=None,
        workspace=tmp_path,
    )
    with store_for(config) as small_store:
        assert small_store.put({"content": "a" * 60}) == {"content": "a" * 60}
        # 30 characters of three bytes each: 90 bytes of content, over 100 with the JSON.
        synthetic = small_store.put({"content": "€" * 30})
        assert synthetic["summary"] == f"{'€' * 10}\n[... 10 characters omitted ...]\n{'€' * 10}"
        (entry,) = small_store.entries()
        assert entry.expires - entry.created == timedelta(hours=2)
    assert (tmp_path / ".scratchpad" / "observations.sqlite").is_file()


def test_bad_observation_settings_are_config_errors(tmp_path: Path) -> None:
    from assembler.errors import ConfigError

    with pytest.raises(ConfigError) as problem:
        validate(
            {"observations": {"threshold_bytes": -1, "ttl": "0s"}}, source=None, workspace=tmp_path
        )
    assert "observations.threshold_bytes" in str(problem.value)
    assert "observations.ttl" in str(problem.value)


def test_a_binary_is_summarised_by_size_and_sha256(store: ObservationStore) -> None:
    data = bytes(range(256)) * 40
    synthetic = store.put({"content": data, "path": "/tmp/a.zip", "encoding": "binary"})
    digest = hashlib.sha256(data).hexdigest()
    assert synthetic["summary"] == f"[BINARY: {len(data)} bytes, sha256={digest}]"
    assert synthetic["kind"] == "binary" and synthetic["size_bytes"] == len(data)
    assert synthetic["metadata"] == {"path": "/tmp/a.zip", "encoding": "binary"}


def test_a_mapping_without_content_keeps_its_longest_text_and_names_the_field(
    store: ObservationStore,
) -> None:
    synthetic = store.put({"status": 200, "body": "b" * 5000, "url": "https://x"}, step=2)
    assert synthetic["field"] == "body"
    assert synthetic["metadata"] == {"status": 200, "url": "https://x"}
    assert store.read(synthetic["scratchpad_id"], "full").text == "b" * 5000


# -- reads ---------------------------------------------------------------------------------------


@pytest.fixture
def parked(store: ObservationStore) -> tuple[str, str]:
    text = log_text(3000)
    return store.put(text, step=1)["scratchpad_id"], text


def test_head_tail_and_range_default_to_2000_characters(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, text = parked
    assert store.read(entry_id).text == text[:2000]
    assert store.read(entry_id, "tail").text == text[-2000:]
    assert store.read(entry_id, "range", start=5000).text == text[5000:7000]
    assert store.read(entry_id, "head", n=10).text == text[:10]
    assert store.read(entry_id, "tail", n=10).text == text[-10:]
    middle = store.read(entry_id, "range", start=100, end=250)
    assert middle.text == text[100:250]
    assert middle.to_dict()["next_start"] == 250
    assert store.read(entry_id, "full").text == text


def test_a_range_past_the_end_is_clamped_and_a_start_past_it_is_an_error(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, text = parked
    assert store.read(entry_id, "range", start=len(text) - 5, end=len(text) + 99).text == text[-5:]
    with pytest.raises(ObservationError, match="past the end"):
        store.read(entry_id, "range", start=len(text) + 1)
    with pytest.raises(ObservationError, match="start must not be after end"):
        store.read(entry_id, "range", start=10, end=5)
    with pytest.raises(ObservationError, match="count from 0"):
        store.read(entry_id, "range", start=-3)


def test_lines_are_numbered_from_one_and_inclusive(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, text = parked
    lines = lines_of(text)
    found = store.read(entry_id, "lines", start=2, end=4)
    assert found.text == "".join(lines[1:4])
    assert (found.first_line, found.last_line) == (2, 4)
    assert store.read(entry_id, "lines", start=2999, end=5000).text == "".join(lines[2998:])
    assert store.read(entry_id, "lines", start=10, n=3).text == "".join(lines[9:12])
    with pytest.raises(ObservationError, match="has 3001 lines"):
        store.read(entry_id, "lines", start=3002)


def test_grep_lists_matching_lines_with_context_and_line_numbers(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, _ = parked
    found = store.read(entry_id, "grep", pattern=r"number (10|12|40)$", context=1)
    assert found.text == "\n".join(
        [
            "10-INFO 2026-04-26 10:00:09 event number 9",
            "11:INFO 2026-04-26 10:00:10 event number 10",
            "12-INFO 2026-04-26 10:00:11 event number 11",
            "13:INFO 2026-04-26 10:00:12 event number 12",
            "14-INFO 2026-04-26 10:00:13 event number 13",
            "--",
            "40-INFO 2026-04-26 10:00:39 event number 39",
            "41:INFO 2026-04-26 10:00:40 event number 40",
            "42-INFO 2026-04-26 10:00:41 event number 41",
        ]
    )
    assert found.matches == 3 and found.shown == 3
    assert [h["line"] for h in found.hits if h["match"]] == [11, 13, 41]


def test_grep_stops_listing_at_max_matches_but_counts_them_all(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, _ = parked
    found = store.read(entry_id, "grep", pattern="event", context=0, max_matches=5)
    assert found.matches == 3000 and found.shown == 5
    assert len(found.text.splitlines()) == 5
    assert "listed the first 5" in found.position()
    insensitive = store.read(entry_id, "grep", pattern="last_critical", ignore_case=True)
    assert insensitive.matches == 1
    assert [h["line"] for h in insensitive.hits] == [2999, 3000, 3001]  # two lines of context


def test_grep_shows_a_very_long_line_as_a_window_around_the_match(
    store: ObservationStore,
) -> None:
    line = "a" * 5000 + "NEEDLE" + "b" * 5000
    entry_id = store.put(line + "\nsecond\n")["scratchpad_id"]
    found = store.read(entry_id, "grep", pattern="NEEDLE", context=0)
    assert "NEEDLE" in found.text
    assert re.search(r"\[\.\.\. \d+ characters omitted \.\.\.\]", found.text)
    assert len(found.text) < 1200


def test_a_bad_pattern_is_a_clear_error(store: ObservationStore, parked: tuple[str, str]) -> None:
    entry_id, _ = parked
    with pytest.raises(ObservationError, match=r"pattern '\(' is not a valid regular expression"):
        store.read(entry_id, "grep", pattern="(")
    with pytest.raises(ObservationError, match="put a backslash before special characters"):
        store.read(entry_id, "grep", pattern="([")
    with pytest.raises(ObservationError, match="needs a pattern"):
        store.read(entry_id, "grep")


def test_grep_answers_the_reviewed_nested_quantifier_at_once(store: ObservationStore) -> None:
    # `(a+)+$` on lines of a's ending in '!' never returned with `re`; `regex` sees through it.
    entry_id = store.put(("a" * 40 + "!\n") * 200)["scratchpad_id"]
    found = store.read(entry_id, "grep", pattern="(a+)+$")
    assert found.matches == 0
    # Every line searched, within the grep's own time limit (past it, the read raises).
    assert ": 0 matching lines of 200;" in found.position()


def test_grep_stops_a_backtracking_pattern_at_its_time_limit_with_a_clear_error(
    store: ObservationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observation_reads, "GREP_TIMEOUT_SECONDS", 0.3)
    monkeypatch.setattr(observation_reads, "GREP_SECONDS_PER_LINE", 0.0)
    entry_id = store.put(("a" * 40 + "!\n") * 200)["scratchpad_id"]
    with pytest.raises(ObservationError) as slow:
        store.read(entry_id, "grep", pattern="(a|aa)+$")
    message = str(slow.value)
    assert message.startswith("pattern '(a|aa)+$' took too long")
    assert "stopped at line 1 of 200 after its 0.3 s limit" in message
    assert "simplify it (nested quantifiers such as (a+)+ backtrack exponentially)" in message


def test_grep_of_a_plain_word_needs_no_time_limit(
    store: ObservationStore, parked: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no time at all, a pattern with special characters stops at once; a literal (which
    # cannot backtrack) is searched without the limit's per-line cost.
    monkeypatch.setattr(observation_reads, "GREP_TIMEOUT_SECONDS", 0.0)
    monkeypatch.setattr(observation_reads, "GREP_SECONDS_PER_LINE", 0.0)
    entry_id, _ = parked
    assert store.read(entry_id, "grep", pattern="LAST_CRITICAL EVENT").matches == 0
    assert store.read(entry_id, "grep", pattern="LAST_CRITICAL_EVENT").matches == 1
    with pytest.raises(ObservationError, match="took too long"):
        store.read(entry_id, "grep", pattern="LAST_CRITICAL_EVEN.")


def test_unknown_modes_and_ids_are_explained(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, _ = parked
    with pytest.raises(ObservationError, match="use one of full, head, tail, range, lines, grep"):
        store.read(entry_id, "middle")
    with pytest.raises(ObservationError, match="No observation with scratchpad_id 'nope'"):
        store.read("nope")
    with pytest.raises(ObservationError, match="give a positive number"):
        store.read(entry_id, "head", n=0)


def test_a_binary_is_read_by_byte_ranges_and_not_by_lines(store: ObservationStore) -> None:
    data = bytes(range(256)) * 40
    entry_id = store.put(data)["scratchpad_id"]
    assert store.read(entry_id).data == data[:2000]
    assert store.read(entry_id, "tail", n=7).data == data[-7:]
    found = store.read(entry_id, "range", start=300, end=310)
    assert found.data == data[300:310]
    assert found.to_dict()["unit"] == "bytes"
    assert found.to_dict()["content_base64"] == "LC0uLzAxMjM0NQ=="
    assert store.read(entry_id, "full").data == data
    for mode in ("lines", "grep"):
        with pytest.raises(ObservationError, match="is binary"):
            store.read(entry_id, mode, pattern="x")


def test_a_slice_without_its_body_keeps_only_where_it_sits(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, _ = parked
    head = store.read(entry_id, "head", n=20).to_dict(body=False)
    assert "content" not in head and "content_base64" not in head
    assert (head["start"], head["end"], head["next_start"]) == (0, 20, 20)
    assert head["position"].startswith(f"scratchpad {entry_id}: characters 0-20 of ")
    grep = store.read(entry_id, "grep", pattern="number 12$", context=1).to_dict(body=False)
    assert grep["hits"] == [
        {"line": 12, "match": False},
        {"line": 13, "match": True},
        {"line": 14, "match": False},
    ]
    assert grep["matches"] == 1 and "content" not in grep
    binary = store.read(store.put(bytes(5000))["scratchpad_id"]).to_dict(body=False)
    assert "content_base64" not in binary and binary["end"] == 2000


def test_a_binary_slice_is_shown_to_agents_as_an_xxd_style_dump() -> None:
    dump = observation_reads.hexdump(b"PK\x03\x04hello, zip!\x00\xff" + bytes(range(5)), 0x20)
    assert dump.splitlines() == [
        "00000020: 504b 0304 6865 6c6c 6f2c 207a 6970 2100  PK..hello, zip!.",
        "00000030: ff00 0102 0304                           ......",
    ]


def test_max_chars_refuses_a_read_larger_than_an_agent_may_get(
    store: ObservationStore, parked: tuple[str, str]
) -> None:
    entry_id, text = parked
    with pytest.raises(ObservationError, match="max_read_chars"):
        store.read(entry_id, "full", max_chars=1000)
    assert store.read(entry_id, "head", n=1000, max_chars=1000).text == text[:1000]


# -- unicode and block edges ---------------------------------------------------------------------


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(alphabet=st.sampled_from("ab\né€😀𝄞\r日"), min_size=1, max_size=80),
    cut=st.tuples(st.integers(0, 90), st.integers(0, 90)),
)
def test_any_slice_at_any_block_edge_equals_the_text_slice(
    store: ObservationStore, monkeypatch: pytest.MonkeyPatch, text: str, cut: tuple[int, int]
) -> None:
    # Blocks of 7 characters put block edges between and after multi-byte and astral chars.
    monkeypatch.setattr(observations, "BLOCK_UNITS", 7)
    entry_id = store.put(text, force=True)["scratchpad_id"]
    lo, hi = sorted(cut)
    lo = min(lo, len(text) - 1)
    assert store.read(entry_id, "range", start=lo, end=hi).text == text[lo:hi]
    assert store.read(entry_id, "head", n=hi or 1).text == text[: hi or 1]
    assert store.read(entry_id, "tail", n=hi or 1).text == text[-(hi or 1) :]
    assert store.read(entry_id, "full").text == text
    lines = lines_of(text)
    first = min(lo + 1, len(lines))
    last = max(first, min(hi, len(lines)))
    found = store.read(entry_id, "lines", start=first, end=last)
    assert found.text == "".join(lines[first - 1 : last])
    grep = store.read(entry_id, "grep", pattern="😀", context=0, max_matches=1000)
    expected = [n for n, line in enumerate(lines, 1) if "😀" in line]
    assert [h["line"] for h in grep.hits] == expected


def test_a_slice_reads_only_the_blocks_it_overlaps(
    store: ObservationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observations, "BLOCK_UNITS", 1000)
    text = log_text(2000)  # about 90 blocks
    entry_id = store.put(text)["scratchpad_id"]
    store.blocks_read = 0
    assert store.read(entry_id, "range", start=50_500, end=50_600).text == text[50_500:50_600]
    assert store.blocks_read == 1
    store.blocks_read = 0
    assert store.read(entry_id, "range", start=50_990, end=51_010).text == text[50_990:51_010]
    assert store.blocks_read == 2
    store.blocks_read = 0
    assert store.read(entry_id, "lines", start=1500, end=1500).text == lines_of(text)[1499]
    assert store.blocks_read <= 4  # the start's block, the end's, and the one or two read


def test_a_50_mb_observation_is_read_in_slices_without_loading_it_whole(
    store: ObservationStore,
) -> None:
    line = '{"ts": "2026-04-26T10:00:00Z", "level": "INFO", "msg": "request served", "n": %d}\n'
    text = "".join(line % i for i in range(640_000))
    assert len(text) > 50_000_000
    synthetic = store.put({"content": text, "path": "/var/log/app.jsonl"}, step=1)
    entry_id = synthetic["scratchpad_id"]
    assert f"[... {len(text) - 1000} characters omitted ...]" in synthetic["summary"]
    middle = len(text) // 2
    expected = (text[:2000], text[-2000:], text[middle : middle + 3000], lines_of(text[-200:])[-1])
    del text
    store.blocks_read = 0
    tracemalloc.start()
    try:
        head = store.read(entry_id, "head").text
        tail = store.read(entry_id, "tail").text
        part = store.read(entry_id, "range", start=middle, n=3000).text
        last = store.read(entry_id, "lines", start=640_000, end=640_000).text
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (head, tail, part, last) == expected
    assert store.blocks_read <= 8  # of about 53 blocks
    assert peak < 8 * 1024 * 1024  # a few 1 MiB blocks, never the 50 MB


# -- lifecycle -----------------------------------------------------------------------------------


def test_an_entry_expires_after_its_ttl_and_gc_removes_it(
    store: ObservationStore, clock: Clock
) -> None:
    short = store.put("x" * 5000)["scratchpad_id"]
    long = store.put("y" * 5000, ttl=timedelta(hours=3))["scratchpad_id"]
    clock.advance(minutes=59)
    assert store.read(short, n=1).text == "x"
    clock.advance(minutes=2)
    with pytest.raises(ObservationError, match="expired at 2026-04-26T11:00:00"):
        store.read(short)
    assert [e.id for e in store.entries()] == [long]
    report = store.gc()
    assert report.removed == 1 and report.freed_bytes > 0
    assert store.gc().removed == 0
    with pytest.raises(ObservationError, match="never stored, or it expired"):
        store.read(short)
    assert store.read(long, n=1).text == "y"


def test_starting_a_turn_collects_expired_entries(store: ObservationStore, clock: Clock) -> None:
    store.put("x" * 5000)
    clock.advance(hours=2)
    store.start_turn("turn-2")
    assert store.entries(all_turns=True) == []
    row = store._db.execute("SELECT COUNT(*) FROM blocks").fetchone()
    assert row == (0,)


def test_entries_are_visible_only_to_their_own_turn_unless_asked_for(
    store: ObservationStore,
) -> None:
    entry_id = store.put("x" * 5000)["scratchpad_id"]
    assert store.current_turn() == "turn-1"
    store.start_turn("turn-2")
    with pytest.raises(ObservationError, match="belongs to turn 'turn-1', not to this turn"):
        store.read(entry_id)
    assert store.entries() == []
    assert store.read(entry_id, n=3, any_turn=True).text == "xxx"
    assert store.read(entry_id, n=3, turn="turn-1").text == "xxx"
    assert [e.id for e in store.entries(turn="turn-1")] == [entry_id]


# -- {{stepN.field}} references ------------------------------------------------------------------


def test_a_reference_resolves_to_the_full_stored_content_not_the_summary(
    store: ObservationStore,
) -> None:
    body = log_text(500)
    store.put({"ok": True, "content": body, "path": "/tmp/out.json", "bytes": 14000}, step=1)
    resolved = store.resolve_references(
        {
            "path": "/tmp/out.txt",
            "content": "{{step1.content}}",
            "note": "copied from {{ step1.path }}",
            "sizes": ["{{step1.bytes}}"],
        }
    )
    assert resolved["content"] == body
    assert resolved["note"] == "copied from /tmp/out.json"
    assert resolved["sizes"] == [14000]


def test_a_reference_to_a_step_that_passed_through_uses_the_inline_observation(
    store: ObservationStore,
) -> None:
    resolved = store.resolve_references(
        {"q": "{{step2.title}}"}, inline={2: {"ok": True, "title": "small"}}
    )
    assert resolved == {"q": "small"}


def test_a_reference_to_a_missing_step_or_field_is_a_clear_error(
    store: ObservationStore,
) -> None:
    store.put({"content": "z" * 5000, "path": "/tmp/z"}, step=1)
    with pytest.raises(ObservationError) as missing_step:
        store.resolve_references({"content": "{{step3.content}}"})
    assert "no observation of step 3" in str(missing_step.value)
    assert "steps with observations: 1" in str(missing_step.value)
    with pytest.raises(ObservationError) as missing_field:
        store.resolve_references({"content": "{{step1.body}}"})
    assert "has no field 'body'; its fields are: content, path" in str(missing_field.value)


def test_a_reference_does_not_reach_into_another_turn(store: ObservationStore) -> None:
    store.put("q" * 5000, step=1)
    store.start_turn("turn-2")
    with pytest.raises(ObservationError) as nothing:
        store.resolve_references("{{step1.content}}")
    assert str(nothing.value) == (
        "{{step1.content}}: turn 'turn-2' has no observations of any step yet, so there is "
        "nothing to refer to; store each step's output with its step number (CLI: obs put "
        "--step N; MCP: scratchpad_put with step) before referring to it, or write the value "
        "itself"
    )
    store.put("r" * 10, step=2)
    with pytest.raises(ObservationError, match="no observation of step 1 in turn 'turn-2'"):
        store.resolve_references("{{step1.content}}")
