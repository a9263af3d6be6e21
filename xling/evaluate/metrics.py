"""Retrieval metrics: MRR, precision@k, chance level, and nearest-neighbour ranks in query blocks.

Ranks are computed in blocks of queries (as MUSE and vecmap do) so that memory is
O(block x candidates), never O(queries x candidates).

Ties are broken uniformly at random, in expectation: when a query's best gold scores the same as other
candidates, its reciprocal rank and its hit@k are their means over every order of the tied candidates.
Why this rule: a model whose vectors collapsed (all equal, or all zero) then scores exactly chance
(MRR = chance_mrr, P@k = chance P@k), whereas ties in the gold's favour would give it MRR 1 and ties
against it would push it below chance. The mean is taken of the reciprocal rank itself: the reciprocal
of the mean rank (1 + above + (tied - 1) / 2 with one gold) is smaller than the mean reciprocal rank and
would also score collapsed vectors below chance. Without ties every rule gives MUSE's numbers.

Scores closer than TIE_ULPS x dim float64 epsilons are tied: identical vectors get cosines that differ
in the last bits depending on their position in the matrix product, and no order below the rounding
error of the scores means anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

# Scores within TIE_ULPS * H * eps (dimension H, float64 eps) are tied. A dot product of unit vectors errs
# by at most about H * eps, normalising them adds about as much, a CSLS score (2 cos - r_tgt - r_src)
# adds up four such terms, and a comparison takes the difference of two scores: 2 x 2 x 4 = 16.
TIE_ULPS = 16


@dataclass(frozen=True)
class Ranks:
    """Where each query's best-scoring gold lands among the candidates: `above` candidates score higher,
    and `tied` candidates (the gold itself included) score the same, `tied_gold` of them golds."""

    above: np.ndarray
    tied: np.ndarray
    tied_gold: np.ndarray

    def __post_init__(self):
        arrays = [np.asarray(a, dtype=np.int64) for a in (self.above, self.tied, self.tied_gold)]
        for name, array in zip(("above", "tied", "tied_gold"), arrays):
            object.__setattr__(self, name, array)
        if arrays[0].size == 0:
            raise ValueError("no ranks: a metric over zero queries is undefined")
        if not arrays[0].shape == arrays[1].shape == arrays[2].shape or arrays[0].ndim != 1:
            raise ValueError(f"above, tied and tied_gold must be 1-D of one length, got shapes "
                             f"{[a.shape for a in arrays]}")
        if np.any(self.above < 0) or np.any(self.tied_gold < 1) or np.any(self.tied < self.tied_gold):
            raise ValueError("ranks need above >= 0 and tied >= tied_gold >= 1 (the best gold ties with itself)")


def expected_reciprocal_rank(ranks: Ranks) -> np.ndarray:
    """Per query, the mean of 1 / rank over uniformly random orders of its tied candidates.

    The best gold's rank is above + P, where P is the position of the first of the `tied_gold` golds
    among the `tied` candidates in random order: P - 1 non-golds come first, a negative hypergeometric
    count (scipy.stats.nhypergeom with r = 1)."""
    out = 1.0 / (ranks.above + 1.0)  # no non-gold tied with the best gold: rank above + 1
    tied = ranks.tied > ranks.tied_gold
    triples, index = np.unique(np.stack([ranks.above[tied], ranks.tied[tied], ranks.tied_gold[tied]], axis=1),
                               axis=0, return_inverse=True)
    values = np.empty(len(triples))
    if len(triples):  # scipy.stats only where ties are: a second of start-up per job
        from scipy.stats import nhypergeom
    for i, (above, n_tied, n_gold) in enumerate(triples):
        before = np.arange(n_tied - n_gold + 1)  # non-golds drawn before the first gold
        values[i] = np.sum(nhypergeom.pmf(before, n_tied, n_tied - n_gold, 1) / (above + 1 + before))
    out[tied] = values[index.reshape(-1)]
    return out


def expected_hit_at_k(ranks: Ranks, k: int) -> np.ndarray:
    """Per query, the probability that the best gold is within the top k under random tie-breaking:
    1 - P(no gold among the tied candidates that fall in the top k), a hypergeometric probability."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    in_top = np.clip(k - ranks.above, 0, ranks.tied)  # tied positions inside the top k
    out = (in_top > 0).astype(np.float64)  # exact without ties: a single gold at rank above + 1
    tied = ranks.tied > ranks.tied_gold
    if tied.any():
        from scipy.stats import hypergeom

        out[tied] = 1.0 - hypergeom.pmf(0, ranks.tied[tied], ranks.tied_gold[tied], in_top[tied])
    return out


