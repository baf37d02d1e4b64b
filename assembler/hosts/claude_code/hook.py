"""Hooks for agent hosts: the fresh scratchpad in the form the host adds to the model's context.

Claude Code runs `assemble hook claude-code` on its hook events with a JSON object on stdin:
`session_id`, `transcript_path`, `cwd` and `hook_event_name` on every event, plus `source`
("startup", "resume", "clear", "compact" or "fork") on SessionStart and `prompt` on
UserPromptSubmit. For UserPromptSubmit and SessionStart the hook prints
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`, which Claude Code
adds to the context (and keeps there, in the session's history): the whole block the first
time in a session (and after /clear or a compaction), after that only what changed since the
copy the session holds (`assembler.file.delta`), nothing when nothing did, and nothing for
other events. A stale scratchpad is one line saying so.

On UserPromptSubmit, when a daemon serves the workspace, the prompt goes to it first over its
socket, and the block it answers counts that prompt as the newest human message (its mood,
task, strategy and memory queries); no answer within the budget (150 ms, or
$ASSEMBLER_PROMPT_BUDGET_MS), or no daemon (then nothing is waited for), and the ready block is
used as it is. A running daemon is nudged to assemble soon.

A hook runs before every prompt, so it must start fast: it reads the file's frontmatter with
a few string operations instead of loading YAML, Jinja2 or anything numeric, and never touches
the memory index; only a frontmatter that differs from the last render's (an edit touched it)
is parsed in full, as `assemble check` parses it, so the two agree on a broken file. Claude
Code blocks the prompt when a hook exits 2, so a problem here is raised as an AssemblerError
(the CLI prints one line and exits 1, which does not block).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.clock import local_timezone
from assembler.config.files import load_config
from assembler.config.schema import Config
from assembler.errors import AssemblerError, ScratchpadError
from assembler.file.codec import (
    body_prefix,
    parse_time,
    prefix_block,
    quick_read,
    read_scratchpad,
    rendered_frontmatter,
)
from assembler.file.ready import read_ready
from assembler.fsutil import FileLock, atomic_write, read_regular, read_state_file, real_dir

if TYPE_CHECKING:
    from assembler.config.schema import Config

CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")


class HookInputError(AssemblerError):
    """The host sent the hook something that is not the JSON object it should be."""


@dataclass(frozen=True)
class HookEvent:
    """The fields of a Claude Code hook's input that the hook uses."""

    name: str
    cwd: str | None
    session_id: str | None
    transcript_path: str | None
    source: str | None = None  # SessionStart's: "startup", "resume", "clear", "compact", "fork"
    prompt: str | None = None  # UserPromptSubmit's: what the human typed


def parse_claude_code_input(text: str) -> HookEvent:
    """Given the hook's stdin, return its event.

    Raise HookInputError if it is not a JSON object with a string `hook_event_name`.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as error:
        raise HookInputError(
            f"hook claude-code: stdin is not JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}); run it from a Claude Code hook, which sends the event as JSON"
        ) from error
    if not isinstance(data, dict):
        raise HookInputError(
            f"hook claude-code: stdin is a JSON {type(data).__name__}, not an object with "
            "'hook_event_name'; run it from a Claude Code hook"
        )
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError(
            "hook claude-code: the JSON on stdin has no 'hook_event_name'; run it from a Claude "
            "Code hook (settings.json 'hooks')"
        )

    def text_field(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    return HookEvent(
        name,
        text_field("cwd"),
        text_field("session_id"),
        text_field("transcript_path"),
        text_field("source"),
        text_field("prompt"),
    )


def hook_workspace(explicit: str | None, event: HookEvent) -> str | None:
    """Given --workspace (or None) and the event, return the workspace to use: --workspace,
    else $ASSEMBLER_WORKSPACE, else the session's `cwd` (None: the current folder)."""
    return explicit or os.environ.get("ASSEMBLER_WORKSPACE") or event.cwd


def fresh_context(path: Path, now: datetime, state_dir: Path | None = None) -> str:
    """Given the path of SCRATCHPAD.md, the clock and the state folder (which keeps the copy of
    the last render), return the block to add to the context, or "" when the file is missing,
    unreadable, broken or stale: exactly when `assemble check` does not call it fresh.

    When the file's frontmatter is exactly the last render's, it was valid YAML when written
    and `expires` is read with a regular expression; otherwise (an edit touched it) it is
    parsed in full, as `check` parses it.
    """
    try:
        data = read_regular(path).data
        text = data.decode("utf-8") if data is not None else None
    except (OSError, UnicodeDecodeError):
        return ""
    if text is None:
        return ""
    found = quick_read(text)
    if found is not None and state_dir is not None and found[2] == rendered_frontmatter(state_dir):
        expires, body, _ = found
        return "" if now >= expires else body_prefix(body)
    try:
        return prefix_block(read_scratchpad(path), now)
    except ScratchpadError:
        return ""


