"""`assemble hook claude-code`: the fresh scratchpad in the form Claude Code adds to the model's
context.

Claude Code runs the hook on its hook events with a JSON object on stdin: `session_id`,
`transcript_path`, `cwd` and `hook_event_name` on every event, plus `source` ("startup",
"resume", "clear", "compact" or "fork") on SessionStart and `prompt` on UserPromptSubmit. For
UserPromptSubmit and SessionStart the hook prints `{"hookSpecificOutput": {"hookEventName": ...,
"additionalContext": ...}}`, which Claude Code adds to the context (and keeps there, in the
session's history): the whole block the first time in a session (and after /clear or a
compaction), after that only what changed since the copy the session holds
(`assembler.file.delta`), nothing when nothing did, and nothing for other events. A stale
scratchpad is one line saying so.

What the block is, whatever the host, is `assembler.hosts.handoff`'s: on UserPromptSubmit the
prompt goes to a running daemon first, and its answer counts the prompt (within a budget,
else the ready block as it is); a running daemon is nudged to assemble soon. Claude Code
blocks the prompt when a hook exits 2, so a problem here is raised as an AssemblerError (the
CLI prints one line and exits 1, which does not block).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assembler.clock import local_timezone
from assembler.file.codec import parse_time
from assembler.fsutil import FileLock, atomic_write, read_state_file, real_dir
from assembler.hosts.handoff import (
    CONTEXT_EVENTS,
    NO_BLOCK,
    Block,
    HookEvent,
    context_output,
    hook_block,
    hook_config,
    lost_block,
    note_delivery,
    nudge_daemon,
    parse_hook_event,
    session_copy,
)

if TYPE_CHECKING:
    from assembler.config.schema import Config

# The host's name in prompt requests and held copies.
HOST = "claude-code"


def parse_claude_code_input(text: str) -> HookEvent:
    """Given the hook's stdin, return its event (see `hosts.handoff.parse_hook_event`)."""
    return parse_hook_event(text, "hook claude-code", "a Claude Code hook (settings.json 'hooks')")


SESSIONS_NAME = "claude-code-sessions.json"
# The sessions remembered; older ones (by when they were last seen) are forgotten.
MAX_SESSIONS = 200


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
            copy = session_copy(config, HOST, key or None, block, now, full=lost_block(event))
            text = copy.text
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


def run_hook(
    stdin_text: str,
    *,
    workspace: str | None,
    config_path: str | None,
    now: datetime | None = None,
    budget: float | None = None,
    all_projects: bool = False,
) -> str:
    """Given the hook's stdin, --workspace, --config and whether the hook serves every
    project (`hosts.handoff.hook_config`), return what to print (maybe "").

    A prompt goes to the running daemon first, which answers the block with the prompt
    counted (see `hosts.handoff.hook_block`; `budget` seconds at most, else the ready block as
    it is).
    A running daemon is nudged for every event, so the next prompt finds a newer file. The
    block goes to the session once, then what changed in it (see `decide_and_record`).
    Raise HookInputError for bad input, ConfigError/WorkspaceError for a bad setup.
    """
    event = parse_claude_code_input(stdin_text)
    config = hook_config(workspace, config_path, event, HOST, all_projects=all_projects)
    if config is None:  # a project the user's config or its marker keeps out
        return ""
    clock = now if now is not None else datetime.now(local_timezone(config.time.timezone))
    block = NO_BLOCK
    if event.name in CONTEXT_EVENTS:
        block = hook_block(config, HOST, event, clock, budget)
    # After the prompt's answer: the assembly the nudge asks for would hold the daemon up.
    nudge_daemon(config, event.name)
    try:
        text = decide_and_record(config, event, block, clock)
    except (OSError, TimeoutError):
        text = block.text  # no memory of what the session holds: better twice than never
    note_delivery(config, HOST, event, text, clock)
    return context_output(event, text)
