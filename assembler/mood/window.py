"""The mood state of the humans over a window of messages, from the moods of its messages.

`assembler.mood.model` scores each message (`MoodModel`) and calls `read_window`; this module
turns those scores into the state the Emotional Context section shows and the strategy reads.
It defines the state's vocabulary (`MOODS`, `MoodState`, `MoodReport`), which
`assembler.mood.model` re-exports, and needs nothing else from it at run time.

The state of one speaker (or of everyone), a distribution over MOODS that its lines all read
from, with r_i = 0.5 ** (age_i / half_life) the recency weight of message i (oldest first,
n the newest), e_i its emotional mass (the scorer's own P(the message shows an emotion),
`MessageMood.emotional`, when it gives one: the embedding head's gate; else 1 - s_i[neutral]
and the other moods that are no emotion) and d_i = r_i / r_n its recency relative to the
newest message:
- c = P(the speaker is emotional now), a logistic function of `WINDOW_FEATURES` fitted by
  training/train_mood.py on emotion-labelled dialogues and stored with the weights
  (`WindowCalibration`). "Emotional now" is what the fit's gold says: one of the speaker's last
  two utterances is emotional (bench/bench_mood_window.py has the definition and the reasons:
  a state outlasts the utterance that shows it).
- Which emotion, given that there is one: the one of the latest emotional message. Reading
  each message's e_i as the chance that it is emotional (discounted by d_i: the older, the less
  it still speaks for now), message i is the latest emotional one with probability
  u_i = d_i e_i * prod_{j > i} (1 - d_j e_j), so the emotions' shares are
  sum_i d_i s_i[m] prod_{j > i} (1 - d_j e_j), normalised (`emotion_shares`).
- The state's scores: neutral 1 - c, each other mood c * its share.
primary = the top score, secondary = the next one, confidence = c. A clear emotion needs
c * its share > 1 - c, so c > 0.5. valence and arousal are the r-weighted means of the
messages'. The trajectory tells the window's story as a person would: the state read at each
human message (the same computation on the messages up to it, at its time), its changes named
with their times ("frustrated from 19:40; eased at 21:52 ("ok that did it, thanks"); tired now
(since 23:07)").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from assembler.transcripts.message import Message

MOODS: tuple[str, ...] = (
    "frustrated",
    "urgent",
    "confused",
    "anxious",
    "sad",
    "tired",
    "happy",
    "grateful",
    "curious",
    "neutral",
)
# A secondary mood below this score is noise, not a second mood.
MIN_SECONDARY = 0.15


@dataclass(frozen=True)
class MessageMood:
    """The mood of one text."""

    valence: float  # -1 (very negative) .. 1 (very positive)
    arousal: float  # 0 (calm) .. 1 (agitated)
    scores: dict[str, float]  # every label in MOODS -> 0..1
    compound: float  # VADER's own compound score of the scored part (`scored_part`), unchanged
    primary: str
    primary_score: float
    secondary: str | None
    secondary_score: float
    # P(the text shows an emotion at all), when the scorer reads it apart from the moods (the
    # embedding head's gate, with the rule layer's evidence); None: 1 - the calm moods' scores.
    emotional: float | None = None


@dataclass(frozen=True)
class TrajectoryPoint:
    """The mood at one point of the window (one human message)."""

    at: datetime | None
    mood: str
    score: float
    valence: float


@dataclass
class MoodState:
    """The mood of one speaker (or of everyone) over the window."""

    primary: str
    primary_score: float
    secondary: str | None
    secondary_score: float
    valence: float
    arousal: float
    confidence: float  # 0..1, P(the speaker is emotional now); see the module docstring
    messages: int  # human messages that went into it
    # in words, e.g. 'frustrated from 19:40; eased at 21:52 ("ok that did it"); tired now'
    trajectory: str
    points: list[TrajectoryPoint] = field(default_factory=list)
    speaker: str | None = None
    explain: list[str] = field(default_factory=list)  # why: the messages that weighed most

    def summary(self) -> dict[str, object]:
        """The state as JSON shows it (`--json`, the status page): scores rounded, no points."""
        return {
            "primary": self.primary,
            "primary_score": round(self.primary_score, 3),
            "secondary": self.secondary,
            "valence": round(self.valence, 3),
            "arousal": round(self.arousal, 3),
            "confidence": round(self.confidence, 3),
            "messages": self.messages,
            "trajectory": self.trajectory,
        }


@dataclass
class MoodReport:
    """The state the agent adapts to and, when several named humans speak, one state per
    speaker; then `combined` is the state of the one who spoke last (its `speaker` says who)."""

    combined: MoodState
    speakers: dict[str, MoodState] = field(default_factory=dict)


# The window's features the calibration reads, in this order.
WINDOW_FEATURES: tuple[str, ...] = (
    "emotional_mass",  # logit of sum_i r_i e_i / sum_i r_i
    "latest_emotional",  # logit of e_n
    # logit of 1 - (1 - e_n)(1 - d_{n-1} e_{n-1}): one of the last two messages is emotional,
    # as the gold asks, the one before discounted by its distance in time from the newest
    "recent_emotional",
    "top_share",  # the leading emotion's share (`emotion_shares`)
    "intensity",  # r-weighted mean |valence|
    "evidence",  # log(1 + sum_i r_i): fades as the whole window ages
    # r-weighted mean of s_i[curious] + s_i[confused]: the mood model reads most questions so
    # (Reddit's annotators did), the dialogues label plain questions neutral; this lets the
    # calibration learn how much a question says about emotion.
    "questioning",
)
_LOGIT_CLIP = 0.01
_NEUTRAL = MOODS.index("neutral")
_CURIOUS, _CONFUSED = MOODS.index("curious"), MOODS.index("confused")


@dataclass(frozen=True)
class WindowCalibration:
    """c = 1 / (1 + exp(-(intercept + coef . window features))).

    `not_emotions`: moods that count as no emotion, as neutral does, in the features and the
    shares (they never lead a state). The model with the embedding head reads a plain question
    as curious or confused, as Reddit's annotators did; to the dialogues' annotators, to the
    real sessions' and to the agent a plain question shows no emotion.
    """

    coef: tuple[float, ...]  # one per WINDOW_FEATURES
    intercept: float
    not_emotions: tuple[str, ...] = ()


# For scorers without a trained calibration (test fakes): c = P(one of the last two messages is
# emotional) from their own scores, the gold's definition read literally.
DEFAULT_WINDOW_CALIBRATION = WindowCalibration(
    coef=tuple(float(name == "recent_emotional") for name in WINDOW_FEATURES), intercept=0.0
)


class Scorer(Protocol):
    """What the window and the mood history need of a mood model (`model.MoodModel`, the
    history's scorers, or a test's fake)."""

    @property
    def window_calibration(self) -> WindowCalibration:
        """How sure a window's emotion is, fitted on this scorer's own scores."""
        ...

    @property
    def version(self) -> str:
        """The name of the scores it gives: the mood history keeps a message's scores by it."""
        ...

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]: ...


