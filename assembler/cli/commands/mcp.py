"""`assemble mcp`: the agent tools over MCP on stdin and stdout, for a host that waits for the
server's answer to `initialize` before anything else."""

from __future__ import annotations

import argparse
from types import ModuleType

from assembler.cli.common import load
from assembler.hosts.mcp.handshake import answer_first_line


def run(args: argparse.Namespace) -> int:
    config = load(args)

    def server() -> ModuleType:
        # Here, not at the top: the MCP SDK's import takes longer than the host waits for its
        # answer to `initialize`, which `answer_first_line` gives meanwhile.
        from assembler.hosts.mcp import server

        return server

    early, module = answer_first_line(server)
    module.serve(config, early)
    return 0
