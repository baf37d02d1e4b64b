"""Fault injection on every write path: real processes killed with SIGKILL at random points,
concurrent writers, and hand edits racing renders, on real files and real SQLite.

Each test runs trials of worker processes (tests/fault_worker.py) that acknowledge each write
after it returned, kills some of them at random moments, and then checks that every
acknowledged write is present exactly once, that every file parses (JSON, JSONL, SQLite
`integrity_check`, SCRATCHPAD.md's frontmatter against its body hash) and that no temp file of
an atomic write is left once the file has been written again. Workers of the journal and
render tests run with a slow fsync (FAULT_FSYNC_DELAY, see the worker), so that kills often
land while a temp file exists or a write is not yet durable. Each test prints one summary:

    faults append: 8 trials, 18 kills, 725 acknowledged, 0 lost, 0 only in conflicts,
    0 duplicated, 0 torn lines, 0 unparsable, 0 temp files left (FAULT_SEED=1251465337)

"only in conflicts": acknowledged hand edits that reached `.scratchpad/conflicts/` but not the
journal (kept, so not lost); "torn lines": unreadable journal lines, in the journal or its
quarantine file, at most one per kill plus the torn lines the compaction test injects.

Run them alone with `pytest -m faults -s`. The random choices (which worker dies, when, what is
edited) come from one seed, printed in every summary and failure: `FAULT_SEED=123` replays
them (the machine's timing still varies). `FAULT_TRIALS=200` runs 200 trials of each test
instead of the few that keep CI fast. The first trial of a test kills nothing: it measures how
long the workers take, and the later kills are spread over that time.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import select
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from fakes import FakeEmbedder

from assembler.assembly.pipeline import run_once
from assembler.clock import local_timezone
from assembler.config.files import load_config
from assembler.errors import ObservationError
from assembler.file.codec import (
    body_hash,
    decode_sections,
    end_marker,
    find_agent_region,
    split_frontmatter,
)
from assembler.file.records import read_assembly_state
from assembler.hosts.registry import HOSTS
from assembler.memory.chunks import chunk_markdown
from assembler.memory.index import MemoryIndex
from assembler.observations.store import ObservationStore
from assembler.pad.journal import Journal
from assembler.pad.sections import Scratchpad

pytestmark = pytest.mark.faults

WORKER = Path(__file__).resolve().with_name("fault_worker.py")
SEED = int(os.environ.get("FAULT_SEED") or secrets.randbelow(2**32))
WHERE = f"FAULT_SEED={SEED}"  # in every failure message, to replay the run
START_TIMEOUT = 60.0  # seconds for a worker to import and set up, on a loaded machine
RUN_TIMEOUT = 120.0  # seconds for a worker to finish what it was given
# Kills are spread over this share of the time the first trial's workers took: nearly all of
# it, yet short enough that a kill planned at the end still finds the worker alive.
WINDOW_SHARE = 0.9
SOURCES = ["MEMORY.md", "memory/**/*.md"]


def trials(default: int) -> int:
    """Return how many trials to run: FAULT_TRIALS if set, else the test's CI default."""
    return max(2, int(os.environ.get("FAULT_TRIALS") or default))


def rng_for(test: str) -> random.Random:
    return random.Random(f"{SEED}:{test}")


# --------------------------------------------------------------------------------------------
# Workers and kills.
# --------------------------------------------------------------------------------------------


