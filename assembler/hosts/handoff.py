"""What a host's hook hands the model before a prompt, whatever the host: the block to add (the
daemon's answer to the prompt, else the ready block, else the file, else one line saying the
scratchpad is stale) and the part of it the session does not hold yet.

A hook (`hosts/<host>/hook.py`) parses its host's event into a `HookEvent`, then:

    block = hook_block(config, "the host", event, now)   # the prompt counted, when a daemon answers
    nudge_daemon(config, event.name)                     # a running daemon assembles soon
    copy = session_copy(config, "the host", event.session_id, block, now, full=lost)
    print(the host's JSON around copy.text)

The prompt goes first to the workspace's daemon over its socket (`daemon.control.ask_prompt`,
the request naming the host), and the block it answers counts the prompt as the newest human
message (its mood, task, strategy and memory queries). No answer within the budget (150 ms, or
$ASSEMBLER_PROMPT_BUDGET_MS; 0 turns the hand-off off), or no daemon (then nothing is waited
for), and the ready block is used as it is.

A hook runs before every prompt, so this module starts fast: it reads the file's frontmatter
with a few string operations instead of loading YAML, Jinja2 or anything numeric, and never
touches the memory index; only a frontmatter that differs from the last render's (an edit
touched it) is parsed in full, as `assemble check` parses it, so the two agree on a broken
file. The agent can write the ready block and the held copies: neither is trusted to be fresher
than the configured TTL, larger than the caps allow, or well formed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.clock import fresh_until
from assembler.config.files import load_config
from assembler.config.projects import ProjectNotServed, announce, project_config, project_root
from assembler.daemon.lock import LOCK_NAME, lock_holder, nudge
from assembler.delivery.sent import record_sent
from assembler.errors import AssemblerError
from assembler.file.codec import body_prefix, read_page
from assembler.file.delta import Copy, HeldCopies, plan_copy
from assembler.pad.ready import read_ready
from assembler.valid_text import valid_text

if TYPE_CHECKING:
    from assembler.config.schema import Config


class HookInputError(AssemblerError):
    """The host sent the hook something that is not the JSON object it should be."""


@dataclass(frozen=True)
class HookEvent:
    """The fields of a host's hook input that the hooks use (the hosts that run command hooks
    send these under the same names)."""

    name: str
    cwd: str | None
    session_id: str | None
    transcript_path: str | None
    source: str | None = None  # a session start's: "startup", "resume", "clear", "compact", ...
    prompt: str | None = None  # a prompt's: what the human typed


def parse_hook_event(text: str, command: str, run_from: str) -> HookEvent:
    """Given a hook's stdin, the command's name for messages ("hook codex") and where it runs
    from ("a Codex hook (hooks.json)"), return its event.

    Raise HookInputError if it is not a JSON object with a string `hook_event_name`.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as error:
        raise HookInputError(
            f"{command}: stdin is not JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}); run it from {run_from}, which sends the event as JSON"
        ) from error
    except RecursionError:
        raise HookInputError(
            f"{command}: stdin nests too deeply to be a hook event; run it from {run_from}"
        ) from None
    if not isinstance(data, dict):
        raise HookInputError(
            f"{command}: stdin is a JSON {type(data).__name__}, not an object with "
            f"'hook_event_name'; run it from {run_from}"
        )
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError(
            f"{command}: the JSON on stdin has no 'hook_event_name'; run it from {run_from}"
        )

    def text_field(key: str) -> str | None:
        value = data.get(key)
        return valid_text(value) if isinstance(value, str) and value else None

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


def hook_config(
    workspace: str | None,
    config_path: str | None,
    event: HookEvent,
    host: str,
    *,
    all_projects: bool = False,
) -> Config | None:
    """Given --workspace, --config, the event, the host's name and whether the hook serves
    every project (`--all-projects`), return the config of the workspace the session belongs
    to: the one `hook_workspace` names; with `all_projects`, the project of the session's
    working folder (`config.projects`), announced for `assemble daemon --all`. Return None
    when the user's config or the project's marker keeps the project out: the hook then adds
    nothing. Raise HookInputError when an all-projects hook gets no working folder,
    ConfigError/WorkspaceError for a bad setup."""
    if not all_projects:
        return load_config(hook_workspace(workspace, event), config_path)
    if event.cwd is None or not os.path.isabs(event.cwd):
        raise HookInputError(
            f"hook {host} --all-projects: the event names no absolute working folder (cwd), "
            "so its project is not known; pass --workspace to serve one folder"
        )
    try:
        config = project_config(project_root(event.cwd), config_path)
    except ProjectNotServed:
        return None
    # A record that cannot be written: the hook still serves the project, and the next
    # event announces it again.
    with contextlib.suppress(AssemblerError, OSError):
        announce(config, host, datetime.now().astimezone())
    return config


