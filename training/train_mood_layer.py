"""Train the mood model's fine-tuned layer and write `assembler/mood/weights/mood_layer.npz` and
its card, `mood_layer.card.json`.

    python training/train_mood_layer.py [--data PATH] [--out DIR] [--cache DIR] [--epochs N]

A copy of the last transformer layer of all-MiniLM-L6-v2 (the memory search's model) and a
linear mood classifier over its mean-pooled, L2-normalised output, trained together with torch
on what enters that layer (the hidden states the frozen first five layers make of each text).
The memory search's vectors are untouched: the runtime (`assembler.mood.layer`, numpy only)
runs this copy on the hidden states the export hands out next to its vectors.

Rows and weights as the embedding head's (GoEmotions train, a row with k moods is k samples
weighted 1/k; MELD train utterances, neutral ones 0.5; balanced class weights). DailyDialog is
never read. Steps (fixed seeds):
1. The hidden states entering the last layer of every train text are computed once with torch
   and cached in `--cache` (float16, about 3 minutes on two cores).
2. Fit on 85% (the rows `train_mood_embeddings.py` fits on), score the 15% held out, and tune
   on them, against the n-gram model refitted without them: the layer's share of the mixed
   mood log-probabilities (the largest within 0.005 of the best held-out macro-F1, mean of
   GoEmotions and MELD), per-class offsets and a temperature.
3. Refit on all train rows with the same settings, store the weights as float16, check that
   the numpy runtime reproduces torch's logits, print the dev figures.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.model_selection import train_test_split

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "training"))

import train_mood as ngram  # noqa: E402
from bench_mood_eval import (  # noqa: E402
    DEFAULT_DATA,
    GOLD_CLASSES,
    GOLD_MAP,
    load_emobank,
    load_goemotions,
)
from bench_mood_eval import PRED_MAP as GO_PRED_MAP  # noqa: E402
from bench_mood_window import GOLD_CLASSES as WINDOW_CLASSES  # noqa: E402
from bench_mood_window import PRED_MAP as WINDOW_PRED_MAP  # noqa: E402
from bench_mood_window import load_meld  # noqa: E402
from train_mood_embeddings import largest_within, log_softmax  # noqa: E402

from assembler.memory.embeddings import BUNDLED_MODEL_ID, bundled_model_path  # noqa: E402
from assembler.mood.layer import LAYER_FORMAT, LAYER_PARAMS, read_mood_layer  # noqa: E402
from assembler.mood.model import DEFAULT_MODEL_PATH, MoodModel, scored_part  # noqa: E402
from assembler.mood.semantic import embedded_part  # noqa: E402

SEED = 0
CACHE = Path("/tmp/assembler-mood-layer")
EPOCHS = 3
BATCH = 32
LAYER_LR = 1e-4
HEAD_LR = 2e-3
WARMUP_STEPS = 200
WEIGHT_DECAY = 0.01
DROPOUT = 0.1
MAX_TOKENS = 256
SHARES = tuple(round(a, 2) for a in np.arange(0.0, 1.01, 0.1))


def log(message: str) -> None:
    print(message, flush=True)


def tokenizer() -> Any:
    from tokenizers import Tokenizer

    from assembler.memory.embeddings import bundled_export_folder

    tok = Tokenizer.from_file(str(bundled_export_folder() / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok


def hidden_states(
    torch: Any, bert: Any, texts: Sequence[str], path: Path
) -> tuple[np.ndarray, np.ndarray]:
    """Given texts, return the hidden states entering the last layer (all tokens, float16) and
    each text's offsets into them; cached at `path`."""
    digest = hashlib.sha256("\x1f".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
    if path.is_file():
        with np.load(path) as stored:
            if "digest" in stored.files and str(stored["digest"]) == digest:
                return stored["states"], stored["offsets"]
    tok = tokenizer()
    encodings = tok.encode_batch([embedded_part(scored_part(t)) for t in texts])
    lengths = np.array([len(e.ids) for e in encodings])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    states = np.zeros((offsets[-1], bert.config.hidden_size), np.float16)
    order = np.argsort(-lengths, kind="stable")
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        batch = order[start : start + max(1, min(128, 8192 // longest))]
        start += len(batch)
        ids = np.zeros((len(batch), longest), np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, j in enumerate(batch):
            n = lengths[j]
            ids[row, :n], types[row, :n], mask[row, :n] = (
                encodings[j].ids,
                encodings[j].type_ids,
                1,
            )
        with torch.no_grad():
            out = bert(
                input_ids=torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                token_type_ids=torch.from_numpy(types),
                output_hidden_states=True,
            )
        entering = out.hidden_states[-2].numpy()
        for row, j in enumerate(batch):
            states[offsets[j] : offsets[j + 1]] = entering[row, : lengths[j]]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, states=states, offsets=offsets, digest=np.array(digest))
    return states, offsets


class Store:
    """Hidden states of several text sets, addressed by (set, row)."""

    def __init__(self) -> None:
        self.sets: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def seq(self, key: tuple[str, int]) -> np.ndarray:
        states, offsets = self.sets[key[0]]
        return states[offsets[key[1]] : offsets[key[1] + 1]]

    def batch(self, keys: Sequence[tuple[str, int]]) -> tuple[np.ndarray, np.ndarray]:
        seqs = [self.seq(k) for k in keys]
        width = max(len(s) for s in seqs)
        x = np.zeros((len(seqs), width, seqs[0].shape[1]), np.float32)
        mask = np.zeros((len(seqs), width), np.float32)
        for row, s in enumerate(seqs):
            x[row, : len(s)] = s
            mask[row, : len(s)] = 1.0
        return x, mask


def branch_class(torch: Any) -> Any:
    nn = torch.nn

    class Layer(nn.Module):  # type: ignore[misc]
        """A BERT layer (post-LayerNorm), written out as `assembler.mood.layer` runs it."""

        def __init__(self, source: Any, heads: int) -> None:
            super().__init__()
            attention = source.attention
            self.heads = heads
            self.query = copy.deepcopy(attention.self.query)
            self.key = copy.deepcopy(attention.self.key)
            self.value = copy.deepcopy(attention.self.value)
            self.attention_out = copy.deepcopy(attention.output.dense)
            self.attention_norm = copy.deepcopy(attention.output.LayerNorm)
            self.intermediate = copy.deepcopy(source.intermediate.dense)
            self.output = copy.deepcopy(source.output.dense)
            self.output_norm = copy.deepcopy(source.output.LayerNorm)
            self.drop = nn.Dropout(DROPOUT)

        def forward(self, x: Any, mask: Any) -> Any:
            b, length, width = x.shape
            size = width // self.heads

            def split(t: Any) -> Any:
                return t.view(b, length, self.heads, size).transpose(1, 2)

            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            scores = q @ k.transpose(2, 3) / float(np.sqrt(size))
            scores = scores + (1.0 - mask[:, None, None, :]) * -1e4
            context = (self.drop(scores.softmax(-1)) @ v).transpose(1, 2).reshape(b, length, width)
            h = self.attention_norm(x + self.drop(self.attention_out(context)))
            inner = nn.functional.gelu(self.intermediate(h), approximate="tanh")
            return self.output_norm(h + self.drop(self.output(inner)))

    class Branch(nn.Module):  # type: ignore[misc]
        def __init__(self, bert: Any, n_classes: int) -> None:
            super().__init__()
            self.layer = Layer(bert.encoder.layer[-1], bert.config.num_attention_heads)
            self.head = nn.Linear(bert.config.hidden_size, n_classes)

        def forward(self, x: Any, mask: Any) -> Any:
            h = self.layer(x, mask)
            mean = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return self.head(mean / mean.norm(dim=1, keepdim=True).clamp_min(1e-12))

    return Branch


def train_branch(
    torch: Any,
    bert: Any,
    store: Store,
    keys: Sequence[tuple[str, int]],
    y: np.ndarray,
    w: np.ndarray,
    n_classes: int,
    epochs: int,
) -> Any:
    """Given the samples (keys into the store), their class indices and weights, return the
    trained branch."""
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    net = branch_class(torch)(bert, n_classes)
    optimizer = torch.optim.AdamW(
        [
            {"params": net.layer.parameters(), "lr": LAYER_LR},
            {"params": net.head.parameters(), "lr": HEAD_LR},
        ],
        weight_decay=WEIGHT_DECAY,
    )
    steps = epochs * (len(keys) // BATCH + 1)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda k: min(1.0, k / WARMUP_STEPS) * max(0.0, 1.0 - k / steps)
    )
    lengths = np.array([len(store.seq(k)) for k in keys])
    started = time.perf_counter()
    net.train()
    for epoch in range(epochs):
        order = rng.permutation(len(keys))
        batches = []
        # Batches of similar lengths (less padding), drawn from shuffled chunks.
        for s in range(0, len(order), BATCH * 50):
            chunk = order[s : s + BATCH * 50]
            chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
            batches += [chunk[i : i + BATCH] for i in range(0, len(chunk), BATCH)]
        rng.shuffle(batches)  # type: ignore[arg-type]
        total = 0.0
        for batch in batches:
            x, mask = store.batch([keys[j] for j in batch])
            logits = net(torch.from_numpy(x), torch.from_numpy(mask))
            losses = torch.nn.functional.cross_entropy(
                logits, torch.from_numpy(y[batch]), reduction="none"
            )
            weights = torch.from_numpy(w[batch].astype(np.float32))
            loss = (losses * weights).sum() / weights.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += float(loss.item())
        log(
            f"  epoch {epoch + 1}/{epochs}: loss {total / len(batches):.4f} "
            f"({time.perf_counter() - started:.0f} s)"
        )
    net.eval()
    return net


def predict(torch: Any, net: Any, store: Store, keys: Sequence[tuple[str, int]]) -> np.ndarray:
    order = np.argsort([len(store.seq(k)) for k in keys], kind="stable")
    result = np.zeros((len(keys), net.head.out_features), np.float32)
    with torch.no_grad():
        for s in range(0, len(keys), 256):
            batch = order[s : s + 256]
            x, mask = store.batch([keys[j] for j in batch])
            result[batch] = net(torch.from_numpy(x), torch.from_numpy(mask)).numpy()
    return result


def to_half(torch: Any, net: Any) -> dict[str, np.ndarray]:
    """Round the branch's weights to float16 (as stored), in place, and return them by name."""
    layer = net.layer
    modules = {
        "query": layer.query,
        "key": layer.key,
        "value": layer.value,
        "attention_out": layer.attention_out,
        "attention_norm": layer.attention_norm,
        "intermediate": layer.intermediate,
        "output": layer.output,
        "output_norm": layer.output_norm,
        "head": net.head,
    }
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for name, module in modules.items():
            for part in ("weight", "bias"):
                param = getattr(module, part)
                half = param.detach().numpy().astype(np.float16)
                param.copy_(torch.from_numpy(half.astype(np.float32)))
                # Linear weights are stored (in, out): the runtime computes x @ W.
                stored = half.T if part == "weight" and half.ndim == 2 else half
                arrays[f"{name}.{part}"] = np.ascontiguousarray(stored)
    assert sorted(arrays) == sorted(LAYER_PARAMS)
    return arrays


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train the mood model's fine-tuned layer.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="development data folder")
    parser.add_argument(
        "--out", type=Path, default=REPO / "assembler" / "mood" / "weights", help="output folder"
    )
    parser.add_argument("--cache", type=Path, default=CACHE, help="hidden states cache")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument(
        "--keep",
        type=Path,
        help="also write the tuning-stage layer (fitted without the held-out rows) here: "
        "train_mood_embeddings.py --layer reads it to fit the window calibration",
    )
    args = parser.parse_args(argv)
    data: Path = args.data
    started = time.perf_counter()
    if not (data / "goemotions" / "train.tsv").is_file():
        parser.error(f"no GoEmotions data under {data}: pass the data folder with --data PATH")

    import torch
    from transformers import AutoModel

    torch.set_num_threads(2)
    bert = AutoModel.from_pretrained(str(bundled_model_path())).eval()
    shipped = json.loads(str(np.load(DEFAULT_MODEL_PATH)["meta"]))

    go_train = load_goemotions(data, "train")
    go_dev = load_goemotions(data, "dev")
    emo_train = load_emobank(data, "train")
    meld = load_meld(data, "train")
    meld_fit, meld_hold = ngram.split_dialogues(meld)
    go_fit, go_hold = train_test_split(
        np.arange(len(go_train)), test_size=ngram.HOLDOUT, random_state=SEED
    )
    all_texts, all_labels, all_weights = ngram.dialogue_rows(meld_fit + meld_hold)
    dia_texts, dia_labels, dia_weights = ngram.dialogue_rows(meld_fit)
    hold_texts, hold_labels, _ = ngram.dialogue_rows(meld_hold)
    dev_rows = [i for i, r in enumerate(go_dev) if len(r.labels) == 1 and r.labels[0] in GOLD_MAP]
    dev_texts = [go_dev[i].text for i in dev_rows]
    dev_gold = [GOLD_MAP[go_dev[i].labels[0]] for i in dev_rows]

    store = Store()
    store.sets["go"] = hidden_states(
        torch, bert, [r.text for r in go_train], args.cache / "go_train.npz"
    )
    meld_texts = ngram.dialogue_rows(meld)[0]
    store.sets["meld"] = hidden_states(torch, bert, meld_texts, args.cache / "meld_train.npz")
    store.sets["dev"] = hidden_states(torch, bert, dev_texts, args.cache / "go_dev.npz")
    meld_row = {}
    for i, text in enumerate(meld_texts):
        meld_row.setdefault(text, i)
    log(f"hidden states ready ({time.perf_counter() - started:.0f} s)")

    # --- the tuning stage: fit without the held-out rows, tune on them -----------------------
    index, labels, weights = ngram.mood_samples(go_train, go_fit)
    classes = sorted(set(labels) | set(dia_labels))

    def samples(
        go_index: np.ndarray,
        go_labels: list[str],
        go_weights: np.ndarray,
        texts: list[str],
        moods: list[str],
        dia_w: np.ndarray,
    ) -> tuple[list[tuple[str, int]], np.ndarray, np.ndarray]:
        keys = [("go", int(i)) for i in go_index] + [("meld", meld_row[t]) for t in texts]
        y = np.array([classes.index(m) for m in list(go_labels) + list(moods)])
        w = np.concatenate([go_weights, dia_w])
        balanced = len(y) / (len(classes) * np.bincount(y, minlength=len(classes)))
        return keys, y, w * balanced[y]

    keys, y, w = samples(index, labels, weights, dia_texts, dia_labels, dia_weights)
    log(f"tuning stage: {len(keys)} samples, classes {classes}")
    net = train_branch(torch, bert, store, keys, y, w, len(classes), args.epochs)
    hold = [
        i for i in go_hold if len(go_train[i].labels) == 1 and go_train[i].labels[0] in GOLD_MAP
    ]
    hold_gold = [GOLD_MAP[go_train[i].labels[0]] for i in hold]
    branch_hold = predict(
        torch, net, store, [("go", i) for i in hold] + [("meld", meld_row[t]) for t in hold_texts]
    )

    sparse_of = ngram.Featurizer([r.text for r in go_train] + emo_train.texts + all_texts)
    go_x = sparse_of([r.text for r in go_train])
    ngram_moods = ngram.fit_moods(
        sparse.vstack([go_x[index], sparse_of(dia_texts)]).tocsr(),
        labels + dia_labels,
        np.concatenate([weights, dia_weights]),
    )
    assert [str(c) for c in ngram_moods.classes_] == classes
    temperature_n = float(shipped["training"]["temperature"])
    offsets_n = np.array([shipped["training"]["class_offsets"][c] for c in classes])
    ngram_hold = np.concatenate(
        [
            np.asarray(ngram_moods.decision_function(go_x[hold])),
            np.asarray(ngram_moods.decision_function(sparse_of(hold_texts))),
        ]
    )
    ngram_hold = ngram_hold / temperature_n + offsets_n
    log(f"n-gram model refitted without the held-out rows ({time.perf_counter() - started:.0f} s)")

    go_score = ngram.f1_scorer(classes, hold_gold, GOLD_CLASSES, GO_PRED_MAP)
    dia_score = ngram.f1_scorer(classes, hold_labels, WINDOW_CLASSES, WINDOW_PRED_MAP)
    n_go = len(hold)

    def both(predicted: np.ndarray) -> float:
        return 0.5 * (go_score(predicted[:n_go]) + dia_score(predicted[n_go:]))

    def mixed(branch: np.ndarray, other: np.ndarray, share: float) -> np.ndarray:
        return share * log_softmax(branch) + (1.0 - share) * log_softmax(other)

    tuned: dict[float, tuple[float, np.ndarray]] = {}
    held_out: dict[str, dict[str, float]] = {}
    for share in SHARES:
        logits = mixed(branch_hold, ngram_hold, share)
        offsets = ngram.tune_offsets(logits, both)
        predicted = (logits + offsets).argmax(1)
        tuned[share] = (both(predicted), offsets)
        held_out[str(share)] = {
            "goemotions": round(go_score(predicted[:n_go]), 4),
            "meld": round(dia_score(predicted[n_go:]), 4),
        }
        log(
            f"held-out, layer share {share:.1f}: macro-F1 GoEmotions "
            f"{held_out[str(share)]['goemotions']:.3f}, MELD {held_out[str(share)]['meld']:.3f}"
        )
    share = largest_within({s: score for s, (score, _) in tuned.items()})
    offsets = tuned[share][1]
    truth = [ngram.TRAIN_LABELS[go_train[i].labels[0]] for i in hold] + list(hold_labels)
    temperature = ngram.tune_temperature(
        mixed(branch_hold, ngram_hold, share) + offsets,
        np.array([classes.index(t) for t in truth]),
    )
    log(f"layer share {share}, offsets {np.round(offsets, 2)}, temperature {temperature}")

    def meta_of(held_out_figures: dict[str, Any]) -> dict[str, Any]:
        return {
            "format": LAYER_FORMAT,
            "embedding_model": BUNDLED_MODEL_ID,
            "layer": len(bert.encoder.layer) - 1,
            "heads": int(bert.config.num_attention_heads),
            "layer_norm_eps": float(bert.config.layer_norm_eps),
            "classes": classes,
            "mixing": {"moods": share, "temperature": temperature},
            "offsets": [float(o) for o in offsets],
            "training": {
                "seed": SEED,
                "epochs": args.epochs,
                "batch": BATCH,
                "layer_lr": LAYER_LR,
                "head_lr": HEAD_LR,
                "warmup_steps": WARMUP_STEPS,
                "weight_decay": WEIGHT_DECAY,
                "dropout": DROPOUT,
                "held_out_macro_f1": held_out_figures,
                "data": ngram.PROVENANCE,
            },
        }

    if args.keep is not None:
        kept = args.keep / "mood_layer.npz"
        stage = {**to_half(torch, net), "meta": np.array(json.dumps(meta_of({}), sort_keys=True))}
        ngram.write_npz(kept, stage)
        log(f"kept the tuning-stage layer in {kept}")

    # --- the final fit on all train rows ------------------------------------------------------
    index, labels, weights = ngram.mood_samples(go_train, range(len(go_train)))
    keys, y, w = samples(index, labels, weights, all_texts, all_labels, all_weights)
    log(f"final fit: {len(keys)} samples")
    net = train_branch(torch, bert, store, keys, y, w, len(classes), args.epochs)
    arrays = to_half(torch, net)
    meta = meta_of(held_out)
    path = args.out / "mood_layer.npz"
    ngram.write_npz(path, {**arrays, "meta": np.array(json.dumps(meta, sort_keys=True))})
    size = path.stat().st_size
    log(f"wrote {path} ({size / 1e6:.2f} MB)")

    # --- the numpy runtime must reproduce torch's logits -------------------------------------
    layer = read_mood_layer(path, classes=tuple(classes))
    expected = predict(torch, net, store, [("dev", i) for i in range(len(dev_texts))])
    got = np.vstack([layer.logits([store.seq(("dev", i))]) for i in range(len(dev_texts))])
    worst = float(np.abs(got - expected).max())
    agree = float(np.mean(got.argmax(1) == expected.argmax(1)))
    log(
        f"runtime vs torch on {len(dev_texts)} dev texts: same mood {agree:.2%}, "
        f"max |diff| {worst:.1e}"
    )
    if agree < 0.999 or worst > 1e-3:
        raise SystemExit("the numpy runtime does not reproduce the training side; see above")

    base = MoodModel.from_file(DEFAULT_MODEL_PATH)
    ngram_dev = base.raw_scores(dev_texts).logits
    dev_score = ngram.f1_scorer(classes, dev_gold, GOLD_CLASSES, GO_PRED_MAP)
    dev_mixed = (mixed(expected, ngram_dev, share) + offsets) / temperature
    figure = dev_score(dev_mixed.argmax(1))
    log(f"dev GoEmotions macro-F1, the layer mixed with the n-gram model: {figure:.3f}")
    card = {
        "file": path.name,
        "bytes": size,
        "what": "the mood model's fine-tuned copy of all-MiniLM-L6-v2's last layer and its mood "
        "classifier (assembler/mood/layer.py), mixed with the n-gram model of mood_model.npz",
        "how": "python training/train_mood_layer.py (see training/README.md)",
        "meta": meta,
        "data": {
            "goemotions_train_rows": len(go_train),
            "meld_train_utterances": len(all_texts),
            "not_used": "DailyDialog (non-commercial), any test split, the real-session labels",
        },
        "dev": {"goemotions_macro_f1_layer_and_ngram": round(figure, 4)},
    }
    (args.out / "mood_layer.card.json").write_text(
        json.dumps(card, indent=2, sort_keys=True) + "\n"
    )
    log(f"done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
