"""One daemon per workspace: the lock it holds (`.scratchpad/daemon.lock`, with its pid), who
holds it, and the nudge a hook sends it. A hook imports this before every prompt: the standard
library and the path rules only.

Who holds the lock is what the kernel says (Linux's `/proc/locks`: the pid that took the flock
on the file's device and inode), not what the file says: the agent can write the file, and a
pid it chose there would make the socket's peer check trust its own listener. Where the kernel
does not say (no `/proc`), the file's pid is taken, and a file that does not hold one means no
daemon can be told: the callers then assemble themselves.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path

from assembler.errors import AssemblerError
from assembler.fsutil import open_nofollow, open_regular, read_regular, real_dir

LOCK_NAME = "daemon.lock"
NUDGE_NAME = "nudge"


class DaemonRunningError(AssemblerError):
    """Another daemon holds the workspace's lock."""


class DaemonLock:
    """An exclusive flock on `.scratchpad/daemon.lock`, which holds the owner's pid.

    The kernel releases a flock when its process dies, even by kill -9, so a stale lock is
    simply taken by the next daemon; no pid liveness guessing.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, state_dir: Path) -> DaemonLock:
        """Given the state folder, take the lock and write our pid into it.

        Raise DaemonRunningError naming the holder's pid if another process holds it.
        """
        path = real_dir(state_dir) / LOCK_NAME
        # Not through a link: the lock file is truncated, and a link could aim that elsewhere.
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise AssemblerError(f"Cannot lock {path} ({error}); check the folder") from error
            holder = _read_pid(path)
            who = f"pid {holder}" if holder else "another process"
            stop = f"kill {holder}" if holder else "stop it"
            raise DaemonRunningError(
                f"A daemon ({who}) already runs for {state_dir.parent} (lock {path}); "
                f"{stop} first, or let it do the work"
            ) from error
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(path, fd)

    def release(self) -> None:
        """Empty the lock file (nobody holds it now) and release the lock."""
        if self._fd is None:
            return
        # The file stays: removing it would let a starting daemon lock a deleted inode while
        # a third one creates and locks a new file.
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)
        self._fd = None


def _read_pid(path: Path) -> int | None:
    try:
        data = read_regular(path, limit=64).data  # no link, no pipe: the agent can put one there
        text = (data or b"").decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


# The kernel's table of file locks, and the most of it read.
PROC_LOCKS = Path("/proc/locks")
_PROC_LOCKS_MAX = 8 * 1024 * 1024


def lock_holder(state_dir: Path) -> int | None:
    """Given the state folder, return the pid of the process that holds its lock, as the kernel
    records it (see the module's docstring), or None when no daemon runs or none can be told."""
    path = state_dir / LOCK_NAME
    try:
        fd = open_regular(path)  # not blocking: a named pipe there would stop the caller
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            info = os.fstat(fd)
        else:
            return None  # nobody holds it
    finally:
        os.close(fd)  # also drops our shared lock, if we got it
    known, holder = flock_holder(info.st_dev, info.st_ino, PROC_LOCKS)
    return holder if known else _read_pid(path)


def flock_holder(device: int, inode: int, table: Path = PROC_LOCKS) -> tuple[bool, int | None]:
    """Given a file's device and inode (and the kernel's lock table), return whether the table
    could be read, and the pid of the process holding a flock on that file (None: nobody)."""
    try:
        with open(table, "rb") as handle:
            data = handle.read(_PROC_LOCKS_MAX)
    except OSError:
        return False, None
    wanted = f"{os.major(device):02x}:{os.minor(device):02x}:{inode}".encode()
    for line in data.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 3013 fe:00:2146480 0 EOF"; a waiter's line has "->"
        fields = line.split()
        if len(fields) >= 6 and fields[1] == b"FLOCK" and fields[5] == wanted:
            return True, int(fields[4]) if fields[4].isdigit() else None
    return True, None


def nudge(state_dir: Path, reason: str = "hook") -> bool:
    """Given the state folder, ask a running daemon to assemble soon (it watches the nudge
    file); return whether a daemon runs. Without one, nothing is written.
    """
    if lock_holder(state_dir) is None:
        return False
    with contextlib.suppress(OSError):
        fd = open_nofollow(state_dir / NUDGE_NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{reason} {time.time():.3f}\n")
    return True


# --- systemd and logging -------------------------------------------------------------------
