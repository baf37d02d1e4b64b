"""The third step: SCRATCHPAD.md replaced atomically, only if it still holds what was read
before the render (compare and swap), with the record of the renders written around the swap.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from assembler.assembly.cap import Assembly
from assembler.config.schema import Config
from assembler.errors import AssemblerError, Problem, UnsafePathError
from assembler.file.codec import parse_loosely
from assembler.file.records import (
    AssemblyState,
    RenderRecord,
    assembly_state_path,
    file_record,
    read_assembly_state,
    write_assembly_state,
)
from assembler.fsutil import (
    Replaced,
    Snapshot,
    atomic_write,
    check_dir,
    check_place,
    read_regular,
    replace_if_unchanged,
)

log = logging.getLogger(__name__)


def read_output(config: Config) -> tuple[Snapshot, list[Problem]]:
    """Return SCRATCHPAD.md as it is now (absent: no data) and why it could not be read."""
    try:
        return read_regular(config.output_path), []
    except OSError as error:
        why = f"cannot read {config.output_path} ({error}); hand edits not imported"
        return Snapshot(None), [Problem("hand edits", why, "hand edits")]


def write(assembly: Assembly) -> None:
    """Given an assembly, write its file atomically (readers see the old or the new file whole).

    Raise AssemblerError if the output folder cannot be written or the file is something other
    than a regular file (a link, a device).
    """

    def replace_file(path: Path, data: bytes) -> Replaced:
        atomic_write(path, data)
        return Replaced(True)

    try:
        seen = read_regular(assembly.path)
    except OSError:
        seen = Snapshot(None)
    _write(assembly, None, replace_file, seen)


def write_if_unchanged(assembly: Assembly, config: Config, seen: Snapshot) -> Replaced:
    """Given an assembly, its config and the file as read before the render, replace the file
    only if it still holds that (see `fsutil.replace_if_unchanged`); return what was done."""
    return _write(
        assembly,
        config.workspace,
        lambda path, data: replace_if_unchanged(path, data, seen.data),
        seen,
    )


def _write(
    assembly: Assembly,
    workspace: Path | None,
    replace_file: Callable[[Path, bytes], Replaced],
    seen: Snapshot,
) -> Replaced:
    """Replace the file with the assembly's text, with the record of the last assembly written
    around the swap (see `_record`): before it, the new render pending beside the renders
    written so far; after it, the new render first if the swap was done."""
    path = assembly.path
    written = _written_records(assembly, seen)
    _record(assembly, written, pending=True)
    try:
        if workspace is not None:
            check_place(path, workspace)
        path.parent.mkdir(parents=True, exist_ok=True)
        done = replace_file(path, assembly.text.encode("utf-8", "surrogatepass"))
    except UnsafePathError:
        _record(assembly, written, pending=False)
        raise
    except OSError as error:
        _record(assembly, written, pending=False)
        raise AssemblerError(
            f"Cannot write {path} ({error.strerror or error}); check that the folder "
            "is writable or change 'output.path'"
        ) from error
    assembly.written = assembly.written or done.done
    if done.done and assembly.record is not None:
        new = assembly.record
        written = [new, *(r for r in written if r.body_sha256 != new.body_sha256)]
    _record(assembly, written, pending=False)
    return done


def _written_records(assembly: Assembly, seen: Snapshot) -> list[RenderRecord]:
    """Return the records of the renders written so far, newest first: those recorded, and a
    render left pending by a run that stopped after its swap (the file, as read, holds it)."""
    if assembly.state_dir is None:
        return []
    state = read_assembly_state(assembly.state_dir)
    if state is None:
        return []
    if state.pending is not None and seen.data is not None:
        frontmatter, meta, body = parse_loosely(seen.data)
        if file_record(state, frontmatter, body, meta) is state.pending:
            return [state.pending, *state.renders]
    return list(state.renders)


def _record(assembly: Assembly, written: list[RenderRecord], *, pending: bool) -> None:
    """Write last-assembly.json: the records of the renders written, with the assembly's
    render pending when its swap is about to happen, and what the assembly measured.

    When it cannot be written the old record is removed (best effort): without one, the next
    run compares the file with the journal instead of trusting hashes of another render.
    """
    if assembly.state_dir is None:
        return
    state = AssemblyState(
        written,
        assembly.record if pending else None,
        {**assembly.measured.to_json(), "written": assembly.written},
    )
    try:
        # The pending record must be on disk before the swap; the one after it need not be:
        # lost in a crash, the pending record (the file holds its render) stands in for it.
        write_assembly_state(assembly.state_dir, state, durable=pending)
    except OSError as error:
        log.warning("cannot write the record of the assembly: %s", error)
        with contextlib.suppress(OSError):
            check_dir(assembly.state_dir)  # never through a link: it would delete elsewhere
            assembly_state_path(assembly.state_dir).unlink()
