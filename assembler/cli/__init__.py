"""The command line: `assemble` and its subcommands; each module parses one group of commands and
calls the core.
"""
