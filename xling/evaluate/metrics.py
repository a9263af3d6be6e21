"""Retrieval metrics: MRR, precision@k, chance level, and nearest-neighbour ranks in query blocks.

Ranks are computed in blocks of queries (as MUSE and vecmap do) so that memory is
O(block x candidates), never O(queries x candidates).

Tie rule (optimistic): the rank of a query is 1 + the number of candidates whose score is STRICTLY
higher than the best-scoring gold candidate. Candidates tied with the best gold do not push it down.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln
import torch


def chance_mrr(n: int, n_gold: int = 1) -> float:
    """Expected reciprocal rank of the best of `n_gold` golds placed at random among `n` candidates.

    One gold: H_n / n. With g golds the best rank R has P(R = r) = C(n-r, g-1) / C(n, g); a query with
    several translations is easier by chance, so the chance level must count them."""
    if n < 1 or not 1 <= n_gold <= n:
        raise ValueError(f"chance_mrr needs n >= 1 and 1 <= n_gold <= n, got n={n}, n_gold={n_gold}")
    r = np.arange(1, n - n_gold + 2)
    log_p = (gammaln(n - r + 1) - gammaln(n_gold) - gammaln(n - r - n_gold + 2)
             - (gammaln(n + 1) - gammaln(n_gold + 1) - gammaln(n - n_gold + 1)))
    return float(np.sum(np.exp(log_p) / r))


def _ranks(ranks) -> np.ndarray:
    ranks = np.asarray(ranks)
    if ranks.size == 0:
        raise ValueError("no ranks: a metric over zero queries is undefined")
    if np.any(ranks < 1):
        raise ValueError(f"ranks are 1-based; got minimum {ranks.min()}")
    return ranks


def mrr(ranks) -> float:
    """Mean reciprocal rank over queries."""
    return float(np.mean(1.0 / _ranks(ranks)))


def precision_at_k(ranks, k: int) -> float:
    """Fraction of queries whose best gold candidate is ranked within the top k."""
    return float(np.mean(_ranks(ranks) <= k))


def _normalize(x: torch.Tensor) -> torch.Tensor:
    """Unit rows; an all-zero row stays zero (cosine 0 with everything) instead of NaN."""
    norms = x.norm(dim=1, keepdim=True)
    return x / torch.where(norms > 0, norms, torch.ones_like(norms))


def _knn_mean(x: torch.Tensor, y: torch.Tensor, k: int, block: int) -> torch.Tensor:
    """For every row of x, the mean cosine of its k nearest rows of y (both unit-normalized), blockwise."""
    k = min(k, y.shape[0])
    out = torch.empty(x.shape[0], dtype=x.dtype)
    for i in range(0, x.shape[0], block):
        out[i : i + block] = (x[i : i + block] @ y.T).topk(k, dim=1).values.mean(dim=1)
    return out


def nn_ranks(queries, candidates, gold: list[set[int]], block: int = 1024, metric: str = "cosine",
             csls_k: int = 10) -> np.ndarray:
    """1-based rank of the best-ranked gold candidate of each query (tie rule: see module docstring).

    queries [Q, H], candidates [C, H]; gold[i] = indices into candidates of query i's translations
    (every query needs at least one). metric "cosine", or "csls" (Conneau et al. 2018, MUSE):
    CSLS(x, y) = 2 cos(x, y) - r_src(x) - r_tgt(y), where r_src(x) is the mean cosine of query x to its
    csls_k nearest candidates and r_tgt(y) the mean cosine of candidate y to its csls_k nearest queries
    (the query set stands for the source space). Scores are float64, computed `block` queries at a time.
    """
    if metric not in ("cosine", "csls"):
        raise ValueError(f"metric must be 'cosine' or 'csls', got {metric!r}")
    q = torch.as_tensor(np.asarray(queries, dtype=np.float64))
    c = torch.as_tensor(np.asarray(candidates, dtype=np.float64))
    if q.ndim != 2 or c.ndim != 2 or q.shape[1] != c.shape[1]:
        raise ValueError(f"queries {tuple(q.shape)} and candidates {tuple(c.shape)} must be 2-D with equal width")
    if len(gold) != q.shape[0]:
        raise ValueError(f"{len(gold)} gold sets for {q.shape[0]} queries")
    if c.shape[0] == 0:
        raise ValueError("no candidates")
    for i, g in enumerate(gold):
        if not g:
            raise ValueError(f"query {i} has no gold candidate")
        bad = [j for j in g if not 0 <= j < c.shape[0]]
        if bad:
            raise ValueError(f"query {i}: gold indices {bad[:5]} outside [0, {c.shape[0]})")
    q, c = _normalize(q), _normalize(c)
    if metric == "csls":
        r_src = _knn_mean(q, c, csls_k, block)
        r_tgt = _knn_mean(c, q, csls_k, block)
    # flat (row, column) index of every gold pair, to pick gold scores out of each block
    gold_rows = torch.tensor([i for i, g in enumerate(gold) for _ in g], dtype=torch.long)
    gold_cols = torch.tensor([j for g in gold for j in sorted(g)], dtype=torch.long)
    ranks = np.empty(q.shape[0], dtype=np.int64)
    for start in range(0, q.shape[0], block):
        stop = min(start + block, q.shape[0])
        scores = q[start:stop] @ c.T
        if metric == "csls":
            scores = 2 * scores - r_src[start:stop, None] - r_tgt[None, :]
        sel = (gold_rows >= start) & (gold_rows < stop)
        rows, cols = gold_rows[sel] - start, gold_cols[sel]
        best = torch.full((stop - start,), -torch.inf, dtype=scores.dtype)
        best.scatter_reduce_(0, rows, scores[rows, cols], reduce="amax")
        ranks[start:stop] = (1 + (scores > best[:, None]).sum(dim=1)).numpy()
    return ranks
