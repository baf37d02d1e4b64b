"""One module per command: `run(args)` returns the exit code."""
