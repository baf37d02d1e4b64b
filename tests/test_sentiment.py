"""Tests of the mood model (assembler/mood/model.py, semantic.py, window.py): per-message moods,
the rule layer, the window, the weights files.

The per-message tests use the bundled n-gram model (it loads in well under a second; it is the
fallback without an embedder); those marked `model` read with the embedding head and the real
bundled embedding model. The window tests use `FixedModel`, a fake with hand-set moods, so they
test the window and not the model.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from assembler.errors import ModelError
from assembler.mood import model as sentiment
from assembler.mood import semantic
from assembler.mood.lexicons import (
    ANXIOUS_PATTERNS,
    FRUSTRATED_EXTRA_PATTERNS,
    FRUSTRATED_PATTERNS,
    GRATEFUL_PATTERNS,
    HAPPY_PATTERNS,
    SAD_PATTERNS,
    TIRED_EXTRA_PATTERNS,
    TIRED_PATTERNS,
    URGENT_PATTERNS,
    lexicons_fingerprint,
    rule_hits,
)
from assembler.mood.model import (
    DEFAULT_MODEL_PATH,
    SEMANTIC_DENSE,
    MoodModel,
    analyze,
    char_wb_ngrams,
    load_mood_model,
    mood_embedder,
    word_ngrams,
)
from assembler.mood.own_words import own_words
from assembler.mood.window import (
    DEFAULT_WINDOW_CALIBRATION,
    MOODS,
    MessageMood,
    WindowCalibration,
)
from assembler.transcripts import message as transcripts
from assembler.transcripts.message import Message

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def model() -> MoodModel:
    return load_mood_model()


# --- per message ----------------------------------------------------------------------------------


def test_every_message_gets_a_score_for_every_mood_and_values_in_range(model: MoodModel) -> None:
    texts = ["This is broken again!!!", "thanks", "how does this work?", "ok", "x" * 9000]
    for mood in model.score_many(texts):
        assert list(mood.scores) == list(MOODS)
        assert all(0.0 <= s <= 1.0 for s in mood.scores.values())
        assert sum(mood.scores.values()) == pytest.approx(1.0, abs=1e-5)
        assert -1.0 <= mood.valence <= 1.0
        assert 0.0 <= mood.arousal <= 1.0
        assert -1.0 <= mood.compound <= 1.0
        assert mood.primary in MOODS
        assert mood.primary_score == max(mood.scores.values())
        assert mood.secondary != mood.primary


def test_compound_is_vaders_own_score_of_the_raw_text(model: MoodModel) -> None:
    vader = SentimentIntensityAnalyzer()
    texts = ["GREAT!!!", "great", "this is NOT good :(", "Meh.  Whatever..."]
    moods = model.score_many(texts)
    for text, mood in zip(texts, moods, strict=True):
        assert mood.compound == vader.polarity_scores(text)["compound"]
    # case and punctuation reach VADER: they raise the intensity
    assert moods[0].compound > moods[1].compound


def test_score_many_gives_the_same_moods_as_scoring_one_by_one(model: MoodModel) -> None:
    texts = [
        f"message {i}: {'this fails again' if i % 2 else 'thanks, works now'}" for i in range(7)
    ]
    texts += ["", "   ", "I'm exhausted", "need this fixed asap"]
    many = model.score_many(texts)
    for text, mood in zip(texts, many, strict=True):
        one = model.score(text)
        assert one.primary == mood.primary
        assert one.scores == pytest.approx(mood.scores, abs=1e-6)
        assert one.valence == pytest.approx(mood.valence, abs=1e-6)


def test_a_window_scored_again_scores_only_its_new_texts_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = load_mood_model(DEFAULT_MODEL_PATH)  # its own cache, not the shared model's
    scored: list[str] = []
    block = fresh._score_block

    def counting(texts: Sequence[str]) -> list[MessageMood]:
        scored.extend(texts)
        return block(texts)

    monkeypatch.setattr(fresh, "_score_block", counting)
    window = ["WHY is it failing again", "ok thanks", "WHY is it failing again"]
    first = fresh.score_many(window)
    assert scored == ["WHY is it failing again", "ok thanks"]
    second = fresh.score_many([*window[1:], "it works now"])
    assert scored[2:] == ["it works now"]
    assert second[:2] == first[1:]
    assert second[2] == block(["it works now"])[0]


def test_score_many_of_no_texts_is_an_empty_list(model: MoodModel) -> None:
    assert model.score_many([]) == []


def test_clearly_frustrated_text_reads_frustrated_with_negative_valence(model: MoodModel) -> None:
    mood = model.score("This is so annoying, the build fails AGAIN and nothing works. Ugh!!!")
    assert mood.primary == "frustrated"
    assert mood.valence < -0.2
    assert mood.arousal > 0.5


def test_thanks_reads_grateful_or_happy_with_positive_valence(model: MoodModel) -> None:
    mood = model.score("thank you so much!")
    assert mood.primary in ("grateful", "happy")
    assert mood.scores["grateful"] + mood.scores["happy"] > 0.7
    assert mood.valence > 0.2


def test_a_question_about_how_something_works_reads_curious_or_confused(
    model: MoodModel,
) -> None:
    assert model.score("How does the cache invalidation work here?").primary == "curious"
    assert model.score("I don't understand, what does this error even mean?").primary == "confused"


def test_fear_reads_anxious_and_sorrow_reads_sad(model: MoodModel) -> None:
    assert model.score("I'm really worried the migration will lose our data").primary == "anxious"
    assert model.score("I'm so sad we have to drop this feature").primary == "sad"


def test_blank_text_is_neutral_with_zero_valence(model: MoodModel) -> None:
    mood = model.score("  \n ")
    assert mood.primary == "neutral"
    assert mood.primary_score == 1.0
    assert mood.valence == 0.0


# --- rule layer: urgent and tired -----------------------------------------------------------------

URGENT_EXAMPLES = (
    "deploy it asap",
    "this is URGENT",
    "fix it right now!",
    "we need this done today",
    "please revert that commit immediately",
    "the deadline is Friday",
    "this is an emergency",
    "prod is down",
    "there is an outage in eu-west",
    "hurry please",
    "I need the report by EOD",
    "it is time-sensitive",
    "critical bug in the login",
    "that's a release blocker",
    "this is a sev1",
    "we have no time left",
)
TIRED_EXAMPLES = (
    "I'm so tired",
    "completely exhausted",
    "long day, sorry",
    "I can't think straight anymore",
    "I need sleep",
    "getting sleepy",
    "I'm burnt out",
    "honestly I'm fried",
    "feeling drained",
    "had no sleep last night",
    "my brain is fried",
    "barely awake here",
    "can't keep my eyes open",
    "was up all night",
    "pulled an all-nighter",
    "*yawn*",
    "zzzz",
    "night",
    "ok, I'm off to bed",
)
FRUSTRATED_EXAMPLES = (
    "why is this STILL broken?!",
    "the build is failing again",
    "ffs. ok, use the sha tag",
    "for god's sake, not again",
    "seriously? fine.",
    "are you kidding me",
    "this is the third time today",
    "it broke the second time this month",
    "WHY does it do that",
)
# The extended lexicons of the model with the embedding head.
FRUSTRATED_EXTRA_EXAMPLES = (
    "you complete muppet, that's the wrong branch",
    "are you even blind? the error is on line 3",
    "what the hell happened to the config",
    "this is unacceptable",
    "you shouldn't have touched the lockfile",
    "you keep ignoring the second half of my message",
    "I already told you the port is 8443",
    "still no reply?",
    "did you not run the tests before you pushed?",
    "langsam nervt es, dass der Build hängt",
    "der Test schlägt schon wieder fehl",
    "bist du eigentlich blöd?",
    "怎么又报错了",
    "真是气死我了",
    "数据全都不对",
    "joder, otra vez el mismo error",
    "el servidor sigue sin arrancar",
    "putain, le déploiement a encore planté",
    "j'en ai marre, ça marche toujours pas",
    "またエラーが出た",
    "最悪、全部消えた",
)
TIRED_EXTRA_EXAMPLES = (
    "ich bin total müde, morgen weiter",
    "今天好累，明天再说",
    "estoy agotada, lo vemos mañana",
    "je suis crevé, on continue demain",
    "疲れた、続きは明日",
)
HAPPY_EXAMPLES = (
    "honestly you're a wizard",
    "hell yes, ship it",
    "it finally works!",
    "holy crap, the whole thing passes",
    "das ist genial",
    "ich freue mich auf morgen",
    "太好了，谢谢你",
)
GRATEFUL_EXAMPLES = ("Danke dir für die Hilfe", "谢谢你帮我看")
SAD_EXAMPLES = ("our old cat died last night", "ich bin heute ziemlich traurig", "我很难过")
ANXIOUS_EXAMPLES = (
    "ich mache mir Sorgen um die Daten",
    "我有点担心这个迁移",
    "me preocupa perder los datos de producción",
    "je suis un peu inquiet pour la migration",
    "本番のデータが消えないか心配です",
)


@pytest.mark.parametrize(
    ("mood", "patterns", "examples", "extended"),
    [
        ("urgent", URGENT_PATTERNS, URGENT_EXAMPLES, False),
        ("tired", TIRED_PATTERNS, TIRED_EXAMPLES, False),
        ("tired", TIRED_EXTRA_PATTERNS, TIRED_EXTRA_EXAMPLES, True),
        ("frustrated", FRUSTRATED_PATTERNS, FRUSTRATED_EXAMPLES, False),
        ("frustrated", FRUSTRATED_EXTRA_PATTERNS, FRUSTRATED_EXTRA_EXAMPLES, True),
        ("happy", HAPPY_PATTERNS, HAPPY_EXAMPLES, True),
        ("grateful", GRATEFUL_PATTERNS, GRATEFUL_EXAMPLES, True),
        ("sad", SAD_PATTERNS, SAD_EXAMPLES, True),
        ("anxious", ANXIOUS_PATTERNS, ANXIOUS_EXAMPLES, True),
    ],
)
def test_every_rule_pattern_has_an_example_that_it_matches(
    mood: str, patterns: Sequence[re.Pattern[str]], examples: Sequence[str], extended: bool
) -> None:
    assert len(examples) == len(patterns)
    for pattern, example in zip(patterns, examples, strict=True):
        assert pattern.search(example), (pattern.pattern, example)
        # and the cheap keyword screen in front of the regexes lets it through
        assert rule_hits(example, extended=extended)[mood] >= 1, example
        # the n-gram model alone keeps the rules it was benchmarked with
        if extended and mood != "frustrated":
            assert rule_hits(example)[mood] == 0, example


@pytest.mark.parametrize("text", ["你是什么模型", "珀杏ね", "ok 这个怎么配置", "Привет, как дела"])
def test_a_script_the_models_never_read_scores_neutral_without_a_lexicon_word(
    model: MoodModel, text: str
) -> None:
    assert sentiment.unread_script(text)
    mood = model.score(text)
    assert (mood.primary, mood.scores["neutral"], mood.valence) == ("neutral", 1.0, 0.0)


def test_a_lexicon_word_is_read_in_any_script_and_latin_text_is_read_by_the_models(
    model: MoodModel,
) -> None:
    assert not sentiment.unread_script("fix the 登录 page, ffs")
    assert model.score("fix the 登录 page, ffs").primary == "frustrated"
    assert not sentiment.unread_script("café crème, the build is broken again")


def test_the_n_gram_model_alone_reads_with_its_own_rules_only(model: MoodModel) -> None:
    assert not any(rule_hits("Das ist frustrierend, verdammt").values())
    assert rule_hits("Das ist frustrierend, verdammt", extended=True)["frustrated"] == 1


def test_urgent_words_make_urgent_the_primary_mood_and_raise_arousal(model: MoodModel) -> None:
    plain, urgent = model.score_many(["fix the login page", "prod is down, fix the login ASAP!"])
    assert urgent.primary == "urgent"
    assert urgent.scores["urgent"] >= 0.6
    assert urgent.arousal > plain.arousal
    assert plain.scores["urgent"] == 0.0


def test_fatigue_words_make_tired_the_primary_mood_and_lower_arousal(model: MoodModel) -> None:
    mood = model.score("long day, I'm exhausted and can't think straight")
    assert mood.primary == "tired"
    assert mood.scores["tired"] >= 0.75
    assert mood.arousal < 0.4


def test_being_tired_of_something_is_frustration_not_fatigue(model: MoodModel) -> None:
    assert rule_hits("I'm sick and tired of this flaky test")["tired"] == 0
    assert rule_hits("so tired of these errors")["tired"] == 0
    assert model.score("I'm so tired of this flaky test").scores["tired"] == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "I'm in a meeting right now",
        "I can't think of a better name",
        "It'll be done in no time",
        "this is not urgent",
        "anything else urgent or can it wait?",
        "is it urgent?",
        "it works again",
        "is it stupid to ask which branch?",
        "I just asked for the logs",
        "no response from the server after 30s",
        "the build is super slow",
        "keine Sorge, das mache ich",
        "不用担心",
        "I keep a copy in /tmp",
        "no te preocupes, lo reviso yo",
        "otra vez funciona, gracias",
        "haz lo que quieras con el nombre",
        "ne t'inquiète pas, je m'en occupe",
        "pas d'inquiétude pour la config",
        "le pneu est crevé dans l'exemple",
        "ich bin fertig mit dem Review",
        "der Server ist kaputt gegangen",
        "累计耗时多少？",
        "ご心配なく、対応します",
        "心配しないでください",
        "なんでこの関数は遅いの？",
    ],
)
def test_phrases_that_only_look_like_a_rule_are_not_hits(text: str) -> None:
    assert not any(rule_hits(text, extended=True).values())


def test_a_failure_that_persists_reads_frustrated_not_curious(model: MoodModel) -> None:
    mood = model.score("WHY is this STILL broken?!")
    assert mood.primary == "frustrated"
    assert mood.valence < -0.3


# --- features reproduce scikit-learn's analyzers --------------------------------------------------


def test_ngrams_are_the_ones_scikit_learn_builds() -> None:
    text_mod = pytest.importorskip("sklearn.feature_extraction.text")
    texts = ["Hello,   WORLD!! a b", "don't stop-me now", "x", "émoji 👍 ok\ttabs\nnewline", ""]
    words = text_mod.TfidfVectorizer(ngram_range=(1, 2)).build_analyzer()
    chars = text_mod.TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)).build_analyzer()
    for text in texts:
        assert sorted(word_ngrams(text.lower(), 2)) == sorted(words(text))
        assert sorted(char_wb_ngrams(text.lower(), 2, 5)) == sorted(chars(text))


# --- the weights file -----------------------------------------------------------------------------


def test_the_bundled_model_is_small_and_loaded_once_per_process() -> None:
    assert DEFAULT_MODEL_PATH.stat().st_size < 3_000_000
    assert load_mood_model() is load_mood_model()


def test_loading_the_model_imports_neither_torch_nor_scikit_learn() -> None:
    code = (
        "import sys, assembler.mood.model as s; m = s.load_mood_model(); m.score('hi there!'); "
        "heavy = [n for n in ('torch', 'sentence_transformers', 'sklearn', 'scipy') "
        "if n in sys.modules]; print(heavy)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_weights_raise_a_model_error_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.npz"
    with pytest.raises(ModelError, match=r"nowhere\.npz"):
        load_mood_model(missing)


def test_corrupt_weights_raise_a_model_error(tmp_path: Path) -> None:
    corrupt = tmp_path / "mood_model.npz"
    corrupt.write_bytes(DEFAULT_MODEL_PATH.read_bytes()[:5000])
    with pytest.raises(ModelError, match="corrupt"):
        load_mood_model(corrupt)


def test_weights_of_the_wrong_shape_raise_a_model_error(tmp_path: Path) -> None:
    with np.load(DEFAULT_MODEL_PATH) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["bias"] = arrays["bias"][:-1]
    broken = tmp_path / "mood_model.npz"
    np.savez_compressed(broken, **arrays)
    with pytest.raises(ModelError, match="bias shape"):
        load_mood_model(broken)


# --- the window -----------------------------------------------------------------------------------


class FixedModel(MoodModel):
    """A fake model: each text's mood is given as 'mood:valence' at the start of the text."""

    window_calibration = DEFAULT_WINDOW_CALIBRATION  # type: ignore[assignment]
    version = "fixed"  # type: ignore[assignment]

    def __init__(self) -> None:  # no weights needed
        pass

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        out = []
        for text in texts:
            mood, valence = text.split()[0].split(":")
            other = "neutral" if mood != "neutral" else "happy"
            scores = dict.fromkeys(MOODS, 0.0)
            scores[mood], scores[other] = 0.8, 0.2
            out.append(
                MessageMood(
                    valence=float(valence),
                    arousal=0.8 if mood == "frustrated" else 0.3,
                    scores=scores,
                    compound=float(valence),
                    primary=mood,
                    primary_score=0.8,
                    secondary=other,
                    secondary_score=0.2,
                )
            )
        return out


