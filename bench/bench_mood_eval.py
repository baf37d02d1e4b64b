"""Benchmark: the mood model, with the embedding head and the fine-tuned layer, without the layer
("no layer": an export without hidden states) and without embeddings (the n-gram model alone,
the fallback and the earlier model), next to the embedding head before the gate and plain VADER
on the development data.

    python bench/bench_mood_eval.py [--data PATH] [--no-cache] [--baseline REV]

"before" is the embedding head of git revision REV (`BASELINE_REV` by default: the head without
the gate, format 1), read under this code with the same n-gram model; the column is left out
when git or the revision is not at hand.

The embedding head reads the bundled embedding model's vectors (all-MiniLM-L6-v2); they are
cached in `EMBEDDING_CACHE` (the same vectors: a cache per model id), which `--no-cache` skips.

Reads (never copies) the development data, by default from `../shared/data` next to the repo:
- GoEmotions dev (`goemotions/dev.tsv`): macro-F1 over seven moods on the rows with exactly one
  label whose label maps to one of them (the mapping is `GOLD_MAP`); a predicted `grateful`
  counts as happy, `tired` as sad, `urgent` as frustrated.
- EmoBank dev (`split == dev` rows of `emobank/emobank-train-dev.csv`): Pearson r of valence vs
  V and of arousal vs A.

VADER's figures come from its compound score alone: mood = happy if compound >= 0.05,
frustrated if <= -0.05, else neutral (VADER's own thresholds for positive/negative);
valence = compound; arousal = |compound|.

The loaders and metrics here are also what `training/train_mood.py` uses for its figures.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data"
# The project is not necessarily installed: import `assembler` from this checkout.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# The revision whose embedding head the benchmarks show as "before": the head without the gate.
BASELINE_REV = "3127dc8"
BASELINE_PATH = "assembler/mood/weights/mood_embedding.npz"
# Where `CachedEmbedder` keeps the vectors it computed (embedding the corpora takes minutes).
EMBEDDING_CACHE = Path(os.environ.get("MOOD_EMBEDDING_CACHE", "/tmp/assembler-mood-embeddings"))

# GoEmotions label -> our mood, for the gold side of the metric (and the training labels).
GOLD_MAP: dict[str, str] = {
    **dict.fromkeys(
        ("annoyance", "anger", "disappointment", "disapproval", "disgust"), "frustrated"
    ),
    "confusion": "confused",
    "curiosity": "curious",
    **dict.fromkeys(
        (
            "gratitude",
            "joy",
            "admiration",
            "amusement",
            "love",
            "excitement",
            "approval",
            "optimism",
            "relief",
            "pride",
        ),
        "happy",
    ),
    **dict.fromkeys(("sadness", "grief", "remorse"), "sad"),
    **dict.fromkeys(("fear", "nervousness"), "anxious"),
    "neutral": "neutral",
}
GOLD_CLASSES: tuple[str, ...] = (
    "frustrated",
    "confused",
    "curious",
    "happy",
    "sad",
    "anxious",
    "neutral",
)
# Our moods that have no gold class of their own count as their nearest gold class.
PRED_MAP: dict[str, str] = {"grateful": "happy", "tired": "sad", "urgent": "frustrated"}


@dataclass(frozen=True)
class GoRow:
    text: str
    labels: tuple[str, ...]  # GoEmotions label names


@dataclass(frozen=True)
class EmoRows:
    texts: list[str]
    valence: np.ndarray  # 1..5
    arousal: np.ndarray  # 1..5


class CachedEmbedder:
    """An embedder (`assembler.memory.embeddings.Embedder`) that keeps every vector it computes
    in a folder, one file per batch of new texts, so that training and the benchmarks embed each
    corpus once. The vectors are the wrapped embedder's: a cache is per `model_id`."""

    def __init__(self, inner: Any, folder: Path = EMBEDDING_CACHE) -> None:
        self.inner = inner
        self.model_id: str = inner.model_id
        slug = hashlib.sha256(self.model_id.encode()).hexdigest()[:12]
        self.folder = folder / slug
        self._rows: dict[str, np.ndarray] = {}
        self.computed = 0  # texts this process embedded (not found in the cache)
        self._states: dict[str, Any] = {}
        if self.folder.is_dir():
            for part in sorted(self.folder.glob("*.npz")):
                with np.load(part, allow_pickle=False) as stored:
                    texts = stored["texts"].tolist()
                    vectors = stored["vectors"]
                self._rows.update(zip(texts, vectors, strict=True))

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Given texts, return their unit vectors, computing and storing the ones not cached."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        for start in range(0, len(missing), 4096):
            batch = missing[start : start + 4096]
            vectors = np.asarray(self.inner.encode(batch), dtype=np.float32)
            self.folder.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha256("\x1f".join(batch).encode("utf-8", "surrogatepass"))
            tmp = self.folder / f"{name.hexdigest()[:16]}.tmp.npz"
            np.savez(tmp, texts=np.array(batch, dtype=str), vectors=vectors)
            tmp.replace(self.folder / f"{name.hexdigest()[:16]}.npz")
            self._rows.update(zip(batch, vectors, strict=True))
            self.computed += len(batch)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._rows[t] for t in texts]).astype(np.float32)

    def encode_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[Any] | None]:
        """Given texts, return their vectors (cached) and the hidden states entering the
        model's last layer (kept in memory only: they are a few hundred numbers per token), or
        None when the wrapped embedder gives none."""
        inner = getattr(self.inner, "encode_with_states", None)
        if inner is None:
            return self.encode(texts), None
        missing = [t for t in dict.fromkeys(texts) if t not in self._states]
        for start in range(0, len(missing), 512):
            batch = missing[start : start + 512]
            _, states = inner(batch)
            if states is None:
                return self.encode(texts), None
            self._states.update(zip(batch, states, strict=True))
        return self.encode(texts), [self._states[t] for t in texts]


