"""SCRATCHPAD.md itself: its bytes (frontmatter, markers, escaping), the templates that render it,
and the ready block hosts put before each turn.
"""