def user(text: str, minutes_ago: float | None, speaker: str | None = None) -> Message:
    stamp = None if minutes_ago is None else NOW - timedelta(minutes=minutes_ago)
    return Message("user", text, stamp, "test.jsonl", speaker=speaker)


def test_a_recent_calm_message_outweighs_an_old_angry_one_with_a_short_half_life() -> None:
    window = [user("frustrated:-0.8 this is broken", 60), user("neutral:0.1 ok, it works", 1)]
    report = analyze(window, now=NOW, half_life=timedelta(minutes=10), model=FixedModel())
    assert report.combined.primary == "neutral"
    assert report.combined.valence > 0.0


def test_an_old_angry_message_still_dominates_with_a_long_half_life() -> None:
    window = [
        user("frustrated:-0.8 this is broken", 60),
        user("frustrated:-0.7 still broken", 50),
        user("neutral:0.1 ok, it works", 1),
    ]
    short = analyze(window, now=NOW, half_life=timedelta(minutes=10), model=FixedModel())
    long = analyze(window, now=NOW, half_life=timedelta(days=1), model=FixedModel())
    assert short.combined.primary == "neutral"
    assert long.combined.primary == "frustrated"
    assert long.combined.valence < -0.3


def test_only_human_messages_count() -> None:
    window = [
        Message("assistant", "frustrated:-0.9 sorry, failed", NOW, "t"),
        user("happy:0.6 great", 1),
    ]
    report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel())
    assert report.combined.messages == 1
    assert report.combined.primary == "happy"


