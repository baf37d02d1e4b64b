"""`assemble guidance`: the system-prompt text that tells the agent how to use its scratchpad."""

from __future__ import annotations

import argparse
import sys

from assembler.cli.common import load
from assembler.pad.guidance import guidance_for


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(guidance_for(load(args)))
    return 0
