"""Session transcripts, host-neutral: finding the files, reading them from the end along the active
branch, and merging their messages.
"""
