"""scratchpad-assembler: working memory for LLM agents, rendered into SCRATCHPAD.md."""

__version__ = "0.1.0"
