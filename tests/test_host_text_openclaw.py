"""Each OpenClaw release in the host-text catalogue: a session of that release holding every text
the host writes into user turns (assembler/hosts/openclaw/host_text.py) is read, and none of it
comes out as the human's words, while the human's words beside it still do."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assembler.hosts.openclaw.host_text import (
    CATALOGUE,
    VERSIONS,
    HostText,
    Release,
    has,
    version_key,
)
from assembler.hosts.registry import HOSTS
from assembler.transcripts.read import read_recent

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _iso(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _session_version(release: Release) -> int:
    # pi's session version 3 until the leaf and side entries of version 4 (2026.7 on).
    return 4 if version_key(release.version) >= (2026, 7) else 3


def _user(index: int, text: str) -> dict[str, Any]:
    # Written a second apart from 11:55 UTC, when the samples' envelopes say 19:55 GMT+8.
    at = NOW - timedelta(minutes=5) + timedelta(seconds=index)
    return {
        "type": "message",
        "id": f"{index:08x}",
        "parentId": f"{index - 1:08x}" if index else None,
        "timestamp": _iso(at),
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "timestamp": int(at.timestamp() * 1000),
        },
    }


def _turns(entries: list[HostText]) -> tuple[list[str], set[str]]:
    """Given entries, return the user texts that hold them, and the human's words among them."""
    turns: list[str] = []
    words: set[str] = set()
    for number, host_text in enumerate(entries):
        said = f"please look at item {number} of the release notes"
        if host_text.kind in ("prompt", "marker", "draft"):
            turns.append(host_text.sample)
        elif host_text.kind == "after":
            turns.append(said + host_text.sample)
            words.add(said)
        elif host_text.kind == "inline":
            turns.extend((host_text.sample, f"{said}\n{host_text.sample}"))
            words.add(said)
        else:  # before and queued: the host's text, alone and before the human's words
            turns.extend((host_text.sample, host_text.sample + said))
            words.add(said)
    return turns, words


def _read_human_words(tmp_path: Path, release: Release, turns: list[str]) -> list[str]:
    header = {
        "type": "session",
        "version": _session_version(release),
        "id": "0f6c2a1e-3b7d-4e8a-9c55-2d1f7e9a4b10",
        "timestamp": _iso(NOW - timedelta(minutes=600)),
        "cwd": "/home/u/.openclaw/workspace",
    }
    path = tmp_path / "agents" / "main" / "sessions" / f"{header['id']}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [header, *(_user(index, text) for index, text in enumerate(turns))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = read_recent(
        [str(path)],
        base=tmp_path,
        now=NOW,
        max_messages=1000,
        lookback=None,
        max_files=1,
        hosts=HOSTS,
    )
    assert result.sources[0].format == "openclaw"
    return [m.text for m in result.messages if m.role == "user"]


@pytest.mark.parametrize("release", VERSIONS, ids=lambda r: f"{r.package}-{r.version}")
def test_no_host_text_of_the_release_is_read_as_the_humans_words(
    tmp_path: Path, release: Release
) -> None:
    entries = [e for e in CATALOGUE if has(e, release.version)]
    assert entries, f"no catalogue entry for {release.version}"
    turns, words = _turns(entries)

    said = _read_human_words(tmp_path, release, turns)

    assert sorted(said) == sorted(words)


def test_the_catalogue_covers_every_release_from_the_oldest_to_the_newest() -> None:
    versions = [release.version for release in VERSIONS]
    assert versions[0] == "2026.1.24" and versions[-1] == "2026.9.6"
    assert len(set(versions)) == len(versions)
    assert all(release.read for release in VERSIONS[:1] + VERSIONS[-1:])


@pytest.mark.parametrize("host_text", CATALOGUE, ids=lambda e: e.name)
def test_each_entry_sample_holds_its_text(host_text: HostText) -> None:
    assert host_text.text in host_text.sample or (host_text.kind == "before" and host_text.pattern)
