"""Data: sources, upstream parsers, synthetic languages, corpus preparation, WordPiece and words, the canonical
formats and what each transfer task is scored by."""
