from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.memory_search import Hit
from assembler.recall import conversation_queries, recall_memories
from assembler.transcripts import Message

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def conversation(*turns: tuple[str, str]) -> list[Message]:
    start = NOW - timedelta(minutes=len(turns))
    return [
        Message(role=role, text=text, timestamp=start + timedelta(minutes=i), source="t")  # type: ignore[arg-type]
        for i, (role, text) in enumerate(turns)
    ]


def hit(path: str, score: float, line: int = 1) -> Hit:
    return Hit(
        path=path,
        start_line=line,
        end_line=line + 4,
        score=score,
        vector=score,
        bm25=score,
        recency=1.0,
        snippet=f"about {path}",
        text=f"text of {path}",
        chunk_hash=f"{path}:{line}",
    )


class StubIndex:
    """Answers each query with the hits listed for the first keyword it contains."""

    def __init__(self, answers: dict[str, list[Hit]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def search_many(self, queries: Sequence[str], *, k: int, **options: Any) -> list[list[Hit]]:
        self.asked.extend(queries)
        results = []
        for query in queries:
            key = next((w for w in self.answers if w in query.lower()), None)
            results.append(self.answers.get(key, [])[:k] if key else [])
        return results


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


# --- The warm memory of a daemon that watches the memory files -------------------------------


def test_a_watched_warm_memory_syncs_only_after_files_changed(tmp_path: Path) -> None:
    from assembler.config_load import validate
    from assembler.recall import WarmMemory, synced_memory

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
    from assembler.config_load import validate
    from assembler.recall import WarmMemory, synced_memory

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
