"""The `assemble` command: parses flags, calls one core function, prints the result.

Heavy modules are imported inside the commands that need them, so light commands
(`show`, `check`, `config`) start fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from assembler import __version__
from assembler.errors import AssemblerError

if TYPE_CHECKING:
    from assembler.config import Config

log = logging.getLogger("assembler")

EXIT_USER_ERROR = 1
EXIT_UNEXPECTED = 3
EXIT_INTERRUPTED = 130

DESCRIPTION = """\
Assemble SCRATCHPAD.md, the working memory of an LLM agent: the human's mood and what the
session is about (from the recent transcripts), a response strategy, today's notes, the time
of day and a routing hint, stamped with a TTL.

common uses:
  assemble --once                 assemble once (heartbeat, cron, debugging)
  assemble --once --dry-run       print the file instead of writing it
  assemble check                  exit 0 if SCRATCHPAD.md is fresh, 1 if stale, 2 if missing
  assemble show --format prefix   the block a host prepends to each message
  assemble mood "WHY is it failing again"   score texts with the mood model
"""


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    # Sub-commands accept the global options too; SUPPRESS keeps them from overwriting a value
    # given before the sub-command's name.
    default: Any = argparse.SUPPRESS if suppress else None
    group = parser.add_argument_group("workspace")
    group.add_argument(
        "-w",
        "--workspace",
        metavar="PATH",
        default=default,
        help="the agent workspace (default: $ASSEMBLER_WORKSPACE, else the current folder)",
    )
    group.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        default=default,
        help="config file (default: $ASSEMBLER_CONFIG, <workspace>/.scratchpad/config.toml, "
        "<workspace>/assembler.toml, ~/.config/scratchpad-assembler/config.toml)",
    )
    verbosity = parser.add_argument_group("logging")
    verbosity.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if suppress else 0,
        help="more log output on stderr (-vv for debug)",
    )
    verbosity.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="only errors on stderr",
    )


def _add_once_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("assembly (--once)")
    group.add_argument(
        "--dry-run",
        action="store_true",
        default=default(False),
        help="print the file instead of writing it",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print a machine-readable summary of the run",
    )
    group.add_argument(
        "--explain",
        action="store_true",
        default=default(False),
        help="also print why each value is what it is",
    )
    group.add_argument(
        "--transcripts",
        metavar="GLOB",
        action="append",
        default=default(None),
        help="read these transcripts instead of the configured sources (repeatable)",
    )
    _add_now(group, suppress=suppress)


def _add_now(parser: argparse.ArgumentParser | Any, *, suppress: bool) -> None:
    parser.add_argument(
        "--now",
        metavar="ISO-8601",
        default=argparse.SUPPRESS if suppress else None,
        help="the clock for this run, e.g. 2026-03-02T23:25:00+11:00 (for reproducible runs); "
        "without an offset it is read in the configured time zone",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of `assemble` and its sub-commands."""
    parser = argparse.ArgumentParser(
        prog="assemble",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--once", action="store_true", help="assemble SCRATCHPAD.md once and exit")
    _add_common(parser, suppress=False)
    _add_once_options(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help_text: str, description: str = "") -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=help_text,
            description=description or help_text,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common(sub, suppress=True)
        return sub

    once = command("once", "assemble SCRATCHPAD.md once (the same as --once)")
    _add_once_options(once, suppress=True)

    show = command(
        "show",
        "print SCRATCHPAD.md",
        "Print SCRATCHPAD.md: as written (md), as the block hosts prepend to each message "
        "(prefix; empty when not fresh), or as JSON with its frontmatter and body.",
    )
    show.add_argument("--format", choices=("md", "prefix", "json"), default="md")
    show.add_argument(
        "--fresh-only",
        action="store_true",
        help="print nothing and exit 1 when the file has expired",
    )
    _add_now(show, suppress=True)

    check = command(
        "check",
        "exit 0 if SCRATCHPAD.md is fresh, 1 if stale, 2 if missing or unreadable",
        "For heartbeat scripts and monitoring: prints one line saying which, and exits\n"
        "0 (fresh), 1 (stale) or 2 (missing or unreadable).",
    )
    _add_now(check, suppress=True)

    mood = command(
        "mood",
        "score texts with the mood model",
        "Score texts with VADER and the mood model: valence (-1..1), arousal (0..1), and the\n"
        "primary and secondary mood with scores. Texts come as arguments, or one per line on\n"
        "stdin with --stdin (tens of thousands of lines are fine).",
    )
    mood.add_argument("texts", nargs="*", metavar="TEXT")
    mood.add_argument("--stdin", action="store_true", help="read one text per line from stdin")
    mood.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per text: valence, arousal, primary, secondary, scores, compound",
    )

    index = command(
        "index",
        "bring the memory index up to date",
        "Index the workspace's memory (MEMORY.md, memory/**/*.md and memory.sources):\n"
        "new and changed files are re-chunked, only new chunks are embedded, deleted files\n"
        "leave the index. Assemblies and searches do this themselves; run it to index ahead.",
    )
    index.add_argument(
        "--rebuild",
        action="store_true",
        help="re-chunk every file (embeddings of unchanged chunks are kept)",
    )
    index.add_argument("--json", action="store_true", help="print the summary as JSON")

    search = command(
        "search",
        "search the memory (hybrid: embeddings + BM25)",
        "Search the workspace's memory, after bringing the index up to date. With --stdin,\n"
        "every line is a query and every output line a JSON array of its hits.",
    )
    search.add_argument("query", nargs="?", metavar="QUERY")
    search.add_argument("-k", type=int, default=5, metavar="N", help="hits to show (default 5)")
    search.add_argument("--json", action="store_true", help="print the hits as a JSON array")
    search.add_argument(
        "--explain", action="store_true", help="show the score parts (vector, BM25, recency)"
    )
    search.add_argument(
        "--stdin",
        action="store_true",
        help="one query per line on stdin; one JSON array of hits per line on stdout",
    )

    config = command("config", "validate, show or create the configuration")
    actions = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    validate = actions.add_parser("validate", help="check the config; exit 1 listing all problems")
    show_config = actions.add_parser("show", help="print the effective config as TOML")
    init = actions.add_parser("init", help="write a commented sample config")
    init.add_argument(
        "--path",
        metavar="FILE",
        help="where to write it (default: <workspace>/assembler.toml)",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    for sub in (validate, show_config, init):
        _add_common(sub, suppress=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `assemble` with the given arguments and return its exit code.

    User errors print one line and return 1; Ctrl-C returns 130; anything unexpected writes
    its traceback to the log file and returns 3.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    try:
        return _dispatch(parser, args)
    except AssemblerError as error:
        print(f"assemble: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("assemble: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away; nothing left to say.
        sys.stderr.close()
        return 0
    except Exception as error:
        where = _log_traceback()
        print(
            f"assemble: unexpected error: {type(error).__name__}: {error} "
            f"(traceback in {where}; please report it)",
            file=sys.stderr,
        )
        return EXIT_UNEXPECTED


def _setup_logging(verbose: int, quiet: bool) -> None:
    level = (
        logging.ERROR if quiet else [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    )
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _log_traceback() -> str:
    from assembler.config import user_state_dir

    text = traceback.format_exc()
    try:
        folder = user_state_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "assembler.log"
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"--- {datetime.now().isoformat()} assemble {' '.join(sys.argv[1:])}\n")
            handle.write(text)
        return str(path)
    except OSError:
        sys.stderr.write(text)
        return "stderr"


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    handlers: dict[str | None, Callable[[argparse.Namespace], int]] = {
        "once": _cmd_once,
        "show": _cmd_show,
        "check": _cmd_check,
        "mood": _cmd_mood,
        "index": _cmd_index,
        "search": _cmd_search,
        "config": _cmd_config,
    }
    if args.command is None and not args.once:
        parser.print_help(sys.stderr)
        print("\nassemble: error: name a COMMAND or pass --once", file=sys.stderr)
        return 2
    return handlers[args.command or "once"](args)


def _load(args: argparse.Namespace) -> Config:
    from assembler.config import load_config

    return load_config(args.workspace, args.config)


def _parse_now(value: str | None, config: Config) -> datetime:
    from assembler.config import local_timezone

    tz = local_timezone(config)
    if value is None:
        return datetime.now(tz)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as error:
        raise AssemblerError(
            f"--now {value!r} is not an ISO-8601 time; write it like 2026-03-02T23:25:00+11:00"
        ) from error
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)


def _cmd_once(args: argparse.Namespace) -> int:
    from assembler.assemble import run_once

    config = _load(args)
    now = _parse_now(args.now, config)
    assembly = run_once(config, now=now, dry_run=args.dry_run, transcript_globs=args.transcripts)
    meta = assembly.meta
    if args.json:
        summary = {
            "path": str(assembly.path),
            "written": assembly.written,
            **{k: meta[k] for k in ("updated", "expires", "ttl_minutes", "tokens", "sources")},
            **{k: meta[k] for k in ("messages_read", "sections", "dropped", "degraded")},
            "mood": _mood_summary(assembly),
        }
        if args.explain:
            summary["explain"] = assembly.explain()
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return _report_problems(assembly)
    if args.dry_run:
        sys.stdout.write(assembly.text)
    else:
        tokens = meta["tokens"]
        print(
            f"wrote {assembly.path} ({tokens['auto']}/{tokens['caps']['auto']} tokens, "
            f"{meta['messages_read']} messages read, valid until {meta['expires']})"
        )
    if args.explain:
        print("\nWhy:")
        for line in assembly.explain():
            print(f"  {line}")
    return _report_problems(assembly)


def _report_problems(assembly: Any) -> int:
    """Print what went wrong in a run that still wrote its file; return 1 if a source failed.

    An unreadable transcript does not stop the run (the file is written and says so), but the
    exit code tells cron and heartbeat scripts that something needs fixing.
    """
    for warning in assembly.transcripts.warnings:
        log.warning("%s", warning)
    failed = [s for s in assembly.transcripts.sources if s.error]
    for item in assembly.degraded:
        if not item["what"].startswith("transcript "):
            log.warning("degraded: %s: %s", item["what"], item["why"])
    for source in failed:
        print(f"assemble: error: {source.error}", file=sys.stderr)
    return EXIT_USER_ERROR if failed else 0


def _mood_summary(assembly: Any) -> dict[str, Any] | None:
    if assembly.mood is None:
        return None
    state = assembly.mood.combined
    return {
        "primary": state.primary,
        "primary_score": round(state.primary_score, 3),
        "secondary": state.secondary,
        "valence": round(state.valence, 3),
        "arousal": round(state.arousal, 3),
        "confidence": round(state.confidence, 3),
        "trajectory": state.trajectory,
        "speakers": sorted(assembly.mood.speakers),
    }


def _cmd_show(args: argparse.Namespace) -> int:
    from assembler.errors import ScratchpadError
    from assembler.render import prefix_block, read_scratchpad

    config = _load(args)
    now = _parse_now(args.now, config)
    try:
        pad = read_scratchpad(config.output_path)
    except ScratchpadError:
        if args.format == "prefix":
            return 0  # hosts prepend nothing when there is nothing
        raise
    fresh = pad.is_fresh(now)
    if args.fresh_only and not fresh:
        return 1
    if args.format == "prefix":
        sys.stdout.write(prefix_block(pad, now))
    elif args.format == "json":
        document = {
            "path": str(pad.path),
            "fresh": fresh,
            "updated": pad.updated.isoformat(),
            "expires": pad.expires.isoformat(),
            "frontmatter": pad.meta,
            "body": pad.body,
        }
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str))
    else:
        sys.stdout.write(pad.path.read_text(encoding="utf-8"))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from assembler.render import check_freshness

    config = _load(args)
    result = check_freshness(config.output_path, _parse_now(args.now, config))
    print(result.message)
    return result.code