def claude_code_output(event: HookEvent, context: str) -> str:
    """Given the event and the context block, return what the hook prints: the JSON Claude
    Code adds to the context for UserPromptSubmit and SessionStart, else ""."""
    if event.name not in CONTEXT_EVENTS or not context:
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": context}}
    return json.dumps(output, ensure_ascii=False) + "\n"


SESSIONS_NAME = "claude-code-sessions.json"
# The sessions remembered; older ones (by when they were last seen) are forgotten.
MAX_SESSIONS = 200


@dataclass(frozen=True)
class Block:
    """What the host would add now: the block ('' when stale or missing), a digest of its
    content apart from its clocks, and until when the block says it is valid."""

    text: str
    digest: str
    valid_until: datetime | None


def current_block(config: Config, now: datetime) -> Block:
    """Given a config and the clock, return the block to add to the context: the ready block
    written with the file (see `assembler.file.ready`) while the file is still the one it was made
    from, else the file itself, parsed in full (an agent edited it, or it predates the ready
    block)."""
    ready = read_ready(config.state_dir)
    limit = block_limit(config)
    if ready is not None and ready.matches_file(config.output_path):
        # The agent can write the ready block: its freshness is never more than the TTL the
        # user configured after it was written, whatever its `expires` says.
        until = min(ready.expires, ready.updated + timedelta(minutes=config.output.ttl_minutes))
        if now < until:
            return Block(capped(ready.block, limit), ready.digest, until)
        # Silence would read as "nothing new": say once that the scratchpad is out of date.
        line = stale_line(until, now, daemon_running=_daemon_running(config))
        digest = hashlib.sha256(line.encode()).hexdigest()
        return Block(line, digest, None)
    text = capped(fresh_context(config.output_path, now, config.state_dir), limit)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return Block(text, digest, None)


HOST = "claude-code"
# The wait for the daemon's answer to a prompt, in ms (see `daemon.control.PROMPT_BUDGET`).
BUDGET_ENV = "ASSEMBLER_PROMPT_BUDGET_MS"
_MAX_BUDGET_MS = 10_000


def prompt_budget(value: str | None, default: float) -> float:
    """Given $ASSEMBLER_PROMPT_BUDGET_MS (or None) and the default in seconds, return the
    budget in seconds: the variable's, between 0 and 10 s, when it is a number of ms."""
    try:
        ms = float(value) if value else None
    except ValueError:
        ms = None
    if ms is None or not 0 <= ms <= _MAX_BUDGET_MS:
        return default
    return ms / 1000


def answered_block(
    config: Config, event: HookEvent, now: datetime, budget: float | None = None
) -> Block | None:
    """Given a config, a UserPromptSubmit event, the clock and the budget in seconds (None:
    `daemon.control.PROMPT_BUDGET`), return the block the workspace's daemon assembled with
    the event's prompt counted as the newest human message, or None when there is no prompt,
    no daemon (nothing is waited for), or no fresh answer within the budget: the caller then
    uses the ready block as it is (`current_block`)."""
    if not event.prompt or not (config.state_dir / "daemon.lock").exists():
        return None
    from assembler.daemon.control import (
        PROMPT_BUDGET,
        NotServed,
        PromptRequest,
        ask_prompt,
        clip_prompt,
    )
    from assembler.daemon.service import lock_holder

    pid = lock_holder(config.state_dir)
    if pid is None:
        return None
    text, length = clip_prompt(event.prompt)
    request = PromptRequest(HOST, event.session_id, text, length)
    if budget is None:
        budget = prompt_budget(os.environ.get(BUDGET_ENV), PROMPT_BUDGET)
    if budget <= 0:  # the user turned the hand-off off
        return None
    try:
        answer = ask_prompt(config.state_dir, request, budget=budget, pid=pid or None)
    except NotServed:
        return None
    # As for the ready block: never fresher than the configured TTL after it was made.
    until = min(answer.expires, answer.updated + timedelta(minutes=config.output.ttl_minutes))
    if not answer.block or now >= until:
        return None
    return Block(capped(answer.block, block_limit(config)), answer.digest, until)


def stale_line(since: datetime, now: datetime, *, daemon_running: bool) -> str:
    """Given when the scratchpad expired, the clock and whether a daemon serves the workspace,
    return the one line the model gets instead of a stale block."""
    when = since.astimezone(now.tzinfo).strftime(
        "%H:%M" if now - since < timedelta(hours=20) else "%Y-%m-%d %H:%M"
    )
    why = "the next assembly is late" if daemon_running else "the assembler is not running"
    return f"[Scratchpad stale since {when}; {why}: its content is not shown.]\n"


def _daemon_running(config: Config) -> bool:
    if not (config.state_dir / "daemon.lock").exists():
        return False
    from assembler.daemon.service import lock_holder

    return lock_holder(config.state_dir) is not None


# Characters a token takes at most in the counters' estimate, and room for the block's own
# header and footer lines.
_CHARS_PER_TOKEN = 8
_BLOCK_SLACK = 4096


