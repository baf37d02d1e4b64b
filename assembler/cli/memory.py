"""The CLI's commands of the models: `index` and `search` (the memory index), `mood` (the
mood model on any text), and `model export` (the embedding model's ONNX export)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from assembler.cli.common import decoded, load, log
from assembler.errors import AssemblerError
from assembler.memory.recall import OpenMemory, hit_record, index_options, shown_hit, synced_memory


def _cmd_mood(args: argparse.Namespace) -> int:
    from assembler.mood.model import load_mood_model

    if not args.texts and not args.stdin:
        raise AssemblerError("mood: give TEXT arguments or pass --stdin with one text per line")
    model = load_mood_model()
    for batch in _batches(args.texts, sys.stdin if args.stdin else None):
        for mood in model.score_many(batch):
            if args.json:
                record = {
                    "valence": round(mood.valence, 4),
                    "arousal": round(mood.arousal, 4),
                    "primary": mood.primary,
                    "secondary": mood.secondary,
                    "scores": {k: round(v, 4) for k, v in mood.scores.items()},
                    "compound": mood.compound,
                }
                sys.stdout.write(json.dumps(record) + "\n")
            else:
                second = f", {mood.secondary} {mood.secondary_score:.2f}" if mood.secondary else ""
                sys.stdout.write(
                    f"valence {mood.valence:+.2f}  arousal {mood.arousal:.2f}  "
                    f"{mood.primary} {mood.primary_score:.2f}{second}\n"
                )
    return 0


def _batches(texts: Sequence[str], stream: TextIO | None, size: int = 2048) -> Iterator[list[str]]:
    """Yield the texts in batches, so stdin of any length is scored without holding it all."""
    for start in range(0, len(texts), size):
        yield list(texts[start : start + size])
    if stream is None:
        return
    batch: list[str] = []
    buffer = getattr(stream, "buffer", None)
    lines = (
        (decoded(raw, "--stdin", number) for number, raw in enumerate(buffer, start=1))
        if buffer is not None
        else iter(stream)
    )
    for line in lines:
        batch.append(line.rstrip("\r\n"))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _cmd_index(args: argparse.Namespace) -> int:
    config = load(args)
    with _ProgressBars() as bars:
        memory = synced_memory(config, rebuild=args.rebuild, progress=bars.update)
    memory.index.close()
    report = memory.report
    summary = {
        "files_seen": report.files_seen,
        "files_changed": report.files_changed,
        "files_removed": report.files_removed,
        "chunks_total": report.chunks_total,
        "chunks_embedded": report.chunks_embedded,
        "chunks_reused": report.chunks_reused,
        "skipped": report.skipped,
        "degraded": memory.fallback.why if memory.fallback is not None else None,
        "seconds": round(report.seconds, 3),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for warning in report.skipped:
        log.warning("%s", warning)
    _log_fallback(memory)
    print(
        f"indexed {report.files_seen} files ({report.files_changed} changed, "
        f"{report.files_removed} removed): {report.chunks_total} chunks, "
        f"{report.chunks_embedded} embedded, {report.chunks_reused} reused, "
        f"in {report.seconds:.2f} s"
    )
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    if args.k <= 0:
        raise AssemblerError(f"-k {args.k}: give a positive number of hits")
    if (args.query is None) == (not args.stdin):
        raise AssemblerError("search: give one QUERY, or pass --stdin with one query per line")
    config = load(args)
    memory = synced_memory(config)
    options = index_options(config)
    patterns = config.routing.extra_secret_patterns
    with memory.index as index:
        if args.stdin:
            _log_fallback(memory)
            for batch in _batches([], sys.stdin, size=256):
                for hits in index.search_many(batch, k=args.k, **options):
                    records = [
                        hit_record(shown_hit(h, patterns), explain=args.explain) for h in hits
                    ]
                    sys.stdout.write(json.dumps(records))
                    sys.stdout.write("\n")
            return 0
        hits = [shown_hit(h, patterns) for h in index.search(args.query, k=args.k, **options)]
        _log_fallback(memory)
    if args.json:
        print(json.dumps([hit_record(h, explain=args.explain) for h in hits], indent=2))
        return 0
    if not hits:
        print("no memories matched")
    for rank, hit in enumerate(hits, start=1):
        line = f"{rank}. {hit.path}:{hit.start_line}-{hit.end_line}  {hit.score:.3f}"
        if args.explain:
            parts = [f"vector {_part(hit.vector)}", f"bm25 {_part(hit.bm25)}"]
            if hit.recency != 1.0:
                parts.append(f"recency x{hit.recency:.2f}")
            line += f"  ({', '.join(parts)})"
        print(line)
        print(f"   {hit.snippet}")
    return 0


def _cmd_model(args: argparse.Namespace) -> int:
    from assembler.memory.embeddings import export_bundled

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


def _log_fallback(memory: OpenMemory) -> None:
    # Keyword search alone is a warning only when the user did not choose it.
    fallback = memory.fallback
    if fallback is not None:
        level = logging.INFO if fallback.kind == "keyword search" else logging.WARNING
        log.log(level, "degraded: %s", fallback.why)


def _part(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


class _ProgressBars:
    """tqdm bars on stderr, one per stage, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.bars: dict[str, Any] = {}

    def __enter__(self) -> _ProgressBars:
        return self

    def update(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        bar = self.bars.get(stage)
        if bar is None:
            from tqdm import tqdm

            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="", leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    def __exit__(self, *exc: object) -> None:
        for bar in self.bars.values():
            bar.close()


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "index": _cmd_index,
    "search": _cmd_search,
    "mood": _cmd_mood,
    "model": _cmd_model,
}