@dataclass(frozen=True)
class Block:
    """What the host would add now: the block ('' when stale or missing), a digest of its
    content apart from its clocks, and until when the block says it is valid."""

    text: str
    digest: str
    valid_until: datetime | None


NO_BLOCK = Block("", "", None)


def hook_block(
    config: Config, host: str, event: HookEvent, now: datetime, budget: float | None = None
) -> Block:
    """Given a config, the host's name, an event that adds context, the clock and the budget in
    seconds (None: $ASSEMBLER_PROMPT_BUDGET_MS or `daemon.control.PROMPT_BUDGET`), return the
    block to add: the daemon's answer with the event's prompt counted (`answered_block`), else
    the current one (`current_block`)."""
    answered = answered_block(config, host, event, now, budget) if event.prompt else None
    return answered if answered is not None else current_block(config, now)


def current_block(config: Config, now: datetime) -> Block:
    """Given a config and the clock, return the block to add to the context: the ready block
    written with the file (see `assembler.pad.ready`) while the file is still the one it was made
    from, else the file itself, parsed in full (an agent edited it, or it predates the ready
    block)."""
    ready = read_ready(config.state_dir)
    limit = block_limit(config)
    if ready is not None and ready.matches_file(config.output_path):
        # The agent can write the ready block: its freshness is never more than the TTL the
        # user configured after it was written, whatever its `expires` says, and none when it
        # says it was written later than now.
        until = ready.fresh_until(config.output.ttl, now)
        if until is not None and now < until:
            return Block(capped(ready.block, limit), ready.digest, until)
        # Silence would read as "nothing new": say once that the scratchpad is out of date.
        line = stale_line(until or now, now, daemon_running=daemon_running(config))
        digest = hashlib.sha256(line.encode()).hexdigest()
        return Block(line, digest, None)
    text = capped(
        fresh_context(config.output_path, now, config.output.ttl, config.state_dir), limit
    )
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return Block(text, digest, None)


def fresh_context(path: Path, now: datetime, ttl: timedelta, state_dir: Path | None = None) -> str:
    """Given the path of SCRATCHPAD.md, the clock, the TTL configured and the state folder
    (which keeps the copy of the last render), return the block to add to the context, or ""
    when the file is missing, unreadable, broken or stale: exactly when `assemble check` does
    not call it fresh (see `codec.read_page`)."""
    page = read_page(path, state_dir)
    if page is None or not page.is_fresh(now, ttl):
        return ""
    return body_prefix(page.body)


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
    config: Config, host: str, event: HookEvent, now: datetime, budget: float | None = None
) -> Block | None:
    """Given a config, the host's name (the prompt request's `host`), an event, the clock and
    the budget in seconds (None: $ASSEMBLER_PROMPT_BUDGET_MS or `daemon.control.PROMPT_BUDGET`),
    return the block the workspace's daemon assembled with the event's prompt counted as the
    newest human message, or None when there is no prompt, no daemon (nothing is waited for),
    or no fresh answer within the budget: the caller then uses the ready block as it is
    (`current_block`)."""
    if not event.prompt or not (config.state_dir / LOCK_NAME).exists():
        return None
    # Here, not at the top: the socket protocol's module loads the transcripts' reading (for
    # its options), which a hook needs only when a daemon runs.
    from assembler.daemon.control import (
        MAX_WAIT_MS,
        PROMPT_BUDGET,
        NotServed,
        PromptRequest,
        ask_prompt,
        clip_prompt,
    )

    pid = lock_holder(config.state_dir)
    if pid is None:
        return None
    text, length = clip_prompt(event.prompt)
    if budget is None:
        budget = prompt_budget(os.environ.get(BUDGET_ENV), PROMPT_BUDGET)
    if budget <= 0:  # the user turned the hand-off off
        return None
    wait_ms = min(round(budget * 1000), MAX_WAIT_MS)
    request = PromptRequest(host, event.session_id, text, length, wait_ms)
    try:
        answer = ask_prompt(config.state_dir, request, budget=budget, pid=pid)
    except NotServed:
        return None
    # As for the ready block: never fresher than the configured TTL after it was made.
    until = fresh_until(answer.updated, answer.expires, config.output.ttl, now)
    if not answer.block or until is None or now >= until:
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