class Worker:
    """One tests/fault_worker.py process, its ack file and its stderr."""

    started: ClassVar[list[Worker]] = []  # ended by `end_workers` when a test fails midway

    def __init__(
        self, folder: Path, name: str, mode: str, *args: object, fsync_delay: float = 0.0
    ) -> None:
        self.name = name
        self.ack = folder / f"{name}.ack"
        self.log = folder / f"{name}.err"
        with self.log.open("w") as errors:
            self.process: subprocess.Popen[str] = subprocess.Popen(
                [sys.executable, str(WORKER), mode, str(self.ack), *map(str, args)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                env=os.environ | {"FAULT_FSYNC_DELAY": str(fsync_delay)},
            )
        Worker.started.append(self)

    def wait_ready(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        readable, _, _ = select.select([stdout], [], [], START_TIMEOUT)
        line = stdout.readline().strip() if readable else ""
        assert line == "ready", f"{WHERE}: worker {self.name} did not start: {self.errors()}"

    def go(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write("go\n")
        stdin.close()

    def kill(self) -> None:
        # Not yet reaped, so the pid cannot have been reused: a zombie just ignores it.
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)

    def finish(self) -> bool:
        """Wait for the worker; return whether SIGKILL ended it. Fail if it failed by itself."""
        code = self.process.wait(timeout=RUN_TIMEOUT)
        assert self.process.stdout is not None
        self.process.stdout.close()
        assert code in (0, -signal.SIGKILL), (
            f"{WHERE}: worker {self.name} exited {code}: {self.errors()}"
        )
        return code == -signal.SIGKILL

    def acks(self) -> list[str]:
        """Return the acknowledgement lines the worker wrote whole."""
        try:
            data = self.ack.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return data.split("\n")[:-1]  # a kill may not cut an os.write, but never trust it

    def errors(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-2000:]


@pytest.fixture(autouse=True)
def end_workers() -> Iterator[None]:
    """Kill the workers a failed test left running (a renderer waiting for its stop file)."""
    yield
    for worker in Worker.started:
        worker.kill()
        worker.process.wait(timeout=RUN_TIMEOUT)
        for pipe in (worker.process.stdin, worker.process.stdout):
            if pipe is not None:
                pipe.close()
    Worker.started.clear()


def run_and_kill(
    workers: Sequence[Worker], rng: random.Random, window: float | None, chance: float
) -> tuple[int, float]:
    """Start the workers together and SIGKILL each with probability `chance` at a moment drawn
    uniformly from [0, window] seconds after the start; return the kills and the seconds from
    the start until the last worker ended. No kills when `window` is None (the first trial).
    """
    for worker in workers:
        worker.wait_ready()
    plan: list[tuple[float, Worker]] = []
    if window is not None:
        # Drawn before anything depends on timing, so a seed gives the same plan every run.
        draws = [(rng.random(), rng.uniform(0, WINDOW_SHARE * window)) for _ in workers]
        plan = sorted(
            ((delay, w) for (p, delay), w in zip(draws, workers, strict=True) if p < chance),
            key=lambda item: item[0],
        )
    start = time.monotonic()
    for worker in workers:
        worker.go()
    for delay, worker in plan:
        pause = start + delay - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # the random moment of the kill, not a wait for anything
        worker.kill()
    killed = [worker.finish() for worker in workers]
    return sum(killed), time.monotonic() - start


# --------------------------------------------------------------------------------------------
# Counts, and the checks every test ends with.
# --------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """The counts of one test, and what went wrong, for its summary line and its assertions."""

    test: str
    trials: int = 0
    kills: int = 0
    acknowledged: int = 0
    torn: int = 0
    # What was lost or is present twice: the write, and where it was first found so.
    lost: dict[str, str] = field(default_factory=dict)
    duplicated: dict[str, str] = field(default_factory=dict)
    # Acknowledged writes kept only as a file in .scratchpad/conflicts/, not in the journal.
    conflicts: set[str] = field(default_factory=set)
    unparsable: list[str] = field(default_factory=list)
    temps: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"faults {self.test}: {self.trials} trials, {self.kills} kills, "
            f"{self.acknowledged} acknowledged, {len(self.lost)} lost, "
            f"{len(self.conflicts)} only in conflicts, "
            f"{len(self.duplicated)} duplicated, {self.torn} torn lines, "
            f"{len(self.unparsable)} unparsable, {len(self.temps)} temp files left "
            f"(FAULT_SEED={SEED})"
        )

    @property
    def failed(self) -> bool:
        return bool(self.lost or self.duplicated or self.unparsable)

    def lose(self, write: str, where: object) -> None:
        self.lost.setdefault(write, f"{write} ({where})")

    def duplicate(self, write: str, where: object) -> None:
        self.duplicated.setdefault(write, f"{write} ({where})")

    def check(self) -> None:
        """Print the summary, then fail on the first kind of problem found."""
        print(self.summary())
        where = f"{WHERE}, test {self.test}"
        assert not self.lost, (
            f"{where}: {len(self.lost)} acknowledged writes lost: {_few(self.lost.values())}"
        )
        assert not self.duplicated, (
            f"{where}: {len(self.duplicated)} writes present twice: "
            f"{_few(self.duplicated.values())}"
        )
        assert not self.unparsable, (
            f"{where}: {len(self.unparsable)} files do not parse: {_few(self.unparsable)}"
        )
        assert not self.temps, f"{where}: temp files left: {_few(self.temps)}"


def _few(found: Iterable[str], shown: int = 8) -> str:
    items = list(found)
    more = f" ... and {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(items[:shown]) + more


def is_temp(path: Path) -> bool:
    """Whether a file is a temp file of `atomic_write` (`.<name>.<pid>.<random>.tmp`)."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


def whole_render_problem(text: str, state_dir: Path) -> str | None:
    """Given the text of a rendered file and the state folder, return why it is not one whole
    render, or None. A render's record (last-assembly.json) is written before its swap, so
    the body of any file swapped in has a recorded hash."""
    yaml_text, body = split_frontmatter(text)
    if yaml_text is None:
        return "no frontmatter"
    try:
        meta = yaml.safe_load(yaml_text)
    except yaml.YAMLError as error:
        return f"frontmatter is not YAML ({error})"
    state = read_assembly_state(state_dir)
    records = ([state.pending] if state and state.pending else []) + (
        state.renders if state else []
    )
    if not isinstance(meta, dict) or body_hash(body) not in {r.body_sha256 for r in records}:
        return "body matches no render recorded (a torn or mixed file)"
    return None


def scan(root: Path, tally: Tally, *, torn_allowed: int, final: bool = True) -> None:
    """Check that every file under `root` parses; record temp files, torn journal lines (bad
    lines of sections.jsonl and its quarantine file, at most `torn_allowed` of them) and
    unparsable files in `tally`. Between trials (not `final`) temp files are not counted (a
    writer killed in this trial may have left one for the next write of its file to remove),
    and SCRATCHPAD.md may be a hand-edited file rather than a render (the test checks it).
    """
    tally.torn = 0
    tally.temps = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = str(path.relative_to(root))
        if is_temp(path):
            if final:
                tally.temps.append(name)
            continue
        if not final and name == "SCRATCHPAD.md":
            continue
        problem = _file_problem(path, tally)
        if problem is not None:
            tally.unparsable.append(f"{name}: {problem}")
    if tally.torn > torn_allowed:
        tally.unparsable.append(
            f"sections.jsonl: {tally.torn} unreadable lines (quarantined ones included), more "
            f"than the {torn_allowed} that kills and injected torn lines can explain"
        )


def _file_problem(path: Path, tally: Tally) -> str | None:
    name = path.name
    if name == "sections.jsonl.bad":  # the quarantine: journal lines that did not parse
        tally.torn += len(path.read_bytes().split(b"\n")) - 1
        return None
    if name.endswith((".lock", "-wal", "-shm", "-journal")):
        return None  # locks, SQLite's own files
    if ".sqlite." in name:
        return "a database was moved aside as unusable (index.sqlite.corrupt, ...)"
    if name.endswith(".sqlite"):
        return _sqlite_problem(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 ({error})"
    if name == "sections.jsonl":
        read = Journal(path).read()  # must not raise, whatever the file holds
        tally.torn += read.bad_lines
        return None
    try:
        if name.endswith(".jsonl"):
            for line in text.splitlines():
                if line.strip():
                    json.loads(line)
        elif name.endswith(".json"):
            json.loads(text)
        elif name.endswith(".toml"):
            tomllib.loads(text)
    except ValueError as error:
        return f"does not parse ({error})"
    if name == "SCRATCHPAD.md":
        return whole_render_problem(text, path.parent / ".scratchpad")
    if name == "rendered.md":
        return whole_render_problem(text, path.parent)
    return None


def _sqlite_problem(path: Path) -> str | None:
    try:
        db = sqlite3.connect(path)
        try:
            result = db.execute("PRAGMA integrity_check").fetchall()
        finally:
            db.close()
    except sqlite3.Error as error:
        return f"cannot be opened ({error})"
    return None if result == [("ok",)] else f"integrity_check: {result[:3]}"


def state_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace" / ".scratchpad"
    folder.mkdir(parents=True)
    return folder


# --------------------------------------------------------------------------------------------
# 1 and 2: appends to the journal, with and without compaction.
# --------------------------------------------------------------------------------------------

# Writers 0 and 1 share findings; 3 writes round-robin into findings and its own section.
APPEND_SECTIONS = ["findings", "findings", "main", "findings,errors"]
APPENDS_PER_WORKER = 40
TORN_PREFIX = '{"time":"2026-01-01T00:00:00+00:00","section":"findings","action":"app'


def folded_lines(journal: Path) -> Counter[str]:
    """Return every line of every section the journal folds to, with its count."""
    state = Journal(journal).fold()
    return Counter(line for s in state.values() for line in s.content.split("\n"))


def run_append_trials(
    tmp_path: Path,
    test: str,
    *,
    max_events: int,
    max_bytes: int,
    inject_torn: bool,
    fsync_delay: float,
    default_trials: int,
) -> Tally:
    rng = rng_for(test)
    state = state_folder(tmp_path)
    journal = state / "sections.jsonl"
    tally = Tally(test)
    window: float | None = None
    acked: list[str] = []
    injected: list[str] = []
    for trial in range(trials(default_trials)):
        if inject_torn and trial and rng.random() < 0.5:
            # What a writer killed in the middle of its line leaves: half a line, no newline
            # (after ending a line torn before it, as every writer does).
            torn = f"{TORN_PREFIX}-{trial}"
            ended = journal.read_bytes().endswith(b"\n")
            with journal.open("ab") as handle:
                handle.write(torn.encode() if ended else f"\n{torn}".encode())
            injected.append(torn)
        workers = [
            Worker(
                tmp_path,
                f"t{trial}w{n}",
                "append",
                journal,
                f"t{trial}w{n}",
                APPENDS_PER_WORKER,
                sections,
                max_events,
                max_bytes,
                fsync_delay=fsync_delay,
            )
            for n, sections in enumerate(APPEND_SECTIONS)
        ]
        kills, elapsed = run_and_kill(workers, rng, window, chance=0.75)
        window = window or elapsed
        tally.trials += 1
        tally.kills += kills
        acked = acked + [line for worker in workers for line in worker.acks()]
        check_appended(journal, acked, tally, f"trial {trial}")
        check_quarantine(journal, injected, tally, f"trial {trial}")
        scan(state.parent, tally, torn_allowed=tally.kills + len(injected), final=False)
        if tally.failed:
            break  # the first trial that goes wrong is the one to look at
    tally.acknowledged = len(acked)
    # The next compaction is the next write of the journal: it removes dead writers' temps.
    Journal(journal, max_events=max_events, max_bytes=max_bytes).compact(force=True)
    check_appended(journal, acked, tally, "after the last compaction")
    check_quarantine(journal, injected, tally, "after the last compaction")
    scan(tmp_path / "workspace", tally, torn_allowed=tally.kills + len(injected))
    return tally


def check_appended(journal: Path, acked: Sequence[str], tally: Tally, where: str) -> None:
    """Every acknowledged line is in the journal's sections, and no line is there twice."""
    lines = folded_lines(journal)
    for line in acked:
        if lines[line] == 0:
            tally.lose(line, where)
    for line, count in lines.items():
        if count > 1:
            tally.duplicate(line, f"{where}: {count} times")


def check_quarantine(journal: Path, injected: Sequence[str], tally: Tally, where: str) -> None:
    """Each injected torn line (unique) is in the journal or in the quarantine file, and there
    at most once. (Lines torn by kills may be alike; `scan` bounds their number.)"""
    try:
        quarantined = Counter(Journal(journal).quarantine_path.read_bytes().split(b"\n")[:-1])
    except FileNotFoundError:
        quarantined = Counter()
    in_journal = set(journal.read_bytes().split(b"\n"))
    for line in injected:
        raw = line.encode()
        if raw not in in_journal and quarantined[raw] == 0:
            tally.lose(f"torn line {line[-10:]!r}", f"{where}: gone, not quarantined")
        if quarantined[raw] > 1:
            tally.duplicate(
                f"torn line {line[-10:]!r}", f"{where}: quarantined {quarantined[raw]}x"
            )


def test_appends_killed_at_random_points_lose_no_acknowledged_line(tmp_path: Path) -> None:
    tally = run_append_trials(
        tmp_path,
        "append",
        max_events=10**6,
        max_bytes=10**9,
        inject_torn=False,
        fsync_delay=0.0,
        default_trials=8,
    )
    tally.check()
    assert tally.acknowledged > 0


def test_compactions_killed_at_random_points_lose_no_acknowledged_line(tmp_path: Path) -> None:
    # Tiny thresholds: nearly every few appends compact, so kills land inside compactions.
    tally = run_append_trials(
        tmp_path,
        "compaction",
        max_events=4,
        max_bytes=1024,
        inject_torn=True,
        fsync_delay=0.001,
        default_trials=6,
    )
    tally.check()
    assert tally.acknowledged > 0


# --------------------------------------------------------------------------------------------
# 3 and 6: renders, killed, and racing hand edits.
# --------------------------------------------------------------------------------------------


def render_workspace(tmp_path: Path) -> Path:
    """A workspace with a transcript, memory notes, and goal and findings sections."""
    workspace = state_folder(tmp_path).parent
    (workspace / "chat.jsonl").write_text(
        '{"role": "user", "content": "the api deploy fails with a 502 from the ingress"}\n'
        '{"role": "assistant", "content": "Checking the ingress logs."}\n'
    )
    (workspace / "memory").mkdir()
    for number in range(5):
        (workspace / "memory" / f"note-{number}.md").write_text(
            f"# Note {number}\n\nThe ingress returned 502 after deploy {number}.\n"
        )
    (workspace / "assembler.toml").write_text(
        '[transcripts]\nsources = ["*.jsonl"]\n[memory]\nmodel = "none"\n'
        "[caps]\nagent = 40000\ntotal = 50000\n"
    )
    pad = Scratchpad(Journal(workspace / ".scratchpad" / "sections.jsonl"), agent_cap=40000)
    pad.write("Fix the 502 from the ingress", section="goal")
    pad.write("seed finding", section="findings")
    return workspace


def render_now(workspace: Path) -> None:
    config = load_config(workspace)
    run_once(config, now=datetime.now(local_timezone(config.time.timezone)), hosts=HOSTS)


def add_line_to_findings(path: Path, line: str) -> str:
    """Edit SCRATCHPAD.md as an agent does: add a line inside the findings markers."""
    lines = path.read_text(encoding="utf-8").split("\n")
    lines.insert(lines.index(end_marker("findings")), line)
    text = "\n".join(lines)
    path.write_text(text, encoding="utf-8")
    return text


def pending_lines(path: Path) -> set[str]:
    """Return the lines of SCRATCHPAD.md's findings section (edits a render has yet to import)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    region = find_agent_region(split_frontmatter(text)[1])
    return set(decode_sections(region or "").get("findings", "").split("\n"))


def account_edits(
    tally: Tally,
    edits: Mapping[str, str],
    workspace: Path,
    where: str,
    pending: Iterable[str] = (),
) -> None:
    """Given edits (a line added to a section by hand, and how the file was written), record
    each that is neither in the journal's sections, nor in `pending` (the file's sections, for
    a render to import), nor saved in `.scratchpad/conflicts/` as lost, and those only in
    conflicts/ as such."""
    pending = set(pending)
    state = workspace / ".scratchpad"
    lines = folded_lines(state / "sections.jsonl")
    saved = conflict_lines(state)
    tally.conflicts = set()
    for edit in edits:
        if lines[edit] > 1:
            tally.duplicate(edit, where)
        if lines[edit] or edit in pending:
            continue
        if edit in saved:
            tally.conflicts.add(edit)
        else:
            tally.lose(edit, f"{where}; the file was written {edits[edit]}")


def conflict_lines(state: Path) -> set[str]:
    folder = state / "conflicts"
    if not folder.is_dir():
        return set()
    return {
        line
        for path in folder.iterdir()
        if not is_temp(path)
        for line in path.read_text(encoding="utf-8", errors="replace").split("\n")
    }


def test_renders_killed_at_random_points_leave_whole_files_and_lose_no_hand_edit(
    tmp_path: Path,
) -> None:
    rng = rng_for("render")
    workspace = render_workspace(tmp_path)
    output = workspace / "SCRATCHPAD.md"
    tally = Tally("render")
    window: float | None = None
    edits: dict[str, str] = {}
    hand_written = None  # the last text written by hand, until a render replaces it
    for trial in range(trials(8)):
        if output.exists():  # an edit made while no render runs, for the render to import
            edits[f"hand-{trial}"] = "in place, before the render"
            hand_written = add_line_to_findings(output, f"hand-{trial}")
        # Two at once, as when the daemon and a hook's `assemble --once` overlap.
        workers = [
            Worker(tmp_path, f"render{trial}-{n}", "render", workspace, 6, fsync_delay=0.002)
            for n in range(2)
        ]
        kills, elapsed = run_and_kill(workers, rng, window, chance=0.8)
        window = window or elapsed
        tally.trials += 1
        tally.kills += kills
        # The file is the hand-edited one (no render replaced it yet) or one whole render.
        if output.exists():
            text = output.read_text(encoding="utf-8")
            state_dir = output.parent / ".scratchpad"
            problem = None if text == hand_written else whole_render_problem(text, state_dir)
            if problem is not None:
                tally.unparsable.append(f"trial {trial}: SCRATCHPAD.md: {problem}")
        else:  # the first trial is never killed: its render wrote the file
            tally.unparsable.append(f"trial {trial}: SCRATCHPAD.md is missing after a render")
        # An edit is in the journal, still in the file for the next render to import, or
        # saved in conflicts/.
        account_edits(tally, edits, workspace, f"trial {trial}", pending=pending_lines(output))
        scan(workspace, tally, torn_allowed=tally.kills, final=False)
        if tally.failed:
            break  # the first trial that goes wrong is the one to look at
    tally.acknowledged = len(edits)
    render_now(workspace)
    account_edits(tally, edits, workspace, "after the last render")
    scan(workspace, tally, torn_allowed=tally.kills)
    tally.check()
    assert edits and tally.kills > 0


EDITOR_WRITES = {
    "inplace": "in place (open, truncate, write)",
    "replace": "to a temp file renamed over it",
}


def test_hand_edits_racing_renders_are_all_kept_in_the_journal_or_saved_as_conflicts(
    tmp_path: Path,
) -> None:
    rng = rng_for("race")
    workspace = render_workspace(tmp_path)
    output = workspace / "SCRATCHPAD.md"
    render_now(workspace)
    tally = Tally("race")
    acked: dict[str, str] = {}
    for trial in range(trials(4)):
        stop = tmp_path / f"stop{trial}"
        renderer = Worker(tmp_path, f"renderer{trial}", "render", workspace, stop)
        editor = Worker(
            tmp_path,
            f"editor{trial}",
            "edit",
            output,
            f"edit-{trial}",
            40,
            rng.randrange(2**32),
            0.01,
        )
        for worker in (renderer, editor):
            worker.wait_ready()
        renderer.go()
        editor.go()
        assert not editor.finish()
        stop.touch()
        assert not renderer.finish()
        tally.trials += 1
        for line in editor.acks():
            edit, how = line.split(" ")
            acked[edit] = EDITOR_WRITES[how]
        render_now(workspace)  # the one final render: it imports what the file still holds
        account_edits(tally, acked, workspace, f"trial {trial}")
        scan(workspace, tally, torn_allowed=0, final=False)
    tally.acknowledged = len(acked)
    scan(workspace, tally, torn_allowed=0)
    tally.check()
    assert tally.acknowledged > 0


# --------------------------------------------------------------------------------------------
# 4: the memory index.
# --------------------------------------------------------------------------------------------

TOPICS = [
    "pods restarted after the deploy and the ingress returned 502 errors",
    "the nightly backup job wrote the dump to the bucket in nine minutes",
    "tomatoes need water every second day and the basil wants shade",
    "the train to the coast leaves at seven and the hotel is near the harbour",
    "the invoice for march was paid late so the fee has to be disputed",
]


def note_text(number: int, revision: int) -> str:
    """A note of two chunks; each revision is longer, so its size always changes."""
    first, second = TOPICS[number % 5], TOPICS[(number + 2) % 5]
    revisions = "".join(f"Revision {r} of note {number}.\n" for r in range(1, revision + 1))
    return (
        f"# Note {number}\n\n## First\n\nEntry {number}: {first}.\n\n"
        f"## Second\n\nEntry {number}b: {second}.\n{revisions}"
    )


def expected_chunks(text: str) -> list[tuple[int, int, str]]:
    return [
        (c.start_line, c.end_line, c.hash)
        for c in chunk_markdown(text, chunk_tokens=60, overlap_tokens=10)
    ]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Notes:
    """The memory notes on disk, every version of them, and changes between trials."""

    def __init__(self, workspace: Path, count: int) -> None:
        self.folder = workspace / "memory"
        self.folder.mkdir()
        self.revision: dict[int, int] = {}
        self.texts: dict[str, str] = {}  # content hash -> text, every version ever written
        self.next = 0
        for _ in range(count):
            self.add()

    def rel(self, number: int) -> str:
        return f"memory/note-{number:04d}.md"

    def write(self, number: int) -> None:
        text = note_text(number, self.revision[number])
        self.texts[digest(text)] = text
        (self.folder.parent / self.rel(number)).write_text(text, encoding="utf-8")

    def add(self) -> None:
        self.revision[self.next] = 0
        self.write(self.next)
        self.next += 1

    def change(self, rng: random.Random, edits: int, removals: int, additions: int) -> None:
        for number in rng.sample(sorted(self.revision), edits):
            self.revision[number] += 1
            self.write(number)
        for number in rng.sample(sorted(self.revision), removals):
            del self.revision[number]
            (self.folder.parent / self.rel(number)).unlink()
        for _ in range(additions):
            self.add()

    def current(self) -> dict[str, str]:
        """Return each note's path and content hash as it is now."""
        return {self.rel(n): digest(note_text(n, r)) for n, r in sorted(self.revision.items())}


