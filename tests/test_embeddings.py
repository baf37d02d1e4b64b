"""Tests for assembler/embeddings.py. Tests marked `model` load the real bundled model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assembler.errors import ModelError
from assembler.memory.embeddings import (
    BUNDLED_MODEL_ID,
    LazyEmbedder,
    bundled_model_path,
    load_embedder,
)


def fake_model_folder(folder: Path, *, hidden: int = 384) -> Path:
    """A folder that looks like a sentence-transformers model (descriptor files only)."""
    folder.mkdir(parents=True)
    (folder / "modules.json").write_text(json.dumps([{"path": "", "type": "Transformer"}]))
    (folder / "config.json").write_text(json.dumps({"hidden_size": hidden}))
    return folder


def test_importing_memory_and_naming_the_model_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from assembler.memory.embeddings import LazyEmbedder\n"
        "import assembler.memory.index\n"
        "print(LazyEmbedder('bundled').model_id)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'sentence_transformers' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == BUNDLED_MODEL_ID


def test_a_missing_model_folder_raises_a_model_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelError, match=r"no-such-model.*does not exist.*'bundled'"):
        load_embedder(str(missing))


def test_a_folder_without_a_model_raises_a_model_error_naming_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    with pytest.raises(ModelError, match=r"empty-folder.*no modules.json or config.json"):
        load_embedder(str(empty))


def test_a_file_given_as_the_model_folder_raises_a_model_error(tmp_path: Path) -> None:
    file = tmp_path / "model.bin"
    file.write_bytes(b"\x00")
    with pytest.raises(ModelError, match=r"model.bin.*is a file, not a folder"):
        LazyEmbedder(str(file)).encode(["text"])


def test_a_spec_that_is_neither_a_folder_nor_a_hub_name_raises_a_model_error() -> None:
    with pytest.raises(ModelError, match="neither an existing folder nor a Hugging Face hub"):
        load_embedder("not a model name!")


def test_lazy_embedder_raises_only_when_used_not_when_created(tmp_path: Path) -> None:
    embedder = LazyEmbedder(str(tmp_path / "gone"))
    assert not embedder.loaded
    with pytest.raises(ModelError, match="gone"):
        _ = embedder.model_id


def test_a_folder_models_id_survives_a_move_and_changes_with_its_config(tmp_path: Path) -> None:
    first = fake_model_folder(tmp_path / "a" / "my-model")
    moved = tmp_path / "b" / "my-model"
    shutil.copytree(first, moved)
    other = fake_model_folder(tmp_path / "c" / "my-model", hidden=768)
    first_id = LazyEmbedder(str(first)).model_id
    assert first_id.startswith("my-model@")
    assert LazyEmbedder(str(moved)).model_id == first_id
    assert LazyEmbedder(str(other)).model_id != first_id


def test_the_bundled_folder_given_as_a_path_keeps_the_bundled_id() -> None:
    assert LazyEmbedder(str(bundled_model_path())).model_id == BUNDLED_MODEL_ID
    assert LazyEmbedder("bundled").model_id == BUNDLED_MODEL_ID


@pytest.mark.model
def test_the_bundled_model_loads_offline_and_encodes_unit_384_d_vectors() -> None:
    embedder = load_embedder("bundled", batch_size=2)
    texts = ["a short one", "a much longer text about the kubernetes cluster " * 8, "tea"]
    vectors = embedder.encode(texts)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert embedder.model_id == BUNDLED_MODEL_ID
    assert embedder.dim == 384
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Sorted by length inside, returned in the order given.
    for text, vector in zip(texts, vectors, strict=True):
        assert np.allclose(embedder.encode([text])[0], vector, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


@pytest.mark.model
def test_the_model_is_loaded_once_per_process_and_lazily() -> None:
    first = load_embedder("bundled", batch_size=8)
    second = load_embedder(str(bundled_model_path()), batch_size=32)
    lazy = LazyEmbedder("bundled")
    assert first._model is second._model
    assert not lazy.loaded
    assert lazy.encode(["hello"]).shape == (1, 384)
    assert lazy.loaded


@pytest.mark.model
def test_a_hub_name_that_cannot_be_fetched_raises_a_model_error_suggesting_bundled() -> None:
    with pytest.raises(ModelError, match=r"no-such-model-3f9a.*'bundled'"):
        load_embedder("assembler-tests/no-such-model-3f9a")
