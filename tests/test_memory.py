"""Tests for assembler/memory.py: chunking, incremental sync, repair, and hybrid search.

All but the tests marked `model` use the hashed-words fake embedder from tests/fakes.py.
"""

from __future__ import annotations

import itertools
import math
import os
import select
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes import FakeEmbedder

from assembler.memory.chunks import chunk_markdown
from assembler.memory.embeddings import Embedder
from assembler.memory.index import MemoryIndex, SyncReport
from assembler.memory.search import Hit, fts_query, sentences, snippet
from assembler.tokens import estimate_tokens

SOURCES = ["MEMORY.md", "memory/**/*.md"]
TESTS_DIR = Path(__file__).resolve().parent

TOPICS = [
    ("kubernetes", "pods restarted after the deploy and the ingress returned 502 errors"),
    ("postgres", "the nightly backup job wrote the dump to the bucket in nine minutes"),
    ("garden", "tomatoes need water every second day and the basil wants shade"),
    ("travel", "the train to the coast leaves at seven and the hotel is near the harbour"),
    ("finance", "the invoice for march was paid late so the fee has to be disputed"),
    ("running", "the long run on sunday was eighteen kilometres at an easy pace"),
    ("cooking", "the sourdough starter doubled in six hours at room temperature"),
    ("reading", "the novel about the lighthouse keeper was slow but the ending was good"),
]


def make_index(workspace: Path, embedder: Embedder | None = None, **options: object) -> MemoryIndex:
    settings: dict[str, object] = {"chunk_tokens": 60, "overlap_tokens": 10, **options}
    return MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=SOURCES,
        embedder=embedder,
        **settings,  # type: ignore[arg-type]
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def note(number: int) -> str:
    """A note with two sections; with 60-token chunks each section is one chunk."""
    first, second = TOPICS[number % len(TOPICS)], TOPICS[(number + 3) % len(TOPICS)]
    return (
        f"# Note {number}\n\n"
        f"## {first[0].title()}\n\n"
        f"Entry {number}: {first[1]}. Noted here so that it is not forgotten.\n\n"
        f"## {second[0].title()}\n\n"
        f"Entry {number}b: {second[1]}. Noted here so that it is not forgotten.\n"
    )


@pytest.fixture
def notes(workspace: Path) -> Path:
    """A workspace with 200 notes in memory/ (two sections, two chunks each)."""
    for number in range(200):
        write(workspace / "memory" / f"note-{number:03d}.md", note(number))
    return workspace


def indexed_paths(index: MemoryIndex) -> set[str]:
    with sqlite3.connect(index.db_path) as db:
        return {row[0] for row in db.execute("SELECT DISTINCT path FROM chunks")}


def chunk_rows(index: MemoryIndex, path: str) -> int:
    with sqlite3.connect(index.db_path) as db:
        return int(db.execute("SELECT count(*) FROM chunks WHERE path = ?", (path,)).fetchone()[0])


# -- chunking -------------------------------------------------------------------------------


def test_chunks_carry_the_heading_path_of_their_first_text() -> None:
    text = textwrap.dedent(
        """\
        # Infra

        ## Kubernetes

        The api runs in the prod cluster.

        #not-a-heading because a tag has no space

        # Cooking

        Bread needs time.
        """
    )
    chunks = chunk_markdown(text, chunk_tokens=12, overlap_tokens=0)
    headings = [c.heading for c in chunks]
    assert headings[0] == "Infra > Kubernetes"
    assert headings[-1] == "Cooking"
    assert all("not-a-heading" not in h for h in headings)
    assert chunks[0].embed_text.startswith("Infra > Kubernetes\n\n# Infra")


def test_chunk_line_ranges_are_exact_and_the_text_is_those_lines() -> None:
    lines = []
    for section in range(6):
        lines += [f"## Section {section}", ""]
        for para in range(4):
            lines += [f"Paragraph {section}.{para} says something about topic {para}.", ""]
        lines += ["- an item", "  that continues", "- another item", ""]
    text = "\n".join(lines)
    chunks = chunk_markdown(text, chunk_tokens=40, overlap_tokens=10)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert lines[chunk.start_line - 1].strip() and lines[chunk.end_line - 1].strip()
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert {n + 1 for n, line in enumerate(lines) if line.strip()} <= covered


def test_consecutive_chunks_of_one_section_overlap_by_about_the_overlap_tokens() -> None:
    paragraphs = [f"Sentence number {i} about the migration plan and its risks." for i in range(30)]
    text = "## Plan\n\n" + "\n\n".join(paragraphs)
    chunks = chunk_markdown(text, chunk_tokens=60, overlap_tokens=20)
    assert len(chunks) >= 5
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line, "no overlap"
        shared = "\n".join(text.split("\n")[after.start_line - 1 : before.end_line])
        assert 0 < estimate_tokens(shared) <= 20


def test_a_new_section_starts_a_new_chunk_without_overlap_once_the_chunk_is_half_full() -> None:
    body = " ".join(["word"] * 100)  # 125 tokens of text per section
    text = f"# One\n\n{body}\n\n# Two\n\n{body}\n"
    chunks = chunk_markdown(text, chunk_tokens=200, overlap_tokens=50)
    assert [c.heading for c in chunks] == ["One", "Two"]
    assert chunks[1].start_line == chunks[0].end_line + 2
    assert chunks[1].text.startswith("# Two")


