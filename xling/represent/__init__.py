"""Representations: the map/reduce word and language store, rotations, word spaces, the fastText baseline."""
