"""A mock model server for the end-to-end tests: the hosts' real programs talk to it as to
the Anthropic Messages API, the OpenAI chat completions API or the OpenAI Responses API (streamed,
as Codex asks for it).

It binds 127.0.0.1 on a free port, logs every request it gets (method, path, headers, JSON
body) to `MockModel.requests` and to a JSONL file, and answers what the test scripted:

    with MockModel(tmp_path / "model.jsonl") as model:
        model.script(ToolCall("mcp__scratchpad__scratchpad", {"action": "show"}), Text("Done."))
        ...  # run the host with its base URL set to model.base_url

Each scripted reply answers one *turn* request: a model call that offers tools, which is
how both hosts call the model for the agent's own turn. A model call without tools (a side
call, such as a title or a summary, that a host may make) gets `side_reply` and leaves the
script alone, so a test does not break when a host adds one; neither host made one in the
smoke tests. A turn request past the end of the script gets `default`. Anything else the
hosts ask is answered too: `GET /v1/models`, `POST /v1/messages/count_tokens`; an unknown
path gets a 404 in the API's error shape, and is logged like the rest.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_ID = "mock-model-1"


@dataclass(frozen=True)
class Text:
    """The model answers with this text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asks to run the tool `name` with `arguments` (after saying `text`, if any)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""


Reply = Text | ToolCall


