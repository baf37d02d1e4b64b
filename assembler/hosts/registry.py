"""The hosts this program knows: the one list of them (`PLUGINS`), each a package under
`assembler/hosts/` named in one line. What the program asks of a host is in the package's
modules, each optional, found by name:

- `host`: `HOST`, what reading its sessions asks (`assembler.assembly.hosts.Host`; start from
  `hosts.host.PlainHost`);
- `setup`: `setup_text(config, assemble)`, what `assemble setup NAME` prints, and
  `removal(config, assemble, environ)`, what `--remove` prints and `--apply` does;
- `hook`: `run_hook(stdin, *, workspace, config_path)`, what `assemble hook NAME` prints for
  the host's hook before a prompt (and `all_projects=True` from `--all-projects`, for a host
  whose setup has the all-projects hooks).

The CLI's choices, its help and the readers come from this list. A host's modules are imported
when asked for, not with the list: a hook before every prompt loads only its own.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Final, Literal

from assembler.errors import AssemblerError

if TYPE_CHECKING:
    from assembler.assembly.hosts import Host

Part = Literal["host", "setup", "hook"]


@dataclass(frozen=True)
class Plugin:
    """One host, as the registry lists it."""

    name: str  # as the CLI names it: `assemble setup NAME`
    summary: str  # what its setup connects, a line of `assemble setup --help`
    package: str  # its package, whose modules `host`, `setup` and `hook` it has

    def has(self, part: Part) -> bool:
        """Given a part's name, return whether the host's package has that module."""
        try:
            return importlib.util.find_spec(f"{self.package}.{part}") is not None
        except ModuleNotFoundError:
            return False

    def load(self, part: Part) -> ModuleType:
        """Given a part's name, return the host's module of it. Raise AssemblerError if the
        host has none."""
        if not self.has(part):
            raise AssemblerError(f"the host {self.name!r} has no {part} (see `assemble --help`)")
        # The one import by name in the program: a host's parts load when asked for.
        return importlib.import_module(f"{self.package}.{part}")


# In the order their formats are told apart: the first that claims a line wins, and the last
# that reads reads what no other claims, when a format is forced on it.
PLUGINS: Final[list[Plugin]] = [
    Plugin(
        "openclaw",
        "the plugin that adds it before each prompt, and how to enable it",
        "assembler.hosts.openclaw",
    ),
    Plugin(
        "claude-code",
        "hooks that add the scratchpad before each prompt, and the MCP tools",
        "assembler.hosts.claude_code",
    ),
    Plugin(
        "codex",
        "hooks that add the scratchpad before each prompt, and the MCP tools",
        "assembler.hosts.codex",
    ),
    Plugin(
        "mcp",
        "the mcpServers entry for Claude Desktop, Cursor and other MCP hosts",
        "assembler.hosts.mcp",
    ),
    Plugin("generic", "", "assembler.hosts.generic"),
]


def plugin(name: str) -> Plugin:
    """Given a host's name as the CLI gives it, return its plugin. Raise AssemblerError if no
    host has that name."""
    for found in PLUGINS:
        if found.name == name:
            return found
    names = ", ".join(p.name for p in PLUGINS)
    raise AssemblerError(f"no host is named {name!r}; the hosts are {names}")


def having(part: Part) -> list[Plugin]:
    """Given a part's name, return the hosts that have it, in the registry's order."""
    return [p for p in PLUGINS if p.has(part)]


def reading_hosts() -> tuple[Host, ...]:
    """The hosts whose sessions are read, in the registry's order, for the host-neutral code
    that reads them (`hosts=`)."""
    return _hosts(tuple(PLUGINS))


@functools.cache
def _hosts(plugins: tuple[Plugin, ...]) -> tuple[Host, ...]:
    return tuple(p.load("host").HOST for p in plugins if p.has("host"))


def __getattr__(name: str) -> tuple[Host, ...]:
    # `HOSTS`, the readers, are made when first asked for: importing the list loads no host.
    if name == "HOSTS":
        return reading_hosts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
