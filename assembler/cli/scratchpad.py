"""The CLI's commands of SCRATCHPAD.md itself: `--once` (and `once`), `show`, `check` and
`daemon`. Each parses nothing more, calls one core function and prints its result."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.cli.common import EXIT_USER_ERROR, load, log, parse_now
from assembler.errors import ConfigError, WorkspaceError
from assembler.file.codec import last_diagnostics, read_scratchpad
from assembler.file.freshness import check_freshness
from assembler.file.ready import prefix_for
from assembler.transcripts.read import resolve_explicit_sources

if TYPE_CHECKING:
    from assembler.assembly.pipeline import Assembly


def _cmd_once(args: argparse.Namespace) -> int:
    from assembler.assembly.log import record_run  # numpy, through the mood history
    from assembler.assembly.pipeline import run_once

    config = load(args)
    now = parse_now(args.now, config)
    globs = _explicit_transcripts(args)
    started = time.perf_counter()
    assembly = run_once(config, now=now, dry_run=args.dry_run, transcript_globs=globs)
    if not args.dry_run:  # the status page's log of assemblies and the mood history
        record_run(config, assembly, "once", time.perf_counter() - started)
    meta = assembly.meta
    if args.json:
        summary = {
            "path": str(assembly.path),
            "written": assembly.written,
            **{k: meta[k] for k in ("updated", "expires", "ttl_minutes", "tokens", "sources")},
            **{k: meta[k] for k in ("messages_read", "sections", "dropped", "degraded")},
            "agent_omitted": meta.get("agent_omitted", []),
            "mood": _mood_summary(assembly),
        }
        if args.explain:
            summary["explain"] = assembly.explain()
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return _report_problems(assembly)
    if args.dry_run:
        sys.stdout.write(assembly.text)
    elif assembly.written:
        tokens = meta["tokens"]
        print(
            f"wrote {assembly.path} ({tokens['auto']}/{tokens['caps']['auto']} tokens, "
            f"{meta['messages_read']} messages read, valid until {meta['expires']})"
        )
    else:
        print(f"not written: {assembly.path} kept changing while it was rendered; run again")
    if args.explain:
        print("\nWhy:")
        for line in [*assembly.explain(), *_recorded_lines(meta)]:
            print(f"  {line}")
    return _report_problems(assembly)


def _recorded_lines(meta: dict[str, Any]) -> list[str]:
    """The diagnostics the frontmatter no longer carries, as --explain lines: the token counts
    and what became of hand edits of the file."""
    tokens = meta["tokens"]
    caps = tokens["caps"]
    lines = [
        f"tokens: {tokens['total']}/{caps['total']} in all (frontmatter {tokens['frontmatter']}, "
        f"auto {tokens['auto']}/{caps['auto']}, agent {tokens['agent']}/{caps['agent']})"
    ]
    if meta.get("memory"):
        memory = meta["memory"]
        lines.append(
            f"memory: {memory['chunks']} chunks ({memory['embedded']} embedded), "
            f"{memory['hits']} shown"
        )
    lines += [
        f"agent section {entry['section']}: {entry['left_out']} of {entry['tokens']} tokens "
        "left out"
        for entry in meta.get("agent_omitted", [])
    ]
    if (edits := meta.get("file_edits")) is not None:
        lines.append("hand edits: " + json.dumps(edits, ensure_ascii=False))
    return lines


def _explicit_transcripts(args: argparse.Namespace) -> list[str] | None:
    """Return --transcripts as absolute globs (typed in a shell: relative to its folder), or
    None when not given. Raise TranscriptError if one matches no file."""
    globs = getattr(args, "transcripts", None)
    if not globs:
        return None
    return resolve_explicit_sources(globs, Path.cwd())


def _report_problems(assembly: Assembly) -> int:
    """Print what went wrong in a run that still wrote its file; return 1 if a source failed.

    An unreadable transcript does not stop the run (the file is written and says so), but the
    exit code tells cron and heartbeat scripts that something needs fixing.
    """
    for warning in assembly.transcripts.warnings:
        log.warning("%s", warning)
    failed = [s for s in assembly.transcripts.sources if s.error]
    for problem in assembly.degraded:
        if problem.kind != "transcript":  # said on stderr below, with the exit code
            log.warning("degraded: %s: %s", problem.what, problem.why)
    for source in failed:
        print(f"assemble: error: {source.error}", file=sys.stderr)
    return EXIT_USER_ERROR if failed else 0


def _mood_summary(assembly: Assembly) -> dict[str, Any] | None:
    if assembly.mood is None:
        return None
    return {
        **assembly.mood.combined.summary(),
        "speakers": sorted(assembly.mood.speakers),
    }


def _cmd_show(args: argparse.Namespace) -> int:
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
    fresh = pad.is_fresh(now)
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
        lines += _recorded_lines(meta)
    lines += [f"budget: dropped {d}" for d in meta.get("dropped", [])]
    lines += [f"degraded: {p.get('what')}: {p.get('why')}" for p in meta.get("degraded", [])]
    if meta.get("stages_ms"):
        lines.append("stages (ms): " + ", ".join(f"{k} {v}" for k, v in meta["stages_ms"].items()))
    return lines


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        config = load(args)
    except (WorkspaceError, ConfigError) as error:
        # Monitoring reads 1 as "stale"; a file that cannot even be located is "missing" (2).
        lines = str(error).splitlines()
        print(f"missing or unreadable: {' '.join(line.strip() for line in lines)}")
        return 2
    result = check_freshness(config.output_path, parse_now(args.now, config))
    print(result.message)
    return result.code


def _cmd_daemon(args: argparse.Namespace) -> int:
    from assembler.daemon.service import configure_logging, run_daemon

    config = load(args)
    globs = _explicit_transcripts(args)
    configure_logging(args.verbose, args.quiet)
    run_daemon(config, transcript_globs=globs)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "once": _cmd_once,
    "show": _cmd_show,
    "check": _cmd_check,
    "daemon": _cmd_daemon,
}
