"""`assemble serve`: a local status page of one workspace (Starlette, served by uvicorn).

Pages (Now, Mood, Memory, Sections, Observations) are HTML shells from `templates/serve/`
whose script (`assembler/serve/static/status.js`) reads the JSON API under `/api/` and draws the
charts with the bundled Chart.js; `/api/events` (server-sent events) tells the page when
something changed, so it updates without a reload. What the API returns comes from
`assembler.serve.data`.

The page shows what the human said and felt, so it is guarded:
- bound to 127.0.0.1 unless `--host` says otherwise (the command warns then);
- every request needs the random token of the URL the command prints (`?token=`, which a
  page visit turns into a cookie, or `Authorization: Bearer`); without it, 401;
- the Host header must name this machine (localhost, 127.0.0.1, [::1], or the `--host` given;
  bound to an address other machines reach, also any IP address), else 400: a web page
  elsewhere cannot reach the server through a DNS name it controls, and an IP address is no
  such name.
A watcher thread notices changes of the file, the journal, the logs and the transcripts (their
size and time only); a changed transcript is read from its end and its new human messages are
scored into the mood history.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

import jinja2
import uvicorn
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assembler.config.schema import bundled_dir
from assembler.errors import AssemblerError
from assembler.fsutil import glob_paths
from assembler.serve.data import (
    MOOD_POINTS,
    OBSERVATIONS_SHOWN,
    RUNS_SHOWN,
    MoodCursor,
    Status,
    deliveries_data,
    fill_history,
    memory_data,
    mood_data,
    now_data,
    observations_data,
    sections_data,
    watched_paths,
)

if TYPE_CHECKING:
    from assembler.config.schema import Config

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# Addresses that bind every interface: the page is then opened through loopback or a LAN address.
UNSPECIFIED = frozenset({"0.0.0.0", "::"})
# A Host header: a name or IPv4 address, or a bracketed IPv6 address; then an optional port.
_HOST_HEADER = re.compile(r"(\[[^\[\]]*\]|[^\[\]:]*)(?::[0-9]*)?")
# /favicon.ico, empty: the pages name an inline icon, but a browser showing an API answer still
# asks for it, and a 404 there is noise.
FAVICON = b""
STATIC_DIR = Path(__file__).resolve().parent / "static"
PAGES = {
    "/": ("now", "Now"),
    "/mood": ("mood", "Mood"),
    "/memory": ("memory", "Memory"),
    "/sections": ("sections", "Sections"),
    "/observations": ("observations", "Observations"),
    "/deliveries": ("deliveries", "Deliveries"),
}
# Open event streams at once: each page open keeps one. More are refused with 503: thousands
# of them, each woken twice a second, would slow every other request down.
MAX_EVENT_STREAMS = 32
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def is_loopback(host: str) -> bool:
    """Given a host name or address to bind, return whether only this machine can reach it."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """Given a Host header, return the host without the port, lower-cased, IPv6 unbracketed;
    return "" for a header that is not a host with an optional port (`[::1].evil.com`)."""
    found = _HOST_HEADER.fullmatch(header.strip().lower())
    return found.group(1).strip("[]") if found else ""


def is_ip_literal(host: str) -> bool:
    """Given a host name from a Host header, return whether it is an IP address (which no DNS
    rebinding can point elsewhere), not a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Guard:
    """ASGI middleware: refuse a foreign Host header (400) and a request without the token
    (401); add the security headers to every response. With `ip_hosts`, a Host header that is
    any IP address is accepted too (the server is bound to an address other machines reach)."""

    def __init__(
        self, app: ASGIApp, *, token: str, hosts: Iterable[str], ip_hosts: bool = False
    ) -> None:
        self.app = app
        self.token = token
        self.hosts = frozenset(h.lower().strip("[]") for h in hosts)
        self.ip_hosts = ip_hosts

    def host_allowed(self, header: str) -> bool:
        """Given a Host header, return whether it names this server."""
        name = host_name(header)
        return bool(name) and (name in self.hosts or (self.ip_hosts and is_ip_literal(name)))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        request = Request(scope)
        response = self._refusal(request)
        if response is None:
            response = self._token_in_url(request)
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        if not self.host_allowed(request.headers.get("host", "")):
            return PlainTextResponse(
                "Refused: this status page answers only to a local Host (localhost, 127.0.0.1) "
                "or the address it was started on\n",
                status_code=400,
            )
        given = [
            request.query_params.get("token", ""),
            request.cookies.get(cookie_name(request), ""),
        ]
        bearer = request.headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            given.append(bearer[7:].strip())
        if not any(secrets.compare_digest(g.encode(), self.token.encode()) for g in given if g):
            return PlainTextResponse(
                "Unauthorized: open the URL that 'assemble serve' printed (it carries the "
                "access token)\n",
                status_code=401,
            )
        return None

    def _token_in_url(self, request: Request) -> Response | None:
        """A page opened with ?token= gets the token as a cookie and the URL without it, so
        the token is not left in the address bar, the history or a screenshot."""
        if "token" not in request.query_params or request.url.path.startswith("/api/"):
            return None
        if request.method != "GET" or request.url.path.startswith("/static/"):
            return None
        rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
        # One leading slash: a path `//evil.example/x` (or `/\evil.example/x`, which browsers
        # read alike) would send the browser to another site: an open redirect.
        path = "/" + request.url.path.lstrip("/\\")
        target = path + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            cookie_name(request), self.token, httponly=True, samesite="strict", path="/"
        )
        return response


