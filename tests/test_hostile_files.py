"""Files an attacker put in the workspace to stop the program rather than to read out of it:
links that make a folder walk endless, named pipes where files are read, state databases with
triggers that never finish, another process holding a database's lock, a note of hundreds of
megabytes, a read-only workspace and a full disk.

The failure of most of these is a hang, so the commands run as subprocesses with a generous
timeout: a test fails when the command has not returned. Nothing here waits for time to pass;
time limits are passed in small where the code takes them.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assembler import state_db
from assembler.config.files import validate
from assembler.hosts.registry import HOSTS
from assembler.memory.index import MemoryIndex
from assembler.mood.history import MoodHistory, history_path, remembering
from assembler.mood.model import load_mood_model
from assembler.pad.journal import Journal
from assembler.pad.ready import read_ready
from assembler.state_db import open_prepared
from assembler.transcripts.message import Message

NOW = "2026-03-02T23:25:00+11:00"
# A command that has not returned by then hangs (they take a second or two).
HANG = 60
CONFIG = """\
[transcripts]
sources = ["{sources}"]
lookback = "none"
[memory]
model = "none"
[time]
timezone = "Australia/Sydney"
"""
LINES = [
    {"role": "user", "content": "the deploy keeps failing, can you look?", "timestamp": NOW},
    {"role": "assistant", "content": "Looking at the pipeline now.", "timestamp": NOW},
    {"role": "user", "content": "thanks, the staging one first please", "timestamp": NOW},
]
# An endless query, run by a trigger on every insert into the table it is planted on.
ENDLESS = (
    "CREATE TRIGGER evil BEFORE INSERT ON {table} BEGIN SELECT count(*) FROM ("
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END"
)


def make_workspace(folder: Path, sources: str = "transcripts/*.jsonl") -> Path:
    (folder / "memory").mkdir(parents=True)
    (folder / "transcripts").mkdir()
    (folder / "assembler.toml").write_text(CONFIG.format(sources=sources))
    (folder / "MEMORY.md").write_text("# Ray\n\n- Prefers the command, not a lecture.\n")
    (folder / "memory" / "deploys.md").write_text("# Deploys\n\nStaging deploys need a tag.\n")
    write_transcript(folder / "transcripts" / "chat.jsonl", LINES)
    return folder


def write_transcript(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def run(
    workspace: Path, *argv: str, timeout: float = HANG, **options: Any
) -> subprocess.CompletedProcess[str]:
    """Run `assemble ARGV -w WORKSPACE` in its own process; raise TimeoutExpired if it hangs."""
    words = [*argv, "-w", str(workspace)]
    if argv[0] in ("--once", "show", "check"):
        words += ["--now", NOW]
    if argv[0] == "hook":  # a prompt, as Claude Code sends it
        event = {"hook_event_name": "UserPromptSubmit", "cwd": str(workspace)}
        options.setdefault("input", json.dumps(event))
    return subprocess.run(
        [sys.executable, "-m", "assembler", *words],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **options.pop("env", {})},
        **options,
    )


def assert_clean_failure(result: subprocess.CompletedProcess[str]) -> None:
    """A refusal is one line and exit 1 (2 for `check`), never a crash."""
    assert result.returncode in (0, 1, 2), result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr


# -- 2: links that make a walk endless ---------------------------------------------------------


def test_two_links_to_the_memory_folder_itself_do_not_make_the_index_walk_forever(
    tmp_path: Path,
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    (workspace / "memory" / "l1").symlink_to(".")
    (workspace / "memory" / "l2").symlink_to(".")

    indexed = run(workspace, "index")  # the default sources: memory/**/*.md among them
    once = run(workspace, "--once")
    found = run(workspace, "search", "staging deploys tag")

    assert indexed.returncode == 0, indexed.stderr[-3000:]
    assert once.returncode == 0, once.stderr[-3000:]
    assert "memory/deploys.md" in found.stdout
    assert "memory/l1" not in found.stdout + indexed.stdout


def test_two_links_in_a_transcript_folder_do_not_make_a_double_star_glob_walk_forever(
    tmp_path: Path,
) -> None:
    workspace = make_workspace(tmp_path / "ws", sources="transcripts/**/*.jsonl")
    (workspace / "transcripts" / "l1").symlink_to(".")
    (workspace / "transcripts" / "l2").symlink_to(".")

    once = run(workspace, "--once", "--json")

    assert once.returncode == 0, once.stderr[-3000:]
    assert json.loads(once.stdout)["messages_read"] == 3


# -- 3: named pipes where files are read -------------------------------------------------------


FIFO_CASES = [
    ("SCRATCHPAD.md", ["--once"]),
    ("SCRATCHPAD.md", ["check"]),
    ("SCRATCHPAD.md", ["show"]),
    (".scratchpad/prefix.json", ["hook", "claude-code"]),
    (".scratchpad/prefix.json", ["pad", "write", "x"]),
    (".scratchpad/sections.jsonl", ["--once"]),
    (".scratchpad/sections.jsonl", ["pad", "read"]),
    (".scratchpad/last-assembly.json", ["--once"]),
    (".scratchpad/last-assembly.json", ["pad", "read"]),
    (".scratchpad/daemon.lock", ["hook", "claude-code"]),
    ("transcripts/pipe.jsonl", ["--once"]),
    ("memory/pipe.md", ["index"]),
]


@pytest.mark.parametrize(("name", "argv"), FIFO_CASES, ids=[" ".join(c[1]) for c in FIFO_CASES])
def test_a_named_pipe_in_place_of_a_file_is_refused_not_waited_on(
    tmp_path: Path, name: str, argv: list[str]
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    assert run(workspace, "--once").returncode == 0  # the state folder's files exist
    pipe = workspace / name
    pipe.unlink(missing_ok=True)
    os.mkfifo(pipe)

    result = run(workspace, *argv)

    assert_clean_failure(result)
    if name == "SCRATCHPAD.md":
        said = result.stderr or result.stdout  # `check` answers on stdout
        assert "is a named pipe, not a regular file" in said
        assert result.returncode in (1, 2) and len(said.strip().splitlines()) == 1


def test_a_named_pipe_for_the_hook_sessions_record_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    (workspace / "assembler.toml").write_text('[memory]\nmodel = "none"\n')  # the hosts' sources
    state = workspace / ".scratchpad"
    state.mkdir()
    os.mkfifo(state / "claude-code-sessions.json")

    result = run(workspace, "--once")

    assert_clean_failure(result)


def test_the_daemon_with_a_named_pipe_for_its_file_fails_the_run_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    os.mkfifo(workspace / "SCRATCHPAD.md")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "assembler", "daemon", "-w", str(workspace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert daemon.stderr is not None
        seen = _wait_for_line(daemon.stderr, "named pipe")  # its first assembly gave up
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=HANG)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert seen, "the daemon's first assembly never got past the pipe"
    assert daemon.returncode == 0


def _wait_for_line(stream: Any, text: str) -> bool:
    """Read the stream's lines until one holds `text` (True) or it ends or HANG passes."""
    found = threading.Event()

    def read() -> None:
        for line in stream:
            if text in line:
                found.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return found.wait(HANG)


