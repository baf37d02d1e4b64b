"""Train the mood model and write `assembler/mood_model/` (the weights and a card).

    python training/train_mood.py [--data PATH] [--out DIR]

`--data` is the development data folder (default `../shared/data` next to the repo), read and
never copied; `--out` defaults to `assembler/mood_model`. Needs the dev dependencies
(scikit-learn); the runtime reads the result with numpy only. See training/README.md.

Steps (fixed seeds, so a rerun gives the same model):
1. Features: TF-IDF word 1-2-grams and char_wb 2-5-grams (lower-cased, sublinear tf, the most
   frequent n-grams only, which keeps the artifact small) fitted on the train texts of both
   corpora, plus the dense `HAND_FEATURES` computed by the runtime's own function.
2. Moods: multinomial logistic regression on GoEmotions train, labels mapped to our moods
   (`gratitude` -> grateful, the rest as `GOLD_MAP`; a row with several moods is one sample per
   mood, weighted 1/k; rows with no mapped label are left out), balanced class weights.
3. Tuning on 15% of train held out (never on dev): per-class offsets added to the logits for
   the best macro-F1, a temperature that makes the mood scores calibrated probabilities, the
   ridge penalty for valence and arousal, and the weight of VADER's compound in the valence
   blend; the valence/arousal calibration comes from predictions on GoEmotions train texts.
4. Valence, arousal: ridge regressions on EmoBank train over the same features plus the mood
   probabilities of step 2, refitted on all train rows with the tuned settings.
5. Export the vocabularies, idf, coefficients (the ridge coefficients on the features folded
   into one matrix with the classifier's), check that the numpy runtime reproduces
   scikit-learn's outputs, and print the dev figures next to VADER's.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_mood_eval import (  # noqa: E402
    DEFAULT_DATA,
    GOLD_MAP,
    GoRow,
    evaluate,
    load_emobank,
    load_goemotions,
    macro_f1,
    pearson,
    single_label_gold,
    table,
)

from assembler.sentiment import HAND_FEATURES, MODEL_FORMAT, MoodModel, hand_features  # noqa: E402

SEED = 0
HOLDOUT = 0.15
WORD_NGRAMS = (1, 2)
CHAR_NGRAMS = (2, 5)
WORD_FEATURES = 20_000
CHAR_FEATURES = 40_000
WORD_MIN_DF = 2
CHAR_MIN_DF = 3
LOGREG_C = 4.0
RIDGE_ALPHAS = (2.0, 4.0, 8.0)
VADER_BLENDS = tuple(round(b, 2) for b in np.arange(0.0, 0.61, 0.05))
OFFSET_GRID = np.linspace(-2.0, 2.0, 41)
TEMPERATURES = tuple(round(t, 2) for t in np.arange(0.5, 5.01, 0.1))
# Calibration to the ranges readers threshold (valence +-0.2; arousal low <= 0.3, high >= 0.6),
# from the raw predictions on GoEmotions train texts (chat-like, unlike EmoBank's prose):
# valence = (V - 3) / scale, 3 being EmoBank's neutral point, with the 90th percentile of |V - 3|
# mapped to 0.5; arousal = 0.5 + (A - median) / scale, with the 90th percentile mapped to 0.75.
VALENCE_CENTER = 3.0
VALENCE_P90_TO = 0.5
AROUSAL_P90_TO = 0.75
# VADER's compound reads chat cues EmoBank's prose lacks ('!!!', caps, emoji, slang): take the
# largest blend weight that costs at most this much held-out valence r.
BLEND_TOLERANCE = 0.005
# float16 halves the file; the runtime's outputs stay within ~1e-3 of scikit-learn's.
WEIGHTS_DTYPE = np.float16
PROVENANCE = {
    "goemotions": "GoEmotions train (Demszky et al., ACL 2020), Apache-2.0, "
    "monologg/GoEmotions-pytorch data/original/ at commit b75f9d3a",
    "emobank": "EmoBank train (Buechel & Hahn, EACL 2017), CC-BY-SA 4.0, "
    "JULIELab/EmoBank corpus/emobank.csv at commit 248ce2a4",
}
TRAIN_LABELS = {**GOLD_MAP, "gratitude": "grateful"}


def log(message: str) -> None:
    print(message, flush=True)


def mood_samples(
    rows: Sequence[GoRow], which: Sequence[int]
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Given GoEmotions rows and the indices to use, return row indices, mood labels and sample
    weights: one sample per mapped mood of a row, weighted 1/k for k moods."""
    index: list[int] = []
    labels: list[str] = []
    weights: list[float] = []
    for i in which:
        moods = sorted({TRAIN_LABELS[label] for label in rows[i].labels if label in TRAIN_LABELS})
        for mood in moods:
            index.append(i)
            labels.append(mood)
            weights.append(1.0 / len(moods))
    return np.array(index), labels, np.array(weights)