def index_rows(db_path: Path) -> tuple[dict[str, tuple[int, int, str]], dict[str, list[Any]], int]:
    """Return the index's files rows, its chunks by path (in id order) and its vector count."""
    with sqlite3.connect(db_path) as db:
        files = {row[0]: tuple(row[1:]) for row in db.execute("SELECT * FROM files")}
        chunks: dict[str, list[Any]] = {}
        for path, start, end, chunk_hash in db.execute(
            "SELECT path, start_line, end_line, hash FROM chunks ORDER BY id"
        ):
            chunks.setdefault(path, []).append((start, end, chunk_hash))
        vectors = db.execute(
            "SELECT count(*) FROM embeddings WHERE model_id = ?", (FakeEmbedder().model_id,)
        ).fetchone()[0]
    db.close()
    return files, chunks, vectors


def check_index_consistent(db_path: Path, notes: Notes, tally: Tally, trial: object) -> None:
    """Whatever a kill interrupted: the database passes integrity_check, the FTS table has
    exactly the chunks, and every file row has exactly the chunks of the content it records.
    """
    problem = _sqlite_problem(db_path)
    if problem is not None:
        tally.unparsable.append(f"trial {trial}: index.sqlite: {problem}")
        return
    files, chunks, _ = index_rows(db_path)
    with sqlite3.connect(db_path) as db:
        ids = {row[0] for row in db.execute("SELECT id FROM chunks")}
        fts = {row[0] for row in db.execute("SELECT rowid FROM chunks_fts")}
    db.close()
    if ids != fts:
        tally.unparsable.append(
            f"trial {trial}: chunks_fts has {len(fts - ids)} rows without a chunk and misses "
            f"{len(ids - fts)} chunks"
        )
    for path in set(chunks) - set(files):
        tally.unparsable.append(f"trial {trial}: {path} has chunks but no file row")
    for path, (_, _, content_hash) in files.items():
        if content_hash not in notes.texts:
            tally.unparsable.append(f"trial {trial}: {path}'s row records content never written")
            continue
        got = chunks.get(path, [])
        want = expected_chunks(notes.texts[content_hash])
        if got != want:
            record = tally.duplicate if len(got) > len(want) else tally.lose
            record(f"{path} chunks", f"trial {trial}: {len(got)}, its file row says {len(want)}")


