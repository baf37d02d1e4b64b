"""What one assembly measured, as typed records: the file's times, its tokens against the caps,
the transcripts read, the memory shown, what was dropped or degraded, how long each stage took.

They become JSON only where they leave the program (`Measures.to_json`): the state folder's
last-assembly.json, `assemble --once --json`, the status page's log of assemblies.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assembler.errors import Problem
from assembler.pad.agent_part import ShownSection
from assembler.pad.hand_edits import FileSync


@dataclass(frozen=True)
class Caps:
    """The token caps the file was fitted to (`[caps]`)."""

    auto: int
    agent: int
    total: int


@dataclass(frozen=True)
class Tokens:
    """The file's tokens by part, as the configured counter counts them."""

    frontmatter: int
    auto: int
    agent: int
    total: int
    caps: Caps

    def to_json(self) -> dict[str, Any]:
        return {
            "frontmatter": self.frontmatter,
            "auto": self.auto,
            "agent": self.agent,
            "total": self.total,
            "caps": {"auto": self.caps.auto, "agent": self.caps.agent, "total": self.caps.total},
        }


@dataclass(frozen=True)
class SourceRead:
    """One transcript the run read: where (as the workspace shows it), in which format, how
    many messages and unreadable lines, and why it failed if it did."""

    path: str
    format: str
    messages: int
    bad_lines: int
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "messages": self.messages,
            "bad_lines": self.bad_lines,
        }
        if self.error:
            entry["error"] = self.error
        return entry


@dataclass(frozen=True)
class MemoryShown:
    """The memory index searched: its chunks, how many have embeddings, the hits shown."""

    chunks: int
    embedded: int
    hits: int


@dataclass(frozen=True)
class Frontmatter:
    """The fields of the file's frontmatter: what the agent needs of the run (when, how long it
    holds, what it read), in a few tokens. What failed and why is for the user: the CLI prints
    it, and last-assembly.json, `assemble show --format json` and the status page keep it."""

    updated: datetime  # to the second, as the file says it
    expires: datetime
    ttl_minutes: int
    source: str  # what the run read, in one line ("2 transcripts, 45 messages; memory 38 chunks")

    def to_json(self) -> dict[str, Any]:
        return {
            "updated": self.updated.isoformat(timespec="seconds"),
            "expires": self.expires.isoformat(timespec="seconds"),
            "ttl_minutes": self.ttl_minutes,
            "source": self.source,
        }


@dataclass
class Measures:
    """Everything one assembly measured; `frontmatter` is the part the file itself carries."""

    frontmatter: Frontmatter
    generator: str
    tokens: Tokens
    sources: list[SourceRead]
    messages_read: int
    memory: MemoryShown | None  # None: memory search off for this file
    sections: list[str]  # the auto sections shown, in order
    # When the session read began: a pad write's block tells the sections written before it
    # as this render did (see `pad.publish`).
    session_start: datetime | None
    dropped: list[str]  # what the caps or the repeat check left out, a line each
    agent_sections: dict[str, str]  # each agent section shown whole: name -> its text's hash
    agent_omitted: list[ShownSection]  # the agent sections shown in part
    auto_sha256: str
    body_sha256: str
    degraded: list[Problem]
    stages_ms: dict[str, float]
    file_edits: FileSync | None = None  # hand edits of the file this run imported
    # The agent region was carried over from the last render, not imported: the next run must
    # import it, even if nobody edits the file again.
    agent_carried: bool = False

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON values, as last-assembly.json keeps it."""
        memory = self.memory
        record: dict[str, Any] = {
            **self.frontmatter.to_json(),
            "generator": self.generator,
            "tokens": self.tokens.to_json(),
            "sources": [source.to_json() for source in self.sources],
            "messages_read": self.messages_read,
            "memory": None
            if memory is None
            else {"chunks": memory.chunks, "embedded": memory.embedded, "hits": memory.hits},
            "sections": list(self.sections),
            "session_start": None
            if self.session_start is None
            else self.session_start.isoformat(timespec="seconds"),
            "dropped": list(self.dropped),
            "agent_sections": dict(self.agent_sections),
            "agent_omitted": [
                {
                    "section": s.name,
                    "tokens": s.tokens,
                    "shown": s.shown_tokens,
                    "left_out": s.left_out,
                    "read": s.read_command,
                }
                for s in self.agent_omitted
            ],
            "auto_sha256": self.auto_sha256,
            "body_sha256": self.body_sha256,
            "degraded": [problem.to_dict() for problem in self.degraded],
            "stages_ms": dict(self.stages_ms),
        }
        if self.file_edits is not None and (edits := self.file_edits.summary()) is not None:
            record["file_edits"] = edits
        if self.agent_carried:
            record["agent_carried"] = True
        return record
