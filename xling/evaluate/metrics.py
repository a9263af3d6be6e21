"""Nearest-neighbour ranks in query blocks: where each query's gold lands among the candidates.

Ranks are computed in blocks of queries (as MUSE and vecmap do) so that memory is
O(block x candidates), never O(queries x candidates).

How tied scores count (the mean over random tie orders): xling.evaluate.ranks.

Scores closer than TIE_ULPS x dim float64 epsilons are tied: identical vectors get cosines that differ
in the last bits depending on their position in the matrix product, and no order below the rounding
error of the scores means anything.

numpy, not torch: the retrieval jobs that call this do nothing else with torch, and importing it is most of
their start-up (about 1.5 s of a 3 s job).
"""

from __future__ import annotations

import numpy as np

from xling.evaluate.ranks import Ranks

# Scores within TIE_ULPS * H * eps (dimension H, float64 eps) are tied. A dot product of unit vectors errs
# by at most about H * eps, normalising them adds about as much, a CSLS score (2 cos - r_tgt - r_src)
# adds up four such terms, and a comparison takes the difference of two scores: 2 x 2 x 4 = 16.
TIE_ULPS = 16


def _normalize(x: np.ndarray) -> np.ndarray:
    """Unit rows; an all-zero row stays zero (cosine 0 with everything) instead of NaN."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def _knn_mean(x: np.ndarray, y: np.ndarray, k: int, block: int) -> np.ndarray:
    """For every row of x, the mean cosine of its k nearest rows of y (both unit-normalized), blockwise."""
    k = min(k, y.shape[0])
    out = np.empty(x.shape[0], dtype=x.dtype)
    for i in range(0, x.shape[0], block):
        scores = x[i : i + block] @ y.T
        nearest = np.partition(scores, scores.shape[1] - k, axis=1)[:, scores.shape[1] - k :]
        out[i : i + block] = np.sort(nearest, axis=1)[:, ::-1].mean(axis=1)  # summed largest first
    return out


def _matrix(name: str, x, width: int | None = None) -> np.ndarray:
    t = np.asarray(x, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] == 0 or (width is not None and t.shape[1] != width):
        raise ValueError(
            f"{name} must be a non-empty 2-D array"
            + (f" of width {width}" if width else "")
            + f", got shape {tuple(t.shape)}"
        )
    return t


def nn_ranks(
    queries,
    candidates,
    gold: list[set[int]],
    block: int = 1024,
    metric: str = "cosine",
    csls_k: int = 10,
    source_space=None,
    target_space=None,
) -> Ranks:
    """Where the best-ranked gold candidate of each query lands (ties: see the module docstring).

    queries [Q, H], candidates [C, H]; gold[i] = indices into candidates of query i's translations
    (every query needs at least one). metric "cosine", or "csls" (Conneau et al. 2018, MUSE):
    CSLS(x, y) = 2 cos(x, y) - r_tgt(x) - r_src(y), where r_tgt(x) is the mean cosine of query x to its
    csls_k nearest rows of `target_space` and r_src(y) the mean cosine of candidate y to its csls_k
    nearest rows of `source_space`. MUSE takes every word of each language (pass them); left out, they
    are the candidates and the queries. Scores are float64, computed `block` queries at a time.
    """
    if metric not in ("cosine", "csls"):
        raise ValueError(f"metric must be 'cosine' or 'csls', got {metric!r}")
    q = _matrix("queries", queries)
    c = _matrix("candidates", candidates, q.shape[1])
    if len(gold) != q.shape[0]:
        raise ValueError(f"{len(gold)} gold sets for {q.shape[0]} queries")
    for i, g in enumerate(gold):
        if not g:
            raise ValueError(f"query {i} has no gold candidate")
        bad = [j for j in g if not 0 <= j < c.shape[0]]
        if bad:
            raise ValueError(f"query {i}: gold indices {bad[:5]} outside [0, {c.shape[0]})")
    q, c = _normalize(q), _normalize(c)
    if metric == "csls":
        sources = q if source_space is None else _normalize(_matrix("source_space", source_space, q.shape[1]))
        targets = c if target_space is None else _normalize(_matrix("target_space", target_space, q.shape[1]))
        r_tgt = _knn_mean(q, targets, csls_k, block)
        r_src = _knn_mean(c, sources, csls_k, block)
    tol = TIE_ULPS * q.shape[1] * np.finfo(np.float64).eps
    # flat (row, column) index of every gold pair, to pick gold scores out of each block
    gold_rows = np.array([i for i, g in enumerate(gold) for _ in g], dtype=np.int64)
    gold_cols = np.array([j for g in gold for j in sorted(g)], dtype=np.int64)
    above, tied, tied_gold = (np.empty(q.shape[0], dtype=np.int64) for _ in range(3))
    for start in range(0, q.shape[0], block):
        stop = min(start + block, q.shape[0])
        scores = q[start:stop] @ c.T
        if metric == "csls":
            scores = 2 * scores - r_tgt[start:stop, None] - r_src[None, :]
        sel = (gold_rows >= start) & (gold_rows < stop)
        rows, cols = gold_rows[sel] - start, gold_cols[sel]
        gold_scores = scores[rows, cols]
        best = np.full(stop - start, -np.inf, dtype=scores.dtype)
        np.maximum.at(best, rows, gold_scores)
        n_above = (scores > best[:, None] + tol).sum(axis=1)
        above[start:stop] = n_above
        tied[start:stop] = (scores >= best[:, None] - tol).sum(axis=1) - n_above
        tied_gold[start:stop] = np.bincount(rows, weights=gold_scores >= best[rows] - tol, minlength=stop - start)
    return Ranks(above, tied, tied_gold)