_EXPLAIN_TOP = 3
FUTURE_SKEW = timedelta(minutes=1)
_SNIPPET_CHARS = 60
_NON_SPACE = re.compile(r"\S+")
# The trajectory tells at most this many parts: the first two and the latest ones.
_PARTS_SHOWN = 6
_QUOTE_CHARS = 32  # of the message at which a negative state eased
# Negative states: each starts a part of the story. A change from one of _EASES to no clear
# emotion or a positive one "eased"; tiredness does not ease, it is slept off.
NEGATIVE_MOODS = frozenset({"frustrated", "urgent", "confused", "anxious", "sad", "tired"})
_EASES = NEGATIVE_MOODS - {"tired"}

FloatArray = npt.NDArray[np.float64]


def read_window(
    messages: Sequence[Message],
    *,
    now: datetime,
    half_life: timedelta,
    scorer: Scorer | None,
    load: Callable[[], Scorer],
) -> MoodReport:
    """Given the messages of the window, return the mood of the humans: combined and, when two or
    more named speakers talk, one state per speaker. `scorer` scores the messages; when it is
    None, `load()` gives one, called only if there is a human message to score.

    Only `role == "user"` messages with some text count. Each weighs 0.5 ** (age / half_life),
    age = now - timestamp (a naive one is read in `now`'s zone). A message stamped more than
    FUTURE_SKEW after `now` is left out (not said yet); a smaller lead is clock skew: age 0.
    A message without a timestamp takes the age of the nearest earlier message that has one (it
    was said after it), else of the nearest later one; when no message has one, ages are spread
    by position from one half-life (the oldest) to 0 (the newest).
    Raise ValueError if half_life is not positive; whatever `load` raises.
    """
    if half_life <= timedelta(0):
        raise ValueError(f"half_life must be positive, got {half_life}")
    # `isspace` instead of `strip`: no copy of a long text just to see that it says something.
    human = [m for m in messages if m.role == "user" and m.text and not m.text.isspace()]
    # A message stamped well after `now` was not said yet at `now` (a replay, `--now` in the
    # past): it cannot be the human's mood then. Within FUTURE_SKEW it is clock skew.
    human = [m for m in human if m.timestamp is None or not _after(m.timestamp, now)]
    if not human:
        return MoodReport(combined=_empty_state(None))
    ages = _ages(human, now, half_life)
    # Oldest first, ties in the given order: the trajectory reads the window in time order.
    order = sorted(range(len(human)), key=lambda i: -ages[i])
    human = [human[i] for i in order]
    ages = [ages[i] for i in order]
    if scorer is None:
        scorer = load()
    moods = scorer.score_many([m.text for m in human])
    weights = [0.5 ** (age / half_life) for age in ages]
    items = list(zip(human, moods, weights, strict=True))
    calibration = scorer.window_calibration
    report = MoodReport(combined=_state(items, None, calibration, now))
    names = sorted({m.speaker for m in human if m.speaker is not None})
    if len(names) >= 2:
        for name in names:
            mine = [item for item in items if item[0].speaker == name]
            report.speakers[name] = _state(mine, name, calibration, now)
        # A group chat: the lines the agent adapts to are the state of whoever spoke last, the
        # person it answers next (one speaker's frustration is not the next one's question).
        # The others' states are listed beside it.
        latest = human[-1].speaker
        if latest is not None:
            report.combined = report.speakers[latest]
    return report