@dataclass
class LoggedRequest:
    """One request as the host sent it, and what the mock answered."""

    index: int
    time: float
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body; the raw text when it is not JSON; None when empty
    api: str | None = None  # "anthropic", "openai" or "responses" for a model call, else None
    turn: bool = False  # a model call that offers tools: it took a scripted reply
    reply: dict[str, Any] | None = None  # the reply's kind and content, for model calls
    status: int = 200

    @property
    def route(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]

    def dump(self) -> str:
        """The whole body as JSON text, for "does the host send X anywhere" checks."""
        return json.dumps(self.body, ensure_ascii=False)

    def texts(self, role: str) -> list[str]:
        """The text of every message of `role` ("user", "assistant", "system"), one string per
        text block, in order; for "system" the Anthropic top-level `system` blocks come first.
        Tool results are not included (see `tool_results`)."""
        body = self.body if isinstance(self.body, dict) else {}
        found: list[str] = []
        if role == "system":
            found.extend(_block_texts(body.get("system")))
            if isinstance(body.get("instructions"), str):  # the Responses API's
                found.append(body["instructions"])
        for message in [*(body.get("messages") or []), *_input_items(body)]:
            if isinstance(message, dict) and message.get("role") == role:
                found.extend(_block_texts(message.get("content")))
        return found

    def tool_results(self) -> list[str]:
        """The text of every tool result the host sent back (either API's shape)."""
        body = self.body if isinstance(self.body, dict) else {}
        found: list[str] = []
        for item in _input_items(body):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                found.append(output if isinstance(output, str) else json.dumps(output))
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            if message.get("role") == "tool":
                found.extend(_block_texts(message.get("content")))
            elif isinstance(message.get("content"), list):
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found.append("".join(_block_texts(block.get("content"))))
        return found

    def tool_names(self) -> list[str]:
        """The names of the tools the request offers the model (either API's shape)."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        names = []
        for tool in tools or []:
            if isinstance(tool, dict):
                function = tool.get("function")
                source = function if isinstance(function, dict) else tool
                names.append(str(source.get("name")))
        return names


class MockModel:
    """The server. Start it with `with` (or `start()`/`stop()`); it is safe to script and
    read from the test's thread while the host's requests are answered on others."""

    def __init__(
        self,
        log_path: Path,
        *,
        default: Reply = Text("OK."),
        side_reply: Reply = Text("Mock side answer."),
        is_turn: Callable[[LoggedRequest], bool] | None = None,
    ) -> None:
        self.log_path = log_path
        self.default = default
        self.side_reply = side_reply
        self.is_turn = is_turn or (lambda request: bool(request.tool_names()))
        self.requests: list[LoggedRequest] = []
        self._script: list[Reply] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._request_numbers = itertools.count(1)
        self._reply_numbers = itertools.count(1)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> MockModel:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        handler = type("Handler", (_Handler,), {"model": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="mock-model",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MockModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the mock model is not running"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The root URL, without `/v1` (Anthropic clients append `/v1/messages` themselves)."""
        return f"http://127.0.0.1:{self.port}"

    # -- scripting and reading ---------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next turn requests, in order."""
        with self._lock:
            self._script.extend(replies)

    def pending(self) -> list[Reply]:
        """The scripted replies not yet used."""
        with self._lock:
            return list(self._script)

    def model_calls(self) -> list[LoggedRequest]:
        """The requests that were model calls (either API), in order."""
        with self._lock:
            return [request for request in self.requests if request.api is not None]

    def turn_calls(self) -> list[LoggedRequest]:
        """The model calls that offered tools and so took a scripted reply."""
        return [request for request in self.model_calls() if request.turn]

    def wait_for(
        self, condition: Callable[[list[LoggedRequest]], bool], timeout: float
    ) -> list[LoggedRequest]:
        """Wait until `condition(requests)` holds; raise TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not condition(list(self.requests)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"mock model: condition not met in {timeout} s")
                self._lock.wait(left)
            return list(self.requests)

    # -- used by the handler -----------------------------------------------------------------

    def _record(self, request: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(json.dumps(asdict(request), ensure_ascii=False) + "\n")
            self._lock.notify_all()

    def _choose(self, request: LoggedRequest) -> Reply:
        with self._lock:
            request.turn = self.is_turn(request)
            if not request.turn:
                return self.side_reply
            return self._script.pop(0) if self._script else self.default

    def _next_request_number(self) -> int:
        return next(self._request_numbers)

    def _next_reply_number(self) -> int:
        return next(self._reply_numbers)


class _Handler(BaseHTTPRequestHandler):
    model: MockModel
    protocol_version = "HTTP/1.1"  # keep-alive, as the hosts' HTTP clients expect

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the JSONL log says it all; stderr noise would only clutter pytest's output

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self._request: LoggedRequest | None = LoggedRequest(
            index=self.model._next_request_number(),
            time=time.time(),
            method=self.command,
            path=self.path,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=_parse_body(raw),
        )
        try:
            self._answer(self._request)
        except Exception:
            if self._request is not None:  # a bug of the mock's, before it answered
                self._request.status = int(HTTPStatus.INTERNAL_SERVER_ERROR)
            raise
        finally:
            self._commit()

    def _commit(self) -> None:
        """Log the request once, before the first byte of the answer goes out: a host may
        exit as soon as it has the answer, and the test must then find its request logged."""
        if self._request is not None:
            self.model._record(self._request)
            self._request = None

    def _answer(self, request: LoggedRequest) -> None:
        route = request.route.rstrip("/")
        body = request.body if isinstance(request.body, dict) else {}
        if self.command == "POST" and route.endswith("/messages/count_tokens"):
            self._json({"input_tokens": _estimate_tokens(body)})
        elif self.command == "POST" and route.endswith("/messages"):
            request.api = "anthropic"
            reply = self.model._choose(request)
            request.reply = _describe(reply)
            self._anthropic(body, reply)
        elif self.command == "POST" and route.endswith("/responses"):
            request.api = "responses"
            reply = self.model._choose(request)
            request.reply = _describe(reply)
            self._responses(body, reply)
        elif self.command == "POST" and route.endswith("/chat/completions"):
            request.api = "openai"
            reply = self.model._choose(request)
            request.reply = _describe(reply)
            self._openai(body, reply)
        elif self.command == "GET" and route.endswith("/models"):
            self._json(
                {
                    "object": "list",
                    "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "mock"}],
                    # Anthropic's shape, for a client that reads it instead
                    "has_more": False,
                    "first_id": MODEL_ID,
                    "last_id": MODEL_ID,
                }
            )
        else:
            self._json(
                {"type": "error", "error": {"type": "not_found_error", "message": request.path}},
                status=HTTPStatus.NOT_FOUND,
            )

    # -- Anthropic Messages API --------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], reply: Reply) -> None:
        message_id = f"msg_mock{self.model._next_reply_number():06d}"
        model = str(body.get("model") or MODEL_ID)
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        if isinstance(reply, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_mock{uuid.uuid4().hex[:20]}",
                    "name": reply.name,
                    "input": reply.arguments,
                }
            )
        stop_reason = "tool_use" if isinstance(reply, ToolCall) else "end_turn"
        usage = {
            "input_tokens": _estimate_tokens(body),
            "output_tokens": max(1, len(reply.text) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if not body.get("stream"):
            self._json(
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
            return
        with self._sse() as send:
            start = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**usage, "output_tokens": 1},
            }
            send("message_start", {"type": "message_start", "message": start})
            send("ping", {"type": "ping"})
            for index, block in enumerate(blocks):
                if block["type"] == "text":
                    empty: dict[str, Any] = {"type": "text", "text": ""}
                    deltas = [
                        {"type": "text_delta", "text": part} for part in _halves(block["text"])
                    ]
                else:
                    empty = {**block, "input": {}}
                    arguments = json.dumps(block["input"])
                    deltas = [
                        {"type": "input_json_delta", "partial_json": part}
                        for part in _halves(arguments)
                    ]
                send(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": empty},
                )
                for delta in deltas:
                    send(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                send("content_block_stop", {"type": "content_block_stop", "index": index})
            send(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            )
            send("message_stop", {"type": "message_stop"})

    # -- OpenAI chat completions API ---------------------------------------------------------

    def _openai(self, body: dict[str, Any], reply: Reply) -> None:
        completion_id = f"chatcmpl-mock{self.model._next_reply_number():06d}"
        model = str(body.get("model") or MODEL_ID)
        created = int(time.time())
        tool_calls = []
        if isinstance(reply, ToolCall):
            tool_calls.append(
                {
                    "id": f"call_mock{uuid.uuid4().hex[:20]}",
                    "type": "function",
                    "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)},
                }
            )
        finish = "tool_calls" if tool_calls else "stop"
        prompt_tokens = _estimate_tokens(body)
        completion_tokens = max(1, len(reply.text) // 4)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            self._json(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
            return

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        with self._sse() as send:
            send(None, chunk({"role": "assistant", "content": ""}))
            for part in _halves(reply.text) if reply.text else []:
                send(None, chunk({"content": part}))
            for index, call in enumerate(tool_calls):
                head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
                send(None, chunk({"tool_calls": [{"index": index, **head}]}))
                for part in _halves(call["function"]["arguments"]):
                    send(
                        None,
                        chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                    )
            send(None, chunk({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                send(None, {**chunk({}), "choices": [], "usage": usage})
            self._raw_event(b"data: [DONE]\n\n")

    # -- OpenAI Responses API ----------------------------------------------------------------

    def _responses(self, body: dict[str, Any], reply: Reply) -> None:
        """Stream a reply as the Responses API does: `response.created`, each output item
        added, its deltas and done, then `response.completed` with the whole output."""
        number = self.model._next_reply_number()
        response_id = f"resp_mock{number:06d}"
        model = str(body.get("model") or MODEL_ID)
        items: list[dict[str, Any]] = []
        if reply.text:
            content = [{"type": "output_text", "text": reply.text, "annotations": []}]
            items.append(
                {
                    "id": f"msg_mock{number:06d}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": content,
                }
            )
        if isinstance(reply, ToolCall):
            items.append(
                {
                    "id": f"fc_mock{number:06d}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_mock{uuid.uuid4().hex[:20]}",
                    "name": reply.name,
                    "arguments": json.dumps(reply.arguments),
                }
            )
        input_tokens = _estimate_tokens(body)
        output_tokens = max(1, len(reply.text) // 4)
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        response: dict[str, Any] = {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": model,
            "output": [],
        }
        with self._sse() as send:
            send("response.created", {"type": "response.created", "response": response})
            for index, item in enumerate(items):
                empty = {**item, "status": "in_progress"}
                if item["type"] == "message":
                    empty["content"] = []
                else:
                    empty["arguments"] = ""
                send(
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": index, "item": empty},
                )
                if item["type"] == "message":
                    for part in _halves(reply.text):
                        send(
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": item["id"],
                                "output_index": index,
                                "content_index": 0,
                                "delta": part,
                            },
                        )
                else:
                    for part in _halves(item["arguments"]):
                        send(
                            "response.function_call_arguments.delta",
                            {
                                "type": "response.function_call_arguments.delta",
                                "item_id": item["id"],
                                "output_index": index,
                                "delta": part,
                            },
                        )
                send(
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": index, "item": item},
                )
            done = {**response, "status": "completed", "output": items, "usage": usage}
            send("response.completed", {"type": "response.completed", "response": done})

    # -- transport ---------------------------------------------------------------------------

    def _json(self, payload: object, status: int = HTTPStatus.OK) -> None:
        data = json.dumps(payload).encode()
        if self._request is not None:
            self._request.status = int(status)
        self._commit()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_mock{uuid.uuid4().hex[:16]}")
        self.end_headers()
        self.wfile.write(data)

    def _sse(self) -> _SseStream:
        self._commit()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_mock{uuid.uuid4().hex[:16]}")
        self.end_headers()
        return _SseStream(self)

    def _raw_event(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _SseStream:
    """Sends server-sent events as HTTP/1.1 chunks; closes the chunked body on exit."""

    def __init__(self, handler: _Handler) -> None:
        self.handler = handler

    def __enter__(self) -> Callable[[str | None, object], None]:
        return self.send

    def send(self, event: str | None, data: object) -> None:
        text = f"data: {json.dumps(data)}\n\n"
        if event is not None:
            text = f"event: {event}\n" + text
        self.handler._raw_event(text.encode())

    def __exit__(self, *exc: object) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _input_items(body: dict[str, Any]) -> list[Any]:
    """The items of a Responses API request's `input` (messages, calls, call outputs)."""
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return items if isinstance(items, list) else []


def _block_texts(content: object) -> list[str]:
    """The texts of a message's content: a string, or a list of blocks of which the text ones
    count."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") in ("text", "input_text", "output_text")
            and "text" in block
        ]
    return []


def _describe(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, ToolCall):
        return {"kind": "tool_call", "name": reply.name, "arguments": reply.arguments}
    return {"kind": "text", "text": reply.text}


def _estimate_tokens(body: object) -> int:
    return max(1, len(json.dumps(body)) // 4)


def _halves(text: str) -> Iterator[str]:
    """Split a text in two deltas, so the host has to join streamed pieces as it must for a
    real API."""
    middle = len(text) // 2
    yield from (part for part in (text[:middle], text[middle:]) if part)
