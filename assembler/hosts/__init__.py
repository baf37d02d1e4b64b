"""The agent hosts: where each keeps its sessions, how to read them and tell the human from the
host, what it needs to put the scratchpad before a turn, and how to set it up.
"""
