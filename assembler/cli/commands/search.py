"""`assemble search`: the memory searched (embeddings and BM25), a query or one a line."""

from __future__ import annotations

import argparse
import json
import sys

from assembler.cli.common import batches, load, log_fallback
from assembler.errors import AssemblerError
from assembler.memory.lifecycle import index_options, synced_memory
from assembler.memory.recall import hit_record, shown_hit


def run(args: argparse.Namespace) -> int:
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
            log_fallback(memory)
            for batch in batches([], sys.stdin, size=256):
                for hits in index.search_many(batch, k=args.k, **options):
                    records = [
                        hit_record(shown_hit(h, patterns), explain=args.explain) for h in hits
                    ]
                    sys.stdout.write(json.dumps(records))
                    sys.stdout.write("\n")
            return 0
        hits = [shown_hit(h, patterns) for h in index.search(args.query, k=args.k, **options)]
        log_fallback(memory)
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


def _part(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
