"""Tests for assembler/hosts/claude_code/host_text.py: release by release, what Claude Code writes
into a user line in the human's place never comes out of the reader as the human's words, and
the human's words beside it do."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assembler.hosts.claude_code import host_text
from assembler.hosts.claude_code.host_text import VERSIONS, HostText, Release, entries_in
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import read_recent

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
SESSION = "5d0c7a2e-1f4b-4c8e-9a3d-6b2f8e1c4a70"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


class Session:
    """A Claude Code transcript in one version's shape, and the words the human said in it."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.lines: list[dict[str, Any]] = []
        self.said: list[str] = []

    def user(self, content: str | list[dict[str, Any]], **extra: Any) -> None:
        index = len(self.lines)
        at = NOW - timedelta(minutes=500 - index)
        self.lines.append(
            {
                "parentUuid": self.lines[-1]["uuid"] if self.lines else None,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/u/src/api",
                "sessionId": SESSION,
                "version": self.version,
                "gitBranch": "main",
                "type": "user",
                "message": {"role": "user", "content": content},
                "uuid": f"u{index}",
                "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                **extra,
            }
        )

    def human(self, words: str) -> None:
        self.user(words)
        self.said.append(words)

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(json.dumps(line) for line in self.lines) + "\n", "utf-8")
        return path


def _name(n: int) -> str:
    """A word of its own for each n: the reader folds numbers, so words made of them repeat."""
    letters = ""
    while True:
        n, digit = divmod(n, 26)
        letters = "abcdefghijklmnopqrstuvwxyz"[digit] + letters
        if n == 0:
            return "q" + letters


def _text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def _has(version: str, kind: str, text: str) -> bool:
    return any(e.kind == kind and e.text == text for e in entries_in(version))


def _host_line(session: Session, entry: HostText, version: str, n: int) -> None:
    """Write the entry as the host writes it: alone (as a string and as blocks), and, where the
    host puts it beside the human's words, with them."""
    words = f"human words {_name(n)} about the upload retry"
    if entry.kind == "field":
        if entry.text == "toolUseResult":
            result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": entry.sample}
            session.user([result], toolUseResult={"stdout": entry.sample})
        elif entry.text == "isCompactSummary":
            extra: dict[str, Any] = {"isCompactSummary": True}
            if _has(version, "field", "isVisibleInTranscriptOnly"):
                extra["isVisibleInTranscriptOnly"] = True
            session.user(entry.sample, **extra)
        else:
            session.user(entry.sample, **{entry.text: True})
            session.user(_text(entry.sample), **{entry.text: True})
        return
    if entry.kind == "origin":
        sample = f"text the host sent for {entry.text}"
        session.user(sample, origin={"kind": entry.text})
        return
    if entry.kind == "speaker":
        line = entry.sample.format(words=words)
        if _has(version, "origin", "channel"):
            # From the versions with channel origins, the host writes them as meta lines.
            session.user(line, isMeta=True, origin={"kind": "channel", "server": "telegram"})
        else:
            session.user(line)
            session.said.append(words)
        return
    if "{words}" in entry.sample:  # a command's arguments: what the human typed
        session.user(entry.sample.format(words=words))
        session.said.append(words)
        return
    session.user(entry.sample)
    session.user(_text(entry.sample))
    if entry.beside_words:
        session.user(f"{words}\n\n{entry.sample}")
        session.said.append(words)
        session.user(_text(words) + _text(entry.sample))
        session.said.append(words)


def _entries(release: Release) -> list[HostText]:
    """The entries a release may have: its own, and, when it lies between two read versions
    whose texts differ, those of the later one too."""
    entries = list(entries_in(release.version))
    if release.between is not None and not release.same:
        entries += [e for e in entries_in(release.between[1]) if e not in entries]
    return entries


def _session(release: Release) -> Session:
    version = release.version
    session = Session(version)
    session.human("why does the upload fail on large files?")
    for n, entry in enumerate(_entries(release)):
        _host_line(session, entry, version, n)
        session.human(f"and after the {_name(n)} entry, keep the retry count at three")
    return session


def _read(path: Path) -> list[str]:
    result = read_recent(
        [str(path)],
        base=path.parent,
        now=NOW,
        max_messages=10_000,
        lookback=None,
        max_files=1,
        fmt="claude-code",
        hosts=HOSTS,
    )
    assert all(source.error is None for source in result.sources)
    return [m.text for m in result.messages if m.role == "user"]


@pytest.mark.parametrize("release", VERSIONS, ids=[release.version for release in VERSIONS])
def test_host_text_of_each_release_is_not_the_humans_words(
    release: Release, tmp_path: Path
) -> None:
    session = _session(release)
    assert len(session.lines) > len(_entries(release)) > 0

    said = _read(session.write(tmp_path / f"{SESSION}.jsonl"))

    assert said == session.said
    # Nothing of the host's markup is left on the human's words.
    assert not [text for text in said if "<" in text or "Caveat:" in text or "[Request" in text]


def test_the_reader_takes_its_tags_and_prefixes_from_the_catalogue() -> None:
    from assembler.hosts.claude_code import turns

    for entry in host_text.ENTRIES:
        if entry.kind == "block":
            assert turns._ADDED_BLOCK.search(f"<{entry.text}>x</{entry.text}>"), entry.text
        if entry.kind == "host-turn":
            assert turns._HOST_TAG.match(entry.sample), entry.text
        if entry.kind == "prefix":
            assert turns._WRAPPER.match(entry.sample), entry.text
    assert turns._SESSION_COMMANDS is host_text.SESSION_COMMANDS


def test_versions_run_without_gaps_from_the_oldest_accepted_to_the_newest_read() -> None:
    versions = [release.version for release in VERSIONS]
    read = [release.version for release in VERSIONS if release.read]

    assert versions[0] == "1.0.0" and versions[-1] == read[-1]
    assert versions == sorted(versions, key=_key) and len(set(versions)) == len(versions)
    for release in VERSIONS:
        if not release.read:
            assert release.between is not None
            low, high = release.between
            assert low in read and high in read
            assert _key(low) < _key(release.version) < _key(high)
    for entry in host_text.ENTRIES:
        assert entry.first in read and entry.last in read, entry.text


def test_each_entrys_sample_is_found_by_its_needle_shape() -> None:
    # The samples are what the host writes; the tag of a tagged entry opens its sample.
    for entry in host_text.ENTRIES:
        if entry.kind in ("block", "record", "host-turn", "speaker"):
            assert entry.sample.lstrip().startswith(f"<{entry.text}") or (
                f"<{entry.text}>" in entry.sample
            ), entry.text
