"""The one-time export of a sentence-transformers model to ONNX, and where exports live.

`export_model` loads a sentence-transformers folder with torch, traces its transformer to
`model.onnx` (TorchScript exporter; the `onnx` package writes the file), saves its fast
tokenizer as `tokenizer.json`, and writes `manifest.json` (see `onnx_embedder`). Before the
export is put in place, onnxruntime encodes a set of texts with it and the vectors are
compared with sentence-transformers' own: an export that does not give the same vectors
(cosine >= 0.9999 each) is never used. The export is written into a temp folder beside the
target and renamed into place, under a lock, so a reader sees the old export or the new one,
never half of one, and two processes that export at once export once.

torch, sentence-transformers and onnx are imported by `export_model` only (the `export`
extra); nothing else in the package needs them when it runs with an export.

Exports live in an installation-level folder, `<sys.prefix>/share/scratchpad-assembler/models`
(or `$SCRATCHPAD_ASSEMBLER_MODELS`), not in the user's home: one export serves every user and
workspace of an installation.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from assembler.errors import ModelError
from assembler.fsutil import FileLock, fsync_folder
from assembler.memory.onnx_embedder import (
    INPUT_NAMES,
    MANIFEST_FILE,
    MODEL_FILE,
    OUTPUT_NAME,
    STATES_NAME,
    TOKENIZER_FILE,
    Manifest,
    OnnxEmbedder,
    OnnxModel,
    is_export,
    read_manifest,
)

MODELS_ENV = "SCRATCHPAD_ASSEMBLER_MODELS"
EXPORT_TOOLS = ("torch", "sentence_transformers", "onnx")
EXPORT_EXTRA = "pip install 'scratchpad-assembler[export]'"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# Hashing the head and tail of the weights tells fine-tunes of one architecture apart without
# reading 90 MB on every start.
_WEIGHT_SAMPLE_BYTES = 1 << 20
_OPSET = 17
_MIN_COSINE = 0.9999
_LOCK_SECONDS = 600.0
# Texts the export is checked on: short and long (past max_seq_length), cased, accented,
# other scripts, empty; encoded in small batches so padding is exercised too.
_CHECK_TEXTS = (
    "tea",
    "",
    "  The rollout keeps CRASHING after the deploy  ",
    "Ünïcödé café naïve résumé — 東京 🙂",
    "kubectl rollout status deploy/api -n prod; exit code 137 (OOMKilled)",
    "a much longer text about the kubernetes cluster and its nodes " * 40,
    "Mum's birthday is on the 14th: order flowers, book the table for six at 7 pm.",
)
_CHECK_BATCH = 3


@dataclass(frozen=True)
class Exported:
    """An export in place: its folder and manifest, and whether this call wrote it."""

    folder: Path
    manifest: Manifest
    written: bool
    seconds: float


def models_dir() -> Path:
    """Return the folder of exported models: $SCRATCHPAD_ASSEMBLER_MODELS when set, else
    `<sys.prefix>/share/scratchpad-assembler/models` (the installation's, so it is the same
    for every user and not hidden by another HOME)."""
    configured = os.environ.get(MODELS_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(sys.prefix) / "share" / "scratchpad-assembler" / "models"


def missing_export_tools() -> list[str]:
    """Return the packages an export needs that cannot be imported here (none: it can run).

    Nothing is imported: the import system is only asked whether it would find them.
    """
    missing = []
    for name in EXPORT_TOOLS:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def hash_weights(digest: Any, folder: Path) -> None:
    """Given a hashlib object and a model folder, feed it the weight files' names, sizes, and
    their first and last megabyte."""
    for name in WEIGHT_FILES:
        file = folder / name
        if file.is_file():
            size = file.stat().st_size
            digest.update(f"{name}:{size}".encode())
            with file.open("rb") as handle:
                digest.update(handle.read(_WEIGHT_SAMPLE_BYTES))
                handle.seek(max(0, size - _WEIGHT_SAMPLE_BYTES))
                digest.update(handle.read(_WEIGHT_SAMPLE_BYTES))


def weights_digest(folder: Path) -> str:
    """Given a sentence-transformers folder, return a digest of its weights (hex, 16 digits);
    it changes when the weights change, and costs two megabytes of reading, not ninety."""
    digest = hashlib.sha256()
    hash_weights(digest, folder)
    return digest.hexdigest()[:16]


def current_export(folder: Path, *, model_id: str, source_digest: str) -> Manifest | None:
    """Given an export's folder and the model it should hold, return its manifest when it is
    complete and made from these weights, else None."""
    if not is_export(folder):
        return None
    try:
        manifest = read_manifest(folder)
    except ModelError:
        return None
    if manifest.model_id != model_id or manifest.source_digest != source_digest:
        return None
    if not manifest.layer_input:  # made by an earlier version: the mood model needs it
        return None
    return manifest


def export_model(
    source_folder: Path, target_folder: Path, *, model_id: str, force: bool = False
) -> Exported:
    """Given a sentence-transformers folder, the folder its export goes to and the model's id,
    export it and return where and what.

    An export of the same id and weights already in place is kept unless `force`. Raise
    ModelError, saying what to do, if torch, sentence-transformers or onnx cannot be imported,
    the model is not a transformer with mean pooling, the target cannot be written, or the
    export's vectors differ from sentence-transformers'.
    """
    started = time.perf_counter()
    source = source_folder.resolve()
    digest = weights_digest(source)
    parent = target_folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(parent / f".{target_folder.name}.lock")
        with lock.hold(timeout=_LOCK_SECONDS):
            kept = (
                None
                if force
                else current_export(target_folder, model_id=model_id, source_digest=digest)
            )
            if kept is not None:
                return Exported(target_folder, kept, False, time.perf_counter() - started)
            _remove_leftovers(parent, target_folder.name)
            temp = Path(tempfile.mkdtemp(prefix=f".{target_folder.name}.tmp-", dir=parent))
            # mkdtemp's folder is private; the export serves every user of the installation.
            temp.chmod(0o755)
            try:
                manifest = _write_export(source, temp, model_id=model_id, digest=digest)
                _put_in_place(temp, target_folder)
            except BaseException:
                shutil.rmtree(temp, ignore_errors=True)
                raise
    except (OSError, TimeoutError) as error:
        raise ModelError(
            f"The ONNX export cannot be written to '{target_folder}' ({type(error).__name__}: "
            f"{error}); set {MODELS_ENV} to a folder you can write, and run "
            "`assemble model export`"
        ) from error
    return Exported(target_folder, manifest, True, time.perf_counter() - started)


def _remove_leftovers(parent: Path, name: str) -> None:
    """Remove the temp and old folders of exports killed midway (the lock is held: no export
    is running)."""
    for pattern in (f".{name}.tmp-*", f".{name}.old-*"):
        for leftover in parent.glob(pattern):
            shutil.rmtree(leftover, ignore_errors=True)


def _put_in_place(temp: Path, target: Path) -> None:
    """Given a finished export in a temp folder beside the target, make it the target."""
    if target.exists() or target.is_symlink():
        # A folder cannot be renamed over a full one: move the old aside first, then drop it.
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.rename(target, old)
        os.rename(temp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(temp, target)
    fsync_folder(target.parent)


def _write_export(source: Path, folder: Path, *, model_id: str, digest: str) -> Manifest:
    """Given a sentence-transformers folder and an empty folder, write the export into it, check
    its vectors against sentence-transformers', and return its manifest."""
    missing = missing_export_tools()
    if missing:
        raise ModelError(
            f"Exporting the embedding model needs torch, sentence-transformers and onnx "
            f"({', '.join(missing)} not installed); install them with {EXPORT_EXTRA} and run "
            "`assemble model export` again, or set memory.model = 'none'"
        )
    _check_pipeline(source)
    # Set before the import: huggingface_hub reads these once, when first imported. A folder
    # needs no hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from sentence_transformers import SentenceTransformer

    with quiet_loading():
        try:
            model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
        except Exception as error:
            raise ModelError(
                f"Embedding model folder '{source}' cannot be loaded for the export "
                f"({type(error).__name__}: {error}); check that it is a complete "
                "sentence-transformers model"
            ) from error
    model.eval()
    transformer = model[0]
    backend = getattr(getattr(transformer, "tokenizer", None), "backend_tokenizer", None)
    if backend is None:
        raise ModelError(
            f"Embedding model folder '{source}' has no fast tokenizer (tokenizer.json), which "
            "the ONNX runtime needs; use it as a sentence-transformers folder"
        )
    backend.save(str(folder / TOKENIZER_FILE))
    manifest = Manifest(
        model_id=model_id,
        dim=_dimension(model),
        max_seq_length=_max_seq_length(model, source),
        source_digest=digest,
        lowercase=_lowercase(source),
        layer_input=True,
    )
    names = _trace(torch, transformer.auto_model, folder)
    versions = {"torch": str(torch.__version__), "opset": _OPSET}
    (folder / MANIFEST_FILE).write_text(
        manifest.to_json(
            inputs=names,
            exported_with=versions,
            exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        ),
        encoding="utf-8",
    )
    _check_vectors(model, folder, model_id)
    for name in (MODEL_FILE, TOKENIZER_FILE, MANIFEST_FILE):
        with (folder / name).open("rb") as handle:
            os.fsync(handle.fileno())
    return manifest


