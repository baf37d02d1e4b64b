"""The mood model's fine-tuned layer: a copy of the embedding model's last transformer layer,
trained for moods, and a mood classifier over its pooled output.

The embedding head (`assembler.mood.semantic`) reads the memory search's sentence vector, which
all-MiniLM-L6-v2 was trained to make for finding similar texts: it carries a message's topic
more than Reddit's fine distinctions between annoyance and sorrow. This branch starts from the
hidden states the frozen first five layers make of a message (the export hands them out next to
the vectors, `OnnxEmbedder.encode_with_states`), runs its own copy of the last layer, trained
with the classifier by `training/train_mood_layer.py`, mean-pools and normalises as
sentence-transformers does, and gives one logit per mood. The memory search's vectors are
untouched.

Its log-probabilities are mixed with the n-gram model's, `(a * layer + (1 - a) * n-gram +
offsets) / temperature`, in place of the embedding head's moods; the head still gives valence,
arousal and the gate. Weights: `weights/mood_layer.npz` (float16, with a card). numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assembler.errors import ModelError
from assembler.mood.archive import broken_as_error, read_archive
from assembler.mood.semantic import fuse_logits

LAYER_FORMAT = 1
DEFAULT_LAYER_PATH = Path(__file__).with_name("weights") / "mood_layer.npz"
# Linear weights are stored (in, out); the norms' "weight" is their scale.
LAYER_PARAMS = tuple(
    f"{name}.{part}"
    for name in (
        "query",
        "key",
        "value",
        "attention_out",
        "attention_norm",
        "intermediate",
        "output",
        "output_norm",
        "head",
    )
    for part in ("weight", "bias")
)
_FIX = "reinstall the package or rebuild it with `python training/train_mood_layer.py`"
_GELU_C = np.float32(0.7978845608028654)  # sqrt(2 / π), of the tanh form of GELU

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class MoodLayer:
    """The fine-tuned layer and its classifier, as `mood_layer.npz` stores them."""

    params: dict[str, FloatArray]
    classes: tuple[str, ...]
    embedding_model: str  # the `Embedder.model_id` whose hidden states it reads
    heads: int
    eps: float
    fusion: float  # a: the layer's share of the mood log-probabilities
    offsets: FloatArray
    temperature: float
    digest: str
    meta: dict[str, Any]

    @property
    def width(self) -> int:
        return int(self.params["query.weight"].shape[0])

    def logits(self, states: Sequence[FloatArray]) -> FloatArray:
        """Given each text's hidden states entering the layer (tokens x width, no padding),
        return the mood logits (texts x classes)."""
        p = self.params
        if not states:
            return np.zeros((0, len(self.classes)), dtype=np.float32)
        lengths = np.array([len(x) for x in states])
        if (lengths <= 0).any():
            raise ValueError("every text needs at least one token's hidden states")
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        # The dense parts run on the tokens of all texts at once (large products are what
        # numpy does fast); only the attention is per text.
        h = self._layer(np.concatenate(states).astype(np.float32, copy=False), starts, lengths)
        mean = np.add.reduceat(h, starts, axis=0) / lengths[:, None].astype(np.float32)
        norms = np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), np.float32(1e-12))
        result: FloatArray = (mean / norms) @ p["head.weight"] + p["head.bias"]
        return result.astype(np.float32)

    def _layer(
        self, x: FloatArray, starts: npt.NDArray[Any], lengths: npt.NDArray[Any]
    ) -> FloatArray:
        p = self.params
        width = x.shape[1]
        size = width // self.heads
        qkv = [x @ p[f"{n}.weight"] + p[f"{n}.bias"] for n in ("query", "key", "value")]
        context = np.empty_like(x)
        scale = np.float32(1.0 / np.sqrt(size))
        for start, length in zip(starts, lengths, strict=True):
            q, k, v = (
                t[start : start + length].reshape(length, self.heads, size).transpose(1, 0, 2)
                for t in qkv
            )
            scores = (q @ k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=2, keepdims=True))
            scores /= scores.sum(axis=2, keepdims=True)
            context[start : start + length] = (scores @ v).transpose(1, 0, 2).reshape(length, width)
        attended = context @ p["attention_out.weight"] + p["attention_out.bias"]
        h = self._norm(x + attended, "attention")
        inner = h @ p["intermediate.weight"]
        inner += p["intermediate.bias"]
        # GELU, tanh form (the training uses the same; numpy has no erf), in place: this array
        # is four times the width of the others, and each pass over it costs.
        curve = inner * inner
        curve *= inner
        curve *= np.float32(0.044715)
        curve += inner
        curve *= _GELU_C
        np.tanh(curve, out=curve)
        curve += np.float32(1.0)
        curve *= inner
        curve *= np.float32(0.5)
        gelu: FloatArray = curve
        return self._norm(h + gelu @ p["output.weight"] + p["output.bias"], "output")

    def _norm(self, x: FloatArray, name: str) -> FloatArray:
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        scaled = (x - mean) / np.sqrt(var + np.float32(self.eps))
        result: FloatArray = scaled * self.params[f"{name}_norm.weight"]
        result = result + self.params[f"{name}_norm.bias"]
        return result.astype(np.float32)

    def mix(self, logits: FloatArray, ngram_logits: FloatArray) -> FloatArray:
        """Given the layer's logits and the n-gram model's, return the mixed mood logits
        (offsets and temperature applied)."""
        return fuse_logits(
            logits,
            ngram_logits,
            fusion=self.fusion,
            offsets=self.offsets,
            temperature=self.temperature,
        )


def read_mood_layer(path: Path, *, classes: tuple[str, ...]) -> MoodLayer:
    """Given the path of a `mood_layer.npz` and the n-gram model's classes, return the layer.

    Raise ModelError if the file is missing, unreadable, of another format or other moods.
    """
    archive = read_archive(path, what="Mood layer", fix=_FIX, formats=(LAYER_FORMAT,))
    arrays, meta = archive.arrays, archive.meta
    with broken_as_error(path, what="Mood layer", fix=_FIX):
        if tuple(meta["classes"]) != classes:
            raise ModelError(f"Mood layer {path} was trained on other moods; {_FIX}")
        params = {name: arrays[name].astype(np.float32) for name in LAYER_PARAMS}
        width = params["query.weight"].shape[0]
        heads = int(meta["heads"])
        offsets = np.asarray(meta["offsets"], dtype=np.float32)
        if (
            width % heads
            or params["head.weight"].shape != (width, len(classes))
            or offsets.shape != (len(classes),)
            or any(params[f"{n}.weight"].shape != (width, width) for n in ("query", "key"))
        ):
            raise ModelError(f"Mood layer {path} is inconsistent; {_FIX}")
        return MoodLayer(
            params=params,
            classes=classes,
            embedding_model=str(meta["embedding_model"]),
            heads=heads,
            eps=float(meta["layer_norm_eps"]),
            fusion=float(meta["mixing"]["moods"]),
            offsets=offsets,
            temperature=float(meta["mixing"]["temperature"]),
            digest=archive.digest,
            meta=meta,
        )