def check_index_complete(db_path: Path, notes: Notes, tally: Tally, trial: object) -> None:
    """After a sync that ran to its end: the index holds exactly the notes as they are now,
    each chunk once, each with a vector."""
    check_index_consistent(db_path, notes, tally, trial)
    files, _, _ = index_rows(db_path)
    current = notes.current()
    for path, content_hash in current.items():
        row = files.get(path)
        if row is None or row[2] != content_hash:
            tally.lose(path, f"trial {trial}: not indexed as it is now")
    gone = sorted(set(files) - set(current))
    for path in gone:
        tally.lose(f"removal of {path}", f"trial {trial}: still indexed")
    with sqlite3.connect(db_path) as db:
        missing = db.execute(
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
            "WHERE e.model_id = ? AND e.chunk_hash = c.hash)",
            (FakeEmbedder().model_id,),
        ).fetchone()[0]
    db.close()
    if missing:
        tally.lose("vectors", f"trial {trial}: {missing} chunks have none after a full sync")


def sync_in_process(workspace: Path) -> None:
    with MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=SOURCES,
        embedder=FakeEmbedder(),
        chunk_tokens=60,
        overlap_tokens=10,
    ) as index:
        index.sync()


def last_ack(acks: Iterable[str], stage: str) -> int:
    done = [int(line.split(" ")[1]) for line in acks if line.startswith(f"{stage} ")]
    return max(done, default=0)


