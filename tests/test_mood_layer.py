"""Tests of the mood model's fine-tuned layer (assembler/mood/layer.py): the numpy runtime runs
the layer as the training side (torch, training/train_mood_layer.py) does, the assembly's model
reads it from the export's hidden states, and an export without them falls back to the
embedding head's moods, saying so."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assembler.errors import ModelError
from assembler.hosts.registry import HOSTS
from assembler.mood import model as sentiment
from assembler.mood.layer import DEFAULT_LAYER_PATH, LAYER_PARAMS, MoodLayer, read_mood_layer
from assembler.mood.model import SEMANTIC_DENSE, MoodModel, load_mood_model
from assembler.mood.semantic import DEFAULT_SEMANTIC_PATH, embedded_part, read_semantic_weights

REPO = Path(__file__).resolve().parent.parent
TEXTS = [
    "are you completely brain dead? what about the staging and prod configs??",
    "holy shit, the whole suite passes now, you're a beast",
    "my friend passed away on sunday, could you help me write a few words",
    "rename the helper to load_rows and update the call sites",
    "I'm worried the migration will lose the old rows",
]


@pytest.fixture(scope="module")
def layer() -> MoodLayer:
    classes = load_mood_model().weights.classes
    return read_mood_layer(DEFAULT_LAYER_PATH, classes=classes)


def test_the_shipped_layer_is_small_and_has_a_card(layer: MoodLayer) -> None:
    assert DEFAULT_LAYER_PATH.stat().st_size < 5_000_000
    card = json.loads(DEFAULT_LAYER_PATH.with_name("mood_layer.card.json").read_text())
    assert card["meta"]["classes"] == list(layer.classes)
    assert 0.0 < layer.fusion <= 1.0 and layer.temperature > 0.0


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_numpy_layer_gives_the_training_sides_logits(layer: MoodLayer) -> None:
    import torch
    from transformers import BertConfig, BertModel

    sys.path.insert(0, str(REPO / "training"))
    from train_mood_layer import branch_class

    from assembler.memory.embeddings import bundled_model_path

    torch.manual_seed(0)
    bert = BertModel(BertConfig.from_pretrained(str(bundled_model_path())))
    net = branch_class(torch)(bert, len(layer.classes)).eval()
    modules = {
        "query": net.layer.query,
        "key": net.layer.key,
        "value": net.layer.value,
        "attention_out": net.layer.attention_out,
        "attention_norm": net.layer.attention_norm,
        "intermediate": net.layer.intermediate,
        "output": net.layer.output,
        "output_norm": net.layer.output_norm,
        "head": net.head,
    }
    with torch.no_grad():
        for name in LAYER_PARAMS:
            module, part = name.split(".")
            value = layer.params[name]
            value = value.T if part == "weight" and value.ndim == 2 else value
            getattr(modules[module], part).copy_(torch.from_numpy(np.ascontiguousarray(value)))
    rng = np.random.default_rng(1)
    states = [rng.normal(0.0, 1.0, (n, layer.width)).astype(np.float32) for n in (3, 11, 40)]
    expected = []
    with torch.no_grad():
        for x in states:
            mask = torch.ones((1, len(x)))
            expected.append(net(torch.from_numpy(x[None]), mask).numpy()[0])
    assert np.abs(layer.logits(states) - np.array(expected)).max() < 1e-3


class PlainEmbedder:
    """The bundled model's vectors without hidden states, as an export made before them."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.inner.encode(texts))


@pytest.fixture(scope="module")
def bundled() -> Any:
    from assembler.memory.embeddings import load_embedder

    return load_embedder("bundled")


@pytest.mark.model
def test_the_assemblys_model_mixes_the_layers_logits_from_the_exports_hidden_states(
    bundled: Any, layer: MoodLayer
) -> None:
    model = load_mood_model(embedder=bundled)
    assert model.layer is not None and "+layer:" in model.version
    raw = model.raw_scores(TEXTS)
    _, states = bundled.encode_with_states([embedded_part(t) for t in TEXTS])
    assert states is not None and all(s.shape[1] == layer.width for s in states)
    ngram = load_mood_model().raw_scores(TEXTS).logits
    expected = layer.mix(layer.logits(states), ngram)
    assert np.abs(raw.logits - expected).max() < 1e-4
    assert model.layer_unavailable is None


@pytest.mark.model
def test_an_embedder_without_hidden_states_falls_back_to_the_heads_moods_and_says_so(
    bundled: Any, layer: MoodLayer, caplog: pytest.LogCaptureFixture
) -> None:
    base = load_mood_model()
    head = read_semantic_weights(
        DEFAULT_SEMANTIC_PATH, dense=SEMANTIC_DENSE, classes=base.weights.classes
    )
    plain = PlainEmbedder(bundled)
    with_layer = MoodModel(base.weights, semantic=head, embedder=plain, layer=layer)
    without = MoodModel(base.weights, semantic=head, embedder=plain)
    with caplog.at_level(logging.WARNING):
        scored = with_layer.score_many(TEXTS)
    for mine, theirs in zip(scored, without.score_many(TEXTS), strict=True):
        assert mine.scores == pytest.approx(theirs.scores, abs=1e-6)
    assert with_layer.layer_unavailable is not None
    assert "degraded" in caplog.text and "assemble model export --force" in caplog.text
    assert with_layer.version == without.version  # the mood history rescores as the head's