def load_goemotions(data: Path, split: str) -> list[GoRow]:
    """Given the data folder and 'train' or 'dev', return the GoEmotions rows."""
    folder = data / "goemotions"
    names = (folder / "labels.txt").read_text(encoding="utf-8").split()
    rows = []
    with (folder / f"{split}.tsv").open(encoding="utf-8") as handle:
        for line in handle:
            text, ids, _ = line.rstrip("\n").split("\t")
            rows.append(GoRow(text, tuple(names[int(i)] for i in ids.split(","))))
    return rows


def load_emobank(data: Path, split: str) -> EmoRows:
    """Given the data folder and 'train' or 'dev', return that split of EmoBank."""
    with (data / "emobank" / "emobank-train-dev.csv").open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["split"] == split]
    return EmoRows(
        [r["text"] for r in rows],
        np.array([float(r["V"]) for r in rows]),
        np.array([float(r["A"]) for r in rows]),
    )


def single_label_gold(rows: Sequence[GoRow]) -> tuple[list[str], list[str]]:
    """Given GoEmotions rows, return the texts and gold moods of the evaluated rows: exactly one
    label, and one that maps to a mood."""
    kept = [(r.text, GOLD_MAP[r.labels[0]]) for r in rows if _single_mapped(r)]
    return [t for t, _ in kept], [g for _, g in kept]


def _single_mapped(row: GoRow) -> bool:
    return len(row.labels) == 1 and row.labels[0] in GOLD_MAP


def f1_per_class(
    gold: Sequence[str],
    predicted: Sequence[str],
    classes: Sequence[str] = GOLD_CLASSES,
    pred_map: dict[str, str] = PRED_MAP,
) -> dict[str, float]:
    """Given gold moods and predicted moods (ours; mapped with `pred_map`), return F1 per gold
    class of `classes`."""
    pred = [pred_map.get(p, p) for p in predicted]
    out = {}
    for c in classes:
        tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == c and p == c)
        fp = sum(1 for g, p in zip(gold, pred, strict=True) if g != c and p == c)
        fn = sum(1 for g, p in zip(gold, pred, strict=True) if g == c and p != c)
        out[c] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return out