def _cmd_mood(args: argparse.Namespace) -> int:
    from assembler.sentiment import load_mood_model

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
    for line in stream:
        batch.append(line.rstrip("\r\n"))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _cmd_index(args: argparse.Namespace) -> int:
    from assembler.recall import synced_memory

    config = _load(args)
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
        "degraded": memory.degraded,
        "seconds": round(report.seconds, 3),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for warning in report.skipped:
        log.warning("%s", warning)
    if memory.degraded:
        log.warning("degraded: %s", memory.degraded)
    print(
        f"indexed {report.files_seen} files ({report.files_changed} changed, "
        f"{report.files_removed} removed): {report.chunks_total} chunks, "
        f"{report.chunks_embedded} embedded, {report.chunks_reused} reused, "
        f"in {report.seconds:.2f} s"
    )
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from assembler.recall import index_options, synced_memory

    if args.k <= 0:
        raise AssemblerError(f"-k {args.k}: give a positive number of hits")
    if (args.query is None) == (not args.stdin):
        raise AssemblerError("search: give one QUERY, or pass --stdin with one query per line")
    config = _load(args)
    memory = synced_memory(config)
    if memory.degraded:
        log.warning("degraded: %s", memory.degraded)
    options = index_options(config)
    with memory.index as index:
        if args.stdin:
            for batch in _batches([], sys.stdin, size=256):
                for hits in index.search_many(batch, k=args.k, **options):
                    sys.stdout.write(json.dumps([_hit_record(h, args.explain) for h in hits]))
                    sys.stdout.write("\n")
            return 0
        hits = index.search(args.query, k=args.k, **options)
    if args.json:
        print(json.dumps([_hit_record(h, args.explain) for h in hits], indent=2))
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


def _hit_record(hit: Any, explain: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": round(hit.score, 4),
        "snippet": hit.snippet,
    }
    if explain:
        record["vector"] = None if hit.vector is None else round(hit.vector, 4)
        record["bm25"] = None if hit.bm25 is None else round(hit.bm25, 4)
        record["recency"] = round(hit.recency, 4)
    return record


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


def _cmd_config(args: argparse.Namespace) -> int:
    from assembler import config as config_module

    if args.config_command == "init":
        folder = config_module.resolve_workspace(args.workspace)
        target = Path(args.path).expanduser() if args.path else folder / "assembler.toml"
        written = config_module.init_config(target, force=args.force)
        print(f"wrote {written}; edit it, then run 'assemble config validate'")
        return 0
    config = _load(args)
    if args.config_command == "validate":
        where = config.source or "no config file (defaults)"
        print(f"ok: {where} is valid (workspace {config.workspace})")
        return 0
    print(f"# effective config; from {config.source or 'defaults'}")
    sys.stdout.write(config_module.to_toml(config.to_dict()))
    return 0
