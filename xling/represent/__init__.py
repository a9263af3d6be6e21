"""Representations: the map/reduce word and language store, zero-mean and MDS transforms."""