class Featurizer:
    """The features of the runtime, computed with scikit-learn."""

    def __init__(self, corpus: Sequence[str]) -> None:
        self.words = TfidfVectorizer(
            ngram_range=WORD_NGRAMS,
            min_df=WORD_MIN_DF,
            max_features=WORD_FEATURES,
            sublinear_tf=True,
        ).fit(corpus)
        self.chars = TfidfVectorizer(
            analyzer="char_wb",
            ngram_range=CHAR_NGRAMS,
            min_df=CHAR_MIN_DF,
            max_features=CHAR_FEATURES,
            sublinear_tf=True,
        ).fit(corpus)
        self.vader = SentimentIntensityAnalyzer()
        self._cache: dict[str, list[float]] = {}

    def hand(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            if text not in self._cache:
                self._cache[text] = hand_features(text, self.vader.polarity_scores(text))
            rows.append(self._cache[text])
        return np.array(rows, dtype=np.float64)

    def __call__(self, texts: Sequence[str]) -> sparse.csr_matrix:
        return sparse.hstack(
            [
                self.words.transform(texts),
                self.chars.transform(texts),
                sparse.csr_matrix(self.hand(texts)),
            ]
        ).tocsr()


def fit_moods(x: sparse.csr_matrix, labels: list[str], weights: np.ndarray) -> LogisticRegression:
    model = LogisticRegression(
        C=LOGREG_C, class_weight="balanced", max_iter=3000, random_state=SEED
    )
    model.fit(x, labels, sample_weight=weights)
    return model


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def tune_offsets(logits: np.ndarray, classes: Sequence[str], gold: Sequence[str]) -> np.ndarray:
    """Given held-out logits and gold moods, return per-class logit offsets for macro-F1
    (coordinate ascent over a grid, three rounds; ties keep the smaller change)."""
    offsets = np.zeros(len(classes))
    labels = np.array(classes)

    def score(o: np.ndarray) -> float:
        return macro_f1(gold, list(labels[np.argmax(logits + o, axis=1)]))

    best = score(offsets)
    for _ in range(3):
        for c in range(len(classes)):
            for value in sorted(OFFSET_GRID, key=abs):
                trial = offsets.copy()
                trial[c] = value
                s = score(trial)
                if s > best + 1e-9:
                    best, offsets = s, trial
    return offsets


def tune_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """Given held-out logits and true class indices, return the temperature (grid 0.5..5) with
    the smallest mean negative log-likelihood."""
    rows = np.arange(len(labels))

    def nll(t: float) -> float:
        z = logits / t
        z = z - z.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[rows, labels]))

    return min(TEMPERATURES, key=nll)


def fit_ridge(x: sparse.csr_matrix, probs: np.ndarray, y: np.ndarray, alpha: float) -> Ridge:
    return Ridge(alpha=alpha).fit(sparse.hstack([x, sparse.csr_matrix(probs)]).tocsr(), y)


