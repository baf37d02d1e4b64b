"""The agent's Markdown memory: an incremental SQLite index of chunks, embeddings and BM25, hybrid
search, and the hits recalled for a conversation.
"""
