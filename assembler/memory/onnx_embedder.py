"""Sentence embeddings from an exported model, run with onnxruntime: no torch at run time.

An exported model is a folder, written once by `assembler.memory.export`, holding:

- `model.onnx`: the transformer, token ids in, one vector per token out (and, in an export
  made by this version, the hidden states entering its last layer, for the mood model);
- `tokenizer.json`: the model's fast tokenizer;
- `manifest.json`: the model id, the vector size, the longest input in tokens and a digest of
  the weights it was exported from.

`OnnxModel` loads one (its manifest checked against the graph), and `OnnxEmbedder` is the
`Embedder` over it. What sentence-transformers does after the transformer, mean pooling over
the attention mask and L2 normalisation, is done here with numpy, so the vectors are the ones
sentence-transformers makes from the same weights. onnxruntime and tokenizers are imported
when a model loads, not when this module is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from assembler.errors import ModelError

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
# The graph's inputs an export may have; BERT-like models take all three, others fewer.
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "token_embeddings"
# The second output of an export made by this version: the hidden states entering the model's
# last layer, which the mood model's own copy of that layer reads (`assembler.mood.layer`).
STATES_NAME = "last_layer_input"
EXPORT_AGAIN = "export it again with `assemble model export --force`"
# The most tokens one batch holds (16 texts of 256 tokens, 64 of 64). onnxruntime holds each
# layer's attention scores whole, heads x batch x length^2 floats: 64 texts of 256 tokens
# peak at over a gigabyte, 16 at a third of that, in about the same time.
TOKENS_PER_BATCH = 4096


@dataclass(frozen=True)
class Manifest:
    """What an export says about itself: the model it holds and the source it came from."""

    model_id: str
    dim: int
    max_seq_length: int
    source_digest: str
    lowercase: bool = False
    # Whether the graph also gives the hidden states entering its last layer (STATES_NAME).
    layer_input: bool = False

    def to_json(self, **extra: Any) -> str:
        """Given informational fields (versions, times), return the manifest as JSON text."""
        record: dict[str, Any] = {
            "format": MANIFEST_FORMAT,
            "model_id": self.model_id,
            "dim": self.dim,
            "max_seq_length": self.max_seq_length,
            "source_digest": self.source_digest,
            "lowercase": self.lowercase,
            "layer_input": self.layer_input,
            "pooling": "mean",
            "normalize": True,
            **extra,
        }
        return json.dumps(record, indent=2) + "\n"


def is_export(folder: Path) -> bool:
    """Given a folder, return whether it holds an exported model (its three files)."""
    return all((folder / name).is_file() for name in (MODEL_FILE, TOKENIZER_FILE, MANIFEST_FILE))


def read_manifest(folder: Path) -> Manifest:
    """Given an export's folder, return its manifest.

    Raise ModelError naming the file if it is missing, is not JSON, or lacks a field.
    """
    path = folder / MANIFEST_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelError(
            f"The exported model's manifest '{path}' cannot be read ({type(error).__name__}: "
            f"{error}); {EXPORT_AGAIN}"
        ) from error
    problem = _manifest_problem(record)
    if problem:
        raise ModelError(f"The exported model's manifest '{path}' {problem}; {EXPORT_AGAIN}")
    return Manifest(
        model_id=record["model_id"],
        dim=record["dim"],
        max_seq_length=record["max_seq_length"],
        source_digest=record["source_digest"],
        lowercase=bool(record.get("lowercase", False)),
        layer_input=bool(record.get("layer_input", False)),
    )


def _manifest_problem(record: Any) -> str:
    """Given a parsed manifest, return what is wrong with it ('' when nothing is)."""
    if not isinstance(record, dict):
        return "is not a JSON object"
    if record.get("format") != MANIFEST_FORMAT:
        return f"has format {record.get('format')!r}, not {MANIFEST_FORMAT}"
    for key, kind in (
        ("model_id", str),
        ("source_digest", str),
        ("dim", int),
        ("max_seq_length", int),
    ):
        value = record.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) or not value:
            return f"has no valid {key!r}"
        if isinstance(value, int) and value <= 0:
            return f"has no valid {key!r}"
    return ""


class OnnxModel:
    """An exported model loaded with onnxruntime: its session, tokenizer and manifest.

    One per process and folder; `lock` lets one encode run at a time. Raise ModelError from
    the constructor if the export is incomplete, its manifest names another model than
    `expect_id` or another size than its graph has, or onnxruntime cannot load it.
    """

    def __init__(self, folder: Path, *, expect_id: str | None = None) -> None:
        self.folder = folder
        self.manifest = read_manifest(folder)
        if expect_id is not None and self.manifest.model_id != expect_id:
            raise ModelError(
                f"The exported model in '{folder}' is {self.manifest.model_id} by its "
                f"{MANIFEST_FILE}, not {expect_id}; {EXPORT_AGAIN}, or point "
                "SCRATCHPAD_ASSEMBLER_MODELS at a folder of exports made by it"
            )
        self.model_id = self.manifest.model_id
        self.dim = self.manifest.dim
        self.lock = threading.Lock()
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as error:
            raise ModelError(
                f"Embeddings need onnxruntime and tokenizers, which cannot be imported ({error});"
                " install them with 'pip install onnxruntime tokenizers', or set "
                "memory.model = 'none' for keyword search alone"
            ) from error
        self._session = self._open_session(onnxruntime)
        # The arena keeps what a batch needed, hundreds of megabytes for a batch of long
        # chunks, for the life of the process: shrunk at the end of each run, a daemon holds
        # the model and little more between its cycles, at the same speed.
        self._run_options = onnxruntime.RunOptions()
        self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._inputs = [node.name for node in self._session.get_inputs()]
        outputs = [node.name for node in self._session.get_outputs()]
        self.has_states = self.manifest.layer_input and STATES_NAME in outputs
        self._check_graph()
        self._tokenizer = self._open_tokenizer(Tokenizer)

    def _open_session(self, onnxruntime: Any) -> Any:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = _intra_op_threads()
        # One graph node at a time: the parallelism worth having is inside the matrix products.
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # Idle pool threads sleep instead of spinning: a daemon's encode is a few short texts,
        # and a spinning thread only burns the CPU the other one (or another program) needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Core code never prints; onnxruntime's warnings would land on the user's terminal.
        options.log_severity_level = 3
        path = self.folder / MODEL_FILE
        try:
            return onnxruntime.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:
            raise ModelError(
                f"The exported model '{path}' cannot be loaded by onnxruntime "
                f"({type(error).__name__}: {error}); {EXPORT_AGAIN}"
            ) from error

    def _check_graph(self) -> None:
        path = self.folder / MODEL_FILE
        unknown = sorted(set(self._inputs) - set(INPUT_NAMES))
        if unknown or "input_ids" not in self._inputs or "attention_mask" not in self._inputs:
            raise ModelError(
                f"The exported model '{path}' takes the inputs {self._inputs}, not token ids and "
                f"an attention mask; {EXPORT_AGAIN}"
            )
        width = self._session.get_outputs()[0].shape[-1]
        if isinstance(width, int) and width != self.dim:
            raise ModelError(
                f"The exported model in '{self.folder}' makes {width}-d vectors, but its "
                f"{MANIFEST_FILE} says {self.dim}; {EXPORT_AGAIN}"
            )

    def _open_tokenizer(self, factory: Any) -> Any:
        path = self.folder / TOKENIZER_FILE
        try:
            tokenizer = factory.from_file(str(path))
        except Exception as error:
            raise ModelError(
                f"The exported model's tokenizer '{path}' cannot be loaded "
                f"({type(error).__name__}: {error}); {EXPORT_AGAIN}"
            ) from error
        # A tokenizer.json may carry a fixed padding and a shorter truncation of its own (the
        # bundled one pads and cuts at 128); sentence-transformers cuts at max_seq_length and
        # pads each batch to its longest text, as `embed` does.
        padding = tokenizer.padding or {}
        self._pad_id = int(padding.get("pad_id", 0))
        self._pad_type_id = int(padding.get("pad_type_id", 0))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.manifest.max_seq_length)
        return tokenizer

    def tokenize(self, texts: Sequence[str]) -> list[Any]:
        """Given texts, return their encodings (token ids, cut at max_seq_length, unpadded)."""
        if self.manifest.lowercase:
            texts = [text.lower() for text in texts]
        return list(self._tokenizer.encode_batch(list(texts)))

    def embed(self, encodings: Sequence[Any]) -> npt.NDArray[np.float32]:
        """Given one batch of encodings from `tokenize`, return their (n, dim) unit vectors.

        The caller holds `lock`. Raise whatever onnxruntime raises.
        """
        return self.embed_with_states(encodings, states=False)[0]

    def embed_with_states(
        self, encodings: Sequence[Any], *, states: bool = True
    ) -> tuple[npt.NDArray[np.float32], list[npt.NDArray[np.float32]] | None]:
        """Given one batch of encodings from `tokenize`, return their (n, dim) unit vectors and,
        when `states` and the export has them, each text's hidden states entering the last
        layer (tokens x dim, no padding), else None.

        The caller holds `lock`. Raise whatever onnxruntime raises.
        """
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        types = np.full((len(encodings), width), self._pad_type_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            types[row, :length] = encoding.type_ids
            mask[row, :length] = encoding.attention_mask
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        wanted = [OUTPUT_NAME, STATES_NAME] if states and self.has_states else [OUTPUT_NAME]
        results = self._session.run(
            wanted, {name: feeds[name] for name in self._inputs}, self._run_options
        )
        tokens = results[0]
        weights = mask[:, :, None].astype(np.float32)
        # sentence-transformers' Pooling (mean) and Normalize, with their floors.
        pooled = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors = np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)
        if len(results) < 2:
            return vectors, None
        hidden = np.asarray(results[1], dtype=np.float32)
        lengths = mask.sum(axis=1)
        return vectors, [hidden[row, : lengths[row]].copy() for row in range(len(encodings))]


class OnnxEmbedder:
    """An Embedder over an `OnnxModel`; embedders of one model share it and its lock."""

    def __init__(self, model: OnnxModel, *, batch_size: int) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._model = model
        self.model_id = model.model_id
        self.dim = model.dim
        self.batch_size = batch_size

    @property
    def folder(self) -> Path:
        """Return the export's folder."""
        return self._model.folder

    @property
    def has_states(self) -> bool:
        """Return whether the export also gives the hidden states entering its last layer."""
        return self._model.has_states

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Given texts, return their (n, dim) float32 unit vectors, in the order given.

        Each text is cut at the model's max_seq_length tokens. Texts are encoded longest first,
        so each batch pads to similar lengths, in batches of at most `batch_size` texts and
        `TOKENS_PER_BATCH` tokens. Raise ModelError if the model fails while encoding.
        """
        return self.encode_with_states(texts, states=False)[0]

    def encode_with_states(
        self, texts: Sequence[str], *, states: bool = True
    ) -> tuple[npt.NDArray[np.float32], list[npt.NDArray[np.float32]] | None]:
        """Given texts, return their vectors (as `encode`) and, when `states` and the export
        has them (`has_states`), each one's hidden states entering the model's last layer
        (tokens x dim), else None. Raise ModelError if the model fails while encoding."""
        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        hidden: list[npt.NDArray[np.float32]] = [result[:0]] * len(texts)
        with_states = states and self.has_states
        if not texts:
            return result, (hidden if with_states else None)
        try:
            # One encode at a time per model: two at once on a small CPU only thrash.
            with self._model.lock:
                encodings = self._model.tokenize(texts)
                order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids), reverse=True)
                start = 0
                while start < len(order):
                    longest = max(1, len(encodings[order[start]].ids))
                    size = max(1, min(self.batch_size, TOKENS_PER_BATCH // longest))
                    batch = order[start : start + size]
                    vectors, found = self._model.embed_with_states(
                        [encodings[i] for i in batch], states=with_states
                    )
                    result[batch] = vectors
                    for i, rows in zip(batch, found or (), strict=False):
                        hidden[i] = rows
                    start += size
                _give_back_freed_memory()
        except Exception as error:
            raise ModelError(
                f"The embedding model {self.model_id} failed while encoding {len(texts)} texts "
                f"({type(error).__name__}: {error}); try a smaller memory.batch_size, or set "
                "memory.model = 'none' for keyword search alone"
            ) from error
        return result, (hidden if with_states else None)


def _give_back_freed_memory() -> None:
    """Hand the memory freed after an encode back to the system (glibc keeps it otherwise, and
    a daemon would hold the peak of its largest batch for good); elsewhere nothing."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        _MALLOC_TRIM = _malloc_trim()
    _MALLOC_TRIM()


def _malloc_trim() -> Callable[[], object]:
    if not sys.platform.startswith("linux"):
        return lambda: None
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return lambda: None
    return lambda: trim(0)


_MALLOC_TRIM: Callable[[], object] | None = None


def _intra_op_threads() -> int:
    """Return the threads onnxruntime may use inside an operator: OMP_NUM_THREADS when set,
    else one per CPU this process may use.

    onnxruntime, like torch, sizes its pool by the machine's cores, which in a container can
    be many more than the CPUs the container gets; more threads than CPUs only slow it down.
    """
    with contextlib.suppress(ValueError):
        wanted = int(os.environ.get("OMP_NUM_THREADS", ""))
        if wanted > 0:
            return wanted
    return usable_cpus()


def usable_cpus() -> int:
    """Return how many CPUs this process can use: affinity, capped by a cgroup CPU quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError):
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, round(int(quota) / int(period))))
    return max(1, count)
