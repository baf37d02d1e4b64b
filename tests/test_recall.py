from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
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

    embedder = None  # lines are chosen by their words

    def __init__(self, answers: dict[str, list[Hit]], chunks: int = 1000) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self.chunks = chunks

    def snippet_weights(self, query: str) -> dict[str, float]:
        # Words as the index stems them: without the punctuation around them.
        words = (w.strip(".,:;!?()'\"") for w in query.lower().split())
        return dict.fromkeys((w for w in words if len(w) > 3), 1.0)

    def chunk_count(self) -> int:
        return self.chunks

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


# --- The relevance floor and what the section shows -----------------------------------------


def test_hits_under_the_floor_are_not_shown_even_with_free_slots() -> None:
    # The lines shown bear on the query: only the chunk floor keeps a hit out here.
    helm = noted("memory/helm.md", "The helm deploy fails on the missing image tag.", 0.62)
    ci = noted("memory/ci.md", "The CI runner blocks each helm deploy for ten minutes.", 0.41)
    index = StubIndex({"helm": [helm, ci, hit("memory/x.md", 0.2)]})
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
                noted("memory/helm.md", "The helm deploy fails on the tag.", 0.7, keyword=True),
                noted("memory/ci.md", "The CI runner blocks each helm deploy.", 0.5, keyword=True),
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


def test_a_note_written_after_the_runs_clock_is_not_a_memory_yet() -> None:
    now = datetime(2026, 3, 2, 19, 42, tzinfo=UTC)

    def said(path: str, snippet: str) -> bool:
        return written_by(replace(hit(path, 0.9), snippet=snippet), now)

    assert said("memory/2026-03-01.md", "21:12 Not raising it again")  # an earlier day
    assert said("memory/2026-03-02.md", "14:00 Deploy attempt 2 timed out")  # earlier today
    assert said("MEMORY.md", "20:00 a time in an undated note says nothing")
    assert not said("memory/2026-03-02.md", "20:00 Upgrade with the secret name")  # later today
    assert not said("memory/2026-03-03.md", "08:00 standup")  # a later day


# --- The line shown: its subject, its date, the newer of two on one subject ------------------


def noted(
    path: str,
    text: str,
    score: float,
    *,
    line: int = 1,
    heading: str = "",
    keyword: bool = False,
) -> Hit:
    return replace(hit(path, score, line, keyword=keyword), text=text, heading=heading)


def shown_lines(result: Any) -> list[str]:
    return [f"{h.subject}: {h.snippet}" for h in result.hits]


def test_a_line_says_its_subject_the_heading_above_it() -> None:
    text = (
        "## Lab cleanup\n- 10:02 Ray started on the lab.\n\n## Later\n"
        '- 21:12 Ray: "yeah yeah, I know". Not raising the disk again before the weekend.\n'
    )
    index = StubIndex({"disk": [noted("memory/garden/runbook.md", text, 0.6, heading="Lab")]})
    messages = conversation(("user", "raising the disk alert again before the weekend?"))
    result = recall_memories(index, messages, k=4, now=NOW)  # type: ignore[arg-type]
    # The sentence that answers, with the one before it in its list item: never a bare
    # fragment ("Not raising the disk again ...").
    assert shown_lines(result) == [
        'Later: 21:12 Ray: "yeah yeah, I know". Not raising the disk again before the weekend.'
    ]


def test_without_a_heading_in_the_chunk_the_subject_is_its_section_then_the_file_name() -> None:
    from assembler.memory.search import subject

    assert subject("- roll back with `helm rollback api 0`", 0, "Infra > Deploys", "x.md") == (
        "Deploys"
    )
    assert subject(
        "- roll back with `helm rollback api 0`", 0, "", "ops/api-deploy-runbook.md"
    ) == ("api deploy runbook")
    assert subject("---\ntitle: API deploys\n---\n- roll back", 3, "", "notes.md") == (
        "API deploys"
    )


def test_a_reply_in_a_log_is_about_the_subject_of_the_entry_it_answers() -> None:
    from assembler.memory.search import subject

    log = (
        "## Evening\n"
        "- 21:10 Lab disk at 86%: Docker up 30 GB since yesterday.\n"
        '- 21:12 Ray: "yeah yeah, I know". Not raising it again before the weekend.\n'
        '- 21:50 Ray: "night".\n'
    )
    assert subject(log, 2, "", "memory/2026-03-01.md") == "Lab disk at 86%"
    # Forty minutes later is not a reply to it, nor is an entry that names its own subject.
    assert subject(log, 3, "", "memory/2026-03-01.md") == "Evening"
    assert subject(log, 1, "", "memory/2026-03-01.md") == "Evening"
    untimed = "- Lab disk: alerts at 85%.\n- Ray: fine, leave it.\n"
    assert subject(untimed, 1, "", "MEMORY.md") == "Lab disk"


