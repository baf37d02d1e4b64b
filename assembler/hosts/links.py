"""One link of the chain that carries the block to the model, as `assemble doctor` checks it:
its name, whether it holds (None: it does not apply here), what was found, and the one command
that fixes it when it is broken."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Link:
    """A link's name, whether it holds (None: not applicable), what was found, and its fix."""

    name: str
    holds: bool | None
    state: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
