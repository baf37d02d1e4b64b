"""The human's mood: each message scored, the state over the window, the history of scores, and the
response strategy it suggests.
"""
