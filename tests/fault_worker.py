"""The processes that tests/test_faults.py kills: one write path each, acknowledging every write.

Run as `python tests/fault_worker.py MODE ACK ARGS...`. Each mode sets itself up (imports, opens
its files), prints `ready`, waits for a line on stdin (the start signal, so that several
workers really overlap and the kill timer starts when the writes do), then writes. After each
write has returned, it appends one line to its ack file with a single `os.write`, so a line
there is a write the program acknowledged; a kill between the write and its ack only makes
the write unacknowledged, never the ack a lie.

Modes:
    append  ACK JOURNAL PREFIX COUNT SECTIONS MAX_EVENTS MAX_BYTES
        `Scratchpad.append` of PREFIX-0 .. PREFIX-(COUNT-1), round-robin over the
        comma-separated SECTIONS, on a Journal with those compaction thresholds.
    render  ACK WORKSPACE COUNT|STOPFILE
        `run_once` COUNT times, or until STOPFILE exists.
    index   ACK WORKSPACE DELAY
        `MemoryIndex.sync` with the fake embedder (DELAY seconds per batch of 5); acks are
        the progress callback's `stage done total`, called after each commit.
    obs     ACK STORE SEED COUNT
        `ObservationStore.put`/`park` of COUNT large observations (text of 0.2 to 2.6
        million characters, or 0.15 to 1.9 MB of bytes); acks are `id sha256`.
    edit    ACK SCRATCHPAD PREFIX COUNT SEED MAX_PAUSE
        An agent editing the file with a file tool: read it, add the line PREFIX-k inside the
        findings section's markers, write it back (in place, or to a temp file renamed over
        it, as an editor's atomic save does); acks are `PREFIX-k inplace|replace`.

With FAULT_FSYNC_DELAY=SECONDS in the environment every `os.fsync` takes that much longer, as
on a slow disk: the moments when a temp file exists or a line is written but not yet durable
get wide enough for random kills to land in them often.
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.hosts.registry import HOSTS

SOURCES = ["MEMORY.md", "memory/**/*.md"]


class Acks:
    """An append-only file of acknowledgement lines, each written whole by one os.write."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, line: str) -> None:
        os.write(self.fd, f"{line}\n".encode())


def ready() -> None:
    """Say the setup is done and wait for the start signal (EOF also starts)."""
    print("ready", flush=True)
    sys.stdin.readline()


def append(
    ack: str, journal: str, prefix: str, count: str, sections: str, events: str, size: str
) -> None:
    from assembler.pad.journal import Journal
    from assembler.pad.sections import Scratchpad

    pad = Scratchpad(Journal(journal, max_events=int(events), max_bytes=int(size)), agent_cap=10**9)
    names = sections.split(",")
    acks = Acks(ack)
    ready()
    for i in range(int(count)):
        line = f"{prefix}-{i}"
        answer = pad.append(line, section=names[i % len(names)], source=prefix)
        if not answer.ok:
            sys.exit(f"append {line} refused: {answer.message}")
        acks(line)


def render(ack: str, workspace: str, until: str) -> None:
    from assembler.assembly.pipeline import run_once
    from assembler.clock import local_timezone
    from assembler.config.files import load_config

    config = load_config(Path(workspace))
    zone = local_timezone(config.time.timezone)
    acks = Acks(ack)
    count = int(until) if until.isdigit() else None
    stop = Path(until)
    ready()
    done = 0
    while done < count if count is not None else not stop.exists():
        run_once(config, now=datetime.now(zone), hosts=HOSTS)
        done += 1
        acks(f"render {done}")


def index(ack: str, workspace: str, delay: str) -> None:
    from fakes import FakeEmbedder

    from assembler.memory.index import MemoryIndex

    root = Path(workspace)
    acks = Acks(ack)
    memory = MemoryIndex(
        root,
        db_path=root / ".scratchpad" / "index.sqlite",
        sources=SOURCES,
        embedder=FakeEmbedder(delay=float(delay)),
        chunk_tokens=60,
        overlap_tokens=10,
        embed_batch=5,
    )
    ready()
    memory.sync(progress=lambda stage, done, total: acks(f"{stage} {done} {total}"))
    acks("synced")


def observation(seed: str, number: int) -> tuple[Any, str]:
    """Return the number-th large observation of a seed and the sha256 of its content."""
    rng = random.Random(f"{seed}-{number}")
    raw = rng.randbytes(rng.randrange(150_000, 1_900_000))
    if number % 3 == 2:
        return raw, hashlib.sha256(raw).hexdigest()
    text = base64.encodebytes(raw).decode("ascii")  # lines of 76 characters
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if number % 3 == 0:
        return {"ok": True, "content": text, "path": f"/var/log/fault-{number}.log"}, digest
    return text, digest


def obs(ack: str, store_path: str, seed: str, count: str) -> None:
    from assembler.observations.store import ObservationStore

    store = ObservationStore(Path(store_path), ttl=timedelta(days=7))
    acks = Acks(ack)
    ready()
    for number in range(int(count)):
        value, digest = observation(seed, number)
        if number % 2:
            result = store.park(value, executor="fault")
        else:
            result = store.put(value, executor="fault")
        acks(f"{result['scratchpad_id']} {digest}")


def edit(ack: str, path: str, prefix: str, count: str, seed: str, max_pause: str) -> None:
    from assembler.file.codec import end_marker

    target = Path(path)
    marker = end_marker("findings")
    rng = random.Random(seed)
    acks = Acks(ack)
    ready()
    for k in range(int(count)):
        time.sleep(rng.uniform(0, float(max_pause)))  # the agent's own pace, not a wait
        lines = target.read_text(encoding="utf-8").split("\n")
        if marker not in lines:
            sys.exit(f"edit {prefix}-{k}: no findings section in {target}")
        lines.insert(lines.index(marker), f"{prefix}-{k}")
        text = "\n".join(lines)
        if rng.random() < 0.5:
            target.write_text(text, encoding="utf-8")  # open, truncate, write: most file tools
            kind = "inplace"
        else:
            temp = target.with_name(target.name + ".editing~")
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, target)
            kind = "replace"
        acks(f"{prefix}-{k} {kind}")


MODES: dict[str, Callable[..., None]] = {
    "append": append,
    "render": render,
    "index": index,
    "obs": obs,
    "edit": edit,
}


def slow_fsync(delay: float) -> None:
    """Make every os.fsync (the program's, looked up at each call) take `delay` seconds more."""
    fsync = os.fsync

    def slow(fd: Any) -> None:
        time.sleep(delay)
        fsync(fd)

    os.fsync = slow


if __name__ == "__main__":
    if float(os.environ.get("FAULT_FSYNC_DELAY") or 0) > 0:
        slow_fsync(float(os.environ["FAULT_FSYNC_DELAY"]))
    MODES[sys.argv[1]](*sys.argv[2:])