def cookie_name(request: Request) -> str:
    """Cookies are shared by every port of a host: each server's has its own name."""
    server = request.scope.get("server") or ("", 0)
    return f"assemble_status_{server[1]}"


@dataclass
class Watcher:
    """Polls the sizes and times of what the page shows; on a change, bumps `version` (and,
    for a transcript, scores its new human messages into the history first)."""

    status: Status
    period: float
    version: int = 0
    changed: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _seen: dict[str, object] = field(default_factory=dict)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="status-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            try:
                self.check()
            except Exception:  # a bad moment of a file must not stop the watching
                log.exception("status page: checking for changes failed")
            self.ready.set()
            if self._stop.wait(self.period):
                return

    def signatures(self) -> dict[str, object]:
        """Return what each watched kind of file looks like now (sizes and times)."""
        import glob

        config = self.status.config
        state = config.state_dir
        transcripts = []
        for pattern in watched_paths(config):
            full = os.path.expanduser(pattern)
            if not os.path.isabs(full):
                # The workspace's own path may contain glob characters; only the pattern globs
                # (as the assembly's `transcripts._match_sources`).
                full = os.path.join(glob.escape(str(config.workspace)), full)
            for name in glob_paths(full):  # never walks into a link to a folder
                transcripts.append((name, _stat(Path(name))))
        return {
            "file": _stat(config.output_path),
            "sections": _stat(state / "sections.jsonl"),
            "assemblies": _stats(state / "assemblies.sqlite"),
            "mood": _stats(state / "mood.sqlite"),
            "observations": _stats(state / "observations.sqlite"),
            "deliveries": _stat(state / "deliveries.jsonl"),
            "transcripts": tuple(transcripts),
        }

    def check(self) -> list[str]:
        """Compare the files with the last look; return the kinds that changed (all of them
        on the first look)."""
        now = self.status.clock()
        seen = self.signatures()
        changed = [kind for kind, value in seen.items() if self._seen.get(kind) != value]
        self._seen = seen
        if "transcripts" in changed or "assemblies" in changed:
            with self.status.lock:
                added = fill_history(self.status, now)
            if added:
                changed.append("mood")
            # Our own write to the history is no news the next time round.
            self._seen["mood"] = self.signatures()["mood"]
        if changed:
            self.changed = changed
            self.version += 1
        return changed


def _stat(path: Path) -> object:
    try:
        info = path.lstat()
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns)


def _stats(database: Path) -> object:
    """An SQLite database changes in its write-ahead log first."""
    return (_stat(database), _stat(database.with_name(database.name + "-wal")))


def _json(data: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status_code)


