"""`assemble mcp`: every agent-facing tool over MCP on stdio, for hosts that speak it.

Tools: `scratchpad` (the sectioned tool), `session_scratchpad` (`{content, mode}` on section
main), `scratchpad_put` and `scratchpad_read` (parked observations), `scratchpad_view` (the
scratchpad as hosts prepend it, read-only) and `memory_search` (the memory index); every tool
carries annotations saying whether it only reads. One resource, `scratchpad://current`, is
the same text as `scratchpad_view`, for hosts that attach resources but never see the file.
Each tool is a thin adapter over the core function the CLI calls; a call the agent got wrong
comes back as a tool error (`isError`) with the same message the CLI would print, so the agent
can correct itself.

The server is the SDK's low-level `Server` with hand-written input schemas, and arguments reach
the core unvalidated, so a common mistake (`op` instead of `action`) gets the core's helpful
answer instead of a generic schema error. Core calls are blocking (SQLite, the embedding
model), so they run in a worker thread.

A host waits for `initialize` and `tools/list` before it offers the tools (Claude Code's
`claude -p` waits 2 s by default, then sends its first request without them), so the server
answers them before loading anything a tool needs: the modules behind the tools (the memory
index and its embedder, the observation store, the scratchpad's sections) are imported by the
first call that needs them, and the observation store's collection of expired entries runs on
the first observation call of a session. What is left before the first answer is the MCP SDK's
own import (see bench/bench_startup.py).

The stdio transport does what the SDK's `stdio_server` does, built on the SDK's public API
only: while serving, fd 0 reads the null device and fd 1 goes to stderr, so a stray print or a
child process cannot read or corrupt the wire, which the transport reads and writes through
private duplicates. Its reader is stricter: stdin is decoded as strict UTF-8, and a line that
is not JSON, or not a JSON-RPC message, gets a -32700 or -32600 error response instead of the
SDK's silence, which left a client waiting forever.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TextIO

import anyio
import anyio.lowlevel
import anyio.to_thread
import pydantic
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from assembler import __version__
from assembler.clock import local_timezone
from assembler.config.schema import Config
from assembler.errors import AssemblerError, ObservationError
from assembler.hosts.mcp.handshake import INSTRUCTIONS, SERVER_NAME, EarlyStart

if TYPE_CHECKING:
    from types import ModuleType

    from assembler.memory.lifecycle import WarmMemory
    from assembler.observations.store import ObservationStore
    from assembler.pad.tool_calls import Answer

log = logging.getLogger("assembler.mcp")

SCRATCHPAD_DESCRIPTION = """\
Working memory for the current session. Use this to save facts discovered mid-task (file \
paths, config values, error messages) so they are not lost across tool calls or when the \
context is compacted.

When to use:
- You found a file path during exploration and need to reference it later.
- An error occurred and you want to record what was tried before attempting a fix.
- You are in a multi-step task and need to remember the overall goal.
- You want to collect findings before composing the final answer.

When NOT to use: progress tracking (use a todo tool), or final answers (they go in your reply).

Actions: write (overwrite a section), append (add to the end of a section), read (one section, \
or all if section is omitted), clear (one section, or all if section is omitted). Sections: \
goal, findings, artifacts, errors, main (default), or a custom lowercase name.