def test_an_empty_window_is_neutral_with_zero_confidence() -> None:
    only_assistant = [Message("assistant", "frustrated:-0.9 hi", NOW, "t"), user("   ", 1)]
    for window in ([], only_assistant):
        report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel())
        state = report.combined
        assert (state.primary, state.confidence, state.messages) == ("neutral", 0.0, 0)
        assert state.trajectory == "no human messages in the window"
        assert state.points == []
        assert report.speakers == {}


def test_two_speakers_get_one_state_each_and_the_latest_speakers_is_adapted_to() -> None:
    window = [
        user("frustrated:-0.8 this is broken", 5, speaker="ana"),
        user("happy:0.7 works for me", 4, speaker="ben"),
        user("frustrated:-0.6 still broken", 3, speaker="ana"),
    ]
    report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel())
    assert set(report.speakers) == {"ana", "ben"}
    assert report.speakers["ana"].primary == "frustrated"
    assert report.speakers["ana"].messages == 2
    assert report.speakers["ben"].primary == "happy"
    assert report.speakers["ben"].speaker == "ben"
    # The state the agent adapts to is that of whoever spoke last: ana, not the room's mix.
    assert report.combined is report.speakers["ana"]
    assert report.combined.messages == 2


def test_in_a_group_chat_the_section_leads_with_the_latest_speaker_and_lists_the_others() -> None:
    from assembler.assembly.sections import mood_section

    window = [
        user("frustrated:-0.8 revert #88 now", 3, speaker="bob"),
        user("neutral:0.0 where does the staging doc live?", 1, speaker="carol"),
    ]
    report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel())
    section = mood_section(report)
    assert section is not None
    lines = {item.label: item.text for item in section.items}
    assert lines["Primary"].startswith(f"{report.speakers['carol'].primary} (")
    assert lines["Primary"].endswith(", carol, the latest to speak")
    assert lines["bob"].startswith("frustrated (")
    assert "carol" not in lines