def int_param(request: Request, name: str, default: int | None) -> int | None:
    """Given a request, a query parameter's name and its default, return its whole number.
    Raise ValueError naming it if it is given and is not one."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as error:
        raise ValueError(f"{name}={raw!r}: give a whole number") from error


class EventStreams:
    """`/api/events` as an ASGI app: server-sent `change` events while the watcher's version
    moves, at most `limit` streams open at once (more are refused with 503)."""

    def __init__(self, watcher: Watcher, poll_seconds: float, limit: int) -> None:
        self.watcher = watcher
        self.poll_seconds = poll_seconds
        self.limit = limit
        self.open = 0  # changed only on the event loop's thread

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.open >= self.limit:
            refused = _json(
                {"error": f"{self.limit} event streams are open already; close a page"}, 503
            )
            refused.headers["retry-after"] = "30"
            await refused(scope, receive, send)
            return
        self.open += 1
        try:
            await EventSourceResponse(self._stream(), ping=15)(scope, receive, send)
        finally:
            self.open -= 1

    async def _stream(self) -> AsyncIterator[dict[str, str]]:
        last = -1
        while True:
            if self.watcher.version != last:
                last = self.watcher.version
                yield {
                    "event": "change",
                    "data": json.dumps({"version": last, "changed": self.watcher.changed}),
                }
            await asyncio.sleep(min(self.poll_seconds, 0.5))


def create_app(
    config: Config,
    *,
    clock: Callable[[], datetime],
    token: str,
    hosts: Iterable[str] = LOOPBACK_NAMES,
    ip_hosts: bool = False,
    poll_seconds: float = 1.0,
    max_streams: int = MAX_EVENT_STREAMS,
) -> Starlette:
    """Given the config, the clock, the access token, the host names allowed in the Host
    header (and with `ip_hosts` any IP address) and how many event streams may be open at
    once, return the status page's ASGI app. Its watcher thread runs while the app does (its
    lifespan); `app.state.status`, `app.state.watcher` and `app.state.streams` hold the open
    state.

    Raise AssemblerError if the state folder's databases cannot be opened.
    """
    status = Status.open(config, clock)
    watcher = Watcher(status, poll_seconds)
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(bundled_dir("templates") / "serve"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )

    def page(request: Request) -> Response:
        name, title = PAGES[request.url.path]
        html = environment.get_template("page.html.j2").render(
            page=name,
            title=title,
            pages=[(path, label) for path, (_, label) in PAGES.items()],
            workspace=str(config.workspace),
        )
        return Response(html, media_type="text/html; charset=utf-8")

    def api(produce: Callable[[Request, datetime], dict[str, Any]]) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            try:
                data = await asyncio.to_thread(produce, request, clock())
            except ValueError as error:
                return _json({"error": str(error)}, 400)
            except AssemblerError as error:
                return _json({"error": str(error)}, 500)
            except sqlite3.Error as error:  # a state database broken, or a statement too long
                return _json({"error": f"reading the state folder's databases: {error}"}, 500)
            data["version"] = watcher.version
            data["timezone"] = config.time.timezone
            return _json(data)

        return endpoint

    def mood(request: Request, now: datetime) -> dict[str, Any]:
        raw = request.query_params.get("hours", "24")
        try:
            hours = float(raw)
        except ValueError as error:
            raise ValueError(f"hours={raw!r}: give a number of hours, e.g. 24") from error
        raw_until = request.query_params.get("until")
        until = None
        if raw_until:
            try:
                until = datetime.fromisoformat(raw_until.replace("Z", "+00:00"))
            except ValueError as error:
                raise ValueError(f"until={raw_until!r}: give an ISO 8601 time") from error
            if until.tzinfo is None:
                raise ValueError(f"until={raw_until!r}: give the time with its offset")
        limit = int_param(request, "limit", MOOD_POINTS)
        raw_before = request.query_params.get("before")
        before = MoodCursor.parse(raw_before) if raw_before else None
        return mood_data(status, now, hours, until, limit or 0, before)

    def now_page(request: Request, now: datetime) -> dict[str, Any]:
        limit = int_param(request, "limit", RUNS_SHOWN)
        return now_data(status, now, limit or 0, int_param(request, "before", None))

    def observations(request: Request, now: datetime) -> dict[str, Any]:
        limit = int_param(request, "limit", OBSERVATIONS_SHOWN)
        return observations_data(status, now, limit or 0, int_param(request, "offset", 0) or 0)

    streams = EventStreams(watcher, poll_seconds, max_streams)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watcher.start()
        try:
            yield
        finally:
            watcher.stop()
            status.close()

    routes: list[BaseRoute] = [Route(path, page) for path in PAGES]
    routes += [
        Route("/api/now", api(now_page)),
        Route("/api/mood", api(mood)),
        Route("/api/memory", api(lambda r, now: memory_data(status, now))),
        Route("/api/sections", api(lambda r, now: sections_data(status, now))),
        Route("/api/observations", api(observations)),
        Route("/api/deliveries", api(lambda r, now: deliveries_data(status, now))),
        Route("/api/events", streams, methods=["GET"]),
        Route("/favicon.ico", lambda r: Response(FAVICON, media_type="image/x-icon")),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.status = status
    app.state.watcher = watcher
    app.state.streams = streams
    app.add_middleware(Guard, token=token, hosts=hosts, ip_hosts=ip_hosts)
    return app


def allowed_hosts(bind: str) -> set[str]:
    """Given the address the server binds, return the host names its Host header may carry:
    this machine's loopback names and the address itself; bound to every interface, also the
    machine's name. (Bound to an address other machines reach, any IP address is accepted
    too: see `accepts_ip_hosts`.)"""
    hosts = set(LOOPBACK_NAMES)
    address = bind.lower().strip("[]")
    if address in UNSPECIFIED:
        hosts.add(socket.gethostname().lower())
    else:
        hosts.add(address)
    return hosts


def accepts_ip_hosts(bind: str) -> bool:
    """Given the address the server binds, return whether a Host header may be any IP address:
    when other machines reach it, they name it by one of this machine's addresses."""
    return not is_loopback(bind)


