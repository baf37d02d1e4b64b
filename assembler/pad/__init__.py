"""The agent's own sections: the journal of their changes, the sections and their caps, tool calls,
hand edits of the file, and the part of the file they fill.
"""
