"""Data: sources, upstream parsers, synthetic languages, corpus preparation, WordPiece."""
