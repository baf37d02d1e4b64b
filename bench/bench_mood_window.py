"""Benchmark: the mood of a conversation window, ours (with the embedding head and the fine-tuned
layer) next to ours without the layer ("no layer"), the embedding head before the gate
("before": `bench_mood_eval.BASELINE_REV`'s, under this code), the n-gram model alone (the
fallback without an embedder, and the earlier model) and VADER on the last message.

    python bench/bench_mood_window.py [--data PATH] [--k 8] [--limit N] [--no-cache]
                                      [--baseline REV]

Reads (never copies) the emotion-labelled dialogues of the development data, by default from
`../shared/data/dialogues` next to the repo (see its SOURCE.md): MELD dev (`meld/
dev_sent_emo.csv`, Friends scenes, several speakers) and DailyDialog validation
(`dailydialog/validation/`, two speakers), one emotion label per utterance. MELD train is what
`training/train_mood.py` fits and tunes on; DailyDialog (CC BY-NC-SA, non-commercial) is for
evaluation only; this script reports on the dev and validation splits only.

Definitions (`windows`, `state_gold`, `DIALOGUE_MAP`):
- A **window** is built at every utterance t of a dialogue: the last K utterances of the
  dialogue up to and including t (all speakers, as human messages with their speaker's name,
  one minute apart), read by `sentiment.analyze` with the default half-life. The state read is
  the one of the speaker of utterance t (the per-speaker state when two or more speak, as in a
  group chat), so the window gives the model that speaker's recent messages and the others'.
- The **gold** is the speaker's state now, which is what the agent answers: the latest emotion
  among the speaker's last STATE_TURNS (2) utterances in the window, mapped; "neutral" when
  both are neutral. The corpora label what each utterance expresses, not the speaker's state,
  and a state outlasts the utterance that shows it: on the train splits, after an emotional
  utterance the same speaker's next one is emotional 65% (MELD) / 56% (DailyDialog) of the
  time, after a neutral one 41% / 12%; the lift fades over the following turns. So "I'm fried"
  then "night" is a tired speaker, not a neutral one. A window whose gold emotion maps to no
  mood (surprise) is left out.
- **Emotional** windows are those with an emotional gold. **Neutral** windows, for the firing
  rate, are the calm ones: none of the speaker's last CALM_TURNS (3) utterances in the window
  is emotional (surprise counts as emotional). Windows with a neutral gold but an emotion three
  turns back count in the macro-F1 (as neutral) and in neither firing rate: firing there is
  neither clearly right nor clearly wrong; their rate is printed apart.
- For comparison the same figures under the earlier gold, **latest**: the label of utterance t
  alone; emotional windows have an emotional label, neutral ones a neutral label.
- **Mood macro-F1** is over the gold moods frustrated, anxious, sad, happy, neutral. A predicted
  mood with no gold class of its own counts as its nearest one (`PRED_MAP`: urgent as
  frustrated, tired as sad, grateful as happy); curious and confused count as neutral, as
  the dialogue corpora label plain questions neutral.
- **Fires**: `strategy.choose_strategy` with the default strategy config picks a mood rule, not
  the no-signal fallback.

VADER's window mood reads the last message alone: happy if compound >= 0.05, frustrated if
<= -0.05, else neutral (its own thresholds); it "fires" when that mood is not neutral.

The embedding head reads the bundled embedding model's vectors, cached as
`bench_mood_eval.CachedEmbedder` keeps them (`--no-cache`: embed again).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from assembler.mood.model import MoodModel
    from assembler.mood.window import MoodState
    from assembler.transcripts.message import Message

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data"
# The project is not necessarily installed: import `assembler` from this checkout.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mood_eval import f1_per_class as mood_f1  # noqa: E402

# MELD's and DailyDialog's emotions -> our moods, for the gold side of the metric and for the
# training rows of `training/train_mood.py`. Surprise maps to none: it is as often delight as
# shock ("Really?! That's great!" / "What?!"), and none of our moods means it.
DIALOGUE_MAP: dict[str, str | None] = {
    "anger": "frustrated",
    "disgust": "frustrated",
    "fear": "anxious",
    "sadness": "sad",
    "joy": "happy",
    "happiness": "happy",
    "neutral": "neutral",
    "no emotion": "neutral",
    "surprise": None,
}
# DailyDialog's `dialogues_emotion.txt` numbers.
DAILYDIALOG_EMOTIONS = (
    "no emotion",
    "anger",
    "disgust",
    "fear",
    "happiness",
    "sadness",
    "surprise",
)
GOLD_CLASSES: tuple[str, ...] = ("frustrated", "anxious", "sad", "happy", "neutral")
PRED_MAP: dict[str, str] = {
    "urgent": "frustrated",
    "tired": "sad",
    "grateful": "happy",
    "curious": "neutral",
    "confused": "neutral",
}
DEFAULT_K = 8
UTTERANCE_GAP = timedelta(minutes=1)
# Targets: the strategy fires on at least 60% of the clearly emotional windows and on at most a
# tenth of the neutral ones; the window mood macro-F1 on MELD dev at least 0.40.
FIRE_EMOTIONAL_TARGET = 0.60
FIRE_NEUTRAL_TARGET = 0.10
MACRO_F1_TARGET = 0.40


@dataclass(frozen=True)
class Utterance:
    speaker: str
    text: str
    emotion: str  # the corpus's own label name


@dataclass(frozen=True)
class Dialogue:
    source: str  # corpus, split and id, e.g. "meld/dev/12"
    utterances: tuple[Utterance, ...]


def load_meld(data: Path, split: str) -> list[Dialogue]:
    """Given the data folder and 'train' or 'dev', return MELD's dialogues in file order, each
    one's utterances in `Utterance_ID` order."""
    path = data / "dialogues" / "meld" / f"{split}_sent_emo.csv"
    rows: dict[int, list[tuple[int, Utterance]]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            utterance = Utterance(row["Speaker"], _clean_meld(row["Utterance"]), row["Emotion"])
            rows.setdefault(int(row["Dialogue_ID"]), []).append(
                (int(row["Utterance_ID"]), utterance)
            )
    return [
        Dialogue(f"meld/{split}/{d}", tuple(u for _, u in sorted(turns, key=lambda x: x[0])))
        for d, turns in rows.items()
    ]


def _clean_meld(text: str) -> str:
    # The CSV carries a few mis-decoded characters (cp1252 read as latin-1) of curly quotes
    # and dashes; the words are what matters.
    return text.replace("\x92", "'").replace("\x91", "'").replace("\x97", " - ").strip()


def load_dailydialog(data: Path, split: str) -> list[Dialogue]:
    """Given the data folder and 'train' or 'validation', return DailyDialog's dialogues, the
    two speakers named A and B, without the lines that `overlap_with_test.tsv` lists (their
    text equals a test dialogue) and without a line whose label count differs from its
    utterance count."""
    folder = data / "dialogues" / "dailydialog"
    drop: set[int] = set()
    overlap = folder / "overlap_with_test.tsv"
    if overlap.is_file():
        with overlap.open(encoding="utf-8") as handle:
            for line in handle:
                name, _, number = line.strip().partition("\t")
                if name == split and number.isdigit():
                    drop.add(int(number))
    texts = (folder / split / "dialogues.txt").read_text(encoding="utf-8").splitlines()
    labels = (folder / split / "dialogues_emotion.txt").read_text(encoding="utf-8").splitlines()
    dialogues = []
    for number, (line, emotions) in enumerate(zip(texts, labels, strict=True), start=1):
        turns = [t.strip() for t in line.split("__eou__")]
        turns = [t for t in turns if t]
        ids = emotions.split()
        if number in drop or len(turns) != len(ids):
            continue
        utterances = tuple(
            Utterance("AB"[i % 2], turn, DAILYDIALOG_EMOTIONS[int(e)])
            for i, (turn, e) in enumerate(zip(turns, ids, strict=True))
        )
        dialogues.append(Dialogue(f"dailydialog/{split}/{number}", utterances))
    return dialogues


# The speaker's state now (see the module docstring): their last STATE_TURNS utterances decide
# it; a window is neutral for the firing rate when none of their last CALM_TURNS is emotional.
STATE_TURNS = 2
CALM_TURNS = 3


@dataclass(frozen=True)
class Window:
    dialogue: str
    utterances: tuple[Utterance, ...]  # oldest first; the last is the speaker's latest
    gold: str | None  # the speaker's state now (`state_gold`); None: undefined, left out
    latest: str | None  # the mapped label of the latest utterance; None: surprise, left out
    calm: bool  # none of the speaker's last CALM_TURNS utterances in the window is emotional

    @property
    def speaker(self) -> str:
        return self.utterances[-1].speaker


def state_gold(emotions: Sequence[str]) -> str | None:
    """Given the corpus labels of one speaker's utterances, oldest first, return their state
    now: the latest emotion among the last STATE_TURNS, mapped; "neutral" when they are all
    neutral; None when that emotion maps to no mood (surprise)."""
    for emotion in reversed(emotions[-STATE_TURNS:]):
        mood = DIALOGUE_MAP.get(emotion)
        if mood != "neutral":
            return mood
    return "neutral"


def windows(dialogues: Sequence[Dialogue], k: int = DEFAULT_K) -> Iterator[Window]:
    """Given dialogues, yield one window per utterance t that has text and a gold under either
    definition: the last k utterances up to t; the golds read the utterances of t's speaker
    in the window."""
    for dialogue in dialogues:
        turns = dialogue.utterances
        for t, utterance in enumerate(turns):
            if not utterance.text:
                continue
            span = turns[max(0, t - k + 1) : t + 1]
            own = [u.emotion for u in span if u.speaker == utterance.speaker]
            gold, latest = state_gold(own), DIALOGUE_MAP.get(utterance.emotion)
            if gold is None and latest is None:
                continue
            calm = all(DIALOGUE_MAP.get(e) == "neutral" for e in own[-CALM_TURNS:])
            yield Window(dialogue.source, span, gold, latest, calm)


def window_messages(window: Window) -> tuple[list[Message], datetime]:
    """Given a window, return its utterances as human `Message`s one UTTERANCE_GAP apart and
    the time of the last (the `now` to read them at)."""
    from assembler.transcripts.message import Message

    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    n = len(window.utterances)
    messages = [
        Message(
            "user",
            u.text,
            now - UTTERANCE_GAP * (n - 1 - i),
            window.dialogue,
            speaker=u.speaker,
        )
        for i, u in enumerate(window.utterances)
    ]
    return messages, now


def speaker_state(window: Window, model: MoodModel, half_life: timedelta) -> MoodState:
    """Given a window, the mood model and the half-life, return the `MoodState` of the window's
    last speaker (their own state when two or more speak, else the combined one)."""
    from assembler.mood.model import analyze

    messages, now = window_messages(window)
    report = analyze(messages, now=now, half_life=half_life, model=model)
    return report.speakers.get(window.speaker, report.combined)


def f1_per_class(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, float]:
    """Given gold moods and predicted moods (ours; mapped with PRED_MAP), return F1 per gold
    class."""
    return mood_f1(gold, predicted, GOLD_CLASSES, PRED_MAP)


def vader_mood(compound: float) -> str:
    """Given VADER's compound, return the baseline's mood (VADER's +-0.05 thresholds)."""
    return "happy" if compound >= 0.05 else "frustrated" if compound <= -0.05 else "neutral"


@dataclass(frozen=True)
class Reading:
    """What a reader (ours or VADER) made of one window."""

    mood: str
    fired: bool


@dataclass
class Figures:
    """The figures of one reader under one definition of the gold."""

    windows: int  # windows with a gold under the definition
    emotional: int  # windows with an emotional gold
    neutral: int  # windows that count as neutral for the firing rate
    macro_f1: float
    f1: dict[str, float]
    fired_emotional: int
    fired_neutral: int
    fired_right: int  # emotional windows on which it fires with the gold emotion
    between: int = 0  # neither: a neutral gold, but an emotion further back (state only)
    fired_between: int = 0

    @property
    def fires_emotional(self) -> float:
        return self.fired_emotional / self.emotional if self.emotional else 0.0

    @property
    def fires_neutral(self) -> float:
        return self.fired_neutral / self.neutral if self.neutral else 0.0

    @property
    def fires_between(self) -> float:
        return self.fired_between / self.between if self.between else 0.0

    @property
    def right_when_fired(self) -> float:
        return self.fired_right / self.fired_emotional if self.fired_emotional else 0.0


# The two definitions of a window's gold: "state" is the one the confidence is fitted to.
DEFINITIONS = ("state", "latest")


def figures(found: Sequence[Window], readings: Sequence[Reading], definition: str) -> Figures:
    """Given windows, one reading of each and a definition ("state": the speaker's state now,
    neutral windows for the firing rate are the calm ones; "latest": the latest utterance's
    label, neutral windows are those whose label is neutral), return the figures."""
    gold: list[str] = []
    pred: list[str] = []
    fig = Figures(0, 0, 0, 0.0, {}, 0, 0, 0)
    for window, reading in zip(found, readings, strict=True):
        label = window.gold if definition == "state" else window.latest
        if label is None:
            continue
        gold.append(label)
        pred.append(reading.mood)
        if label != "neutral":
            fig.emotional += 1
            fig.fired_emotional += reading.fired
            fig.fired_right += reading.fired and PRED_MAP.get(reading.mood, reading.mood) == label
        elif definition == "latest" or window.calm:
            fig.neutral += 1
            fig.fired_neutral += reading.fired
        else:
            fig.between += 1
            fig.fired_between += reading.fired
    fig.windows = len(gold)
    fig.f1 = f1_per_class(gold, pred)
    fig.macro_f1 = float(np.mean(list(fig.f1.values())))
    return fig


def read_windows(found: Sequence[Window], model: MoodModel) -> tuple[list[Reading], list[Reading]]:
    """Given windows and the mood model, return our reading of each (the speaker's state from
    `analyze`, the strategy from `choose_strategy`, default config) and VADER's (the last
    message alone)."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    from assembler.config.schema import MoodConfig, StrategyConfig
    from assembler.mood.strategy import choose_strategy

    half_life = MoodConfig().half_life_delta
    config = StrategyConfig()
    vader = SentimentIntensityAnalyzer()
    ours: list[Reading] = []
    base: list[Reading] = []
    for window in found:
        state = speaker_state(window, model, half_life)
        strategy = choose_strategy(
            state,
            config.rules,
            min_confidence=config.min_confidence,
            fallback=config.fallback,
        )
        ours.append(Reading(state.primary, not strategy.no_signal))
        mood = vader_mood(vader.polarity_scores(window.utterances[-1].text)["compound"])
        base.append(Reading(mood, mood != "neutral"))
    return ours, base


def evaluate(
    dialogues: Sequence[Dialogue], model: MoodModel, k: int = DEFAULT_K
) -> dict[str, tuple[Figures, Figures]]:
    """Given dialogues, the mood model and the window length, return per definition
    (`DEFINITIONS`) the figures of ours and of VADER on the last message."""
    found = list(windows(dialogues, k))
    ours, base = read_windows(found, model)
    return {d: (figures(found, ours, d), figures(found, base, d)) for d in DEFINITIONS}


def table(
    name: str,
    definition: str,
    ours: Figures,
    vader: Figures,
    old: Figures | None = None,
    before: Figures | None = None,
    no_layer: Figures | None = None,
) -> str:
    """Given a corpus name, the definition and the figures of ours, VADER and optionally the
    n-gram model alone, the baseline head and ours without the fine-tuned layer, return the
    comparison as text."""
    if definition == "state":
        head = f"{name}, gold = the speaker's state now: {ours.windows} windows, "
        head += f"{ours.emotional} emotional now, {ours.neutral} neutral (calm), "
        head += f"{ours.between} neither"
        neutral = "fires on neutral windows (calm)"
    else:
        head = f"{name}, gold = the latest utterance's label: {ours.windows} windows, "
        head += f"{ours.emotional} emotional, {ours.neutral} neutral"
        neutral = "fires on neutral windows"
    columns = [("ours", ours)] + ([("no layer", no_layer)] if no_layer else [])
    columns += [("before", before)] if before else []
    columns += ([("n-gram", old)] if old else []) + [("VADER", vader)]
    names = "".join(f"{column:>9}" for column, _ in columns)
    lines = [head, f"  {'metric':<44}{names}{'target':>8}"]
    rows: list[tuple[str, Callable[[Figures], float], str]] = [
        ("window mood macro-F1 (5 moods)", lambda f: f.macro_f1, ">=0.40"),
        *((f"  F1 {c}", _f1_of(c), "") for c in GOLD_CLASSES),
        ("fires on emotional windows", lambda f: f.fires_emotional, ">=0.60"),
        (neutral, lambda f: f.fires_neutral, "<=0.10"),
    ]
    if definition == "state":
        rows.append(("fires on neither (an emotion 3 turns back)", lambda f: f.fires_between, ""))
    rows.append(("fired on emotional: with the gold emotion", lambda f: f.right_when_fired, ""))
    for label, value, target in rows:
        cells = "".join(f"{value(fig):9.3f}" for _, fig in columns)
        lines.append(f"  {label:<44}{cells}{target:>8}")
    for column, fig in columns:
        lines.append(
            f"  fired: {column} on {fig.fired_emotional}/{fig.emotional} emotional and "
            f"{fig.fired_neutral}/{fig.neutral} neutral windows"
        )
    return "\n".join(lines)


def _f1_of(mood: str) -> Callable[[Figures], float]:
    return lambda f: f.f1[mood]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="utterances per window")
    parser.add_argument("--limit", type=int, default=0, help="dialogues per corpus (0: all)")
    parser.add_argument("--no-cache", action="store_true", help="embed every text again")
    parser.add_argument("--baseline", default=None, help="git revision of 'before'")
    args = parser.parse_args(argv)
    data: Path = args.data
    meld = data / "dialogues" / "meld" / "dev_sent_emo.csv"
    daily = data / "dialogues" / "dailydialog" / "validation" / "dialogues.txt"
    if not meld.is_file() or not daily.is_file():
        print(
            f"skipped: no dialogue data under {data / 'dialogues'} (meld/dev_sent_emo.csv, "
            "dailydialog/validation/dialogues.txt and dialogues_emotion.txt). Put the "
            "development data folder (dialogues/ as described in its SOURCE.md and "
            "training/README.md) there, or pass --data PATH"
        )
        return 0
    from bench_mood_eval import BASELINE_REV, baseline_model, embedding_model

    from assembler.config.schema import MoodConfig, StrategyConfig
    from assembler.mood.model import DEFAULT_MODEL_PATH, load_mood_model
    from assembler.mood.semantic import DEFAULT_SEMANTIC_PATH

    corpora = {
        "MELD dev": load_meld(data, "dev"),
        "DailyDialog validation": load_dailydialog(data, "validation"),
    }
    if args.limit:
        corpora = {name: found[: args.limit] for name, found in corpora.items()}
    config = StrategyConfig()
    print(f"data: {data / 'dialogues'}")
    print(f"  {meld}: {len(corpora['MELD dev'])} dialogues")
    print(
        f"  {daily.parent}: {len(corpora['DailyDialog validation'])} dialogues (less those "
        "listed in overlap_with_test.tsv)"
    )
    print(f"ours: {DEFAULT_SEMANTIC_PATH} and the fine-tuned layer mixed with {DEFAULT_MODEL_PATH}")
    print("no layer: ours without the fine-tuned layer (an export without hidden states)")
    before_model = baseline_model(args.baseline or BASELINE_REV, not args.no_cache)
    if before_model is not None:
        print(f"before: {before_model.source} (the head without the gate), same n-gram model")
    print(f"n-gram: {DEFAULT_MODEL_PATH} alone (the fallback; the old model)")
    print(
        f"window: the last {args.k} utterances up to each utterance, one minute apart, read by "
        f"analyze (half-life {MoodConfig().half_life}); the state of the last speaker"
    )
    print(
        f"gold (state): the latest emotion among the speaker's last {STATE_TURNS} utterances, "
        f"else neutral; neutral for the firing rate: none of their last {CALM_TURNS} is emotional"
    )
    print("gold (latest): the label of the speaker's latest utterance")
    print("mapping (surprise: window left out under that definition):")
    print("  " + ", ".join(f"{k} -> {v}" for k, v in DIALOGUE_MAP.items()))
    print(
        "fires: choose_strategy (min_confidence "
        f"{config.min_confidence}) picks a mood's rule, not the no-signal fallback"
    )
    print("VADER: the last message alone; happy >= 0.05 compound, frustrated <= -0.05, else")
    print("  neutral; fires when not neutral")
    model = embedding_model(not args.no_cache)
    no_layer_model = embedding_model(not args.no_cache, layer=False)
    old_model = load_mood_model()
    for name, found in corpora.items():
        started = time.perf_counter()
        results = evaluate(found, model, args.k)
        old = evaluate(found, old_model, args.k)
        no_layer = evaluate(found, no_layer_model, args.k)
        before = evaluate(found, before_model, args.k) if before_model is not None else None
        for definition in DEFINITIONS:
            print()
            ours, vader = results[definition]
            was = before[definition][0] if before is not None else None
            print(
                table(
                    name, definition, ours, vader, old[definition][0], was, no_layer[definition][0]
                )
            )
        print(f"  ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
