"""Parked tool outputs: stored whole in SQLite, read back in slices."""