def _after(stamp: datetime, now: datetime) -> bool:
    """Whether `stamp` is more than FUTURE_SKEW after `now` (naive stamps read in now's zone)."""
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=now.tzinfo)
    if now.tzinfo is None and stamp.tzinfo is not None:
        stamp = stamp.replace(tzinfo=None)
    try:
        return stamp - now > FUTURE_SKEW
    except OverflowError:
        return False


def _ages(messages: Sequence[Message], now: datetime, half_life: timedelta) -> list[timedelta]:
    known: list[timedelta | None] = []
    for m in messages:
        if m.timestamp is None:
            known.append(None)
            continue
        stamp = m.timestamp if m.timestamp.tzinfo else m.timestamp.replace(tzinfo=now.tzinfo)
        if now.tzinfo is None and stamp.tzinfo is not None:
            stamp = stamp.replace(tzinfo=None)
        known.append(max(timedelta(0), now - stamp))
    n = len(messages)
    if all(age is None for age in known):
        return [half_life * ((n - 1 - i) / (n - 1)) if n > 1 else timedelta(0) for i in range(n)]
    ages: list[timedelta] = []
    for i, age in enumerate(known):
        if age is None:
            earlier = [a for a in known[:i] if a is not None]
            later = [a for a in known[i + 1 :] if a is not None]
            age = earlier[-1] if earlier else later[0]
        ages.append(age)
    return ages


def _empty_state(speaker: str | None) -> MoodState:
    return MoodState(
        primary="neutral",
        primary_score=0.0,
        secondary=None,
        secondary_score=0.0,
        valence=0.0,
        arousal=0.0,
        confidence=0.0,
        messages=0,
        trajectory="no human messages in the window",
        speaker=speaker,
    )


def _no_emotion(not_emotions: Sequence[str]) -> list[int]:
    return [_NEUTRAL, *(MOODS.index(mood) for mood in not_emotions)]


def emotional_mass(
    scores: FloatArray, not_emotions: Sequence[str] = (), emotional: FloatArray | None = None
) -> FloatArray:
    """Given the messages' mood scores (messages x MOODS), the moods besides neutral that are
    no emotion and, when the scorer reads it apart, each message's P(it shows an emotion),
    return e_i: that probability, else 1 - the scores of neutral and those moods."""
    if emotional is None:
        emotional = 1.0 - scores[:, _no_emotion(not_emotions)].sum(axis=1)
    result: FloatArray = np.clip(emotional, 0.0, 1.0)
    return result


