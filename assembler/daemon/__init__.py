"""Keeping the file fresh: the daemon's triggers and schedule, and the systemd units that run it."""