@pytest.mark.model
def test_an_export_made_before_the_hidden_states_gives_none_and_is_redone(
    bundled: Any, tmp_path: Path
) -> None:
    from assembler.memory.embeddings import bundled_export_folder
    from assembler.memory.export import current_export
    from assembler.memory.onnx_embedder import OnnxEmbedder, OnnxModel, read_manifest

    source = bundled_export_folder()
    old = tmp_path / "old-export"
    old.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (old / name).symlink_to(source / name)
    record = json.loads((source / "manifest.json").read_text())
    record.pop("layer_input")
    (old / "manifest.json").write_text(json.dumps(record))

    embedder = OnnxEmbedder(OnnxModel(old), batch_size=8)
    vectors, states = embedder.encode_with_states(TEXTS[:2])
    assert states is None and not embedder.has_states
    assert np.allclose(vectors, bundled.encode(TEXTS[:2]), atol=1e-6)
    manifest = read_manifest(old)
    assert (
        current_export(old, model_id=manifest.model_id, source_digest=manifest.source_digest)
        is None
    )
    assert (
        current_export(source, model_id=manifest.model_id, source_digest=manifest.source_digest)
        is not None
    )


def test_a_missing_or_corrupt_layer_leaves_the_heads_moods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    classes = load_mood_model().weights.classes
    corrupt = tmp_path / "mood_layer.npz"
    corrupt.write_bytes(DEFAULT_LAYER_PATH.read_bytes()[:4000])
    with pytest.raises(ModelError, match=r"mood_layer\.npz.*train_mood_layer\.py"):
        read_mood_layer(corrupt, classes=classes)
    with pytest.raises(ModelError, match="other moods"):
        read_mood_layer(DEFAULT_LAYER_PATH, classes=classes[:-1])
    monkeypatch.setattr(sentiment, "DEFAULT_LAYER_PATH", tmp_path / "nowhere.npz")
    monkeypatch.setattr(sentiment, "_layer", None)
    monkeypatch.setattr(sentiment, "_with_embeddings", {})

    class Zeros:
        model_id = "sentence-transformers/all-MiniLM-L6-v2"
        dim = 384

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((len(texts), self.dim), dtype=np.float32)

    with caplog.at_level(logging.WARNING):
        reading = load_mood_model(embedder=Zeros())
    assert reading.reads_embeddings and reading.layer is None
    assert "without its fine-tuned layer" in caplog.text
    assert "+layer:" not in reading.version


@pytest.mark.model
def test_an_assembly_with_memory_search_on_reads_moods_with_the_layer(tmp_path: Path) -> None:
    # The memory index wraps the model in its caches of vectors, which hold no hidden states:
    # the mood model must still reach them (no "gives no hidden states" warning).
    workspace = tmp_path / "workspace"
    shutil.copytree(REPO / "workspace-example", workspace)
    command = [sys.executable, "-m", "assembler", "--once", "--no-daemon"]
    command += ["--workspace", str(workspace), "--now", "2026-03-02T19:57:00+11:00"]
    environment = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stderr
    assert "hidden states" not in done.stderr
    assert "memory 14 chunks" in (workspace / "SCRATCHPAD.md").read_text()  # memory search ran
    assert "**Primary:** frustrated" in (workspace / "SCRATCHPAD.md").read_text()


@pytest.mark.model
def test_a_mood_model_without_the_states_it_needs_is_listed_as_degraded_in_the_file(
    bundled: Any, layer: MoodLayer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assembler.assembly import draft
    from assembler.assembly.pipeline import run_once
    from assembler.config.files import load_config

    base = load_mood_model()
    head = read_semantic_weights(
        DEFAULT_SEMANTIC_PATH, dense=SEMANTIC_DENSE, classes=base.weights.classes
    )
    # A model of its own (the process's cached one stays as it is), reading an old export.
    old = MoodModel(base.weights, semantic=head, embedder=PlainEmbedder(bundled), layer=layer)
    monkeypatch.setattr(draft, "load_mood_model", lambda embedder=None: old)
    (tmp_path / "chat.jsonl").write_text(
        '{"role": "user", "content": "why is the deploy STILL failing??", '
        '"timestamp": "2026-03-02T23:20:00+11:00"}\n'
    )
    (tmp_path / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[memory]\nenabled = false\n'
    )
    now = datetime.fromisoformat("2026-03-02T23:25:00+11:00")
    assembly = run_once(load_config(tmp_path), now=now, hosts=HOSTS, dry_run=True)
    (entry,) = [d for d in assembly.measured.degraded if d.what == "mood model"]
    assert "no hidden states" in entry.why and "export --force" in entry.why
