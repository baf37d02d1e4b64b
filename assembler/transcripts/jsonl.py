"""JSONL transcripts read from their end: lines in growing blocks from the last one back, the
format told from the first lines, and the entries fed to the format's reader along the active
branch, so a long session costs what its tail costs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from assembler.fsutil import open_regular
from assembler.transcripts import hosts as host_set
from assembler.transcripts.branch import BAD, BLANK, parse_line, walk
from assembler.transcripts.hosts import Hosts
from assembler.transcripts.message import ZoneSeen
from assembler.transcripts.reader import Format, Outcome, Reader, SourceReport, mtime

# The first block read from the end of a file; later blocks double up to the maximum, so a
# short tail costs one small read and a long walk back few system calls.
_FIRST_BLOCK = 64 * 1024


_MAX_BLOCK = 1024 * 1024


# The header line is read separately for format detection; a longer first line is left to the
# backward scan (Claude Code files can open with a huge pasted message).
_HEAD_LIMIT = 64 * 1024


# How many lines from the end may be looked at to detect a format the first line did not settle.
_DETECT_LINES = 1000


class _BackwardLines:
    """The lines of a binary file from its end back to its start, read in growing blocks.

    The size is fixed when reading starts: what the host appends meanwhile is left for the next
    run, and a last line still being written shows up as a line that does not parse.
    """

    def __init__(self, file: BinaryIO, end: int) -> None:
        self._file = file
        self._end = end
        self.bytes_read = 0
        self.line_start = end  # where the line yielded last starts in the file

    def __iter__(self) -> Iterator[bytes]:
        position = self._end
        block = _FIRST_BLOCK
        pieces: list[bytes] = []  # the start of the file's last unfinished line, newest first
        while position > 0:
            size = min(block, position)
            position -= size
            self._file.seek(position)
            chunk = self._file.read(size)
            self.bytes_read += len(chunk)
            if len(chunk) < size:
                # The file shrank under us (rewritten or truncated): what is left is not a
                # consistent tail, so stop here rather than stitch unrelated bytes together.
                return
            block = min(block * 2, _MAX_BLOCK)
            parts = chunk.split(b"\n")
            if len(parts) == 1:
                pieces.append(chunk)  # a line longer than the block: keep going back
                continue
            pieces.append(parts[-1])
            line, pieces = b"".join(reversed(pieces)), [parts[0]]
            start = position + len(chunk) - len(parts[-1])
            self.line_start = start
            yield line
            # A pasted line can be many megabytes: hold neither its pieces while it is parsed
            # nor the line itself while the lines after it are.
            del line
            for part in reversed(parts[1:-1]):
                start -= len(part) + 1
                self.line_start = start
                yield part
        self.line_start = 0
        yield b"".join(reversed(pieces))


def _read_head(file: BinaryIO, size: int) -> bytes | None:
    """Given an open file, return its first line, or None if it is longer than `_HEAD_LIMIT`."""
    file.seek(0)
    data = file.read(min(size, _HEAD_LIMIT))
    newline = data.find(b"\n")
    if newline >= 0:
        return data[:newline]
    return data if len(data) == size else None


def read_jsonl(
    hosts: Hosts,
    path: Path,
    fmt: Format,
    cutoff: datetime | None,
    until: datetime,
    limit: int,
    *,
    zone_scan: bool = False,
) -> Outcome:
    """Given the hosts that may have written it and a JSONL transcript, return the messages on
    its active branch, read from the end; with `zone_scan`, and no zone of the human's in what
    was read, the newest zone the end of the file shows (`_zone_before`)."""
    report = SourceReport(path=str(path), format=fmt)
    # Not blocking, and only a regular file: a named pipe would stop the run for good.
    with os.fdopen(open_regular(path, follow_links=True), "rb") as file:
        size = os.fstat(file.fileno()).st_size
        head = _read_head(file, size)
        head_value = parse_line(head) if head is not None else BAD
        head_bytes = min(size, _HEAD_LIMIT)
        backward = _BackwardLines(file, size)
        lines = iter(backward)

        # Lines looked at for detection are kept and replayed, so nothing is parsed twice.
        peeked: list[tuple[object, int, int]] = []
        chosen: Format | None = fmt if fmt != "auto" else host_set.classify(hosts, head_value)
        if chosen is None:
            for raw in lines:
                value = parse_line(raw)
                peeked.append((value, len(raw) + 1, backward.line_start))
                chosen = host_set.classify(hosts, value)
                if chosen is not None or len(peeked) >= _DETECT_LINES:
                    break
        if chosen is None:
            report.bytes_read = head_bytes + backward.bytes_read
            if head_value is BLANK and all(value is BLANK for value, _, _ in peeked):
                report.format = "unknown"  # empty: the host has not written to it yet
                return Outcome(report)
            report.error = (
                f"{path} is not a recognised transcript ({host_set.host_names(hosts)}); "
                "set 'transcripts.format' or remove it from 'transcripts.sources'."
            )
            return Outcome(report)

        report.format = chosen
        session_id = path.stem
        reader = host_set.make_reader(hosts, chosen, str(path), cutoff, limit, session_id, until)
        if isinstance(head_value, dict):
            reader.header(head_value)
        reader.entry_offset = lambda index: _entry_offset(file, index)

        def items() -> Iterator[tuple[object, int]]:
            for value, size, start in peeked:
                reader.line_start = start
                yield value, size
            for raw in lines:
                reader.line_start = backward.line_start
                yield parse_line(raw), len(raw) + 1

        report.bad_lines = walk(items(), reader)
        report.bytes_read = head_bytes + backward.bytes_read + reader.bytes_scanned
        stamped = any(m.utc_offset is not None for m in reader.found)
        if zone_scan and reader.stamps_zones and reader.zone is None and not stamped:
            reader.zone, scanned = _zone_before(file, size, reader)
            report.bytes_read += scanned
    return Outcome(report, units=[reader.unit(mtime(path))])


# How much of a session's end is scanned for the human's zone when the window shows none.
_ZONE_SCAN_BYTES = 4 * 1024 * 1024


def _zone_before(file: BinaryIO, end: int, reader: Reader) -> tuple[ZoneSeen | None, int]:
    """Given an open JSONL file, its size and its reader, return the newest zone its lines
    show (`Reader.zone_of`) and the bytes read for it: the human's clock, told hours before
    the window, still is. The scan reads the last `_ZONE_SCAN_BYTES` before `end`, forwards,
    parsing only the lines that may be user turns; lines it cannot parse are passed over."""
    begin = max(0, end - _ZONE_SCAN_BYTES)
    file.seek(begin)
    data = file.read(end - begin)
    found: ZoneSeen | None = None
    lines = data.split(b"\n")
    if begin > 0:
        lines = lines[1:]  # the first piece is the end of a line cut by the scan's start
    for raw in lines:
        if b'"user"' not in raw and not any(key in raw for key in reader.zone_line_keys):
            continue  # only user turns and the lines the reader names tell a zone
        value = parse_line(raw)
        if isinstance(value, dict):
            zone = reader.zone_of(value)
            if zone is not None and (
                reader.until is None or zone.at is None or zone.at <= reader.until
            ):
                found = zone
    return found, len(data)


def _entry_offset(file: BinaryIO, index: int) -> int | None:
    """Given an open JSONL file and an entry number, return where that entry starts, counting
    entries as pi did in version 1 sessions: every non-blank line that parses, the header 0."""
    file.seek(0)
    offset = 0
    count = 0
    for raw in file:
        if raw.strip() and parse_line(raw) is not BAD:
            if count == index:
                return offset
            count += 1
        offset += len(raw)
    return None