def emotion_shares(
    scores: FloatArray,
    weights: FloatArray,
    not_emotions: Sequence[str] = (),
    emotional: FloatArray | None = None,
) -> FloatArray:
    """Given the messages' mood scores (messages x MOODS, oldest first), recency weights, the
    moods besides neutral that are no emotion and optionally each message's P(emotional)
    (`emotional_mass`), return each mood's share of "the emotion now" (0 for neutral and
    those; the rest sum to 1, or all 0 when no message has any emotional mass): the moods of
    the latest emotional message, see the module docstring."""
    none = _no_emotion(not_emotions)
    recency = weights / float(weights[-1]) if float(weights[-1]) > 0.0 else np.ones_like(weights)
    recency = np.minimum(recency, 1.0)
    emotional = recency * emotional_mass(scores, not_emotions, emotional)
    # prod_{j > i} (1 - d_j e_j): no newer message is the latest emotional one
    later = np.concatenate([np.cumprod((1.0 - emotional)[::-1])[::-1][1:], [1.0]])
    shares: FloatArray = (recency * later) @ scores
    shares[none] = 0.0
    total = float(shares.sum())
    return shares / total if total > 0.0 else shares


def window_features(
    scores: FloatArray,
    valences: FloatArray,
    weights: FloatArray,
    not_emotions: Sequence[str] = (),
    emotional: FloatArray | None = None,
) -> FloatArray:
    """Given the messages' mood scores (messages x MOODS, oldest first), valences, recency
    weights, the moods besides neutral that are no emotion and optionally each message's
    P(emotional) (`emotional_mass`), return the window's `WINDOW_FEATURES`.

    Shared with the training script so that the calibration is fitted on what runtime computes.
    """
    total = float(weights.sum())
    given = emotional
    emotional = emotional_mass(scores, not_emotions, given)
    latest = float(emotional[-1])
    recent = latest
    if len(emotional) >= 2 and float(weights[-1]) > 0.0:
        before = min(1.0, float(weights[-2]) / float(weights[-1])) * float(emotional[-2])
        recent = 1.0 - (1.0 - latest) * (1.0 - before)
    return np.array(
        [
            _logit(float(weights @ emotional) / total),
            _logit(latest),
            _logit(recent),
            float(emotion_shares(scores, weights, not_emotions, given).max()),
            float(weights @ np.abs(valences)) / total,
            math.log1p(total),
            float(weights @ (scores[:, _CURIOUS] + scores[:, _CONFUSED])) / total,
        ]
    )


def read_emotional(moods: Sequence[MessageMood]) -> FloatArray | None:
    """Given the messages' moods, return their P(emotional) when every one has it (one scorer
    scored them all), else None: the window reads the calm moods' scores instead."""
    if not moods or any(m.emotional is None for m in moods):
        return None
    return np.array([m.emotional for m in moods], dtype=np.float64)


def _logit(p: float) -> float:
    p = min(1.0 - _LOGIT_CLIP, max(_LOGIT_CLIP, p))
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class _Mixture:
    scores: FloatArray  # the state's distribution over MOODS
    confidence: float
    valence: float
    arousal: float
    features: FloatArray


def _mixture(
    scores: FloatArray,
    valences: FloatArray,
    arousals: FloatArray,
    weights: FloatArray,
    calibration: WindowCalibration,
    emotional: FloatArray | None,
) -> _Mixture:
    total = float(weights.sum())
    none = calibration.not_emotions
    features = window_features(scores, valences, weights, none, emotional)
    z = calibration.intercept + float(np.dot(calibration.coef, features))
    confidence = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
    state = emotion_shares(scores, weights, none, emotional) * confidence
    state[_NEUTRAL] = 1.0 - float(state.sum())
    return _Mixture(
        scores=state,
        confidence=confidence,
        valence=float(weights @ valences) / total,
        arousal=float(weights @ arousals) / total,
        features=features,
    )


