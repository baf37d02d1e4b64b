"""Mood of the humans in a conversation: VADER plus our own mood model, over a recency-weighted
window.

INTERFACE (fixed; the implementation below fills it in):
- `MOODS`: the mood labels, exactly these (more may be appended later).
- `MessageMood`: the score of one text. `MoodModel.score_many(texts)` scores many in one call.
- `load_mood_model(embedder=None)`: the bundled model, loaded once per process; given an
  embedder of the memory search's model (`mood_embedder` picks it), the model that also reads
  each message's sentence embedding (`assembler.mood.semantic`) and, when the embedder gives
  them, the hidden states its fine-tuned layer reads (`assembler.mood.layer`). Without one, or
  when it cannot load, the n-gram model alone scores.
- `analyze(messages, *, now, half_life, model=None) -> MoodReport`: the state per human speaker
  and combined, from the human (`role == "user"`) messages.

This module scores messages; `assembler.mood.window` turns their scores into the window's state
(`MoodState`, `MoodReport`, and `MOODS`, which it defines and this module re-exports), and
`assembler.mood.lexicons` holds the lexicons the rule layer matches.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from assembler.errors import ModelError
from assembler.memory.embeddings import BUNDLED, Embedder, LazyEmbedder
from assembler.mood.archive import broken_as_error, read_archive
from assembler.mood.layer import DEFAULT_LAYER_PATH, MoodLayer, read_mood_layer
from assembler.mood.lexicons import CALM_COMMAND, EXTENDED_RULES, RULE_MOODS, rule_hits
from assembler.mood.own_words import own_words
from assembler.mood.semantic import (
    DEFAULT_SEMANTIC_PATH,
    SemanticWeights,
    embedded_part,
    read_semantic_weights,
    rule_features,
)
from assembler.mood.window import (
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

log = logging.getLogger(__name__)


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
#    With an embedder (`load_mood_model(embedder=...)`), the embedding head
#    (`assembler.mood.semantic`) reads each text's sentence embedding, the dense features and
#    the rule hits; its mood log-probabilities, valence and arousal are mixed with the n-gram
#    model's (the weights file says how much of each) before the steps below. With the
#    fine-tuned layer (`assembler.mood.layer`) and an embedder that gives hidden states, the
#    layer's mood log-probabilities take the place of the head's in that mix.
# 3. A lexicon layer (`assembler.mood.lexicons`) for the two moods without training labels,
#    `urgent` and `tired`, and for frustration at a persisting failure (`URGENT_PATTERNS`,
#    `TIRED_PATTERNS`, `FRUSTRATED_PATTERNS`): a hit moves probability mass to that mood.

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

# The rule layer, over the lexicons' hits (`rule_hits`): each pattern of a rule mood that matches
# is one hit; strength = 0.45 + 0.15 * hits, at most 0.9 (+0.1 for urgent text that shouts: '!'
# or an all-caps word). That share of the probability mass goes to the rule's mood, the other
# moods keep the rest in proportion; arousal moves by RULE_AROUSAL_NUDGE * strength and valence
# by RULE_VALENCE_NUDGE * strength, each in the mood's direction (`EXTENDED_RULES`).
RULE_AROUSAL_NUDGE = 0.3
RULE_VALENCE_NUDGE = 0.2
# A command about a process, a server or a table (`CALM_COMMAND`), with no rule of a mood hit,
# counts this share of the gate's evidence: the gate reads its violent words as emotion.
CALM_COMMAND_DISCOUNT = 0.5
# The dense features the embedding head reads after the vector, in this order.
SEMANTIC_DENSE: tuple[str, ...] = HAND_FEATURES + tuple(f"rule_{mood}" for mood in RULE_MOODS)

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
    digest: str = ""  # of the weights file: names the scores it gives (the mood history's)


@dataclass(frozen=True)
class RawScores:
    """The model's numbers before calibration and rules, for checks and benchmarks."""

    logits: FloatArray  # texts x classes (offsets included)
    probs: FloatArray  # texts x classes
    valence_raw: FloatArray  # EmoBank scale, 1..5
    arousal_raw: FloatArray  # EmoBank scale, 1..5
    compound: list[float]
    hand: FloatArray  # texts x HAND_FEATURES
    # P(the text shows an emotion), the embedding head's gate; None without one
    emotional: FloatArray | None = None


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


