"""`assemble show`: SCRATCHPAD.md as it is, the block hosts prepend, or its frontmatter as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from assembler.cli.common import load, parse_now
from assembler.daemon.output import recorded_lines
from assembler.file.codec import read_scratchpad
from assembler.file.records import last_diagnostics
from assembler.pad.publish import prefix_for


def run(args: argparse.Namespace) -> int:
    config = load(args)
    now = parse_now(args.now, config)
    if args.json:
        args.format = "json"
    if args.format == "prefix":
        # The fresh auto part with the agent sections as they are now (not as last rendered).
        block = prefix_for(config, now, fresh_only=args.fresh_only)
        if block is None:
            return 1
        sys.stdout.write(block)
        return 0
    pad = read_scratchpad(config.output_path)
    fresh = pad.is_fresh(now, config.output.ttl)
    if args.fresh_only and not fresh:
        return 1
    if args.format == "json":
        diagnostics, current = last_diagnostics(config.state_dir, pad.body)
        document = {
            "path": str(pad.path),
            "fresh": fresh,
            "updated": pad.updated.isoformat(),
            "expires": pad.expires.isoformat(),
            "frontmatter": pad.meta,
            # What the last assembly measured (.scratchpad/last-assembly.json), and whether
            # the file is still what it wrote.
            "diagnostics": diagnostics or None,
            "diagnostics_current": current,
            "body": pad.body,
        }
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str))
    else:
        sys.stdout.write(pad.path.read_text(encoding="utf-8"))
        if args.explain:
            diagnostics, current = last_diagnostics(config.state_dir, pad.body)
            print("\n# what the last assembly measured" + ("" if current else " (not this file)"))
            for line in _diagnostic_lines(diagnostics):
                print(f"  {line}")
    return 0


def _diagnostic_lines(meta: dict[str, Any]) -> list[str]:
    """The last assembly's record as `show --explain` lines (empty record: say so)."""
    if not meta:
        return ["no record of the last assembly (.scratchpad/last-assembly.json)"]
    lines = [
        f"sources: {s.get('path')} [{s.get('format')}] {s.get('messages')} messages, "
        f"{s.get('bad_lines')} bad lines" + (f", error: {s['error']}" if s.get("error") else "")
        for s in meta.get("sources", [])
    ]
    if "tokens" in meta:
        lines += recorded_lines(meta)
    lines += [f"budget: dropped {d}" for d in meta.get("dropped", [])]
    lines += [f"degraded: {p.get('what')}: {p.get('why')}" for p in meta.get("degraded", [])]
    if meta.get("stages_ms"):
        lines.append("stages (ms): " + ", ".join(f"{k} {v}" for k, v in meta["stages_ms"].items()))
    return lines