def test_a_single_named_speaker_gets_no_per_speaker_states() -> None:
    window = [user("happy:0.5 hi", 2, speaker="ana"), user("happy:0.5 yo", 1, speaker="ana")]
    report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel())
    assert report.speakers == {}


class CalibratedModel(FixedModel):
    """`FixedModel` with a window calibration that reads evidence and agreement too (the default
    one for fakes reads the emotional mass alone)."""

    window_calibration = WindowCalibration(  # type: ignore[assignment]
        coef=tuple(
            {"emotional_mass": 1.0, "latest_emotional": 0.5, "top_share": 2.0, "evidence": 1.0}.get(
                name, 0.0
            )
            for name in sentiment.WINDOW_FEATURES
        ),
        intercept=-2.5,
    )


def recent_emotional(minutes_apart: float, half_life: float = 20.0) -> float:
    """The default calibration's confidence for a run of FixedModel messages of one emotion
    (emotional mass 0.8 each), `minutes_apart`: P(one of the last two is emotional), the one
    before discounted by its distance in time."""
    d = 0.5 ** (minutes_apart / half_life)
    return 1.0 - (1.0 - 0.8) * (1.0 - d * 0.8)


def test_trajectory_tells_when_the_frustration_began_and_what_eased_it() -> None:
    texts = ["frustrated:-0.8 a"] * 3 + ["frustrated:-0.5 b"] * 3 + ["neutral:0.2 ok it runs"] * 3
    window = [user(t, 90 - 10 * i) for i, t in enumerate(texts)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel()).combined
    # As a person tells it: since when, the message at which it eased, and the state now. The
    # state read at the first calm message still leans frustrated (the one before is recent).
    assert state.trajectory == (
        'frustrated from 10:30; eased at 11:40 ("neutral:0.2 ok it runs"); no clear emotion now'
    )
    assert [p.mood for p in state.points] == ["frustrated"] * 6 + ["neutral"] * 3
    assert state.points[0].at == NOW - timedelta(minutes=90)


def test_trajectory_of_an_unchanging_window_says_since_when() -> None:
    window = [user("happy:0.5 nice", 30 - i) for i in range(6)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel()).combined
    assert state.trajectory == "happy now since 11:30"


def test_trajectory_names_each_change_with_its_time_in_the_clocks_zone() -> None:
    from zoneinfo import ZoneInfo

    texts = [
        ("neutral:0.0 can you check the deploy", 300),
        ("frustrated:-0.8 it failed again", 200),
        ("frustrated:-0.8 still failing", 190),
        ("happy:0.8 that did it, thanks", 100),
        ("neutral:0.0 now the docs", 60),
        ("tired:-0.3 long day", 5),
    ]
    window = [user(t, m) for t, m in texts]
    sydney = NOW.astimezone(ZoneInfo("Australia/Sydney"))  # 23:00 there
    state = analyze(window, now=sydney, half_life=timedelta(minutes=20), model=FixedModel())
    assert state.combined.trajectory == (
        'frustrated from 19:40; eased at 21:20 ("happy:0.8 that did it, thanks"), happy; '
        "tired now (since 22:55)"
    )
    # Read the next evening, the times of the day before name their day.
    later = analyze(
        window[:3], now=sydney + timedelta(days=1), half_life=timedelta(days=1), model=FixedModel()
    )
    assert "Mon 19:40" in later.combined.trajectory


def test_a_long_story_keeps_its_start_and_its_latest_changes() -> None:
    moods = ["frustrated", "neutral", "neutral", "happy", "neutral", "neutral"] * 3 + ["tired"]
    window = [user(f"{m}:0.0 m{i}", 190 - 10 * i) for i, m in enumerate(moods)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=5), model=FixedModel()).combined
    parts = state.trajectory.split("; ")
    assert parts[0] == "frustrated from 08:50"
    assert parts[2] == "…"
    assert "frustrated again from" in state.trajectory
    assert parts[-1] == "tired now (since 11:50)"
    assert len(parts) == 7


def test_a_negative_state_that_eased_and_came_back_is_told_as_one_episode() -> None:
    moods = ["frustrated", "neutral", "neutral", "frustrated", "neutral", "neutral", "tired"]
    window = [user(f"{m}:0.0 m{i}", 190 - 30 * i) for i, m in enumerate(moods)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=5), model=FixedModel()).combined
    assert state.trajectory == (
        'frustrated on and off from 08:50; eased at 10:50 ("neutral:0.0 m4"); '
        "tired now (since 11:50)"
    )
    # Still frustrated now: each step is told.
    ongoing = analyze(
        window[:4],
        now=NOW - timedelta(minutes=90),
        half_life=timedelta(minutes=5),
        model=FixedModel(),
    ).combined
    assert ongoing.trajectory.startswith("frustrated from 08:50; eased at 09:20")
    assert ongoing.trajectory.endswith("frustrated now (since 10:20)")


