"""`assemble index`: the memory index brought up to date with the notes."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from assembler.cli.common import load, log, log_fallback
from assembler.memory.lifecycle import synced_memory


def run(args: argparse.Namespace) -> int:
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
    log_fallback(memory)
    print(
        f"indexed {report.files_seen} files ({report.files_changed} changed, "
        f"{report.files_removed} removed): {report.chunks_total} chunks, "
        f"{report.chunks_embedded} embedded, {report.chunks_reused} reused, "
        f"in {report.seconds:.2f} s"
    )
    return 0


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
