from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.memory.recall import (
    Floor,
    conversation_queries,
    recall_memories,
    repeats,
    written_by,
)
from assembler.memory.search import Hit
from assembler.transcripts.message import Message

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def conversation(*turns: tuple[str, str]) -> list[Message]:
    start = NOW - timedelta(minutes=len(turns))
    return [
        Message(role=role, text=text, timestamp=start + timedelta(minutes=i), source="t")  # type: ignore[arg-type]
        for i, (role, text) in enumerate(turns)
    ]


def hit(
    path: str, score: float, line: int = 1, *, keyword: bool = False, recency: float = 1.0
) -> Hit:
    return Hit(
        path=path,
        start_line=line,
        end_line=line + 4,
        score=score * recency,
        vector=None if keyword else score,
        bm25=score,
        recency=recency,
        snippet=f"about {path}",
        text=f"text of {path}",
        chunk_hash=f"{path}:{line}",
    )


class StubIndex:
    """Answers each query with the hits listed for the first keyword it contains."""

    def __init__(self, answers: dict[str, list[Hit]], chunks: int = 1000) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self.chunks = chunks

    def chunk_count(self) -> int:
        return self.chunks

    def search_many(self, queries: Sequence[str], *, k: int, **options: Any) -> list[list[Hit]]:
        self.asked.extend(queries)
        results = []
        for query in queries:
            key = next((w for w in self.answers if w in query.lower()), None)
            results.append(self.answers.get(key, [])[:k] if key else [])
        return results

    def best_snippets(self, pairs: Sequence[tuple[Hit, str]], **weights: float) -> list[str]:
        return [hit.snippet for hit, _ in pairs]


def test_each_human_message_is_a_query_newest_first() -> None:
    messages = conversation(
        ("user", "how did the postgres upgrade go last month"),
        ("assistant", "It went fine after the vacuum."),
        ("user", "book the dentist appointment for Tuesday"),
        ("user", "why does the helm deploy of the api fail"),
    )
    assert conversation_queries(messages, max_messages=6) == [
        "why does the helm deploy of the api fail",
        "book the dentist appointment for Tuesday",
        "how did the postgres upgrade go last month",
    ]
    assert len(conversation_queries(messages, max_messages=2)) == 2


def test_a_short_last_message_is_joined_with_the_one_before() -> None:
    messages = conversation(
        ("user", "the helm deploy of the api fails with ImagePullBackOff"),
        ("assistant", "The tag is missing."),
        ("user", "and the fix?"),
    )
    assert conversation_queries(messages, max_messages=6)[0] == (
        "the helm deploy of the api fails with ImagePullBackOff\nand the fix?"
    )


def test_a_long_pasted_message_asks_with_its_head_and_tail_only() -> None:
    log = "2026-03-01T09:14:58Z gateway-7c9f8 level=error msg=upstream timeout\n" * 150
    pasted = f"the payments gateway times out, log:\n{log}why does the pool run dry?"
    messages = conversation(("user", "how did the postgres upgrade go"), ("user", pasted))

    queries = conversation_queries(messages, max_messages=6)

    assert len(pasted) > 10_000 and len(queries[0]) <= 700
    assert queries[0].startswith("the payments gateway times out")
    assert queries[0].endswith("why does the pool run dry?")
    assert queries[1] == "how did the postgres upgrade go"


def test_messages_without_content_are_not_queries() -> None:
    messages = conversation(("user", "thanks!"), ("user", "ok"), ("assistant", "sure"))
    assert conversation_queries(messages, max_messages=6) == []
    result = recall_memories(StubIndex({}), messages)  # type: ignore[arg-type]
    assert result.hits == [] and result.queries == []


def test_current_topic_gets_the_first_slots_and_earlier_topics_one_each() -> None:
    index = StubIndex(
        {
            "helm": [
                hit("memory/k8s.md", 0.9),
                hit("memory/helm.md", 0.8),
                hit("memory/ci.md", 0.7),
            ],
            "dentist": [hit("memory/dentist.md", 0.6), hit("memory/doctor.md", 0.5)],
            "postgres": [hit("memory/postgres.md", 0.5), hit("memory/db.md", 0.4)],
        }
    )
    messages = conversation(
        ("user", "how did the postgres upgrade go"),
        ("user", "book the dentist for tuesday please"),
        ("user", "why does the helm deploy fail now"),
    )
    result = recall_memories(index, messages, k=4)  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == [
        "memory/k8s.md",
        "memory/helm.md",
        "memory/dentist.md",
        "memory/postgres.md",
    ]
    assert result.explain[0].startswith("query 1 (current): ")


