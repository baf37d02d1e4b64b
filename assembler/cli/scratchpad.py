"""The CLI's commands of SCRATCHPAD.md itself: `--once` (and `once`), `show`, `check` and
`daemon`. Each parses nothing more, calls one core function and prints its result; `--once`
asks the workspace's daemon first, which has its models loaded (`daemon.control`)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.cli.common import EXIT_USER_ERROR, load, log, parse_now
from assembler.errors import ConfigError, WorkspaceError
from assembler.file.codec import last_diagnostics, read_scratchpad
from assembler.file.freshness import check_freshness

# `check` and `show` run per turn and in monitoring: what only `--once` and the prefix need
# is imported where they run.
if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.daemon.control import OnceOutput


def _cmd_once(args: argparse.Namespace) -> int:
    config = load(args)
    now = parse_now(args.now, config)
    globs = _explicit_transcripts(args)
    output = None if getattr(args, "no_daemon", False) else _served(args, config, globs)
    if output is None:
        output = _assembled_here(args, config, now, globs)
    if args.explain:
        output = _with_where_looked(output, config, globs, as_json=args.json)
    return _print_once(output)


def _with_where_looked(
    output: OnceOutput, config: Config, globs: list[str] | None, *, as_json: bool
) -> OnceOutput:
    """Return --once's output with where the transcripts were looked for added to its reasons
    (looked up here, served or not: the daemon's environment may not be this shell's)."""
    from dataclasses import replace

    from assembler.config.files import user_config_dir
    from assembler.hosts.registry import HOSTS
    from assembler.transcripts.read import where_looked

    configured = globs or config.transcripts.sources
    user_config = user_config_dir() / "config.toml"
    lines = where_looked(HOSTS, config.workspace, config.state_dir, user_config, configured)
    if as_json:
        summary = json.loads(output.stdout)
        summary["explain"] = [*summary.get("explain", []), *lines]
        return replace(output, stdout=json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return replace(output, stdout=output.stdout + "".join(f"  {line}\n" for line in lines))


def _served(args: argparse.Namespace, config: Config, globs: list[str] | None) -> OnceOutput | None:
    """Return what the daemon that serves the workspace answers to this --once (its models and
    index are loaded), or None to assemble here: no daemon, a socket nobody (or a stranger)
    answers on, no answer in time, a bad answer, or a daemon run with other options."""
    from assembler.daemon.control import NotServed, OnceRequest, ask_daemon, options_digest
    from assembler.daemon.lock import lock_holder
    from assembler.hosts.registry import HOSTS

    holder = lock_holder(config.state_dir)
    if holder is None:
        log.debug("no daemon serves %s; assembling here", config.workspace)
        return None
    request = OnceRequest(
        options=options_digest(config, HOSTS, globs),
        now=args.now,
        dry_run=args.dry_run,
        explain=args.explain,
        as_json=args.json,
        log_level=logging.getLogger().getEffectiveLevel(),
    )
    try:
        output = ask_daemon(config.state_dir, request, pid=holder or None)
    except NotServed as why:
        # Other options are the user's doing (another --config, --transcripts): said at -v.
        level = logging.INFO if why.reason == "options" else logging.DEBUG
        log.log(level, "the daemon (pid %d) did not assemble (%s); assembling here", holder, why)
        return None
    log.debug("assembled by the daemon (pid %d)", holder)
    return output


def _assembled_here(
    args: argparse.Namespace, config: Config, now: datetime, globs: list[str] | None
) -> OnceOutput:
    """Assemble in this process (loading the models and the index) and return what --once
    prints."""
    from assembler.assembly.log import record_run  # numpy, through the mood history
    from assembler.assembly.pipeline import run_once
    from assembler.daemon.control import once_output
    from assembler.hosts.registry import HOSTS

    started = time.perf_counter()
    assembly = run_once(config, hosts=HOSTS, now=now, dry_run=args.dry_run, transcript_globs=globs)
    if not args.dry_run:  # the status page's log of assemblies and the mood history
        record_run(config, assembly, "once", time.perf_counter() - started)
    return once_output(assembly, as_json=args.json, explain=args.explain, dry_run=args.dry_run)


def _print_once(output: OnceOutput) -> int:
    """Print what --once says, wherever it was assembled; return 1 if a source failed.

    An unreadable transcript does not stop the run (the file is written and says so), but the
    exit code tells cron and heartbeat scripts that something needs fixing.
    """
    for level, name, message in output.log:  # a served run's, as they would have come here
        logging.getLogger(name).log(level, "%s", message)
    sys.stdout.write(output.stdout)
    for warning in output.warnings:
        log.warning("%s", warning)
    for error in output.errors:
        print(f"assemble: error: {error}", file=sys.stderr)
    return EXIT_USER_ERROR if output.errors else 0


def _explicit_transcripts(args: argparse.Namespace) -> list[str] | None:
    """Return --transcripts as absolute globs (typed in a shell: relative to its folder), or
    None when not given. Raise TranscriptError if one matches no file."""
    from assembler.transcripts.read import resolve_explicit_sources

    globs = getattr(args, "transcripts", None)
    if not globs:
        return None
    return resolve_explicit_sources(globs, Path.cwd())


def _cmd_show(args: argparse.Namespace) -> int:
    config = load(args)
    now = parse_now(args.now, config)
    if args.json:
        args.format = "json"
    if args.format == "prefix":
        from assembler.pad.publish import prefix_for

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
        from assembler.daemon.control import recorded_lines

        lines += recorded_lines(meta)
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
    from assembler.hosts.registry import HOSTS

    config = load(args)
    globs = _explicit_transcripts(args)
    configure_logging(args.verbose, args.quiet)
    run_daemon(config, hosts=HOSTS, transcript_globs=globs)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "once": _cmd_once,
    "show": _cmd_show,
    "check": _cmd_check,
    "daemon": _cmd_daemon,
}
