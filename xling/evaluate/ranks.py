"""Rank arithmetic of retrieval: where each query's gold lands (`Ranks`), MRR, precision@k and their chance levels.

Ties are broken uniformly at random, in expectation: when a query's best gold scores the same as other
candidates, its reciprocal rank and its hit@k are their means over every order of the tied candidates.
Why this rule: a model whose vectors collapsed (all equal, or all zero) then scores exactly chance
(MRR = chance_mrr, P@k = chance P@k), whereas ties in the gold's favour would give it MRR 1 and ties
against it would push it below chance. The mean is taken of the reciprocal rank itself: the reciprocal
of the mean rank (1 + above + (tied - 1) / 2 with one gold) is smaller than the mean reciprocal rank and
would also score collapsed vectors below chance. Without ties every rule gives MUSE's numbers.

NumPy only (SciPy where ties are): the chance levels (xling.evaluate.chance), which transfer scoring imports,
do not depend on the nearest-neighbour search (xling.evaluate.metrics), so an edit of that search reruns
retrieval and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranks:
    """Where each query's best-scoring gold lands among the candidates: `above` candidates score higher,
    and `tied` candidates (the gold itself included) score the same, `tied_gold` of them golds."""

    above: np.ndarray
    tied: np.ndarray
    tied_gold: np.ndarray

    def __post_init__(self):
        arrays = [np.asarray(a, dtype=np.int64) for a in (self.above, self.tied, self.tied_gold)]
        for name, array in zip(("above", "tied", "tied_gold"), arrays, strict=True):
            object.__setattr__(self, name, array)
        if arrays[0].size == 0:
            raise ValueError("no ranks: a metric over zero queries is undefined")
        if not arrays[0].shape == arrays[1].shape == arrays[2].shape or arrays[0].ndim != 1:
            raise ValueError(
                f"above, tied and tied_gold must be 1-D of one length, got shapes {[a.shape for a in arrays]}"
            )
        if np.any(self.above < 0) or np.any(self.tied_gold < 1) or np.any(self.tied < self.tied_gold):
            raise ValueError("ranks need above >= 0 and tied >= tied_gold >= 1 (the best gold ties with itself)")


def expected_reciprocal_rank(ranks: Ranks) -> np.ndarray:
    """Per query, the mean of 1 / rank over uniformly random orders of its tied candidates.

    The best gold's rank is above + P, where P is the position of the first of the `tied_gold` golds
    among the `tied` candidates in random order: P - 1 non-golds come first, a negative hypergeometric
    count (scipy.stats.nhypergeom with r = 1)."""
    out = 1.0 / (ranks.above + 1.0)  # no non-gold tied with the best gold: rank above + 1
    tied = ranks.tied > ranks.tied_gold
    triples, index = np.unique(
        np.stack([ranks.above[tied], ranks.tied[tied], ranks.tied_gold[tied]], axis=1), axis=0, return_inverse=True
    )
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