def test_free_slots_go_back_to_the_current_topic() -> None:
    index = StubIndex(
        {"helm": [hit("memory/k8s.md", 0.9), hit("memory/helm.md", 0.8), hit("memory/ci.md", 0.7)]}
    )
    messages = conversation(
        ("user", "something nobody wrote a note about"),
        ("user", "why does the helm deploy fail now"),
    )
    result = recall_memories(index, messages, k=3)  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == ["memory/k8s.md", "memory/helm.md", "memory/ci.md"]


def test_a_hit_is_never_shown_twice_and_excluded_hits_are_skipped() -> None:
    shared = hit("memory/k8s.md", 0.9)
    index = StubIndex(
        {
            "helm": [shared, hit("memory/daily.md", 0.85), hit("memory/helm.md", 0.8)],
            "cluster": [shared, hit("memory/cluster.md", 0.6)],
        }
    )
    messages = conversation(
        ("user", "what about the cluster nodes"),
        ("user", "why does the helm deploy fail now"),
    )
    result = recall_memories(  # type: ignore[arg-type]
        index, messages, k=4, exclude=lambda h: h.path == "memory/daily.md"
    )
    paths = [h.path for h in result.hits]
    assert paths == ["memory/k8s.md", "memory/helm.md", "memory/cluster.md"]
    assert len(set(paths)) == len(paths)


# --- The relevance floor and what the section shows -----------------------------------------


def test_hits_under_the_floor_are_not_shown_even_with_free_slots() -> None:
    index = StubIndex(
        {"helm": [hit("memory/helm.md", 0.62), hit("memory/ci.md", 0.41), hit("memory/x.md", 0.2)]}
    )
    messages = conversation(("user", "why does the helm deploy fail now"))
    everything = recall_memories(index, messages, k=4)  # type: ignore[arg-type]
    floored = recall_memories(index, messages, k=4, floor=Floor(hybrid=0.3))  # type: ignore[arg-type]
    assert [h.path for h in everything.hits] == ["memory/helm.md", "memory/ci.md", "memory/x.md"]
    assert [h.path for h in floored.hits] == ["memory/helm.md", "memory/ci.md"]
    assert floored.below_floor == 1
    assert any("relevance floor" in line for line in floored.explain)


def test_hits_far_behind_their_querys_best_are_not_shown() -> None:
    index = StubIndex(
        {
            "helm": [hit("memory/helm.md", 0.8), hit("memory/ci.md", 0.7), hit("memory/x.md", 0.4)],
            "dentist": [hit("memory/dentist.md", 0.45)],  # its own query's best: shown
        }
    )
    messages = conversation(
        ("user", "book the dentist for tuesday please"),
        ("user", "why does the helm deploy fail now"),
    )
    result = recall_memories(  # type: ignore[arg-type]
        index, messages, k=4, floor=Floor(hybrid=0.3, relative=0.75)
    )
    assert [h.path for h in result.hits] == ["memory/helm.md", "memory/ci.md", "memory/dentist.md"]


def test_keyword_hits_are_held_to_their_own_floor() -> None:
    # Without vectors the score is a BM25 share, on another scale than the fused score.
    index = StubIndex(
        {
            "helm": [
                hit("memory/helm.md", 0.7, keyword=True),
                hit("memory/ci.md", 0.5, keyword=True),
            ]
        }
    )
    messages = conversation(("user", "why does the helm deploy fail now"))
    floor = Floor(hybrid=0.3, keyword=0.6)
    result = recall_memories(index, messages, k=4, floor=floor)  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == ["memory/helm.md"]


