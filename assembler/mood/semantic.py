"""The embedding head of the mood model: what a message means, read from its sentence embedding.

The n-gram model (`assembler.mood.model`) reads words and character runs: it takes "are you
stupid? what about the tests??" for a question and "jesus, it all works, you are a monster" for
anger. The embedding head reads the sentence embedding of the memory search's model
(all-MiniLM-L6-v2, 384 numbers, L2-normalised) next to the dense features the n-gram model
reads (VADER, '!', '?', shouting, length: `HAND_FEATURES`) and the rule lexicons' hits
(`RULE_FEATURES`), with one linear layer trained by `training/train_mood_embeddings.py`:

- moods: a multinomial logistic regression; its log-probabilities are mixed with the n-gram
  model's, `(a * head + (1 - a) * n-gram + offsets) / temperature`, then a softmax. The weight
  `a` is the largest whose held-out macro-F1 is within a tolerance of the best one: the
  embedding generalises past the corpora's wording, the n-grams fit the corpora;
- valence and arousal: ridge regressions on EmoBank's scales, mixed with the n-gram model's the
  same way and mapped to the runtime's ranges as the n-gram model maps its own;
- whether the message shows an emotion at all (format 2): a binary logistic regression, the
  gate, fitted on emotional against calm utterances of dialogues. A mood classifier trained
  for macro-F1 over eight moods spreads its mass to win each class; the gate is trained for
  the one question the window asks (is there an emotion here?) and answers it better
  (`MessageMood.emotional`). Which mood a message shows is still the mix's.

Weights: `weights/mood_embedding.npz` (with a card, `mood_embedding.card.json`). The runtime is
numpy only; the vectors come from an `assembler.memory.embeddings.Embedder`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assembler.errors import ModelError
from assembler.mood.archive import broken_as_error, read_archive
from assembler.mood.window import MOODS, WINDOW_FEATURES, WindowCalibration
from assembler.transcripts.message import clip_middle

# 2: a gate column (does the message show an emotion) after valence and arousal; 1 has none
SEMANTIC_FORMAT = 2
READABLE_FORMATS = (1, 2)
# The moods that are no emotion to the gate: neutral, and a question's (the dialogues' annotators
# and the agent read a plain question as calm; Reddit's labelled it curious or confused).
CALM: tuple[str, ...] = ("neutral", "curious", "confused")
DEFAULT_SEMANTIC_PATH = Path(__file__).with_name("weights") / "mood_embedding.npz"
# The model reads at most 256 word pieces (about 1,000 characters of prose, fewer of a log): of
# a long message, its first and last words, where the human speaks before and after a paste.
EMBED_HEAD_CHARS = 600
EMBED_TAIL_CHARS = 400
# The rule lexicons' hits as features, capped: a message that hits three patterns of a mood is
# as clear as one that hits five.
RULE_HIT_CAP = 3

# How raw valence and arousal map to the runtime's ranges (as the n-gram model's `calibration`).
CALIBRATION_KEYS = (
    "valence_center",
    "valence_scale",
    "valence_vader_blend",
    "arousal_center",
    "arousal_scale",
)

FloatArray = npt.NDArray[np.float32]
_FIX = "reinstall the package or rebuild it with `python training/train_mood_embeddings.py`"


def embedded_part(text: str) -> str:
    """Given a raw text, return the part of it that is embedded: the whole text, or of a long
    one its first EMBED_HEAD_CHARS and last EMBED_TAIL_CHARS characters."""
    return clip_middle(text, EMBED_HEAD_CHARS, EMBED_TAIL_CHARS)


def rule_features(hits: dict[str, int], moods: tuple[str, ...]) -> list[float]:
    """Given a text's rule hits per mood and the rule moods in order, return the features."""
    return [min(hits.get(mood, 0), RULE_HIT_CAP) / RULE_HIT_CAP for mood in moods]