def macro_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Given gold and predicted moods, return the macro-F1 over GOLD_CLASSES."""
    return float(np.mean(list(f1_per_class(gold, predicted).values())))


def pearson(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Given two equally long sequences, return their Pearson correlation."""
    return float(np.corrcoef(np.asarray(a, dtype=float), np.asarray(b, dtype=float))[0, 1])


def vader_mood(compound: float) -> str:
    """Given VADER's compound, return the baseline's mood (VADER's +-0.05 thresholds)."""
    return "happy" if compound >= 0.05 else "frustrated" if compound <= -0.05 else "neutral"


@dataclass
class Figures:
    f1: dict[str, float]
    macro_f1: float
    valence_r: float
    arousal_r: float


def evaluate(model: object, data: Path) -> tuple[Figures, Figures]:
    """Given a MoodModel and the data folder, return the dev figures of the model and of VADER."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    texts, gold = single_label_gold(load_goemotions(data, "dev"))
    emo = load_emobank(data, "dev")
    ours = figures_of(model, texts, gold, emo)
    vader = SentimentIntensityAnalyzer()
    go_c = [vader.polarity_scores(t)["compound"] for t in texts]
    emo_c = [vader.polarity_scores(t)["compound"] for t in emo.texts]
    base = Figures(
        f1_per_class(gold, [vader_mood(c) for c in go_c]),
        macro_f1(gold, [vader_mood(c) for c in go_c]),
        pearson(emo_c, emo.valence),
        pearson(np.abs(emo_c), emo.arousal),
    )
    return ours, base


def figures_of(model: Any, texts: list[str], gold: list[str], emo: EmoRows) -> Figures:
    """Given a mood model, the GoEmotions texts and gold moods and the EmoBank rows, return the
    model's figures."""
    moods = model.score_many(texts)
    emo_moods = model.score_many(emo.texts)
    return Figures(
        f1_per_class(gold, [m.primary for m in moods]),
        macro_f1(gold, [m.primary for m in moods]),
        pearson([m.valence for m in emo_moods], emo.valence),
        pearson([m.arousal for m in emo_moods], emo.arousal),
    )


def table(
    ours: Figures,
    vader: Figures,
    old: Figures | None = None,
    before: Figures | None = None,
    no_layer: Figures | None = None,
) -> str:
    """Given the figures of ours, VADER's and optionally the n-gram model's alone, the
    baseline head's and ours without the fine-tuned layer, return the comparison table."""
    columns = [("ours", ours)] + ([("no layer", no_layer)] if no_layer else [])
    columns += [("before", before)] if before else []
    columns += ([("n-gram", old)] if old else []) + [("VADER", vader)]
    head = "".join(f"{name:>9}" for name, _ in columns)
    lines = [f"{'metric':<34}{head}{'target':>8}"]

    def row(label: str, value: Callable[[Figures], float], target: str = "") -> None:
        cells = "".join(f"{value(fig):9.3f}" for _, fig in columns)
        lines.append(f"{label:<34}{cells}{target:>8}")

    row("GoEmotions dev macro-F1 (7 moods)", lambda f: f.macro_f1, ">=0.62")
    for c in GOLD_CLASSES:
        row("  F1 " + c, lambda f, c=c: f.f1[c])  # type: ignore[misc]
    row("EmoBank dev valence r", lambda f: f.valence_r, ">=0.60")
    row("EmoBank dev arousal r", lambda f: f.arousal_r, ">=0.40")
    return "\n".join(lines)