def daemon_running(config: Config) -> bool:
    """Given a config, return whether a daemon holds the workspace's lock (a cheap look at the
    lock file first)."""
    if not (config.state_dir / LOCK_NAME).exists():
        return False
    return lock_holder(config.state_dir) is not None


def nudge_daemon(config: Config, why: str) -> None:
    """Given a config and the event's name, ask a running daemon to assemble soon, so that the
    next prompt finds a newer file; nothing when none ran here."""
    if (config.state_dir / LOCK_NAME).exists():  # a cheap look first
        nudge(config.state_dir, why)


# Characters a token takes at most in the counters' estimate, and room for the block's own
# header and footer lines.
_CHARS_PER_TOKEN = 8
_BLOCK_SLACK = 4096


def block_limit(config: Config) -> int:
    """Given a config, return the most characters a hook sends: what the caps allow the file,
    plus a few KiB; a larger block was not written by an assembly."""
    return config.caps.total * _CHARS_PER_TOKEN + _BLOCK_SLACK


def capped(text: str, limit: int) -> str:
    """Given a block and the most characters to send, return it whole, or cut at the last line
    end before the limit with a line that says so."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    kept = text[: cut if cut > 0 else limit]
    return kept + f"\n[scratchpad cut: {len(text):,} characters is over the {limit:,} sent]\n"


def note_delivery(config: Config, host: str, event: HookEvent, text: str, now: datetime) -> None:
    """Given the config, the host's name, the event and what the hook prints for the host to
    add ("" for nothing), record a prompt's hook run for the delivery receipts
    (`delivery.sent`); nothing for other events or a session with no id. A record that
    cannot be written is skipped: the block matters more."""
    if event.name != "UserPromptSubmit" or not event.session_id:
        return
    with contextlib.suppress(AssemblerError, OSError):
        record_sent(config.state_dir, host, event.session_id, text, now)


# The events whose output the hosts add to the session's context (Claude Code's hook protocol,
# which Codex's follows).
CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")


def lost_block(event: HookEvent) -> bool:
    """Given an event, return whether the session's context lost the block whatever it held: a
    SessionStart of a new, cleared or compacted session (a resumed one keeps its history)."""
    return event.name == "SessionStart" and event.source != "resume"


def context_output(event: HookEvent, context: str) -> str:
    """Given the event and what to add, return what the hook prints: the JSON that adds it to
    the session's context for UserPromptSubmit and SessionStart, else ""."""
    if event.name not in CONTEXT_EVENTS or not context:
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": context}}
    return json.dumps(output, ensure_ascii=False) + "\n"


def session_copy(
    config: Config,
    host: str,
    session_id: str | None,
    block: Block,
    now: datetime,
    *,
    full: bool,
) -> Copy:
    """Given a config, the host's name, the session's id (None: not known), the block, the
    clock and whether the session's context lacks the block whatever it held (new, cleared,
    compacted: `full`), return what to send it (`file.delta.plan_copy`: the block whole once,
    then only what changed, nothing when nothing did) and keep the copy it then holds in
    `.scratchpad/held/`. A session with no id gets the block whole. Raise OSError if the copy
    cannot be kept (the caller then sends the block whole: better twice than never)."""
    copies = HeldCopies(config.state_dir, host)
    held = copies.get(session_id) if session_id else None
    copy = plan_copy(
        held, block.text, block.digest, block.valid_until, now, full=full or not session_id
    )
    if session_id and copy.held != held:
        copies.put(session_id, copy.held)
    return copy