@dataclass(frozen=True)
class SemanticWeights:
    """The arrays and settings of a trained embedding head, as `mood_embedding.npz` stores them."""

    # (dim + dense features) x (classes + 2 [+ 1]): mood logits, valence, arousal [, the gate]
    coef: FloatArray
    bias: FloatArray  # (columns of coef,)
    classes: tuple[str, ...]  # the moods of the logits, the n-gram model's classes
    embedding_model: str  # the `Embedder.model_id` whose vectors it reads
    dim: int
    dense: tuple[str, ...]  # the dense features after the vector, in order
    fusion: float  # a: the head's share of the mood log-probabilities
    offsets: FloatArray  # per class, added to the mixed log-probabilities
    temperature: float
    valence_fusion: float  # the head's share of the raw valence
    arousal_fusion: float  # the head's share of the raw arousal
    calibration: dict[str, float]  # raw valence/arousal -> the runtime's ranges
    window: WindowCalibration
    digest: str  # of the file: names the scores it gives (the mood history's `scorer`)
    meta: dict[str, Any]

    def outputs(self, vectors: FloatArray, dense: FloatArray) -> FloatArray:
        """Given the texts' vectors and dense features, return the head's raw outputs: the mood
        logits, then the raw valence and arousal (texts x classes + 2)."""
        features = np.hstack([vectors.astype(np.float32), dense.astype(np.float32)])
        result: FloatArray = features @ self.coef + self.bias
        return result

    def mix(
        self,
        outputs: FloatArray,
        ngram_logits: FloatArray,
        ngram_valence: FloatArray,
        ngram_arousal: FloatArray,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Given the head's outputs and the n-gram model's logits and raw valence and arousal,
        return the mixed mood logits (offsets and temperature applied), valence and arousal
        (EmoBank's scales)."""
        n_classes = len(self.classes)
        logits = fuse_logits(
            outputs[:, :n_classes],
            ngram_logits,
            fusion=self.fusion,
            offsets=self.offsets,
            temperature=self.temperature,
        )
        valence = self.valence_fusion * outputs[:, n_classes]
        valence += (1.0 - self.valence_fusion) * ngram_valence
        arousal = self.arousal_fusion * outputs[:, n_classes + 1]
        arousal += (1.0 - self.arousal_fusion) * ngram_arousal
        return logits, valence.astype(np.float32), arousal.astype(np.float32)

    def emotional(self, outputs: FloatArray) -> FloatArray | None:
        """Given the head's outputs, return each text's P(it shows an emotion) by the gate, or
        None for a head without one (format 1)."""
        column = len(self.classes) + 2
        if outputs.shape[1] <= column:
            return None
        gate = np.clip(outputs[:, column].astype(np.float64), -60.0, 60.0)
        result: FloatArray = (1.0 / (1.0 + np.exp(-gate))).astype(np.float32)
        return result


def fuse_logits(
    logits: FloatArray,
    ngram_logits: FloatArray,
    *,
    fusion: float,
    offsets: FloatArray,
    temperature: float,
) -> FloatArray:
    """Given a model's mood logits and the n-gram model's, return them mixed as the mood
    models are tuned: `fusion` x the model's log-probabilities plus the rest x the n-gram
    model's, plus each mood's offset, over the temperature."""
    mixed = fusion * _log_softmax(logits) + (1.0 - fusion) * _log_softmax(ngram_logits)
    result: FloatArray = ((mixed + offsets) / temperature).astype(np.float32)
    return result


def _log_softmax(logits: FloatArray) -> FloatArray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    result: FloatArray = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return result


def read_semantic_weights(
    path: Path, *, dense: tuple[str, ...], classes: tuple[str, ...]
) -> SemanticWeights:
    """Given the path of a `mood_embedding.npz`, the dense features the runtime computes and the
    n-gram model's classes, return the head.

    Raise ModelError if the file is missing, unreadable, of another format, or trained on other
    features or classes.
    """
    what = "Mood embedding head"
    archive = read_archive(path, what=what, fix=_FIX, formats=READABLE_FORMATS)
    arrays, meta = archive.arrays, archive.meta
    with broken_as_error(path, what=what, fix=_FIX):
        gate_columns = 1 if meta["format"] >= 2 else 0
        found_dense = tuple(str(d) for d in arrays["dense"])
        found_classes = tuple(str(c) for c in arrays["classes"])
        if found_dense != dense or found_classes != classes:
            raise ModelError(
                f"Mood embedding head {path} was trained on other features or moods than the "
                f"n-gram model's; {_FIX}"
            )
        window = meta["window"]
        if list(window["features"]) != list(WINDOW_FEATURES):
            raise ModelError(f"Mood embedding head {path}: other window features; {_FIX}")
        dim = int(meta["dim"])
        coef = arrays["coef"].astype(np.float32)
        bias = arrays["bias"].astype(np.float32)
        offsets = arrays["offsets"].astype(np.float32)
        expected = (dim + len(dense), len(classes) + 2 + gate_columns)
        if (
            coef.shape != expected
            or bias.shape != (expected[1],)
            or offsets.shape != (len(classes),)
        ):
            raise ModelError(
                f"Mood embedding head {path} is inconsistent (coef {coef.shape}, expected "
                f"{expected}); {_FIX}"
            )
        if unknown := [c for c in classes if c not in MOODS]:
            raise ModelError(f"Mood embedding head {path}: unknown moods {unknown}; {_FIX}")
        mixing = meta["mixing"]
        not_emotions = tuple(str(m) for m in window.get("not_emotions", ()))
        if strange := [m for m in not_emotions if m not in MOODS or m == "neutral"]:
            raise ModelError(f"Mood embedding head {path}: not_emotions {strange}; {_FIX}")
        calibration = {k: float(v) for k, v in meta["calibration"].items()}
        if missing := sorted(set(CALIBRATION_KEYS) - set(calibration)):
            raise ModelError(f"Mood embedding head {path}: calibration lacks {missing}; {_FIX}")
        return SemanticWeights(
            coef=coef,
            bias=bias,
            classes=classes,
            embedding_model=str(meta["embedding_model"]),
            dim=dim,
            dense=found_dense,
            fusion=float(mixing["moods"]),
            offsets=offsets,
            temperature=float(mixing["temperature"]),
            valence_fusion=float(mixing["valence"]),
            arousal_fusion=float(mixing["arousal"]),
            calibration=calibration,
            window=WindowCalibration(
                coef=tuple(float(c) for c in window["coef"]),
                intercept=float(window["intercept"]),
                not_emotions=not_emotions,
            ),
            digest=archive.digest,
            meta=meta,
        )
