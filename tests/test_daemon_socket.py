"""Tests of assembler/daemon/control.py and the daemon's side of it: `assemble --once` served
by a running daemon prints what a cold run prints; every way the socket can fail (no daemon,
a planted socket, garbage, silence, other options, another user) falls back to a cold run; a
bad client never hurts the daemon; the daemon loads its models before it says it is ready."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pytest
from e2e.daemon import RunningDaemon

import assembler.daemon.control as control
import assembler.daemon.lock as lock_module
import assembler.daemon.service as service
from assembler.assembly.draft import with_prompt
from assembler.cli.main import main
from assembler.config.files import load_config
from assembler.daemon.control import (
    SOCKET_NAME,
    ControlServer,
    NotServed,
    OnceRequest,
    PromptRequest,
    ask_daemon,
    ask_prompt,
    captured_log,
    options_digest,
)
from assembler.daemon.lock import PROC_LOCKS, DaemonLock, DaemonRunningError, lock_holder
from assembler.daemon.output import OnceOutput
from assembler.daemon.service import Daemon
from assembler.hosts.registry import HOSTS
from assembler.mood.history import opened
from assembler.transcripts.message import Message

ASSEMBLE = Path(sys.executable).parent / "assemble"
ZONE = ZoneInfo("Australia/Sydney")
# Close to the real clock: a file written at a --now long past would be refreshed by the
# daemon at once, racing the next command.
NOW = datetime.now(ZONE).replace(microsecond=0).isoformat()
WAIT = 60.0  # how long a test waits for an event that should come at once; never reached


def _message(minutes_before: float, role: str, text: str) -> str:
    stamp = (datetime.fromisoformat(NOW) - timedelta(minutes=minutes_before)).isoformat()
    return json.dumps({"role": role, "content": text, "timestamp": stamp}) + "\n"


def make_workspace(folder: Path, *, broken: bool = False) -> Path:
    """A workspace with a transcript, memory notes (keyword search: no model to load) and a
    debounce long enough that no change assembles during a test. `broken` adds a glob that
    matches nothing (a warning) and a transcript that is a folder (an error, exit 1)."""
    (folder / "chat").mkdir(parents=True)
    (folder / "chat" / "session.jsonl").write_text(
        _message(40, "user", "why does the helm deploy of the api keep failing?")
        + _message(39, "assistant", "The image tag points at a build that was never pushed.")
        + _message(5, "user", "ugh, AGAIN. just give me the command to fix the helm deploy")
    )
    (folder / "MEMORY.md").write_text(
        "# Ray\n\n- Deploys the api with helm from the ops repo.\n- Prefers the command.\n"
    )
    sources = '["chat/*.jsonl", "old/*.jsonl"]' if broken else '["chat/*.jsonl"]'
    if broken:
        (folder / "chat" / "folder.jsonl").mkdir()
    (folder / "assembler.toml").write_text(
        f"[transcripts]\nsources = {sources}\n"
        '[time]\ntimezone = "Australia/Sydney"\n'
        '[memory]\nmodel = "none"\n'
        '[daemon]\ndebounce = "1h"\n'
    )
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


class Observed(Daemon):
    """A Daemon that says when its start assembly is over: until then it may write the file
    at any moment, under a command of the test."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started = threading.Event()

    def _assemble(self, reason: str) -> None:
        super()._assemble(reason)
        if reason == "start":
            self.started.set()


class Threaded:
    """A Daemon run on a thread of the test process, ready (models loaded, socket open) and
    past its start assembly."""

    def __init__(self, workspace: Path) -> None:
        self.daemon = Observed(load_config(workspace), hosts=HOSTS)
        self.failed: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not (self.daemon.ready.wait(WAIT) and self.daemon.started.wait(WAIT)):
            raise AssertionError(f"the daemon did not get ready: {self.failed}")

    def _run(self) -> None:
        try:
            self.daemon.run()
        except BaseException as error:
            self.failed.append(error)
            self.daemon.ready.set()
            self.daemon.started.set()

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        assert not self.failed


@pytest.fixture
def serve() -> Iterator[Callable[[Path], Daemon]]:
    started: list[Threaded] = []

    def start(workspace: Path) -> Daemon:
        started.append(Threaded(workspace))
        return started[-1].daemon

    yield start
    for running in started:
        running.stop()


