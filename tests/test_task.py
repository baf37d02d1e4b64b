from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from assembler.context import task as task
from assembler.context.task import (
    MAX_WORDS,
    clip_words,
    current_task,
    sentences,
    summary_line,
)
from assembler.transcripts.message import ELISION, Message, Summary

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


def test_the_task_is_the_humans_sentence_not_an_acknowledgement() -> None:
    choice = current_task(convo(*DEPLOY, "ok, thanks", "You're welcome."), [])
    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"
    assert not choice.from_summary


def test_a_closing_message_moves_the_task_on() -> None:
    choice = current_task(
        convo(*DEPLOY, "helm deploy is through, migration job done on orders, all green"), []
    )
    assert choice.working_on == "helm deploy is through, migration job done on orders, all green"
    assert choice.finished


def test_a_sign_off_after_the_task_does_not_take_over() -> None:
    messages = convo(*DEPLOY, "long day, I'm fried. talk tomorrow", "Rest well.")
    choice = current_task(messages, [])
    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"
    assert choice.last_sentence is None
    assert choice.finished


def test_a_request_of_the_human_beats_the_hosts_summary_new_or_old() -> None:
    # A summary or title stands in only when the window holds no request of the human.
    messages = convo(*DEPLOY)
    newer = Summary("Fixing the api deploy's migration lock", NOW, "title")
    older = Summary("## Goal\nShip the old release", NOW - timedelta(hours=2))
    for summary in (newer, older):
        choice = current_task(messages, [summary])
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


def test_only_the_newest_turns_are_read_for_the_request() -> None:
    fillers = ["ok", "Sure."] * task.MAX_TURNS
    assert current_task(convo(*DEPLOY[:2], *fillers), []).working_on is None
    short = ["ok", "Sure."] * (task.MAX_TURNS - 1)
    choice = current_task(convo(*DEPLOY[:2], *short), [])
    assert choice.working_on == DEPLOY[0]


def test_the_outcome_stays_the_line_through_chit_chat_and_a_sign_off() -> None:
    messages = convo(
        *DEPLOY,
        "helm deploy is through, migration job done on orders, all green",
        "Great, the api is healthy.",
        "long day, I'm exhausted. talk tomorrow",
        "Rest well.",
    )
    choice = current_task(messages, [])
    assert choice.working_on == "helm deploy is through, migration job done on orders, all green"
    assert choice.finished


def test_a_new_task_after_a_closure_in_the_same_turn_is_the_task() -> None:
    messages = convo(
        *DEPLOY,
        "helm deploy is fine now. next: write a cron job that prunes docker images weekly",
        "Here is a cron job that runs docker image prune with a 7 day filter every Sunday.",
    )
    choice = current_task(messages, [])
    assert choice.working_on == "next: write a cron job that prunes docker images weekly"
    assert not choice.finished


@pytest.mark.parametrize(
    ("turns", "line"),
    [
        # A newer request replaces an older task, however short.
        (
            (*DEPLOY, "thanks! please update CLAUDE.md with the deploy steps", "Done."),
            "please update CLAUDE.md with the deploy steps",
        ),
        # A question without a question mark is a request.
        (("what model are you on", "A small one."), "what model are you on"),
        # A request in another language, cut at a sentence.
        (("帮我分析下这只股票的风险。然后写个总结", "好的。"), "帮我分析下这只股票的风险。"),
        (
            ("Bitte untersuche, warum der Voice-Server nach dem Neustart stumm ist.", "Ok."),
            "Bitte untersuche, warum der Voice-Server nach dem Neustart stumm ist.",
        ),
        # A bare slash command the human ran is what they asked for.
        (("/init", "Created CLAUDE.md."), "/init"),
        # The request, not the insult around it.
        (
            ("are you fucking stupid? what about the tool and user backgrounds??", "Sorry."),
            "what about the tool and user backgrounds??",
        ),
        # A pasted log line is never the task; the question after it is.
        (
            (
                "[theme] Detected truecolor mode (COLORTERM=truecolor, TERM=xterm-256color)\n"
                "why are the colours off in the terminal?",
                "Let me check.",
            ),
            "why are the colours off in the terminal?",
        ),
        # A request that only points back is shown after the request it points to.
        (
            (
                "the staging deploy of billing fails on the healthcheck",
                "The probe port is wrong.",
                "fix it",
                "On it.",
            ),
            "the staging deploy of billing fails on the healthcheck → fix it",
        ),
        # What the agent keeps doing is the matter; the words quoted ask nothing of it.
        (
            (
                "deploy the docs site",
                "Running it.",
                'you keep saying "The build is done. Please check the preview now." but it is not',
                "Sorry.",
            ),
            'you keep saying "The build is done. Please check the preview now." but it is not',
        ),
    ],
)
def test_working_on_is_the_humans_latest_request(turns: tuple[str, ...], line: str) -> None:
    choice = current_task(convo(*turns), [])

    assert choice.working_on == line
    assert not choice.finished


@pytest.mark.parametrize(
    "closing", ["done with this repo for tonight", "night", "that's all for today", "晚安"]
)
def test_a_closing_says_the_task_is_finished(closing: str) -> None:
    choice = current_task(convo(*DEPLOY, closing, "Good night."), [])

    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"
    assert choice.finished


@pytest.mark.parametrize("filler", ["Test", "Hello Jarvis.", "no reply?", "怎么样了", "ok thanks"])
def test_greetings_tests_and_nudges_are_no_task(filler: str) -> None:
    choice = current_task(convo(*DEPLOY, filler, "Here."), [])

    assert choice.working_on == "kill the idle psql session and rerun the helm deploy"
    assert not choice.finished


