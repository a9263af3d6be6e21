"""Orthogonal maps between two representation spaces, and the normalisation that precedes them.

Why: Cao et al. (2020) use a rotation learned on word pairs (or sentence pairs) as the baseline that their
fine-tuning alignment must beat; Conneau et al. (2020) align separately trained monolingual BERTs with one
(after iterative normalisation, Zhang et al. 2019). Both are the same two functions, here once:

* `procrustes(x, y)`: the orthogonal W minimising ||x W - y||_F (rows are paired vectors), the SVD solution
  of the orthogonal Procrustes problem (scipy.linalg.orthogonal_procrustes computes the same W);
* `iterative_normalize(x, n_iter)`: unit length, then mean centring, repeated; each step undoes a little of the
  other, and a few rounds leave vectors that are both (to float precision), which makes the two spaces'
  geometry comparable before the map is learned.
"""

from __future__ import annotations

import numpy as np


def procrustes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Orthogonal W (d x d) minimising ||x @ W - y||_F for paired rows x[i] <-> y[i]."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape:
        raise ValueError(f"procrustes needs two matrices of the same shape, got {x.shape} and {y.shape}")
    if len(x) == 0:
        raise ValueError("procrustes needs at least one pair of vectors")
    u, _, vt = np.linalg.svd(x.T @ y)
    return u @ vt


def iterative_normalize(x: np.ndarray, n_iter: int = 5, eps: float = 1e-12) -> np.ndarray:
    """Unit length then mean centring, `n_iter` times, then unit length (Zhang et al. 2019), as float64."""
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    x = np.array(x, dtype=np.float64)
    for _ in range(n_iter):
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), eps)
        x -= x.mean(axis=0, keepdims=True)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), eps)
