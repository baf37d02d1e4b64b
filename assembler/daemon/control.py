"""`assemble --once` served by the running daemon, over a Unix socket in the state folder.

What `--once` prints is data (`daemon.output`): the cold run makes it in its own process, the
daemon in its own with its warm models and index and sends it here as the answer
(`once_answer`, read back by `output_of`), and the CLI prints it the same way, so the output
is byte for byte the same whoever assembled.

The protocol: one JSON line each way on `.scratchpad/daemon.sock` (mode 0600; the daemon
answers only its own uid, by SO_PEERCRED).

- request: `{"op": "assemble", "options": DIGEST, "now": ISO or null, "dry_run": bool,
  "explain": bool, "json": bool, "log_level": int}`. `options` is `options_digest` of the
  client's config and --transcripts: a daemon whose own differ declines ("options"), and the
  client assembles itself. `log_level` is the client's: the run's log records at or above it
  come back in the answer.
- answer: `{"ok": true, "stdout": str, "log": [[level, logger, message], ...], "warnings":
  [str], "errors": [str]}` (the exit code is 1 when `errors` is not empty), or `{"ok": false,
  "error": REASON, "message": str}`.
- prompt request (the Claude Code hook, the OpenClaw plugin, before the model is called):
  `{"op": "prompt", "host": str, "session": str or null, "prompt": str, "length": int,
  "wait_ms": int (optional)}`, the prompt's head and tail (`clip_prompt`), its whole length
  and how long the caller waits; answer `{"ok": true, "block":
  str, "digest": str, "updated": ISO, "expires": ISO, "expires_ms": int}`: the ready block
  assembled with the prompt counted as the newest human message (see
  `assembly.pipeline.run_for_prompt`), or a refusal ("busy" while an assembly runs past the
  caller's wait). The
  caller waits PROMPT_BUDGET in all, then uses `.scratchpad/prefix.json` as it is. The prompt
  is not written anywhere nor logged: the transcript line the host writes is what the next
  assembly reads, and the answer is not published as the ready block (that block stays the
  one of SCRATCHPAD.md, which the transcript feeds).

The agent can write the state folder, so whatever listens there is not trusted: the client
checks the peer's uid (and pid, against the daemon lock's), reads at most MAX_ANSWER_BYTES,
and uses nothing but the answer's fields, validated; any doubt and it assembles itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import selectors
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler import __version__
from assembler.clock import local_timezone
from assembler.daemon.output import LogLine, OnceOutput
from assembler.transcripts.hosts import Hosts
from assembler.transcripts.message import clip_middle
from assembler.transcripts.read import sources_to_read

if TYPE_CHECKING:
    from assembler.config.schema import Config

log = logging.getLogger(__name__)

SOCKET_NAME = "daemon.sock"
# The client's wait for the connection: a live daemon accepts at once, whatever it is doing.
CONNECT_TIMEOUT = 0.2
# The client's wait for the answer, once connected: the daemon may be in another assembly,
# or indexing a large memory for the first time.
ANSWER_TIMEOUT = 60.0
# The daemon's wait for a request line: a client that says nothing is dropped after it.
READ_TIMEOUT = 5.0
# The daemon's wait for a client to take its answer.
SEND_TIMEOUT = 30.0
# A prompt request carries the prompt's head and tail (PROMPT_HEAD_CHARS + PROMPT_TAIL_CHARS),
# JSON-escaped; a --once request is far smaller.
MAX_REQUEST_BYTES = 64 * 1024
# A dry run's answer holds the whole file; far over any cap, far under a memory problem.
MAX_ANSWER_BYTES = 32 * 1024 * 1024
# A prompt's answer holds the block alone: a few KiB under the caps.
MAX_PROMPT_ANSWER_BYTES = 1024 * 1024
MAX_CONNECTIONS = 8
# The reasons a request is not served; the client says "options" at -v, the rest at -vv.
REASONS = frozenset(
    {
        "absent",
        "refused",
        "timeout",
        "bad request",
        "bad answer",
        "options",
        "stopping",
        "failed",
        "busy",
    }
)
_NOW_CHARS = 64
_LOGGER_CHARS = 200
_UCRED = struct.Struct("3i")  # pid, uid, gid


class NotServed(Exception):
    """A --once request the daemon did not serve; `reason` is one of REASONS."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