Common mistakes: missing `content` on write/append; putting the text in `section` instead of \
`content`; `op` instead of `action`; passing the text as the action value.
Example: {"action": "append", "section": "findings", "content": "Port is 8080"}"""

SCRATCHPAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["write", "append", "read", "clear"],
            "description": "One of: write, append, read, clear.",
        },
        "section": {
            "type": "string",
            "description": "Section name: goal, findings, artifacts, errors, main (or a custom "
            "lowercase name). Defaults to main on write/append; omit on read/clear for all.",
        },
        "content": {
            "type": "string",
            "description": "Required for write and append. The text to save.",
        },
    },
    "required": ["action"],
}

SESSION_DESCRIPTION = """\
Persist important working state (plans, findings, decisions) that survives context \
compaction. Content is prepended to each message you receive. Use it to save: multi-step \
plans, key findings, important decisions, accumulated state. Budget: ~{cap} tokens. Use mode \
"replace" to overwrite the whole scratchpad, or "append" to add incrementally; a replace over \
budget is truncated, an append over budget is rejected."""

SESSION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "The scratchpad content to save"},
        "mode": {
            "type": "string",
            "enum": ["replace", "append"],
            "default": "replace",
            "description": "replace: overwrite entire scratchpad. append: add to existing content.",
        },
    },
    "required": ["content"],
}

PUT_DESCRIPTION = """\
Park a large text in the scratchpad so that it does not stay in your context: a long log, a \
file dump, a big tool output you will need again. Returns a scratchpad_id, the size, and a \
summary (the first and last 500 characters and how many were omitted); read it back in \
slices with scratchpad_read. Entries live about an hour and belong to the current turn."""

PUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "The text to park."},
        "metadata": {
            "type": "object",
            "description": "Anything worth keeping beside it (path, command, encoding); "
            "returned as is.",
        },
        "step": {
            "type": "integer",
            "description": "The step number of the turn, so that later calls can refer to "
            "{{stepN.content}}.",
        },
        "executor": {"type": "string", "description": "The tool that produced the text."},
    },
    "required": ["content"],
}

READ_DESCRIPTION = """\
Reads from the scratchpad an observation previously saved: a tool result that came back as \
{"scratchpad_id": ..., "summary": ...} instead of its full content because it was too large. \
Calling it several times on the same id with different modes is the normal use.

Modes: head (default) — the first n characters (default 2000), to see the format or the \
start; tail — the last n characters, for the end, the latest events; range — characters \
start to end (exclusive), to explore a slice you identified; lines — lines start to end \
(numbered from 1, inclusive); grep — the lines matching a regular expression `pattern`, with \
`context` lines around and their line numbers (then read around a hit with lines); full — \
everything, only for small observations. Binary observations are read by byte offsets \
(head, tail, range) and shown as a hex dump."""

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scratchpad_id": {
            "type": "string",
            "description": "Id obtained from the 'scratchpad_id' field of a previous observation.",
        },
        "mode": {
            "type": "string",
            "enum": ["full", "head", "tail", "range", "lines", "grep"],
            "default": "head",
        },
        "n": {
            "type": "integer",
            "description": "For mode head/tail: number of characters to read. Default 2000. "
            "For lines without end: number of lines (default 100).",
        },
        "start": {
            "type": "integer",
            "description": "For mode range: start index. For mode lines: first line (from 1).",
        },
        "end": {
            "type": "integer",
            "description": "For mode range: end index (exclusive). For mode lines: last line "
            "(inclusive).",
        },
        "pattern": {
            "type": "string",
            "description": "For mode grep: a regular expression, matched against each line.",
        },
        "context": {
            "type": "integer",
            "description": "For mode grep: lines shown before and after a match. Default 2.",
        },
        "max_matches": {
            "type": "integer",
            "description": "For mode grep: matching lines listed at most. Default 50.",
        },
        "ignore_case": {"type": "boolean", "description": "For mode grep. Default false."},
        "any_turn": {
            "type": "boolean",
            "description": "Read an observation of an earlier turn (they are hidden otherwise).",
        },
    },
    "required": ["scratchpad_id"],
}

SCRATCHPAD_URI = "scratchpad://current"

VIEW_DESCRIPTION = """\
Shows your scratchpad as it is now: the human's mood and a response strategy, what the \
session is about, the memories that bear on it, the time of day, and the sections you saved. \
Read-only. Hosts that show SCRATCHPAD.md by themselves give you this already; otherwise read \
it at the start of a task and when you need to recall what you saved."""

VIEW_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

SEARCH_DESCRIPTION = """\
Recall step: search the long-term memory (MEMORY.md, memory/*.md daily notes) before \
answering questions about prior work, decisions, dates, people, preferences or todos. Hybrid \
search (embeddings + keywords); returns the top snippets with path and line numbers."""

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for, in your own words."},
        "k": {
            "type": "integer",
            "description": "How many hits to return. Default 5.",
            "default": 5,
        },
    },
    "required": ["query"],
}

