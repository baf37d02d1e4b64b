"""The recent messages of an agent's sessions: the transcript sources a config or the hosts
name, matched and read newest first (JSONL from the end, a host's database by its newest
rows), and their messages merged, oldest first, within the window and the clock.
"""

from __future__ import annotations

import glob
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.errors import TranscriptError
from assembler.fsutil import allowed_root, glob_paths, open_regular, resolves_within
from assembler.transcripts import hosts as host_set
from assembler.transcripts.hosts import Hosts
from assembler.transcripts.jsonl import read_jsonl
from assembler.transcripts.message import CLOCK_SKEW, Message, Summary, ZoneSeen
from assembler.transcripts.reader import (
    OPEN_FACTOR,
    SQLITE_MAGIC,
    Format,
    Outcome,
    SourceReport,
    Unit,
    failed,
    mtime,
    mtime_ns,
)
from assembler.transcripts.repeats import without_repeats


@dataclass
class TranscriptRead:
    """The messages of all sources, oldest first, and what each source yielded."""

    messages: list[Message] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)
    # What the hosts wrote about the sessions (compaction summaries on the active branch,
    # session titles), oldest first.
    summaries: list[Summary] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The newest zone the hosts stamped on turns of their own (the human's messages carry
    # theirs in `Message.utc_offset`).
    zone: ZoneSeen | None = None


# --------------------------------------------------------------------------------------------
# Reading: the public entry point.
# --------------------------------------------------------------------------------------------


def read_recent(
    sources: Sequence[str],
    *,
    hosts: Hosts,
    base: Path,
    now: datetime,
    max_messages: int,
    lookback: timedelta | None,
    max_files: int = 10,
    fmt: Format = "auto",
    skew: timedelta = CLOCK_SKEW,
    zone_scan: bool = False,
) -> TranscriptRead:
    """Given transcript glob patterns and the hosts that may have written them, return the
    newest human and assistant messages in them, as they stood at `now`.

    Patterns expand `~`, resolve relative ones against `base` and support `**`. What a glob
    matches that the hosts write beside their sessions (OpenClaw's run traces, checkpoint
    copies, archives and index) is not read, nor are the sessions OpenClaw's `sessions.json`
    gives to its cron jobs, subagents and hooks. Matching files are read from their end, newest
    (by mtime) first, until `max_files` of them yielded a human message: a session in which only
    the host speaks (heartbeat polls, cron prompts) does not count and its messages are not
    kept, and reading stops after `4 x max_files` files or at the first file last written
    before `now - lookback`. Their messages are merged oldest first and the newest
    `max_messages` kept, none older than `now - lookback` (`lookback=None`: no age limit).
    `fmt` forces one format instead of detecting it per file. Nothing stamped after `now +
    skew` is read: no message, no compaction (the entries it replaced are read instead), no
    summary or title; `now` is a clock, and a run with a past `now` sees what was there then.

    A user turn whose text comes back three times in its session is a host's or a plugin's
    prompt, not the human's, and is left out with its replies (`repeats`). With `zone_scan`,
    a session whose window shows no zone of the human's has the end of its file scanned for
    the newest stamp that does (`Reader.zone_of`): a caller that knows no zone yet asks for it.

    Raise nothing for unreadable sources: a pattern that matches nothing becomes a warning, a
    file that cannot be read gets a `SourceReport.error`, and corrupt lines (a message whose
    time cannot exist, such as year 1 at +14:00, is one) are counted in
    `SourceReport.bad_lines`. A long message's `text` is its head and tail (`clip_middle`).
    Raise TranscriptError only when `fmt` is a format none of the hosts writes.
    """
    host_set.check_format(hosts, fmt)
    result = TranscriptRead()
    # A naive `now` is local time by Python's convention; everything below compares in UTC.
    now_utc = now.astimezone(UTC)
    cutoff = now_utc - lookback if lookback is not None else None
    until = now_utc + skew
    limit = max(max_messages, 0)

    paths, warnings, refused = _match_sources(hosts, sources, base)
    result.warnings.extend(warnings)
    result.sources.extend(refused)
    wanted = max(max_files, 0)

    units: list[Unit] = []
    with_messages = 0
    for opened, path in enumerate(_newest_first(paths)[: wanted * OPEN_FACTOR]):
        if with_messages >= wanted:
            break
        if opened >= wanted and cutoff is not None and mtime(path) < cutoff:
            break  # last written before the window: neither it nor older files have a message
        outcome = _read_source(hosts, path, fmt, cutoff, until, limit, max(max_files, 1), zone_scan)
        for unit in outcome.units:
            # A text the session repeats three times is a prompt of the host's or a plugin's.
            unit.messages = without_repeats(unit.messages)
            unit.human = unit.human and any(m.role == "user" for m in unit.messages)
            if not unit.human:
                # Only the host spoke (a cron run, a heartbeat): its replies are not the
                # conversation either.
                unit.messages, unit.summaries = [], []
        useful = any(unit.messages for unit in outcome.units)
        with_messages += useful
        report = outcome.report
        # Past the first `max_files`, an empty file is only listed when something is wrong with
        # it: twenty heartbeat sessions would otherwise crowd the frontmatter's `sources`.
        if opened < wanted or useful or report.error or report.bad_lines:
            result.sources.append(report)
        units.extend(outcome.units)

    result.messages = _merge(units, limit)
    taken = Counter(message.source for message in result.messages)
    for report in result.sources:
        report.messages = taken.get(report.path, 0)
    # Summaries are listed oldest first, like the messages; undated ones (a title whose last
    # message was not read) first of all. Sessions were read newest first: on equal times the
    # older session's comes first.
    for unit in reversed(units):
        result.summaries.extend(unit.summaries)
    zones = [unit.zone for unit in units if unit.zone is not None]
    if zones:
        result.zone = max(zones, key=lambda z: z.at or datetime.min.replace(tzinfo=UTC))
    result.summaries.sort(key=lambda s: s.timestamp or datetime.min.replace(tzinfo=UTC))
    return result


def default_sources(
    hosts: Hosts, workspace: Path, state_dir: Path, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Given the hosts, the workspace and its state folder, return where the hosts keep its
    transcripts, for a config that names none (each host's `sources`): only places that
    exist, as globs that match only themselves. `environ` defaults to the process environment.
    """
    env = os.environ if environ is None else environ
    return host_set.host_sources(hosts, workspace, state_dir, env)


def sources_to_read(
    hosts: Hosts,
    configured: Sequence[str],
    workspace: Path,
    state_dir: Path,
    transcript_globs: Sequence[str] | None = None,
) -> list[str]:
    """Given the hosts, the sources the config names (`transcripts.sources`), the workspace,
    its state folder and --transcripts, return the globs a run reads: --transcripts, else the
    config's, else the hosts' own places (`default_sources`)."""
    return list(transcript_globs or configured or default_sources(hosts, workspace, state_dir))


def where_looked(
    hosts: Hosts,
    workspace: Path,
    state_dir: Path,
    user_config: Path,
    configured: Sequence[str],
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """Given the hosts, the workspace, its state folder, the user's own config file, the sources the
    config (or --transcripts) names and the environment, return where the transcripts were
    looked for, one line each, for --explain: the globs named, or else each host's places
    (and, from a host that records candidates, each candidate and why it was skipped), then
    how to read transcripts kept elsewhere."""
    if configured:
        return [f"transcripts: named in the config or --transcripts: {', '.join(configured)}"]
    env = os.environ if environ is None else environ
    lines = ["transcripts: none named in the config, so the hosts' own places were looked in"]
    for host in hosts:
        found = host.sources(workspace, state_dir, env)
        count = f"{len(found)} found" if found else "none found"
        lines.append(f"transcripts: {host.label}: {count}")
        # A host that records candidates says where it looked and why each was skipped.
        lines += [
            f"transcripts: {host.label}: {line}" for line in host.looked(workspace, state_dir, env)
        ]
    lines.append(
        f"transcripts: to read transcripts kept elsewhere, name them in your own config "
        f'({user_config}), e.g. transcripts.sources = ["/path/to/folder/*.jsonl"]; a config '
        "in the workspace may not name places outside it"
    )
    return lines


def _match_sources(
    hosts: Hosts, sources: Sequence[str], base: Path
) -> tuple[list[Path], list[str], list[SourceReport]]:
    """Given the hosts and glob patterns, return the distinct paths they match, a warning per
    empty one, and a failed report per match that resolves outside the folder its pattern
    points into (a link the agent planted among the transcripts: see `fsutil.allowed_root`);
    those are not read.

    A glob's matches leave out what a host writes beside its sessions without it being one the
    human speaks in (`hosts.is_side_file`: run traces, copies, the host's own sessions); a
    path named without a glob is read whatever it is.
    """
    paths: list[Path] = []
    seen: set[str] = set()
    warnings: list[str] = []
    refused: list[SourceReport] = []
    side_files: dict[Any, Any] = {}
    for pattern in sources:
        root = allowed_root(pattern, base)
        expanded = os.path.expanduser(pattern)
        if not os.path.isabs(expanded):
            # The base folder's own name may contain glob characters; only the pattern may glob.
            expanded = os.path.join(glob.escape(str(base)), expanded)
        # `**` never walks into a link to a folder: two links to `.` would never end.
        matches = glob_paths(expanded)
        if not matches:
            # Also reached by --transcripts globs in a daemon when their files go away.
            warnings.append(
                f"Transcript source {pattern!r} matched no files in {base}; check the pattern "
                "(in 'transcripts.sources' or --transcripts)."
            )
        globbed = glob.has_magic(expanded)
        for match in matches:
            key = os.path.normpath(match)
            if key in seen:
                continue
            seen.add(key)
            folder, name = os.path.split(key)
            if globbed and host_set.is_side_file(hosts, Path(folder), name, side_files):
                continue
            if not resolves_within(Path(key), root):
                error = (
                    f"Transcript {key} is a link to {os.path.realpath(key)}, outside {root}, so "
                    "it is not read; remove the link or name its target in your own config."
                )
                refused.append(SourceReport(path=key, format="unknown", error=error))
                continue
            paths.append(Path(key))
    return paths, warnings, refused


def resolve_explicit_sources(patterns: Sequence[str], cwd: Path) -> list[str]:
    """Given `--transcripts` globs and the current folder, return them as absolute patterns.

    A user types these paths in a shell, so a relative glob means the current folder, not the
    workspace (as in the config); `~` is expanded and an absolute glob kept as it is.
    Raise TranscriptError naming the glob and the folder it was resolved against if a glob
    matches no file: an explicit source that reads nothing would write an empty scratchpad.
    """
    resolved: list[str] = []
    for pattern in patterns:
        expanded = os.path.expanduser(pattern)
        if not os.path.isabs(expanded):
            # The folder's own name may contain glob characters; only the pattern may glob.
            expanded = os.path.join(glob.escape(str(cwd)), expanded)
        if not glob_paths(expanded):
            raise TranscriptError(
                f"--transcripts {pattern!r} matches no file (resolved against {cwd}); "
                "check the path, relative to the current folder or absolute"
            )
        resolved.append(expanded)
    return resolved


def _newest_first(paths: list[Path]) -> list[Path]:
    """Given paths, return them by modification time, newest first (unstat-able ones last)."""
    return sorted(paths, key=lambda path: (-mtime_ns(path), str(path)))


def _read_source(
    hosts: Hosts,
    path: Path,
    fmt: Format,
    cutoff: datetime | None,
    until: datetime,
    limit: int,
    max_sessions: int,
    zone_scan: bool = False,
) -> Outcome:
    """Given one matched path, return its messages, or a report whose `error` says what to do."""
    try:
        if path.is_dir():
            return failed(
                path,
                fmt,
                f"Transcript source {path} is a directory; use a pattern that matches "
                f"the files in it, such as '{path}/*.jsonl'.",
            )
        # Not blocking, and only a regular file: a named pipe would stop the run for good.
        with os.fdopen(open_regular(path, follow_links=True), "rb") as file:
            magic = file.read(len(SQLITE_MAGIC))
        store = host_set.store_reader(hosts, path, magic, fmt)
        if store is not None:
            return store(path, cutoff, until, limit, max_sessions)
        if magic == SQLITE_MAGIC:
            forced = " or ".join(repr(name) for name in host_set.store_formats(hosts))
            return failed(
                path,
                fmt,
                f"{path} is an SQLite database but 'transcripts.format' forces {fmt!r}; "
                f"set it to {forced} or 'auto'.",
            )
        return read_jsonl(hosts, path, fmt, cutoff, until, limit, zone_scan=zone_scan)
    except PermissionError:
        return failed(
            path,
            fmt,
            f"Cannot read transcript {path}: permission denied; make it readable by this user "
            "or remove it from 'transcripts.sources'.",
        )
    except OSError as exc:
        return failed(
            path,
            fmt,
            f"Cannot read transcript {path}: {exc.strerror or exc}; check the file "
            "or remove it from 'transcripts.sources'.",
        )


def _merge(units: list[Unit], limit: int) -> list[Message]:
    """Given the sessions read, return their newest `limit` messages, oldest first.

    A message without a timestamp sorts with the next timestamped message of its session (else
    the previous one, else the file's mtime): it is never older than its neighbours and it keeps
    its place in the file. A message read twice (the same session, role, time and text: a
    session OpenClaw imported into its database while its file is still there) is kept once.
    """
    keyed: list[tuple[datetime, int, int, Message]] = []
    seen: set[tuple[str, str, datetime, str]] = set()
    for unit_index, unit in enumerate(units):
        times = _effective_times(unit)
        for position, (message, when) in enumerate(zip(unit.messages, times, strict=True)):
            if message.session_id is not None and message.timestamp is not None:
                identity = (message.session_id, message.role, message.timestamp, message.text)
                if identity in seen:
                    continue
                seen.add(identity)
            # Units come newest file first; on equal times the older file's message goes first.
            keyed.append((when, -unit_index, position, message))
    keyed.sort(key=lambda item: item[:3])
    kept = keyed[-limit:] if limit > 0 else []
    return [item[3] for item in kept]


def _effective_times(unit: Unit) -> list[datetime]:
    times: list[datetime | None] = [message.timestamp for message in unit.messages]
    following: datetime | None = None
    for index in range(len(times) - 1, -1, -1):
        if times[index] is None:
            times[index] = following
        else:
            following = times[index]
    previous: datetime | None = None
    result: list[datetime] = []
    for when in times:
        if when is None:
            when = previous or unit.fallback_time
        previous = when
        result.append(when)
    return result


# --------------------------------------------------------------------------------------------
# Reading JSONL from the end.
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Walking the active branch backwards.
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# The formats: which lines are entries, and which entries are messages.
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# OpenClaw's SQLite store.
# --------------------------------------------------------------------------------------------