def test_index_syncs_killed_at_random_points_leave_an_index_the_next_sync_completes(
    tmp_path: Path,
) -> None:
    rng = rng_for("index")
    workspace = state_folder(tmp_path).parent
    db_path = workspace / ".scratchpad" / "index.sqlite"
    notes = Notes(workspace, 120)
    sync_in_process(workspace)
    tally = Tally("index")
    window: float | None = None
    for trial in range(trials(8)):
        notes.change(rng, edits=25, removals=2, additions=3)
        # What the worker will write, in its order: files whose stamp differs, sorted.
        files, _, vectors_before = index_rows(db_path)
        current = notes.current()
        to_read = []
        for path in sorted(current):
            info = (workspace / path).stat()
            row = files.get(path)
            if row is None or (row[0], row[1]) != (info.st_mtime_ns, info.st_size):
                to_read.append(path)
        changed = {p for p in to_read if files.get(p, (0, 0, ""))[2] != current[p]}
        worker = Worker(tmp_path, f"index{trial}", "index", workspace, 0.004)
        kills, elapsed = run_and_kill([worker], rng, window, chance=0.9)
        window = window or elapsed
        tally.trials += 1
        tally.kills += kills
        acks = worker.acks()
        check_index_consistent(db_path, notes, tally, trial)
        # Acknowledged: each file read (and, if changed, committed) and each vector batch.
        files_after, _, vectors_after = index_rows(db_path)
        acked_files = [p for p in to_read[: last_ack(acks, "read")] if p in changed]
        acked_vectors = last_ack(acks, "embed")
        tally.acknowledged += len(acked_files) + acked_vectors
        for path in acked_files:
            if files_after.get(path, (0, 0, ""))[2] != current[path]:
                tally.lose(path, f"trial {trial}: acknowledged, not committed")
        if vectors_after < vectors_before + acked_vectors:
            stored = vectors_after - vectors_before
            tally.lose(
                f"vectors of trial {trial}", f"{acked_vectors} acknowledged, {stored} stored"
            )
        if rng.random() < 0.5:  # else the next worker starts from what the kill left
            sync_in_process(workspace)
            check_index_complete(db_path, notes, tally, trial)
        scan(workspace, tally, torn_allowed=0, final=False)
        if tally.failed:
            break  # the first trial that goes wrong is the one to look at
    sync_in_process(workspace)
    check_index_complete(db_path, notes, tally, "final")
    scan(workspace, tally, torn_allowed=0)
    tally.check()
    assert tally.kills > 0