# What a host that defers tools behind a search (Claude Code's Tool Search) is told, in the
# tool's `_meta`: the words it finds each tool by, and which tool it never defers. Hosts that
# know neither key ignore them. `scratchpad` is always loaded: the agent reaches for working
# memory unprompted, and a search for "scratchpad" ranked the five other tools, which all
# carry the word in their names, above it.
ALWAYS_LOAD_META = "anthropic/alwaysLoad"
SEARCH_HINT_META = "anthropic/searchHint"
ALWAYS_LOADED = frozenset({"scratchpad"})
SEARCH_HINTS: dict[str, str] = {
    "scratchpad": "scratchpad working memory: save goal, findings, artifacts, errors",
    "session_scratchpad": "scratchpad notepad: replace or append the whole session scratchpad",
    "scratchpad_put": "scratchpad: park a large output, log or file dump out of context",
    "scratchpad_read": "scratchpad: read a parked observation by scratchpad_id, grep, lines",
    "scratchpad_view": "scratchpad: show SCRATCHPAD.md, mood, context and saved sections",
    "memory_search": "search long-term memory notes, MEMORY.md, prior work and decisions",
}


def tool_meta(name: str) -> dict[str, Any]:
    """Given a tool's name, return its `_meta`: its search hint, and whether it is always
    loaded."""
    meta: dict[str, Any] = {SEARCH_HINT_META: SEARCH_HINTS[name]}
    if name in ALWAYS_LOADED:
        meta[ALWAYS_LOAD_META] = True
    return meta


@dataclass
class ToolResult:
    """What a tool answers: text blocks for the agent, optional structured data, error flag."""

    texts: list[str]
    data: dict[str, Any] | None = None
    is_error: bool = False

    def to_mcp(self) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(text=text) for text in self.texts],
            structured_content=self.data,
            is_error=self.is_error,
        )


Handler = Callable[[Mapping[str, Any]], ToolResult]


