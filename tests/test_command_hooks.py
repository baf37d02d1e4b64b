"""Tests of assembler/hosts/command_hooks.py: which command hooks are the one setup prints for
a host and a workspace, and that taking them out leaves every other entry as it was."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from assembler.hosts.command_hooks import hook_commands, strip_our_hooks

ASSEMBLE = "/opt/scratchpad/bin/assemble"


def _hook(host: str, workspace: Path, *extra: str) -> dict[str, Any]:
    words = [ASSEMBLE, "hook", host, "--workspace", str(workspace), *extra]
    return {"type": "command", "command": shlex.join(words)}


def test_only_the_hook_of_this_host_and_workspace_goes_and_emptied_groups_and_events_go_too(
    tmp_path: Path,
) -> None:
    workspace, other = tmp_path / "ws", tmp_path / "other"
    mine = {"type": "command", "command": "notify-send prompt"}
    kept = [
        _hook("codex", workspace),  # another host's
        _hook("claude-code", other),  # another workspace's
        _hook("claude-code", workspace, "--verbose"),  # more than setup prints
        {"type": "command", "command": f"'{ASSEMBLE} hook claude-code"},  # no shell words
        mine,
    ]
    hooks = {
        "SessionStart": [{"matcher": "clear|compact", "hooks": [_hook("claude-code", workspace)]}],
        "UserPromptSubmit": [{"hooks": [_hook("claude-code", workspace), *kept]}],
        "Stop": [{"hooks": [mine]}],
    }

    strip_our_hooks(hooks, "claude-code", workspace)

    assert hooks == {"UserPromptSubmit": [{"hooks": kept}], "Stop": [{"hooks": [mine]}]}


def test_entries_not_in_the_hooks_shape_stay_as_they_were(tmp_path: Path) -> None:
    hooks: dict[str, Any] = {
        "Notification": "not a list",
        "Stop": [{}, [], {"hooks": "not a list"}, {"matcher": "x"}],
    }
    before = json.loads(json.dumps(hooks))

    strip_our_hooks(hooks, "codex", tmp_path)

    assert hooks == before


def test_a_workspace_named_through_a_link_is_this_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    link = tmp_path / "link"
    link.symlink_to(workspace)
    hooks = {"UserPromptSubmit": [{"hooks": [_hook("codex", link)]}]}

    strip_our_hooks(hooks, "codex", workspace)

    assert hooks == {}


def test_the_command_lines_are_those_of_command_hooks_in_the_shape() -> None:
    hooks = {
        "A": [{"hooks": [{"command": "one"}, {"command": 2}, "three"]}, "group"],
        "B": [{"matcher": "m", "hooks": [{"type": "command", "command": "four"}]}],
        "C": {"hooks": [{"command": "not in a list of groups"}]},
    }

    assert list(hook_commands(hooks)) == ["one", "four"]
    assert list(hook_commands(["not", "a", "mapping"])) == []