def test_a_reply_is_superseded_by_a_newer_line_on_its_subject_in_a_hit_already_taken() -> None:
    # Last night's reply says nothing of the disk by its words; the entry it answers does, and
    # tonight's log, already shown for the question about the disk, has a newer line on it.
    reply = noted(
        "memory/2026-03-01.md",
        "## Evening\n- 21:10 Lab disk at 86%: Docker up 30 GB.\n"
        '- 21:12 Ray: "yeah yeah, I know". Not raising it again before the weekend.\n',
        0.5,
    )
    tonight = noted(
        "memory/2026-03-02.md",
        "## Morning\n- 10:34 Lab disk at 91%: the Docker build cache refilled.\n",
        0.6,
    )
    index = StubIndex({"disk": [tonight], "weekend": [reply]})
    messages = conversation(
        ("user", "leave the weekend plans for later"),
        ("user", "the lab disk alert went off again, how bad?"),
    )
    result = recall_memories(index, messages, k=4, now=NOW)  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == ["memory/2026-03-02.md"]
    assert any("newer than memory/2026-03-01.md" in line for line in result.explain)
    # Alone, the reply is shown under the subject it answers, dated.
    alone = recall_memories(StubIndex({"weekend": [reply]}), messages, k=4, now=NOW)  # type: ignore[arg-type]
    assert [h.subject for h in alone.hits] == ["Lab disk at 86% (2026-03-01)"]


def test_a_line_of_an_older_dated_note_says_its_date_and_todays_does_not() -> None:
    older = noted("memory/2026-02-28.md", "# Sat\n## Lab\n- Frigate grows 8 GB a day.\n", 0.6)
    today = noted("memory/2026-03-02.md", "# Mon\n## Lab\n- 09:10 Frigate pruned.\n", 0.5)
    untitled = noted("memory/2026-02-27.md", "- Frigate retention is 30 days.\n", 0.4)
    index = StubIndex({"frigate": [older, today, untitled]})
    messages = conversation(("user", "how fast does frigate grow?"))
    result = recall_memories(index, messages, k=4, now=NOW)  # type: ignore[arg-type]
    # A note without headings is named by its file: its date, said once.
    assert [h.subject for h in result.hits] == ["Lab (2026-02-28)", "Lab", "2026-02-27"]


def test_of_two_notes_on_one_subject_the_newer_wins_wherever_it_ranks() -> None:
    older = noted(
        "memory/2026-02-28.md",
        "- Lab disk at 84%: Docker images pruned, Frigate recordings kept.\n",
        0.7,
    )
    newer = noted(
        "memory/2026-03-01.md",
        "- 21:10 Lab disk at 86%: Docker build cache refilled, Frigate recordings grew.\n",
        0.5,
    )
    other = noted("memory/garden.md", "- Tomatoes need staking in May.\n", 0.6)
    index = StubIndex({"disk": [older, newer], "tomatoes": [other]})
    messages = conversation(
        ("user", "when do the tomatoes need staking"),
        ("user", "how full is the lab disk now"),
    )
    result = recall_memories(index, messages, k=4, now=NOW)  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == ["memory/garden.md", "memory/2026-03-01.md"]
    assert any("newer than memory/2026-02-28.md" in line for line in result.explain)


