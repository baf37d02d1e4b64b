"""What the CLI's commands share: the config from --workspace and --config, the
clock from --now, text from stdin, the exit codes, and printing a scratchpad answer."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from assembler.clock import local_timezone
from assembler.config.files import load_config
from assembler.config.schema import Config
from assembler.errors import AssemblerError

if TYPE_CHECKING:  # the pad and memory commands import them; `check` and the hook need not
    from assembler.memory.lifecycle import OpenMemory
    from assembler.pad.tool_calls import Answer

log = logging.getLogger("assembler")

EXIT_USER_ERROR = 1


EXIT_UNEXPECTED = 3


EXIT_INTERRUPTED = 130


def load(args: argparse.Namespace) -> Config:
    return load_config(args.workspace, args.config)


def parse_now(value: str | None, config: Config | None) -> datetime:
    """Given --now (None: the clock) and the config (None: no workspace, the machine's zone),
    return the time to run at; a time without a zone is in the config's."""
    tz = local_timezone(config.time.timezone if config is not None else "")
    if value is None:
        return datetime.now(tz)
    try:
        parsed = datetime.fromisoformat(value)
        parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)
        # A time the clock cannot carry in UTC (year 1 at +14:00) is no time to run at.
        parsed.astimezone(UTC)
    except (ValueError, OverflowError) as error:
        raise AssemblerError(
            f"--now {value!r} is not an ISO-8601 time; write it like 2026-03-02T23:25:00+11:00"
        ) from error
    return parsed


def read_text(value: str | None, what: str) -> str:
    """Return TEXT, or stdin for `-` (without the one newline a shell pipe adds)."""
    if value is None:
        raise AssemblerError(f"{what}: give the TEXT, or - to read it from stdin")
    if value != "-":
        return value
    text = read_stdin(what)
    return text[:-1] if text.endswith("\n") else text


def read_stdin(what: str) -> str:
    """Return all of stdin as text. Raise AssemblerError if it is not UTF-8: a replacement
    character in place of the bytes would be stored as if the agent had written it."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in place of stdin (in-process callers): text already
        return sys.stdin.read()
    return decoded(buffer.read(), what)


def decoded(data: bytes, what: str, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"line {line} of stdin" if line is not None else "stdin"
        raise AssemblerError(
            f"{what}: {where} is not UTF-8 text (byte {error.object[error.start]:#04x} at "
            f"offset {error.start}); convert it to UTF-8"
        ) from error


def print_answer(answer: Answer, as_json: bool) -> int:
    """Print a scratchpad answer (JSON, else its message); return 1 if the call was refused."""
    if as_json:
        print(answer.to_json())
    elif answer.ok:
        print(answer.message)
    else:
        print(f"assemble: {answer.message}", file=sys.stderr)
    return 0 if answer.ok else EXIT_USER_ERROR


def batches(texts: Sequence[str], stream: TextIO | None, size: int = 2048) -> Iterator[list[str]]:
    """Yield the texts in batches, so stdin of any length is scored without holding it all."""
    for start in range(0, len(texts), size):
        yield list(texts[start : start + size])
    if stream is None:
        return
    batch: list[str] = []
    buffer = getattr(stream, "buffer", None)
    lines = (
        (decoded(raw, "--stdin", number) for number, raw in enumerate(buffer, start=1))
        if buffer is not None
        else iter(stream)
    )
    for line in lines:
        batch.append(line.rstrip("\r\n"))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def log_fallback(memory: OpenMemory) -> None:
    """Given an open memory, log why it fell back to less than it was asked for (keyword
    search alone is a warning only when the user did not choose it)."""
    fallback = memory.fallback
    if fallback is not None:
        level = logging.INFO if fallback.kind == "keyword search" else logging.WARNING
        log.log(level, "degraded: %s", fallback.why)