def test_in_a_handful_of_notes_the_keyword_floor_gives_way_to_the_relative_one() -> None:
    # BM25's IDF means little in a tiny index: a new user's one note that answers the question
    # scores a small share, and is still the answer.
    answers = {
        "staging": [
            hit("memory/staging.md", 0.05, keyword=True),
            hit("memory/other.md", 0.01, keyword=True),
        ]
    }
    messages = conversation(("user", "no idea, check the staging database port please"))
    floor = Floor(hybrid=0.25, keyword=0.4, relative=0.6)
    small = recall_memories(StubIndex(answers, chunks=3), messages, k=4, floor=floor)  # type: ignore[arg-type]
    large = recall_memories(StubIndex(answers, chunks=500), messages, k=4, floor=floor)  # type: ignore[arg-type]
    assert [h.path for h in small.hits] == ["memory/staging.md"]
    assert large.hits == []


def test_the_recency_boost_does_not_lift_a_hit_over_the_floor() -> None:
    boosted = hit("memory/2026-03-02.md", 0.25, recency=1.5)  # ranks at 0.375
    index = StubIndex({"helm": [hit("memory/helm.md", 0.6), boosted]})
    messages = conversation(("user", "why does the helm deploy fail now"))
    result = recall_memories(index, messages, k=4, floor=Floor(hybrid=0.3))  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == ["memory/helm.md"]


def test_a_snippet_that_repeats_a_shown_line_is_a_repeat_and_a_new_fact_is_not() -> None:
    shown = ["Note Late night: suggest deferring non-urgent work", "Working on 1.14.4 is live"]
    assert repeats(
        "After 23:00: suggest deferring non-urgent work; he says so if it can't wait.", shown
    )
    assert not repeats("Priya wants a short note in #incidents after any outage.", shown)
    assert repeats("23:00", shown)  # no content word: says nothing


# --- The warm memory of a daemon that watches the memory files -------------------------------


def test_a_watched_warm_memory_syncs_only_after_files_changed(tmp_path: Path) -> None:
    from assembler.config.files import validate
    from assembler.memory.recall import WarmMemory, synced_memory

    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    warm = WarmMemory(watched=True)
    assert warm.sync_due
    with synced_memory(config, warm=warm) as index:
        assert index.search("lecture", k=1)[0].path == "MEMORY.md"
    assert not warm.sync_due
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "garden.md").write_text("# Garden\n\nTomatoes need staking.\n")
    unwatched = synced_memory(config, warm=warm)  # nobody said a file changed: no sync
    assert (unwatched.report.files_seen, unwatched.report.files_read) == (1, 0)
    assert unwatched.report.chunks_total == 1
    assert unwatched.index.search("tomatoes", k=1) == []
    warm.files_changed()
    synced = synced_memory(config, warm=warm)
    assert (synced.report.files_seen, synced.report.files_changed) == (2, 1)
    assert synced.index.search("tomatoes", k=1)[0].path == "memory/garden.md"
    warm.close()


def test_an_unwatched_warm_memory_syncs_before_every_assembly(tmp_path: Path) -> None:
    from assembler.config.files import validate
    from assembler.memory.recall import WarmMemory, synced_memory

    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    config = validate({"memory": {"model": "none"}}, source=None, workspace=tmp_path)
    warm = WarmMemory()
    synced_memory(config, warm=warm)
    (tmp_path / "garden.md").write_text("# Garden\n\nTomatoes need staking.\n")
    (tmp_path / "MEMORY.md").write_text("# Ray\n\n- Tomatoes, not a lecture.\n")
    again = synced_memory(config, warm=warm)
    assert again.report.files_changed == 1
    assert again.index.search("tomatoes", k=1)[0].path == "MEMORY.md"
    warm.close()


def test_a_note_written_after_the_runs_clock_is_not_a_memory_yet() -> None:
    now = datetime(2026, 3, 2, 19, 42, tzinfo=UTC)

    def said(path: str, snippet: str) -> bool:
        return written_by(replace(hit(path, 0.9), snippet=snippet), now)

    assert said("memory/2026-03-01.md", "21:12 Not raising it again")  # an earlier day
    assert said("memory/2026-03-02.md", "14:00 Deploy attempt 2 timed out")  # earlier today
    assert said("MEMORY.md", "20:00 a time in an undated note says nothing")
    assert not said("memory/2026-03-02.md", "20:00 Upgrade with the secret name")  # later today
    assert not said("memory/2026-03-03.md", "08:00 standup")  # a later day
