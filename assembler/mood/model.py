"""Mood of the humans in a conversation: VADER plus our own mood model, over a recency-weighted
window.

INTERFACE (fixed; the implementation below fills it in):
- `MOODS`: the mood labels, exactly these (more may be appended later).
- `MessageMood`: the score of one text. `MoodModel.score_many(texts)` scores many in one call.
- `load_mood_model()`: the bundled model, loaded once per process.
- `analyze(messages, *, now, half_life, model=None) -> MoodReport`: the state per human speaker
  and combined, from the human (`role == "user"`) messages.

This module scores messages; `assembler.mood.window` turns their scores into the window's state
(`MoodState`, `MoodReport`, and `MOODS`, which it defines and this module re-exports).
"""

from __future__ import annotations

import json
import re
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from assembler.errors import ModelError
from assembler.mood.window import (
    DEFAULT_WINDOW_CALIBRATION,
    MIN_SECONDARY,
    MOODS,
    WINDOW_FEATURES,
    MessageMood,
    MoodReport,
    Scorer,
    WindowCalibration,
    read_window,
)
from assembler.transcripts.message import clip_middle

if TYPE_CHECKING:
    from assembler.transcripts.message import Message


# --- Implementation -----------------------------------------------------------------------------
#
# How a text is scored (`MoodModel.score_many`), all steps on its scored part (`scored_part`:
# the whole raw text, or the head and tail of a long one):
# 1. VADER `polarity_scores` on that raw text (case and punctuation are signal for it).
# 2. A linear model trained by `training/train_mood.py` (scikit-learn at training time only):
#    TF-IDF word 1-2-grams and char_wb n-grams of the lower-cased text, plus a few dense
#    features (VADER's scores, '!', '?', shouting, length), reproduced here with numpy.
#    - Moods: multinomial logistic regression on GoEmotions train (labels mapped to MOODS),
#      with per-class offsets tuned for macro-F1 on a held-out part of train; softmax.
#    - Valence, arousal: ridge regressions on EmoBank train (1..5 scales) that also read the
#      mood probabilities; valence is blended with VADER's compound, both are mapped to the
#      ranges of `MessageMood` (see `_calibrate`).
# 3. A lexicon layer for the two moods without training labels, `urgent` and `tired`, and for
#    frustration at a persisting failure (`URGENT_PATTERNS`, `TIRED_PATTERNS`,
#    `FRUSTRATED_PATTERNS`): a hit moves probability mass to that mood.

# 3: the window calibration reads WINDOW_FEATURES for the state now (format 2: the latest message)
MODEL_FORMAT = 3
DEFAULT_MODEL_PATH = Path(__file__).with_name("weights") / "mood_model.npz"

# The dense features next to the n-grams, in this order (the weights file lists them too).
HAND_FEATURES: tuple[str, ...] = (
    "vader_compound",
    "vader_pos",
    "vader_neg",
    "vader_neu",
    "vader_abs_compound",
    "exclamations",
    "questions",
    "shouting",
    "length",
)

# A long message is mostly pasted material (a log, code), not mood, and VADER's cost grows with
# the square of the text's length (a 23 KB message took 1.5 s, 113 KB 27 s). The human's own
# words are before and after the paste, so a text is scored on its first and last this many
# characters (`scored_part`): VADER, the n-grams, the dense features and the rules all read
# that part, about 3 ms of VADER however long the message.
SCORED_HEAD_CHARS = 1000
SCORED_TAIL_CHARS = 1000
# Texts per vectorised block: bounds the (non-zeros x outputs) temporary array to some MB.
_CHUNK = 2048
_RECENT = 1024  # texts whose moods a model keeps (more than any window it scores)
# Words whose char n-gram columns are remembered; words repeat (Zipf), so most are cache hits.
_WORD_CACHE_SIZE = 100_000

_WORD_RE = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token_pattern
_CAPS_WORD_RE = re.compile(r"\b[^\W\d_]{3,}\b")

