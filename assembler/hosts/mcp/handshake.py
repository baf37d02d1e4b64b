"""`assemble mcp`'s answer to `initialize`, sent before the MCP SDK is imported.

A host waits for the answer to `initialize` before it goes on (and Claude Code gives up on the
tools after 2 s), while importing the SDK takes the better part of half a second. So the
first line on stdin is read here, while another thread imports the server: when it is a plain
`initialize` request, the answer the SDK's server would give is written at once. The line is
then handed to the server like every other (its session goes through the handshake as usual),
and the server's own answer to it is not written again (see `assembler.hosts.mcp.server`,
which also checks that the two answers are the same). Anything else on the first line (another
request, a broken line, an `initialize` with parameters out of the ordinary) is left to the
server alone.

Nothing here imports the SDK: what the answer holds (the protocol versions the SDK negotiates,
the server's capabilities, name and instructions) is written out, and the tests compare it with
the SDK's.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from assembler import __version__

SERVER_NAME = "scratchpad-assembler"

INSTRUCTIONS = """\
scratchpad-assembler: working memory that survives context compaction. Save goals, findings,
artifacts and errors with `scratchpad` (or the whole notepad with `session_scratchpad`); what
you save appears in SCRATCHPAD.md, which your host shows you. Observations that were too large
for the context come with a `scratchpad_id` and a summary: read slices of them with
`scratchpad_read`. Search long-term memory with `memory_search` before answering questions
about prior work. If your host does not show you SCRATCHPAD.md, read it with `scratchpad_view`
(or the resource scratchpad://current) at the start of a task."""

# The revisions the SDK negotiates in `initialize` (mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS):
# the client's when it is one of them, else the newest.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# What the SDK's server declares for the handlers `build_server` gives it.
CAPABILITIES: dict[str, Any] = {
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}

# A first line longer than this is not a plain `initialize`: the server reads it.
_MAX_LINE = 1 << 20
_CLIENT_INFO_KEYS = frozenset({"name", "version", "title", "description", "websiteUrl"})

T = TypeVar("T")


@dataclass(frozen=True)
class EarlyStart:
    """What was read from stdin before the server started (to be read by it first), and the
    answer to the `initialize` request already answered (None when none was)."""

    pending: bytes
    answer: dict[str, Any] | None = None

    @property
    def answered(self) -> int | str | None:
        """The id of the `initialize` request already answered, None when none was."""
        return None if self.answer is None else self.answer["id"]


def initialize_result(protocol_version: str) -> dict[str, Any]:
    """Given the protocol version a client asks for, return the result of its `initialize`."""
    negotiated = (
        protocol_version if protocol_version in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    )
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": negotiated,
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def answer_first_line(
    load_server: Callable[[], T], stdin: int = 0, stdout: int = 1
) -> tuple[EarlyStart, T]:
    """Given a function that imports the server, run it in a thread while the first line of
    `stdin` is read and, when it is a plain `initialize` request, answered on `stdout`; return
    what was read and answered, and what `load_server` returned. Raise what it raises."""
    loaded: list[T] = []
    failed: list[BaseException] = []

    def load() -> None:
        try:
            loaded.append(load_server())
        except BaseException as error:  # raised again in the caller's thread
            failed.append(error)

    loader = threading.Thread(target=load, name="mcp-import", daemon=True)
    loader.start()
    try:
        early = _answer_initialize(stdin, stdout)
    finally:
        loader.join()
    if failed:
        raise failed[0]
    return early, loaded[0]


def _answer_initialize(stdin: int, stdout: int) -> EarlyStart:
    pending = _read_first_line(stdin)
    line, newline, _ = pending.partition(b"\n")
    request = _plain_initialize(line) if newline else None
    if request is None:
        return EarlyStart(pending)
    answer = {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": initialize_result(request["params"]["protocolVersion"]),
    }
    data = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    try:
        while data:
            data = data[os.write(stdout, data) :]
    except OSError:  # the client is gone: the server finds that out for itself
        return EarlyStart(pending)
    return EarlyStart(pending, answer)


def _read_first_line(stdin: int) -> bytes:
    """Return what `stdin` gives up to its first line end (and whatever came with it), up to
    its end, or more than `_MAX_LINE` bytes without one."""
    chunks: list[bytes] = []
    size = 0
    while size <= _MAX_LINE:
        try:
            chunk = os.read(stdin, 65536)
        except InterruptedError:  # pragma: no cover - Python retries EINTR itself
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            break
    return b"".join(chunks)


def _plain_initialize(line: bytes) -> dict[str, Any] | None:
    """Given the first line, return it parsed when it is an `initialize` request whose answer
    cannot be anything but a success, else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = message["id"], message["params"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize":
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if not isinstance(params, dict) or set(params) != {
        "protocolVersion",
        "capabilities",
        "clientInfo",
    }:
        return None
    info, capabilities = params["clientInfo"], params["capabilities"]
    if not isinstance(params["protocolVersion"], str):
        return None
    if not isinstance(info, dict) or not {"name", "version"} <= set(info) <= _CLIENT_INFO_KEYS:
        return None
    if not all(isinstance(value, str) for value in info.values()):
        return None
    # Capabilities the SDK reads into its own types: only those whose shapes cannot fail it.
    if not isinstance(capabilities, dict) or not all(
        key in ("roots", "sampling", "elicitation", "experimental") and isinstance(value, dict)
        for key, value in capabilities.items()
    ):
        return None
    roots = capabilities.get("roots", {})
    if not all(key == "listChanged" and isinstance(value, bool) for key, value in roots.items()):
        return None
    return message
