"""A deterministic stand-in for the embedding model (in the spirit of simonw/llm's EmbedDemo).

Each text becomes a hashed bag of its words (crudely stemmed) and of their character
trigrams, L2-normalised. Texts that share words or word pieces ("deploy", "deployment") get
similar vectors, texts that share nothing get near-orthogonal ones: enough for tests of
ranking, fusion and MMR, and about a thousand times faster than the real model.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

WORD = re.compile(r"[^\W_]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, 1.0 if (value >> 63) & 1 else -1.0


class FakeEmbedder:
    """Hashed words + trigrams → unit vector. Counts its calls; can fail or slow down on cue.

    `fail_after_calls`: the call after that many raises RuntimeError (a model dying mid-way).
    `delay`: seconds to sleep per call (to be killed in the middle of a sync).
    """

    def __init__(
        self,
        *,
        dim: int = 256,
        model_id: str = "fake/hashed-words-v1",
        fail_after_calls: int | None = None,
        delay: float = 0.0,
    ) -> None:
        self.model_id = model_id
        self.dim = dim
        self.fail_after_calls = fail_after_calls
        self.delay = delay
        self.calls = 0
        self.texts_encoded = 0

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fail_after_calls is not None and self.calls >= self.fail_after_calls:
            raise RuntimeError("fake model crashed")
        self.calls += 1
        self.texts_encoded += len(texts)
        if self.delay:
            time.sleep(self.delay)
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                stem = _stem(word)
                index, sign = _bucket("w:" + stem, self.dim)
                matrix[row, index] += 2.0 * sign
                padded = f"^{stem}$"
                for i in range(len(padded) - 2):
                    index, sign = _bucket("t:" + padded[i : i + 3], self.dim)
                    matrix[row, index] += 0.5 * sign
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)
