"""The one error hierarchy. Every message names the file, key or argument, and the fix."""

from __future__ import annotations


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


class ScratchpadError(AssemblerError):
    """SCRATCHPAD.md is missing or cannot be parsed."""


class UnsafePathError(AssemblerError, OSError):
    """A path the program would read or write is a link out of the folders it may touch, or
    something other than a regular file where one belongs. An OSError too, so that code which
    degrades on an unreadable file degrades on this one the same way."""