def predict_ridge(model: Ridge, x: sparse.csr_matrix, probs: np.ndarray) -> np.ndarray:
    return np.asarray(model.predict(sparse.hstack([x, sparse.csr_matrix(probs)]).tocsr()))


def calibration(raw_valence: np.ndarray, raw_arousal: np.ndarray) -> dict[str, float]:
    """Given raw predictions on chat-like texts, return the centers and scales (see above)."""
    v_p90 = float(np.percentile(np.abs(raw_valence - VALENCE_CENTER), 90))
    a_median = float(np.median(raw_arousal))
    a_p90 = float(np.percentile(raw_arousal, 90))
    return {
        "valence_center": VALENCE_CENTER,
        "valence_scale": round(v_p90 / VALENCE_P90_TO, 4),
        "arousal_center": round(a_median, 4),
        "arousal_scale": round((a_p90 - a_median) / (AROUSAL_P90_TO - 0.5), 4),
    }


def blend_valence(
    raw: np.ndarray, compound: np.ndarray, blend: float, cal: dict[str, float]
) -> np.ndarray:
    """The runtime's valence calibration (MoodModel._calibrate)."""
    model = (raw - cal["valence_center"]) / cal["valence_scale"]
    return np.clip(blend * compound + (1.0 - blend) * model, -1.0, 1.0)


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write a compressed .npz with fixed timestamps, so that a rerun gives the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue(), compresslevel=9)
    tmp.replace(path)