def test_without_a_request_the_summary_gives_only_its_goal_sentence() -> None:
    summary = Summary(
        "I'm ready to summarize.\n\n## Goal\nMove the blog to Hugo\n\n## Decisions\n- x", NOW
    )

    choice = current_task(convo("hi", "Hello!", "ok", "Sure."), [summary])

    assert choice.from_summary and choice.working_on == "Move the blog to Hugo"


@pytest.mark.parametrize(
    ("turns", "line", "question"),
    [
        # A choice between what the agent offered.
        (
            ("can you check my calendar for tomorrow", "Which calendar: Google or Apple?", "Apple"),
            "Apple",
            "Which calendar: Google or Apple?",
        ),
        # An approval, in any of the hosts' users' languages.
        (
            ("fix the parser", "Fixed. Shall I also update the README?", "yes"),
            "yes",
            "Shall I also update the README?",
        ),
        (
            ("corrige le parseur", "C'est fait. Je mets aussi à jour le README ?", "oui"),
            "oui",
            "Je mets aussi à jour le README ?",
        ),
        # A number picked from the agent's numbered list: the item it picks.
        (
            (
                "set up git flow",
                "Which protection do you want?\n1. develop only\n2. main and develop",
                "2",
            ),
            "2",
            "main and develop",
        ),
        (
            (
                "set up git flow",
                "Next options:\n1. protect develop\n2. require reviews\n3. tag releases",
                "1 + 2",
            ),
            "1 + 2",
            "protect develop; require reviews",
        ),
        # A menu's code, as persona menus mark their commands.
        (
            (
                "load the dev agent",
                "Menu:\n- [CH] Chat with the agent\n- [CR] Code review of a story\nYour pick?",
                "CR",
            ),
            "CR",
            "Code review of a story",
        ),
        # ... numbered as well, with the request for a pick that is no question
        (
            (
                "load the dev agent",
                "Agent Dev ready.\n\n1. `[MH]` Redisplay the menu\n2. `[DS]` Dev story: write the"
                " next story\n3. `[CR]` Code review: a review across several facets\n\n"
                "En attente de ta commande (numéro, trigger, ou texte).",
                "CR",
            ),
            "CR",
            "Code review: a review across several facets",
        ),
        # An answer the agent offered, marked off, without a question mark.
        (
            (
                "review the config story",
                "Step 1 done: 16 files, all in the git changes.\n\n"
                "Continuer vers l'étape 2 ? (`y` / `n` / `edit`)",
                "y",
            ),
            "y",
            "Continuer vers l'étape 2 ? (`y` / `n` / `edit`)",
        ),
        (
            (
                "review the config story",
                "File not found.\n\nConfirme ce fichier pour la review (`oui`) ou donne un autre"
                " chemin exact.",
                "oui",
            ),
            "oui",
            "Confirme ce fichier pour la review (`oui`) ou donne un autre chemin exact.",
        ),
        # A path given where the agent asked for a file in the imperative.
        (
            (
                "run the code review",
                "[CR][Step 1] Name the story file to audit (full or relative path).",
                "stories/1-2-user-auth.md",
            ),
            "stories/1-2-user-auth.md",
            "[CR][Step 1] Name the story file to audit (full or relative path).",
        ),
    ],
)
def test_a_short_answer_is_shown_with_the_question_it_answers(
    turns: tuple[str, ...], line: str, question: str
) -> None:
    choice = current_task(convo(*turns), [])

    assert choice.working_on == line
    assert choice.answering == question


def test_thanks_after_a_question_answer_nothing_and_the_request_stands() -> None:
    choice = current_task(
        convo("rotate the api keys on staging", "Rotated. Anything else?", "merci beaucoup"), []
    )
    assert choice.working_on == "rotate the api keys on staging"
    assert choice.answering is None


@pytest.mark.parametrize("answer", ["ok", "y", "oui"])
def test_an_acknowledgement_of_a_report_answers_nothing_and_the_request_stands(
    answer: str,
) -> None:
    # the agent offered nothing and asked nothing: the "ok" is no answer
    choice = current_task(
        convo(
            "rotate the api keys on staging", "Rotated the keys (`prod` was not touched).", answer
        ),
        [],
    )
    assert choice.working_on == "rotate the api keys on staging"
    assert choice.answering is None


def test_a_report_of_what_the_human_sees_now_is_the_current_work() -> None:
    choice = current_task(
        convo(
            "add a retry to the upload worker",
            "Added three retries with backoff.",
            "after the change the timeout still shows up once in ten runs",
        ),
        [],
    )
    assert choice.working_on == "after the change the timeout still shows up once in ten runs"


def test_the_newest_of_several_reports_is_the_task_not_the_last_request() -> None:
    reports = [
        "the cache hit rate on the eu nodes dropped to forty percent",
        "Looking.",
        "the us nodes stay at ninety percent with the same config file",
        "Noted.",
    ]
    choice = current_task(convo("tune the cache eviction", "Tuned.", *reports), [])
    assert choice.working_on == "the us nodes stay at ninety percent with the same config file"


@pytest.mark.parametrize(
    "remark", ["hmm", "lol", "long day, I'm fried", "ok thanks", "gracias", "ありがとう"]
)
def test_a_remark_or_thanks_leaves_the_older_request_as_the_task(remark: str) -> None:
    choice = current_task(convo("rotate the api keys on staging", "Rotated.", remark), [])
    assert choice.working_on == "rotate the api keys on staging"


def test_a_summary_whose_goal_is_a_placeholder_stands_in_for_nothing() -> None:
    summary = Summary("## Goal\n- (none)\n\n## Progress\n- [ ] (none)", NOW, "compaction")
    assert current_task(convo("hi", "Hello!"), [summary]).working_on is None
