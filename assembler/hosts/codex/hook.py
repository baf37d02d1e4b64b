"""`assemble hook codex`: the fresh scratchpad in the form Codex adds to the model's context.

Codex runs the command hooks of `hooks.json` with a JSON object on stdin: `session_id`,
`transcript_path` (the rollout), `cwd`, `hook_event_name`, `model` and `permission_mode` on
every event, plus `source` ("startup", "resume", "clear" or "compact") on SessionStart and
`prompt` and `turn_id` on UserPromptSubmit. For these two the hook prints
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`, which Codex adds to
the conversation as a `developer` message and keeps in the session's history, resumed sessions
too. So the block goes to a session once, whole; after that only what changed in it
(`file.delta`), and whole again after /clear or a compaction (SessionStart). A stale block is
never sent: one line says the scratchpad is out of date, once.

What the block is, whatever the host, is `assembler.hosts.handoff`'s: on UserPromptSubmit the
prompt goes to a running daemon first (the request names the host "codex"), and its answer
counts the prompt as the newest human message (within a budget, else the ready block as it
is); a running daemon is nudged to assemble soon.

Codex blocks the prompt when a UserPromptSubmit hook exits 2, so a problem here is raised as
an AssemblerError (the CLI prints one line and exits 1, which does not block).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from assembler.clock import local_timezone
from assembler.hosts.handoff import (
    CONTEXT_EVENTS,
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

# The host's name in prompt requests and in `.scratchpad/held/`.
HOST_KEY: Final = "codex"


def parse_codex_input(text: str) -> HookEvent:
    """Given the hook's stdin, return its event (see `hosts.handoff.parse_hook_event`)."""
    return parse_hook_event(text, "hook codex", "a Codex hook (hooks.json)")


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

    A prompt goes to the running daemon first, which answers the block with the prompt counted
    (`hosts.handoff.hook_block`; `budget` seconds at most, else the ready block as it is). The
    block goes to the session once, then what changed in it (`hosts.handoff.session_copy`).
    Raise HookInputError for bad input, ConfigError/WorkspaceError for a bad setup.
    """
    event = parse_codex_input(stdin_text)
    config = hook_config(workspace, config_path, event, HOST_KEY, all_projects=all_projects)
    if config is None:  # a project the user's config or its marker keeps out
        return ""
    if event.name not in CONTEXT_EVENTS:
        nudge_daemon(config, event.name)
        return ""
    clock = now if now is not None else datetime.now(local_timezone(config.time.timezone))
    block = hook_block(config, HOST_KEY, event, clock, budget)
    # After the prompt's answer: the assembly the nudge asks for would hold the daemon up.
    nudge_daemon(config, event.name)
    try:
        text = session_copy(
            config, HOST_KEY, event.session_id, block, clock, full=lost_block(event)
        ).text
    except OSError:
        text = block.text  # no memory of what the session holds: better twice than never
    note_delivery(config, HOST_KEY, event, text, clock)
    return context_output(event, text)
