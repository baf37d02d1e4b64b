"""OpenClaw's side of the transcript readers: which files of its state folder are sessions, which
user turns it writes itself, and where an install keeps the transcripts of a workspace's agents.

Taken from OpenClaw's own code (2026.3 to 2026.9), not from its documentation:

- Session folders (`agents/<id>/sessions/`, JSONL, 2026.3 to 2026.6) also hold the host's
  artifacts: `<id>.trajectory.jsonl` run traces and their `.trajectory-path.json` pointers,
  `<id>.checkpoint.<uuid>.jsonl` copies taken before a compaction, archives named
  `<file>.reset.<time>`, `.deleted.<time>`, `.bak.<time>` and `.bak-<pid>-<ms>`, and the
  `sessions.json` index (session key -> `{sessionId, sessionFile, ...}`). Only
  `<sessionId>.jsonl` and `<sessionId>-topic-<thread>.jsonl` are live sessions
  (`isPrimarySessionTranscriptFileName`).
- The SQLite store (`agents/<id>/agent/openclaw-agent.sqlite`, 2026.7 on) keeps each session
  window's entries in `transcript_events` and its key in `session_windows.session_key`.
- Session keys say who runs a session: `agent:<id>:cron:<job>[:run:<session>]` (a scheduled
  job), `agent:<id>:subagent:<uuid>` (a task the agent spawned), `hook:<uuid>` (a webhook or
  mail), `...:heartbeat`; the human's are `agent:<id>:main`, `agent:<id>:<channel>:...`.
- User turns the host writes into a session: heartbeat and wake prompts, cron prompts, system
  event lines, subagent and inter-session messages, the /new greeting prompt, the memory flush
  before a compaction; and around the human's words in 2026.3 an envelope of metadata blocks
  and a `[Sat 2026-03-14 11:35 GMT+8]` stamp. From 2026.7 a user message says where it came
  from in `provenance.kind` (`external_user`, `inter_session`, `internal_system`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from assembler.hosts.openclaw.host_text import CATALOGUE, entry, texts
from assembler.transcripts.message import HOST, NOTHING, LocalStamp, UserTurn

# --------------------------------------------------------------------------------------------
# Which files of a session folder are sessions.
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Whose words a user turn holds.
# --------------------------------------------------------------------------------------------


# The texts the host writes into user turns come from the catalogue (host_text.py), which says
# for each the releases that write it and where it lives in the host's code.
_PROMPTS: Final = tuple(e for e in CATALOGUE if e.kind == "prompt")
# Prompts the host writes as user turns, by how they start (heartbeat, wake, cron, reminder,
# subagent, inter-session, /new, memory flush, restart...).
_HOST_PROMPTS: Final = tuple(e.text for e in _PROMPTS if e.pattern is None)
# Prompts whose start is templated, as a cron job's payload that asks for a relay.
_HOST_PROMPT_PATTERNS: Final = tuple(re.compile(e.pattern) for e in _PROMPTS if e.pattern)
# Drafts the control UI puts in the box for the human to send: the host's words, not a request.
_DRAFTS: Final = frozenset(texts("draft"))
# Messages that arrived while a run was busy, delivered as one turn (2026.2): a header, then
# each message after a "Queued #N" separator, with its own metadata.
_QUEUED_HEADER: Final = entry("queued-messages").text
_QUEUED_SEPARATOR = re.compile(entry("queued-messages").pattern or "", re.MULTILINE)
# A relayed system event may carry its payload as a JSON object on the lines after it.
_JSON_PAYLOAD = re.compile(r"\A\{\n(?:[ \t][^\n]*\n|\n)*?\}[ \t]*(?:\n|\Z)")
# The labels of the metadata blocks before the words: a sentinel line, then a fenced JSON block
# (INBOUND_META_SENTINELS); from 2026.x a label ending in the context marker instead.
_META_SENTINELS: Final = tuple(
    e.text for e in CATALOGUE if e.kind == "before" and "(untrusted" in e.text
)
_CONVERSATION: Final = entry("conversation-info").text
_SENDER: Final = entry("sender-info").text
_CONTEXT_MARKER: Final = entry("context-marker").text
# Where the human's message starts after relayed system events: its metadata or its envelope.
_MESSAGE_START = re.compile(
    r"^(?:"
    + "|".join(re.escape(s) for s in (_CONVERSATION, _SENDER))
    + r"|[^\n]{1,120} "
    + re.escape(_CONTEXT_MARKER)
    + r"[ \t]*$"
    + r"|\[[^\]\n]*\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}[^\]\n]*\])",
    re.MULTILINE,
)
# A group message may open by mentioning the agent's account: "@one_mcs_bot ...".
_MENTION = re.compile(r"\A@[A-Za-z0-9_]{3,32}\s+")
# The sender of a group message, before its words in the envelope (formatInboundEnvelope, for
# chats that are not direct: `${sender}: ${body}`, the sender `Name (id)` by
# resolveSenderLabel, the id a number or a phone number; 2026.1.24 on).
_SENDER_LABEL = re.compile(r"\A([^\n:()\[\]]{1,64}?) \((?:\+?\d{3,20})\): ")
# Mail and webhook content comes wrapped in these markers, after a "Job ID: ..." line.
_MARKERS: Final = texts("marker")
# The heartbeat prompt may be preceded by a delivery hint (MESSAGE_TOOL_DELIVERY_HINTS).
_DELIVERY_HINT = re.compile(
    r"\A(?:"
    + "|".join(re.escape(e.text) for e in CATALOGUE if e.name.startswith("delivery-hint-"))
    + r")[^\n]*(?:\n|\Z)"
)
# Runtime context the host adds to a turn for the model only (2026.9).
_INTERNAL_CONTEXT = re.compile(entry("internal-context").pattern or "", re.DOTALL)
# Queued system events, one "System: ..." line each, before the human's words.
_SYSTEM_LINE = re.compile(entry("system-event-line").pattern or "")
# What the host says about the previous run before the words.
_RUN_NOTES: Final = (entry("aborted-note").text, entry("interrupted-note").text)
# Other people's messages since the agent last spoke, then the one to answer (group chats).
_HISTORY_MARKERS: Final = (entry("history-context").text, entry("recent-history-context").text)
_CURRENT_MARKER: Final = entry("current-message").text
_UNTRUSTED_SUFFIX: Final = entry("untrusted-context").text
# The envelope before the words: "[Telegram Alice +2m Sat 2026-03-14 11:35 GMT+8] " from a
# channel, "[Sat 2026-03-14 11:35 GMT+8] " from the web chat (chat-envelope.ts).
_ENVELOPE = re.compile(entry("envelope").pattern or "")
_ENVELOPE_CHANNELS: Final = (
    "WebChat",
    "WhatsApp",
    "Telegram",
    "Signal",
    "Slack",
    "Discord",
    "Google Chat",
    "iMessage",
    "Teams",
    "Matrix",
    "Zalo",
    "BlueBubbles",
)
_ENVELOPE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}Z| \d{2}:\d{2})")
_MESSAGE_ID_LINE = re.compile(entry("message-id").pattern or "", re.IGNORECASE | re.MULTILINE)
# What the host says about pictures and files the human sent, in place of or beside words.
_MEDIA_LINE = re.compile(
    r"^\s*(?:\[media attached(?:\s+\d+/\d+)?:[^\n]*\]|"
    + re.escape(entry("media-without-caption").text)
    + "|"
    + re.escape(entry("media-send-hint").text)
    + r"[^\n]*)\s*$",
    re.MULTILINE,
)
_PROVENANCE_HOST: Final = frozenset({"internal_system", "inter_session"})


def user_turn(body: Mapping[str, Any], text: str) -> UserTurn:
    """Given an OpenClaw user message and the plain text of its content, return whose words they
    are, with the host's wrapping (envelope, metadata, system event lines) taken off."""
    if body.get("display") is False:
        return HOST  # hidden from the chat: only the model sees it
    provenance = body.get("provenance")
    if isinstance(provenance, dict) and provenance.get("kind") in _PROVENANCE_HOST:
        return HOST
    meta = body.get("__openclaw")
    if isinstance(meta, dict):
        upstream = meta.get("upstreamUserText")
        if isinstance(upstream, str):
            text = upstream  # the human's own text of a prompt the host rewrote
        elif meta.get("mirrorOrigin"):
            return NOTHING  # a mirror of a prompt; the host shows it only with that text
    return clean_user_text(text)


