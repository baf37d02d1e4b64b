"""Claude Code: its project transcripts, what in them is the host rather than the human, its hooks
and their setup.
"""