def embedding_model(cache: bool = True, *, layer: bool = True) -> Any:
    """Return the mood model with the embedding head and (unless `layer` is False: the
    fallback of an export without hidden states) the fine-tuned layer, reading the bundled
    embedding model's vectors (cached in EMBEDDING_CACHE unless `cache` is False)."""
    from assembler.memory.embeddings import load_embedder
    from assembler.mood.model import MoodModel, load_mood_model

    embedder: Any = load_embedder("bundled")
    if cache:
        embedder = CachedEmbedder(embedder)
    model = load_mood_model(embedder=embedder)
    if not model.reads_embeddings:
        raise SystemExit(f"the mood model does not read embeddings ({model.embedder_failed})")
    if not layer:
        return MoodModel(
            model.weights, source=model.source, semantic=model.semantic, embedder=embedder
        )
    if model.layer is None:
        raise SystemExit("the mood model has no fine-tuned layer (see the log)")
    return model


def baseline_model(rev: str = BASELINE_REV, cache: bool = True) -> Any | None:
    """Given a git revision, return the mood model with that revision's embedding head (and
    this checkout's n-gram model), reading the bundled embedding model's vectors; None when git
    or the revision's file is not at hand."""
    import subprocess
    import tempfile

    from assembler.memory.embeddings import load_embedder
    from assembler.mood.model import SEMANTIC_DENSE, MoodModel, load_mood_model
    from assembler.mood.semantic import read_semantic_weights

    try:
        found = subprocess.run(
            ["git", "show", f"{rev}:{BASELINE_PATH}"], cwd=REPO, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mood_embedding.npz"
        path.write_bytes(found)
        base = load_mood_model()
        semantic = read_semantic_weights(path, dense=SEMANTIC_DENSE, classes=base.weights.classes)
    embedder: Any = load_embedder("bundled")
    if cache:
        embedder = CachedEmbedder(embedder)
    return MoodModel(
        base.weights, source=f"{rev}:{BASELINE_PATH}", semantic=semantic, embedder=embedder
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument("--no-cache", action="store_true", help="embed every text again")
    parser.add_argument("--baseline", default=BASELINE_REV, help="git revision of 'before'")
    args = parser.parse_args(argv)
    from assembler.mood.layer import DEFAULT_LAYER_PATH
    from assembler.mood.model import DEFAULT_MODEL_PATH, load_mood_model
    from assembler.mood.semantic import DEFAULT_SEMANTIC_PATH

    data: Path = args.data
    if not (data / "goemotions" / "dev.tsv").is_file():
        print(
            f"skipped: no development data under {data} (goemotions/dev.tsv). Put the data "
            "folder (goemotions/, emobank/ as described in training/README.md) there, or pass "
            "--data PATH"
        )
        return 0
    go_rows = load_goemotions(data, "dev")
    texts, _ = single_label_gold(go_rows)
    emo = load_emobank(data, "dev")
    print(f"data: {data}")
    print(
        f"  {data / 'goemotions' / 'dev.tsv'}: {len(go_rows)} rows, {len(texts)} single-label "
        "rows with a mapped label (evaluated)"
    )
    print(f"  {data / 'emobank' / 'emobank-train-dev.csv'}: {len(emo.texts)} rows with split=dev")
    print(f"ours: {DEFAULT_SEMANTIC_PATH} and {DEFAULT_LAYER_PATH} mixed with")
    print(f"  {DEFAULT_MODEL_PATH}, reading the bundled embedding model (all-MiniLM-L6-v2)")
    print("no layer: ours without the fine-tuned layer (an export without hidden states)")
    before_model = baseline_model(args.baseline, not args.no_cache)
    if before_model is not None:
        print(f"before: {before_model.source} (the head without the gate), same n-gram model")
    print(f"n-gram: {DEFAULT_MODEL_PATH} alone (the fallback without an embedder; the old model)")
    print("VADER baseline: mood = happy if compound >= 0.05, frustrated if <= -0.05, else")
    print("  neutral; valence = compound; arousal = |compound|")
    started = time.perf_counter()
    ours, vader = evaluate(embedding_model(not args.no_cache), data)
    no_layer, _ = evaluate(embedding_model(not args.no_cache, layer=False), data)
    old, _ = evaluate(load_mood_model(), data)
    before = evaluate(before_model, data)[0] if before_model is not None else None
    print()
    print(table(ours, vader, old, before, no_layer))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
