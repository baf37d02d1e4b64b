"""Tests of assembler/hosts/session_cwd.py: a session's working folder is read once per file,
by the file's identity, and a JSON string off a line's start is read safely."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.hosts.session_cwd import HeadCwds, literal_cwd, named_cwd


class _Reads:
    """A head reader that returns the file's text as its folder (None for an empty file) and
    counts the files it read."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def __call__(self, path: Path) -> str | None:
        self.read.append(path.name)
        return path.read_text(encoding="utf-8") or None


def test_a_files_folder_is_read_once_and_again_when_another_file_takes_its_place(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text("/work/a", encoding="utf-8")
    reads, cwds = _Reads(), HeadCwds()

    first, again = cwds.get(path, reads), cwds.get(path, reads)
    replacement = tmp_path / "new.jsonl"
    replacement.write_text("/work/b", encoding="utf-8")
    os.replace(replacement, path)
    replaced = cwds.get(path, reads)

    assert (first, again, replaced) == ("/work/a", "/work/a", "/work/b")
    assert reads.read == ["session.jsonl", "session.jsonl"]


def test_a_head_that_names_no_folder_yet_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text("", encoding="utf-8")
    reads, cwds = _Reads(), HeadCwds()

    before = cwds.get(path, reads)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("/work/a")
    after = cwds.get(path, reads)

    assert (before, after) == (None, "/work/a")
    assert len(reads.read) == 2


def test_a_missing_or_unreadable_file_names_no_folder(tmp_path: Path) -> None:
    reads, cwds = _Reads(), HeadCwds()
    present = tmp_path / "present.jsonl"
    present.write_text("/work/a", encoding="utf-8")

    def fails(path: Path) -> str | None:
        raise PermissionError(13, "denied", str(path))

    assert cwds.get(tmp_path / "missing.jsonl", reads) is None
    assert reads.read == []  # not even asked
    assert cwds.get(present, fails) is None


def test_past_its_size_the_least_recently_asked_file_is_forgotten(tmp_path: Path) -> None:
    paths = {}
    for name in "abc":
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text(f"/work/{name}", encoding="utf-8")
    reads, cwds = _Reads(), HeadCwds(size=2)

    for name in "abac":  # "b" is the least recently asked when "c" comes in
        cwds.get(paths[name], reads)
    cwds.get(paths["a"], reads)
    cwds.get(paths["b"], reads)

    assert reads.read == ["a.jsonl", "b.jsonl", "c.jsonl", "b.jsonl"]


@pytest.mark.parametrize(
    ("literal", "folder"),
    [
        (b'"/home/ray/w"', "/home/ray/w"),
        (b'"/home/ray/caf\\u00e9"', "/home/ray/caf\u00e9"),
        (b'""', None),
        (b'"/cut off', None),
        (b'"\xff"', None),
        (b"42", None),
    ],
)
def test_a_literal_names_a_folder_only_when_it_is_a_string_that_is_not_empty(
    literal: bytes, folder: str | None
) -> None:
    assert literal_cwd(literal) == folder


def test_only_a_string_that_is_not_empty_names_a_folder() -> None:
    assert [named_cwd(value) for value in ("/w", "", None, 3, ["/w"])] == ["/w"] + [None] * 4
