"""Tests of assembler/hosts/codex/host_text.py: for every release of Codex the reader reads, a
rollout in that release's shape whose user messages hold each text the release's code writes
in the human's place (alone, and beside the human's words in another content item) yields the
human's words and none of the host's, read through the project's Codex reader."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assembler.hosts.codex.host_text import (
    CATALOGUE,
    OLDEST,
    PROVENANCE_SINCE,
    VERSIONS,
    HostText,
    Release,
    environment_sample,
    version_key,
    written_in,
)
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import read_recent

BEGAN = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
NOW = BEGAN + timedelta(hours=1)
SESSION = "01a2c0de-0000-7000-8000-00000000c0de"


def _line(kind: str, payload: dict[str, Any], second: int) -> str:
    stamp = (BEGAN + timedelta(seconds=second)).isoformat().replace("+00:00", "Z")
    return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"


def _user(items: list[str], origins: list[str] | None = None) -> dict[str, Any]:
    """A `response_item` user message of these text items; with `origins`, each item's
    provenance as Codex records it since PROVENANCE_SINCE."""
    payload: dict[str, Any] = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text} for text in items],
    }
    if origins is not None:
        payload["internal_chat_message_metadata_passthrough"] = {
            "content_item_metadata": [{"provenance": {"type": origin}} for origin in origins]
        }
    return payload


def _rollout(folder: Path, version: str, messages: list[dict[str, Any]]) -> Path:
    """Write a rollout as `version` of Codex names and shapes it: its `session_meta` first,
    a `turn_context`, then each user message followed by the assistant's reply."""
    path = folder / f"rollout-2026-11-20T09-00-00-{SESSION}.jsonl"
    meta = {
        "id": SESSION,
        "timestamp": BEGAN.isoformat(),
        "cwd": "/home/dev/api",
        "originator": "codex_cli_rs",
        "cli_version": version,
    }
    lines = [
        _line("session_meta", meta, 0),
        _line("turn_context", {"cwd": "/home/dev/api", "model": "gpt-5"}, 0),
    ]
    for number, message in enumerate(messages, start=1):
        lines.append(_line("response_item", message, 2 * number))
        reply = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": f"reply {number}"}],
        }
        lines.append(_line("response_item", reply, 2 * number + 1))
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _said(path: Path) -> list[str]:
    read = read_recent(
        [str(path)], base=path.parent, now=NOW, max_messages=10_000, lookback=None, hosts=HOSTS
    )
    [source] = read.sources
    assert (source.format, source.error, source.bad_lines) == ("codex", None, 0)
    return [message.text for message in read.messages if message.role == "user"]


def _sample(entry: HostText, version: str) -> str:
    """An entry's text as `version` writes it (the environment's fields changed over time)."""
    return environment_sample(version) if entry.kind == "environment_context" else entry.sample


def _host_lines(sample: str) -> list[str]:
    """The lines of a host text that are the host's words: none may come out."""
    return [line.strip() for line in sample.splitlines() if len(line.strip()) > 12]


@pytest.mark.parametrize("release", VERSIONS, ids=[release.version for release in VERSIONS])
def test_no_text_this_release_writes_in_the_humans_place_is_read_as_the_humans_words(
    release: Release, tmp_path: Path
) -> None:
    entries = written_in(release.version)
    assert entries, f"no host text known for {release.version}"
    messages: list[dict[str, Any]] = []
    expected: list[str] = []
    for number, entry in enumerate(entries):
        words = f"human words {number} about the {entry.kind} fix"
        sample = _sample(entry, release.version)
        messages.append(_user([sample]))
        messages.append(_user([sample, words]))
        expected.append(words)
        if entry.words_after is not None:
            messages.append(_user([f"{sample}{words} in the same item"]))
            expected.append(f"{words} in the same item")
        if version_key(release.version) >= version_key(PROVENANCE_SINCE):
            messages.append(_user([sample, f"{words} with provenance"], ["harness", "user"]))
            expected.append(f"{words} with provenance")
    said = _said(_rollout(tmp_path, release.version, messages))

    assert said == expected
    leaked = [
        (entry.kind, line)
        for entry in entries
        for line in _host_lines(_sample(entry, release.version))
        if any(line in text for text in said)
    ]
    assert leaked == []


def test_the_versions_run_from_the_oldest_read_in_order_each_once() -> None:
    versions = [release.version for release in VERSIONS]
    assert versions[0] == OLDEST
    assert versions == sorted(set(versions), key=version_key)
    # Every release between two read ones lies where neither read release saw a change.
    assert VERSIONS[0].read and VERSIONS[-1].read


def test_each_entry_spans_read_releases_and_its_sample_opens_as_it_says() -> None:
    read = {release.version for release in VERSIONS if release.read}
    for entry in CATALOGUE:
        assert entry.sample.lstrip().startswith(entry.opens), entry.kind
        assert entry.last is None or entry.last in read, entry.kind
        assert entry.last is None or version_key(entry.first) <= version_key(entry.last)
        if entry.last is None:  # still written: the newest release writes it
            assert entry in written_in(VERSIONS[-1].version), entry.kind


def test_the_kinds_are_one_each() -> None:
    kinds = [entry.kind for entry in CATALOGUE]
    assert len(kinds) == len(set(kinds))
