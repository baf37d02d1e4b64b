"""The scratchpad entries hosts keep in their sessions: OpenClaw's `openclaw:scratchpad*`
custom entries (what its own scratchpad tool saved), found in its session JSONL files and its
SQLite store. The newest one becomes section main (`Scratchpad.import_external_entries`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from assembler.fsutil import load_json, open_regular
from assembler.hosts.openclaw.store import store_custom_entries
from assembler.pad.sections import ExternalEntries, ExternalEntry, Scratchpad
from assembler.pad.tool_calls import Answer
from assembler.transcripts.message import CLOCK_SKEW, parse_time

OPENCLAW_SCRATCHPAD_TYPE: Final = "openclaw:scratchpad"


# Only this much of the end of each OpenClaw transcript is searched for scratchpad entries; an
# older entry was imported by an earlier run (they run every few minutes) or is outdated.
OPENCLAW_TAIL_BYTES: Final = 4 * 1024 * 1024


def is_openclaw_scratchpad_entry(entry: object) -> bool:
    """Given a session entry, return whether it is a custom `openclaw:scratchpad*` entry."""
    if not isinstance(entry, Mapping):
        return False
    kind = entry.get("customType")
    return (
        entry.get("type", "custom") == "custom"
        and isinstance(kind, str)
        and kind.startswith(OPENCLAW_SCRATCHPAD_TYPE)
    )


def openclaw_entry_text(entry: Mapping[str, Any]) -> str | None:
    """Given a scratchpad entry, return its text (`data`, `data.content` or `data.text`)."""
    data = entry.get("data")
    if isinstance(data, str):
        return data
    if isinstance(data, Mapping):
        for key in ("content", "text"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return None


def openclaw_entry_time(entry: Mapping[str, Any]) -> datetime | None:
    """Given a session entry, return its timestamp (the entry's, else `data.timestamp`)."""
    moment = parse_time(entry.get("timestamp"))
    data = entry.get("data")
    if moment is None and isinstance(data, Mapping):
        moment = parse_time(data.get("timestamp"))
    return moment


def read_openclaw_scratchpad_entries(
    paths: Iterable[Path | str], *, tail_bytes: int | None = None
) -> list[dict[str, Any]]:
    """Given OpenClaw session JSONL files (or agent databases, `.sqlite`), return their
    `openclaw:scratchpad*` custom entries.

    With `tail_bytes`, only the last that many bytes of each file are read (from the first
    whole line in them), so the cost follows the tail, not the file. Entries come in file
    order, files in the order given. Unreadable files and bad lines are skipped.
    """
    needle = OPENCLAW_SCRATCHPAD_TYPE.encode()
    found: list[dict[str, Any]] = []
    for path in paths:
        if str(path).endswith(".sqlite"):  # OpenClaw's store (2026.9 and later)
            for value in store_custom_entries(Path(path), OPENCLAW_SCRATCHPAD_TYPE):
                if isinstance(value, dict) and is_openclaw_scratchpad_entry(value):
                    found.append(value)
            continue
        try:
            # Not blocking, and only a regular file: a named pipe would stop the run for good.
            with os.fdopen(open_regular(Path(path), follow_links=True), "rb") as handle:
                if tail_bytes is not None:
                    size = os.fstat(handle.fileno()).st_size
                    if size > tail_bytes:
                        handle.seek(size - tail_bytes - 1)
                        handle.readline()  # the rest of a line cut by the seek
                for raw in handle:
                    if needle not in raw:
                        continue  # most lines are messages; skip them unparsed
                    try:
                        value = load_json(raw)
                    except ValueError:  # not JSON, or nested too deep
                        continue
                    if isinstance(value, dict) and is_openclaw_scratchpad_entry(value):
                        found.append(value)
        except OSError:
            continue
    return found


# How an entry is named in the journal and in messages.
ENTRY_SOURCE: Final = "openclaw"
ENTRY_NAME: Final = "OpenClaw scratchpad entry"


def external_entries(entries: Iterable[Mapping[str, Any]]) -> ExternalEntries:
    """Given OpenClaw session entries, return its scratchpad entries among them that have a
    time and a text (`data` as a string, or its `content` or `text`), in order."""
    found: list[ExternalEntry] = []
    for entry in entries:
        if not is_openclaw_scratchpad_entry(entry):
            continue
        text = openclaw_entry_text(entry)
        moment = openclaw_entry_time(entry)
        if text is not None and moment is not None:
            found.append(ExternalEntry(moment, text))
    return ExternalEntries(found, ENTRY_SOURCE, ENTRY_NAME)


def import_entries(pad: Scratchpad, entries: Iterable[Mapping[str, Any]]) -> Answer:
    """Given the agent's sections and OpenClaw session entries, import the newest scratchpad
    entry among them as section main (see `Scratchpad.import_external_entries`)."""
    return pad.import_external_entries(external_entries(entries))


def scratchpad_entries(paths: Sequence[Path], now: datetime) -> ExternalEntries:
    """Given the OpenClaw transcripts read (JSONL files or agent databases) and the clock,
    return the scratchpad entries at their ends that were written by `now`."""
    entries = read_openclaw_scratchpad_entries(paths, tail_bytes=OPENCLAW_TAIL_BYTES)
    # The run's clock is a real clock: an entry the host wrote after it (a run with `--now` in
    # the past) was not written yet.
    return external_entries(e for e in entries if not _after_clock(openclaw_entry_time(e), now))


def _after_clock(moment: datetime | None, now: datetime) -> bool:
    """Whether a host entry stamped `moment` was written after `now`, beyond the clock skew
    the transcript readers allow (the same rule as for the messages beside it)."""
    if moment is None:
        return False
    moment = moment if moment.tzinfo else moment.replace(tzinfo=now.tzinfo)
    try:
        return moment - now.astimezone(moment.tzinfo) > CLOCK_SKEW
    except (OverflowError, TypeError):
        return False