def test_confidence_grows_with_more_agreeing_messages() -> None:
    def confidence(n: int) -> float:
        window = [user("frustrated:-0.7 broken", 1) for _ in range(n)]
        report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=CalibratedModel())
        return report.combined.confidence

    values = [confidence(n) for n in (1, 2, 4, 8)]
    assert values == sorted(values)
    assert len(set(values)) == 4
    assert 0.0 < values[0] < values[-1] < 1.0


def test_disagreeing_messages_give_less_confidence_than_agreeing_ones() -> None:
    agree = [user("frustrated:-0.7 a", 2), user("frustrated:-0.7 b", 1)]
    disagree = [user("frustrated:-0.7 a", 2), user("happy:0.8 b", 1)]
    half_life = timedelta(minutes=20)
    a = analyze(agree, now=NOW, half_life=half_life, model=CalibratedModel()).combined
    d = analyze(disagree, now=NOW, half_life=half_life, model=CalibratedModel()).combined
    assert d.confidence < a.confidence


def test_an_emotion_is_primary_only_when_the_calibration_trusts_it() -> None:
    # The emotional moods share the confidence, neutral gets the rest: an emotion leads only
    # when the confidence is over one half.
    half_life = timedelta(minutes=20)
    for texts in (["frustrated:-0.7 a"], ["neutral:0.0 a", "neutral:0.0 b", "sad:-0.5 c"]):
        window = [user(t, len(texts) - i) for i, t in enumerate(texts)]
        for scorer in (FixedModel(), CalibratedModel()):
            state = analyze(window, now=NOW, half_life=half_life, model=scorer).combined
            assert (state.primary != "neutral") == (state.confidence > 0.5)
            assert state.primary_score >= state.secondary_score


def test_messages_without_timestamps_weigh_by_position_newest_most() -> None:
    window = [user("frustrated:-0.8 old", None), user("happy:0.6 new", None)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=5), model=FixedModel()).combined
    # the oldest gets one half-life of age: weight 0.5 against the newest's 1
    assert state.primary == "happy"
    assert state.valence == pytest.approx((0.5 * -0.8 + 1.0 * 0.6) / 1.5)


def test_explain_names_the_heaviest_messages_first_with_their_scores() -> None:
    window = [user("frustrated:-0.8 the old complaint", 60), user("happy:0.6 the new praise", 1)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel()).combined
    assert state.explain[0].startswith(f"confidence {state.confidence:.2f} = P(emotional now)")
    assert "the new praise" in state.explain[1]
    assert "happy 0.80" in state.explain[1]
    assert "the old complaint" in state.explain[2]


def test_a_non_positive_half_life_is_rejected() -> None:
    with pytest.raises(ValueError, match="half_life"):
        analyze([user("happy:0.5 hi", 1)], now=NOW, half_life=timedelta(0), model=FixedModel())


def test_analyze_with_the_real_model_reads_a_frustrated_window(model: MoodModel) -> None:
    window = [
        user("why does this keep failing?? this is so annoying", 6),
        user("ugh, broken AGAIN. nothing works!!!", 3),
    ]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=model).combined
    assert state.primary == "frustrated"
    assert state.valence < 0
    assert len(state.points) == 2


def test_the_bundled_model_carries_a_trained_window_calibration(model: MoodModel) -> None:
    assert model.window_calibration != DEFAULT_WINDOW_CALIBRATION
    assert len(model.window_calibration.coef) == len(sentiment.WINDOW_FEATURES)


@pytest.mark.parametrize(
    ("text", "mood"),
    [
        ("I'm a bit nervous about touching prod payments", "anxious"),
        ("WHY does doppler not restart them… second time this month", "frustrated"),
    ],
)
def test_the_issues_two_messages_read_as_the_human_meant_them(
    model: MoodModel, text: str, mood: str
) -> None:
    assert model.score(text).primary == mood
    state = analyze([user(text, 1)], now=NOW, half_life=timedelta(minutes=20), model=model)
    # One message alone is thin evidence: the window calibration (fitted on dialogues) may keep
    # it just under one half, neutral leading, but the emotion it names is this one.
    assert mood in (state.combined.primary, state.combined.secondary)
    assert state.combined.confidence > 0.35


def test_a_goodnight_after_saying_so_keeps_the_human_tired(model: MoodModel) -> None:
    window = [
        user("all green now, thanks, that was painful", 38),
        user("long day, I'm fried. can the rest wait till tomorrow?", 19),
        user("night", 11),
    ]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=model).combined
    assert state.primary == "tired"
    assert "tired now" in state.trajectory


# --- the embedding head: what a message means ----------------------------------------------------


@pytest.fixture(scope="module")
def reader() -> MoodModel:
    """The bundled model reading the bundled embedding model's vectors (as an assembly does)."""
    from assembler.memory.embeddings import load_embedder

    model = load_mood_model(embedder=load_embedder("bundled"))
    assert model.reads_embeddings, model.embedder_failed
    return model


# The kinds of message the n-gram model misread (insults in a question, happy swearing, a death
# mentioned in a request, exasperation with a brevity request, German and Chinese frustration),
# in our own words, and plain requests that must stay neutral.
MEANINGS = [
    ("are you completely brain dead? what about the staging and prod configs??", "frustrated"),
    ("you absolute clown, that's the wrong file", "frustrated"),
    ("still broken!! this is absurd. just give me the command, keep it brief", "frustrated"),
    ("holy shit, the whole suite passes now, you're a beast", "happy"),
    ("damn, that's fast as hell, you legend", "happy"),
    ("my friend passed away on sunday, could you help me write a few words for the service", "sad"),
    ("Das ist doch lächerlich, es geht schon wieder nicht!", "frustrated"),
    ("怎么又错了？我已经说了三遍了！", "frustrated"),
    ("rename the helper to load_rows and update the call sites", "neutral"),
    ("Bitte schreib die Tests für das Modul", "neutral"),
    ("帮我看一下这个函数的返回值", "neutral"),
    ("can you list the files in src/", "neutral"),
]


@pytest.mark.model
@pytest.mark.parametrize(("text", "mood"), MEANINGS)
def test_the_embedding_head_reads_what_a_message_means(
    reader: MoodModel, text: str, mood: str
) -> None:
    scored = reader.score(text)
    assert scored.primary == mood, scored.scores
    if mood in ("frustrated", "sad"):
        assert scored.valence < 0.0
    if mood == "happy":
        assert scored.valence > -0.3  # swearing pulls VADER down; the meaning pulls it up