@dataclass
class Tools:
    """The tools of one workspace: their MCP definitions and the functions behind them.

    `clock` (for the observation store) is injected so that tests can control time.
    """

    config: Config
    clock: Callable[[], datetime] | None = None
    handlers: dict[str, Handler] = field(init=False)
    # The memory index is opened by the first search and stays open between searches (each
    # call still syncs it first); calls run in worker threads, so one search at a time.
    _memory: WarmMemory | None = field(init=False, default=None)
    _memory_lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    # Whether this session's first observation call has collected the expired entries.
    _collect_lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _observations: Any = field(init=False, default=None)  # `work.Observations`, once a call asks

    def __post_init__(self) -> None:
        self.handlers = {
            "scratchpad": self.scratchpad,
            "session_scratchpad": self.session_scratchpad,
            "scratchpad_put": self.scratchpad_put,
            "scratchpad_read": self.scratchpad_read,
            "memory_search": self.memory_search,
            "scratchpad_view": self.scratchpad_view,
        }

    def definitions(self) -> list[types.Tool]:
        """Return the MCP definitions of the tools, with their input schemas and annotations
        that say which tools only read and which ones overwrite."""
        session = SESSION_DESCRIPTION.format(cap=self.config.caps.agent)

        def tool(
            name: str, title: str, description: str, schema: dict[str, Any], **hints: bool
        ) -> types.Tool:
            annotations = types.ToolAnnotations(title=title, open_world_hint=False, **hints)
            return types.Tool(
                name=name,
                title=title,
                description=description,
                input_schema=schema,
                annotations=annotations,
                _meta=tool_meta(name),
            )

        writes = {"read_only_hint": False, "idempotent_hint": False}
        reads = {"read_only_hint": True}
        return [
            # write and clear replace text, so the sectioned tool counts as destructive
            tool(
                "scratchpad",
                "Scratchpad sections",
                SCRATCHPAD_DESCRIPTION,
                SCRATCHPAD_SCHEMA,
                destructive_hint=True,
                **writes,
            ),
            tool(
                "session_scratchpad",
                "Session scratchpad",
                session,
                SESSION_SCHEMA,
                destructive_hint=True,
                **writes,
            ),
            tool(
                "scratchpad_put",
                "Park an observation",
                PUT_DESCRIPTION,
                PUT_SCHEMA,
                destructive_hint=False,
                **writes,
            ),
            tool(
                "scratchpad_read",
                "Read a parked observation",
                READ_DESCRIPTION,
                READ_SCHEMA,
                **reads,
            ),
            tool("scratchpad_view", "View the scratchpad", VIEW_DESCRIPTION, VIEW_SCHEMA, **reads),
            tool("memory_search", "Search memory", SEARCH_DESCRIPTION, SEARCH_SCHEMA, **reads),
        ]

    def resources(self) -> list[types.Resource]:
        """Return the MCP resources: the current scratchpad, as hosts prepend it."""
        return [
            types.Resource(
                uri=SCRATCHPAD_URI,
                name="scratchpad",
                title="Session scratchpad",
                description=VIEW_DESCRIPTION,
                mime_type="text/markdown",
            )
        ]

    def read_resource(self, uri: str) -> str:
        """Given a resource URI, return its text. Raise AssemblerError for an unknown URI."""
        if uri != SCRATCHPAD_URI:
            raise AssemblerError(f"Unknown resource {uri!r}; the one resource is {SCRATCHPAD_URI}")
        return self.view_text()

    def view_text(self) -> str:
        """Return the scratchpad as hosts prepend it: the assembled part while it is fresh and
        the agent's sections as the journal holds them now."""
        zone = local_timezone(self.config.time.timezone)
        now = self.clock() if self.clock is not None else datetime.now(zone)
        text: str
        text, fresh, written = _work().view(self.config, now)
        if fresh:
            return text
        why = "has expired" if written else "has not been written yet"
        note = (
            f"(The assembled part of the scratchpad (mood, context, memories) {why}; only your "
            "own sections are shown. It is renewed by `assemble --once` or the daemon.)"
        )
        return f"{note}\n{text}" if text else note

    def scratchpad_view(self, arguments: Mapping[str, Any]) -> ToolResult:
        _check_keys("scratchpad_view", arguments, VIEW_SCHEMA)
        return ToolResult([self.view_text()])

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Given a tool name and its arguments, run the tool and return its result.

        Mistakes and AssemblerErrors become error results with their one-line message; an
        unexpected exception becomes an error result naming it (its traceback is logged).
        """
        handler = self.handlers.get(name)
        if handler is None:
            known = ", ".join(self.handlers)
            return ToolResult([f"Unknown tool {name!r}; the tools are: {known}."], is_error=True)
        try:
            return handler(arguments or {})
        except AssemblerError as error:
            return ToolResult([str(error)], is_error=True)
        except Exception as error:
            log.exception("tool %s failed", name)
            return ToolResult(
                [f"Unexpected error in {name}: {type(error).__name__}: {error} (please report)"],
                is_error=True,
            )

    def close(self) -> None:
        """Close what the tools opened (the memory index, if a search opened it)."""
        with self._memory_lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None

    @contextmanager
    def _store(self) -> Iterator[ObservationStore]:
        """Yield the workspace's observation store, open (`work.Observations`)."""
        with self._collect_lock:
            if self._observations is None:
                self._observations = _work().Observations(self.config, self.clock)
            observations = self._observations
        with observations.store() as store:
            yield store

    # -- the tools -------------------------------------------------------------------------

    def scratchpad(self, arguments: Mapping[str, Any]) -> ToolResult:
        return _from_answer(_work().scratchpad_call(self.config, arguments))

    def session_scratchpad(self, arguments: Mapping[str, Any]) -> ToolResult:
        _check_keys("session_scratchpad", arguments, SESSION_SCHEMA)
        if "content" not in arguments:
            return ToolResult(
                [
                    'Missing `content`: the text to save, e.g. {"content": "## Plan\\n1. ...", '
                    '"mode": "replace"}.'
                ],
                is_error=True,
            )
        mode = arguments.get("mode", "replace")
        return _from_answer(_work().session_call(self.config, arguments["content"], mode))

    def scratchpad_put(self, arguments: Mapping[str, Any]) -> ToolResult:
        _check_keys("scratchpad_put", arguments, PUT_SCHEMA)
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ObservationError(
                f"`content` must be the text to park (a string), got {type(content).__name__}"
            )
        metadata = arguments.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ObservationError('`metadata` must be an object, e.g. {"path": "/tmp/x.log"}')
        executor = arguments.get("executor")
        if executor is not None and not isinstance(executor, str):
            raise ObservationError("`executor` must be the name of a tool (a string)")
        with self._store() as store:
            # An explicit put always parks: the agent asked for it, whatever the size.
            synthetic = store.park(
                {**metadata, "content": content},
                step=arguments.get("step"),
                executor=executor,
            )
        return ToolResult([_work().parked_json(synthetic)], synthetic)

    def scratchpad_read(self, arguments: Mapping[str, Any]) -> ToolResult:
        _check_keys("scratchpad_read", arguments, READ_SCHEMA)
        options = {k: arguments[k] for k in ("n", "start", "end", "pattern") if k in arguments}
        for name in ("context", "max_matches", "ignore_case"):
            if name in arguments:
                options[name] = arguments[name]
        with self._store() as store:
            found = store.read(
                arguments.get("scratchpad_id"),
                arguments.get("mode", "head"),
                max_chars=self.config.observations.max_read_chars,
                any_turn=bool(arguments.get("any_turn", False)),
                **options,
            )
        # The slice goes to the agent once, as text; the structured part says where it sits.
        data = found.to_dict(body=False)
        body = _work().read_body(
            found.data, found.start, found.mode, found.text, arguments.get("pattern")
        )
        return ToolResult([f"[{found.position()}]", body], data)

    def memory_search(self, arguments: Mapping[str, Any]) -> ToolResult:
        _check_keys("memory_search", arguments, SEARCH_SCHEMA)
        query = arguments.get("query")
        k = arguments.get("k", 5)
        if not isinstance(query, str) or not query.strip():
            raise AssemblerError('`query` must be what to look for, e.g. "deploy rollback"')
        if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= 50:
            raise AssemblerError(f"`k` {k!r}: give a number of hits from 1 to 50")
        if not self.config.memory.enabled:
            raise AssemblerError(
                "Memory search is off (memory.enabled = false in the config); turn it on to "
                "search MEMORY.md and memory/*.md"
            )

        with self._memory_lock:
            self._memory, hits, records, why = _work().search(self.config, self._memory, query, k)
        lines = [
            f"{rank}. {hit.path}:{hit.start_line}-{hit.end_line} ({hit.score:.3f})\n"
            f"   {hit.snippet}"
            for rank, hit in enumerate(hits, start=1)
        ]
        text = "\n".join(lines) if lines else f"No memories matched {query!r}."
        if why is not None:
            text += f"\n(degraded: {why})"
        return ToolResult([text], {"hits": records, "degraded": why})


