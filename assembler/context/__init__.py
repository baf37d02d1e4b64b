"""What the session is about: the human's current task, the active context, today's note and the
time of day.
"""