# The surface forms a mood reader gets wrong when it reads words and not meaning: an insult put as
# a question, swearing in joy, a death named in a request, exasperation that asks for brevity.
# Written for these tests, in other words than MEANINGS and the lexicons' examples.
SURFACE_FORMS = [
    ("are you dense? I asked for the config AND the tests??", "frustrated"),
    ("you idiot, now the build folder is gone", "frustrated"),
    ("holy shit it all passes now, you absolute machine", "happy"),
    ("oh wow everything is green, you beautiful monster", "happy"),
    ("I lost my dad on tuesday. can you help me word the email to my team", "sad"),
    ("still erroring!! honestly this is ridiculous, short answer please", "frustrated"),
]


@pytest.mark.model
@pytest.mark.parametrize(("text", "mood"), SURFACE_FORMS)
def test_the_reader_takes_a_message_for_what_it_means_not_its_surface(
    reader: MoodModel, text: str, mood: str
) -> None:
    scored = reader.score(text)
    assert scored.primary == mood, scored.scores
    # and the window, where the strategy reads it, shows the same clear emotion
    state = analyze([user(text, 1)], now=NOW, half_life=timedelta(minutes=20), model=reader)
    assert state.combined.primary == mood, state.combined.explain


@pytest.mark.model
def test_with_the_reader_a_goodnight_after_a_long_day_is_tired(reader: MoodModel) -> None:
    window = [
        user("all green now, thanks, that was painful", 38),
        user("long day, I'm fried. can the rest wait till tomorrow?", 19),
        user("night", 11),
    ]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=reader).combined
    assert state.primary == "tired"
    assert state.trajectory.endswith("tired now (since 11:41)")


def test_a_goodnight_is_tired_only_as_a_whole_message(model: MoodModel) -> None:
    assert rule_hits("good night!")["tired"] == 1
    assert rule_hits("the night build failed again")["tired"] == 0
    assert rule_hits("design the bed table")["tired"] == 0
    assert model.score("night").primary == "tired"


def test_the_window_reads_a_messages_own_emotional_mass_when_its_scorer_gives_one() -> None:
    # The same moods, once with the calm moods' scores as the emotional mass and once with a
    # gate that is sure the line shows an emotion: only the second is a clear emotion.
    scores = {**dict.fromkeys(MOODS, 0.0), "neutral": 0.55, "frustrated": 0.45}
    plain = MessageMood(-0.3, 0.6, scores, -0.3, "neutral", 0.55, "frustrated", 0.45)
    gated = MessageMood(-0.3, 0.6, scores, -0.3, "neutral", 0.55, "frustrated", 0.45, 0.97)

    class Fixed:
        window_calibration = DEFAULT_WINDOW_CALIBRATION
        version = "fixed"

        def __init__(self, mood: MessageMood) -> None:
            self.mood = mood

        def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
            return [self.mood for _ in texts]

    window = [user("that is not what I asked for", 1)]
    states = [
        analyze(window, now=NOW, half_life=timedelta(minutes=20), model=Fixed(mood)).combined
        for mood in (plain, gated)
    ]
    assert states[0].primary == "neutral" and states[0].confidence == pytest.approx(0.45)
    assert states[1].primary == "frustrated" and states[1].confidence == pytest.approx(0.97)