# The rule layer, for moods that the training data does not label (urgent, tired) or labels in
# another domain (frustration at a failure that persists, as in a coding session; Reddit has
# almost none). Each pattern that matches is one hit; strength = 0.45 + 0.15 * hits, at most 0.9
# (+0.1 for urgent text that shouts: '!' or an all-caps word). That share of the probability
# mass goes to the rule's mood, the other moods keep the rest in proportion; arousal moves by
# RULE_AROUSAL_NUDGE * strength in the mood's direction, valence down by RULE_VALENCE_NUDGE *
# strength (all three are negative states the regressors never saw labelled).
RULE_AROUSAL_NUDGE = 0.3
RULE_VALENCE_NUDGE = 0.2
_APOS = "['’]"
# "not urgent", "anything else urgent?", "is it urgent?" ask or deny, they do not press
_NOT_PRESSING = "".join(
    f"(?<!\\b{w} )" for w in ("not", "no", "nothing", "anything", "else", "non", "it", "that")
)
URGENT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\basap\b",
        _NOT_PRESSING + r"(?<!\bnon-)\burgent(ly)?\b",
        # a bare "right now" is mostly temporal ("busy right now"); shouted or asked for, it is not
        r"\bright (now|away)\s*!",
        r"\b(need|needs|want|wants)\s+(this|it|that|them)\s+(done\s+|fixed\s+|merged\s+|"
        r"deployed\s+|back\s+up\s+)?(right\s+)?(now|today|tonight|asap)\b",
        r"\b(fix|revert|stop|deploy|roll ?back|restart|respond|do|check|look at)\b[^.?!\n]{0,30}"
        r"\b(immediately|right away|right now)\b",
        r"\bdeadlines?\b",
        r"\b(an emergency|emergency (fix|deploy|release|patch|rollback))\b",
        r"\b(prod|production|site|server|service|website|app|api|db|database|cluster)"
        r"\s+(is\s+|went\s+|goes\s+|are\s+)?(down|on fire)\b",
        r"\boutage\b",
        r"\bhurry\b",
        r"\b(by|before)\s+(eod|end of (the )?day|tonight|noon|tomorrow morning)\b",
        r"\btime[- ]sensitive\b",
        r"\bcritical (bug|issue|incident|error|fix)\b",
        r"\b(release )?blocker\b",
        r"\b(sev ?[01]|p0)\b",
        r"(?<!in )\bno time\b|\b(running|run|ran) out of time\b",
    )
)
TIRED_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # "tired of X" and "sick and tired" are frustration, not fatigue
        r"(?<!sick and )\btired\b(?! of)",
        r"\bexhaust(ed|ing)\b",
        r"\blong (day|night|week|shift)\b",
        # "can't think of an example" is not fatigue
        rf"\b(can{_APOS}?t|cannot|can not) think( straight| clearly| anymore)?\b(?! of)",
        r"\bneed (some )?sleep\b",
        r"\b(sleepy|drowsy|knackered|fatigued)\b",
        r"\b(worn|wiped|burn(ed|t)) out\b",
        rf"\b(i{_APOS}?m|i am|feel(ing)?)\s+(so\s+|totally\s+|completely\s+)?"
        r"(fried|beat|spent|wrecked|zonked)\b",
        r"\bdrained\b",
        r"\b(no|little|barely any|zero) sleep\b",
        r"\bbrain (is )?(fried|mush)\b",
        r"\bbarely awake\b",
        r"\bkeep my eyes open\b",
        r"\bup all night\b",
        r"\ball[- ]nighter\b",
        r"\byawn",
        r"\bzzz+\b",
    )
)
_FAILING = (
    rf"(broken|failing|fails|failed|crash(es|ed|ing)?|wrong|not working|doesn{_APOS}?t work|"
    rf"does not work|won{_APOS}?t work|erroring|errors out)"
)
FRUSTRATED_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(still|again|keeps?|kept)\b[^.?!\n]{{0,30}}\b{_FAILING}\b",
        rf"\b{_FAILING}\b[^.?!\n]{{0,20}}\b(again|still)\b",
        # Chat shorthand for exasperation, rare in the Reddit training data's labelled rows.
        r"\b(ffs|wtf|omfg|jfc|fml|ugh+|argh+)\b",
        rf"\bfor (fuck|god|christ|pete){_APOS}?s sake\b",
        r"\bseriously\s*[?!]",
        r"\b(are|r) (you|u) (kidding|serious)\b",
        r"\b(third|fourth|fifth|umpteenth|nth) time\b|\bhow many times\b",
        # "the second time I ran it" is plain; a failure back again within a span is not
        r"\b(second|2nd) time (today|tonight|this (morning|week|month|year)|in a row)\b",
        # A shouted "WHY" is exasperation, not a question ((?-i:) keeps this one case-sensitive).
        r"(?-i:\bWHY\b)",
    )
)

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class MoodWeights:
    """The arrays of a trained mood model, as stored in `mood_model.npz`."""

    word_vocab: dict[str, int]  # word n-gram -> column
    word_idf: FloatArray
    char_vocab: dict[str, int]  # char n-gram -> column (after the word columns)
    char_idf: FloatArray
    weights: FloatArray  # (words + chars + hand features) x (classes + 2)
    bias: FloatArray  # (classes + 2,)
    stack: FloatArray  # classes x 2: mood probabilities -> raw valence, arousal
    classes: tuple[str, ...]  # the moods the classifier outputs (a subset of MOODS)
    meta: dict[str, Any]  # n-gram ranges, calibration, provenance


