"""SCRATCHPAD.md itself: its bytes (frontmatter, markers, escaping), the templates that render it,
its freshness, and what a session holds of it.
"""
