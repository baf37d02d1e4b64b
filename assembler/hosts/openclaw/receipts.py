"""What OpenClaw records of each turn, as the model got it: the run trace (its trajectory) keeps
each prompt submitted to the model, the plugins' `prependContext` before the prompt as the
human wrote it, while the session keeps the prompt alone. Taken from OpenClaw 2026.9.6's code:

- `prompt.submitted` events (`submitEmbeddedAttemptPrompt`, dist/builtin-openclaw-*.mjs:
  `recordEvent("prompt.submitted", {prompt: input.modelPrompt, systemPrompt, messages,
  imagesCount})`), one per attempt of a run: `data.prompt` is `promptForModel`, the
  plugins' prependContext joined by blank lines, a blank line, then the prompt the session
  stores (`${promptBuildPrependContext}\\n\\n${effectivePrompt}`); `session.started` events
  say what started the run (`data.trigger`: "user" for a human's message, "heartbeat",
  "cron", "memory", "overflow", "manual").
- Each event is `{traceSchema: "openclaw-trajectory", schemaVersion: 1, type, ts, sessionId,
  sessionKey, runId, data}`, its strings cut at 32,768 characters (a longer one becomes an
  object saying so) and secrets redacted (src/trajectory/runtime.ts). 2026.7 on keeps them in
  the agent's store, table `trajectory_runtime_events (session_id, seq, run_id, event_json,
  created_at)`, the newest 10 MiB of each session (what a real 2026.9.6 run wrote, checked);
  before, the same lines went to `<session file>.trajectory.jsonl` beside the session (or
  where its `.trajectory-path.json` points; the file sink and paths of 2026.9's
  src/trajectory/runtime.ts and paths.ts, not checked against a run of 2026.4 to 2026.6).
  `OPENCLAW_TRAJECTORY=0` turns the trace off: then no turn is read here.

A turn is a run the human's message started: its prompt is paired with the session's user
message of the human whose text ends it, and only what comes before that text counts (a
plugin's context, which the agent cannot write; the human's words and a message another
session sent are after it). What our plugin added is one of the blank-line-separated pieces
there, or several together: the digests of each run of whole pieces are the turn's.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from assembler.delivery.turns import Turn, read_tail
from assembler.fsutil import open_regular
from assembler.hosts.openclaw.sessions import is_host_session_key, is_session_artifact
from assembler.hosts.openclaw.store import SQLITE_SUFFIXES, _decode_event
from assembler.hosts.openclaw.turns import user_turn
from assembler.transcripts.message import parse_time, text_of
from assembler.transcripts.reader import SQLITE_MAGIC

# The most of a session file or its trace read for its receipts: its newest part.
# The newest events of a session's trace read from the store (OpenClaw keeps 10 MiB of them).
MAX_TRACE_ROWS = 5000
# A prompt is paired with the user message written nearest to it, within this long.
PAIR_WINDOW = timedelta(minutes=30)
# The longest run of pieces digested: what the trace keeps of a prompt.
MAX_PIECE_CHARS = 32 * 1024
# The most piece starts looked at in one prompt.
MAX_STARTS = 256

_SUBMITTED = "prompt.submitted"
_STARTED = "session.started"
_HUMAN_TRIGGER = "user"
_SQLITE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class _Prompt:
    run: str
    at: datetime
    text: str


@dataclass(frozen=True)
class _UserMessage:
    at: datetime
    text: str
    human: bool


def openclaw_turns(path: Path) -> tuple[str, list[Turn]] | None:
    """Given an OpenClaw session file or agent store, return the session's id and its turns,
    each with the digests of what plugins added before its prompt (see the module's
    docstring); for a store, its newest session a human speaks in. None when it cannot be
    read, is not a session (an artifact beside them) or holds none."""
    if path.suffix.lower() in SQLITE_SUFFIXES or _magic(path) == SQLITE_MAGIC:
        return _store_turns(path)
    if not path.name.endswith(".jsonl") or is_session_artifact(path.name):
        return None
    return _file_turns(path)


# -- The turns of one session: its prompts beside its user messages --------------------------


def session_turns(events: list[dict[str, Any]], users: list[_UserMessage]) -> list[Turn]:
    """Given a session's trace events (oldest first) and its user messages, return its turns:
    one per run a human's message started, with the digests of the pieces before the
    message in each of its prompts."""
    triggers: dict[str, str] = {}
    runs: dict[str, list[_Prompt]] = {}
    for event in events:
        run, data = event.get("runId"), event.get("data")
        if not isinstance(run, str) or not isinstance(data, dict):
            continue
        if event.get("type") == _STARTED and isinstance(data.get("trigger"), str):
            triggers[run] = data["trigger"]
        at, prompt = parse_time(event.get("ts")), data.get("prompt")
        # A prompt longer than the trace keeps is an object saying so: nothing to read in it.
        if event.get("type") == _SUBMITTED and at is not None and isinstance(prompt, str):
            runs.setdefault(run, []).append(_Prompt(run, at, prompt))
    turns = []
    for run, prompts in runs.items():
        if triggers.get(run) != _HUMAN_TRIGGER:
            continue  # a heartbeat, a cron job, a memory flush, or a start not kept
        first = prompts[0]
        paired = _paired(first, users)
        if paired is None or not paired.human:
            continue  # no message of the human's ends it: nothing to tell
        added: dict[str, None] = {}
        for prompt in prompts:
            end = _words_at(prompt.text, paired.text)
            if end is not None:
                added.update(dict.fromkeys(piece_digests(prompt.text[:end])))
        turns.append(Turn(first.at, tuple(added)))
    turns.sort(key=lambda turn: turn.at)
    return turns


def _paired(prompt: _Prompt, users: list[_UserMessage]) -> _UserMessage | None:
    """The user message written nearest to the prompt whose text ends it."""
    near = [
        user
        for user in users
        if abs(user.at - prompt.at) <= PAIR_WINDOW and _words_at(prompt.text, user.text) is not None
    ]
    return min(near, key=lambda user: abs(user.at - prompt.at), default=None)


def _words_at(prompt: str, words: str) -> int | None:
    """Where the message's text starts in the prompt: its last place there that begins a line
    and ends the prompt or a paragraph of it; None when there is none."""
    if not words:
        return None
    end = len(prompt)
    while (at := prompt.rfind(words, 0, end)) >= 0:
        before, after = prompt[:at].rstrip(" \t"), prompt[at + len(words) :]
        starts_line = not before or before.endswith("\n")
        if starts_line and (not after.strip() or after.startswith("\n\n")):
            return at
        end = at + len(words) - 1
    return None


def piece_digests(region: str) -> list[str]:
    """Given what comes before the human's words in a prompt (pieces joined by blank lines),
    return the digest (`delivery.sent.text_digest`) of every run of whole pieces in it."""
    # Each start's digests are taken as its run grows, one hash fed once: a prompt of many
    # pieces costs what its length costs, times the starts. Equal to `text_digest` of each run.
    ends = [i for i in range(len(region) - 1) if region[i] == "\n" and region[i + 1] == "\n"]
    ends.append(len(region))
    starts = [0] + [end + 2 for end in ends[:-1] if end + 2 < len(region)]
    digests: dict[str, None] = {}
    for start in starts[:MAX_STARTS]:
        hasher = hashlib.sha256()
        fed = start
        for end in ends:
            if end <= start:
                continue
            if end - start > MAX_PIECE_CHARS:
                break
            stop = end
            while stop > start and region[stop - 1].isspace():
                stop -= 1
            if stop <= start or stop == fed:
                continue  # nothing but white space after the last run digested
            hasher.update(region[fed:stop].encode("utf-8", "surrogatepass"))
            fed = stop
            digests[hasher.copy().hexdigest()[:16]] = None
    return list(digests)


def _user_message(entry: object) -> _UserMessage | None:
    """Given a session entry, return it as a user message (its text, whether the human wrote
    it, when it was written), or None."""
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return None
    body = entry.get("message")
    if not isinstance(body, dict) or body.get("role") != "user":
        return None
    at = parse_time(entry.get("timestamp")) or parse_time(body.get("timestamp"))
    text = text_of(body.get("content"))
    if at is None or not text:
        return None
    return _UserMessage(at, text, user_turn(body, text).said == "human")


# -- The session files of 2026.4 to 2026.6 ---------------------------------------------------


def _file_turns(path: Path) -> tuple[str, list[Turn]] | None:
    data = read_tail(path)
    if data is None:
        return None
    session = path.stem
    users = []
    for raw in data.splitlines():
        entry = _json(raw)
        if isinstance(entry, dict) and entry.get("type") == "session":
            if isinstance(entry.get("id"), str) and entry["id"]:
                session = entry["id"]
            continue
        user = _user_message(entry)
        if user is not None:
            users.append(user)
    trace = read_tail(_trace_file(path)) or b""
    events = [e for e in map(_json, trace.splitlines()) if isinstance(e, dict)]
    events = [e for e in events if e.get("sessionId") in (None, session)]
    return session, session_turns(events, users)


def _trace_file(path: Path) -> Path:
    """The trace of a session file: beside it, else where its pointer file says."""
    beside = path.with_name(path.name[: -len(".jsonl")] + ".trajectory.jsonl")
    if beside.exists():
        return beside
    pointer = _json(
        read_tail(path.with_name(path.name[: -len(".jsonl")] + ".trajectory-path.json"))
    )
    target = pointer.get("runtimeFile") if isinstance(pointer, dict) else None
    if isinstance(target, str) and os.path.isabs(target) and target.endswith(".jsonl"):
        return Path(target)
    return beside


def _json(raw: bytes | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _magic(path: Path) -> bytes:
    try:
        fd = open_regular(path, follow_links=True)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read(len(SQLITE_MAGIC))
        except OSError:
            return b""


# -- The store of 2026.7 on ------------------------------------------------------------------


def _store_turns(path: Path) -> tuple[str, list[Turn]] | None:
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=_SQLITE_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        return _read_store(connection)
    except sqlite3.Error:  # locked, or not a store: no receipts this time
        return None
    finally:
        connection.close()


def _read_store(connection: sqlite3.Connection) -> tuple[str, list[Turn]] | None:
    tables = {
        str(row[0])
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if not {"trajectory_runtime_events", "transcript_events"} <= tables:
        return None
    session = _newest_session(connection, "session_windows" in tables)
    if session is None:
        return None
    rows = connection.execute(
        "SELECT event_json FROM trajectory_runtime_events WHERE session_id = ? "
        "ORDER BY seq DESC LIMIT ?",
        (session, MAX_TRACE_ROWS),
    ).fetchall()
    events = [e for e in (_json(_bytes(row[0])) for row in reversed(rows)) if isinstance(e, dict)]
    stamps = [at for e in events if (at := parse_time(e.get("ts"))) is not None]
    if not stamps:
        return session, []
    since = int((min(stamps) - PAIR_WINDOW).timestamp() * 1000)
    columns = {row[1] for row in connection.execute("PRAGMA table_info(transcript_events)")}
    zstd = "event_zstd" if "event_zstd" in columns else "NULL"
    users = []
    for event_json, event_zstd in connection.execute(
        f"SELECT event_json, {zstd} FROM transcript_events "
        "WHERE session_id = ? AND created_at >= ? ORDER BY seq",
        (session, since),
    ):
        entry, _ = _decode_event(event_json, event_zstd)
        user = _user_message(entry)
        if user is not None:
            users.append(user)
    return session, session_turns(events, users)


def _newest_session(connection: sqlite3.Connection, windows: bool) -> str | None:
    """The session whose newest prompt is the store's newest, among those a human speaks in
    (by their key, when the store keeps keys)."""
    keys: dict[str, str] = {}
    if windows:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(session_windows)")}
        if {"session_id", "session_key"} <= columns:
            keys = {
                str(session): str(key)
                for session, key in connection.execute(
                    "SELECT session_id, session_key FROM session_windows"
                )
            }
    for session, _ in connection.execute(
        "SELECT session_id, MAX(created_at) AS last FROM trajectory_runtime_events "
        "WHERE event_json LIKE ? GROUP BY session_id ORDER BY last DESC",
        (f"%{_SUBMITTED}%",),
    ):
        key = keys.get(str(session))
        if key is None or not is_host_session_key(key):
            return str(session)
    return None


def _bytes(value: object) -> bytes | None:
    if isinstance(value, bytes):
        return value
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else None
