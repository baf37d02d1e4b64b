"""Agents' calls of the scratchpad tools: the Answer every call gets, and the checks that turn
a mistaken call into an answer that names the mistake and shows the right call.

Two tools: the sectioned scratchpad tool, `{"action", "section"?, "content"?}`, and the
whole-notepad tool, `{"content", "mode"?}` on section main. Agents get them wrong in a few
common ways (missing `content`, `op` instead of `action`, text as the action, text in
`section`, unknown keys, wrong types); each is answered with `ok=False`, a message naming the
mistake and the right call, and `data["mistake"]`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from assembler.section_names import NAME_RULE, is_valid_section_name
from assembler.tokens import clip

TOOL_ACTIONS: Final = ("write", "append", "read", "clear")


@dataclass
class Answer:
    """The result of a scratchpad call: whether it was done, what to tell the caller, details."""

    ok: bool
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """Return the answer as a JSON object with `ok`, `message` and `data`."""
        return json.dumps(
            {"ok": self.ok, "message": self.message, "data": self.data}, ensure_ascii=False
        )


_TOOL_KEYS: Final = ("action", "section", "content")


_ACTION_ALIASES: Final = ("op", "operation", "cmd", "command", "method", "mode", "type", "verb")


_CONTENT_ALIASES: Final = tuple("text value note notes message data body contents entry".split())


_SECTION_ALIASES: Final = ("name", "category", "key", "title", "sections", "section_name")


# Words agents use for an action; the answer names the action they meant.
_ACTION_SYNONYMS: Final = {
    **dict.fromkeys("save set replace overwrite update put store".split(), "write"),
    **dict.fromkeys("add insert push".split(), "append"),
    **dict.fromkeys("get show list view load".split(), "read"),
    **dict.fromkeys("delete remove reset erase wipe".split(), "clear"),
}


_ACTION_PURPOSE: Final = {
    "write": "overwrite a section",
    "append": "add to a section",
    "read": "read sections",
    "clear": "erase sections",
}


_SESSION_KEYS: Final = ("content", "mode")


def _looks_like_text(value: str) -> bool:
    """Whether a value reads as prose rather than a keyword: spaces, length or punctuation."""
    return (
        any(ch.isspace() for ch in value)
        or len(value) > 24
        or any(not (ch.isalnum() or ch in "_-") for ch in value)
    )


def example_call(action: str, section: str | None = None, content: str | None = None) -> str:
    """Given an action and maybe a section and a text, return the sectioned tool's call as
    JSON, for messages that show the right call."""
    call: dict[str, str] = {"action": action}
    if section is not None:
        call["section"] = section
    if content is not None:
        call["content"] = content
    return json.dumps(call, ensure_ascii=False)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _json_value(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _session_call_text(content: object, mode: object) -> str:
    """Given what a whole-notepad call had, return the right call, keeping its text and mode."""
    text = clip(content) if isinstance(content, str) and content else "## Plan\n1. ..."
    right = mode if mode in ("replace", "append") else "replace"
    return json.dumps({"content": text, "mode": right}, ensure_ascii=False)


def mistake(kind: str, message: str) -> Answer:
    """Given the kind of a mistake and the message for it, return the refusing Answer."""
    return Answer(False, message, {"mistake": kind})


def parse_call(text: str) -> Answer:
    """Given the text of a JSON tool call, return an Answer whose `data["call"]` is the object,
    or the mistake (not JSON, not an object) with the right form.
    """
    try:
        value = json.loads(text)
    except ValueError as error:
        return mistake(
            "not-json",
            f"The call is not valid JSON ({error}); give one object, e.g. "
            f"{example_call('write', 'findings', 'your text')}",
        )
    if not isinstance(value, dict):
        return mistake(
            "not-an-object",
            "The call must be a JSON object, e.g. "
            f"{example_call('write', 'findings', 'your text')}",
        )
    return Answer(True, "", {"call": value})


def check_tool_call(args: object) -> Answer | tuple[str, str | None, str | None]:
    """Given a call of the sectioned tool, return (action, section, content), or the Answer
    for a mistake."""
    if not isinstance(args, Mapping):
        return mistake(
            "not-an-object",
            "The call must be a JSON object, e.g. "
            f"{example_call('write', 'findings', 'your text')}",
        )
    content_given = args.get("content")
    preview = clip(content_given) if isinstance(content_given, str) else "your text"

    if "action" not in args:
        alias = next((k for k in args if isinstance(k, str) and k.lower() in _ACTION_ALIASES), None)
        if alias is not None:
            value = args[alias]
            action = value if value in TOOL_ACTIONS else "write"
            section = args.get("section") if is_valid_section_name(args.get("section")) else None
            content = preview if action in ("write", "append") else None
            return mistake(
                "action-alias",
                f"The parameter is called `action`, not `{alias}`: "
                f"{example_call(action, section, content)}",
            )
        return mistake(
            "missing-action",
            "Missing `action`: say what to do, one of write, append, read, clear. Use "
            f"{example_call('write', None, preview)}",
        )

    unknown = [k for k in args if k not in _TOOL_KEYS]
    if unknown:
        key = unknown[0]
        lowered = key.lower() if isinstance(key, str) else ""
        action = args["action"] if args["action"] in TOOL_ACTIONS else "write"
        if lowered in _CONTENT_ALIASES:
            value = args[key]
            text = clip(value) if isinstance(value, str) else "your text"
            section = args.get("section") if is_valid_section_name(args.get("section")) else None
            if action not in ("write", "append"):
                action = "write"
            return mistake(
                "content-alias",
                f"The text goes in `content`, not `{key}`: {example_call(action, section, text)}",
            )
        if lowered in _SECTION_ALIASES:
            value = args[key]
            name = value if is_valid_section_name(value) else "findings"
            content = preview if action in ("write", "append") else None
            return mistake(
                "section-alias",
                f"The section name goes in `section`, not `{key}`: "
                f"{example_call(action, name, content)}",
            )
        names = ", ".join(f"`{k}`" for k in unknown)
        plural = "s" if len(unknown) != 1 else ""
        return mistake(
            "unknown-key",
            f"Unknown parameter{plural} {names}: the call takes only `action`, `section` and "
            f"`content`, e.g. {example_call('write', 'findings', 'your text')}",
        )

    action = args["action"]
    if not isinstance(action, str):
        return mistake(
            "action-type",
            f"`action` must be a string, one of write, append, read, clear; got "
            f"{_json_type(action)}. Use {example_call('write', None, preview)}",
        )
    if action not in TOOL_ACTIONS:
        word = action.strip().lower()
        if word in TOOL_ACTIONS:
            return mistake(
                "action-case",
                f"Unknown action {action!r}: actions are lowercase. Use "
                f"{example_call(word, None, preview if word in ('write', 'append') else None)}",
            )
        if word in _ACTION_SYNONYMS:
            meant = _ACTION_SYNONYMS[word]
            content = preview if meant in ("write", "append") else None
            return mistake(
                "action-synonym",
                f"Unknown action {action!r}: use '{meant}' to {_ACTION_PURPOSE[meant]}: "
                f"{example_call(meant, None, content)}",
            )
        if _looks_like_text(action):
            return mistake(
                "action-is-text",
                "Passing text as the action value is wrong. Use "
                f"{example_call('write', None, clip(action))}",
            )
        return mistake(
            "unknown-action",
            f"Unknown action {action!r}: use one of write, append, read, clear, e.g. "
            f"{example_call('write', 'findings', 'your text')}",
        )

    section = args.get("section")
    if section is not None:
        if not isinstance(section, str):
            return mistake(
                "section-type",
                f'`section` must be a string naming the category, e.g. "findings"; got '
                f"{_json_type(section)}.",
            )
        if not is_valid_section_name(section):
            lowered = section.strip().lower()
            content = preview if action in ("write", "append") else None
            if is_valid_section_name(lowered):
                return mistake(
                    "section-case",
                    f"Section names are lowercase: use {example_call(action, lowered, content)}",
                )
            if _looks_like_text(section):
                text = content_given if isinstance(content_given, str) else section
                right = example_call(
                    action,
                    "findings",
                    clip(text) if action in ("write", "append") else None,
                )
                return mistake(
                    "section-is-text",
                    "`section` is the category name (goal, findings, artifacts, errors, main, "
                    'or a short custom name like "api-notes"), `content` is the text. It '
                    f"looks like you put text in `section`; use {right}",
                )
            return mistake(
                "section-name",
                f"Section name {section!r} is not valid: {NAME_RULE}. Use "
                f"{example_call(action, 'findings', content)}",
            )

    content = args.get("content")
    if action in ("write", "append"):
        if content is None:
            return mistake(
                "missing-content",
                f"Missing `content`: {action} needs the text to save. Use "
                f"{example_call(action, section, 'your text')}",
            )
        if not isinstance(content, str):
            hint = (
                " (turn it into text first, e.g. one item per line)"
                if isinstance(content, list | tuple | Mapping)
                else ""
            )
            return mistake(
                "content-type",
                f"`content` must be a string (the text to save), got {_json_type(content)}"
                f"{hint}. Use {example_call(action, section, 'your text')}",
            )
    elif content not in (None, ""):
        return mistake(
            "content-not-allowed",
            f"`content` is only for write and append; {action} takes none. Use "
            f"{example_call(action, section)}",
        )
    return action, section, content if isinstance(content, str) else None


def check_session_args(content: object, mode: object) -> Answer | None:
    """Given the whole-notepad tool's `content` and `mode`, return the Answer for a mistake in
    them, or None when the call is right."""
    if mode not in ("replace", "append"):
        word = mode.strip().lower() if isinstance(mode, str) else ""
        meant = _ACTION_SYNONYMS.get(word, word)
        right = "append" if meant == "append" else "replace"
        return mistake(
            "mode",
            f"`mode` must be 'replace' (overwrite the scratchpad) or 'append' (add to it), "
            f"got {_json_value(mode)}. Use {_session_call_text(content, right)}",
        )
    if not isinstance(content, str):
        return mistake(
            "content-type",
            f"`content` must be a string (the text to save), got {_json_type(content)}.",
        )
    return None


def check_session_call(args: Mapping[str, Any]) -> Answer | None:
    """Given the whole-notepad tool's call as a JSON object `{"content", "mode"?}`, return the
    Answer for a missing `content` (naming the keys the call has instead, the text put in
    `text`, say) or a key the call does not take, with the right call; None otherwise."""
    extra = [k for k in args if k not in _SESSION_KEYS]
    if "content" not in args:
        alias = next(
            (k for k in extra if isinstance(k, str) and k.lower() in _CONTENT_ALIASES), None
        )
        text = args[alias] if alias is not None else None
        seen = ", ".join(f"`{k}`" for k in extra)
        got = f"; the call has {seen} instead" if seen else ""
        return mistake(
            "missing-content",
            f"Missing `content`: the text to save goes in `content`{got}. Use "
            f"{_session_call_text(text, args.get('mode', 'replace'))}",
        )
    if extra:
        names = ", ".join(f"`{k}`" for k in extra)
        plural = "s" if len(extra) != 1 else ""
        return mistake(
            "unknown-key",
            f"Unknown parameter{plural} {names}: the call takes only `content` and `mode`, "
            f"e.g. {_session_call_text(args['content'], args.get('mode', 'replace'))}",
        )
    return None