def _work() -> ModuleType:
    """The tools' work (`assembler.hosts.mcp.work`), loaded by the first call that needs it."""
    # Here, not at the top: what the tools do loads the sections, the observations and the
    # memory search, and a host lists the tools within two seconds of the server's start.
    from assembler.hosts.mcp import work

    return work


def _check_keys(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    known = schema["properties"]
    unknown = [key for key in arguments if key not in known]
    if unknown:
        raise AssemblerError(
            f"Unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)}: {tool} takes {', '.join(known)}"
        )


def _from_answer(answer: Answer) -> ToolResult:
    """Given a scratchpad Answer, return its message, and on a read the text that was read."""
    data = answer.data
    texts = [answer.message]
    if data.get("action") == "read":
        if data.get("content"):
            texts.append(str(data["content"]))
        for group in ("sections", "subsystem"):
            for name, content in (data.get(group) or {}).items():
                texts.append(f"## {name}\n{content}")
    payload = {"ok": answer.ok, "message": answer.message, "data": data}
    return ToolResult(texts, payload, is_error=not answer.ok)


def build_server(tools: Tools) -> Server[Any]:
    """Given the tools of a workspace, return the MCP server that lists and calls them."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.definitions())

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments)
        return result.to_mcp()

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=tools.resources())

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        text = await anyio.to_thread.run_sync(tools.read_resource, params.uri)
        content = types.TextResourceContents(uri=params.uri, mime_type="text/markdown", text=text)
        return types.ReadResourceResult(contents=[content])

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


class RejectedLine(Exception):
    """A line on stdin that is not a JSON-RPC message, and the error response it gets."""

    def __init__(self, code: int, message: str, request_id: types.RequestId | None = None):
        super().__init__(message)
        self.response = types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=types.ErrorData(code=code, message=message),
        )


# JSON-RPC's whitespace: a line of only these is blank, whatever else Unicode calls a space.
_JSON_WHITESPACE = b" \t\r\n"


def read_message(line: bytes) -> types.JSONRPCMessage | None:
    """Given one line read from stdin, return the JSON-RPC message it carries, or None if blank.

    Raise RejectedLine with a -32700 (Parse error) response if the line is not valid UTF-8 or not
    valid JSON, or a -32600 (Invalid Request) response if it is JSON but not a JSON-RPC message.
    """
    if not line.strip(_JSON_WHITESPACE):
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = error.object[error.start : error.end].hex(" ")
        raise RejectedLine(
            types.PARSE_ERROR,
            f"Parse error: the line is not valid UTF-8 at byte {error.start} (0x{bad}: "
            f"{error.reason}); send JSON text encoded as UTF-8",
        ) from None
    try:
        # The very call the SDK's transport makes, so valid messages read exactly as before.
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except pydantic.ValidationError as error:
        problems = error.errors(include_url=False)
    else:
        if isinstance(message, types.JSONRPCNotification):
            _check_no_id(pydantic_core.from_json(text))
        return message
    for problem in problems:
        if problem["type"] == "json_invalid":
            detail = problem["msg"].removeprefix("Invalid JSON: ")
            raise RejectedLine(
                types.PARSE_ERROR, f"Parse error: the line is not valid JSON ({detail})"
            )
    # Valid JSON to the parser that just rejected the message, so it parses here too.
    raise _invalid_request(pydantic_core.from_json(text), problems)


def _check_no_id(notification: dict[str, Any]) -> None:
    """Given a JSON object that validated as a notification, raise RejectedLine if it has an id.

    The SDK's types ignore an id that is neither a string nor an integer (`true`, `null`, `1.5`)
    and read the request as a notification, which gets no answer: the client would wait forever.
    """
    if "id" in notification:
        got = pydantic_core.to_json(notification["id"]).decode()
        raise RejectedLine(
            types.INVALID_REQUEST,
            f"Invalid Request: at 'id': a request id must be a string or an integer, got {got}",
        )


def _invalid_request(value: Any, problems: list[Any]) -> RejectedLine:
    """Given a JSON value that is not a JSON-RPC message and pydantic's complaints about it
    (one set per kind of message), return the -32600 rejection that says what is wrong.
    """
    if not isinstance(value, dict):
        kind = "an array (batches are not supported)" if isinstance(value, list) else "a scalar"
        return RejectedLine(
            types.INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {kind}"
        )
    request_id = value.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    if "method" in value:
        kind = "JSONRPCRequest" if "id" in value else "JSONRPCNotification"
    elif "result" in value or "error" in value:
        kind = "JSONRPCResponse" if "result" in value else "JSONRPCError"
        # A broken response: its id names one of our requests, not one of the client's, and
        # echoing it would fail the client's own request that happens to share the number.
        request_id = None
    else:
        return RejectedLine(
            types.INVALID_REQUEST,
            'Invalid Request: a JSON-RPC message needs "method" (a request or notification), '
            'or "result" or "error" (a response)',
            request_id,
        )
    found = [
        f"at '{'.'.join(str(part) for part in problem['loc'][1:])}': {problem['msg']}"
        for problem in problems
        if problem["loc"][:1] == (kind,) and len(problem["loc"]) > 1
    ]
    detail = "; ".join(found) or "not a JSON-RPC 2.0 message"
    return RejectedLine(types.INVALID_REQUEST, f"Invalid Request: {detail}", request_id)


@asynccontextmanager
async def stdio_transport(
    early: EarlyStart | None = None,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage], MemoryObjectSendStream[SessionMessage]]
]:
    """Serve MCP over the process's stdin and stdout, as the SDK's `stdio_server` does, and
    yield the (read, write) streams for `Server.run`.

    While serving, fd 0 reads the null device and fd 1 goes to stderr (see `_claimed`), and both
    are restored on exit. Unlike the SDK's, a line that is not a JSON-RPC message is answered
    with a JSON-RPC error (see `read_message`) instead of vanishing, and the server carries on
    with the next line. The error responses go through the write stream, so that one task
    writes stdout and no two lines interleave. What `early` read from stdin is read first; the
    server's answer to the `initialize` it answered already is not written again (a warning
    says so if it differs). Raise RuntimeError if another transport in this process is serving.
    """
    pending = early.pending if early is not None else b""
    answered = early.answered if early is not None else None
    with (
        _claimed(0, sys.stdin, "rb", _open_stdin_diversion) as stdin_buffer,
        _claimed(1, sys.stdout, "wb", _open_stdout_diversion) as stdout_buffer,
    ):
        stdin = anyio.wrap_file(stdin_buffer)
        stdout = anyio.wrap_file(stdout_buffer)

        # Plain memory streams, as `Server.run` takes from any transport: the sender's context
        # that the SDK's own streams carry along is this reader task's, which sets nothing.
        read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage](0)
        write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
        error_writer = write_stream.clone()

        async def stdin_reader() -> None:
            try:
                async with read_stream_writer, error_writer:
                    async for line in _lines(pending, stdin):
                        try:
                            message = read_message(line)
                        except RejectedLine as rejected:
                            log.warning("Answered a line on stdin with: %s", rejected)
                            await error_writer.send(SessionMessage(rejected.response))
                            continue
                        if message is not None:
                            await read_stream_writer.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                # The server stopped listening; nothing is left to answer.
                await anyio.lowlevel.checkpoint()

        async def stdout_writer() -> None:
            nonlocal answered
            try:
                async with write_stream_reader:
                    async for session_message in write_stream_reader:
                        json = session_message.message.model_dump_json(
                            by_alias=True, exclude_unset=True
                        )
                        if answered is not None and _answers(session_message, answered):
                            _check_same_answer(json, early)
                            answered = None
                            continue
                        await stdout.write(json.encode("utf-8") + b"\n")
                        await stdout.flush()
            except anyio.ClosedResourceError:
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as group:
            group.start_soon(stdin_reader)
            group.start_soon(stdout_writer)
            yield read_stream, write_stream


# The standard descriptors a transport in this process has claimed. A second transport would
# find fd 0 and 1 diverted and serve the null device and stderr as if they were the wire.
_claimed_fds: set[int] = set()
_claimed_fds_lock = threading.Lock()


@contextmanager
def _claimed(
    fd: int, stream: TextIO, mode: Literal["rb", "wb"], open_diversion: Callable[[], int]
) -> Iterator[BinaryIO]:
    """Given a standard descriptor, the sys stream on it and a function that opens what `fd`
    should point at meanwhile, yield a binary file on the wire while `fd` points there, and
    point `fd` back at the wire on exit.

    Best effort, as in the SDK's `stdio_server`: when `stream` is not on `fd` (replaced in
    process), or the descriptors cannot be duplicated or diverted, yield the stream's own buffer
    and leave `fd` on the wire. Raise RuntimeError if another transport has claimed `fd`.
    """
    if not _is_on_fd(stream, fd):
        yield stream.buffer
        return
    with _claimed_fds_lock:
        if fd in _claimed_fds:
            raise RuntimeError(f"Another MCP stdio transport in this process has claimed fd {fd}")
        _claimed_fds.add(fd)
    wire: int | None = None
    try:
        # Above the standard range, so that no dup2 onto fd 0-2 ever lands on the wire's copy;
        # close-on-exec, so that a child process does not inherit the wire either.
        wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        log.warning("Could not duplicate fd %d; serving it in place", fd)
    try:
        if wire is not None and _divert(fd, wire, open_diversion):
            # closefd=False: a worker thread can still block on the wire after the transport
            # exits, so it is never closed and its number never reused under that thread.
            yield os.fdopen(wire, mode, closefd=False)
        else:
            yield stream.buffer
    finally:
        # Released only once `fd` is back on the wire: a later transport must never be handed
        # a diverted descriptor.
        if wire is None or _restore(fd, wire):
            with _claimed_fds_lock:
                _claimed_fds.discard(fd)


def _is_on_fd(stream: TextIO, fd: int) -> bool:
    """Return whether the sys stream `stream` reads or writes the descriptor `fd`."""
    try:
        return stream.buffer.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


def _divert(fd: int, wire: int, open_diversion: Callable[[], int]) -> bool:
    """Point `fd` at what `open_diversion` opens; return whether it took. When it did not, `fd`
    is left on (or put back on) the wire, its duplicate `wire`."""
    try:
        diversion = open_diversion()
    except OSError:
        log.warning("Could not open a diversion for fd %d; serving it in place", fd)
        return False
    try:
        os.dup2(diversion, fd)
    except OSError:
        log.warning("Could not divert fd %d; serving it in place", fd)
        _restore(fd, wire)
        return False
    finally:
        with suppress(OSError):
            os.close(diversion)
    return True


def _restore(fd: int, wire: int) -> bool:
    """Point `fd` back at the wire, its duplicate `wire`; return whether it took."""
    try:
        os.dup2(wire, fd)
    except OSError:
        log.warning("Could not point fd %d back at the MCP client", fd)
        return False
    return True


def _open_stdin_diversion() -> int:
    """Open what fd 0 reads while serving: the null device, so a reader gets end of file."""
    return os.open(os.devnull, os.O_RDONLY)


def _open_stdout_diversion() -> int:
    """Open what fd 1 writes while serving: stderr, or the null device if there is none."""
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


async def _lines(pending: bytes, stdin: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Yield the lines of `pending` (read before the server started), then those of `stdin`,
    the first of which goes on the last, unfinished one of `pending`."""
    *whole, rest = pending.split(b"\n")
    for line in whole:
        yield line + b"\n"
    async for line in stdin:
        yield rest + line
        rest = b""
    if rest:
        yield rest


def _answers(session_message: SessionMessage, request_id: int | str) -> bool:
    """Return whether a message the server writes is its answer to the request `request_id`."""
    message = session_message.message
    return isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and (
        message.id == request_id
    )


def _check_same_answer(json: str, early: EarlyStart | None) -> None:
    """Given the server's answer to the `initialize` answered before it started, log a warning
    if the early answer said anything else."""
    sent = early.answer if early is not None else None
    if pydantic_core.from_json(json) != sent:
        log.warning(
            "The answer to initialize sent before the server started differs from the "
            "server's: %s, not %s",
            pydantic_core.to_json(sent).decode(),
            json,
        )


def serve(config: Config, early: EarlyStart | None = None) -> None:
    """Given a loaded config, serve its workspace's tools over stdio until stdin closes; with
    `early`, what was read from stdin before and the `initialize` answered already (see
    `assembler.hosts.mcp.handshake`)."""
    tools = Tools(config)
    server = build_server(tools)

    async def run() -> None:
        async with stdio_transport(early) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        tools.close()
