from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from assembler.config.schema import StrategyConfig
from assembler.mood.model import analyze, load_mood_model
from assembler.mood.strategy import Strategy, choose_strategy
from assembler.mood.window import MoodState, Scorer
from assembler.transcripts.message import Message

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
    from assembler.mood.window import MOODS

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


def test_a_strategy_that_fires_is_not_marked_as_no_signal() -> None:
    chosen = choose_strategy(
        state("frustrated", 0.8), RULES, min_confidence=0.25, fallback="neutral"
    )
    assert chosen.no_signal is False


def test_every_fallback_is_marked_as_no_signal() -> None:
    for mood in (state("frustrated", 0.1), state("neutral", 0.0, messages=0), state("bored", 0.9)):
        chosen = choose_strategy(mood, RULES, min_confidence=0.25, fallback="neutral")
        assert chosen.no_signal is True
        assert chosen.mood == "neutral"


def test_a_neutral_primary_is_no_clear_signal_however_sure() -> None:
    chosen = choose_strategy(state("neutral", 0.2), RULES, min_confidence=0.25, fallback="neutral")
    assert chosen.no_signal is True
    assert (
        chosen.reason == "no clear emotion in 5 human messages (confidence 0.20 that there is one)"
    )


# --- with the real model: fires on clearly emotional windows, not on neutral ones ----------------

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HALF_LIFE = timedelta(minutes=20)
EMOTIONAL_WINDOWS = {
    "frustrated": (
        "the deploy failed again",
        "WHY is it still crashing?? this is the third time today, I just want it shipped",
    ),
    "anxious": (
        "ok, next is the payments migration",
        "honestly I'm really nervous about this one, I'm scared we lose customer data",
    ),
    "tired": (
        "that's the last test fixed",
        "long day, I'm exhausted and can't think straight anymore",
    ),
    "grateful": (
        "it works now!",
        "thank you so much, that was a huge help, really appreciate it",
    ),
}
NEUTRAL_WINDOWS = (
    ("can you list the files in src/", "run the tests please"),
    ("what does parse_config return for an empty file?", "ok, and where is it called from?"),
    ("rename the helper to load_rows", "then update the two call sites"),
    ("check the CI log for the lint step", "use the same flags as the Makefile"),
)


def window(texts: tuple[str, ...], model: Scorer | None = None) -> MoodState:
    """The state of the window of `texts`, two minutes apart, read by `model` (default: the
    n-gram model alone, the fallback without an embedder)."""
    messages = [
        Message("user", text, NOW - timedelta(minutes=2 * (len(texts) - 1 - i)), "t.jsonl")
        for i, text in enumerate(texts)
    ]
    scorer = model if model is not None else load_mood_model()
    return analyze(messages, now=NOW, half_life=HALF_LIFE, model=scorer).combined


def choose(mood: MoodState) -> Strategy:
    config = StrategyConfig()
    return choose_strategy(
        mood, config.rules, min_confidence=config.min_confidence, fallback=config.fallback
    )


@pytest.mark.parametrize("mood", sorted(EMOTIONAL_WINDOWS))
def test_the_strategy_fires_on_a_clearly_emotional_window_with_its_mood(mood: str) -> None:
    read = window(EMOTIONAL_WINDOWS[mood])
    chosen = choose(read)
    assert chosen.no_signal is False, read.explain
    assert chosen.mood == mood


@pytest.mark.parametrize("texts", NEUTRAL_WINDOWS)
def test_the_strategy_stays_off_on_a_neutral_window(texts: tuple[str, ...]) -> None:
    read = window(texts)
    chosen = choose(read)
    assert chosen.no_signal is True, read.explain
    assert chosen.reason.startswith("no clear emotion")


# --- with the embedding head: a clear emotion in the latest messages fires, nothing else does ----


@pytest.fixture(scope="module")
def reader() -> Scorer:
    from assembler.memory.embeddings import load_embedder

    model = load_mood_model(embedder=load_embedder("bundled"))
    assert model.reads_embeddings, model.embedder_failed
    return model