# --- What --once prints, on the wire -------------------------------------------------------


def once_answer(output: OnceOutput) -> dict[str, Any]:
    """Given what --once prints, return the answer line's data."""
    return {
        "ok": True,
        "stdout": output.stdout,
        "log": [list(line) for line in output.log],
        "warnings": output.warnings,
        "errors": output.errors,
    }


def output_of(data: dict[str, Any]) -> OnceOutput:
    """Given an answer's data with `ok` true, return the output it carries. Raise NotServed
    ("bad answer") if a field is missing, extra or of the wrong type."""
    if set(data) != {"ok", "stdout", "log", "warnings", "errors"}:
        raise NotServed("bad answer", f"fields {sorted(data)}")
    stdout, warnings, errors = data["stdout"], data["warnings"], data["errors"]
    if not isinstance(stdout, str) or not _strings(warnings) or not _strings(errors):
        raise NotServed("bad answer", "stdout, warnings and errors must be text")
    lines = data["log"]
    if not isinstance(lines, list) or not all(_log_line(line) for line in lines):
        raise NotServed("bad answer", "log must be [level, logger, message] lines")
    return OnceOutput(stdout, warnings, errors, [(a, b, c) for a, b, c in lines])


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _log_line(value: Any) -> bool:
    if not (isinstance(value, list) and len(value) == 3):
        return False
    level, name, message = value
    return (
        type(level) is int
        and 0 < level <= logging.CRITICAL
        and isinstance(name, str)
        and 0 < len(name) <= _LOGGER_CHARS
        and name.isprintable()
        and isinstance(message, str)
    )


# --- The request -----------------------------------------------------------------------------


def options_digest(config: Config, hosts: Hosts, transcript_globs: Sequence[str] | None) -> str:
    """Given a config, the hosts and --transcripts, return a digest of everything that makes an
    assembly come out differently besides the clock: the settings (and which files they came from),
    the transcripts read (the default ones depend on the environment), the local time zone
    and the program's version. Two processes serve each other only when theirs are equal."""
    sources = sources_to_read(
        hosts, config.transcripts.sources, config.workspace, config.state_dir, transcript_globs
    )
    zone = local_timezone(config.time.timezone)
    parts = (__version__, repr(config), list(transcript_globs or ()), sources, repr(zone))
    return hashlib.sha256(repr(parts).encode("utf-8", "backslashreplace")).hexdigest()


@dataclass(frozen=True)
class OnceRequest:
    """`assemble --once` asked of the daemon: its options' digest, --now as typed (None: the
    daemon's clock), --dry-run, --explain, --json, and the client's log level."""

    options: str
    now: str | None = None
    dry_run: bool = False
    explain: bool = False
    as_json: bool = False
    log_level: int = logging.WARNING

    def to_request(self) -> dict[str, Any]:
        """Return the request line's data."""
        return {
            "op": "assemble",
            "options": self.options,
            "now": self.now,
            "dry_run": self.dry_run,
            "explain": self.explain,
            "json": self.as_json,
            "log_level": self.log_level,
        }

    @classmethod
    def from_request(cls, data: Any) -> OnceRequest:
        """Given a request line's parsed JSON, return the request. Raise NotServed ("bad
        request") naming what is wrong with it."""
        fields = {"op", "options", "now", "dry_run", "explain", "json", "log_level"}
        if not isinstance(data, dict):
            raise NotServed("bad request", "a request is a JSON object")
        if data.get("op") != "assemble":
            raise NotServed("bad request", f"unknown op {str(data.get('op'))[:40]!r}")
        if set(data) != fields:
            raise NotServed("bad request", f"the fields are {sorted(fields)}")
        options, now, level = data["options"], data["now"], data["log_level"]
        dry_run, explain, as_json = flags = [data[name] for name in ("dry_run", "explain", "json")]
        if not isinstance(options, str) or len(options) != 64:
            raise NotServed("bad request", "options must be a digest")
        if not all(type(flag) is bool for flag in flags):
            raise NotServed("bad request", "dry_run, explain and json must be true or false")
        if type(level) is not int or not 0 <= level <= logging.CRITICAL:
            raise NotServed("bad request", "log_level must be a logging level")
        if now is not None:
            if not isinstance(now, str) or len(now) > _NOW_CHARS:
                raise NotServed("bad request", "now must be an ISO-8601 time or null")
            try:
                datetime.fromisoformat(now)
            except ValueError:
                raise NotServed("bad request", "now must be an ISO-8601 time or null") from None
        return cls(options, now, dry_run, explain, as_json, level)

    def time(self, zone: tzinfo) -> datetime | None:
        """Given the configured time zone, return --now as --once reads it (a time without an
        offset is in that zone), or None for the clock."""
        if self.now is None:
            return None
        parsed = datetime.fromisoformat(self.now)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)