def clean_user_text(text: str) -> UserTurn:
    """Given the text of a user turn, return the human's words in it, or that it is the host's.

    A text that is nothing but host material (system event lines, metadata) is the host's; one
    that is nothing but a note about a picture is `none`.
    """
    if not text.strip():
        return NOTHING  # a picture alone
    rest = _INTERNAL_CONTEXT.sub("", text).strip()
    if rest.startswith(_QUEUED_HEADER):
        return _queued(rest[len(_QUEUED_HEADER) :])
    if _starts_with_host_prompt(rest):
        return HOST
    rest = _DELIVERY_HINT.sub("", rest, count=1).lstrip()
    system_stamp: LocalStamp | None = None
    relayed = False
    while match := _SYSTEM_LINE.match(rest):
        relayed = True
        system_stamp = system_stamp or _stamp(match.group(0))
        rest = rest[match.end() :]
        if payload := _JSON_PAYLOAD.match(rest):
            rest = rest[payload.end() :]
    if relayed:
        # A relayed event's report runs on over paragraphs until the human's message starts,
        # with its metadata block or its envelope.
        start = _MESSAGE_START.search(rest)
        if start is not None:
            rest = rest[start.start() :]
    rest = rest.strip()
    for note in _RUN_NOTES:
        if rest.startswith(note):
            rest = rest[len(note) :].strip()
    current = _strip_history(rest)
    if current is None:
        return HOST  # other people's messages, and none to answer
    rest, speaker, stamp = _strip_metadata(current)
    current = _strip_history(rest)
    if current is None:
        return HOST
    rest, header = _strip_envelope(current)
    # The gateway stamps its system events in the zone it stamps the human's messages in.
    stamp = _stamp(header) or stamp or system_stamp
    if _starts_with_host_prompt(rest):
        return UserTurn("host", stamp=stamp)
    if speaker is not None:
        for prefix in speaker.prefixes:
            if rest.startswith(prefix):
                rest = rest[len(prefix) :].lstrip()
                break
    elif header and (label := _SENDER_LABEL.match(rest)) is not None:
        # a group message in an envelope: the sender before the words
        speaker = _Speaker(label.group(1).strip(), ())
        rest = rest[label.end() :]
    rest = _MENTION.sub("", _MESSAGE_ID_LINE.sub("", rest).strip())
    if rest in _DRAFTS:
        return UserTurn("host", stamp=stamp)
    without_media = _MEDIA_LINE.sub("", rest).strip()
    if not without_media:
        return NOTHING if without_media != rest.strip() else HOST
    return UserTurn("human", without_media, speaker.name if speaker else None, stamp)


