"""Files: writes that no reader ever sees half of, locks, and the rules that keep every read and
write inside the folders the program may touch.

The agent writes into its workspace, and the agent is a language model that reads untrusted
text: a link it plants (`SCRATCHPAD.md -> ~/.bashrc`, `.scratchpad/sections.jsonl -> ...`) must
not make the program read or write anything outside the workspace and its state folder. So:

- `atomic_write` never replaces anything but a regular file (a link, a device, a folder is
  refused), and cleans up the temp files a killed writer left behind;
- files of the state folder are opened with `O_NOFOLLOW` (`open_nofollow`), in a folder that
  must be a real folder (`real_dir`);
- a file read from the workspace must resolve inside it (`allowed_root`, `resolves_within`);
- every file is opened without blocking and read only if it is a regular file (a named pipe
  in place of `SCRATCHPAD.md` would stop a reader forever), and never more than a limit of it
  (`open_regular`, `read_regular`, `read_head`); JSON is parsed to a bounded depth
  (`load_json`);
- a glob's `**` never walks into a link to a folder (`glob_paths`: two links to `.` would
  make the walk endless).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.errors import FileTooLargeError, UnsafePathError, WriteError

_GLOB_CHARS = frozenset("*?[")

# The most of a file of the workspace or the state folder that is read whole. The program's
# own files stay far below it; the agent can write gigabytes there.
READ_LIMIT = 64 * 1024 * 1024
# The deepest nesting of JSON read from such a file. The program writes a few levels; the C
# parser recurses once per level and raises RecursionError somewhere near a thousand.
JSON_DEPTH = 64
# Opening never waits (a named pipe without writer) nor makes a terminal ours.
_NO_WAIT = os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# Errors of a write that the user can fix (free space, permissions, a read-only mount).
_WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}
)


def atomic_write(
    path: Path, text: str | bytes, *, encoding: str = "utf-8", durable: bool = True
) -> None:
    """Given a path and its new text, replace the file so readers see the old or the new whole.

    The text goes to a temp file in the same folder (so the rename cannot cross filesystems),
    is flushed and fsynced, then renamed over the target; the folder is fsynced so the rename
    survives a crash. The temp file is removed if anything fails, and temp files that killed
    writers left for the same target are removed first. An existing file's permissions are
    kept. Raise UnsafePathError if the target exists and is not a regular file (a link, a
    device, a folder); WriteError (an OSError) if the disk is full or the folder cannot be
    written, OSError for other failures.

    `durable=False` skips both fsyncs, for files derived from others and rewritten by every
    run (a crash may leave the old copy, or none, never half of one).
    """
    data = text.encode(encoding) if isinstance(text, str) else text
    try:
        temp_name = _temp_copy(path, data, durable=durable)
        try:
            os.replace(temp_name, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
            raise
    except OSError as error:
        raise write_error(error, path) from error
    if durable:
        fsync_folder(path.parent)


def _temp_copy(path: Path, data: bytes, *, durable: bool = True) -> str:
    """Given the file to replace and its new bytes, return the name of a temp file beside it
    that holds them, fsynced when `durable`, with the old file's permissions. Temp files that
    killed writers left for the same file are removed first. Raise UnsafePathError if the file
    exists and is not a regular file."""
    mode = _regular_mode(path)
    remove_stale_temps(path.parent, path.name)
    # The pid in the name tells a later writer whether this temp file's writer is still alive.
    import tempfile  # here: it pulls shutil and the compressors, which readers never need

    fd, temp_name = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    return temp_name


@dataclass(frozen=True)
class Snapshot:
    """A file's bytes as read at one moment (None: it did not exist), and its mtime then."""

    data: bytes | None
    mtime: float | None = None