# --- The prompt request: the block, with the message being answered counted -----------------

# What the hook or plugin sends of a prompt: its head and tail (a pasted log's middle says
# nothing about the mood or the task), and its whole length.
PROMPT_HEAD_CHARS = 2500
PROMPT_TAIL_CHARS = 2500
# The caller's wait for the answer, in all (connect, send, answer): past it the prompt goes on
# with the ready block as it is.
PROMPT_BUDGET = 0.150
# The longest a caller may say it waits (a user's setting of the hooks' or plugin's budget).
MAX_WAIT_MS = 10_000
_HOST_CHARS = 40
_SESSION_CHARS = 200


@dataclass(frozen=True)
class PromptRequest:
    """A hook's or plugin's prompt, sent before the host calls the model: the host's name, the
    session's id (None: not known), the prompt's text (at most its head and tail, see
    `clip_prompt`), the whole prompt's length in characters, and how long the caller waits for
    the answer in ms (None: not said; the daemon then waits PROMPT_BUDGET's share for an
    assembly in progress)."""

    host: str
    session: str | None
    prompt: str
    length: int
    wait_ms: int | None = None

    def to_request(self) -> dict[str, Any]:
        """Return the request line's data."""
        return {
            "op": "prompt",
            "host": self.host,
            "session": self.session,
            "prompt": self.prompt,
            "length": self.length,
            **({"wait_ms": self.wait_ms} if self.wait_ms is not None else {}),
        }

    @classmethod
    def from_request(cls, data: dict[str, Any]) -> PromptRequest:
        """Given a request line's parsed JSON object (op "prompt"), return the request. Raise
        NotServed ("bad request") naming what is wrong with it (never quoting the prompt)."""
        fields = {"op", "host", "session", "prompt", "length"}
        if not fields <= set(data) <= fields | {"wait_ms"}:
            raise NotServed("bad request", f"the fields are {sorted(fields)} and maybe wait_ms")
        wait_ms = data.get("wait_ms")
        if wait_ms is not None and not (type(wait_ms) is int and 0 <= wait_ms <= MAX_WAIT_MS):
            raise NotServed("bad request", f"wait_ms must be a whole number of 0 to {MAX_WAIT_MS}")
        host, session, prompt, length = (data[k] for k in ("host", "session", "prompt", "length"))
        if not (isinstance(host, str) and 0 < len(host) <= _HOST_CHARS and host.isprintable()):
            raise NotServed("bad request", f"host must be a name of at most {_HOST_CHARS} chars")
        if session is not None and not (
            isinstance(session, str) and 0 < len(session) <= _SESSION_CHARS
        ):
            raise NotServed("bad request", f"session must be null or at most {_SESSION_CHARS}")
        most = PROMPT_HEAD_CHARS + PROMPT_TAIL_CHARS + 16
        if not isinstance(prompt, str) or len(prompt) > most:
            raise NotServed("bad request", f"prompt must be text of at most {most} characters")
        if type(length) is not int or not len(prompt) <= length < 1 << 40:
            raise NotServed("bad request", "length must be the whole prompt's length")
        return cls(host, session, prompt, length, wait_ms)