def _queued(body: str) -> UserTurn:
    """Given the messages of a queued delivery (after its header), return the human's words in
    them, each message cleaned as a turn of its own, oldest first; the host's when none."""
    turns = [clean_user_text(part) for part in _QUEUED_SEPARATOR.split(body) if part.strip()]
    said = [turn for turn in turns if turn.said == "human"]
    if not said:
        return HOST if any(turn.said == "host" for turn in turns) else NOTHING
    stamp = next((turn.stamp for turn in reversed(said) if turn.stamp is not None), None)
    return UserTurn("human", "\n".join(turn.text for turn in said), said[-1].speaker, stamp)


def _starts_with_host_prompt(text: str) -> bool:
    return (
        text.startswith(_HOST_PROMPTS)
        or any(pattern.match(text) for pattern in _HOST_PROMPT_PATTERNS)
        or any(marker in text[:4096] for marker in _MARKERS)
        or (
            bool(_DELIVERY_HINT.match(text))
            and _starts_with_host_prompt(_DELIVERY_HINT.sub("", text, count=1).lstrip())
        )
    )


@dataclass(frozen=True)
class _Speaker:
    name: str  # what `Message.speaker` says
    prefixes: tuple[str, ...]  # "Alice: " before a group message's words


def _strip_metadata(text: str) -> tuple[str, _Speaker | None, LocalStamp | None]:
    """Given a user text, return it without the leading metadata blocks and the trailing
    untrusted context, who spoke when the blocks say it was a group chat, and the local time
    the conversation block stamps.

    Only the blocks are looked at, not the whole text: the words after them can be a paste of
    many megabytes.
    """
    blocks: dict[str, Any] = {}
    rest = text
    while True:
        sentinel, _, after = rest.partition("\n")
        label = _block_label(sentinel.strip())
        if label is None:
            break
        fence, _, payload = after.partition("\n")
        close = payload.find("\n```")
        if fence.strip() != "```json" or close < 0:
            if not sentinel.rstrip().endswith(_CONTEXT_MARKER):
                break
            # A marked block of plain lines (a chat window) runs to the first empty line.
            end = after.find("\n\n")
            rest = after[end:].lstrip() if end >= 0 else ""
            continue
        try:
            blocks[label] = json.loads(payload[:close])
        except (ValueError, RecursionError):
            blocks[label] = None
        rest = payload[close + len("\n```") :].lstrip()
    suffix = rest.find(_UNTRUSTED_SUFFIX)
    if suffix >= 0 and (suffix == 0 or rest[suffix - 1] == "\n"):
        rest = rest[:suffix]
    conversation = blocks.get(_CONVERSATION)
    stamp = None
    if isinstance(conversation, dict) and isinstance(conversation.get("timestamp"), str):
        stamp = _stamp(conversation["timestamp"])
    return rest.strip(), _group_speaker(blocks), stamp


