from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from assembler import fsutil
from assembler.errors import FileTooLargeError, UnsafePathError, WriteError
from assembler.fsutil import (
    FileLock,
    Replaced,
    allowed_root,
    atomic_write,
    real_dir,
    replace_if_unchanged,
    resolves_within,
)


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


# --- Nothing is written through a link or over something that is not a regular file ----------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_atomic_write_refuses_to_replace_a_link_and_leaves_its_target_alone(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    link = tmp_path / "ws" / "SCRATCHPAD.md"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(UnsafePathError, match=r"SCRATCHPAD.md is a symbolic link, not a regular"):
        atomic_write(link, "new")
    assert outside.read_text() == "precious" and link.is_symlink()
    assert sorted(p.name for p in link.parent.iterdir()) == ["SCRATCHPAD.md"]


def test_atomic_write_refuses_a_named_pipe_as_it_would_a_device(tmp_path: Path) -> None:
    pipe = tmp_path / "SCRATCHPAD.md"
    os.mkfifo(pipe)
    with pytest.raises(UnsafePathError, match="is a named pipe, not a regular file"):
        atomic_write(pipe, "new")
    assert pipe.is_fifo()


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "sections.jsonl"
    dead = tmp_path / f".sections.jsonl.{_dead_pid()}.x1y2z3.tmp"
    dead.write_text("half")
    alive = tmp_path / f".sections.jsonl.{os.getpid()}.a1b2c3.tmp"
    alive.write_text("being written")  # a writer of this very process, still at work
    other = tmp_path / f".other.md.{_dead_pid()}.q.tmp"
    other.write_text("another file's")
    atomic_write(target, "whole\n")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["sections.jsonl", alive.name, other.name])


def test_replace_if_unchanged_replaces_only_the_bytes_it_was_shown(tmp_path: Path) -> None:
    target = tmp_path / "SCRATCHPAD.md"
    target.write_bytes(b"rendered")
    changed = replace_if_unchanged(target, b"new render", b"something else")
    assert changed == Replaced(False, found=b"rendered")
    assert target.read_bytes() == b"rendered"
    done = replace_if_unchanged(target, b"new render", b"rendered")
    assert done == Replaced(True) and target.read_bytes() == b"new render"
    assert not replace_if_unchanged(tmp_path / "absent.md", b"x", b"expected").done
    assert replace_if_unchanged(tmp_path / "absent.md", b"x", None).done
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SCRATCHPAD.md", "absent.md"]


def _edit_in_place(path: str) -> None:
    with open(path, "ab") as handle:
        handle.write(b"typed by the agent\n")


def _edit_by_rename(path: str) -> None:
    # What most editors do: write a new file beside it and rename it over.
    text = Path(path).read_bytes() + b"typed by the agent\n"
    Path(path + ".editor").write_bytes(text)
    os.rename(path + ".editor", path)


@pytest.mark.parametrize("edit", [_edit_in_place, _edit_by_rename])
def test_an_edit_landing_between_the_check_and_the_swap_is_returned_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[str], None]
) -> None:
    target = tmp_path / "SCRATCHPAD.md"
    target.write_bytes(b"rendered\n")
    real_swap = fsutil._renameat2

    def edit_then_swap(source: str, path: Path, flags: int) -> None:
        edit(str(path))  # the agent's file tool, just after the check
        real_swap(source, path, flags)

    monkeypatch.setattr(fsutil, "_renameat2", edit_then_swap)
    result = replace_if_unchanged(target, b"new render\n", b"rendered\n")
    assert result.done and result.late == b"rendered\ntyped by the agent\n"
    assert target.read_bytes() == b"new render\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SCRATCHPAD.md"]


def test_without_an_atomic_exchange_an_in_place_edit_is_still_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "SCRATCHPAD.md"
    target.write_bytes(b"rendered\n")
    monkeypatch.setattr(fsutil, "_renameat2_function", lambda: None)
    real_replace = os.replace

    def edit_then_replace(src: str, dst: str) -> None:
        _edit_in_place(dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", edit_then_replace)
    result = replace_if_unchanged(target, b"new render\n", b"rendered\n")
    assert result.done and result.late == b"rendered\ntyped by the agent\n"
    assert target.read_bytes() == b"new render\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SCRATCHPAD.md"]


def test_real_dir_refuses_a_link_in_place_of_the_state_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".scratchpad").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match=r"\.scratchpad is a symbolic link"):
        real_dir(tmp_path / "ws" / ".scratchpad")
    assert real_dir(tmp_path / "ws" / "conflicts").is_dir()


def test_the_lock_file_is_never_opened_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("do not truncate")
    (tmp_path / "x.lock").symlink_to(victim)
    with pytest.raises(UnsafePathError), FileLock(tmp_path / "x.lock").hold(timeout=1):
        pass
    assert victim.read_text() == "do not truncate"


