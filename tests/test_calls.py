"""Tests for assembler/calls.py: the answers, and the mistakes agents make in tool calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assembler.pad.journal import (
    Journal,
)
from assembler.pad.sections import Scratchpad
from assembler.pad.tool_calls import Answer


def test_an_answer_serialises_to_json_with_ok_message_and_data() -> None:
    answer = Answer(False, "nope — ✗", {"mistake": "x"})

    assert json.loads(answer.to_json()) == {
        "ok": False,
        "message": "nope — ✗",
        "data": {"mistake": "x"},
    }


MISTAKES = [
    (
        {"action": "write", "section": "findings"},
        "missing-content",
        "Missing `content`: write needs the text to save. Use "
        '{"action": "write", "section": "findings", "content": "your text"}',
    ),
    (
        {"action": "append"},
        "missing-content",
        'Missing `content`: append needs the text to save. Use {"action": "append", "content": '
        '"your text"}',
    ),
    (
        {"op": "write", "content": "Port is 8080"},
        "action-alias",
        "The parameter is called `action`, not `op`: "
        '{"action": "write", "content": "Port is 8080"}',
    ),
    (
        {"op": "read", "section": "findings"},
        "action-alias",
        'The parameter is called `action`, not `op`: {"action": "read", "section": "findings"}',
    ),
    (
        {"action": "The config file is at /etc/app/config.yml"},
        "action-is-text",
        "Passing text as the action value is wrong. Use "
        '{"action": "write", "content": "The config file is at /etc/app/config.yml"}',
    ),
    (
        {"action": "write", "section": "The port is 8080"},
        "section-is-text",
        "`section` is the category name (goal, findings, artifacts, errors, main, or a short "
        'custom name like "api-notes"), `content` is the text. It looks like you put text in '
        '`section`; use {"action": "write", "section": "findings", "content": "The port is 8080"}',
    ),
    (
        {"action": "write", "content": "x", "priority": "high"},
        "unknown-key",
        "Unknown parameter `priority`: the call takes only `action`, `section` and `content`, "
        'e.g. {"action": "write", "section": "findings", "content": "your text"}',
    ),
    (
        {"action": "append", "section": "findings", "text": "Port is 8080"},
        "content-alias",
        'The text goes in `content`, not `text`: {"action": "append", "section": "findings", '
        '"content": "Port is 8080"}',
    ),
    (
        {"action": "write", "content": 8080},
        "content-type",
        "`content` must be a string (the text to save), got number. Use "
        '{"action": "write", "content": "your text"}',
    ),
    (
        {"action": "write", "content": ["a", "b"]},
        "content-type",
        "`content` must be a string (the text to save), got array (turn it into text first, "
        'e.g. one item per line). Use {"action": "write", "content": "your text"}',
    ),
    (
        {"action": "frobnicate"},
        "unknown-action",
        "Unknown action 'frobnicate': use one of write, append, read, clear, e.g. "
        '{"action": "write", "section": "findings", "content": "your text"}',
    ),
    (
        {"action": "save", "content": "x"},
        "action-synonym",
        "Unknown action 'save': use 'write' to overwrite a section: "
        '{"action": "write", "content": "x"}',
    ),
    (
        {"action": "Write", "content": "x"},
        "action-case",
        'Unknown action \'Write\': actions are lowercase. Use {"action": "write", "content": "x"}',
    ),
    (
        {"action": "read", "section": "Findings"},
        "section-case",
        'Section names are lowercase: use {"action": "read", "section": "findings"}',
    ),
    (
        {"action": "read", "section": 3},
        "section-type",
        '`section` must be a string naming the category, e.g. "findings"; got number.',
    ),
    (
        {"action": "read", "section": "findings", "content": "x"},
        "content-not-allowed",
        "`content` is only for write and append; read takes none. Use "
        '{"action": "read", "section": "findings"}',
    ),
    (
        {"content": "x"},
        "missing-action",
        "Missing `action`: say what to do, one of write, append, read, clear. Use "
        '{"action": "write", "content": "x"}',
    ),
    (
        ["write", "x"],
        "not-an-object",
        'The call must be a JSON object, e.g. {"action": "write", "section": "findings", '
        '"content": "your text"}',
    ),
]


@pytest.mark.parametrize(("args", "mistake", "message"), MISTAKES, ids=[m[1] for m in MISTAKES])
def test_each_tool_call_mistake_names_the_mistake_shows_the_right_call_and_changes_nothing(
    pad: Scratchpad, journal: Journal, args: Any, mistake: str, message: str
) -> None:
    pad.write("keep me", section="findings")
    before = journal.path.read_bytes()

    answer = pad.tool_call(args)

    assert not answer.ok
    assert answer.data["mistake"] == mistake
    assert answer.message == message
    assert journal.path.read_bytes() == before
