"""Evaluation: metrics, word / sentence retrieval, token translation."""