def test_a_code_fence_is_kept_whole_in_one_chunk() -> None:
    fence = "```python\n" + "\n".join(f"x{i} = {i}  # step" for i in range(12)) + "\n\n```"
    text = "## Code\n\n" + "Some text before the code. " * 6 + "\n\n" + fence + "\n\nAfter.\n"
    chunks = chunk_markdown(text, chunk_tokens=80, overlap_tokens=10)
    holders = [c for c in chunks if "x0 = 0" in c.text]
    assert holders, "the fence was lost"
    for chunk in holders:
        assert fence in chunk.text
    for chunk in chunks:
        assert chunk.text.count("```") % 2 == 0


def test_an_oversized_block_is_split_between_lines_into_chunks_under_the_target() -> None:
    lines = [f"log line {i}: the worker restarted after an out of memory error" for i in range(60)]
    text = "\n".join(lines)  # one paragraph of about 1000 tokens
    chunks = chunk_markdown(text, chunk_tokens=100, overlap_tokens=0)
    assert len(chunks) >= 10
    assert all(estimate_tokens(c.text) <= 100 for c in chunks)
    assert [c.start_line for c in chunks] == sorted({c.start_line for c in chunks})
    assert "\n".join(c.text for c in chunks) == text


def test_chunks_stay_under_the_target_and_are_not_tiny() -> None:
    text = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor " * (i % 5 + 2) for i in range(80))
    chunks = chunk_markdown(text, chunk_tokens=120, overlap_tokens=20)
    sizes = [estimate_tokens(c.text) for c in chunks]
    assert max(sizes) <= 120
    assert min(sizes[:-1]) >= 60


def test_a_list_is_cut_between_items_and_an_item_keeps_its_continuation_lines() -> None:
    items = [f"- item {i} is about something\n  and continues here" for i in range(20)]
    chunks = chunk_markdown("\n".join(items), chunk_tokens=40, overlap_tokens=0)
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.text.startswith("- item")
        assert chunk.text.endswith("and continues here")


def test_chunking_rejects_an_overlap_as_large_as_the_chunk() -> None:
    with pytest.raises(ValueError, match="overlap_tokens"):
        chunk_markdown("text", chunk_tokens=50, overlap_tokens=50)


# -- sync -----------------------------------------------------------------------------------


def test_first_sync_embeds_every_chunk_and_a_second_reads_and_embeds_nothing(
    notes: Path,
) -> None:
    embedder = FakeEmbedder()
    with make_index(notes, embedder) as index:
        first = index.sync()
        calls = embedder.calls
        second = index.sync()
    assert (first.files_seen, first.files_changed, first.files_read) == (200, 200, 200)
    assert first.chunks_total == 400
    assert first.chunks_embedded == 400
    assert first.chunks_reused == 0
    assert (second.files_seen, second.files_changed, second.files_read) == (200, 0, 0)
    assert (second.chunks_embedded, second.chunks_reused, second.chunks_total) == (0, 0, 400)
    assert embedder.calls == calls


def test_editing_one_file_of_200_embeds_only_that_files_changed_chunk(notes: Path) -> None:
    with make_index(notes, FakeEmbedder()) as index:
        index.sync()
        path = notes / "memory" / "note-042.md"
        path.write_text(path.read_text().replace("Entry 42b:", "Entry 42b (edited):"))
        report = index.sync()
    assert report.files_read == 1
    assert report.files_changed == 1
    assert report.chunks_embedded == 1
    assert report.chunks_reused == 1
    assert report.chunks_total == 400


def test_renaming_a_file_embeds_no_new_chunk(notes: Path) -> None:
    with make_index(notes, FakeEmbedder()) as index:
        index.sync()
        (notes / "memory" / "note-007.md").rename(notes / "memory" / "renamed.md")
        report = index.sync()
        hits = index.search("Entry 7: the novel about the lighthouse keeper", k=1)
    assert (report.files_changed, report.files_removed) == (1, 1)
    assert report.chunks_embedded == 0
    assert report.chunks_reused == 2
    assert hits[0].path == "memory/renamed.md"


def test_deleting_a_file_removes_its_chunks_from_the_index_and_the_results(notes: Path) -> None:
    with make_index(notes, FakeEmbedder()) as index:
        index.sync()
        (notes / "memory" / "note-013.md").unlink()
        report = index.sync()
        hits = index.search("Entry 13", k=20)
        paths = indexed_paths(index)
    assert report.files_removed == 1
    assert report.chunks_total == 398
    assert "memory/note-013.md" not in paths
    assert all(hit.path != "memory/note-013.md" for hit in hits)


def test_search_after_a_sync_sees_the_change_even_when_the_query_was_asked_before(
    workspace: Path,
) -> None:
    write(workspace / "MEMORY.md", "# Ray\n\nThe staging database is on port 5433.\n")
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
        before = index.search("staging database port", k=3)
        assert index.sync().files_changed == 0
        assert index.search("staging database port", k=3) == before  # caches kept, same answer
        write(workspace / "memory" / "db.md", "# Databases\n\nstaging database port moved.\n")
        index.sync()
        after = index.search("staging database port", k=3)
        (workspace / "MEMORY.md").unlink()
        index.sync()
        gone = index.search("staging database port", k=3)
    assert [hit.path for hit in before] == ["MEMORY.md"]
    assert {hit.path for hit in after} == {"MEMORY.md", "memory/db.md"}
    assert [hit.path for hit in gone] == ["memory/db.md"]


def test_a_repeated_query_is_neither_embedded_nor_ranked_again_while_nothing_changed(
    workspace: Path,
) -> None:
    write(workspace / "MEMORY.md", "# Ray\n\nThe staging database is on port 5433.\n")
    fake = FakeEmbedder()
    with make_index(workspace, fake) as index:
        index.sync()
        first = index.search_many(["staging port", "database"], k=2)
        encoded = fake.texts_encoded
        again = index.search_many(["database", "staging port", "new question"], k=2)
        assert fake.texts_encoded == encoded + 1  # only "new question"
    assert again[:2] == [first[1], first[0]]