def clip_prompt(text: str) -> tuple[str, int]:
    """Given a prompt, return what a prompt request carries of it (its head and tail, joined as
    `transcripts.message.clip_middle` joins them) and its whole length."""
    return clip_middle(text, PROMPT_HEAD_CHARS, PROMPT_TAIL_CHARS), len(text)


@dataclass(frozen=True)
class PromptAnswer:
    """The daemon's answer to a prompt: the block with the prompt counted, its content digest
    (see `pad.ready.digest_of`), when it was made and until when it is valid."""

    block: str
    digest: str
    updated: datetime
    expires: datetime

    def to_answer(self) -> dict[str, Any]:
        """Return the answer line's data."""
        return {
            "ok": True,
            "block": self.block,
            "digest": self.digest,
            "updated": self.updated.isoformat(),
            "expires": self.expires.isoformat(),
            "expires_ms": int(self.expires.timestamp() * 1000),
        }

    @classmethod
    def from_answer(cls, data: dict[str, Any]) -> PromptAnswer:
        """Given an answer's data with `ok` true, return it. Raise NotServed ("bad answer") if
        a field is missing, extra or of the wrong type."""
        if set(data) != {"ok", "block", "digest", "updated", "expires", "expires_ms"}:
            raise NotServed("bad answer", f"fields {sorted(data)}")
        block, digest = data["block"], data["digest"]
        if not isinstance(block, str) or not isinstance(digest, str) or len(digest) > 128:
            raise NotServed("bad answer", "block and digest must be text")
        try:
            updated = datetime.fromisoformat(str(data["updated"])[:_NOW_CHARS])
            expires = datetime.fromisoformat(str(data["expires"])[:_NOW_CHARS])
        except ValueError:
            raise NotServed("bad answer", "updated and expires must be ISO-8601 times") from None
        if updated.tzinfo is None or expires.tzinfo is None:
            raise NotServed("bad answer", "updated and expires must carry their offset")
        return cls(block, digest, updated, expires)


def parse_request(data: Any) -> OnceRequest | PromptRequest:
    """Given a request line's parsed JSON, return the request it is. Raise NotServed ("bad
    request") when it is none."""
    if isinstance(data, dict) and data.get("op") == "prompt":
        return PromptRequest.from_request(data)
    return OnceRequest.from_request(data)


@contextlib.contextmanager
def captured_log(level: int) -> Iterator[list[LogLine]]:
    """Collect the log records at or above `level` that this thread emits meanwhile (the
    other threads' are theirs), as (level, logger, message): a served run's, for its
    client to print as a cold run would have."""
    lines: list[LogLine] = []
    handler = _Capture(level, threading.get_ident(), lines)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)


class _Capture(logging.Handler):
    def __init__(self, level: int, thread: int, lines: list[LogLine]) -> None:
        super().__init__(max(level, logging.DEBUG))
        self.thread = thread
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self.thread:
            return
        try:
            message = record.getMessage()
        except Exception:  # a bad format: the record itself says that much
            message = str(record.msg)
        self.lines.append((record.levelno, record.name, message))


# --- The socket ------------------------------------------------------------------------------