def test_a_head_without_a_gate_still_reads_and_gives_no_emotional_mass(
    model: MoodModel, tmp_path: Path
) -> None:
    import json

    with np.load(semantic.DEFAULT_SEMANTIC_PATH, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(str(arrays["meta"]))
    assert meta["format"] == 2
    meta["format"] = 1
    arrays.update(
        coef=arrays["coef"][:, :-1], bias=arrays["bias"][:-1], meta=np.array(json.dumps(meta))
    )
    old = tmp_path / "mood_embedding.npz"
    np.savez(old, **arrays)
    head = semantic.read_semantic_weights(old, dense=SEMANTIC_DENSE, classes=model.weights.classes)
    assert head.coef.shape[1] == len(model.weights.classes) + 2
    outputs = head.outputs(
        np.zeros((1, head.dim), np.float32), np.zeros((1, len(SEMANTIC_DENSE)), np.float32)
    )
    assert head.emotional(outputs) is None
    with_gate = semantic.read_semantic_weights(
        semantic.DEFAULT_SEMANTIC_PATH, dense=SEMANTIC_DENSE, classes=model.weights.classes
    )
    gate = with_gate.emotional(
        with_gate.outputs(
            np.zeros((1, head.dim), np.float32), np.zeros((1, len(SEMANTIC_DENSE)), np.float32)
        )
    )
    assert gate is not None and 0.0 < float(gate[0]) < 1.0


@pytest.mark.model
def test_with_the_embedding_head_a_plain_question_is_no_emotion_in_the_window(
    reader: MoodModel,
) -> None:
    window = [user("what does parse_config return for an empty file?", 1)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=reader).combined
    # the head may read it curious; the window counts no question as an emotion
    assert state.primary == "neutral"
    assert state.confidence < 0.5


@pytest.mark.model
def test_the_embedding_heads_scores_fit_the_window(reader: MoodModel) -> None:
    texts = ["This is broken again!!!", "thanks", "how does this work?", "ok", "x" * 9000, "  "]
    for mood in reader.score_many(texts):
        assert list(mood.scores) == list(MOODS)
        assert sum(mood.scores.values()) == pytest.approx(1.0, abs=1e-5)
        assert -1.0 <= mood.valence <= 1.0 and 0.0 <= mood.arousal <= 1.0
    assert reader.version.startswith("embedding:")
    assert reader.window_calibration.not_emotions == ("curious", "confused")
    assert reader.window_calibration != load_mood_model().window_calibration


def test_loading_the_embedding_head_imports_no_scikit_learn() -> None:
    code = (
        "import sys, assembler.mood.model as s; "
        "from assembler.memory.embeddings import load_embedder; "
        "m = s.load_mood_model(embedder=load_embedder('bundled')); m.score('hi there!'); "
        "print([n for n in ('sklearn', 'scipy') if n in sys.modules], m.reads_embeddings)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("[] True", "[] False")  # False: no embedding model here


# --- the fallback: no embedder, or one that cannot serve -----------------------------------------


class StubEmbedder:
    """An embedder of the bundled model's id that fails, or gives zero vectors."""

    def __init__(
        self, model_id: str = "sentence-transformers/all-MiniLM-L6-v2", fail: bool = False
    ):
        self.model_id = model_id
        self.dim = 384
        self.fail = fail
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.fail:
            raise ModelError("no ONNX export of the bundled model and no torch to make one")
        return np.zeros((len(texts), self.dim), dtype=np.float32)


def test_without_an_embedder_the_n_gram_model_scores(model: MoodModel) -> None:
    assert load_mood_model(embedder=None) is model
    assert not model.reads_embeddings
    assert model.version.startswith("ngram:")
    assert model.window_calibration.not_emotions == ()


def test_an_embedder_of_another_model_leaves_the_n_gram_model(model: MoodModel) -> None:
    assert load_mood_model(embedder=StubEmbedder("someone/other-model")) is model


def test_an_embedder_that_fails_gives_the_n_gram_models_scores_from_then_on(
    model: MoodModel, caplog: pytest.LogCaptureFixture
) -> None:
    head = semantic.read_semantic_weights(
        semantic.DEFAULT_SEMANTIC_PATH, dense=SEMANTIC_DENSE, classes=model.weights.classes
    )
    broken = StubEmbedder(fail=True)
    reading = MoodModel(model.weights, semantic=head, embedder=broken)
    assert reading.reads_embeddings and reading.version.startswith("embedding:")
    texts = ["WHY is it failing AGAIN", "thanks, that worked", "怎么又错了"]

    scored = reading.score_many(texts)
    again = reading.score_many(["ok"])

    for mine, theirs in zip(scored, model.score_many(texts), strict=True):
        assert mine.scores == pytest.approx(theirs.scores, abs=1e-6)
    assert again[0].scores == pytest.approx(model.score("ok").scores, abs=1e-6)
    assert broken.calls == 1  # not asked again
    assert reading.embedder_failed is not None and "ONNX" in reading.embedder_failed
    assert (reading.version, reading.window_calibration) == (
        model.version,
        model.window_calibration,
    )
    assert "without sentence embeddings" in caplog.text


def test_a_missing_embedding_head_leaves_the_n_gram_model(
    model: MoodModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sentiment, "DEFAULT_SEMANTIC_PATH", tmp_path / "nowhere.npz")
    monkeypatch.setattr(sentiment, "_semantic", None)
    monkeypatch.setattr(sentiment, "_with_embeddings", {})
    assert load_mood_model(embedder=StubEmbedder()) is model


def test_a_corrupt_or_mismatched_embedding_head_raises_a_model_error(
    model: MoodModel, tmp_path: Path
) -> None:
    classes = model.weights.classes
    corrupt = tmp_path / "mood_embedding.npz"
    corrupt.write_bytes(semantic.DEFAULT_SEMANTIC_PATH.read_bytes()[:3000])
    with pytest.raises(ModelError, match="corrupt"):
        semantic.read_semantic_weights(corrupt, dense=SEMANTIC_DENSE, classes=classes)
    with pytest.raises(ModelError, match="other features"):
        semantic.read_semantic_weights(
            semantic.DEFAULT_SEMANTIC_PATH, dense=SEMANTIC_DENSE[:-1], classes=classes
        )


def test_the_embedding_head_is_small_and_its_card_names_its_data() -> None:
    import json

    assert semantic.DEFAULT_SEMANTIC_PATH.stat().st_size < 1_000_000
    card = json.loads(
        semantic.DEFAULT_SEMANTIC_PATH.with_name("mood_embedding.card.json").read_text()
    )
    data = card["meta"]["training"]["data"]
    assert {"goemotions", "meld", "emobank", "embedding"} <= set(data)
    assert "DailyDialog" in card["data"]["not_used"]


def test_the_embedding_head_was_trained_on_the_lexicons_as_they_are() -> None:
    import json

    card = json.loads(
        semantic.DEFAULT_SEMANTIC_PATH.with_name("mood_embedding.card.json").read_text()
    )
    assert card["inputs"]["dense"] == list(SEMANTIC_DENSE)
    # a lexicon edit changes the head's inputs: retrain (training/train_mood_embeddings.py)
    assert card["inputs"]["lexicons_sha256"] == lexicons_fingerprint()


def test_mood_embedder_follows_memory_model() -> None:
    from assembler.memory.embeddings import LazyEmbedder

    assert mood_embedder("none") is None
    # The bundled model whatever the memory search runs: the head was trained on its vectors.
    for model in ("bundled", "some/model"):
        embedder = mood_embedder(model)
        assert isinstance(embedder, LazyEmbedder) and embedder.spec == "bundled"


# --- coherence: every line of the state reads from one distribution ------------------------------


@st.composite
def windows_of_moods(draw: st.DrawFn) -> list[Message]:
    """Windows of 1-12 messages with random moods, valences, ages and speakers (FixedModel)."""
    n = draw(st.integers(1, 12))
    moods = st.sampled_from(MOODS)
    valences = st.floats(-1.0, 1.0, allow_nan=False).map(lambda v: round(v, 3))
    ages = st.one_of(st.none(), st.floats(0.0, 600.0, allow_nan=False))
    speakers = st.sampled_from([None, "ana", "ben"])
    return [
        user(f"{draw(moods)}:{draw(valences)} text {i}", draw(ages), speaker=draw(speakers))
        for i in range(n)
    ]


def _valence_of(message: Message) -> float:
    return float(message.text.split()[0].split(":")[1])


@settings(max_examples=200, deadline=None)
@given(window=windows_of_moods(), trained=st.booleans())
def test_every_state_is_coherent(window: list[Message], trained: bool) -> None:
    scorer = CalibratedModel() if trained else FixedModel()
    report = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=scorer)
    # In a group chat the state adapted to is the latest speaker's, read from their messages.
    speaker = report.combined.speaker
    states = [(report.combined, [m for m in window if speaker is None or m.speaker == speaker])]
    states += [
        (state, [m for m in window if m.speaker == name]) for name, state in report.speakers.items()
    ]
    for state, mine in states:
        valences = [_valence_of(m) for m in mine]
        # the valence is a weighted mean of the messages' valences
        assert min(valences) - 1e-9 <= state.valence <= max(valences) + 1e-9
        assert 0.0 <= state.confidence <= 1.0
        assert state.messages == len(mine)
        # one distribution: the primary leads it, the secondary follows, an emotion leads only
        # when the confidence says the human is more likely emotional than not
        assert state.secondary != state.primary
        assert state.primary_score >= state.secondary_score
        if state.primary != "neutral":
            assert state.confidence >= 0.5 - 1e-9
            assert state.primary_score <= state.confidence + 1e-9
        # the trajectory ends at the state itself: what it reads "now" is the primary
        what = "no clear emotion" if state.primary == "neutral" else state.primary
        assert f"{what} now" in state.trajectory or f"{what} throughout" in state.trajectory
        if len(mine) == 1:
            assert "(one message" in state.trajectory


# --- long messages: a bounded head and tail is scored ---------------------------------------------

PASTE = "2026-03-01T09:14:58Z gateway-7c9f8 level=error msg=upstream timeout latency=30012ms\n"
GRATEFUL = "thank you so much, this is wonderful, you are great!"


def pasted(before: str, after: str, size: int = 200_000) -> str:
    """A message of about `size` characters: `before`, a pasted log, `after`."""
    return f"{before}\n{PASTE * (size // len(PASTE))}{after}"


def test_a_200_kb_message_is_scored_on_a_bounded_head_and_tail(
    model: MoodModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = MoodModel(model.weights)  # its own caches: the text is scored here, not recalled
    read: list[int] = []
    polarity = fresh._vader.polarity_scores
    rules = rule_hits

    def vader_spy(text: str) -> dict[str, float]:
        read.append(len(text))
        return polarity(text)

    ruled: list[str] = []

    def rules_spy(text: str) -> dict[str, int]:
        read.append(len(text))
        ruled.append(text)
        return rules(text)

    monkeypatch.setattr(fresh._vader, "polarity_scores", vader_spy)
    monkeypatch.setattr(sentiment, "rule_hits", rules_spy)
    text = pasted("ugh, the deploy is broken again", "I need this fixed asap")

    mood = fresh.score(text)

    bound = sentiment.SCORED_HEAD_CHARS + len(transcripts.ELISION) + sentiment.SCORED_TAIL_CHARS
    assert read and max(read) <= bound
    assert bound <= 5000  # VADER's cost is quadratic: the bound must stay small
    # what is scored is the head and tail of the writer's own words
    assert ruled == [sentiment.scored_part(own_words(text))]
    assert "ugh, the deploy" in ruled[0] and ruled[0].endswith("fixed asap")
    assert mood.primary in {"frustrated", "urgent"}


def test_the_words_before_and_after_a_long_paste_both_move_the_score(model: MoodModel) -> None:
    plain = model.score(pasted("ok", "ok"))
    head = model.score(pasted(GRATEFUL, "ok"))
    tail = model.score(pasted("ok", GRATEFUL))
    for moved in (head, tail):
        assert moved.compound > plain.compound
        assert moved.valence > plain.valence
        assert moved.scores["grateful"] > plain.scores["grateful"]


def test_a_rule_word_after_a_long_paste_still_counts(model: MoodModel) -> None:
    mood = model.score(pasted("the deploy logs:", "I'm exhausted, I need sleep"))
    assert mood.primary == "tired"


def test_scoring_a_long_message_is_not_quadratic(
    model: MoodModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sentences full of sentiment words and a 'but': VADER on the whole of this took seconds.
    sentences = ["this is awful and I hate it.", "but great, it works now, thanks!"] * 3000
    text = " ".join(sentences)
    scored: list[int] = []
    polarity_scores = SentimentIntensityAnalyzer.polarity_scores

    def counted(analyzer: SentimentIntensityAnalyzer, part: str) -> dict[str, float]:
        scored.append(len(part))
        return polarity_scores(analyzer, part)

    monkeypatch.setattr(SentimentIntensityAnalyzer, "polarity_scores", counted)
    model.score(text)
    # VADER (quadratic in its text) reads only the head and tail, however long the message;
    # bench/bench_long_message.py times it.
    bound = sentiment.SCORED_HEAD_CHARS + len(transcripts.ELISION) + sentiment.SCORED_TAIL_CHARS
    assert scored and max(scored) <= bound < len(text)


# --- extreme timestamps -------------------------------------------------------------------------


def test_the_most_extreme_timestamps_weigh_without_error() -> None:
    far_future = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    window = [
        Message("user", "frustrated:-0.8 year one", datetime.min.replace(tzinfo=UTC), "t"),
        Message("user", "frustrated:-0.8 the epoch", datetime(1970, 1, 1, tzinfo=UTC), "t"),
        Message("user", "happy:0.6 from the future", far_future, "t"),
    ]
    cases = (
        (NOW, 2),
        (NOW.replace(tzinfo=None), 2),
        (far_future, 3),
        (datetime.min.replace(tzinfo=UTC), 1),
    )
    for now, said in cases:
        state = analyze(window, now=now, half_life=timedelta(minutes=5), model=FixedModel())
        assert state.combined.messages == said
    # At an ordinary now the old ones weigh nothing (they underflow and count as equals).
    state = analyze(window, now=NOW, half_life=timedelta(minutes=5), model=FixedModel()).combined
    assert state.primary == "frustrated"
    assert state.valence == pytest.approx(-0.8)


def test_a_message_from_after_now_is_not_said_yet_unless_within_clock_skew() -> None:
    window = [
        user("frustrated:-0.8 said before", 10),
        Message("user", "happy:0.6 skewed clock", NOW + timedelta(seconds=30), "t"),
        Message("user", "happy:0.6 not said yet", NOW + timedelta(minutes=30), "t"),
    ]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=5), model=FixedModel()).combined
    assert state.messages == 2
    assert state.points[-1].at == NOW + timedelta(seconds=30)


def test_the_explain_snippet_of_a_long_message_is_its_first_words() -> None:
    window = [user("happy:0.6 " + " the\n\n new   praise " * 50_000, 1)]
    state = analyze(window, now=NOW, half_life=timedelta(minutes=20), model=FixedModel()).combined
    snippet = '"happy:0.6 the new praise the new praise the new praise the …"'
    assert state.explain[1].endswith(snippet)


def test_a_block_of_texts_with_no_known_word_scores_neutral_instead_of_failing() -> None:
    model = load_mood_model()

    # Short messages in a script the model has no n-gram of, alone in their block.
    moods = model.score_many(["你好？", "上海"])

    assert len(moods) == 2
    assert all(abs(sum(m.scores.values()) - 1.0) < 1e-6 for m in moods)
