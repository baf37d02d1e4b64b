"""Generic JSONL transcripts, for any other agent: one message object per line."""