def test_the_lock_is_reentrant_in_a_thread_and_exclusive_between_processes(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "x.lock")
    probe = (
        "import sys\nfrom pathlib import Path\nfrom assembler.fsutil import FileLock\n"
        "try:\n    with FileLock(Path(sys.argv[1])).hold(timeout=0.2):\n        print('got')\n"
        "except TimeoutError:\n    print('busy')\n"
    )

    def other_process() -> str:
        run = subprocess.run(
            [sys.executable, "-c", probe, str(tmp_path / "x.lock")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return run.stdout.strip()

    with lock.hold(timeout=1), lock.hold(timeout=1):
        assert other_process() == "busy"
    assert other_process() == "got"


def test_a_path_is_allowed_only_where_its_pattern_points(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    assert allowed_root("memory/**/*.md", workspace) == workspace
    assert allowed_root("../notes/*.md", workspace) == notes.resolve()
    assert allowed_root(str(notes / "a.md"), workspace) == notes.resolve()
    (workspace / "memory" / "x.md").symlink_to("/etc/hostname")
    (workspace / "memory" / "y.md").symlink_to(workspace / "MEMORY.md")
    assert not resolves_within(workspace / "memory" / "x.md", workspace)
    assert resolves_within(workspace / "memory" / "y.md", workspace)


def _returns_within(function: Callable[[], object], seconds: float = 60) -> object:
    """Run `function` on a thread; return what it returned, or fail if it has not returned
    within `seconds` (a blocked open never returns)."""
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(_outcome(function)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"{function} did not return"
    return result[0]


def _outcome(function: Callable[[], object]) -> object:
    try:
        return function()
    except Exception as error:
        return error


def test_a_named_pipe_is_refused_by_every_open_without_waiting_for_a_writer(
    tmp_path: Path,
) -> None:
    pipe = tmp_path / "SCRATCHPAD.md"
    os.mkfifo(pipe)
    for attempt in (
        lambda: fsutil.read_regular(pipe),
        lambda: fsutil.read_regular(pipe, follow_links=True),
        lambda: fsutil.read_head(pipe, 10),
        lambda: fsutil.open_nofollow(pipe, os.O_RDONLY),
        lambda: fsutil.open_nofollow(pipe, os.O_WRONLY | os.O_APPEND),
        lambda: fsutil.open_nofollow(pipe, os.O_RDWR | os.O_CREAT),
    ):
        outcome = _returns_within(attempt)
        assert isinstance(outcome, UnsafePathError) and "named pipe" in str(outcome)


def test_a_regular_file_is_read_up_to_its_limit_and_refused_past_it(tmp_path: Path) -> None:
    path = tmp_path / "prefix.json"
    path.write_bytes(b"x" * 100)
    assert fsutil.read_regular(path, limit=100).data == b"x" * 100
    with pytest.raises(FileTooLargeError, match="over the 99 bytes"):
        fsutil.read_regular(path, limit=99)
    assert fsutil.read_head(path, 10) == (b"x" * 10, 100)
    fd = fsutil.open_nofollow(path, os.O_RDWR)
    try:
        with pytest.raises(FileTooLargeError):
            fsutil.read_all(fd, limit=50)
        assert fsutil.read_all(fd) == b"x" * 100
    finally:
        os.close(fd)


def test_json_deeper_than_the_limit_is_bad_json_not_a_recursion_error() -> None:
    assert fsutil.load_json(b'{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    with pytest.raises(ValueError, match="nested too deeply"):
        fsutil.load_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        fsutil.load_json("[" * 65 + "]" * 65)
    assert fsutil.load_json("[" * 64 + "]" * 64) is not None


def test_a_double_star_glob_never_walks_into_a_link_to_a_folder(tmp_path: Path) -> None:
    (tmp_path / "memory" / "deep").mkdir(parents=True)
    (tmp_path / "memory" / "a.md").write_text("a")
    (tmp_path / "memory" / "deep" / "b.md").write_text("b")
    (tmp_path / "memory" / ".hidden").mkdir()
    (tmp_path / "memory" / ".hidden" / "c.md").write_text("c")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "d.md").write_text("d")
    for name in ("l1", "l2"):
        (tmp_path / "memory" / name).symlink_to(".")
    (tmp_path / "memory" / "out").symlink_to(tmp_path / "elsewhere")

    found = _returns_within(lambda: fsutil.glob_paths("memory/**/*.md", root_dir=tmp_path))
    absolute = fsutil.glob_paths(str(tmp_path / "memory" / "**" / "*.md"))

    assert found == ["memory/a.md", "memory/deep/b.md"]
    assert absolute == [str(tmp_path / p) for p in found]
    # A single `*` may follow a link (a pattern has only so many parts: no loop).
    assert fsutil.glob_paths("memory/*/d.md", root_dir=tmp_path) == ["memory/out/d.md"]
    assert fsutil.glob_paths("memory/a.md", root_dir=tmp_path) == ["memory/a.md"]
    assert fsutil.glob_paths("memory/none.md", root_dir=tmp_path) == []


def test_a_write_that_fails_for_a_full_disk_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "sections.jsonl"
    target.write_text("kept\n")
    monkeypatch.setattr(os, "write", full)
    monkeypatch.setattr(os, "fsync", full)  # where a full disk shows in a buffered write
    with pytest.raises(WriteError, match="free some disk space") as caught:
        atomic_write(target, "new")
    assert caught.value.errno == errno.ENOSPC and isinstance(caught.value, OSError)
    assert "\n" not in str(caught.value)
    fd = fsutil.open_nofollow(target, os.O_RDWR | os.O_APPEND)
    try:
        with pytest.raises(WriteError, match=r"sections\.jsonl"):
            fsutil.write_all(fd, b"more\n")
    finally:
        os.close(fd)
    monkeypatch.undo()
    assert target.read_text() == "kept\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sections.jsonl"]