class StatusServer:
    """The status page of one workspace on a bound socket, run by uvicorn: `run()` in the
    foreground (the command), or `start()` and `stop()` around a thread (tests, benchmarks)."""

    def __init__(
        self,
        config: Config,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        clock: Callable[[], datetime],
        token: str | None = None,
        poll_seconds: float = 1.0,
        max_streams: int = MAX_EVENT_STREAMS,
    ) -> None:
        self.token = token or secrets.token_urlsafe(24)
        self.host = host
        self.socket = _bind(host, port)
        self.port = int(self.socket.getsockname()[1])
        try:
            self.app = create_app(
                config,
                clock=clock,
                token=self.token,
                hosts=allowed_hosts(host),
                ip_hosts=accepts_ip_hosts(host),
                poll_seconds=poll_seconds,
                max_streams=max_streams,
            )
        except BaseException:
            self.socket.close()
            raise
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                log_level="warning",
                timeout_graceful_shutdown=2,
                lifespan="on",
            )
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to open, with the access token: on this machine when the server is bound
        to every interface (`0.0.0.0` is no address to open)."""
        address = self.host.strip("[]")
        if address.lower() in ("127.0.0.1", "localhost"):
            shown = "localhost"
        elif address == "0.0.0.0":
            shown = "127.0.0.1"
        elif address == "::":
            shown = "::1"
        else:
            shown = address
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{self.port}/?token={self.token}"

    @property
    def everywhere(self) -> bool:
        """Whether the server is bound to every interface (other machines reach it through any
        of this machine's addresses)."""
        return self.host.strip("[]") in UNSPECIFIED

    def run(self) -> None:
        """Serve until Ctrl-C or SIGTERM."""
        self.server.run(sockets=[self.socket])

    def start(self, timeout: float = 10.0) -> None:
        """Serve in a thread; return once it accepts requests and has looked at the files.
        Raise AssemblerError if it does not start within `timeout` seconds."""
        self._thread = threading.Thread(target=self.run, name="status-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AssemblerError(f"The status page did not start on port {self.port}")
            time.sleep(0.02)
        self.app.state.watcher.ready.wait(max(0.0, deadline - time.monotonic()))

    def stop(self) -> None:
        """Stop serving (open event streams are closed) and wait for the thread."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.socket.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as error:
        sock.close()
        raise AssemblerError(
            f"Cannot listen on {host}:{port} ({error.strerror or error}); pick another --port"
        ) from error
    sock.listen(64)
    sock.set_inheritable(True)
    return sock
