"""The hosts this program knows, in the order their formats are told apart (the first that
claims a line wins; the last reads what no other claims, when a format is forced on it). The
one list of hosts: the program passes it to the host-neutral code that reads sessions
(`assembler.transcripts.hosts`)."""

from __future__ import annotations

from typing import Final

from assembler.assembly.hosts import Host
from assembler.hosts.claude_code.host import ClaudeCode
from assembler.hosts.codex.host import Codex
from assembler.hosts.generic import Generic
from assembler.hosts.openclaw.host import OpenClaw

HOSTS: Final[tuple[Host, ...]] = (OpenClaw(), ClaudeCode(), Codex(), Generic())