def test_a_newer_daily_note_on_the_subject_wins_though_the_floor_keeps_only_the_best() -> None:
    # Last week's lesson answers the words best; tonight's log names the same subject in one
    # entry among others and trails far behind: the relative floor alone would show last week's.
    older = noted(
        "memory/2026-02-24.md",
        "## For MEMORY.md\n- Lab disk: 96% → 84% after prune. Frigate grows 8 GB a day.\n",
        0.6,
    )
    tonight = noted(
        "memory/2026-03-02.md",
        "- 09:10 Standup moved to 10:00.\n"
        "- 10:34 Lab disk at 91%: Docker build cache refilled. Parked for the weekend.\n",
        0.3,
    )
    kept = noted("MEMORY.md", "- Lab disk: alerts at 85% via ntfy.\n", 0.45)
    index = StubIndex({"disk": [older, kept, tonight]})
    messages = conversation(("user", "the lab disk alert went off again, how bad?"))
    floor = Floor(hybrid=0.25, relative=0.95)
    result = recall_memories(index, messages, k=4, floor=floor, now=NOW)  # type: ignore[arg-type]
    assert [h.snippet for h in result.hits] == [
        "10:34 Lab disk at 91%: Docker build cache refilled."
    ]
    assert any("newer than memory/2026-02-24.md" in line for line in result.explain)
    # A rival under the absolute floor, or an undated note (kept on purpose), never wins.
    weak = replace(tonight, score=0.2, vector=0.2, bm25=0.2)
    alone = recall_memories(StubIndex({"disk": [older, weak]}), messages, k=4, floor=floor, now=NOW)  # type: ignore[arg-type]
    assert [h.path for h in alone.hits] == ["memory/2026-02-24.md"]
    undated = recall_memories(
        StubIndex({"disk": [older, kept]}), messages, k=4, floor=floor, now=NOW
    )  # type: ignore[arg-type]
    assert [h.path for h in undated.hits] == ["memory/2026-02-24.md"]


def test_two_lines_that_name_one_subject_before_a_colon_are_on_one_subject() -> None:
    from assembler.memory.recall import same_subject

    lesson = "Lab disk: 96% → 84% after prune. Frigate grows ~8 GB/day, expect the alert again."
    assert same_subject(lesson, "22:34 Lab disk at 91%: the Docker build cache refilled.")
    assert same_subject("11:20 Deploy attempt 1: timed out", "14:00 Deploy attempt 2: again")
    # One word before the colon is a speaker or a label, not a subject.
    assert not same_subject('21:52 Ray: "ok that did it"', '23:07 Ray: "long day, I\'m fried"')
    assert not same_subject("Lab disk: 96% after prune.", "22:34 Lab printer: out of toner.")


def test_two_releases_of_one_series_are_on_one_subject() -> None:
    from assembler.memory.recall import same_subject

    tag = "10:58 Ray pushed the git tag `1.14.3`; the `release` workflow went green."
    assert same_subject(tag, "21:41 Chart fix merged, 1.14.4 built with the semver tag.")
    assert same_subject("Shipped v2.0.1 to staging.", "Rolled out 2.0.3 everywhere.")
    # The same release, another series, a product's line or an address: not a later release.
    assert not same_subject(tag, "19:43 There is no `api:1.14.3` in the registry.")
    assert not same_subject(tag, "Bumped the chart to 1.15.0.")
    assert not same_subject("Postgres 16.4 on prod.", "Plan the Postgres 16.6 upgrade.")
    assert not same_subject("Printer at 10.0.0.12.", "NAS at 10.0.0.14.")


def test_a_later_release_anywhere_in_a_newer_chunk_supersedes_the_line() -> None:
    # The evening's log names the new release in one entry among others; the line of it that
    # is nearest the morning's words is another entry, yet the release entry wins.
    morning = noted(
        "memory/2026-03-02.md",
        "- 08:45 Morning brief sent.\n"
        "- 10:58 Ray pushed the git tag `1.14.3`; the `release` workflow went green.\n",
        0.5,
    )
    evening = noted(
        "memory/2026-03-02.md",
        "- 11:30 Ray pushed the branch and went green on the workflow review.\n"
        "- 11:41 Chart fix merged, 1.14.4 built with the semver tag this time.\n",
        0.4,
        line=20,
    )
    index = StubIndex({"release": [morning, evening]})
    messages = conversation(("user", "is the release workflow green on the tag?"))
    floor = Floor(hybrid=0.25, relative=0.95)
    result = recall_memories(index, messages, k=4, floor=floor, now=NOW)  # type: ignore[arg-type]
    assert [h.snippet for h in result.hits] == [
        "11:41 Chart fix merged, 1.14.4 built with the semver tag this time."
    ]
    # Without the later release the morning's line stands.
    alone = recall_memories(StubIndex({"release": [morning]}), messages, k=4, floor=floor, now=NOW)  # type: ignore[arg-type]
    assert [h.snippet for h in alone.hits] == [
        "10:58 Ray pushed the git tag `1.14.3`; the `release` workflow went green."
    ]