def test_json_nested_thousands_deep_in_the_state_folder_is_a_bad_file_not_a_crash(
    tmp_path: Path,
) -> None:
    state = tmp_path / ".scratchpad"
    state.mkdir()
    deep = b"[" * 100_000 + b"]" * 100_000
    (state / "prefix.json").write_bytes(deep)
    journal = Journal(state / "sections.jsonl")
    event = b'{"time": "2026-03-02T10:00:00+00:00", "section": "main", "action": "set"}\n'
    (state / "sections.jsonl").write_bytes(deep + b"\n" + event)

    assert read_ready(state) is None
    read = journal.read()
    assert read.bad_lines == 1 and len(read.events) == 1


# -- 4: state databases with triggers that never end -------------------------------------------


def plant_endless_triggers(workspace: Path) -> None:
    state = workspace / ".scratchpad"
    for name, table in [
        ("mood.sqlite", "moods"),
        ("assemblies.sqlite", "runs"),
        ("index.sqlite", "chunks"),
        ("observations.sqlite", "entries"),
    ]:
        with sqlite3.connect(state / name) as db:
            db.execute(ENDLESS.format(table=table))
        db.close()


def test_state_databases_with_endless_triggers_are_set_aside_or_refused_not_run(
    tmp_path: Path,
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    assert run(workspace, "--once").returncode == 0
    assert run(workspace, "obs", "put", input="x" * 100_000).returncode == 0
    plant_endless_triggers(workspace)
    # New messages to score and a changed note to index: each writer inserts.
    write_transcript(
        workspace / "transcripts" / "chat.jsonl",
        [*LINES, {"role": "user", "content": "and the prod one after that", "timestamp": NOW}],
    )
    (workspace / "memory" / "deploys.md").write_text("# Deploys\n\nProd deploys need two tags.\n")

    once = run(workspace, "--once")
    found = run(workspace, "search", "prod deploys tags")
    parked = run(workspace, "obs", "put", input="y" * 100_000)

    assert once.returncode == 0, once.stderr[-3000:]
    assert "memory/deploys.md" in found.stdout
    assert parked.returncode == 1 and "trigger 'evil'" in parked.stderr
    assert_clean_failure(parked)
    state = workspace / ".scratchpad"
    for name in ("mood.sqlite", "assemblies.sqlite", "index.sqlite"):
        with sqlite3.connect(state / name) as db:
            kinds = {row[0] for row in db.execute("SELECT type FROM sqlite_master")}
        db.close()
        assert "trigger" not in kinds, name
    assert {p.name for p in state.glob("*.sqlite.*") if not p.name.endswith("-wal")} == {
        "mood.sqlite.broken",
        "assemblies.sqlite.broken",
        "index.sqlite.foreign",
    }


def test_a_statement_is_interrupted_once_it_has_run_its_time() -> None:
    from assembler.state_db import bound_statements

    db = sqlite3.connect(":memory:")
    bound_statements(db, seconds=0.05)
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        db.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        ).fetchone()
    assert db.execute("SELECT 1").fetchone() == (1,)  # the next statement has its own time


