"""Codex's custom prompts: a message that is a `/prompts:<name>` expansion is the human's
arguments (or the command), not the prompt file's text. The prompts and rollouts here are ours,
in the shapes Codex writes (`$CODEX_HOME/prompts/<name>.md`, `sessions/YYYY/MM/DD/`)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assembler.hosts.codex import prompts
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import read_recent

NOW = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)

CLARIFY = """---
description: Ask up to five questions that narrow the feature spec
argument-hint: [focus]
---

## User input

```text
$ARGUMENTS
```

Consider the user input before you go on (if it is not empty).

1. Read the spec of the current feature and list what it leaves open.
2. Ask at most five questions, one at a time, each with its options.
3. Write each answer back into the spec's Clarifications section.
"""

ACTIVATE = """---
description: The dev agent
---

You must take on the dev agent's persona and follow its activation steps exactly as written.

1. Load the agent file from agents/dev.md.
2. Show its menu and wait for the human's pick.
"""

REVIEW = """Review $FILE with a focus on $FOCUS and list each finding with its line number.
Keep the review to the changes on this branch; $$ stays as it is."""


def _home(tmp_path: Path, **files: str) -> Path:
    home = tmp_path / "codex-home"
    folder = home / "prompts"
    folder.mkdir(parents=True)
    for name, body in files.items():
        (folder / f"{name}.md").write_text(body, encoding="utf-8")
    return home


def _rollout(home: Path, *said: str, folder: str = "sessions/2026/11/20") -> Path:
    path = home / folder / "rollout-2026-11-20T09-00-00-5a1e.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, object]] = [
        {
            "timestamp": "2026-11-20T09:00:00Z",
            "type": "session_meta",
            "payload": {"id": "5a1e", "cwd": "/home/dev/shop"},
        },
        {
            "timestamp": "2026-11-20T09:00:00Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n"
                        "</environment_context>",
                    }
                ],
            },
        },
    ]
    for minute, text in enumerate(said, start=1):
        lines.append(
            {
                "timestamp": f"2026-11-20T09:{minute:02d}:00Z",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _said(path: Path) -> list[str]:
    read = read_recent(
        [str(path)], base=path.parent, now=NOW, max_messages=50, lookback=None, hosts=HOSTS
    )
    return [m.text for m in read.messages if m.role == "user"]


def _expanded(body: str, **values: str) -> str:
    """The body as Codex sends it: frontmatter left out, the placeholders replaced."""
    text = prompts._FRONTMATTER.sub("", body, count=1)
    for key, value in values.items():
        text = text.replace(f"${key}", value)
    return text


def test_an_expansion_is_the_humans_arguments_and_the_rest_is_as_typed(tmp_path: Path) -> None:
    home = _home(tmp_path, **{"speckit.clarify": CLARIFY})
    rollout = _rollout(
        home,
        _expanded(CLARIFY, ARGUMENTS="scope P1 and P2 only, sign-off by PO and QA"),
        "why does checkout still time out on the second try?",
    )

    assert _said(rollout) == [
        "scope P1 and P2 only, sign-off by PO and QA",
        "why does checkout still time out on the second try?",
    ]


def test_an_expansion_without_arguments_is_the_command(tmp_path: Path) -> None:
    home = _home(tmp_path, **{"agent-dev": ACTIVATE, "speckit.clarify": CLARIFY})
    rollout = _rollout(home, _expanded(ACTIVATE), _expanded(CLARIFY, ARGUMENTS=""))

    assert _said(rollout) == ["/prompts:agent-dev", "/prompts:speckit.clarify"]


def test_named_arguments_are_the_humans_and_a_literal_dollar_pair_stays(tmp_path: Path) -> None:
    home = _home(tmp_path, review=REVIEW)
    rollout = _rollout(home, _expanded(REVIEW, FILE="src/cart.py", FOCUS="the retry loop"))

    assert _said(rollout) == ["src/cart.py the retry loop"]


def test_an_archived_rollout_finds_its_homes_prompts(tmp_path: Path) -> None:
    home = _home(tmp_path, **{"agent-dev": ACTIVATE})
    rollout = _rollout(home, _expanded(ACTIVATE), folder="archived_sessions")

    assert _said(rollout) == ["/prompts:agent-dev"]


@pytest.mark.parametrize(
    "typed",
    [
        # the prompt's text, edited by the human: theirs, all of it
        _expanded(ACTIVATE).replace("exactly as written", "loosely"),
        # the prompt's text with words of the human's before it
        "first this: " + _expanded(ACTIVATE),
        "load the dev agent and show its menu",
    ],
)
def test_a_message_that_is_not_wholly_an_expansion_is_kept_whole(
    tmp_path: Path, typed: str
) -> None:
    home = _home(tmp_path, **{"agent-dev": ACTIVATE})
    assert _said(_rollout(home, typed)) == [typed.strip()]


def test_a_prompt_with_too_little_text_of_its_own_matches_nothing(tmp_path: Path) -> None:
    home = _home(tmp_path, bare="$ARGUMENTS", short="Do: $1")
    assert prompts.prompts_for(str(_rollout(home, "x"))) == ()
    assert _said(_rollout(home, "Do: deploy the shop")) == ["Do: deploy the shop"]


def test_unreadable_oversized_and_non_prompt_files_are_skipped_and_the_rest_read(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path, **{"agent-dev": ACTIVATE})
    folder = home / "prompts"
    (folder / "broken.md").write_bytes(b"\xff\xfe not text " * 10)
    (folder / "huge.md").write_text("x" * (prompts.MAX_PROMPT_BYTES + 1), encoding="utf-8")
    (folder / "notes.txt").write_text(ACTIVATE, encoding="utf-8")
    (folder / "nested").mkdir()
    (folder / "nested" / "inner.md").write_text(CLARIFY, encoding="utf-8")
    os.symlink(folder / "nested", folder / "linked.md")

    found = prompts.prompts_for(str(_rollout(home, "x")))

    assert [p.name for p in found] == ["agent-dev"]


def test_a_rollout_outside_a_codex_home_reads_no_prompts(tmp_path: Path) -> None:
    loose = tmp_path / "rollout-2026-11-20T09-00-00-5a1e.jsonl"
    assert prompts.codex_home_of(str(loose)) is None
    assert prompts.prompts_for(str(loose)) == ()


def test_a_changed_prompt_file_is_read_again(tmp_path: Path) -> None:
    home = _home(tmp_path, **{"agent-dev": ACTIVATE})
    rollout = _rollout(home, _expanded(CLARIFY, ARGUMENTS="only P1"))
    assert _said(rollout) == [_expanded(CLARIFY, ARGUMENTS="only P1").strip()]

    (home / "prompts" / "speckit.clarify.md").write_text(CLARIFY, encoding="utf-8")

    assert _said(rollout) == ["only P1"]
