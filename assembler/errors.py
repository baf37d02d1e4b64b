"""The one error hierarchy, and the record of a problem a run worked around. Every message
names the file, key or argument, and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


class AssemblerError(Exception):
    """A problem the user can fix; the CLI prints it as one line and exits 1."""


class ConfigError(AssemblerError):
    """The configuration file is missing, malformed or invalid."""


class WorkspaceError(AssemblerError):
    """The workspace folder does not exist or cannot be used."""


class TranscriptError(AssemblerError):
    """A transcript source cannot be read at all (single bad lines are skipped, not raised)."""


class ModelError(AssemblerError):
    """A bundled model (mood, embeddings) cannot be loaded."""


class SectionError(AssemblerError):
    """A section name, the sections journal or its lock cannot be used."""


class ObservationError(AssemblerError):
    """An observation cannot be stored, found or read as asked; the message says what to do."""


class ScratchpadError(AssemblerError):
    """SCRATCHPAD.md is missing or cannot be parsed."""


class UnsafePathError(AssemblerError, OSError):
    """A path the program would read or write is a link out of the folders it may touch, or
    something other than a regular file where one belongs. An OSError too, so that code which
    degrades on an unreadable file degrades on this one the same way."""


class FileTooLargeError(AssemblerError, OSError):
    """A file the program would read whole is larger than what it reads of such a file (the
    agent can write a gigabyte into its workspace). An OSError too, so that code which degrades
    on an unreadable file degrades on this one the same way."""


class WriteError(WorkspaceError, OSError):
    """A file or folder cannot be written: the disk is full, the file system read-only or the
    folder not writable. An OSError too (its `errno` is the system's), so that code which
    degrades on a failed write degrades on this one the same way."""


class StoppedError(AssemblerError):
    """Work was asked to stop half way (the daemon received SIGTERM); what it finished is kept
    and the next run goes on from there."""


class StateBusyError(WorkspaceError):
    """A state database stayed locked by another process for longer than a run waits; the run
    leaves it alone (it is not taken for a broken one)."""


# What a problem affected. "keyword search" is no fault: the config asks for memory search
# without embeddings (`memory.model = "none"`), and it is reported only where asked.
ProblemKind = Literal[
    "transcript",
    "mood",
    "daily note",
    "memory",
    "keyword search",
    "sections",
    "hand edits",
    "write",
]


@dataclass(frozen=True)
class Problem:
    """Something a run worked around instead of failing: what it affected, why (saying what to
    do about it where there is something to do), and its kind, for callers that decide by it.
    SCRATCHPAD.md lists them under `degraded`."""

    what: str
    why: str
    kind: ProblemKind

    def to_dict(self) -> dict[str, str]:
        """Return the problem as the frontmatter's `degraded` lists it: what and why."""
        return {"what": self.what, "why": self.why}