def test_rebuild_rereads_every_file_but_embeds_nothing(notes: Path) -> None:
    with make_index(notes, FakeEmbedder()) as index:
        index.sync()
        report = index.sync(rebuild=True)
    assert report.files_changed == 200
    assert report.chunks_embedded == 0
    assert report.chunks_reused == 400


def test_touching_a_file_without_changing_it_only_restamps_it(notes: Path) -> None:
    with make_index(notes, FakeEmbedder()) as index:
        index.sync()
        path = notes / "memory" / "note-100.md"
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        touched = index.sync()
        after = index.sync()
    assert (touched.files_read, touched.files_changed, touched.chunks_embedded) == (1, 0, 0)
    assert after.files_read == 0


def test_changing_the_chunk_size_rechunks_every_file(notes: Path) -> None:
    with make_index(notes, FakeEmbedder()) as index:
        index.sync()
    with make_index(notes, FakeEmbedder(), chunk_tokens=200, overlap_tokens=20) as index:
        report = index.sync()
    assert report.files_changed == 200
    assert report.chunks_total == 200  # both sections now fit one chunk


def test_a_new_model_embeds_every_chunk_and_the_old_vectors_stay(workspace: Path) -> None:
    for number in range(5):
        write(workspace / "memory" / f"n{number}.md", note(number))
    with make_index(workspace, FakeEmbedder(model_id="fake/a")) as index:
        index.sync()
    with make_index(workspace, FakeEmbedder(model_id="fake/b")) as index:
        switched = index.sync()
    with make_index(workspace, FakeEmbedder(model_id="fake/a")) as index:
        back = index.sync()
    assert switched.files_changed == 0
    assert switched.chunks_embedded == 10
    assert back.chunks_embedded == 0


def test_progress_is_reported_for_reading_and_embedding(notes: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    with make_index(notes, FakeEmbedder(), embed_batch=64) as index:
        index.sync(progress=lambda stage, done, total: calls.append((stage, done, total)))
    reads = [c for c in calls if c[0] == "read"]
    embeds = [c for c in calls if c[0] == "embed"]
    assert reads[0] == ("read", 0, 200) and reads[-1] == ("read", 200, 200)
    assert embeds[0] == ("embed", 0, 400) and embeds[-1] == ("embed", 400, 400)
    assert len(embeds) == 1 + math.ceil(400 / 64)


def test_chunks_are_embedded_in_batches_of_embed_batch(notes: Path) -> None:
    embedder = FakeEmbedder()
    with make_index(notes, embedder, embed_batch=50) as index:
        index.sync()
    assert embedder.calls == 8
    assert embedder.texts_encoded == 400


def test_identical_chunks_in_two_files_are_embedded_once(workspace: Path) -> None:
    write(workspace / "memory" / "a.md", note(1))
    write(workspace / "memory" / "b.md", note(1))
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
    assert report.chunks_total == 4
    assert report.chunks_embedded == 2


# -- what is indexed ------------------------------------------------------------------------


def test_scratchpad_state_folder_and_excluded_globs_are_never_indexed(workspace: Path) -> None:
    for rel in (
        "MEMORY.md",
        "SCRATCHPAD.md",
        ".scratchpad/journal.md",
        "memory/keep.md",
        "memory/private/secret.md",
        "memory/idea.draft.md",
        "notes/SCRATCHPAD.md",
    ):
        write(workspace / rel, f"# {rel}\n\nSome text about {rel}.\n")
    index = MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=["*.md", "**/*.md", ".scratchpad/*.md", "SCRATCHPAD.md"],
        exclude=["memory/private/", "*.draft.md"],
        embedder=FakeEmbedder(),
    )
    with index:
        report = index.sync()
        paths = indexed_paths(index)
    assert paths == {"MEMORY.md", "memory/keep.md", "notes/SCRATCHPAD.md"}
    assert report.files_seen == 3


def test_binary_and_non_utf8_files_are_skipped_with_a_warning_naming_them(
    workspace: Path,
) -> None:
    write(workspace / "MEMORY.md", "# Me\n\nI like tea.\n")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (workspace / "memory" / "latin1.md").write_bytes("café crème".encode("latin-1"))
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
        paths = indexed_paths(index)
    assert paths == {"MEMORY.md"}
    assert any("memory/image.md" in w and "binary" in w for w in report.skipped)
    assert any("memory/latin1.md" in w and "UTF-8" in w for w in report.skipped)


