"""What every host of the registry (assembler/hosts/registry.py) must do, each host's session
written the way that host writes it (tests/fixtures/harness.py, with the host's adapter in
tests/fixtures/<host>/adapter.py) and read back as the program reads it: the human's and the
assistant's turns come back with their roles and words, what the host wrote in the human's
place does not, a bad line is counted and skipped, and the hook, where the host has one, adds
the ready block before the prompt. What is particular to a host is tested in its own module
(test_openclaw.py, test_claude_code.py, test_codex.py, test_generic.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.harness import (
    ASSISTANT,
    HUMAN,
    adapter,
    hook_hosts,
    read_session,
    reading_hosts,
    run_hook,
    write_session,
)
from fixtures.transcript_lines import no_host_settings  # noqa: F401 (autouse)

from assembler.hosts.registry import plugin


@pytest.mark.parametrize("host", reading_hosts())
def test_the_humans_and_the_assistants_turns_come_back_with_their_roles_and_words(
    host: str, workspace: Path, isolated_home: Path
) -> None:
    session = write_session(host, workspace, isolated_home)

    read = read_session(session)

    assert [(m.role, m.text) for m in read.messages] == [("user", HUMAN), ("assistant", ASSISTANT)]


@pytest.mark.parametrize("host", reading_hosts())
def test_the_turn_the_host_wrote_in_the_humans_place_is_not_the_humans_words(
    host: str, workspace: Path, isolated_home: Path
) -> None:
    session = write_session(host, workspace, isolated_home)
    host_text = adapter(host).host_text

    read = read_session(session)

    written = session.path.read_text(encoding="utf-8").splitlines()
    assert session.host_lines and all(json.dumps(line) in written for line in session.host_lines)
    assert [m.text for m in read.messages if m.role == "user"] == [HUMAN]
    assert not any(host_text[:40] in m.text for m in read.messages)


@pytest.mark.parametrize("host", reading_hosts())
def test_a_bad_line_is_skipped_and_counted_and_the_rest_is_read(
    host: str, workspace: Path, isolated_home: Path
) -> None:
    session = write_session(host, workspace, isolated_home)

    read = read_session(session)

    [source] = read.sources
    assert (source.error, source.bad_lines, source.messages) == (None, 1, 2)


@pytest.mark.parametrize("host", reading_hosts())
def test_the_session_is_found_where_the_host_keeps_it_and_read_in_its_format(
    host: str, workspace: Path, isolated_home: Path
) -> None:
    session = write_session(host, workspace, isolated_home)

    read = read_session(session)

    [source] = read.sources
    assert source.path == str(session.path)
    assert source.format in plugin(host).load("host").HOST.formats
    assert {m.source for m in read.messages} == {str(session.path)}


def test_every_host_that_reads_sessions_is_tested_here_and_the_hook_hosts_among_them() -> None:
    hosts = reading_hosts()

    assert {"openclaw", "claude-code", "codex", "generic"} <= set(hosts)
    assert "mcp" not in hosts  # it reads no sessions
    assert set(hook_hosts()) == {"claude-code", "codex"}


@pytest.mark.parametrize("host", hook_hosts())
def test_the_hook_adds_the_ready_block_before_the_prompt(
    host: str, workspace: Path, isolated_home: Path
) -> None:
    session = write_session(host, workspace, isolated_home)

    sent, ready = run_hook(session)

    assert sent == ready
    assert ready.startswith("[Session Scratchpad - your persistent working memory]\n")
    assert "nightly export" in ready  # the assembly read the session the host wrote
