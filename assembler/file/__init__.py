"""SCRATCHPAD.md itself: its bytes (frontmatter, markers, escaping), the templates that render it,
its freshness, the records of its renders kept in the state folder, and what a session holds of
it.
"""