@dataclass(frozen=True)
class RawScores:
    """The model's numbers before calibration and rules, for checks and benchmarks."""

    logits: FloatArray  # texts x classes (offsets included)
    probs: FloatArray  # texts x classes
    valence_raw: FloatArray  # EmoBank scale, 1..5
    arousal_raw: FloatArray  # EmoBank scale, 1..5
    compound: list[float]
    hand: FloatArray  # texts x HAND_FEATURES


def scored_part(text: str) -> str:
    """Given a raw text, return the part of it that is scored: the whole text, or for a long
    one its first SCORED_HEAD_CHARS and last SCORED_TAIL_CHARS characters."""
    return clip_middle(text, SCORED_HEAD_CHARS, SCORED_TAIL_CHARS)


def hand_features(text: str, vader: dict[str, float]) -> list[float]:
    """Given a raw text and its VADER scores, return the dense features (`HAND_FEATURES`).

    Shared with the training script so that training and runtime compute them identically.
    """
    words = _CAPS_WORD_RE.findall(text)
    shouting = sum(1 for w in words if w.isupper()) / len(words) if words else 0.0
    compound = vader["compound"]
    return [
        compound,
        vader["pos"],
        vader["neg"],
        vader["neu"],
        abs(compound),
        min(text.count("!"), 5) / 5.0,
        min(text.count("?"), 5) / 5.0,
        shouting,
        min(len(text), 300) / 300.0,
    ]