def _check_pipeline(source: Path) -> None:
    """Given a sentence-transformers folder, raise ModelError unless it is a transformer,
    mean pooling and (optionally) normalisation: the pipeline `OnnxModel` reproduces."""
    fix = "use it as a sentence-transformers folder (memory.model = its path) instead"
    try:
        modules = json.loads((source / "modules.json").read_text(encoding="utf-8"))
        kinds = [str(module["type"]).rpartition(".")[2] for module in modules]
        pooling_path = next(
            source / module["path"] for module in modules if module["type"].endswith("Pooling")
        )
        pooling = json.loads((pooling_path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as error:
        raise ModelError(
            f"Embedding model folder '{source}' has no readable modules.json with a Pooling "
            f"module ({type(error).__name__}: {error}); {fix}"
        ) from error
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ModelError(
            f"Embedding model folder '{source}' has the modules {kinds}; only Transformer, "
            f"Pooling and Normalize can be exported; {fix}"
        )
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode_") and value}
    mean = modes == {"pooling_mode_mean_tokens"} or pooling.get("pooling_mode") == "mean"
    if not mean:
        raise ModelError(
            f"Embedding model folder '{source}' pools by {sorted(modes) or pooling}, not by the "
            f"mean of its tokens, which is all the export does; {fix}"
        )


def _max_seq_length(model: Any, source: Path) -> int:
    """Given the loaded model, return the tokens it reads of a text, as sentence-transformers
    cuts them (sentence_bert_config.json's max_seq_length, capped by the tokenizer's)."""
    length = model.max_seq_length
    if not isinstance(length, int) or length <= 0:
        raise ModelError(
            f"Embedding model folder '{source}' sets no max_seq_length; add one to its "
            "sentence_bert_config.json, or use it as a sentence-transformers folder"
        )
    return length


def _lowercase(source: Path) -> bool:
    """Given a sentence-transformers folder, return whether it lowercases texts itself (its
    sentence_bert_config.json's do_lower_case)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        config = json.loads((source / "sentence_bert_config.json").read_text(encoding="utf-8"))
        return bool(config.get("do_lower_case", False))
    return False


def _dimension(model: Any) -> int:
    # Renamed in sentence-transformers 5; the old name warns.
    getter = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )
    dim = getter()
    if not isinstance(dim, int) or dim <= 0:
        raise ModelError("The embedding model does not report its vector size; use 'bundled'")
    return dim


def _trace(torch: Any, network: Any, folder: Path) -> list[str]:
    """Given torch, a Hugging Face transformer and the export's folder (its tokenizer saved),
    write the transformer there as ONNX and return the names of its inputs."""
    from tokenizers import Tokenizer

    accepted = inspect.signature(network.forward).parameters
    names = [name for name in INPUT_NAMES if name in accepted]
    # Eager attention traces to plain matrix products; the fused kernel's tracing has
    # data-dependent shortcuts (an all-ones mask dropped) that a trace would freeze.
    setter = getattr(network, "set_attn_implementation", None)
    if setter is not None:
        with contextlib.suppress(Exception):
            setter("eager")
    # An example batch with padding, so the mask is traced as data, not as "all ones".
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    tokenizer.no_truncation()
    tokenizer.enable_padding()
    encodings = tokenizer.encode_batch(["an example", "a longer example text for the trace"])
    fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    example = tuple(
        torch.tensor([getattr(e, fields[name]) for e in encodings], dtype=torch.long)
        for name in names
    )

    class TokenEmbeddings(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *inputs: Any) -> Any:
            out = self.network(**dict(zip(names, inputs, strict=True)), output_hidden_states=True)
            return out.last_hidden_state, out.hidden_states[-2]

    options: dict[str, Any] = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False  # the TorchScript exporter needs no onnxscript
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, OUTPUT_NAME, STATES_NAME]}
    try:
        with warnings.catch_warnings(), torch.no_grad():
            # The tracer's warnings are about shapes it treats as constants: the ones above.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                TokenEmbeddings().eval(),
                example,
                str(folder / MODEL_FILE),
                input_names=names,
                output_names=[OUTPUT_NAME, STATES_NAME],
                dynamic_axes=axes,
                opset_version=_OPSET,
                do_constant_folding=True,
                **options,
            )
    except Exception as error:
        raise ModelError(
            f"Exporting the embedding model to ONNX failed ({type(error).__name__}: {error}); "
            "use the model folder with sentence-transformers (memory.model = its path) instead"
        ) from error
    return names


def _check_vectors(model: Any, folder: Path, model_id: str) -> None:
    """Given the sentence-transformers model and its export, raise ModelError unless the
    export's vectors of the check texts are the same (cosine >= 0.9999 each)."""
    exported = OnnxEmbedder(OnnxModel(folder, expect_id=model_id), batch_size=_CHECK_BATCH)
    ours = exported.encode(_CHECK_TEXTS)
    theirs = model.encode(
        list(_CHECK_TEXTS),
        batch_size=_CHECK_BATCH,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    cosines = (ours * np.asarray(theirs, dtype=np.float32)).sum(axis=1)
    if float(cosines.min()) < _MIN_COSINE:
        raise ModelError(
            f"The ONNX export of {model_id} gives other vectors than sentence-transformers "
            f"(cosine {float(cosines.min()):.6f} < {_MIN_COSINE}); it was not installed. Use "
            "the model folder with sentence-transformers (memory.model = its path) instead"
        )


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Keep transformers' progress bars and chatter off the terminal while a model loads.

    Core code never prints; the CLI owns the terminal.
    """
    try:
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
    except ImportError:
        yield
        return
    bars_were_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars_were_on:
            hf_logging.enable_progress_bar()