def test_a_state_database_with_a_trigger_or_a_view_is_moved_aside_before_anything_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.sqlite"
    schema = "CREATE TABLE runs (id INTEGER PRIMARY KEY, at REAL NOT NULL)"
    open_prepared(path, "the log", schema, 1).close()
    with sqlite3.connect(path) as db:
        db.execute(ENDLESS.format(table="runs"))
    db.close()

    conn = open_prepared(path, "the log", schema, 1)
    conn.execute("INSERT INTO runs (at) VALUES (1)")  # would never return with the trigger
    conn.close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE VIEW v AS SELECT 1")
    db.close()
    open_prepared(path, "the log", schema, 1).close()

    copies = sorted(p.name for p in tmp_path.glob("log.sqlite.broken*") if "-wal" not in p.name)
    assert len(copies) == 2  # the second copy did not replace the first


# -- 6: another process holding the mood history's lock ----------------------------------------


def moods(count: int) -> list[Message]:
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    texts = ["this is great", "the build broke again", "ok, thanks", "why is it slow", "nice"]
    return [
        Message("user", f"{texts[i % len(texts)]} ({i})", start + timedelta(minutes=i), "c.jsonl")
        for i in range(count)
    ]


@pytest.fixture
def held_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A mood history of 22 messages whose write lock another connection holds."""
    monkeypatch.setattr(state_db, "BUSY_TIMEOUT", 0.05, raising=False)  # a short wait
    state = tmp_path / ".scratchpad"
    with MoodHistory(history_path(state)) as history:
        history.record(moods(22), load_mood_model())
    other = sqlite3.connect(history_path(state), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    try:
        yield state
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_lock_held_by_another_process_is_waited_for_never_taken_for_a_broken_history(
    held_history: Path,
) -> None:
    model = load_mood_model()
    new = moods(25)

    for _ in range(2):  # twice: a second copy once replaced the first
        scorer = remembering(held_history, new, model)
        assert scorer is model  # the write was skipped: the window is scored afresh

    assert sorted(p.name for p in held_history.iterdir() if ".sqlite." in p.name) == []
    with MoodHistory(history_path(held_history)) as history:
        assert history.count() == 22


def test_a_history_that_is_not_a_database_twice_keeps_both_copies(tmp_path: Path) -> None:
    path = history_path(tmp_path / ".scratchpad")
    path.parent.mkdir()
    for attempt in ("first", "second"):
        path.write_bytes(f"{attempt} copy, not a database".encode() * 100)
        MoodHistory(path).close()
    copies = sorted(path.parent.glob("mood.sqlite.broken*"))
    assert len(copies) == 2
    assert {p.read_bytes()[:6] for p in copies} == {b"first ", b"second"}


# -- 11: a very large note, and a stop in the middle of a first index --------------------------


def test_a_note_over_the_size_limit_is_indexed_in_part_and_reported(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    head = "# Big\n\n" + "The aardvark note starts here.\n" * 20
    (workspace / "memory" / "big.md").write_text(head + "filler line\n" * 500 + "zebra\n")

    with MemoryIndex(
        workspace,
        db_path=workspace / ".scratchpad" / "index.sqlite",
        sources=["memory/**/*.md"],
        embedder=None,
        max_note_bytes=2000,
    ) as index:
        report = index.sync()
        head_hits = index.search("aardvark", k=3)
        tail_hits = index.search("zebra", k=3)
        again = index.sync()  # said again, though the note is not read again

    assert [h.path for h in head_hits] == ["memory/big.md"]
    assert tail_hits == []
    for sync in (report, again):
        assert any("memory/big.md" in w and "2,000 bytes" in w for w in sync.skipped)


def test_a_sync_stops_between_files_when_asked_and_the_next_one_goes_on(
    tmp_path: Path,
) -> None:
    from assembler.errors import StoppedError
    from assembler.memory.index import stopping_syncs

    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    for number in range(40):
        (workspace / "memory" / f"n{number:02}.md").write_text(f"# Note {number}\n\nword{number}\n")
    read: list[int] = []

    def progress(stage: str, done: int, total: int) -> None:
        read.append(done)

    def make() -> MemoryIndex:
        return MemoryIndex(
            workspace,
            db_path=workspace / ".scratchpad" / "index.sqlite",
            sources=["memory/*.md"],
            embedder=None,
        )

    with make() as index, stopping_syncs(lambda: len(read) > 5), pytest.raises(StoppedError):
        index.sync(progress=progress)
    with make() as index:
        report = index.sync()
    assert max(read) < 10  # stopped within a file of being asked
    assert 30 < report.files_changed < 40  # the files read before the stop were kept


def test_the_daemon_stops_in_the_middle_of_a_first_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assembler.daemon.service import Daemon

    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    for number in range(300):
        (workspace / "memory" / f"n{number:03}.md").write_text(f"# Note\n\nword{number}\n")
    config = validate(
        {"memory": {"model": "none"}, "transcripts": {"sources": ["none/*.jsonl"]}},
        source=None,
        workspace=workspace,
    )
    daemon = Daemon(config, clock=lambda: datetime(2026, 3, 2, 9, 0, tzinfo=UTC), hosts=HOSTS)
    reads: list[Path] = []
    real_read = MemoryIndex._read

    def read(self: MemoryIndex, path: Path) -> Any:
        reads.append(path)
        if len(reads) == 3:
            daemon.stop()  # what SIGTERM does
        return real_read(self, path)

    monkeypatch.setattr(MemoryIndex, "_read", read)
    runner = threading.Thread(target=daemon.run, daemon=True)
    runner.start()
    runner.join(HANG)

    assert not runner.is_alive()
    assert len(reads) < 10


# -- 12: a read-only workspace, a full disk -----------------------------------------------------


def _can_mount_read_only() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True
    )
    return probe.returncode == 0


def run_read_only(workspace: Path, *argv: str, **options: Any) -> Any:
    """Run `assemble ARGV -w WORKSPACE` with the workspace mounted read-only (the program sees
    EROFS whatever its user, root included)."""
    folder = str(workspace)
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    command = [sys.executable, "-m", "assembler", *argv, "-w", folder]
    wrapped = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, folder]
    return subprocess.Popen([*wrapped, *command], text=True, **options)


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs unshare with a mount namespace")
def test_a_read_only_workspace_gets_one_line_never_a_moved_database(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    assert run(workspace, "--once").returncode == 0
    before = sorted(p.name for p in (workspace / ".scratchpad").iterdir())

    daemon = run_read_only(workspace, "daemon", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, daemon_err = daemon.communicate(timeout=HANG)
    serve = run_read_only(
        workspace, "serve", "--port", "0", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert serve.stdout is not None
        first = serve.stdout.readline()  # the URL when it serves; nothing when it exits
        if first:
            serve.send_signal(signal.SIGINT)
        _, serve_err = serve.communicate(timeout=HANG)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()

    assert daemon.returncode == 1, daemon_err[-3000:]
    assert len(daemon_err.strip().splitlines()) == 1 and "read-only" in daemon_err
    assert serve.returncode != 3 and "Traceback" not in serve_err, serve_err[-3000:]
    if not first:  # it refused: one error line (warnings may come before it)
        errors = [line for line in serve_err.splitlines() if line.startswith("assemble:")]
        assert serve.returncode == 1 and len(errors) == 1, serve_err[-3000:]
    assert sorted(p.name for p in (workspace / ".scratchpad").iterdir()) == before


def _full_disk(size: int) -> None:
    """In the child: no file may grow past `size` bytes (writes fail with EFBIG, as on a full
    disk they fail with ENOSPC), and the signal that would kill it instead is ignored."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.parametrize("action", ["append", "write"])
def test_a_full_disk_gets_one_line_and_loses_nothing(tmp_path: Path, action: str) -> None:
    workspace = make_workspace(tmp_path / "ws")
    assert run(workspace, "pad", "write", "the first finding").returncode == 0
    journal = workspace / ".scratchpad" / "sections.jsonl"
    kept = journal.read_bytes()

    result = run(
        workspace,
        "pad",
        action,
        "a second finding that does not fit",
        preexec_fn=lambda: _full_disk(len(kept)),
    )

    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.stderr.strip().splitlines()) == 1 and "disk space" in result.stderr
    assert journal.read_bytes() == kept
    assert run(workspace, "pad", "read").stdout.count("the first finding") == 1


def test_opening_for_a_write_on_a_read_only_file_system_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from assembler.errors import WriteError
    from assembler.fsutil import open_nofollow

    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("victim"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(WriteError, match="read-only") as caught:
        open_nofollow(tmp_path / "victim", os.O_RDWR | os.O_CREAT)
    assert caught.value.errno == errno.EROFS
