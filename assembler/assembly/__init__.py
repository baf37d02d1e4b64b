"""One assembly: the auto sections drawn from transcripts, mood, context and memory, fitted under
the caps, rendered and written, and the log of each run.
"""