def test_an_unreadable_file_is_skipped_with_a_warning_naming_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace / "MEMORY.md", "# Me\n\nI like tea.\n")
    locked = write(workspace / "memory" / "locked.md", "# Locked\n\nsecret\n")
    real_open = os.open

    # Files are opened with os.open (non-blocking, regular files only): deny that one.
    def deny(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
        paths = indexed_paths(index)
    assert paths == {"MEMORY.md"}
    assert report.skipped == [
        "memory/locked.md: cannot be read (Permission denied); fix its permissions; skipped"
    ]


def test_a_file_that_turns_binary_leaves_the_index(workspace: Path) -> None:
    path = write(workspace / "memory" / "a.md", note(1))
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
        path.write_bytes(b"\x00" * 64)
        report = index.sync()
    assert report.files_removed == 1
    assert report.chunks_total == 0
    assert "memory/a.md" in report.skipped[0]


# -- damage and interruption ----------------------------------------------------------------


def test_a_database_file_that_is_not_a_database_is_moved_aside_and_rebuilt(
    workspace: Path,
) -> None:
    write(workspace / "memory" / "a.md", note(6))  # cooking and postgres
    db_path = workspace / ".scratchpad" / "index.sqlite"
    db_path.parent.mkdir()
    db_path.write_bytes(b"this is not a database" * 100)
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
        hits = index.search("sourdough starter", k=1)
    assert report.chunks_total == 2
    assert any("unreadable" in w and "index.sqlite.corrupt" in w for w in report.skipped)
    assert (db_path.parent / "index.sqlite.corrupt").read_bytes().startswith(b"this is not")
    assert hits and hits[0].path == "memory/a.md"


def test_a_database_damaged_inside_is_repaired_on_the_next_open(workspace: Path) -> None:
    for number in range(30):
        write(workspace / "memory" / f"n{number}.md", note(number))
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
    db_path = workspace / ".scratchpad" / "index.sqlite"
    with db_path.open("r+b") as handle:  # keep the header, wreck the schema page
        handle.seek(100)
        handle.write(b"\xff" * 3900)
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
        hits = index.search("tomatoes basil", k=1)
    assert any("moved it to index.sqlite.corrupt" in w for w in report.skipped)
    assert report.chunks_total == 60
    assert hits and "Garden" in hits[0].heading


def test_an_index_of_another_schema_version_is_moved_aside_and_rebuilt(workspace: Path) -> None:
    write(workspace / "memory" / "a.md", note(1))
    db_path = workspace / ".scratchpad" / "index.sqlite"
    db_path.parent.mkdir()
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE old_chunks (x)")
        db.execute("PRAGMA user_version = 99")
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
    assert any("schema version 99" in w for w in report.skipped)
    assert (db_path.parent / "index.sqlite.v99").exists()
    assert report.chunks_total == 2


def test_a_model_failing_mid_sync_keeps_finished_batches_and_the_next_sync_completes(
    notes: Path,
) -> None:
    with (
        make_index(notes, FakeEmbedder(fail_after_calls=3), embed_batch=40) as index,
        pytest.raises(RuntimeError, match="crashed"),
    ):
        index.sync()
    with make_index(notes, FakeEmbedder(), embed_batch=40) as index:
        report = index.sync()
        hits = index.search("Entry 42b", k=1)
    assert report.files_changed == 0  # every file was written before embedding began
    assert report.chunks_embedded == 400 - 3 * 40
    assert hits and hits[0].path == "memory/note-042.md"


CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from fakes import FakeEmbedder
from assembler.memory.index import MemoryIndex

workspace = Path(sys.argv[1])
stage_to_kill = sys.argv[2]

said = []

def progress(stage, done, total):
    if stage == stage_to_kill and done >= 5:
        if not said:
            print("ready", flush=True)
            said.append(True)
        time.sleep(0.5)  # the parent kills us in here

index = MemoryIndex(
    workspace, db_path=workspace / ".scratchpad" / "index.sqlite",
    sources=["MEMORY.md", "memory/**/*.md"], embedder=FakeEmbedder(),
    chunk_tokens=60, overlap_tokens=10, embed_batch=10,
)
index.sync(progress=progress)
print("finished", flush=True)
"""


@pytest.mark.parametrize("stage", ["read", "embed"])
def test_killing_the_process_mid_sync_leaves_an_index_the_next_sync_completes(
    notes: Path, stage: str
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(tests=str(TESTS_DIR)), str(notes), stage],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60)
        assert ready, "the child never reached the point to kill it at"
        assert child.stdout.readline().strip() == "ready"
        child.kill()  # SIGKILL: no cleanup, no rollback handlers
    finally:
        child.wait(timeout=30)
    assert child.returncode == -9

    with make_index(notes, FakeEmbedder()) as index:
        report = index.sync()
        hits = index.search("Entry 150b", k=1)
        for path in sorted(indexed_paths(index))[:20]:
            text = (notes / path).read_text()
            assert chunk_rows(index, path) == len(
                chunk_markdown(text, chunk_tokens=60, overlap_tokens=10)
            )
    assert report.chunks_total == 400
    assert 0 < report.chunks_embedded < 400 if stage == "embed" else report.chunks_embedded > 0
    if stage == "read":
        assert 0 < report.files_changed < 200
    assert hits and hits[0].path == "memory/note-150.md"


# -- search ---------------------------------------------------------------------------------


@pytest.fixture
def topics(workspace: Path) -> Iterator[MemoryIndex]:
    """A synced index over one note per topic, with the fake embedder."""
    for name, sentence in TOPICS:
        write(workspace / "memory" / f"{name}.md", f"# {name.title()}\n\n{sentence}.\n")
    index = make_index(workspace, FakeEmbedder(), chunk_tokens=400, overlap_tokens=80)
    index.sync()
    yield index
    index.close()


def test_search_ranks_the_matching_note_first(topics: MemoryIndex) -> None:
    hits = topics.search("sourdough starter", k=3)
    assert hits[0].path == "memory/cooking.md"
    assert hits[0].start_line == 1 and hits[0].end_line == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_fused_score_is_the_weighted_sum_of_the_vector_and_bm25_parts(
    topics: MemoryIndex,
) -> None:
    for weights in ((0.7, 0.3), (2.0, 1.0)):
        hits = topics.search(
            "backup of the postgres dump", k=5, vector_weight=weights[0], bm25_weight=weights[1]
        )
        total = sum(weights)
        for hit in hits:
            assert hit.vector is not None and hit.bm25 is not None
            expected = weights[0] / total * hit.vector + weights[1] / total * hit.bm25
            assert hit.score == pytest.approx(expected)


def test_vector_part_is_the_cosine_clamped_at_zero(topics: MemoryIndex) -> None:
    query = "water for the tomatoes"
    embedder = FakeEmbedder()
    for hit in topics.search(query, k=8):
        body = f"{hit.heading}\n\n{hit.text}" if hit.heading else hit.text
        cosine = float(embedder.encode([query])[0] @ embedder.encode([body])[0])
        assert hit.vector == pytest.approx(max(cosine, 0.0), abs=1e-5)


def test_bm25_part_is_within_0_and_1_and_zero_for_a_chunk_without_the_words(
    topics: MemoryIndex,
) -> None:
    hits = topics.search("invoice fee disputed", k=8)
    assert hits[0].path == "memory/finance.md"
    assert 0.5 < (hits[0].bm25 or 0) <= 1.0
    others = [h for h in hits if h.path != "memory/finance.md"]
    assert others and all(h.bm25 == 0.0 for h in others)


def test_a_chunk_matching_one_common_word_of_a_long_query_gets_a_small_bm25_part(
    topics: MemoryIndex,
) -> None:
    hits = topics.search("harbour rollout crashing everywhere", k=8)
    travel = next(h for h in hits if h.path == "memory/travel.md")
    assert travel.bm25 is not None and 0 < travel.bm25 < 0.5


def test_min_score_drops_weaker_hits(topics: MemoryIndex) -> None:
    everything = topics.search("the hotel near the harbour", k=8)
    cut = everything[1].score
    kept = topics.search("the hotel near the harbour", k=8, min_score=cut)
    assert len(kept) == 2 < len(everything)
    assert all(h.score >= cut for h in kept)
    assert topics.search("the hotel near the harbour", k=8, min_score=5.0) == []


def test_mmr_gives_the_second_slot_to_a_different_note(workspace: Path) -> None:
    text = "# Deploy\n\nThe deploy of the api failed because the image tag was wrong.\n"
    write(workspace / "memory" / "a.md", text)
    write(workspace / "memory" / "b.md", text.replace("The deploy", "Yesterday the deploy"))
    write(workspace / "memory" / "c.md", "# Rollback\n\nWe rolled back the api deploy by hand.\n")
    write(workspace / "memory" / "d.md", "# Garden\n\nTomatoes and basil.\n")
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
        plain = index.search("api deploy image tag failed", k=2)
        diverse = index.search("api deploy image tag failed", k=2, mmr_lambda=0.5)
    assert {h.path for h in plain} == {"memory/a.md", "memory/b.md"}
    assert diverse[0].path == plain[0].path
    assert diverse[1].path == "memory/c.md"


def test_identical_chunk_texts_give_one_hit(workspace: Path) -> None:
    write(workspace / "memory" / "a.md", "# Tea\n\nGreen tea at 80 degrees.\n")
    write(workspace / "memory" / "copy.md", "# Tea\n\nGreen tea at 80 degrees.\n")
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
        hits = index.search("green tea", k=5)
    assert len(hits) == 1


def test_recency_boost_ranks_the_newer_daily_note_first(workspace: Path) -> None:
    write(workspace / "memory" / "2026-01-02.md", "# Standup\n\nRelease plan for the api.\n")
    write(workspace / "memory" / "2026-03-01.md", "# Standup\n\nRelease plan for the api!!\n")
    now = datetime(2026, 3, 3, 9, 0)
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
        plain = index.search("api release plan", k=2, now=now)
        boosted = index.search(
            "api release plan", k=2, now=now, recency_weight=0.5, recency_half_life_days=7
        )
    assert plain[0].score == pytest.approx(plain[1].score, rel=0.05)
    assert [h.path for h in boosted] == ["memory/2026-03-01.md", "memory/2026-01-02.md"]
    assert boosted[0].recency == pytest.approx(1 + 0.5 * 0.5 ** (2 / 7))
    assert boosted[1].recency == pytest.approx(1 + 0.5 * 0.5 ** (60 / 7))
    assert all(h.recency == 1.0 for h in plain)


@pytest.mark.parametrize(
    "query",
    ['"foo', "a AND (", "NEAR(x y", "*", "body:secret", "'); DROP TABLE chunks;--", "^-+", "", " "],
)
def test_hostile_or_empty_queries_never_raise(topics: MemoryIndex, query: str) -> None:
    hits = topics.search(query, k=3)
    assert isinstance(hits, list)
    assert topics.search("sourdough", k=1)[0].path == "memory/cooking.md"


def test_fts_query_quotes_every_word_and_drops_stopwords() -> None:
    assert fts_query('deploy AND ("kube*') == '"deploy" OR "kube"'
    assert fts_query("the and of") == '"the" OR "and" OR "of"'
    assert fts_query("!!! ---") is None


def test_without_an_embedder_search_uses_bm25_and_the_report_says_so(workspace: Path) -> None:
    for name, sentence in TOPICS:
        write(workspace / "memory" / f"{name}.md", f"# {name.title()}\n\n{sentence}.\n")
    with make_index(workspace, None) as index:
        report = index.sync()
        hits = index.search("ingress errors", k=3)
    assert report.degraded is not None and "BM25" in report.degraded
    assert report.chunks_embedded == 0
    assert hits[0].path == "memory/kubernetes.md"
    assert all(h.vector is None for h in hits)
    assert hits[0].score == pytest.approx(hits[0].bm25)


def test_search_many_embeds_all_queries_in_one_call_and_ranks_each_like_search(
    workspace: Path,
) -> None:
    for name, sentence in TOPICS:
        write(workspace / "memory" / f"{name}.md", f"# {name.title()}\n\n{sentence}.\n")
    embedder = FakeEmbedder()
    queries = ["ingress errors", "lighthouse novel", "invoice fee"]
    with make_index(workspace, embedder) as index:
        index.sync()
        before = embedder.calls
        many = index.search_many(queries, k=3)
        assert embedder.calls == before + 1
        single = [index.search(q, k=3) for q in queries]
    assert many == single
    assert [hits[0].path for hits in many] == [
        "memory/kubernetes.md",
        "memory/reading.md",
        "memory/finance.md",
    ]


def test_the_snippet_is_the_line_that_matches_the_query(workspace: Path) -> None:
    lines = [f"- line {i}: nothing to see in this particular bullet point" for i in range(8)]
    lines[5] = "- the staging database password rotates every ninety days " + "x" * 300
    write(workspace / "memory" / "ops.md", "# Ops\n\n" + "\n".join(lines) + "\n")
    with make_index(workspace, FakeEmbedder(), chunk_tokens=400, overlap_tokens=80) as index:
        index.sync()
        (hit,) = index.search("when does the password rotate", k=1)
    assert "password rotates" in hit.snippet
    assert len(hit.snippet) <= 200
    assert "\n" not in hit.snippet


def test_the_snippet_is_never_a_heading_even_when_the_heading_names_the_query(
    workspace: Path,
) -> None:
    write(
        workspace / "MEMORY.md",
        "# MEMORY.md — what I know about Mara\n\n## Mara\n\n"
        "- Works nights at the hospital; texts rather than calls.\n",
    )
    with make_index(workspace, FakeEmbedder(), chunk_tokens=400, overlap_tokens=80) as index:
        index.sync()
        (hit,) = index.search("what about Mara", k=1)
    assert hit.snippet == "Works nights at the hospital; texts rather than calls."


def test_a_chunk_of_headings_alone_has_no_snippet() -> None:
    assert snippet("# MEMORY.md — what I know about Mara\n## Mara\n", ["mara"]) == ""


def test_the_snippet_is_one_sentence_the_one_with_the_rarest_query_word() -> None:
    text = (
        "- 10:02 The deploy went out. Nothing else happened.\n"
        "- 10:30 The deploy of the webhook tool failed. Replay with "
        "`stripe events resend evt_123 --webhook-endpoint we_9`.\n"
    )
    weights = {"deploy": 0.1, "replay": 3.0}
    assert (
        snippet(text, weights)
        == "10:30 Replay with `stripe events resend evt_123 --webhook-endpoint we_9`."
    )
    assert sentences('- 21:52 Ray: "ok that did it, thanks". Relieved. 1.14.4 is live.') == [
        '21:52 Ray: "ok that did it, thanks".',
        "21:52 Relieved.",
        "21:52 1.14.4 is live.",
    ]


def test_search_sees_what_another_process_indexed(workspace: Path) -> None:
    write(workspace / "memory" / "a.md", "# Tea\n\nGreen tea at 80 degrees.\n")
    with (
        make_index(workspace, FakeEmbedder()) as reader,
        make_index(workspace, FakeEmbedder()) as writer,
    ):
        reader.sync()
        assert reader.search("espresso grind", k=1)[0].path == "memory/a.md"
        write(workspace / "memory" / "b.md", "# Coffee\n\nEspresso needs a fine grind.\n")
        writer.sync()
        hits = reader.search("espresso grind", k=1)
    assert hits[0].path == "memory/b.md"


def test_vectors_of_deleted_chunks_are_forgotten_after_30_days(workspace: Path) -> None:
    path = write(workspace / "memory" / "a.md", "# Tea\n\nGreen tea at 80 degrees.\n")
    clock = [1_000_000.0]
    with make_index(workspace, FakeEmbedder(), clock=lambda: clock[0]) as index:
        index.sync()
        path.write_text("# Tea\n\nGreen tea at 75 degrees.\n")
        index.sync()
        counts = [_vector_count(index)]
        clock[0] += 31 * 86400
        path.write_text("# Tea\n\nGreen tea at 70 degrees.\n")
        index.sync()
        counts.append(_vector_count(index))
    assert counts == [2, 1]


def _vector_count(index: MemoryIndex) -> int:
    with sqlite3.connect(index.db_path) as db:
        return int(db.execute("SELECT count(*) FROM embeddings").fetchone()[0])


def test_invalid_search_options_raise_value_error(topics: MemoryIndex) -> None:
    with pytest.raises(ValueError, match="k must be positive"):
        topics.search("x", k=0)
    with pytest.raises(ValueError, match="weights"):
        topics.search("x", vector_weight=0, bm25_weight=0)
    with pytest.raises(ValueError, match="mmr_lambda"):
        topics.search("x", mmr_lambda=1.5)


def test_sync_report_and_hit_have_the_documented_fields() -> None:
    report = SyncReport()
    assert (report.files_seen, report.skipped, report.degraded) == (0, [], None)
    fields = set(Hit.__dataclass_fields__)
    assert {"path", "start_line", "end_line", "score", "vector", "bm25", "recency"} <= fields
    assert {"snippet", "text", "chunk_hash"} <= fields


# -- the real model -------------------------------------------------------------------------

ACCEPTANCE_NOTES = {
    "memory/infra/k8s-incident.md": (
        "# Incident: api deployment\n\n"
        "Deployment of the api to the k8s cluster failed: pods in CrashLoopBackOff after the "
        "release because the image tag was wrong. Fixed by retagging the image and running "
        "kubectl apply again; added a CI check that the tag exists in the registry.\n"
    ),
    "memory/infra/postgres-backups.md": (
        "# Postgres backups\n\n"
        "Nightly pg_dump of the main database goes to the S3 bucket at 02:00 UTC. Restores are "
        "tested on the first Monday of the month; the last restore took 14 minutes.\n"
    ),
    "memory/home/landlord.md": (
        "# Flat\n\n"
        "The landlord is Mrs. Okafor; call her about the heating before Friday. Rent is due on "
        "the 3rd, paid by standing order.\n"
    ),
    "memory/health/running.md": (
        "# Running plan\n\n"
        "Training for the half marathon in May: three easy runs a week and one long run on "
        "Sunday. Knee felt sore after 18 km, so keep the long run under 16 km for now.\n"
    ),
    "memory/food/sourdough.md": (
        "# Sourdough\n\n"
        "Starter is fed at 1:5:5 every evening. The loaf that worked best: 75% hydration, "
        "overnight cold retard, 250 °C with the lid on for 20 minutes.\n"
    ),
    "memory/travel/lisbon.md": (
        "# Lisbon trip\n\n"
        "Flights booked for 12-19 June; the apartment is in Alfama. Want to visit Sintra and "
        "take the tram 28 early in the morning before the crowds.\n"
    ),
    "memory/people/maria.md": (
        "# Maria\n\n"
        "Maria leads the data team. Prefers written proposals over meetings; her birthday is "
        "on 4 October and she likes jazz records.\n"
    ),
    "memory/finance/taxes.md": (
        "# Taxes\n\n"
        "Self-assessment is due at the end of January. Keep receipts for the home office and "
        "the new laptop; the accountant wants everything by mid-December.\n"
    ),
    "memory/reading.md": (
        "# Reading list\n\n"
        "Finished 'The Pragmatic Programmer'. Next: 'Designing Data-Intensive Applications', "
        "then a novel for the holidays, maybe something by Ishiguro.\n"
    ),
    "memory/garden.md": (
        "# Garden\n\n"
        "Tomatoes go out after the last frost in mid-May. The basil on the balcony needs water "
        "every second day in summer; slugs ate the lettuce last year.\n"
    ),
    "memory/car.md": (
        "# Car\n\n"
        "Service is due at 60,000 km. The winter tyres are stored at the garage on Elm Street; "
        "swap them in late October.\n"
    ),
    "MEMORY.md": (
        "# About me\n\n"
        "I work as a backend engineer on the payments team. I prefer short answers and "
        "concrete commands over long explanations.\n"
    ),
}


@pytest.fixture(scope="session")
def real_embedder() -> Iterator[Embedder]:
    """The bundled all-MiniLM-L6-v2, loaded once for the whole session."""
    from assembler.memory.embeddings import load_embedder

    yield load_embedder("bundled")


@pytest.mark.model
def test_a_paraphrase_sharing_no_word_finds_the_kubernetes_incident_note(
    workspace: Path, real_embedder: Embedder
) -> None:
    for rel, text in ACCEPTANCE_NOTES.items():
        write(workspace / rel, text)
    k8s = ACCEPTANCE_NOTES["memory/infra/k8s-incident.md"].lower()
    assert not {"rollout", "keeps", "crashing"} & set(k8s.replace(".", " ").split())
    with make_index(workspace, real_embedder, chunk_tokens=400, overlap_tokens=80) as index:
        report = index.sync()
        hits = index.search("the rollout keeps crashing", k=3)
    assert report.chunks_embedded == 12
    assert hits[0].path == "memory/infra/k8s-incident.md"
    assert hits[0].score > hits[1].score
    assert hits[0].vector is not None
    assert np.isclose(hits[0].score, 0.7 * hits[0].vector + 0.3 * (hits[0].bm25 or 0))


# --- Hostile memory folders ---------------------------------------------------------------------


def test_a_link_to_a_file_outside_the_workspace_is_neither_indexed_nor_found(
    workspace: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "outside" / "passwd.md", "root:x:0:0:canary-8c1d:/root:/bin/bash\n")
    write(workspace / "memory" / "kept.md", "# Kept\n\nThe deploy runbook lives here.\n")
    (workspace / "memory" / "x.md").symlink_to(secret)
    other = write(workspace / "docs" / "other.md", "# Other\n\nThe deploy checklist too.\n")
    (workspace / "memory" / "inside.md").symlink_to(other)  # a link that stays inside is fine
    with make_index(workspace) as index:
        report = index.sync()
        assert [line.split(":")[0] for line in report.skipped] == ["memory/x.md"]
        assert "outside" in report.skipped[0]
        assert index.search("root canary-8c1d bash") == []
        found = {hit.path for hit in index.search("deploy runbook")}
    assert found == {"memory/kept.md", "memory/inside.md"}


def test_more_distinct_queries_than_the_cache_holds_are_all_answered(notes: Path) -> None:
    with make_index(notes) as index:
        index.sync()
        queries = [f"entry {n} noted here {n}" for n in range(150)]
        results = index.search_many(queries, k=2)
        again = index.search_many(queries[:5], k=2)
    assert len(results) == 150 and all(results)
    assert again == results[:5]


# --- Kept vectors of short texts (queries, sentences) ----------------------------------------


def test_a_fresh_index_embeds_a_query_once_and_a_later_process_reads_its_vector(
    workspace: Path,
) -> None:
    write(workspace / "memory" / "a.md", note(1))
    first = FakeEmbedder()
    with make_index(workspace, first) as index:
        index.sync()
        hits = index.search("tomatoes basil shade", k=1)
        assert index.embedder is not None
        sentence_vectors = index.embedder.encode(sentences(hits[0].text))
    later = FakeEmbedder()
    with make_index(workspace, later) as index:
        again = index.search("tomatoes basil shade", k=1)
        assert index.embedder is not None
        kept = index.embedder.encode(sentences(hits[0].text))
    assert later.calls == 0  # neither the query nor the sentences needed the model
    assert [h.chunk_hash for h in again] == [h.chunk_hash for h in hits]
    assert again[0].score == pytest.approx(hits[0].score)
    np.testing.assert_array_equal(kept, sentence_vectors)


def test_only_the_texts_without_a_kept_vector_are_encoded(workspace: Path) -> None:
    fake = FakeEmbedder()
    with make_index(workspace, fake) as index:
        assert index.embedder is not None
        index.embedder.encode(["one sentence", "two sentence"])
        encoded = fake.texts_encoded
        mixed = index.embedder.encode(["two sentence", "three sentence", "one sentence"])
    assert fake.texts_encoded - encoded == 1
    np.testing.assert_allclose(
        mixed, FakeEmbedder().encode(["two sentence", "three sentence", "one sentence"]), atol=1e-6
    )


def test_kept_vectors_are_per_model(workspace: Path) -> None:
    with make_index(workspace, FakeEmbedder()) as index:
        assert index.embedder is not None
        index.embedder.encode(["a sentence"])
    other = FakeEmbedder(model_id="fake/other", dim=64)
    with make_index(workspace, other) as index:
        assert index.embedder is not None
        vectors = index.embedder.encode(["a sentence"])
    assert other.calls == 1
    assert vectors.shape == (1, 64)


def test_chunks_are_embedded_by_the_model_itself_and_not_kept_as_short_texts(
    workspace: Path,
) -> None:
    write(workspace / "memory" / "a.md", note(1))
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
    with sqlite3.connect(workspace / ".scratchpad" / "index.sqlite") as db:
        kept = db.execute("SELECT count(*) FROM text_vectors").fetchone()[0]
    assert report.chunks_embedded == 2
    assert kept == 0


def test_an_index_that_cannot_be_written_still_encodes_with_the_model(workspace: Path) -> None:
    fake = FakeEmbedder()
    index = make_index(workspace, fake)
    embedder = index.embedder
    index.close()
    assert embedder is not None
    vectors = embedder.encode(["still answered"])
    assert vectors.shape == (1, fake.dim)
    assert fake.calls == 1


def test_the_daemons_wrapper_of_the_embedder_is_not_wrapped_twice(workspace: Path) -> None:
    from assembler.memory.index import KnownVectors
    from assembler.memory.recall import RememberedQueries

    with make_index(workspace, FakeEmbedder()) as index:
        assert index.embedder is not None
        remembered = RememberedQueries(index.embedder)
        index.embedder = remembered
        assert index.embedder is remembered
        assert isinstance(remembered.embedder, KnownVectors)


def test_loading_the_model_encodes_with_the_model_even_when_its_text_is_kept(
    workspace: Path,
) -> None:
    with make_index(workspace, FakeEmbedder()) as index:
        index.load_model()
    fake = FakeEmbedder()
    with make_index(workspace, fake) as index:
        index.load_model()
    assert fake.calls == 1


def test_a_version_1_index_is_upgraded_in_place_keeping_its_chunks_and_vectors(
    workspace: Path,
) -> None:
    from assembler.memory import index as index_module

    write(workspace / "memory" / "a.md", note(1))
    db_path = workspace / ".scratchpad" / "index.sqlite"
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
    with sqlite3.connect(db_path) as db:  # back to what version 1 made
        db.execute("DROP TABLE text_vectors")
        db.execute("PRAGMA user_version = 1")
        vectors = db.execute("SELECT chunk_hash, vector FROM embeddings").fetchall()
    assert len(vectors) == 2
    fake = FakeEmbedder()
    with make_index(workspace, fake) as index:
        report = index.sync()
        hits = index.search("nightly backup dump", k=1)
    with sqlite3.connect(db_path) as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        after = db.execute("SELECT chunk_hash, vector FROM embeddings").fetchall()
    assert version == index_module.SCHEMA_VERSION == 2
    assert sorted(after) == sorted(vectors)
    assert report.chunks_embedded == 0 and report.files_changed == 0
    assert not report.skipped
    assert hits and "Postgres" in hits[0].heading
    assert not list(db_path.parent.glob("index.sqlite.*"))


def test_a_version_1_index_holding_a_foreign_object_is_moved_aside_not_upgraded(
    workspace: Path,
) -> None:
    write(workspace / "memory" / "a.md", note(1))
    db_path = workspace / ".scratchpad" / "index.sqlite"
    with make_index(workspace, FakeEmbedder()) as index:
        index.sync()
    with sqlite3.connect(db_path) as db:
        db.execute("DROP TABLE text_vectors")
        db.execute("CREATE TRIGGER planted AFTER INSERT ON chunks BEGIN SELECT 1; END")
        db.execute("PRAGMA user_version = 1")
    with make_index(workspace, FakeEmbedder()) as index:
        report = index.sync()
    assert any("planted" in w and "rebuilt" in w for w in report.skipped)
    assert report.chunks_total == 2
    with sqlite3.connect(db_path) as db:
        triggers = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'")
        assert triggers.fetchone()[0] == 0
