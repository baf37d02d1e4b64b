"""`assemble hook codex`: the fresh scratchpad in the form Codex adds to the model's context.

Codex runs the command hooks of `hooks.json` with a JSON object on stdin: `session_id`,
`transcript_path` (the rollout), `cwd`, `hook_event_name`, `model` and `permission_mode` on
every event, plus `source` ("startup", "resume", "clear" or "compact") on SessionStart and
`prompt` and `turn_id` on UserPromptSubmit. For these two the hook prints
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`, which Codex adds to
the conversation as a `developer` message and keeps in the session's history, resumed sessions
too. So the block goes to a session once, whole; after that only what changed in it
(`file.delta`), and whole again after /clear or a compaction (SessionStart). A stale block is
never sent: one line says the scratchpad is out of date, once. A running daemon is nudged to
assemble soon.

Codex blocks the prompt when a UserPromptSubmit hook exits 2, so a problem here is raised as
an AssemblerError (the CLI prints one line and exits 1, which does not block).
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from typing import Any, Final

from assembler.clock import local_timezone
from assembler.config.files import load_config
from assembler.file.delta import Copy, Held, HeldCopies, plan_copy
from assembler.hosts.claude_code.hook import (
    CONTEXT_EVENTS,
    Block,
    HookEvent,
    HookInputError,
    current_block,
    hook_workspace,
)

# The name the held copies of Codex sessions go by in `.scratchpad/held/`.
HOST_KEY: Final = "codex"


def parse_codex_input(text: str) -> HookEvent:
    """Given the hook's stdin, return its event.

    Raise HookInputError if it is not a JSON object with a string `hook_event_name`.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as error:
        raise HookInputError(
            f"hook codex: stdin is not JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}); run it from a Codex hook (hooks.json), which sends the event as JSON"
        ) from error
    except RecursionError:
        raise HookInputError(
            "hook codex: stdin nests too deeply to be a Codex hook event; run it from a Codex "
            "hook (hooks.json)"
        ) from None
    if not isinstance(data, dict):
        raise HookInputError(
            f"hook codex: stdin is a JSON {type(data).__name__}, not an object with "
            "'hook_event_name'; run it from a Codex hook (hooks.json)"
        )
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookInputError(
            "hook codex: the JSON on stdin has no 'hook_event_name'; run it from a Codex hook "
            "(hooks.json)"
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
    )


def plan_for(event: HookEvent, held: Held | None, block: Block, now: datetime) -> Copy:
    """Given the event, the copy the session holds (None: none known), the block and the
    clock, return what to send and what the session holds afterwards: the block whole at a
    SessionStart that lost it (cleared, compacted) or when nothing is held, else only what
    changed (`file.delta.plan_copy`). The stale line has no section in common with a block:
    it goes whole, once."""
    lost = event.name == "SessionStart" and event.source != "resume"
    return plan_copy(held, block.text, block.digest, block.valid_until, now, full=lost)


def codex_output(event: HookEvent, context: str) -> str:
    """Given the event and what to add, return what the hook prints: the JSON Codex adds to the
    context for UserPromptSubmit and SessionStart, else ""."""
    if event.name not in CONTEXT_EVENTS or not context:
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": context}}
    return json.dumps(output, ensure_ascii=False) + "\n"


def run_codex_hook(
    stdin_text: str,
    *,
    workspace: str | None,
    config_path: str | None,
    now: datetime | None = None,
) -> str:
    """Given the hook's stdin, --workspace and --config, return what to print (maybe "").

    Raise HookInputError for bad input, ConfigError/WorkspaceError for a bad setup.
    """
    event = parse_codex_input(stdin_text)
    config = load_config(hook_workspace(workspace, event), config_path)
    # daemon.LOCK_NAME; a cheap look first, so the daemon module loads only where one ran.
    if (config.state_dir / "daemon.lock").exists():
        from assembler.daemon.service import nudge

        nudge(config.state_dir, event.name)
    if event.name not in CONTEXT_EVENTS:
        return ""
    clock = now if now is not None else datetime.now(local_timezone(config.time.timezone))
    block = current_block(config, clock)
    copies = HeldCopies(config.state_dir, HOST_KEY)
    held = copies.get(event.session_id) if event.session_id else None
    copy = plan_for(event, held, block, clock)
    if event.session_id and copy.held != held:
        # No memory of what was sent: the next prompt sends it whole, better than never.
        with contextlib.suppress(OSError):
            copies.put(event.session_id, copy.held)
    return codex_output(event, copy.text)
