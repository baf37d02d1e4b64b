"""Claude Code's side of the transcript readers: which user lines hold the human's words, and
which transcripts the hook recorded for a workspace.

Taken from Claude Code's own code (1.0.x `cli.js`, 2.1.x's bundled source), not from its
documentation. A `user` line is the human's only when it is neither a tool result nor marked
`isMeta` (command expansions, caveats), and, from 2.x, its `origin.kind` is absent or `human`
(other origins are task notifications, scheduled triggers, peers, coordinators). Inside the
content, the host wraps what it adds in tags: `<command-message>`, `<command-name>` and
`<command-args>` for a slash command (the arguments are what the human typed),
`<local-command-stdout>`, `<bash-input>`, `<system-reminder>`, `<task-notification>`, ...; a
message from a chat channel arrives as `<channel source="..." user="...">words</channel>`.
The tags, notes and commands come from the catalogue in `host_text.py`, version by version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from assembler.hosts.claude_code import host_text
from assembler.transcripts.message import HOST, NOTHING, UserTurn, text_blocks

# Blocks the host adds to a text, wherever they are (the host's list of system tags), and the
# slash command's own record, should it come with attributes.
_ADDED_BLOCK = re.compile(
    r"<("
    + "|".join(re.escape(tag) for tag in (*host_text.BLOCK_TAGS, "command-message", "command-name"))
    + r")\b[^>]*>.*?</\1>\s*",
    re.DOTALL,
)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_COMMAND_MARK = re.compile(r"<command-(?:name|message|args)>")
_COMMAND_NAME = re.compile(r"<command-name>\s*(/[\w:.-]+)\s*</command-name>")
# Built-in commands that work the session itself, not the task (Claude Code's command list).
_SESSION_COMMANDS: Final = host_text.SESSION_COMMANDS
# Turns the host writes in the human's place: notifications of background tasks, messages of
# other agents and sessions, scheduler ticks, fetched pages, wake-ups by outside events.
_HOST_TAG = re.compile(
    r"\A\s*<(?:" + "|".join(re.escape(tag) for tag in host_text.HOST_TURN_TAGS) + r")[\s>]"
)
# Anything else that opens with a hyphenated tag (<bash-input>, <local-command-stdout>, ...) is
# the host's record of a command, not words; so are the host's notes (caveats, interruptions,
# a compaction summary written without its flag, as 1.0.x did).
_WRAPPER = re.compile(
    r"\A\s*(?:<[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+[\s>]|"
    + "|".join(re.escape(prefix) for prefix in host_text.NOTE_PREFIXES)
    + ")"
)
_CHANNEL = re.compile(
    r"\A\s*<channel\s+source=\"[^\"]*\"([^>]*)>\n?(.*?)\n?</channel>\s*\Z", re.DOTALL
)
_CHANNEL_USER = re.compile(r"\buser=\"([^\"]+)\"")


def user_turn(line: Mapping[str, Any]) -> UserTurn:
    """Given a Claude Code `user` line (its `message` a dict with string or list content), return
    whose words it holds, with the host's tags taken off."""
    if line.get("isMeta") is True or line.get("isVisibleInTranscriptOnly") is True:
        return NOTHING  # command expansions, caveats, hook output
    if line.get("toolUseResult") is not None:
        return NOTHING
    origin = line.get("origin")
    if isinstance(origin, dict) and origin.get("kind") not in (None, "human"):
        return HOST
    content = line["message"].get("content")
    words: list[str] = []
    speaker: str | None = None
    host = False
    for piece in text_blocks(content):
        if _COMMAND_MARK.search(piece):
            # A slash command: its arguments are the human's words, nor is the expansion the
            # host adds in the next (isMeta) line; without arguments the command itself is what
            # the human asked for ("/init", a command of the project's), unless it only works
            # the session ("/clear", "/model").
            args = " ".join(arg.strip() for arg in _COMMAND_ARGS.findall(piece) if arg.strip())
            name = _COMMAND_NAME.search(piece)
            if args:
                words.append(args)
            elif name is not None and name.group(1).lower() not in _SESSION_COMMANDS:
                words.append(name.group(1))
            continue
        piece = _ADDED_BLOCK.sub("", piece).strip()
        if not piece:
            continue
        if _HOST_TAG.match(piece):
            host = True
            continue
        channel = _CHANNEL.match(piece)
        if channel is not None:
            user = _CHANNEL_USER.search(channel.group(1))
            speaker = speaker or (user.group(1) if user else None)
            if channel.group(2).strip():
                words.append(channel.group(2).strip())
            continue
        if _WRAPPER.match(piece):
            continue
        words.append(piece)
    if words:
        return UserTurn("human", "\n".join(words), speaker)
    return HOST if host else NOTHING
