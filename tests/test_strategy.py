from __future__ import annotations

from assembler.config import StrategyConfig
from assembler.sentiment import MoodState
from assembler.strategy import choose_strategy

RULES = StrategyConfig().rules


def state(primary: str, confidence: float, messages: int = 5) -> MoodState:
    return MoodState(
        primary=primary,
        primary_score=0.7,
        secondary=None,
        secondary_score=0.0,
        valence=-0.4,
        arousal=0.7,
        confidence=confidence,
        messages=messages,
        trajectory="",
    )


def test_frustration_gets_the_concise_no_preamble_rule_of_the_seed() -> None:
    chosen = choose_strategy(
        state("frustrated", 0.8), RULES, min_confidence=0.25, fallback="neutral"
    )
    assert chosen.mood == "frustrated"
    assert chosen.style.startswith("concise")
    assert chosen.tone.startswith("direct")
    assert chosen.verbosity.startswith("minimal")
    assert chosen.preamble is False
    assert "confidence 0.80" in chosen.reason


def test_every_mood_label_has_a_default_rule() -> None:
    from assembler.sentiment import MOODS

    assert set(MOODS) <= set(RULES)


def test_a_weak_reading_falls_back_and_says_why() -> None:
    chosen = choose_strategy(
        state("frustrated", 0.1), RULES, min_confidence=0.25, fallback="neutral"
    )
    assert chosen.mood == "neutral"
    assert "below 0.25" in chosen.reason


def test_no_messages_and_unknown_moods_fall_back() -> None:
    empty = choose_strategy(
        state("neutral", 0.0, messages=0), RULES, min_confidence=0.25, fallback="neutral"
    )
    assert empty.reason == "no human messages in the window"
    odd = choose_strategy(state("bored", 0.9), RULES, min_confidence=0.25, fallback="neutral")
    assert (odd.mood, odd.reason) == ("neutral", "no rule for mood 'bored'")