# Letters of the Latin script (ASCII and the Latin blocks up to Latin Extended-B, and Latin
# Extended Additional): the trained models read English, and their n-grams and the embedding
# vocabulary carry nothing of other scripts.
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff]")
_LETTER = re.compile(r"[^\W\d_]")


def unread_script(text: str) -> bool:
    """Whether most of a text's letters are of a script the trained models never read
    (Chinese, Japanese, Korean, Cyrillic, Arabic...): their reading of it is noise, and only
    the lexicons, which cover some of those languages, say how the writer feels."""
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_LATIN.findall(text)) * 2 < letters


def _rule_strength(hits: int, shouting: bool) -> float:
    if hits == 0:
        return 0.0
    return min(0.9, 0.45 + 0.15 * hits + (0.1 if shouting else 0.0))


class MoodModel:
    """VADER plus the trained mood model, and with an embedder its embedding head; scores texts
    in vectorised blocks."""

    def __init__(
        self,
        weights: MoodWeights,
        *,
        source: str = "<memory>",
        semantic: SemanticWeights | None = None,
        embedder: Embedder | None = None,
        layer: MoodLayer | None = None,
    ) -> None:
        """Given loaded weights and, optionally, an embedding head with the embedder of its
        vectors and the fine-tuned layer, return a model (the head is used only when both are
        given; the layer only with them, and when the embedder gives hidden states).

        Raise ModelError if the weights do not fit together.
        """
        self.weights = weights
        self.source = source
        self.semantic = semantic if embedder is not None else None
        self.embedder = embedder if semantic is not None else None
        self.layer = layer if self.semantic is not None else None
        # Why the embedder failed, once it has: the n-gram model scores from then on.
        self.embedder_failed: str | None = None
        # Why the layer cannot run (the embedder gives no hidden states), once known: the
        # embedding head's moods serve instead.
        self.layer_unavailable: str | None = None
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
            self._calibration = {
                key: float(cal[key])
                for key in (
                    "valence_center",
                    "valence_scale",
                    "valence_vader_blend",
                    "arousal_center",
                    "arousal_scale",
                )
            }
            window = meta["window"]
            if list(window["features"]) != list(WINDOW_FEATURES):
                raise ValueError(f"window features {window['features']}")
            self._ngram_calibration = WindowCalibration(
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
        if self.semantic is not None and self.semantic.classes != weights.classes:
            raise ModelError(
                f"Mood model {source}: the embedding head's moods {self.semantic.classes} are "
                f"not the n-gram model's {weights.classes}; retrain both"
            )

    @property
    def reads_embeddings(self) -> bool:
        """Whether texts are scored with the embedding head (an embedder that has not failed)."""
        return self.semantic is not None and self.embedder_failed is None

    @property
    def window_calibration(self) -> WindowCalibration:
        """How sure a window's emotion is (see `analyze`), fitted on this model's own scores."""
        if self.semantic is not None and self.embedder_failed is None:
            return self.semantic.window
        return self._ngram_calibration

    @property
    def version(self) -> str:
        """Return the name of the scores this model gives now: the mood history rescores the
        messages that another version scored (another model, retrained weights, or the n-gram
        model alone after the embedder failed)."""
        if self.semantic is not None and self.embedder_failed is None:
            layer = ""
            if self.layer is not None and self.layer_unavailable is None:
                layer = f"+layer:{self.layer.digest}"
            return f"embedding:{self.semantic.digest}{layer}+ngram:{self.weights.digest}"
        return f"ngram:{self.weights.digest}"

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
        """Given raw texts, return one mood per text, in order (of each text's `scored_part` of
        its `own_words`: what it quotes or pastes is not the writer's mood)."""
        texts = [own_words(text) for text in texts]
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
        """Given raw texts, return the model's numbers before calibration and the rule layer
        (with the embedding head, the mixed ones)."""
        parts = [
            self._mixed_block([scored_part(t) for t in texts[s : s + _CHUNK]])[0]
            for s in range(0, len(texts), _CHUNK)
        ]
        if not parts:
            parts = [self._raw_block([])]
        gates = [p.emotional for p in parts if p.emotional is not None]
        return RawScores(
            emotional=np.concatenate(gates) if len(gates) == len(parts) else None,
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

    def _mixed_block(self, texts: Sequence[str]) -> tuple[RawScores, list[dict[str, int]], bool]:
        """Given scored parts, return the numbers before calibration and the rule layer (the
        n-gram model's, or mixed with the embedding head's), each text's rule hits, and whether
        the head read them."""
        raw = self._raw_block(texts)
        semantic, embedder = self.semantic, self.embedder
        if semantic is None or embedder is None or self.embedder_failed is not None or not texts:
            return raw, [rule_hits(text) for text in texts], False
        states: list[Any] | None = None
        try:
            parts = [embedded_part(t) for t in texts]
            if self.layer is not None and self.layer_unavailable is None:
                found, states = _encode_with_states(embedder, parts)
                if states is None:
                    self._layer_lacks_states()
                vectors = np.asarray(found, np.float32)
            else:
                vectors = np.asarray(embedder.encode(parts), np.float32)
            if vectors.shape != (len(texts), semantic.dim):
                raise ModelError(
                    f"the embedder gave vectors of shape {vectors.shape}, the mood model reads "
                    f"{semantic.dim} numbers per text"
                )
        except ModelError as error:
            self._embedder_broke(error)
            return raw, [rule_hits(text) for text in texts], False
        hits = [rule_hits(text, extended=True) for text in texts]
        dense = np.hstack(
            [raw.hand, np.array([rule_features(h, RULE_MOODS) for h in hits], dtype=np.float32)]
        )
        outputs = semantic.outputs(vectors, dense)
        logits, valence, arousal = semantic.mix(
            outputs, raw.logits, raw.valence_raw, raw.arousal_raw
        )
        if states is not None and self.layer is not None:
            logits = self.layer.mix(self.layer.logits(states), raw.logits)
        mixed = RawScores(
            logits=logits,
            probs=_softmax(logits),
            valence_raw=valence,
            arousal_raw=arousal,
            compound=raw.compound,
            hand=raw.hand,
            emotional=semantic.emotional(outputs),
        )
        return mixed, hits, True

    def _layer_lacks_states(self) -> None:
        """Score moods with the embedding head from now on (the embedder gives no hidden
        states: an export made by an earlier version); say so once, forget the moods scored
        with the layer."""
        with self._recent_lock:
            if self.layer_unavailable is None:
                self.layer_unavailable = (
                    "the embedding model's export gives no hidden states; the mood model reads "
                    "moods less well (degraded) until it is exported again with "
                    "`assemble model export --force`"
                )
                log.warning("%s", self.layer_unavailable)
            self._recent.clear()

    def _embedder_broke(self, error: ModelError) -> None:
        """Score with the n-gram model alone from now on (the embedder cannot load or failed);
        forget the moods scored with the head, so that no window mixes the two."""
        with self._recent_lock:
            if self.embedder_failed is None:
                self.embedder_failed = str(error)
                log.warning("the mood model reads without sentence embeddings: %s", error)
            self._recent.clear()

    def _score_block(self, texts: Sequence[str]) -> list[MessageMood]:
        texts = [scored_part(text) for text in texts]
        raw, all_hits, embedded = self._mixed_block(texts)
        semantic = self.semantic
        calibration = semantic.calibration if embedded and semantic else self._calibration
        valence, arousal = _calibrate(raw, calibration)
        probs = raw.probs.astype(np.float64)
        scores = np.zeros((len(texts), len(MOODS)), dtype=np.float64)
        scores[:, self._mood_columns] = probs
        gate = raw.emotional
        emotional: list[float | None] = (
            [None] * len(texts) if gate is None else [float(g) for g in gate]
        )
        for row, text in enumerate(texts):
            hits = all_hits[row]
            if not text.strip() or (not any(hits.values()) and unread_script(text)):
                # Nothing said, or nothing the models can read and no lexicon word: neutral,
                # not whatever the intercepts happen to favour.
                scores[row] = 0.0
                scores[row, MOODS.index("neutral")] = 1.0
                valence[row], arousal[row] = 0.0, 0.0
                emotional[row] = None if gate is None else 0.0
                continue
            if not any(hits.values()):
                known = emotional[row]
                if known is not None and CALM_COMMAND.search(text):
                    emotional[row] = known * CALM_COMMAND_DISCOUNT
                continue
            shouting = "!" in text or raw.hand[row, HAND_FEATURES.index("shouting")] > 0
            strength = {
                mood: _rule_strength(n, shouting and mood == "urgent") for mood, n in hits.items()
            }
            mass, total = max(strength.values()), sum(strength.values())
            scores[row] *= 1.0 - mass
            # A lexicon hit is evidence of an emotion in its own right, beside the gate's.
            known = emotional[row]
            if known is not None:
                emotional[row] = 1.0 - (1.0 - known) * (1.0 - mass)
            for mood, _, _, up, pleasant in EXTENDED_RULES:
                share = mass * strength[mood] / total
                scores[row, MOODS.index(mood)] += share
                arousal[row] += RULE_AROUSAL_NUDGE * up * share
                valence[row] += RULE_VALENCE_NUDGE * pleasant * share
            arousal[row] = min(1.0, max(0.0, arousal[row]))
            valence[row] = min(1.0, max(-1.0, valence[row]))
        return [
            _message_mood(
                scores[row], float(valence[row]), float(arousal[row]), compound, emotional[row]
            )
            for row, compound in enumerate(raw.compound)
        ]


def _calibrate(
    raw: RawScores, calibration: dict[str, float]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Given raw scores and a calibration, map the EmoBank-scale predictions to valence -1..1
    and arousal 0..1.

    valence = clip(b * compound + (1 - b) * (V - center) / scale, -1, 1), b tuned in training
    for correlation on held-out train rows; arousal = clip(0.5 + (A - center) / scale, 0, 1).
    The scales spread the typical predictions over the ranges that readers threshold.
    """
    blend = calibration["valence_vader_blend"]
    compound = np.asarray(raw.compound, dtype=np.float64)
    v_model = raw.valence_raw.astype(np.float64) - calibration["valence_center"]
    v_model /= calibration["valence_scale"]
    valence = blend * compound + (1.0 - blend) * v_model
    arousal = raw.arousal_raw.astype(np.float64) - calibration["arousal_center"]
    arousal = 0.5 + arousal / calibration["arousal_scale"]
    return np.clip(valence, -1.0, 1.0), np.clip(arousal, 0.0, 1.0)


def _softmax(logits: FloatArray) -> FloatArray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    result: FloatArray = exp / exp.sum(axis=1, keepdims=True)
    return result


def _message_mood(
    scores: npt.NDArray[np.float64],
    valence: float,
    arousal: float,
    compound: float,
    emotional: float | None = None,
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
        emotional=emotional,
    )


def _read_weights(path: Path) -> MoodWeights:
    fix = "reinstall the package or rebuild it with `python training/train_mood.py`"
    archive = read_archive(path, what="Mood model", fix=fix, formats=(MODEL_FORMAT,))
    arrays, meta = archive.arrays, archive.meta
    with broken_as_error(path, what="Mood model", fix=fix):
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
            digest=archive.digest,
        )


_cache_lock = threading.Lock()
_cached: MoodModel | None = None
# The models that read embeddings, by the embedder's model id (one per process, as the n-gram
# model: a daemon scores cycle after cycle with the same one, and its recent moods are kept).
_with_embeddings: dict[str, MoodModel] = {}
_semantic: SemanticWeights | None = None
# The fine-tuned layer: None until read; False when it cannot be read (logged once).
_layer: MoodLayer | bool | None = None


def _encode_with_states(embedder: Embedder, texts: Sequence[str]) -> tuple[Any, Any]:
    """Given an embedder and texts, return their vectors and, when the embedder gives them
    (an export made by this version), their hidden states entering its last layer, else None."""
    encode = getattr(embedder, "encode_with_states", None)
    if encode is None:
        return embedder.encode(texts), None
    result: tuple[Any, Any] = encode(texts)
    return result


def _read_layer(classes: tuple[str, ...], model_id: str) -> MoodLayer | None:
    """Return the fine-tuned layer for this embedding model, read once (None if it cannot be
    read, logged once, or reads another model's states). The caller holds `_cache_lock`."""
    global _layer
    if _layer is None:
        try:
            _layer = read_mood_layer(DEFAULT_LAYER_PATH, classes=classes)
        except ModelError as error:
            log.warning("the mood model reads without its fine-tuned layer: %s", error)
            _layer = False
    if isinstance(_layer, MoodLayer) and _layer.embedding_model == model_id:
        return _layer
    return None


def load_mood_model(
    path: str | Path | None = None, *, embedder: Embedder | None = None
) -> MoodModel:
    """Given nothing, return the bundled mood model, loaded once per process; given a path,
    return the n-gram model stored there (not cached). Given an embedder (`mood_embedder`), return
    the bundled model that also reads each message's sentence embedding, loaded once per
    process and embedding model, or the n-gram model alone when the embedder's model is not the
    one the embedding head was trained on, or the head cannot be read (logged).

    Raise ModelError if the n-gram model's weights are missing or corrupt.
    """
    global _cached, _semantic
    if path is not None:
        return MoodModel.from_file(path)
    with _cache_lock:
        if _cached is None:
            _cached = MoodModel.from_file(DEFAULT_MODEL_PATH)
        base = _cached
        if embedder is None:
            return base
        try:
            model_id = embedder.model_id  # resolves where the model is; loads nothing
            known = _with_embeddings.get(model_id)
            if known is not None:
                return known
            if _semantic is None:
                _semantic = read_semantic_weights(
                    DEFAULT_SEMANTIC_PATH, dense=SEMANTIC_DENSE, classes=base.weights.classes
                )
        except ModelError as error:
            log.warning("the mood model reads without sentence embeddings: %s", error)
            return base
        if model_id != _semantic.embedding_model:
            log.info(
                "the mood model reads %s's vectors, not %s's: scoring without them",
                _semantic.embedding_model,
                model_id,
            )
            return base
        model = MoodModel(
            base.weights,
            source=f"{base.source} + {DEFAULT_SEMANTIC_PATH}",
            semantic=_semantic,
            embedder=embedder,
            layer=_read_layer(base.weights.classes, model_id),
        )
        _with_embeddings[model_id] = model
        return model


def mood_embedder(memory_model: str, *, batch_size: int = 64) -> Embedder | None:
    """Given `memory.model` and `memory.batch_size`, return the embedder the mood model reads
    with: None when `memory.model` is 'none' (no embeddings wanted), else the bundled model,
    loaded on its first use. The process loads it once: when the memory search runs it too,
    both share it (the index wraps it in its caches of vectors, which hold no hidden states,
    so the mood model does not read through them)."""
    if memory_model.strip() == "none":
        return None
    return LazyEmbedder(BUNDLED, batch_size=batch_size)


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