def open_regular(path: Path, *, follow_links: bool = False) -> int:
    """Given a path, open it for reading and return the descriptor, if it is a regular file.

    The open never blocks: a named pipe would stop it until someone writes the other end, and
    a device may do anything. Without `follow_links` a link is refused as well. Raise
    UnsafePathError if the path is a link (unless followed) or not a regular file,
    FileNotFoundError if it is missing, OSError if it cannot be opened.
    """
    flags = os.O_RDONLY | _NO_WAIT | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and not follow_links:
            raise UnsafePathError(
                f"{path} is a symbolic link; the program opens its own files only, never "
                "through a link: remove it"
            ) from error
        raise
    try:
        _check_regular(fd, path, "it is not read: remove it, or put a regular file there")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(fd: int, path: Path, fix: str) -> None:
    """Given an open descriptor and its path, raise UnsafePathError (with the fix) unless it
    is a regular file; then make its reads and writes blocking again, as a file's are."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePathError(f"{path} is {describe_kind(info.st_mode)}, not a regular file; {fix}")
    status = fcntl.fcntl(fd, fcntl.F_GETFL)
    if status & os.O_NONBLOCK:
        fcntl.fcntl(fd, fcntl.F_SETFL, status & ~os.O_NONBLOCK)


def read_regular(path: Path, *, limit: int = READ_LIMIT, follow_links: bool = False) -> Snapshot:
    """Given a path, return its bytes and mtime, without following a link (unless
    `follow_links`): a file missing gives a Snapshot of None. Raise UnsafePathError if it is a
    link or not a regular file, FileTooLargeError if it holds more than `limit` bytes, OSError
    if it cannot be read.
    """
    try:
        fd = open_regular(path, follow_links=follow_links)
    except FileNotFoundError:
        return Snapshot(None)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size > limit:
            raise _too_large(path, info.st_size, limit)
        data = handle.read(limit + 1)  # the size may grow after the fstat
        if len(data) > limit:
            raise _too_large(path, len(data), limit)
        return Snapshot(data, info.st_mtime)


def _too_large(path: Path, size: int, limit: int) -> FileTooLargeError:
    return FileTooLargeError(
        f"{path} holds {size:,} bytes or more, over the {limit:,} bytes such a file may hold; "
        "it is not read: shorten or remove it"
    )


def read_head(path: Path, limit: int, *, follow_links: bool = True) -> tuple[bytes, int]:
    """Given a regular file and a number of bytes, return at most that many of its first bytes
    and its size (larger than their count when the rest was not read). Raise UnsafePathError if
    it is not a regular file (or a link, without `follow_links`), OSError if it cannot be read.
    """
    fd = open_regular(path, follow_links=follow_links)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit)
        return data, max(size, len(data))


def load_json(data: bytes | str, *, max_depth: int = JSON_DEPTH) -> Any:
    """Given JSON text from a file the agent can write, return its value. Raise ValueError if
    it is not JSON or nests deeper than `max_depth` (the parser itself would raise
    RecursionError at some depth, which no caller expects of bad input)."""
    import json

    try:
        value = json.loads(data)
    except RecursionError as error:
        raise ValueError(f"JSON nested too deeply (over {max_depth} levels)") from error
    # Iterative: the check must not recurse as deep as what it checks.
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise ValueError(f"JSON nested too deeply (over {max_depth} levels)")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return value


@dataclass(frozen=True)
class Replaced:
    """What `replace_if_unchanged` did: whether it replaced the file, what the file held when
    it was compared (`found`, when that was not what was expected) and what the replaced file
    held afterwards when someone wrote into it between the check and the rename (`late`)."""

    done: bool
    found: bytes | None = None
    late: bytes | None = None


def replace_if_unchanged(path: Path, data: bytes, expected: bytes | None) -> Replaced:
    """Given a path, its new bytes and the bytes the caller last read from it (None: absent),
    replace the file atomically only if it still holds those bytes.

    The new file is written and fsynced first, so the check and the swap are microseconds
    apart. Where the kernel can (Linux `renameat2`), the new file and the old one are
    exchanged in one step and the old one read afterwards: whatever was written to the path
    between the check and the swap, in place or by an editor's own rename, comes back as
    `late` instead of being lost. Elsewhere the old file is kept by a hard link until after the
    rename, which recovers in-place writes. Raise UnsafePathError if the target is a link or
    not a regular file.
    """
    temp_name = _temp_copy(path, data)
    try:
        found = read_regular(path).data
        if found != expected:
            return Replaced(False, found=found)
        try:
            replaced = _swap(temp_name, path, expected)
        except _NoSwap:
            replaced = _replace_keeping(temp_name, path, expected)
        fsync_folder(path.parent)
        return replaced
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)


class _NoSwap(Exception):
    """The kernel or the file system cannot exchange two names atomically."""


def _swap(temp_name: str, path: Path, expected: bytes | None) -> Replaced:
    """Put the temp file in place with renameat2: exchanged with the old file (then found
    under the temp name and compared), or created only if the path is still absent."""
    if expected is None:
        try:
            _renameat2(temp_name, path, _RENAME_NOREPLACE)
        except FileExistsError:
            return Replaced(False, found=read_regular(path).data)
        return Replaced(True)
    try:
        _renameat2(temp_name, path, _RENAME_EXCHANGE)
    except FileNotFoundError:  # deleted since the check: a change like any other
        return Replaced(False, found=None)
    try:
        previous = read_regular(Path(temp_name)).data
    except UnsafePathError:  # a link was swapped in meanwhile: nothing of the agent's to keep
        previous = expected
    return Replaced(True, late=previous if previous != expected else None)


def _replace_keeping(temp_name: str, path: Path, expected: bytes | None) -> Replaced:
    """Rename the temp file over the path, keeping the old file by a hard link until after,
    so that an in-place write between the check and the rename is returned as `late`."""
    keep = f"{temp_name[: -len('.tmp')]}.kept.tmp"
    kept = False
    try:
        os.link(path, keep, follow_symlinks=False)
        kept = True
        if Path(keep).read_bytes() != expected:
            return Replaced(False, found=Path(keep).read_bytes())
    except FileNotFoundError:
        if expected is not None:
            return Replaced(False, found=None)
    except OSError:  # no hard links on this file system: replace without the late check
        pass
    try:
        os.replace(temp_name, path)
        after = Path(keep).read_bytes() if kept else expected
        return Replaced(True, late=after if after != expected else None)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(keep)


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_NO_SWAP_ERRORS = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EPERM})


@functools.cache
def _renameat2_function() -> Any:
    """Return libc's renameat2, or None where there is none (not Linux, old glibc)."""
    import ctypes  # only writers of SCRATCHPAD.md pay for it

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function


