"""`assemble model export`: the embedding model's one-time ONNX export."""

from __future__ import annotations

import argparse

from assembler.cli.common import log
from assembler.memory.embeddings import export_bundled


def run(args: argparse.Namespace) -> int:
    # `export` is the only action (argparse requires one).
    log.info("exporting the bundled embedding model (loads torch once; about 10 s)")
    exported = export_bundled(force=args.force)
    manifest = exported.manifest
    what = f"{manifest.model_id} ({manifest.dim}-d, up to {manifest.max_seq_length} tokens)"
    if exported.written:
        print(f"exported {what} to {exported.folder} in {exported.seconds:.1f} s")
    else:
        print(f"{what} is already exported to {exported.folder} (--force exports it again)")
    return 0