def mrr(ranks: Ranks) -> float:
    """Mean reciprocal rank over queries (ties: see the module docstring)."""
    return float(np.mean(expected_reciprocal_rank(ranks)))


def precision_at_k(ranks: Ranks, k: int) -> float:
    """Share of queries whose best gold candidate is ranked within the top k (ties: module docstring)."""
    return float(np.mean(expected_hit_at_k(ranks, k)))


def chance_mrr(n: int, n_gold=1) -> float:
    """Expected reciprocal rank of the best of `n_gold` golds placed at random among `n` candidates;
    `n_gold` may be one count per query, and then the mean over queries is returned.

    One gold: H_n / n. A query with several translations is easier by chance, so the chance level must
    count them. It is exactly the MRR of collapsed vectors: every candidate tied with the golds."""
    n_gold = np.atleast_1d(np.asarray(n_gold, dtype=np.int64))
    if n < 1 or np.any(n_gold < 1) or np.any(n_gold > n):
        raise ValueError(f"chance_mrr needs n >= 1 and 1 <= n_gold <= n, got n={n}, n_gold={n_gold.tolist()}")
    return mrr(Ranks(np.zeros_like(n_gold), np.full_like(n_gold, n), n_gold))


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


def _matrix(name: str, x, width: int | None = None) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if t.ndim != 2 or t.shape[0] == 0 or (width is not None and t.shape[1] != width):
        raise ValueError(f"{name} must be a non-empty 2-D array" + (f" of width {width}" if width else "")
                         + f", got shape {tuple(t.shape)}")
    return t


def nn_ranks(queries, candidates, gold: list[set[int]], block: int = 1024, metric: str = "cosine",
             csls_k: int = 10, source_space=None, target_space=None) -> Ranks:
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
    tol = TIE_ULPS * q.shape[1] * torch.finfo(torch.float64).eps
    # flat (row, column) index of every gold pair, to pick gold scores out of each block
    gold_rows = torch.tensor([i for i, g in enumerate(gold) for _ in g], dtype=torch.long)
    gold_cols = torch.tensor([j for g in gold for j in sorted(g)], dtype=torch.long)
    above, tied, tied_gold = (np.empty(q.shape[0], dtype=np.int64) for _ in range(3))
    for start in range(0, q.shape[0], block):
        stop = min(start + block, q.shape[0])
        scores = q[start:stop] @ c.T
        if metric == "csls":
            scores = 2 * scores - r_tgt[start:stop, None] - r_src[None, :]
        sel = (gold_rows >= start) & (gold_rows < stop)
        rows, cols = gold_rows[sel] - start, gold_cols[sel]
        gold_scores = scores[rows, cols]
        best = torch.full((stop - start,), -torch.inf, dtype=scores.dtype)
        best.scatter_reduce_(0, rows, gold_scores, reduce="amax")
        n_above = (scores > best[:, None] + tol).sum(dim=1)
        above[start:stop] = n_above.numpy()
        tied[start:stop] = ((scores >= best[:, None] - tol).sum(dim=1) - n_above).numpy()
        at_best = (gold_scores >= best[rows] - tol).long()
        tied_gold[start:stop] = torch.zeros(stop - start, dtype=torch.long).scatter_add_(0, rows, at_best).numpy()
    return Ranks(above, tied, tied_gold)