def vocab_array(vectorizer: TfidfVectorizer) -> np.ndarray:
    vocab: dict[str, int] = vectorizer.vocabulary_
    return np.array(sorted(vocab, key=vocab.__getitem__))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train the mood model.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument(
        "--out", type=Path, default=REPO / "assembler" / "mood_model", help="output folder"
    )
    args = parser.parse_args(argv)
    data: Path = args.data
    out: Path = args.out
    started = time.perf_counter()
    if not (data / "goemotions" / "train.tsv").is_file():
        parser.error(f"no GoEmotions data under {data}: pass the data folder with --data PATH")

    go_train = load_goemotions(data, "train")
    emo_train = load_emobank(data, "train")
    log(f"data: {data}")
    log(f"  GoEmotions train: {len(go_train)} rows; EmoBank train: {len(emo_train.texts)} rows")
    go_fit, go_hold = train_test_split(
        np.arange(len(go_train)), test_size=HOLDOUT, random_state=SEED
    )
    emo_fit, emo_hold = train_test_split(
        np.arange(len(emo_train.texts)), test_size=HOLDOUT, random_state=SEED
    )

    featurize = Featurizer([r.text for r in go_train] + emo_train.texts)
    n_features = len(featurize.words.vocabulary_) + len(featurize.chars.vocabulary_)
    log(
        f"features: {len(featurize.words.vocabulary_)} word + "
        f"{len(featurize.chars.vocabulary_)} char n-grams + {len(HAND_FEATURES)} dense"
    )
    go_x = featurize([r.text for r in go_train])
    emo_x = featurize(emo_train.texts)
    emo_compound = featurize.hand(emo_train.texts)[:, 0]

    # --- tuning on the held-out part of train -----------------------------------------------
    index, labels, weights = mood_samples(go_train, go_fit)
    moods = fit_moods(go_x[index], labels, weights)
    classes = [str(c) for c in moods.classes_]
    hold = [
        i for i in go_hold if len(go_train[i].labels) == 1 and go_train[i].labels[0] in GOLD_MAP
    ]
    hold_gold = [GOLD_MAP[go_train[i].labels[0]] for i in hold]
    hold_logits = moods.decision_function(go_x[hold])
    offsets = tune_offsets(hold_logits, classes, hold_gold)
    plain = macro_f1(hold_gold, [classes[i] for i in np.argmax(hold_logits, axis=1)])
    tuned = macro_f1(hold_gold, [classes[i] for i in np.argmax(hold_logits + offsets, axis=1)])
    log(f"held-out macro-F1: {plain:.3f} plain, {tuned:.3f} with offsets {np.round(offsets, 2)}")
    # The mood scores are averaged over messages and shown: make them calibrated probabilities
    # (temperature scaling; it divides the logits, so it never changes the predicted mood).
    hold_labels = [classes.index(TRAIN_LABELS[go_train[i].labels[0]]) for i in hold]
    temperature = tune_temperature(hold_logits + offsets, np.array(hold_labels))
    log(f"held-out temperature: {temperature}")
    offsets = offsets / temperature

    emo_probs = softmax(moods.decision_function(emo_x) / temperature + offsets)
    best: dict[str, tuple[float, float]] = {}
    for name, y in (("valence", emo_train.valence), ("arousal", emo_train.arousal)):
        for alpha in RIDGE_ALPHAS:
            ridge = fit_ridge(emo_x[emo_fit], emo_probs[emo_fit], y[emo_fit], alpha)
            r = pearson(predict_ridge(ridge, emo_x[emo_hold], emo_probs[emo_hold]), y[emo_hold])
            log(f"held-out {name} r = {r:.3f} at alpha {alpha}")
            if name not in best or r > best[name][1]:
                best[name] = (alpha, r)
    ridge_v, ridge_a = (
        fit_ridge(emo_x[emo_fit], emo_probs[emo_fit], y[emo_fit], best[name][0])
        for name, y in (("valence", emo_train.valence), ("arousal", emo_train.arousal))
    )
    go_probs = softmax(moods.decision_function(go_x[go_fit]) / temperature + offsets)
    cal = calibration(
        predict_ridge(ridge_v, go_x[go_fit], go_probs),
        predict_ridge(ridge_a, go_x[go_fit], go_probs),
    )
    raw_hold = predict_ridge(ridge_v, emo_x[emo_hold], emo_probs[emo_hold])
    blend_r = {
        b: pearson(
            blend_valence(raw_hold, emo_compound[emo_hold], b, cal), emo_train.valence[emo_hold]
        )
        for b in VADER_BLENDS
    }
    top = max(blend_r.values())
    blend = max(b for b, r in blend_r.items() if r >= top - BLEND_TOLERANCE)
    log(
        "held-out valence r by VADER blend: "
        + ", ".join(f"{b:.2f}: {r:.3f}" for b, r in blend_r.items())
        + f"; taking {blend}"
    )

    # --- final fit on all train rows -----------------------------------------------------------
    index, labels, weights = mood_samples(go_train, range(len(go_train)))
    moods = fit_moods(go_x[index], labels, weights)
    assert [str(c) for c in moods.classes_] == classes
    emo_probs = softmax(moods.decision_function(emo_x) / temperature + offsets)
    ridge_v = fit_ridge(emo_x, emo_probs, emo_train.valence, best["valence"][0])
    ridge_a = fit_ridge(emo_x, emo_probs, emo_train.arousal, best["arousal"][0])
    go_probs = softmax(moods.decision_function(go_x) / temperature + offsets)
    cal = calibration(
        predict_ridge(ridge_v, go_x, go_probs), predict_ridge(ridge_a, go_x, go_probs)
    )
    log(f"fitted ({time.perf_counter() - started:.0f} s); calibration {cal}")

    n_dense = n_features + len(HAND_FEATURES)
    weights_matrix = np.zeros((n_dense, len(classes) + 2))
    weights_matrix[:, : len(classes)] = moods.coef_.T / temperature
    weights_matrix[:, len(classes)] = ridge_v.coef_[:n_dense]
    weights_matrix[:, len(classes) + 1] = ridge_a.coef_[:n_dense]
    stack = np.stack([ridge_v.coef_[n_dense:], ridge_a.coef_[n_dense:]], axis=1)
    bias = np.concatenate(
        [moods.intercept_ / temperature + offsets, [ridge_v.intercept_, ridge_a.intercept_]]
    )
    meta: dict[str, Any] = {
        "format": MODEL_FORMAT,
        "word_ngram_range": list(WORD_NGRAMS),
        "char_ngram_range": list(CHAR_NGRAMS),
        "sublinear_tf": True,
        "calibration": {
            **cal,
            "valence_vader_blend": blend,
        },
        "training": {
            "seed": SEED,
            "holdout": HOLDOUT,
            "logreg_C": LOGREG_C,
            "temperature": temperature,
            "class_offsets": dict(zip(classes, [round(float(o), 3) for o in offsets], strict=True)),
            "ridge_alpha": {k: v[0] for k, v in best.items()},
            "data": PROVENANCE,
        },
    }
    path = out / "mood_model.npz"
    write_npz(
        path,
        {
            "word_vocab": vocab_array(featurize.words),
            "word_idf": featurize.words.idf_.astype(np.float32),
            "char_vocab": vocab_array(featurize.chars),
            "char_idf": featurize.chars.idf_.astype(np.float32),
            "weights": weights_matrix.astype(WEIGHTS_DTYPE),
            "bias": bias.astype(np.float32),
            "stack": stack.astype(np.float32),
            "classes": np.array(classes),
            "hand_features": np.array(HAND_FEATURES),
            "meta": np.array(json.dumps(meta, sort_keys=True)),
        },
    )
    size = path.stat().st_size
    log(f"wrote {path} ({size / 1e6:.2f} MB)")

    # --- the runtime must reproduce scikit-learn -----------------------------------------------
    runtime = MoodModel.from_file(path)
    check_texts, _ = single_label_gold(load_goemotions(data, "dev"))
    emo_dev = load_emobank(data, "dev")
    check_texts += emo_dev.texts
    x_check = featurize(check_texts)
    sk_logits = moods.decision_function(x_check) / temperature + offsets
    sk_probs = softmax(sk_logits)
    raw = runtime.raw_scores(check_texts)
    agree = float(np.mean(np.argmax(raw.logits, axis=1) == np.argmax(sk_logits, axis=1)))
    diffs = {
        "probability": float(np.abs(raw.probs - sk_probs).max()),
        "valence": float(np.abs(raw.valence_raw - predict_ridge(ridge_v, x_check, sk_probs)).max()),
        "arousal": float(np.abs(raw.arousal_raw - predict_ridge(ridge_a, x_check, sk_probs)).max()),
    }
    log(
        f"runtime vs scikit-learn on {len(check_texts)} dev texts: same mood for {agree:.2%}, "
        + ", ".join(f"max |diff| {k} {v:.1e}" for k, v in diffs.items())
    )
    if agree < 0.995 or max(diffs.values()) > 0.02:
        raise SystemExit("the numpy runtime does not reproduce scikit-learn; see above")

    ours, vader = evaluate(runtime, data)
    log("\ndev figures (bench/bench_mood_eval.py prints the same):")
    log(table(ours, vader))
    card = {
        "file": path.name,
        "bytes": size,
        "classes": classes,
        "features": {
            "word": len(featurize.words.vocabulary_),
            "char": n_features - len(featurize.words.vocabulary_),
            "dense": list(HAND_FEATURES),
        },
        "meta": meta,
        "dev": {
            "goemotions_macro_f1": round(ours.macro_f1, 4),
            "goemotions_f1": {k: round(v, 4) for k, v in ours.f1.items()},
            "emobank_valence_r": round(ours.valence_r, 4),
            "emobank_arousal_r": round(ours.arousal_r, 4),
            "vader_macro_f1": round(vader.macro_f1, 4),
            "vader_valence_r": round(vader.valence_r, 4),
            "vader_arousal_r": round(vader.arousal_r, 4),
        },
    }
    (out / "card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    log(f"\ndone in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