def _state(
    items: list[tuple[Message, MessageMood, float]],
    speaker: str | None,
    calibration: WindowCalibration,
    now: datetime,
) -> MoodState:
    if not items:
        return _empty_state(speaker)
    moods = [mood for _, mood, _ in items]
    w = np.array([weight for _, _, weight in items], dtype=np.float64)
    if float(w.sum()) <= 0.0:
        # Every message is so old that its weight underflowed: read them as equals.
        w = np.ones_like(w)
    scores = np.array([[m.scores[k] for k in MOODS] for m in moods], dtype=np.float64)
    valences = np.array([m.valence for m in moods], dtype=np.float64)
    arousals = np.array([m.arousal for m in moods], dtype=np.float64)
    emotional = read_emotional(moods)
    state = _mixture(scores, valences, arousals, w, calibration, emotional)
    order = np.argsort(-state.scores, kind="stable")
    primary, second = MOODS[int(order[0])], MOODS[int(order[1])]
    primary_score = float(state.scores[int(order[0])])
    second_score = float(state.scores[int(order[1])])

    features = ", ".join(
        f"{name} {value:+.2f}" for name, value in zip(WINDOW_FEATURES, state.features, strict=True)
    )
    explain = [
        f"confidence {state.confidence:.2f} = P(emotional now) from {features} "
        f"({len(items)} messages)"
    ]
    heaviest = sorted(range(len(items)), key=lambda i: -w[i])[:_EXPLAIN_TOP]
    for i in heaviest:
        message, mood, _ = items[i]
        who = f"{message.speaker}: " if message.speaker and speaker is None else ""
        explain.append(
            f"weight {w[i]:.2f}: {mood.primary} {mood.primary_score:.2f}, valence "
            f'{mood.valence:+.2f}, arousal {mood.arousal:.2f} <- {who}"{_snippet(message.text)}"'
        )
    return MoodState(
        primary=primary,
        primary_score=primary_score,
        secondary=second if second_score >= MIN_SECONDARY else None,
        secondary_score=second_score if second_score >= MIN_SECONDARY else 0.0,
        valence=state.valence,
        arousal=state.arousal,
        confidence=state.confidence,
        messages=len(items),
        trajectory=_trajectory(
            [message for message, _, _ in items],
            scores,
            valences,
            arousals,
            w,
            state,
            calibration,
            now,
            emotional,
        ),
        points=[
            TrajectoryPoint(
                at=m.timestamp, mood=s.primary, score=s.primary_score, valence=s.valence
            )
            for m, s, _ in items
        ],
        speaker=speaker,
        explain=explain,
    )


def _trajectory(
    messages: Sequence[Message],
    scores: FloatArray,
    valences: FloatArray,
    arousals: FloatArray,
    weights: FloatArray,
    state: _Mixture,
    calibration: WindowCalibration,
    now: datetime,
    emotional: FloatArray | None,
) -> str:
    """Tell the window's story as a person would, with times in `now`'s zone: 'frustrated from
    19:47; urgent at 20:06; eased at 20:09 ("ok. prod's back"); …; tired from 23:06; no clear
    emotion now (since 23:14)'.

    It reads the state right after each message (the messages up to it, weighed as at its
    time); one message read calmly between two emotional ones does not end the emotion. Each
    change says what came: a negative state "from" its time (a second one "at" its time), the
    message at which one eased (quoted: what eased it is what the human said then), a positive
    one "at" its time; a calm stretch after a calm or positive one says nothing new. The last
    part is the state now, the state's own primary, so no line of the section contradicts
    another. Of more than _PARTS_SHOWN parts, the first two and the latest ones are told.
    """
    labels = [
        _reading(scores, valences, arousals, weights, i, calibration, emotional)
        for i in range(len(scores) - 1)
    ]
    labels.append(MOODS[int(np.argmax(state.scores))])
    for i in range(1, len(labels) - 1):
        if labels[i] == _NEUTRAL_LABEL != labels[i - 1] and labels[i + 1] != _NEUTRAL_LABEL:
            labels[i] = labels[i - 1]
    runs = [i for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1]]
    if len(runs) == 1:
        what = _words(labels[0])
        if len(messages) == 1:
            return f"{what} now (one message{_at(messages[0], now, ', ')})"
        since = _at(messages[0], now, " since ")
        return f"{what} now{since}" if since else f"{what} throughout"
    parts: list[str] = []
    seen: set[str] = set()
    folded = _on_and_off([labels[start] for start in runs])
    for k, start in enumerate(runs):
        label, message = labels[start], messages[start]
        before = labels[start - 1] if start > 0 else None
        if k in folded:
            if folded[k]:
                parts.append(f"{label} on and off{_at(message, now, ' from ')}")
            seen.add(label)
            continue
        if k == len(runs) - 1:
            since = _at(message, now, "since ")
            if before in _EASES and label not in NEGATIVE_MOODS:
                parts.append(f"{_eased(message, now)}; {_words(label)} now")
            else:
                parts.append(f"{_words(label)} now ({since})" if since else f"{_words(label)} now")
        elif label in NEGATIVE_MOODS:
            if before in NEGATIVE_MOODS:
                parts.append(f"{label}{_at(message, now, ' at ')}")
            else:
                again = " again" if label in seen else ""
                parts.append(f"{label}{again}{_at(message, now, ' from ')}")
        elif before in _EASES:
            parts.append(_eased(message, now) + (f", {label}" if label != _NEUTRAL_LABEL else ""))
        elif label != _NEUTRAL_LABEL:
            parts.append(f"{label}{_at(message, now, ' at ')}")
        seen.add(label)
    if len(parts) > _PARTS_SHOWN:
        parts = [*parts[:2], "…", *parts[2 - _PARTS_SHOWN :]]
    return "; ".join(parts)