def _open_dir(state_dir: Path) -> int:
    """Given the state folder, return a descriptor of it; never through a link."""
    return os.open(state_dir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _address(dir_fd: int, state_dir: Path) -> str:
    """Given the state folder and a descriptor of it, return the socket's address. Through
    the descriptor when /proc allows: a socket's address holds at most 107 bytes, a
    workspace's path may not, and the folder cannot be swapped for a link meanwhile."""
    proc = f"/proc/self/fd/{dir_fd}"
    return f"{proc}/{SOCKET_NAME}" if os.path.isdir(proc) else str(state_dir / SOCKET_NAME)


def _peer(sock: socket.socket) -> tuple[int, int]:
    """Given a connected Unix socket, return the pid and uid of the process at its other end."""
    pid, uid, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return pid, uid


class _TooLong(Exception):
    pass


def _read_line(sock: socket.socket, limit: int, timeout: float) -> bytes | None:
    """Given a socket, return its next line (without the newline) once it has come whole, or
    None when the peer closed first. Raise TimeoutError if it takes over `timeout` seconds in
    all, _TooLong if it runs over `limit` bytes."""
    deadline = time.monotonic() + timeout
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no line within {timeout} s")
        sock.settimeout(left)  # in all, not per chunk: a trickle cannot keep it waiting
        chunk = sock.recv(min(1 << 16, limit + 1 - len(data)))
        if not chunk:
            return None
        end = chunk.find(b"\n")
        data += chunk if end < 0 else chunk[:end]
        if len(data) > limit:
            raise _TooLong(f"over {limit} bytes")
        if end >= 0:
            return bytes(data)


def _line(data: dict[str, Any]) -> bytes:
    # ASCII: the line holds no raw newline or other control character, whatever the text.
    return (json.dumps(data, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def _refusal(reason: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": reason, "message": message}


class ControlServer:
    """The daemon's side: listens on `.scratchpad/daemon.sock` and answers each --once request
    with `serve(request)`, one thread per connection (at most `max_connections`); a request
    that is not one gets an error answer, a client that says nothing within `read_timeout`
    is dropped. A prompt request is answered with `prompt(request)` (without one: declined).
    Either may raise NotServed to decline; anything else they raise is logged and answered as
    "failed". Only `uid` (ours) is answered."""

    def __init__(
        self,
        state_dir: Path,
        serve: Callable[[OnceRequest], OnceOutput],
        *,
        prompt: Callable[[PromptRequest], PromptAnswer] | None = None,
        read_timeout: float = READ_TIMEOUT,
        uid: int | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.state_dir = state_dir
        self.serve = serve
        self.prompt = prompt
        self.read_timeout = read_timeout
        self.uid = os.geteuid() if uid is None else uid
        self._slots = threading.BoundedSemaphore(max_connections)
        self._listener: socket.socket | None = None
        self._dir_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._wake = socket.socketpair()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> Path:
        return self.state_dir / SOCKET_NAME

    def start(self) -> None:
        """Listen, replacing what a killed daemon (or anyone) left at the socket's name: the
        caller holds the workspace's daemon lock, so the name is its. Raise OSError if the
        socket cannot be made."""
        dir_fd = _open_dir(self.state_dir)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(SOCKET_NAME, dir_fd=dir_fd)  # a link itself, never what it names
            # 0600 from the start: a chmod after the bind would leave a moment open to others.
            # The umask is the process's; this runs before the daemon's other threads start.
            umask = os.umask(0o177)
            try:
                listener.bind(_address(dir_fd, self.state_dir))
            finally:
                os.umask(umask)
            info = os.stat(SOCKET_NAME, dir_fd=dir_fd, follow_symlinks=False)
            listener.listen(MAX_CONNECTIONS)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            os.close(dir_fd)
            raise
        self._listener, self._dir_fd = listener, dir_fd
        self._inode = (info.st_dev, info.st_ino)
        self._thread = threading.Thread(
            target=self._accept_loop, name="assembler-control", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop listening and remove the socket (if it is still ours). Connections being
        answered finish on their own threads."""
        with contextlib.suppress(OSError):
            self._wake[1].send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._unlink()
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for end in self._wake:
            end.close()

    def _unlink(self) -> None:
        """Remove the socket's name, unless something else has taken it since."""
        if self._dir_fd is None:
            return
        with contextlib.suppress(OSError):
            info = os.stat(SOCKET_NAME, dir_fd=self._dir_fd, follow_symlinks=False)
            if (info.st_dev, info.st_ino) == self._inode:
                os.unlink(SOCKET_NAME, dir_fd=self._dir_fd)

    def _accept_loop(self) -> None:
        try:
            self._accept_all()
        except Exception:
            # Without its name, clients find no socket and assemble at once, instead of
            # waiting for an answer from a listener nobody accepts for.
            log.exception("the --once socket failed; --once runs without the daemon")
            self._unlink()

    def _accept_all(self) -> None:
        listener = self._listener
        assert listener is not None
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(self._wake[0], selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self._wake[0]:
                        return
                    try:
                        conn, _ = listener.accept()
                    except OSError:  # gone before we took it
                        continue
                    if not self._slots.acquire(blocking=False):
                        log.warning("%d --once clients at once; one dropped", MAX_CONNECTIONS)
                        conn.close()
                        continue
                    try:
                        threading.Thread(
                            target=self._handle, args=(conn,), name="assembler-once", daemon=True
                        ).start()
                    except RuntimeError as error:  # no thread to be had: this client goes cold
                        log.warning("cannot answer a --once client: %s", error)
                        self._slots.release()
                        conn.close()

    def _handle(self, conn: socket.socket) -> None:
        # Whatever a client sends or does, this thread ends and the daemon goes on.
        try:
            with conn:
                answer = self._answer(conn)
                if answer is not None:
                    conn.settimeout(SEND_TIMEOUT)
                    conn.sendall(_line(answer))
        except OSError as error:
            log.debug("--once client: %s", error)
        except Exception:
            log.exception("answering a --once client failed")
        finally:
            self._slots.release()

    def _answer(self, conn: socket.socket) -> dict[str, Any] | None:
        pid, uid = _peer(conn)
        # The line is read (not parsed) before a refusal too: answered while it is still being
        # sent, the client would see its send fail instead of the reason.
        try:
            line = _read_line(conn, MAX_REQUEST_BYTES, self.read_timeout)
        except TimeoutError:
            log.debug("dropped a --once client (pid %d) that said nothing", pid)
            return None
        except _TooLong as error:
            line, too_long = None, f"a request line is {error}"
        else:
            too_long = ""
        if uid != self.uid:
            log.warning("refused a --once request from uid %d (pid %d)", uid, pid)
            return _refusal("refused", "only the daemon's own user may ask it")
        if too_long:
            return _refusal("bad request", too_long)
        if line is None:
            return None
        try:
            request = parse_request(json.loads(line))
        except ValueError as error:  # not JSON, or not UTF-8
            return _refusal("bad request", f"not a JSON line ({error})")
        except NotServed as error:
            return _refusal(error.reason, error.message)
        try:
            if isinstance(request, PromptRequest):
                if self.prompt is None:
                    return _refusal("refused", "this daemon answers no prompts")
                return self.prompt(request).to_answer()
            return once_answer(self.serve(request))
        except NotServed as error:
            return _refusal(error.reason, error.message)
        except Exception as error:
            log.exception("serving a request (pid %d) failed", pid)
            return _refusal("failed", f"{type(error).__name__}: {error}")


# --- The client ------------------------------------------------------------------------------


def ask_daemon(
    state_dir: Path,
    request: OnceRequest,
    *,
    pid: int | None = None,
    connect_timeout: float | None = None,
    answer_timeout: float | None = None,
) -> OnceOutput:
    """Given the state folder, a --once request and the pid of the daemon that holds the
    workspace's lock (None: not known), return what the daemon answers.

    Raise NotServed when it does not: no socket, nobody listening, a listener of another user
    or process, no connection within `connect_timeout` or no answer within `answer_timeout`
    seconds (CONNECT_TIMEOUT, ANSWER_TIMEOUT), an answer that is not one, or the daemon
    declining (other options, stopping, a failed assembly).
    """
    connect_timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
    answer_timeout = ANSWER_TIMEOUT if answer_timeout is None else answer_timeout
    sock = _connect(state_dir, connect_timeout)
    with sock:
        data = _exchange(
            sock, request.to_request(), pid, MAX_ANSWER_BYTES, time.monotonic() + answer_timeout
        )
    return output_of(data)


def ask_prompt(
    state_dir: Path,
    request: PromptRequest,
    *,
    budget: float = PROMPT_BUDGET,
    pid: int | None = None,
) -> PromptAnswer:
    """Given the state folder, a prompt request, the caller's budget in seconds (for the
    connection, the request and the answer in all) and the pid of the daemon that holds the
    workspace's lock (None: not known), return the daemon's answer.

    Raise NotServed when there is none: no socket (at once: nothing is waited for), nobody
    listening, a listener of another user or process, no answer within the budget, an answer
    that is not one, or the daemon declining (busy with an assembly, stopping, failed).
    """
    deadline = time.monotonic() + budget
    sock = _connect(state_dir, budget)
    with sock:
        data = _exchange(sock, request.to_request(), pid, MAX_PROMPT_ANSWER_BYTES, deadline)
    return PromptAnswer.from_answer(data)


def _exchange(
    sock: socket.socket, request: dict[str, Any], pid: int | None, limit: int, deadline: float
) -> dict[str, Any]:
    """Given a connected socket, a request's data, the pid of the daemon that should serve it
    (None: not known), the longest answer in bytes and the monotonic time by which it must have
    come, check the peer, send the request and return the answer's data.

    Raise NotServed for a peer of another user or process, no answer in time, an answer that is
    not one, or the daemon's refusal.
    """
    peer_pid, peer_uid = _peer(sock)
    if peer_uid != os.geteuid():
        raise NotServed("refused", f"the socket is served by uid {peer_uid}")
    if pid is not None and peer_pid != pid:
        raise NotServed("refused", f"the socket is served by pid {peer_pid}, not {pid}")
    waited = f"{max(deadline - time.monotonic(), 0.0):.3g} s"
    try:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        sock.sendall(_line(request))
        line = _read_line(sock, limit, max(deadline - time.monotonic(), 1e-3))
    except TimeoutError:
        raise NotServed("timeout", f"no answer within {waited}") from None
    except _TooLong as error:
        raise NotServed("bad answer", f"the answer is {error}") from None
    except OSError as error:
        raise NotServed("absent", f"the connection failed ({error})") from None
    if line is None:
        raise NotServed("bad answer", "the connection closed without an answer")
    return _answer_data(line)


def _connect(state_dir: Path, timeout: float) -> socket.socket:
    try:
        dir_fd = _open_dir(state_dir)
    except OSError as error:
        raise NotServed("absent", f"no state folder ({error.strerror})") from None
    try:
        try:
            info = os.stat(SOCKET_NAME, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as error:
            raise NotServed("absent", f"no {SOCKET_NAME} ({error.strerror})") from None
        if not stat.S_ISSOCK(info.st_mode):
            raise NotServed("absent", f"{SOCKET_NAME} is not a socket")
        if info.st_uid != os.geteuid():
            raise NotServed("refused", f"{SOCKET_NAME} belongs to uid {info.st_uid}")
        if info.st_nlink != 1:
            # A hard link to another workspace's socket would send this prompt there.
            raise NotServed("refused", f"{SOCKET_NAME} has {info.st_nlink} links, not 1")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(timeout)
            sock.connect(_address(dir_fd, state_dir))
        except OSError as error:
            sock.close()
            raise NotServed("absent", f"cannot connect ({error})") from None
        return sock
    finally:
        os.close(dir_fd)


def _answer_data(line: bytes) -> dict[str, Any]:
    """Given an answer line, return its data when `ok` is true. Raise NotServed with the
    daemon's reason for a refusal, "bad answer" for anything else."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: a forged line of nested brackets
        raise NotServed("bad answer", "not a JSON line") from None
    if not isinstance(data, dict):
        raise NotServed("bad answer", "not a JSON object")
    if data.get("ok") is True:
        return data
    reason, message = data.get("error"), data.get("message")
    if data.get("ok") is not False or reason not in REASONS or not isinstance(message, str):
        raise NotServed("bad answer", "neither an output nor a refusal")
    assert isinstance(reason, str)
    raise NotServed(reason, message[:300])
