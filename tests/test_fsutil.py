from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from assembler.fsutil import atomic_write


def test_atomic_write_replaces_the_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "SCRATCHPAD.md"
    target.write_text("old")
    os.chmod(target, 0o600)
    atomic_write(target, "new ü")
    assert target.read_text(encoding="utf-8") == "new ü"
    assert os.stat(target).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SCRATCHPAD.md"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "SCRATCHPAD.md"
    target.write_text("old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SCRATCHPAD.md"]


def _writer(path: str, rounds: int) -> None:
    for i in range(rounds):
        marker = "A" if i % 2 else "B"
        atomic_write(Path(path), f"start\n{marker * 200_000}\nend\n")


def test_a_concurrent_reader_never_sees_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "SCRATCHPAD.md"
    atomic_write(target, f"start\n{'A' * 200_000}\nend\n")
    writer = multiprocessing.get_context("spawn").Process(target=_writer, args=(str(target), 150))
    writer.start()
    seen = 0
    try:
        while writer.is_alive() or seen == 0:
            text = target.read_text()
            seen += 1
            assert text.startswith("start\n") and text.endswith("\nend\n")
            assert len(text) == len("start\n") + 200_000 + len("\nend\n")
            assert len(set(text[6:-5])) == 1  # one writer's content, never a mix
    finally:
        writer.join(timeout=60)
    assert writer.exitcode == 0
    assert seen > 1
