"""Shared fixtures. Every test runs with HOME and the XDG folders in its own tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pads import Clock, make_workspace

from assembler.pad.journal import Journal
from assembler.pad.sections import Scratchpad


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point every path the program derives from the environment at a fresh folder."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(home / name.lower()))
    for name in (
        "ASSEMBLER_CONFIG",
        "ASSEMBLER_WORKSPACE",
        "ASSEMBLER_CONFIG_HOME",
        "ASSEMBLER_STATE_HOME",
    ):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


# -- The agent hosts' real programs, for the end-to-end tests ----------------------------------


@pytest.fixture(scope="session")
def hosts() -> Any:
    """The installed hosts (`e2e.hosts.Hosts`). Session scope, so that it resolves the cache
    folder before the autouse `isolated_home` fixture moves HOME: every run shares one install.
    Skips, saying why, where they cannot be installed (no npm)."""
    from e2e.hosts import HostsUnavailable, default_cache_dir, ensure_hosts

    try:
        return ensure_hosts(default_cache_dir())
    except HostsUnavailable as reason:
        pytest.skip(f"agent hosts unavailable: {reason}")


@pytest.fixture
def model(tmp_path: Path) -> Iterator[Any]:
    """A mock model server (`e2e.mock_model.MockModel`) logging to the test's folder."""
    from e2e.mock_model import MockModel

    with MockModel(tmp_path / "model-requests.jsonl") as server:
        yield server


# -- The agent sections: a clock moved by hand, a journal, a scratchpad, a workspace ----------


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def journal(tmp_path: Path, clock: Clock) -> Journal:
    return Journal(tmp_path / ".scratchpad" / "sections.jsonl", now=clock)


@pytest.fixture
def pad(journal: Journal) -> Scratchpad:
    return Scratchpad(journal)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")
