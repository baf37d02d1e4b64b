"""The agent's own sections: the journal of their changes, the sections and their caps, tool calls,
hand edits of the file, the part of the file they fill, and the ready block that publishes the
file's parts for the hosts to put before each turn.
"""