def test_lines_written_after_the_runs_clock_are_not_shown() -> None:
    text = "- 09:00 Deploy failed again.\n- 20:00 Deploy fixed with the secret name.\n"
    index = StubIndex({"deploy": [noted("memory/2026-03-02.md", text, 0.6)]})
    messages = conversation(("user", "is the deploy fixed with the secret name?"))
    # NOW is 12:00: the 20:00 line, the better answer, was not written yet.
    result = recall_memories(index, messages, k=4, now=NOW)  # type: ignore[arg-type]
    assert [h.snippet for h in result.hits] == ["09:00 Deploy failed again."]
    later = noted("memory/2026-03-03.md", text, 0.6)  # a note of tomorrow: not there yet
    empty = recall_memories(StubIndex({"deploy": [later]}), messages, k=4, now=NOW)  # type: ignore[arg-type]
    assert empty.hits == []


def test_a_hit_whose_line_does_not_bear_on_the_query_is_not_shown() -> None:
    # The chunk reaches the floor on its other lines; the best line it has for this question
    # shares one word of five with it: the mean of the two is under the floor. A chunk as
    # relevant whose line answers the question is shown.
    off = noted("memory/house.md", "- TODO: call the plumber about the tap.\n", 0.26)
    on = noted(
        "memory/parser.md", "- TODO: fix the parser tokenizer before the lexer module.\n", 0.26
    )
    messages = conversation(("user", "fix the todo in the parser tokenizer module lexer"))
    floor = Floor(hybrid=0.25, relative=0.6)
    assert floor.keep([off]) == [off]
    strict = recall_memories(StubIndex({"todo": [off]}), messages, k=4, floor=floor, now=NOW)  # type: ignore[arg-type]
    assert strict.hits == []
    assert strict.below_floor == 1
    shown = recall_memories(StubIndex({"todo": [on]}), messages, k=4, floor=floor, now=NOW)  # type: ignore[arg-type]
    assert [h.path for h in shown.hits] == ["memory/parser.md"]


def test_the_hits_come_best_first_whatever_query_found_them() -> None:
    index = StubIndex(
        {"helm": [hit("memory/helm.md", 0.3)], "postgres": [hit("memory/postgres.md", 0.513)]}
    )
    messages = conversation(
        ("user", "how did the postgres upgrade go"), ("user", "why does the helm deploy fail")
    )
    result = recall_memories(index, messages, k=4, now=NOW)  # type: ignore[arg-type]
    assert [h.path for h in result.hits] == ["memory/postgres.md", "memory/helm.md"]


def test_a_line_is_superseded_by_a_newer_line_of_today_on_its_subject() -> None:
    from datetime import date

    from assembler.memory.recall import superseded

    today = date(2026, 3, 2)
    newest = ["- 22:34 Lab disk at 91%: Docker build cache refilled, Frigate +23 GB."]
    yesterday = "21:10 Lab disk at 86%: Docker build cache growing, Frigate too."
    assert superseded(yesterday, date(2026, 3, 1), today, newest)
    assert superseded(
        "10:02 Lab disk at 96%: Docker build cache full, Frigate", today, today, newest
    )
    assert not superseded(
        "23:00 Lab disk at 92%: Docker build cache, Frigate", today, today, newest
    )
    assert not superseded(yesterday, None, today, newest)  # MEMORY.md is kept on purpose
    assert not superseded("Frigate grows 8 GB a day.", date(2026, 3, 1), today, newest)


def test_in_a_log_an_entry_gives_way_to_a_later_one_on_its_subject() -> None:
    import numpy as np

    from assembler.memory.search import line_of

    text = (
        "- 11:20 Deploy attempt 1 timed out.\n"
        "- 12:00 Lunch with Sam.\n"
        "- 14:00 Deploy attempt 2 timed out again.\n"
    )
    deploy, lunch = np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)
    vectors = np.stack([deploy, lunch, 0.8 * deploy + 0.6 * lunch])  # the third: cosine 0.8
    logged = noted("memory/2026-03-02.md", text, 0.6)
    scores = [0.9, 0.1, 0.5]  # the first entry answers best, the newer one says how it stands
    line = line_of(logged, scores, {}, vectors=vectors)
    assert line is not None and line.text == "14:00 Deploy attempt 2 timed out again."
    # Not yet written (a run at 13:00): the first entry is the newest there is.
    early = line_of(logged, scores, {}, vectors=vectors, keep=lambda s: not s.startswith("14"))
    assert early is not None and early.text == "11:20 Deploy attempt 1 timed out."
    # Without vectors, or in a note that is not a log, the best sentence is the line.
    assert line_of(logged, scores, {}) == replace(line, text=early.text, score=0.9, vector=None)
    plain = noted("memory/runbook.md", text.replace("- 11:20 ", "- ").replace("14:00 ", ""), 0.6)
    best = line_of(plain, scores, {}, vectors=vectors)
    assert best is not None and best.text == "Deploy attempt 1 timed out."