def _renameat2(source: str, target: Path, flags: int) -> None:
    """Rename with renameat2 flags. Raise _NoSwap where it is not supported, OSError else."""
    import ctypes

    function = _renameat2_function()
    if function is None:
        raise _NoSwap()
    if function(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) == 0:
        return
    code = ctypes.get_errno()
    if code in _NO_SWAP_ERRORS:
        raise _NoSwap()
    raise OSError(code, os.strerror(code), str(target))


def _regular_mode(path: Path) -> int:
    """Return the permissions to give the new file: the old file's, else 0o644. Raise
    UnsafePathError if something other than a regular file is in the way."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return 0o644
    if not stat.S_ISREG(info.st_mode):
        kind = describe_kind(info.st_mode)
        raise UnsafePathError(f"{path} is {kind}, not a regular file; {_FIX}")
    return info.st_mode & 0o7777


_FIX = "nothing is written over it: remove it, or point the setting at a regular file"


def describe_kind(mode: int) -> str:
    """Given an lstat mode, return what kind of file it is, for a message: 'a symbolic link'."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


# `.<name>.<pid>.<random>.tmp` (and `.kept.tmp`, a hard link held during a replace).
_TEMP_TAIL = re.compile(r"\.(?P<pid>\d+)\.[a-z0-9_]+(?:\.kept)?\.tmp\Z")
# `.<name>.<random>.tmp`, as versions before the pid was in the name wrote them.
_OLD_TEMP_TAIL = re.compile(r"\.[a-z0-9_]{8}\.tmp\Z")


