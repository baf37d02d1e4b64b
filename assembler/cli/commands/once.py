"""`assemble --once`: one assembly of SCRATCHPAD.md, by the workspace's daemon when one serves it
(its models and index are loaded), else in this process."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.cli.common import EXIT_USER_ERROR, load, log, parse_now
from assembler.config.files import user_config_dir
from assembler.daemon.control import NotServed, OnceRequest, ask_daemon, options_digest
from assembler.daemon.lock import lock_holder
from assembler.daemon.output import once_output
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import resolve_explicit_sources, where_looked

if TYPE_CHECKING:
    from assembler.config.schema import Config
    from assembler.daemon.output import OnceOutput


def run(args: argparse.Namespace) -> int:
    config = load(args)
    now = parse_now(args.now, config)
    globs = explicit_transcripts(args)
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
        output = ask_daemon(config.state_dir, request, pid=holder)
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
    # Here, not at the top: the daemon answers most runs, and then nothing of the pipeline
    # (numpy, the models) is loaded in this process.
    from assembler.assembly.log import record_run
    from assembler.assembly.pipeline import run_once

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


def explicit_transcripts(args: argparse.Namespace) -> list[str] | None:
    """Return --transcripts as absolute globs (typed in a shell: relative to its folder), or
    None when not given. Raise TranscriptError if one matches no file."""
    globs = getattr(args, "transcripts", None)
    if not globs:
        return None
    return resolve_explicit_sources(globs, Path.cwd())
