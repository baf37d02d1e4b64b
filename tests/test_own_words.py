"""Tests of assembler/mood/own_words.py: the mood is read from the human's own words, not from
what they quote or paste."""

from __future__ import annotations

import pytest

from assembler.mood.own_words import own_words


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('the spec says "users will be furious if this fails" — is that still true?', "is that"),
        ('what does this log mean?\n2026-03-01T10:01:03Z ERROR fatal: {"code": 137}', "log mean"),
        ("this is it:\n```\nraise HorribleError('I hate this')\n```\nthoughts?", "thoughts?"),
        ("> I am so angry at this build\nwho wrote that?", "who wrote that?"),
        ("why does `panic_on_fail` exist", "why does"),
        ("「最悪のエラーです本当に」って何?", "って何"),
    ],
)
def test_quoted_pasted_and_code_text_is_left_out(text: str, kept: str) -> None:
    words = own_words(text)
    assert kept in words
    for gone in ("furious", "ERROR", "hate", "angry", "panic", "最悪"):
        assert gone not in words


def test_the_humans_own_feelings_and_emoji_stay() -> None:
    text = 'ugh, this is the third time today 😤😤\nI said "fine" but it is not'
    assert own_words(text) == text


def test_a_message_that_is_only_a_paste_has_no_own_words() -> None:
    assert own_words("```\nTraceback (most recent call last):\n```") == ""


@pytest.mark.parametrize(
    "text",
    ['"I am done with this broken deploy, honestly"', "“why is it still red after the fix”"],
)
def test_a_message_that_is_only_a_quotation_is_read_whole(text: str) -> None:
    # what else the writer says is in it (a message put in quotes, speech reported)
    assert own_words(text) == text


def test_of_a_quotation_and_code_only_the_quotation_is_read_and_never_the_code() -> None:
    text = '"furious about this" ```\nraise Error()\n```'
    assert own_words(text) == '"furious about this"'
    assert own_words('> "so angry at it"\n```\nexit 1\n```') == ""


def test_the_mood_model_reads_a_message_without_what_it_quotes() -> None:
    from assembler.mood.model import load_mood_model

    model = load_mood_model()
    quoting = model.score('the meme says "I am so furious and angry, I hate everything" lol ok')
    own = model.score("the meme says lol ok")
    assert quoting.primary == own.primary
    assert quoting.scores == own.scores