def _block_label(line: str) -> str | None:
    """Given the first line of a text, return the label of the metadata block it opens (the
    conversation and sender blocks under their sentinel's name, in either form), or None."""
    if line in _META_SENTINELS:
        return line
    if not line.endswith(_CONTEXT_MARKER) or len(line) <= len(_CONTEXT_MARKER) + 1:
        return None
    label = line[: -len(_CONTEXT_MARKER)].strip()
    for sentinel in (_CONVERSATION, _SENDER):
        if label == sentinel.partition(" (")[0] + ":":
            return sentinel
    return label


def _strip_history(text: str) -> str | None:
    """Given a user text, return it without the chat window the host puts before the message
    to answer (group chats), or None when the window has no such message."""
    if text.startswith(_HISTORY_MARKERS):
        # the marker on a line of its own, as the host writes it; else one inside a line (a
        # channel that flattens lines: "... [id:298] [Current message - respond to this][...")
        at = text.find(f"\n{_CURRENT_MARKER}") + 1 or text.find(_CURRENT_MARKER) + 1
        if not at:
            return None
        text = text[at - 1 :].lstrip("\n")
    if text.startswith(_CURRENT_MARKER):
        text = text[len(_CURRENT_MARKER) :].lstrip()
    return text


def _group_speaker(blocks: Mapping[str, Any]) -> _Speaker | None:
    """Given the parsed metadata blocks, return the sender of a group message (a direct chat has
    one human: no speaker)."""
    conversation = blocks.get(_CONVERSATION)
    sender = blocks.get(_SENDER)
    if not isinstance(conversation, dict) or not (
        conversation.get("is_group_chat") is True or conversation.get("conversation_label")
    ):
        return None
    names: list[str] = []
    if isinstance(sender, dict):
        names.extend(
            value.strip()
            for key in ("name", "label", "username", "e164", "id")
            if isinstance(value := sender.get(key), str) and value.strip()
        )
    if isinstance(conversation.get("sender"), str) and conversation["sender"].strip():
        names.append(conversation["sender"].strip())
    if not names:
        return None
    return _Speaker(names[0], tuple(f"{name}: " for name in dict.fromkeys(names)))


def _strip_envelope(text: str) -> tuple[str, str]:
    """Given a user text, return it without the envelope before the words, and the envelope's
    header ("" when there is none)."""
    match = _ENVELOPE.match(text)
    if match is None:
        return text, ""
    header = match.group(1)
    if _ENVELOPE_TIME.search(header) or header.startswith(
        tuple(f"{channel} " for channel in _ENVELOPE_CHANNELS)
    ):
        return text[match.end() :], header
    return text, ""


# The sender's local time in an envelope or a metadata block: "Sat 2026-02-28 10:42 GMT+8",
# "2026-02-09 09:46 GMT+8", "Wed 2026-02-11 13:53 EST" (formatEnvelopeTimestamp). A bare UTC
# stamp ("2026-03-14T11:35Z") says nothing of the sender's zone and is not taken.
_LOCAL_STAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2})(?::\d{2})?"
    r"(?: ([A-Za-z]{2,5}(?:[+-]\d{1,2}(?::?\d{2})?)?|[+-]\d{2}:?\d{2}))?(?![\w:+-])"
)


def _stamp(text: str) -> LocalStamp | None:
    """Given an envelope header or a metadata timestamp, return the local time it names."""
    match = _LOCAL_STAMP.search(text)
    if match is None:
        return None
    year, month, day, hour, minute = (int(part) for part in match.groups()[:5])
    try:
        local = datetime(year, month, day, hour, minute)
    except ValueError:
        return None
    return LocalStamp(local, match.group(6) or "")


# Assistant messages OpenClaw writes itself (TRANSCRIPT_ONLY_OPENCLAW_ASSISTANT_MODELS): copies
# of delivered text and the gateway's own notices ("Agent failed before reply: ...").
_HOST_ASSISTANT_MODELS: Final = frozenset({"delivery-mirror", "gateway-injected"})
_DELIVERY_MIRROR_KINDS: Final = frozenset(
    {
        "channel-final",
        "channel-final-suppressed",
        "message-tool-source-reply",
        "cron-direct-delivery-context",
    }
)


def is_host_assistant(body: Mapping[str, Any]) -> bool:
    """Given an assistant message, return whether the host wrote it rather than the model."""
    if body.get("provider") == "openclaw" and body.get("model") in _HOST_ASSISTANT_MODELS:
        return True
    mirror = body.get("openclawDeliveryMirror")
    return isinstance(mirror, dict) and mirror.get("kind") in _DELIVERY_MIRROR_KINDS


# --------------------------------------------------------------------------------------------
# Where an install keeps the transcripts of a workspace.
# --------------------------------------------------------------------------------------------