def _on_and_off(runs: Sequence[str]) -> dict[int, bool]:
    """Given the label of each run of the story, oldest first, return the runs told as one
    episode "frustrated on and off from 19:47": negative states that eased and came back, two
    times or more, before they eased for good ahead of the state now. Each such run maps to
    whether it opens its episode (told) or not (left out); the ease that ends the episode is
    told as usual, and the state now is never folded."""
    folded: dict[int, bool] = {}
    last = len(runs) - 1
    k = 0
    while k < last:
        j, eases, end = k, 0, k
        while j < last and runs[j] in _EASES:  # a negative stretch, then what eased it
            while j < last and runs[j] in _EASES:
                j += 1
            if j == last:
                break  # still negative now: the story tells each step
            eases, end = eases + 1, j
            j += 1  # the episode goes on only if a negative state comes straight back
        if eases >= 2:
            folded.update({i: i == k for i in range(k, end)})
            k = end + 1
        else:
            k += 1
    return folded


def _words(label: str) -> str:
    return "no clear emotion" if label == _NEUTRAL_LABEL else label


def _eased(message: Message, now: datetime) -> str:
    """'eased at 21:52 ("ok that did it, thanks")': when, and what the human said then."""
    return f'eased{_at(message, now, " at ")} ("{_snippet(message.text, _QUOTE_CHARS)}")'


_NEUTRAL_LABEL = MOODS[_NEUTRAL]


def _reading(
    scores: FloatArray,
    valences: FloatArray,
    arousals: FloatArray,
    weights: FloatArray,
    last: int,
    calibration: WindowCalibration,
    emotional: FloatArray | None,
) -> str:
    """Given the window's messages and an index, return the state's primary read right after
    that message: the messages up to it, weighed relative to it."""
    head = weights[: last + 1]
    top = float(head[-1]) if float(head[-1]) > 0.0 else float(head.max())
    head = head / top if top > 0.0 else np.ones_like(head)
    mixture = _mixture(
        scores[: last + 1],
        valences[: last + 1],
        arousals[: last + 1],
        head,
        calibration,
        None if emotional is None else emotional[: last + 1],
    )
    return MOODS[int(np.argmax(mixture.scores))]


def _at(message: Message, now: datetime, before: str) -> str:
    """Given a message, the clock and what goes before the time, return `before` and the
    message's time in now's zone ("19:40"; "Sun 19:40" on another day), or "" without one."""
    stamp = message.timestamp
    if stamp is None:
        return ""
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=now.tzinfo)
    elif now.tzinfo is not None:
        stamp = stamp.astimezone(now.tzinfo)
    return f"{before}{stamp:%H:%M}" if stamp.date() == now.date() else f"{before}{stamp:%a %H:%M}"


def _snippet(text: str, chars: int = _SNIPPET_CHARS) -> str:
    """Return the text's first words, whitespace collapsed, clipped to `chars`."""
    words: list[str] = []
    size = -1
    for word in _NON_SPACE.finditer(text):  # only as many words as the snippet shows
        words.append(word.group())
        size += len(words[-1]) + 1
        if size > chars:
            break
    flat = " ".join(words)
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"