def remove_stale_temps(folder: Path, name: str | None = None) -> int:
    """Given a folder and a file name (None: any), remove the temp files of `atomic_write` for
    that name whose writer is dead (killed before its rename); return how many were removed.

    A temp file of a writer that is still running is left alone. Temp files named by older
    versions (no pid) are removed once they are an hour old.
    """
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        stale = _stale_temp(entry, name)
        if stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed


def _stale_temp(entry: os.DirEntry[str], name: str | None) -> bool:
    """Whether the folder entry is a temp file (of `name`, if given) whose writer is gone."""
    if not entry.name.startswith("."):
        return False
    if match := _TEMP_TAIL.search(entry.name):
        if name is not None and entry.name[1 : match.start()] != name:
            return False
        return not pid_alive(int(match["pid"]))
    if match := _OLD_TEMP_TAIL.search(entry.name):
        if name is not None and entry.name[1 : match.start()] != name:
            return False
        with contextlib.suppress(OSError):
            return time.time() - entry.stat(follow_symlinks=False).st_mtime > 3600
    return False


def pid_alive(pid: int) -> bool:
    """Given a process id, return whether such a process runs (on this machine)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def fsync_folder(folder: Path) -> None:
    """Fsync a folder so a rename in it survives a crash (where the platform allows it)."""
    # Not every platform lets a folder be opened for fsync; the rename already happened.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def real_dir(folder: Path) -> Path:
    """Given a folder the program keeps its own files in (the state folder, its `conflicts/`),
    create it if needed and return it. Raise UnsafePathError if it is a link or not a folder:
    a link there would send the program's writes elsewhere; WriteError if it cannot be made.
    """
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        pass
    except OSError as error:
        raise write_error(error, folder) from error
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(
            f"{folder} is {describe_kind(info.st_mode)}; the program keeps its own files there "
            "and writes nothing through it: remove it (a folder is made in its place)"
        )
    return folder


def check_dir(folder: Path) -> None:
    """Given a folder of the program's own (the state folder), raise UnsafePathError if it
    exists and is a link or not a folder: reading through it would read elsewhere. Creates
    nothing (see `real_dir` for writers)."""
    _check_kind(
        folder,
        stat.S_ISDIR,
        "the program keeps its own files there and reads nothing through it: remove it (a "
        "folder is made in its place)",
    )


def _check_kind(path: Path, wanted: Callable[[int], bool], why: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not wanted(info.st_mode):
        raise UnsafePathError(f"{path} is {describe_kind(info.st_mode)}; {why}")


def read_state_file(path: Path, *, limit: int = READ_LIMIT) -> Snapshot:
    """Given a file of the state folder, return it as `read_regular` does, after checking that
    the folder itself is no link. Raise UnsafePathError for a link or a file that is not a
    regular one, FileTooLargeError above `limit` bytes, OSError otherwise."""
    check_dir(path.parent)
    return read_regular(path, limit=limit)


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """Given a path in the state folder, open it (os.open flags) without following a link or
    blocking, and return the descriptor. Raise UnsafePathError if the path is a link or not a
    regular file, WriteError if it is to be written and cannot be (read-only, no space, no
    permission), OSError otherwise.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | _NO_WAIT, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{path} is a symbolic link; the program opens its own files only, never "
                "through a link: remove it"
            ) from error
        if error.errno in (errno.ENXIO, errno.ENODEV):  # a pipe without reader, a device
            check_not_link(path)
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise write_error(error, path) from error
        raise
    try:
        _check_regular(fd, path, "the program uses its own files only: remove it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_all(fd: int, limit: int = READ_LIMIT) -> bytes:
    """Given an open file descriptor, return the whole file, from its start. Raise
    FileTooLargeError if it holds more than `limit` bytes."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    total = 0
    while chunk := os.read(fd, 1 << 16):
        total += len(chunk)
        if total > limit:
            raise _too_large(_fd_path(fd), total, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Given an open file descriptor and bytes, write all of them (os.write may write less).
    Raise WriteError if the disk is full or the file cannot be written, OSError otherwise."""
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as error:
        raise write_error(error, _fd_path(fd)) from error


def _fd_path(fd: int) -> Path:
    """Given an open descriptor, return its file's path, for a message (Linux), else a name."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return Path(f"file descriptor {fd}")


def write_error(error: OSError, path: Path) -> OSError:
    """Given an OSError of a write and the file or folder written, return the error to raise:
    a WriteError that says what to do (one line, its errno kept) when the user can fix the
    cause (a full disk, a read-only file system, permissions), else the error itself."""
    if isinstance(error, UnsafePathError | WriteError) or error.errno not in _WRITE_ERRNOS:
        return error
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        fix = "free some disk space and try again; nothing written before was lost"
    elif error.errno == errno.EROFS:
        fix = "the file system is mounted read-only; run where the workspace can be written"
    else:
        fix = "check the permissions of the file and its folder"
    failure = WriteError(f"Cannot write {path} ({error.strerror or error}); {fix}")
    failure.errno = error.errno  # not strerror: with both, str() would drop the message
    return failure


def check_not_link(path: Path) -> None:
    """Raise UnsafePathError if `path` (a file of the state folder) is a symbolic link, or
    exists and is not a regular file."""
    _check_kind(
        path, stat.S_ISREG, "the program uses its own files only, never through a link: remove it"
    )


def glob_paths(pattern: str, *, root_dir: str | Path | None = None) -> list[str]:
    """Given a glob (`**` spans folders) and the folder a relative one is read from, return
    what it matches, sorted, as `glob.glob(pattern, root_dir=..., recursive=True)` would,
    except that `**` never walks into a link to a folder.

    Python's glob follows such links: two links to `.` in a folder make `**` walk an endless
    tree. The part of the pattern before its first wildcard is followed as written (the
    config names it), and so is a link that a single `*` matches (a pattern has only so many
    parts, so that cannot loop). Names that start with a dot are matched only by a pattern part
    that starts with one, and `**` does not enter such folders, as with glob.
    """
    parts = list(Path(pattern).parts)
    fixed: list[str] = []
    while parts and not _GLOB_CHARS & set(parts[0]):
        fixed.append(parts.pop(0))
    shown = os.path.join(*fixed) if fixed else ""
    base = os.path.join(root_dir, shown) if root_dir is not None else shown
    if not parts:
        return [pattern] if os.path.lexists(base or ".") else []
    found: set[str] = set()
    for path in _glob_walk(base or os.curdir, shown, parts):
        found.add(path)
    return sorted(found)


def _glob_walk(real: str, shown: str, parts: list[str]) -> Iterator[str]:
    """Given a folder (its path to open, and as the result shows it) and the pattern's parts
    still to match below it, yield the matching paths as shown."""
    import fnmatch

    part, rest = parts[0], parts[1:]
    if part == "**":
        for folder, folder_shown in _real_folders(real, shown):
            if rest:
                yield from _glob_walk(folder, folder_shown, rest)
            elif folder_shown:
                yield folder_shown
        if not rest:
            for folder, folder_shown in _real_folders(real, shown):
                for entry in _entries(folder):
                    if not entry.name.startswith(".") and not _is_real_dir(entry):
                        yield os.path.join(folder_shown, entry.name)
        return
    if not _GLOB_CHARS & set(part):
        path, path_shown = os.path.join(real, part), os.path.join(shown, part)
        if not rest:
            if os.path.lexists(path):
                yield path_shown
        elif os.path.isdir(path):
            yield from _glob_walk(path, path_shown, rest)
        return
    hidden = part.startswith(".")
    for entry in _entries(real):
        if entry.name.startswith(".") and not hidden:
            continue
        if not fnmatch.fnmatchcase(entry.name, part):
            continue
        if not rest:
            yield os.path.join(shown, entry.name)
        elif _is_dir(entry):
            yield from _glob_walk(entry.path, os.path.join(shown, entry.name), rest)


def _real_folders(real: str, shown: str) -> Iterator[tuple[str, str]]:
    """Given a folder, yield it and every folder below it that is no link and whose name does
    not start with a dot, as (path to open, path shown)."""
    pending = [(real, shown)]
    seen: set[tuple[int, int]] = set()
    while pending:
        folder, folder_shown = pending.pop()
        try:
            info = os.stat(folder)
        except OSError:
            continue
        # A bind mount can loop without any link: each folder is walked once.
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        yield folder, folder_shown
        children = [e for e in _entries(folder) if not e.name.startswith(".") and _is_real_dir(e)]
        for entry in reversed(children):
            pending.append((entry.path, os.path.join(folder_shown, entry.name)))


def _entries(folder: str) -> list[os.DirEntry[str]]:
    """Given a folder, return its entries by name; none when it cannot be listed."""
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return []


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _glob_prefix(pattern: str) -> str:
    """Given a glob, return its leading part without wildcards (a folder, or the whole path)."""
    parts = Path(pattern).parts
    fixed: list[str] = []
    for part in parts:
        if _GLOB_CHARS & set(part):
            break
        fixed.append(part)
    return os.path.join(*fixed) if fixed else "."


def allowed_root(pattern: str, workspace: Path) -> Path:
    """Given a path or glob from the config (absolute, `~`, or relative to the workspace) and
    the workspace, return the folder every file it matches must resolve inside.

    A path inside the workspace may only reach files of the workspace, whatever links it
    meets on the way (the agent can make links there); a path outside it (only the user's own
    config can name one) may reach files under its own folder, resolved.
    """
    expanded = os.path.expanduser(pattern.strip())
    joined = os.path.normpath(os.path.join(workspace, expanded))
    if is_within(joined, workspace):
        return workspace
    folder = _glob_prefix(joined) if _GLOB_CHARS & set(joined) else os.path.dirname(joined)
    return Path(os.path.realpath(folder))


def is_within(path: str | Path, root: str | Path) -> bool:
    """Given two paths (compared as written), return whether `path` is `root` or below it."""
    path_text, root_text = os.path.normpath(path), os.path.normpath(root)
    return path_text == root_text or path_text.startswith(root_text.rstrip(os.sep) + os.sep)


def resolves_within(path: Path, root: Path) -> bool:
    """Given a file and the folder it must stay in (already resolved), return whether the file,
    with every link resolved, lies inside that folder."""
    return is_within(os.path.realpath(path), root)


def check_place(path: Path, workspace: Path) -> None:
    """Given a file to write and the workspace, raise UnsafePathError if the file is in the
    workspace as written but a link on the way leads out of it (`out -> /etc` for
    `out/SCRATCHPAD.md`). A path outside the workspace as written (only the user's own config
    can name one) is not checked.
    """
    if not is_within(os.path.normpath(path), workspace):
        return
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not resolves_within(existing, workspace):
        raise UnsafePathError(
            f"{path}: the folder {existing} is a link out of the workspace, so nothing is "
            "written there; remove the link, or point the setting at a real folder"
        )


class FileLock:
    """An exclusive lock between processes (flock on `path`) and threads, re-entrant within a
    thread. The lock file is opened without following a link, so a link planted in its place
    cannot make the program create or truncate a file elsewhere.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.RLock()
        self._fd: int | None = None
        self._depth = 0

    @contextlib.contextmanager
    def hold(self, timeout: float, poll: float = 0.002) -> Iterator[None]:
        """Hold the lock for the block. Raise TimeoutError if it cannot be had within `timeout`
        seconds, UnsafePathError if the lock file is a link."""
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=max(timeout, 0)):
            raise TimeoutError(f"{self.path} is held by another thread")
        try:
            if self._depth == 0:
                self._fd = self._acquire(deadline, poll)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None
        finally:
            self._thread_lock.release()

    def _acquire(self, deadline: float, poll: float) -> int:
        fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
            if time.monotonic() >= deadline:
                os.close(fd)
                raise TimeoutError(f"{self.path} is held by another process")
            time.sleep(poll)