# The latest message shows the emotion clearly (in our own words; the kinds the n-gram model
# missed), after a plain request.
CLEAR_WINDOWS = {
    "insult in a question": (
        "frustrated",
        ("deploy the api to staging", "are you totally brain dead?? what about the worker pods??"),
    ),
    "insult": ("frustrated", ("fix the import", "you muppet, that is the wrong repo")),
    "exasperated, keep it short": (
        "frustrated",
        ("run the suite", "still red!! this is absurd. give me one line, no essay"),
    ),
    "happy swearing": (
        "happy",
        ("rerun the migration", "holy hell, it all went through, you absolute legend"),
    ),
    "a death in a request": (
        "sad",
        ("check my calendar for friday", "my grandfather passed away, please clear next week"),
    ),
    "German": (
        "frustrated",
        ("starte den Server neu", "verdammt, es geht schon wieder nicht, das nervt"),
    ),
    "Chinese": ("frustrated", ("重启一下服务", "怎么还是不行？气死我了")),
}
PLAIN_WINDOWS = (
    *NEUTRAL_WINDOWS,
    ("what does parse_config return for an empty file?", "and where is it called from?"),
    ("kill the process on port 8080", "then restart the dev server"),
    ("Bitte prüf die Logs von gestern", "und schreib mir eine kurze Zusammenfassung"),
    ("帮我看一下这个函数", "顺便把测试也跑一下"),
    ("你好", "你是什么模型"),
    ("名前を覚えてね", "珀杏ね"),
)


@pytest.mark.model
@pytest.mark.parametrize("kind", sorted(CLEAR_WINDOWS))
def test_with_the_embedding_head_a_clear_emotion_in_the_latest_message_fires(
    reader: Scorer, kind: str
) -> None:
    mood, texts = CLEAR_WINDOWS[kind]
    read = window(texts, reader)
    chosen = choose(read)
    assert chosen.no_signal is False, read.explain
    assert chosen.mood == mood


@pytest.mark.model
@pytest.mark.parametrize("texts", PLAIN_WINDOWS)
def test_with_the_embedding_head_plain_requests_and_questions_do_not_fire(
    reader: Scorer, texts: tuple[str, ...]
) -> None:
    read = window(texts, reader)
    chosen = choose(read)
    assert chosen.no_signal is True, read.explain
    assert chosen.reason.startswith("no clear emotion")


@pytest.mark.model
def test_with_the_embedding_head_the_strategy_fires_on_the_fallbacks_clear_windows(
    reader: Scorer,
) -> None:
    # what the n-gram model already read right, the embedding head reads right too
    for mood, texts in EMOTIONAL_WINDOWS.items():
        chosen = choose(window(texts, reader))
        assert (chosen.no_signal, chosen.mood) == (False, mood)


@pytest.mark.parametrize("before", ["frustrated", "anxious", "tired"])
@pytest.mark.parametrize("now", ["happy", "grateful"])
def test_a_warm_strategy_never_follows_a_negative_reading(before: str, now: str) -> None:
    from dataclasses import replace

    from assembler.mood.window import TrajectoryPoint

    at = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    points = [
        TrajectoryPoint(at - timedelta(minutes=3), before, 0.8, -0.5),
        TrajectoryPoint(at - timedelta(minutes=1), now, 0.7, 0.5),
    ]
    rules = StrategyConfig()
    mixed = replace(state(now, 0.9), points=points)
    chosen = choose_strategy(
        mixed, rules.rules, min_confidence=rules.min_confidence, fallback=rules.fallback
    )
    assert chosen.no_signal and before in chosen.reason
    # Once the negative reading is older than the newest few, the warm strategy fires.
    calm = [TrajectoryPoint(at - timedelta(minutes=m), "neutral", 0.6, 0.0) for m in (3, 2, 1)]
    settled = replace(state(now, 0.9), points=[points[0], *calm, points[1]])
    assert (
        choose_strategy(
            settled, rules.rules, min_confidence=rules.min_confidence, fallback=rules.fallback
        ).mood
        == now
    )
