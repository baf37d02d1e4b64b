from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from assembler.context import task as task
from assembler.context.task import (
    MAX_WORDS,
    clip_words,
    current_task,
    sentences,
    summary_line,
    tfidf_similarity,
)
from assembler.memory.embeddings import Embedder
from assembler.transcripts.message import ELISION, Message, Summary
from tests.fakes import FakeEmbedder

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def convo(*turns: str, start: int = 60) -> list[Message]:
    """Alternating human and assistant messages, a minute apart, the first `start` min ago."""
    return [
        Message(
            "user" if i % 2 == 0 else "assistant",
            text,
            NOW - timedelta(minutes=start - i),
            "t.jsonl",
            session_id="s",
        )
        for i, text in enumerate(turns)
    ]


DEPLOY = (
    "the helm deploy of the api keeps failing on the migration job",
    "The migration job waits on a lock held by an idle psql session on the orders table.",
    "kill the idle psql session and rerun the helm deploy",
    "Killed it; the helm deploy finished and the migration job ran on the orders table.",
)


def test_sentences_leave_out_code_blocks_and_pasted_log_lines() -> None:
    text = (
        "the worker crashes at startup, log below. what's wrong?\n"
        "2026-03-01T10:01:03Z ERROR dial tcp 10.0.3.4:6379: connect: connection refused\n"
        '{"level":"fatal","ts":1772440852,"msg":"exit 1"}\n'
        "NAME                   READY   STATUS             RESTARTS   AGE\n"
        "```\nkubectl get pods -n prod\n```\n"
        f"head of a paste{ELISION}and the ask at its end."
    )
    assert sentences(text) == [
        "the worker crashes at startup, log below.",
        "what's wrong?",
        "head of a paste",
        "and the ask at its end.",
    ]


def test_a_sentence_naming_one_long_token_is_still_prose() -> None:
    text = "export GITHUB_TOKEN=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 then run the deploy again"
    assert sentences(text) == [text]


def test_a_long_sentence_is_clipped_at_a_word_boundary() -> None:
    words = [f"word{i}" for i in range(40)]
    clipped = clip_words(" ".join(words), MAX_WORDS)
    assert clipped == " ".join(words[:MAX_WORDS]) + "…"
    assert clip_words("short and sweet", MAX_WORDS) == "short and sweet"


def test_tf_idf_similarity_is_one_with_itself_and_zero_without_shared_words() -> None:
    matrix = tfidf_similarity(
        ["helm deploy failing", "the helm deploys failed again", "lunch at noon"]
    )
    assert matrix[0][0] == pytest.approx(1.0)
    assert matrix[0][1] > 0.3  # 'deploy' and 'deploys' are one term
    assert matrix[0][2] == 0.0 and matrix[1][2] == 0.0


def test_the_task_is_the_humans_sentence_not_an_acknowledgement() -> None:
    choice = current_task(convo(*DEPLOY, "ok, thanks", "You're welcome."), [])
    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"
    assert not choice.from_summary


def test_a_closing_message_moves_the_task_on() -> None:
    choice = current_task(
        convo(*DEPLOY, "helm deploy is through, migration job done on orders, all green"), []
    )
    assert choice.working_on == "helm deploy is through, migration job done on orders, all green"


@pytest.mark.parametrize("embedder", [None, FakeEmbedder()], ids=["tf-idf", "fake-model"])
def test_a_sign_off_after_the_task_does_not_take_over(embedder: Embedder | None) -> None:
    messages = convo(*DEPLOY, "long day, I'm fried. talk tomorrow", "Rest well.")
    choice = current_task(messages, [], embedder=embedder)
    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"
    assert choice.last_sentence is None


def test_a_summary_written_after_the_humans_words_wins_and_an_older_one_does_not() -> None:
    messages = convo(*DEPLOY)
    newer = Summary("Fixing the api deploy's migration lock", NOW, "title")
    choice = current_task(messages, [newer])
    assert choice.from_summary and choice.working_on == "Fixing the api deploy's migration lock"
    older = Summary("## Goal\nShip the old release", NOW - timedelta(hours=2))
    choice = current_task(messages, [older])
    assert not choice.from_summary
    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"


def test_with_only_acknowledgements_the_newest_summary_is_used_whatever_its_age() -> None:
    undated = Summary("Setting up Terraform for the staging VPC", None, "title")
    choice = current_task(convo("yes", "Done.", "ok"), [undated])
    assert choice.working_on == "Setting up Terraform for the staging VPC"
    assert current_task(convo("yes", "Done.", "ok"), []).working_on is None


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "## Goal\n- Get the api release to prod\n\n## Progress\n- tag pushed",
            "Get the api release to prod",
        ),
        (
            "This session is being continued from a previous conversation.\nSummary:\n"
            "1. Primary Request and Intent: speed up the product search query.\n2. Files: x",
            "speed up the product search query.",
        ),
        (
            "Fixing Stripe webhook signature failures on staging",
            "Fixing Stripe webhook signature failures on staging",
        ),
    ],
)
def test_a_summary_gives_its_goal_its_request_or_its_first_sentence(text: str, line: str) -> None:
    assert summary_line(text) == line


def test_only_a_few_dozen_sentences_are_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[int] = []
    original = task.tfidf_similarity

    def counting(texts: list[str]) -> list[list[float]]:
        compared.append(len(texts))
        return original(texts)

    monkeypatch.setattr(task, "tfidf_similarity", counting)
    many = [f"step {i}: migrate table number{i} to the new schema. " * 10 for i in range(200)]
    current_task(convo(*many), [])
    assert compared and compared[0] <= task.MAX_TURNS * task.MAX_PER_TURN + task.CONTEXT_MESSAGES


@pytest.fixture(scope="module")
def real_embedder() -> Iterator[Embedder]:
    from assembler.memory.embeddings import load_embedder

    yield load_embedder("bundled")


@pytest.mark.model
def test_the_real_model_keeps_the_task_through_a_sign_off_and_chit_chat(
    real_embedder: Embedder,
) -> None:
    messages = convo(
        *DEPLOY,
        "helm deploy is through, migration job done on orders, all green",
        "Great, the api is healthy.",
        "long day, I'm exhausted. talk tomorrow",
        "Rest well.",
    )
    choice = current_task(messages, [], embedder=real_embedder)
    assert choice.working_on == "helm deploy is through, migration job done on orders, all green"
    assert "embeddings" in choice.explain[0]


@pytest.mark.model
def test_a_new_task_after_a_closure_in_the_same_turn_is_the_task(real_embedder: Embedder) -> None:
    # TF-IDF alone still picks the closure here (its words are the window's): the model is
    # what tells a new task from the old one's echo.
    messages = convo(
        *DEPLOY,
        "helm deploy is fine now. next: write a cron job that prunes docker images weekly",
        "Here is a cron job that runs docker image prune with a 7 day filter every Sunday.",
    )
    choice = current_task(messages, [], embedder=real_embedder)
    assert choice.working_on == "next: write a cron job that prunes docker images weekly"
