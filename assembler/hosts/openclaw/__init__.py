"""OpenClaw (and pi, whose session format it shares): its sessions, their host text, its SQLite
store, its scratchpad entries and its plugin's setup.
"""