def block_limit(config: Config) -> int:
    """Given a config, return the most characters the hook sends: what the caps allow the
    file, plus a few KiB; a larger block was not written by an assembly."""
    return config.caps.total * _CHARS_PER_TOKEN + _BLOCK_SLACK


def capped(text: str, limit: int) -> str:
    """Given a block and the most characters to send, return it whole, or cut at the last line
    end before the limit with a line that says so."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    kept = text[: cut if cut > 0 else limit]
    return kept + f"\n[scratchpad cut: {len(text):,} characters is over the {limit:,} sent]\n"


def decide_and_record(config: Config, event: HookEvent, block: Block, now: datetime) -> str:
    """Given the event and the block, return what to add to the session's context ('' for
    nothing), and remember it: the session's transcript path (which assemblies read when no
    transcript source is configured) in `.scratchpad/claude-code-sessions.json`, the copy the
    session now holds in `.scratchpad/held/` (see `assembler.file.delta`).

    Claude Code keeps what a hook adds in the session's context, so a block sent on every
    prompt piles up. The whole block goes at SessionStart (a new, cleared or compacted session,
    whose context lacks it; a forked one, whose parent's copy is not known here), to a session
    whose copy is not known, and when the copy it holds has passed the validity it states (the
    model is told to ignore an expired copy); after that, only what changed since the copy the
    session holds, and nothing when its content did not change. A resumed session (`claude
    --resume`, `--continue`: each `claude -p` turn after a session's first) holds its history,
    with the copy sent before, so its SessionStart is treated as a prompt.
    """
    from assembler.file.delta import HeldCopies, plan_copy

    path = real_dir(config.state_dir) / SESSIONS_NAME
    lock = FileLock(path.with_name(path.name + ".lock"))
    with lock.hold(timeout=5):
        try:
            data = read_state_file(path).data
            sessions: Any = json.loads(data) if data else {}
        except (OSError, ValueError, RecursionError):  # a forged file of nested brackets
            sessions = {}
        if not isinstance(sessions, dict):
            sessions = {}
        key = event.session_id or ""
        record = sessions.get(key)
        record = dict(record) if isinstance(record, dict) else {}
        before = dict(record)
        if event.transcript_path:
            record["transcript_path"] = event.transcript_path
        if event.cwd:
            record["cwd"] = event.cwd
        text = ""
        if event.name in CONTEXT_EVENTS and block.text:
            copies = HeldCopies(config.state_dir, HOST)
            full = (event.name == "SessionStart" and event.source != "resume") or not key
            held = copies.get(key) if key else None
            copy = plan_copy(held, block.text, block.digest, block.valid_until, now, full=full)
            text = copy.text
            if key and copy.held != held:
                copies.put(key, copy.held)
            if text:
                record["sent"] = copy.held.digest
                until = copy.held.valid_until
                record["valid_until"] = until.isoformat() if until is not None else None
        seen = parse_time(record.get("seen"))
        if seen is None or (now - seen).total_seconds() > 600:
            record["seen"] = now.isoformat(timespec="seconds")
        if key and record != before:
            sessions[key] = record
            newest = sorted(sessions.items(), key=lambda kv: str(kv[1].get("seen", "")))
            kept = dict(newest[-MAX_SESSIONS:])
            atomic_write(path, json.dumps(kept, ensure_ascii=False, indent=1) + "\n")
    return text


def run_claude_code_hook(
    stdin_text: str,
    *,
    workspace: str | None,
    config_path: str | None,
    now: datetime | None = None,
    budget: float | None = None,
) -> str:
    """Given the hook's stdin, --workspace and --config, return what to print (maybe "").

    A prompt goes to the running daemon first, which answers the block with the prompt
    counted (see `answered_block`; `budget` seconds at most, else the ready block as it is).
    A running daemon is nudged for every event, so the next prompt finds a newer file. The
    block goes to the session once, then what changed in it (see `decide_and_record`).
    Raise HookInputError for bad input, ConfigError/WorkspaceError for a bad setup.
    """
    event = parse_claude_code_input(stdin_text)
    config = load_config(hook_workspace(workspace, event), config_path)
    clock = now if now is not None else datetime.now(local_timezone(config.time.timezone))
    block = Block("", "", None)
    if event.name in CONTEXT_EVENTS:
        answered = answered_block(config, event, clock, budget) if event.prompt else None
        block = answered if answered is not None else current_block(config, clock)
    # daemon.LOCK_NAME; a cheap look first, so the daemon module loads only where one ran.
    # After the prompt's answer: the assembly the nudge asks for would hold the daemon up.
    if (config.state_dir / "daemon.lock").exists():
        from assembler.daemon.service import nudge

        nudge(config.state_dir, event.name)
    try:
        text = decide_and_record(config, event, block, clock)
    except (OSError, TimeoutError):
        text = block.text  # no memory of what the session holds: better twice than never
    return claude_code_output(event, text)
