"""Keeping the file fresh: the daemon's triggers and schedule, and the systemd units and the
launchd agent that run it."""
