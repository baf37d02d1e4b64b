"""What the MCP tools do beyond the protocol: the scratchpad as hosts prepend it, the agent's
sections, the parked observations and the memory search. The server loads this module on the
first tool call, not at its start: a host lists the tools within two seconds of starting the
server, or goes on without them (`assembler.hosts.mcp.server`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from assembler.config.schema import Config
from assembler.errors import ObservationError
from assembler.file.codec import prefix_text
from assembler.memory.lifecycle import WarmMemory, index_options, synced_memory
from assembler.memory.recall import hit_record, shown_hit
from assembler.observations.slices import hexdump
from assembler.observations.store import ObservationStore, store_for, to_json
from assembler.pad.publish import prefix_parts, scratchpad_with_ready
from assembler.pad.tool_calls import Answer

log = logging.getLogger("assembler.mcp")


def view(config: Config, now: datetime) -> tuple[str, bool, bool]:
    """Given the config and the clock, return the scratchpad as hosts prepend it, whether its
    assembled part is fresh, and whether the file was ever written."""
    parts = prefix_parts(config, now)
    return prefix_text([parts.auto, parts.agent]), parts.fresh, parts.expires is not None


def scratchpad_call(config: Config, arguments: Mapping[str, Any]) -> Answer:
    """Given the config and a `scratchpad` call's arguments, carry it out (the ready block is
    published with the change) and return its answer."""
    return scratchpad_with_ready(config).tool_call(arguments, source="mcp")


def session_call(config: Config, content: Any, mode: Any) -> Answer:
    """Given the config and a `session_scratchpad` call's content and mode, carry it out and
    return its answer."""
    return scratchpad_with_ready(config).session_tool(content, mode, source="mcp")


class Observations:
    """The workspace's parked observations, as the tools open them: the first call of a
    session also removes what expired since the last session (a new session is a good moment
    for it, and doing it here keeps it out of the server's start)."""

    def __init__(self, config: Config, clock: Callable[[], datetime] | None) -> None:
        self.config = config
        self.clock = clock
        self._collected = False

    @contextmanager
    def store(self) -> Iterator[ObservationStore]:
        """Yield the store, open (the caller holds the server's lock for the first call)."""
        with store_for(self.config, clock=self.clock) as store:
            if not self._collected:
                self._collected = True
                try:
                    store.gc()
                except ObservationError as error:
                    # The call itself may still succeed; if not, it says why.
                    log.warning("%s", error)
            yield store


def parked_json(synthetic: Mapping[str, Any]) -> str:
    """Given what parking returned, return it as the tool's text."""
    return to_json(synthetic)


def read_body(data: bytes | None, start: int, mode: str, text: str | None, pattern: Any) -> str:
    """Given a slice read from a parked observation, return the text the agent gets of it."""
    if data is not None:
        return hexdump(data, start)
    if mode == "grep":
        return text or f"No line matches {pattern!r}."
    return text or ""


def search(
    config: Config, warm: WarmMemory | None, query: str, k: int
) -> tuple[WarmMemory, list[Any], list[dict[str, Any]], str | None]:
    """Given the config, the memory kept warm (None: the first search opens it), a query and
    the number of hits, return the warm memory, the hits as shown (secrets redacted), their
    records and why the search fell back to less, if it did."""
    memory = warm if warm is not None else WarmMemory()
    synced = synced_memory(config, warm=memory)
    found = synced.index.search(query, k=k, **index_options(config))
    # The agent's context is an output like any other: secrets come back redacted.
    patterns: Sequence[str] = config.routing.extra_secret_patterns
    hits = [shown_hit(hit, patterns) for hit in found]
    why = synced.fallback.why if synced.fallback is not None else None
    return memory, hits, [hit_record(hit) for hit in hits], why