def once(capsys: pytest.CaptureFixture[str], ws: Path, *extra: str) -> tuple[int, str]:
    code = main(["--once", "-w", str(ws), "--now", NOW, *extra])
    return code, capsys.readouterr().out


@contextlib.contextmanager
def address_in(state_dir: Path) -> Iterator[str]:
    """The socket's address in the state folder, through a descriptor of the folder: its full
    path may be too long for a socket address."""
    fd = os.open(state_dir, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{SOCKET_NAME}"
    finally:
        os.close(fd)


def debug_lines(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "assembler")


# --- Served: the same output as a cold run ---------------------------------------------------


@pytest.mark.parametrize(
    "options", [[], ["--dry-run"], ["--explain"], ["--json", "--explain"], ["--dry-run", "--json"]]
)
def test_a_served_once_prints_what_a_cold_run_prints(
    ws: Path,
    serve: Callable[[Path], Daemon],
    capsys: pytest.CaptureFixture[str],
    options: list[str],
) -> None:
    daemon = serve(ws)
    cold = once(capsys, ws, "--no-daemon", *options)
    served = once(capsys, ws, *options)
    assert served == cold
    assert cold[0] == 0 and cold[1]
    assert daemon.stats.failures == 0
    # It was the daemon's: a write is one of its assemblies (a dry run writes nothing).
    assert daemon.stats.assemblies["once"] == (0 if "--dry-run" in options else 1)


def test_a_served_once_runs_in_the_daemons_assembly_lock_with_its_warm_memory(
    ws: Path, serve: Callable[[Path], Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = serve(ws)
    real = service.run_once
    seen: list[tuple[bool, object]] = []

    def run_once(*args: Any, **kwargs: Any) -> Any:
        seen.append((daemon._assembly.locked(), kwargs.get("memory")))
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "run_once", run_once)  # as the daemon calls it
    assert main(["--once", "-w", str(ws), "--now", NOW]) == 0
    assert seen == [(True, daemon._memory)]
    assert daemon._memory is not None


def test_the_real_daemon_serves_once_with_the_same_stdout_stderr_and_exit_code(
    tmp_path: Path,
) -> None:
    # A warning (a glob that matches nothing) and an error (a transcript that is a folder):
    # stderr and the exit code 1 must come out the same too.
    ws = make_workspace(tmp_path / "ws", broken=True)
    with RunningDaemon(ws, tmp_path, os.environ) as daemon:

        def assemble(*extra: str) -> tuple[int, str, str]:
            result = subprocess.run(
                [str(ASSEMBLE), "--once", "-w", str(ws), "--now", NOW, *extra],
                capture_output=True,
                text=True,
                timeout=WAIT,
            )
            return result.returncode, result.stdout, result.stderr

        for options in (["--dry-run", "--explain"], ["--json"], []):
            cold = assemble("--no-daemon", *options)
            served = assemble(*options)
            assert served == cold, options
            assert cold[0] == 1 and "assemble: error: " in cold[2] and "matched no files" in cold[2]
        verbose = assemble("-vv")
    assert f"assembled by the daemon (pid {daemon.process.pid})" in verbose[2]
    assert "assembled" in daemon.log_text()
    # Stopped by SIGTERM, it exits cleanly and takes its socket with it.
    assert daemon.returncode == 0
    assert not (ws / ".scratchpad" / SOCKET_NAME).exists()


# --- The cold fallback -----------------------------------------------------------------------


def test_with_no_daemon_once_assembles_itself_and_says_so_at_debug(
    ws: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="assembler")
    code, out = once(capsys, ws)
    assert code == 0 and out.startswith("wrote ")
    assert "no daemon serves" in debug_lines(caplog)


@pytest.fixture
def held_lock(ws: Path) -> Iterator[Path]:
    """The workspace's daemon lock held by this process, as if a daemon ran: the client then
    tries the socket (and expects this pid at its other end)."""
    lock = DaemonLock.acquire(ws / ".scratchpad")
    yield ws / ".scratchpad"
    lock.release()


def test_a_planted_socket_nobody_listens_on_falls_back_to_a_cold_run(
    ws: Path,
    held_lock: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead, address_in(held_lock) as at:
        dead.bind(at)  # the file stays when it is closed; nobody listens
    caplog.set_level(logging.DEBUG, logger="assembler")
    code, out = once(capsys, ws)
    assert code == 0 and out.startswith("wrote ")
    assert "absent: cannot connect" in debug_lines(caplog)


class FakeListener:
    """Something listening on the socket's place in this process: `answer(request line)`
    says what to send back (None: nothing, until the test ends)."""

    def __init__(self, state_dir: Path, answer: Callable[[bytes], bytes | None]) -> None:
        self.answer = answer
        self.done = threading.Event()
        self.requests: list[bytes] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with address_in(state_dir) as address:
            self.sock.bind(address)
        self.sock.listen(1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            request = conn.makefile("rb").readline()
            self.requests.append(request)
            reply = self.answer(request)
            if reply is None:
                self.done.wait(WAIT)
            else:
                with contextlib.suppress(OSError):  # the client may be gone
                    conn.sendall(reply)

    def close(self) -> None:
        self.done.set()
        self.thread.join(WAIT)
        self.sock.close()


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (b"garbage\n", "bad answer: not a JSON line"),
        (b"[1, 2]\n", "bad answer: not a JSON object"),
        (b'{"ok": true, "stdout": 5, "log": [], "warnings": [], "errors": []}\n', "bad answer"),
        (b'{"ok": true, "stdout": "x", "run": "rm -rf ~"}\n', "bad answer: fields"),
        (b'{"ok": true, "stdout": "", "log": [[5, "", ""]], "warnings": [], "errors": []}\n',
         "bad answer: log"),
        (b'{"ok": false, "error": "exec", "message": "x"}\n', "bad answer: neither"),
        (b"", "bad answer: the connection closed"),
        (b'{"ok": true, "stdout": "' + b"x" * 300 + b'"', "bad answer: the answer is over"),
    ],
)  # fmt: skip
def test_a_listener_that_answers_garbage_gets_a_cold_run(
    ws: Path,
    held_lock: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    reply: bytes,
    why: str,
) -> None:
    monkeypatch.setattr(control, "MAX_ANSWER_BYTES", 200)
    listener = FakeListener(held_lock, lambda request: reply)
    caplog.set_level(logging.DEBUG, logger="assembler")
    try:
        code, out = once(capsys, ws)
    finally:
        listener.close()
    assert code == 0 and out.startswith("wrote ")  # written by this process, not the listener
    assert why in debug_lines(caplog)
    request = json.loads(listener.requests[0])
    assert request["op"] == "assemble" and request["now"] == NOW


def test_a_listener_that_never_answers_gets_a_cold_run_after_the_answer_timeout(
    ws: Path,
    held_lock: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(control, "ANSWER_TIMEOUT", 0.2)
    listener = FakeListener(held_lock, lambda request: None)
    caplog.set_level(logging.DEBUG, logger="assembler")
    try:
        code, out = once(capsys, ws)
    finally:
        listener.close()
    assert code == 0 and out.startswith("wrote ")
    assert "timeout: no answer within 0.2 s" in debug_lines(caplog)


def test_a_listener_in_another_process_than_the_lock_holder_is_not_asked(
    ws: Path, held_lock: Path
) -> None:
    listener = FakeListener(held_lock, lambda request: b"{}\n")
    request = OnceRequest(options="0" * 64)
    try:
        with pytest.raises(NotServed, match=r"refused: the socket is served by pid \d+, not 1$"):
            ask_daemon(held_lock, request, pid=1)
    finally:
        listener.close()
    assert listener.requests == [b""]  # connected, and closed without a word


# -- what the agent can do to the lock and the socket -------------------------------------


# Holds a workspace's daemon lock in a process of its own (as a daemon does) until stdin closes:
# python -c LOCK_HOLDER STATE_DIR; says "held" once it holds it.
LOCK_HOLDER = """
import sys
from pathlib import Path
from assembler.daemon.lock import DaemonLock
lock = DaemonLock.acquire(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


@contextlib.contextmanager
def lock_held_elsewhere(state_dir: Path) -> Iterator[int]:
    """The workspace's lock held by another process; yield its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(state_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder.pid
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(WAIT)


@pytest.mark.skipif(not PROC_LOCKS.is_file(), reason="the kernel's lock table is Linux's")
@pytest.mark.parametrize("written", ["not a pid\n", "", "1\n", f"{2**40}\n"])
def test_the_lock_holder_is_the_kernels_not_what_the_agent_writes_in_the_lock(
    ws: Path, written: str
) -> None:
    state = ws / ".scratchpad"
    with lock_held_elsewhere(state) as pid:
        (state / "daemon.lock").write_text(written)  # the agent overwrites the daemon's pid
        assert lock_holder(state) == pid
    assert lock_holder(state) is None


def test_without_the_kernels_table_a_lock_that_holds_no_pid_means_no_daemon(
    ws: Path, held_lock: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(lock_module, "PROC_LOCKS", tmp_path / "no-such-table")
    assert lock_holder(held_lock) == os.getpid()  # the daemon's own pid, as it wrote it
    (held_lock / "daemon.lock").write_text("garbage\n")
    assert lock_holder(held_lock) is None  # then the hook and --once assemble themselves


def test_a_listener_the_agent_puts_beside_a_running_daemon_is_refused(
    ws: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    state = ws / ".scratchpad"
    with lock_held_elsewhere(state) as pid:
        # The agent's listener, in a process that is not the lock's holder, with the
        # lock file saying it is.
        listener = FakeListener(state, lambda request: b'{"ok": true, "stdout": "forged"}\n')
        (state / "daemon.lock").write_text(f"{os.getpid()}\n")
        caplog.set_level(logging.DEBUG, logger="assembler")
        try:
            with pytest.raises(NotServed, match=rf"not {pid}$"):
                ask_prompt(state, _prompt(), budget=WAIT, pid=lock_holder(state))
            code, out = once(capsys, ws)
        finally:
            listener.close()
    assert code == 0 and out.startswith("wrote ") and "forged" not in out
    assert f"the socket is served by pid {os.getpid()}, not {pid}" in debug_lines(caplog)


def test_a_hard_link_to_another_workspaces_socket_is_refused(
    ws: Path, held_lock: Path, tmp_path: Path
) -> None:
    other = make_workspace(tmp_path / "other") / ".scratchpad"
    other.mkdir(exist_ok=True)
    listener = FakeListener(other, lambda request: b"{}\n")
    try:
        os.link(other / SOCKET_NAME, held_lock / SOCKET_NAME)
        with pytest.raises(NotServed, match=r"refused: daemon\.sock has 2 links, not 1"):
            ask_prompt(held_lock, _prompt(), budget=WAIT, pid=os.getpid())
    finally:
        listener.close()
    assert listener.requests == []  # nothing of this session's reached the other daemon


def test_other_options_assemble_cold_and_say_so_at_verbose(
    ws: Path,
    serve: Callable[[Path], Daemon],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    daemon = serve(ws)
    caplog.set_level(logging.INFO, logger="assembler")
    transcript = str(ws / "chat" / "session.jsonl")
    code, out = once(capsys, ws, "--transcripts", transcript)
    assert code == 0 and out.startswith("wrote ")
    said = [r for r in caplog.records if "did not assemble (options" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO]
    other = ws / "other.toml"
    other.write_text((ws / "assembler.toml").read_text())
    assert once(capsys, ws, "--config", str(other))[0] == 0
    assert once(capsys, ws, "--no-daemon")[0] == 0
    assert daemon.stats.assemblies["once"] == 0


def test_the_digest_tells_configs_and_transcripts_apart(ws: Path, tmp_path: Path) -> None:
    config = load_config(ws)
    assert options_digest(config, HOSTS, None) == options_digest(load_config(ws), HOSTS, None)
    assert options_digest(config, HOSTS, None) != options_digest(
        config, HOSTS, [str(ws / "chat/*.jsonl")]
    )
    with (ws / "assembler.toml").open("a") as handle:
        handle.write("[output]\nttl_minutes = 5\n")
    assert options_digest(config, HOSTS, None) != options_digest(load_config(ws), HOSTS, None)


# --- The daemon's side: bad clients never hurt it --------------------------------------------


def _talk(state_dir: Path, data: bytes) -> dict[str, Any]:
    """Send raw bytes on the socket; return the answer line's JSON."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, address_in(state_dir) as at:
        sock.settimeout(WAIT)
        sock.connect(at)
        sock.sendall(data)
        answer: dict[str, Any] = json.loads(sock.makefile("rb").readline())
        return answer


def test_the_daemon_answers_malformed_requests_with_an_error_and_goes_on_serving(
    ws: Path, serve: Callable[[Path], Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = serve(ws)
    state = ws / ".scratchpad"
    good = OnceRequest(options=options_digest(daemon.config, HOSTS, None), now=NOW).to_request()
    bad = [
        b"not json\n",
        b"\xff\xfe\n",
        b"[]\n",
        b'{"op": "shell", "cmd": "id"}\n',
        json.dumps({**good, "dry_run": "yes"}).encode() + b"\n",
        json.dumps({**good, "now": "tomorrow"}).encode() + b"\n",
        json.dumps({**good, "extra": 1}).encode() + b"\n",
        b"x" * (control.MAX_REQUEST_BYTES + 10) + b"\n",
    ]
    for data in bad:
        answer = _talk(state, data)
        assert answer["ok"] is False and answer["error"] == "bad request", data[:40]
    answer = _talk(state, json.dumps(good).encode() + b"\n")
    assert answer["ok"] is True and answer["stdout"].startswith("wrote ")
    assert once(capsys, ws)[0] == 0
    assert daemon.stats.assemblies["once"] == 2


def test_a_second_daemon_leaves_the_first_ones_socket_alone(
    ws: Path, serve: Callable[[Path], Daemon], capsys: pytest.CaptureFixture[str]
) -> None:
    first = serve(ws)
    with pytest.raises(DaemonRunningError):
        Daemon(load_config(ws), hosts=HOSTS).run()
    assert once(capsys, ws)[0] == 0
    assert first.stats.assemblies["once"] == 1


def test_a_client_that_says_nothing_is_dropped_after_the_read_timeout(tmp_path: Path) -> None:
    served: list[OnceRequest] = []

    def serve(request: OnceRequest) -> OnceOutput:
        served.append(request)
        return OnceOutput("done\n")

    server = ControlServer(tmp_path, serve, read_timeout=0.2)
    server.start()
    try:
        with (
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent,
            address_in(tmp_path) as at,
        ):
            silent.settimeout(WAIT)
            silent.connect(at)
            assert silent.recv(100) == b""  # closed by the server, with no answer
        request = OnceRequest(options="0" * 64)
        assert ask_daemon(tmp_path, request, pid=os.getpid()).stdout == "done\n"
        assert served == [request]
    finally:
        server.close()


def test_the_socket_is_0600_replaces_a_stale_one_and_is_removed_on_close(tmp_path: Path) -> None:
    state = tmp_path / ("a-long-folder-name-" * 8) / ".scratchpad"  # over bind()'s 107 bytes
    state.mkdir(parents=True)
    stale = state / SOCKET_NAME
    stale.write_text("left by a killed daemon, or planted")
    server = ControlServer(state, lambda request: OnceOutput("ok\n"))
    server.start()
    try:
        assert oct(stale.lstat().st_mode & 0o777) == "0o600"
        request = OnceRequest(options="0" * 64)
        assert ask_daemon(state, request).stdout == "ok\n"
    finally:
        server.close()
    assert not stale.exists()


def test_a_request_from_another_uid_is_refused(tmp_path: Path) -> None:
    # The daemon's uid check, with the daemon told another uid is its own.
    server = ControlServer(tmp_path, lambda request: OnceOutput("ok\n"), uid=os.geteuid() + 1)
    server.start()
    try:
        with pytest.raises(NotServed, match="refused: only the daemon's own user"):
            ask_daemon(tmp_path, OnceRequest(options="0" * 64))
    finally:
        server.close()


# Another user runs the system's Python: this one may sit in a folder only its owner reads.
SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(
    os.geteuid() != 0 or not SYSTEM_PYTHON.exists(),
    reason="needs root (to connect as another user) and /usr/bin/python3",
)
def test_a_request_from_a_real_other_user_is_refused() -> None:
    import tempfile

    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # short, and reachable by another user
    try:
        folder.chmod(0o755)
        server = ControlServer(folder, lambda request: OnceOutput("ok\n"))
        server.start()
        (folder / SOCKET_NAME).chmod(0o666)  # past the file mode: the peer check must refuse
        script = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"s.connect({str(folder / SOCKET_NAME)!r})\n"
            "s.sendall(b'{}\\n')\n"
            "sys.stdout.write(s.makefile().readline())\n"
        )
        try:
            result = subprocess.run(
                [str(SYSTEM_PYTHON), "-I", "-c", script],
                user=65534,
                group=65534,
                capture_output=True,
                text=True,
                timeout=WAIT,
                cwd="/",
            )
        finally:
            server.close()
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["error"] == "refused"
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


# --- Loading at start ------------------------------------------------------------------------


def test_the_daemon_loads_its_models_and_index_before_it_says_ready(
    ws: Path, serve: Callable[[Path], Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakes import FakeEmbedder

    from assembler.memory import lifecycle
    from assembler.mood import model

    events: list[str] = []
    encoded: list[list[str]] = []

    class Recording(FakeEmbedder):
        def encode(self, texts: Sequence[str]) -> Any:
            encoded.append(list(texts))
            return super().encode(texts)

    real_open, real_load = lifecycle.open_memory, model.load_mood_model

    def open_memory(config: Any, **kwargs: Any) -> Any:
        index, _ = real_open(config, **kwargs)
        index.embedder = Recording()
        events.append("index")
        return index, None

    def load_mood_model(*args: Any) -> Any:
        events.append("mood model")
        return real_load(*args)

    def sd_notify(message: str, environ: Any = None) -> bool:
        # What was encoded by then: the first assembly may run as soon as it is said.
        events.append(f"{message.split()[0]} after {len(encoded)} encodes")
        return False

    monkeypatch.setattr(lifecycle, "open_memory", open_memory)
    monkeypatch.setattr(service, "load_mood_model", load_mood_model)  # as the daemon calls it
    monkeypatch.setattr(service, "sd_notify", sd_notify)
    serve(ws)
    # Opened and synced (MEMORY.md's chunks embedded), then the model made to load by one
    # short text, all before READY=1; meanwhile systemd was asked for more time to start.
    ready = next(i for i, event in enumerate(events) if event.startswith("READY=1"))
    loading = events[:ready]
    assert [e for e in loading if not e.startswith("EXTEND_TIMEOUT_USEC=")] == [
        "mood model",
        "index",
    ]
    assert any(e.startswith("EXTEND_TIMEOUT_USEC=") for e in loading)
    assert events[ready] == "READY=1 after 2 encodes"
    assert "Deploys the api with helm" in " ".join(encoded[0])
    assert len(encoded[1]) == 1


def test_captured_log_keeps_this_threads_records_at_the_level_asked() -> None:
    other = logging.getLogger("assembler.elsewhere")
    with captured_log(logging.WARNING) as lines:
        other.warning("kept %d", 1)
        other.info("below the level")
        thread = threading.Thread(target=other.error, args=("another thread's",))
        thread.start()
        thread.join()
    other.warning("after")
    assert lines == [(logging.WARNING, "assembler.elsewhere", "kept 1")]


# --- The prompt request: the block with the message being answered counted ------------------

PROMPT = "third time it fails, just give me the command"
CONCISE = "- **How to answer:** concise"


def calm_workspace(folder: Path) -> Path:
    """The workspace of `make_workspace` whose chat is one question, no clear emotion in it."""
    make_workspace(folder)
    (folder / "chat" / "session.jsonl").write_text(
        _message(3, "user", "why does the deploy keep failing on staging")
    )
    return folder


def _prompt(text: str = PROMPT, session: str | None = "s1") -> PromptRequest:
    return PromptRequest("claude-code", session, text, len(text))


def test_a_prompt_is_answered_with_it_counted_and_nothing_about_it_written_or_logged(
    tmp_path: Path, serve: Callable[[Path], Daemon], caplog: pytest.LogCaptureFixture
) -> None:
    ws = calm_workspace(tmp_path / "ws")
    daemon = serve(ws)
    state = ws / ".scratchpad"
    kept = [ws / "SCRATCHPAD.md", state / "prefix.json"]
    before = [path.read_bytes() for path in kept]
    caplog.set_level(logging.DEBUG)

    answer = ask_prompt(state, _prompt(), budget=WAIT, pid=os.getpid())

    # The prompt is the newest human message: the strategy and the task follow it.
    assert CONCISE in answer.block and f"“{PROMPT}”" in answer.block
    assert answer.block.startswith("[Session Scratchpad") and answer.expires > answer.updated
    ready = json.loads((state / "prefix.json").read_text())
    assert CONCISE not in ready["block"] and answer.digest != ready["digest"]
    # Not published, not kept, not logged: the transcript line the host writes is its record.
    assert [path.read_bytes() for path in kept] == before
    with opened(state) as history:
        texts = [r.text for r in history.between(datetime(2000, 1, 1, tzinfo=UTC), FAR)]
    assert texts == ["why does the deploy keep failing on staging"]
    assert not [r for r in caplog.records if "just give me" in r.getMessage()]
    assert daemon.stats.assemblies["prompt"] == 1


FAR = datetime(2999, 1, 1, tzinfo=UTC)


def test_a_prompt_the_transcript_holds_already_is_counted_once(
    tmp_path: Path, serve: Callable[[Path], Daemon]
) -> None:
    ws = calm_workspace(tmp_path / "ws")
    with (ws / "chat" / "session.jsonl").open("a") as chat:
        chat.write(_message(0, "user", f"  {PROMPT}\n"))  # as the host wrote it, spaces and all
    serve(ws)
    state = ws / ".scratchpad"
    ready = json.loads((state / "prefix.json").read_text())["block"]

    answer = ask_prompt(state, _prompt(session=None), budget=WAIT)

    def content(block: str) -> list[str]:  # but the clock's lines
        return [line for line in block.splitlines() if not re.search(r"\d\d:\d\d", line)]

    # The same as the block of the transcript alone: a second copy of the prompt would weigh
    # in the mood's figures.
    assert CONCISE in ready
    assert content(answer.block) == content(ready)


def test_a_prompt_joins_the_window_once_as_its_newest_human_message() -> None:
    said = datetime(2026, 3, 2, 12, tzinfo=UTC)

    def message(role: Literal["user", "assistant"], text: str, session: str | None) -> Message:
        return Message(role, text, said, f"{session}.jsonl", session_id=session)

    window = [message("user", "why does it fail", "a"), message("assistant", "Checking.", "a")]
    prompt = Message("user", PROMPT, said, "claude-code prompt", session_id="a")
    joined = with_prompt(window, prompt)
    assert joined[:2] == window
    assert (joined[2].text, joined[2].source, joined[2].session_id) == (PROMPT, "a.jsonl", "a")
    # Written by the host already (spaces aside): not again.
    written = [*window, message("user", f" {PROMPT}\n", "a")]
    assert with_prompt(written, prompt) == written
    # The same words in another session, or before the last answer, are another message.
    assert len(with_prompt([*window[:1], message("user", PROMPT, "b")], prompt)) == 3
    assert len(with_prompt([message("user", PROMPT, "a"), window[1]], prompt)) == 3


def test_the_claude_code_hook_sends_the_block_the_daemon_answers_for_the_prompt(
    tmp_path: Path, serve: Callable[[Path], Daemon]
) -> None:
    from assembler.hosts.claude_code.hook import run_hook
    from assembler.hosts.handoff import current_block

    ws = calm_workspace(tmp_path / "ws")
    serve(ws)
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(ws)}
    stdin = json.dumps({**event, "prompt": PROMPT})

    output = run_hook(stdin, workspace=None, config_path=None, budget=WAIT)

    context = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[Session Scratchpad") and CONCISE in context
    # What the hook would have sent without the daemon: the ready block, written before.
    config = load_config(ws)
    assert CONCISE not in current_block(config, datetime.now(ZONE)).text


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"prompt": "x" * 6000, "length": 6000}, "prompt must be text"),
        ({"length": 1}, "length must be"),
        ({"length": "46"}, "length must be"),
        ({"host": ""}, "host must be"),
        ({"host": "a\nb"}, "host must be"),
        ({"session": 5}, "session must be"),
        ({"session": "s" * 300}, "session must be"),
        ({"extra": 1}, "the fields are"),
        ({"wait_ms": -1}, "wait_ms must be"),
        ({"wait_ms": 10_001}, "wait_ms must be"),
        ({"wait_ms": 1.5}, "wait_ms must be"),
    ],
)
def test_a_malformed_prompt_request_is_refused_without_quoting_it(
    ws: Path, serve: Callable[[Path], Daemon], change: dict[str, Any], why: str
) -> None:
    daemon = serve(ws)
    good = _prompt().to_request()

    answer = _talk(ws / ".scratchpad", json.dumps({**good, **change}).encode() + b"\n")

    assert (answer["ok"], answer["error"]) == (False, "bad request")
    assert why in answer["message"] and "xxxx" not in answer["message"]
    assert _talk(ws / ".scratchpad", json.dumps(good).encode() + b"\n")["ok"] is True
    assert daemon.stats.assemblies["prompt"] == 1


def test_a_daemon_busy_with_an_assembly_declines_a_prompt_rather_than_keep_it_waiting(
    ws: Path, serve: Callable[[Path], Daemon]
) -> None:
    daemon = serve(ws)
    with daemon._assembly, pytest.raises(NotServed) as declined:
        ask_prompt(ws / ".scratchpad", _prompt(), budget=WAIT)
    assert declined.value.reason == "busy"  # at once: not the caller's timeout


def test_a_caller_that_says_how_long_it_waits_gets_the_answer_after_a_running_assembly(
    ws: Path, serve: Callable[[Path], Daemon]
) -> None:
    daemon = serve(ws)
    lock = daemon._assembly
    waiting = threading.Event()

    class Watched:
        """The daemon's assembly lock, saying when a caller starts to wait for it for a
        while (a prompt; the daemon's own cycles take it with `with`)."""

        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            if timeout > 0:
                waiting.set()
            return lock.acquire(blocking, timeout)

        def release(self) -> None:
            lock.release()

        def __enter__(self) -> None:
            lock.acquire()

        def __exit__(self, *exc: object) -> None:
            lock.release()

    lock.acquire()  # an assembly is running
    daemon._assembly = Watched()  # type: ignore[assignment]
    # Released only once the prompt waits for it: the answer must come after the wait.
    release = threading.Thread(target=lambda: (waiting.wait(WAIT), lock.release()))
    release.start()
    try:
        request = dataclasses.replace(_prompt(), wait_ms=10_000)
        answer = ask_prompt(ws / ".scratchpad", request, budget=WAIT)
    finally:
        release.join(WAIT)
    assert waiting.is_set()
    assert CONCISE in answer.block
    assert daemon.stats.assemblies["prompt"] == 1


def test_with_no_daemon_a_prompt_fails_at_once_without_waiting_for_its_budget(
    tmp_path: Path,
) -> None:
    (tmp_path / ".scratchpad").mkdir()
    with pytest.raises(NotServed) as declined:
        ask_prompt(tmp_path / ".scratchpad", _prompt(), budget=WAIT)
    assert declined.value.reason == "absent"  # no socket: not a timeout


def test_a_server_without_a_prompt_answer_refuses_prompts(tmp_path: Path) -> None:
    server = ControlServer(tmp_path, lambda request: OnceOutput("ok\n"))
    server.start()
    try:
        with pytest.raises(NotServed, match="refused: this daemon answers no prompts"):
            ask_prompt(tmp_path, _prompt(), budget=WAIT)
    finally:
        server.close()


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (b'{"ok": true, "block": 5}\n', "bad answer: fields"),
        (
            b'{"ok": true, "block": "b", "digest": "d", "updated": "now", "expires": "later",'
            b' "expires_ms": 1}\n',
            "bad answer: updated and expires",
        ),
        (b"[" * 100_000 + b"\n", "bad answer: not a JSON line"),
        (b'{"ok": true, "block": "' + b"x" * 300 + b'"', "bad answer: the answer is over"),
    ],
)
def test_a_listener_that_answers_a_prompt_with_garbage_is_not_used(
    ws: Path, held_lock: Path, monkeypatch: pytest.MonkeyPatch, reply: bytes, why: str
) -> None:
    monkeypatch.setattr(control, "MAX_PROMPT_ANSWER_BYTES", 200_000 if b"[[" in reply else 200)
    listener = FakeListener(held_lock, lambda request: reply)
    try:
        with pytest.raises(NotServed, match=why):
            ask_prompt(held_lock, _prompt(), budget=WAIT, pid=os.getpid())
    finally:
        listener.close()
    sent = json.loads(listener.requests[0])
    assert sent == {"op": "prompt", "host": "claude-code", "session": "s1", "prompt": PROMPT,
                    "length": len(PROMPT)}  # fmt: skip