# --------------------------------------------------------------------------------------------
# 5: the observation store.
# --------------------------------------------------------------------------------------------


def read_back(store: ObservationStore, scratchpad_id: str) -> str | None:
    """Return the sha256 of an observation's content as the store gives it back, or None."""
    hasher = hashlib.sha256()
    try:
        entry = store.get(scratchpad_id, any_turn=True)
    except ObservationError:
        return None
    for piece in store.stream(entry):
        hasher.update(piece.encode("utf-8") if isinstance(piece, str) else piece)
    return str(hasher.hexdigest())


def test_observation_puts_killed_at_random_points_keep_every_acknowledged_one_whole(
    tmp_path: Path,
) -> None:
    rng = rng_for("observations")
    path = state_folder(tmp_path) / "observations.sqlite"
    tally = Tally("observations")
    window: float | None = None
    acked: dict[str, str] = {}
    for trial in range(trials(6)):
        workers = [
            Worker(
                tmp_path,
                f"t{trial}o{n}",
                "obs",
                path,
                f"{SEED}-{trial}-{n}",
                5,
            )
            for n in range(2)
        ]
        kills, elapsed = run_and_kill(workers, rng, window, chance=0.8)
        window = window or elapsed
        tally.trials += 1
        tally.kills += kills
        acked |= dict(line.split(" ") for worker in workers for line in worker.acks())
        problem = _sqlite_problem(path)
        if problem is not None:
            tally.unparsable.append(f"trial {trial}: observations.sqlite: {problem}")
            break
        with ObservationStore(path) as store:
            for scratchpad_id, want in acked.items():
                if read_back(store, scratchpad_id) != want:
                    tally.lose(scratchpad_id, f"trial {trial}")
            # Unacknowledged entries that made it in must be whole too.
            for entry in store.entries(all_turns=True):
                if read_back(store, entry.id) != entry.sha256:
                    tally.unparsable.append(f"trial {trial}: entry {entry.id} is not whole")
        with sqlite3.connect(path) as db:
            orphans = db.execute(
                "SELECT count(*) FROM blocks WHERE entry_id NOT IN (SELECT id FROM entries)"
            ).fetchone()[0]
        db.close()
        if orphans:
            tally.unparsable.append(f"trial {trial}: {orphans} blocks belong to no entry")
        scan(path.parent.parent, tally, torn_allowed=0, final=False)
        if tally.failed:
            break  # the first trial that goes wrong is the one to look at
    tally.acknowledged = len(acked)
    scan(path.parent.parent, tally, torn_allowed=0)
    tally.check()
    assert tally.acknowledged > 0 and tally.kills > 0