def word_ngrams(lowered: str, max_n: int) -> list[str]:
    """Given lower-cased text, return its word 1..max_n-grams as scikit-learn's analyzer does."""
    tokens = _WORD_RE.findall(lowered)
    grams = list(tokens)
    for n in range(2, min(max_n, len(tokens)) + 1):
        grams.extend(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return grams


def char_wb_ngrams(lowered: str, min_n: int, max_n: int) -> list[str]:
    """Given lower-cased text, return its char n-grams within space-padded words.

    Same n-grams as scikit-learn's `analyzer="char_wb"`, including its quirk that a word
    shorter than n is counted once, as a whole, and stops the loop over n.
    """
    grams: list[str] = []
    for word in lowered.split():
        padded = f" {word} "
        size = len(padded)
        for n in range(min_n, max_n + 1):
            if size <= n:
                grams.append(padded)
                break
            grams.extend([padded[i : i + n] for i in range(size - n + 1)])
    return grams


# Every pattern above contains one of these literals (lower-cased); a text with none of them
# skips the regexes, which would otherwise cost more than the model itself.
_URGENT_KEYS = (
    "asap", "urgent", "now", "right away", "immediately", "today", "tonight", "deadline",
    "emergency", "down", "on fire", "outage", "hurry", "eod", "end of", "noon",
    "tomorrow morning", "sensitive", "critical", "blocker", "sev", "p0", "time",
)  # fmt: skip
_TIRED_KEYS = (
    "tired", "exhaust", "long ", "think", "sleep", "drowsy", "knackered", "fatigued",
    "worn out", "wiped out", "burned out", "burnt out", "fried", "beat", "spent", "wrecked",
    "zonked", "drained", "brain", "awake", "eyes open", "all night", "nighter", "yawn", "zzz",
)  # fmt: skip
_FRUSTRATED_KEYS = (
    "still", "again", "keep", "kept", "ffs", "wtf", "omfg", "jfc", "fml", "ugh", "argh",
    "sake", "seriously", "kidding", "serious", " time", "why",
)  # fmt: skip
# mood, its patterns, their keys, the direction arousal moves when they hit
_RULES: tuple[tuple[str, tuple[re.Pattern[str], ...], tuple[str, ...], float], ...] = (
    ("urgent", URGENT_PATTERNS, _URGENT_KEYS, 1.0),
    ("tired", TIRED_PATTERNS, _TIRED_KEYS, -1.0),
    ("frustrated", FRUSTRATED_PATTERNS, _FRUSTRATED_KEYS, 1.0),
)
RULE_MOODS: tuple[str, ...] = tuple(mood for mood, _, _, _ in _RULES)


def rule_hits(text: str) -> dict[str, int]:
    """Given a raw text, return how many patterns of each rule mood (`RULE_MOODS`) it matches."""
    lowered = text.lower()
    hits = dict.fromkeys(RULE_MOODS, 0)
    for mood, patterns, keys, _ in _RULES:
        if any(key in lowered for key in keys):
            hits[mood] = sum(1 for p in patterns if p.search(text))
    return hits


def _rule_strength(hits: int, shouting: bool) -> float:
    if hits == 0:
        return 0.0
    return min(0.9, 0.45 + 0.15 * hits + (0.1 if shouting else 0.0))


class MoodModel:
    """VADER plus the trained mood model; scores texts in vectorised blocks."""

    # How sure a window's emotion is (see `analyze`); a trained model reads its own from the
    # weights file, a fake that scores texts without weights keeps this one.
    window_calibration: WindowCalibration = DEFAULT_WINDOW_CALIBRATION

    def __init__(self, weights: MoodWeights, *, source: str = "<memory>") -> None:
        """Given loaded weights, return a model. Raise ModelError if they do not fit together."""
        self.weights = weights
        self.source = source
        self._vader = SentimentIntensityAnalyzer()
        # The moods of recently scored texts: a daemon re-reads the same window cycle after
        # cycle, and a text's mood never changes. Insertion order is age; the oldest go first.
        self._recent: dict[str, MessageMood] = {}
        self._recent_lock = threading.Lock()
        meta = weights.meta
        try:
            self._word_max_n = int(meta["word_ngram_range"][1])
            self._char_min_n = int(meta["char_ngram_range"][0])
            self._char_max_n = int(meta["char_ngram_range"][1])
            self._sublinear = bool(meta["sublinear_tf"])
            cal = meta["calibration"]
            self._v_center = float(cal["valence_center"])
            self._v_scale = float(cal["valence_scale"])
            self._v_blend = float(cal["valence_vader_blend"])
            self._a_center = float(cal["arousal_center"])
            self._a_scale = float(cal["arousal_scale"])
            window = meta["window"]
            if list(window["features"]) != list(WINDOW_FEATURES):
                raise ValueError(f"window features {window['features']}")
            self.window_calibration = WindowCalibration(
                coef=tuple(float(c) for c in window["coef"]),
                intercept=float(window["intercept"]),
            )
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise ModelError(
                f"Mood model {source}: metadata lacks {error}; retrain it with "
                "`python training/train_mood.py`"
            ) from error
        n_word, n_char = len(weights.word_vocab), len(weights.char_vocab)
        n_classes = len(weights.classes)
        expected = (n_word + n_char + len(HAND_FEATURES), n_classes + 2)
        problems = []
        if weights.weights.shape != expected:
            problems.append(f"weights shape {weights.weights.shape}, expected {expected}")
        if weights.bias.shape != (n_classes + 2,):
            problems.append(f"bias shape {weights.bias.shape}")
        if weights.stack.shape != (n_classes, 2):
            problems.append(f"stack shape {weights.stack.shape}")
        if weights.word_idf.shape != (n_word,) or weights.char_idf.shape != (n_char,):
            problems.append("idf lengths differ from the vocabularies")
        if unknown := [c for c in weights.classes if c not in MOODS]:
            problems.append(f"unknown classes {unknown}")
        if problems:
            raise ModelError(
                f"Mood model {source} is inconsistent ({'; '.join(problems)}); retrain it with "
                "`python training/train_mood.py`"
            )
        self._n_word = n_word
        self._n_classes = n_classes
        self._idf = np.concatenate([weights.word_idf, weights.char_idf]).astype(np.float32)
        self._mood_columns = [MOODS.index(c) for c in weights.classes]
        self._char_cache: dict[str, list[int]] = {}

    def _char_columns(self, word: str) -> list[int]:
        """The known char n-gram columns of one word (char_wb n-grams never cross words)."""
        columns = self._char_cache.get(word)
        if columns is None:
            vocab = self.weights.char_vocab
            grams = char_wb_ngrams(word, self._char_min_n, self._char_max_n)
            columns = [c for c in map(vocab.get, grams) if c is not None]
            if len(self._char_cache) >= _WORD_CACHE_SIZE:
                self._char_cache.clear()
            self._char_cache[word] = columns
        return columns

    @classmethod
    def from_file(cls, path: str | Path) -> MoodModel:
        """Given the path of a `mood_model.npz`, return the model.

        Raise ModelError if the file is missing, unreadable or not a mood model.
        """
        return cls(_read_weights(Path(path)), source=str(path))

    def score(self, text: str) -> MessageMood:
        """Given one raw text, return its mood."""
        return self.score_many([text])[0]

    def score_many(self, texts: Sequence[str]) -> list[MessageMood]:
        """Given raw texts, return one mood per text, in order (of each text's `scored_part`)."""
        if len(texts) > _RECENT:  # bulk scoring (`assemble mood --stdin`): nothing to reuse
            out: list[MessageMood] = []
            for start in range(0, len(texts), _CHUNK):
                out.extend(self._score_block(texts[start : start + _CHUNK]))
            return out
        # The mood depends on the scored part only; keying by it keeps the cache small.
        texts = [scored_part(text) for text in texts]
        with self._recent_lock:
            known = {text: self._recent[text] for text in texts if text in self._recent}
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            known.update(zip(missing, self._score_block(missing), strict=True))
            with self._recent_lock:
                self._recent.update((text, known[text]) for text in missing)
                while len(self._recent) > _RECENT:
                    del self._recent[next(iter(self._recent))]
        return [known[text] for text in texts]

    def raw_scores(self, texts: Sequence[str]) -> RawScores:
        """Given raw texts, return the model's numbers before calibration and the rule layer."""
        parts = [self._raw_block(texts[s : s + _CHUNK]) for s in range(0, len(texts), _CHUNK)]
        if not parts:
            parts = [self._raw_block([])]
        return RawScores(
            logits=np.concatenate([p.logits for p in parts]),
            probs=np.concatenate([p.probs for p in parts]),
            valence_raw=np.concatenate([p.valence_raw for p in parts]),
            arousal_raw=np.concatenate([p.arousal_raw for p in parts]),
            compound=[c for p in parts for c in p.compound],
            hand=np.concatenate([p.hand for p in parts]),
        )

    def _raw_block(self, texts: Sequence[str]) -> RawScores:
        n = len(texts)
        w = self.weights
        word_vocab, char_vocab = w.word_vocab, w.char_vocab
        char_columns = self._char_columns
        ids: list[int] = []
        lengths: list[int] = []
        hand = np.zeros((n, len(HAND_FEATURES)), dtype=np.float32)
        compounds: list[float] = []
        polarity = self._vader.polarity_scores
        for row, raw in enumerate(texts):
            text = scored_part(raw)
            vader = polarity(text)
            compounds.append(vader["compound"])
            hand[row] = hand_features(text, vader)
            lowered = text.lower()
            # Unknown word n-grams map to -1 and are dropped below in one numpy step; char
            # columns come already filtered from the per-word cache.
            before = len(ids)
            ids.extend([word_vocab.get(g, -1) for g in word_ngrams(lowered, self._word_max_n)])
            for word in lowered.split():
                ids.extend(char_columns(word))
            lengths.append(len(ids) - before)
        outputs = hand @ w.weights[self._n_word + len(char_vocab) :].astype(np.float32)
        outputs += w.bias
        if ids:
            outputs += self._sparse_product(np.asarray(ids, dtype=np.int64), lengths, n)
        logits = outputs[:, : self._n_classes]
        probs = _softmax(logits)
        va = outputs[:, self._n_classes :] + probs @ w.stack
        return RawScores(
            logits=logits,
            probs=probs,
            valence_raw=va[:, 0],
            arousal_raw=va[:, 1],
            compound=compounds,
            hand=hand,
        )

    def _sparse_product(self, ids: npt.NDArray[np.int64], lengths: list[int], n: int) -> FloatArray:
        """TF-IDF rows (one L2 norm per block, words and chars) times the weight matrix."""
        docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
        known = ids >= 0
        docs, ids = docs[known], ids[known]
        width = len(self._idf)
        keys, counts = np.unique(docs * width + ids, return_counts=True)
        docs, cols = keys // width, keys % width
        tf = counts.astype(np.float32)
        if self._sublinear:
            tf = 1.0 + np.log(tf)
        values = tf * self._idf[cols]
        block = docs * 2 + (cols >= self._n_word)
        norms = np.sqrt(np.bincount(block, weights=values * values, minlength=2 * n))
        values = values / norms[block].astype(np.float32)
        contrib = self.weights.weights[cols] * values[:, None]
        out = np.zeros((n, contrib.shape[1]), dtype=np.float32)
        # np.unique sorted the keys, so each document's entries are one contiguous run.
        if len(docs):  # none when no text of the block has a word or n-gram the model knows
            starts = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1])))
            out[docs[starts]] = np.add.reduceat(contrib, starts, axis=0)
        return out

    def _score_block(self, texts: Sequence[str]) -> list[MessageMood]:
        texts = [scored_part(text) for text in texts]
        raw = self._raw_block(texts)
        valence, arousal = self._calibrate(raw)
        probs = raw.probs.astype(np.float64)
        scores = np.zeros((len(texts), len(MOODS)), dtype=np.float64)
        scores[:, self._mood_columns] = probs
        for row, text in enumerate(texts):
            if not text.strip():
                # Nothing said: neutral, not whatever the intercepts happen to favour.
                scores[row] = 0.0
                scores[row, MOODS.index("neutral")] = 1.0
                valence[row], arousal[row] = 0.0, 0.0
                continue
            hits = rule_hits(text)
            if not any(hits.values()):
                continue
            shouting = "!" in text or raw.hand[row, HAND_FEATURES.index("shouting")] > 0
            strength = {
                mood: _rule_strength(n, shouting and mood == "urgent") for mood, n in hits.items()
            }
            mass, total = max(strength.values()), sum(strength.values())
            scores[row] *= 1.0 - mass
            for mood, _, _, direction in _RULES:
                share = mass * strength[mood] / total
                scores[row, MOODS.index(mood)] += share
                arousal[row] += RULE_AROUSAL_NUDGE * direction * share
            valence[row] -= RULE_VALENCE_NUDGE * mass
            arousal[row] = min(1.0, max(0.0, arousal[row]))
            valence[row] = min(1.0, max(-1.0, valence[row]))
        return [
            _message_mood(scores[row], float(valence[row]), float(arousal[row]), compound)
            for row, compound in enumerate(raw.compound)
        ]

    def _calibrate(self, raw: RawScores) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Map the EmoBank-scale predictions to valence -1..1 and arousal 0..1.

        valence = clip(b * compound + (1 - b) * (V - center) / scale, -1, 1), b tuned in training
        for correlation on held-out train rows; arousal = clip(0.5 + (A - center) / scale, 0, 1).
        The scales spread the typical predictions over the ranges that readers threshold.
        """
        compound = np.asarray(raw.compound, dtype=np.float64)
        v_model = (raw.valence_raw.astype(np.float64) - self._v_center) / self._v_scale
        valence = self._v_blend * compound + (1.0 - self._v_blend) * v_model
        arousal = 0.5 + (raw.arousal_raw.astype(np.float64) - self._a_center) / self._a_scale
        return np.clip(valence, -1.0, 1.0), np.clip(arousal, 0.0, 1.0)


def _softmax(logits: FloatArray) -> FloatArray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    result: FloatArray = exp / exp.sum(axis=1, keepdims=True)
    return result


def _message_mood(
    scores: npt.NDArray[np.float64], valence: float, arousal: float, compound: float
) -> MessageMood:
    order = np.argsort(-scores, kind="stable")
    first, second = int(order[0]), int(order[1])
    second_score = float(scores[second])
    return MessageMood(
        valence=valence,
        arousal=arousal,
        scores={mood: float(s) for mood, s in zip(MOODS, scores, strict=True)},
        compound=compound,
        primary=MOODS[first],
        primary_score=float(scores[first]),
        secondary=MOODS[second] if second_score >= MIN_SECONDARY else None,
        secondary_score=second_score if second_score >= MIN_SECONDARY else 0.0,
    )


def _read_weights(path: Path) -> MoodWeights:
    fix = "reinstall the package or rebuild it with `python training/train_mood.py`"
    if not path.is_file():
        raise ModelError(f"Mood model weights not found at {path}; {fix}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        meta = json.loads(str(arrays["meta"]))
        if meta.get("format") != MODEL_FORMAT:
            raise ModelError(
                f"Mood model {path} has format {meta.get('format')!r}, this code reads "
                f"{MODEL_FORMAT}; {fix}"
            )
        if tuple(str(h) for h in arrays["hand_features"]) != HAND_FEATURES:
            raise ModelError(f"Mood model {path} was trained on other dense features; {fix}")
        return MoodWeights(
            word_vocab={g: i for i, g in enumerate(arrays["word_vocab"].tolist())},
            word_idf=arrays["word_idf"].astype(np.float32),
            char_vocab={
                g: i + len(arrays["word_vocab"])
                for i, g in enumerate(arrays["char_vocab"].tolist())
            },
            char_idf=arrays["char_idf"].astype(np.float32),
            weights=arrays["weights"].astype(np.float32),
            bias=arrays["bias"].astype(np.float32),
            stack=arrays["stack"].astype(np.float32),
            classes=tuple(str(c) for c in arrays["classes"]),
            meta=meta,
        )
    except ModelError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise ModelError(f"Mood model {path} is unreadable or corrupt ({error}); {fix}") from error


_cache_lock = threading.Lock()
_cached: MoodModel | None = None


def load_mood_model(path: str | Path | None = None) -> MoodModel:
    """Given nothing, return the bundled mood model, loaded once per process; given a path,
    return the model stored there (not cached).

    Raise ModelError if the weights are missing or corrupt.
    """
    global _cached
    if path is not None:
        return MoodModel.from_file(path)
    with _cache_lock:
        if _cached is None:
            _cached = MoodModel.from_file(DEFAULT_MODEL_PATH)
        return _cached


# --- The window ----------------------------------------------------------------------------------


def analyze(
    messages: Sequence[Message],
    *,
    now: datetime,
    half_life: timedelta,
    model: Scorer | None = None,
) -> MoodReport:
    """Given the messages of the window, return the mood of the humans: combined and, when two or
    more named speakers talk, one state per speaker (`mood_window.read_window` says how), the
    messages scored by `model` (a `MoodModel`, or the mood history's `RememberedMoods`), by
    default the bundled one (loaded only if a human spoke).

    Raise ValueError if half_life is not positive; ModelError if the bundled model is needed and
    cannot be loaded.
    """
    return read_window(messages, now=now, half_life=half_life, scorer=model, load=load_mood_model)
