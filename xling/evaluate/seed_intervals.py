"""The interval of a transfer number over fine-tuning seeds AND test items: the target is the recipe's expected
score (over the seeds it could be fine-tuned with) on the test population, not on the one test set drawn.

Why both: every seed is scored on the SAME test items, so the spread between seeds holds none of the test set's
sampling error (a t interval over three seeds that agree is near zero-width however few the items), while one
seed's item bootstrap holds none of the fine-tuning's. The number's variance is the sum of the two:
    Var(mean) = between-seed variance / k  +  item variance of the seed-averaged per-item score
(the seed-by-item noise is in both terms, so the sum counts it twice: a little wide, never narrow). Each term
gets its own 95 % half-width and the two add in quadrature, side by side (MOVER, Zou and Donner 2008):
    low  = m - sqrt(h_seeds^2 + (m - L_items)^2),   high = m + sqrt(h_seeds^2 + (U_items - m)^2)
with h_seeds = t(0.975, k - 1) sd(seed means) / sqrt(k) and [L_items, U_items] the mean over seeds of each
seed's item interval (the gather's bootstrap bounds, Clopper-Pearson at 0 % and 100 %). The mean of the seeds'
bounds is the interval of the seed-averaged score were the seeds' item errors perfectly correlated, the widest
case (the sd of a mean is at most the mean of the sds), so it needs no per-item table in the findings.

Why not the two-level bootstrap (uncertainty.bootstrap_seeds_and_groups, seeds and items resampled): with three
seeds a bootstrap over seeds has 10 distinct draws and a variance (k - 1) / k of the seeds', so it covers
76 % where the seeds disagree strongly; the t quantile with k - 1 degrees of freedom is what three values allow.
tests/test_seed_interval_coverage.py measures them side by side at the study preset's sizes (3 seeds, 3 languages
of 400 items): this interval covers 96-100 % in every case there (seeds agreeing, disagreeing, at chance, at and
next to 0 % and 100 %; the widest-case item part makes it conservative), the t over seeds alone 72-93 % (100 %
only where every item is right, or every one wrong).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats


class SeedsAndItems(NamedTuple):
    """The mean over seeds, its interval and what it rests on (seeds; items per seed)."""

    estimate: float
    low: float
    high: float
    n_seeds: int


def seeds_and_items(values: Sequence[float], lows: Sequence[float], highs: Sequence[float], level: float = 0.95,
                    limits: tuple[float, float] = (-math.inf, math.inf)) -> SeedsAndItems:
    """The interval of the mean of `values` (one number per seed) from the seeds' spread and each seed's item
    interval [lows[s], highs[s]] (module docstring), clipped to the metric's `limits` (0-100 for a percent)."""
    values, lows, highs = (np.asarray(v, dtype=np.float64) for v in (values, lows, highs))
    if values.ndim != 1 or values.size < 2 or lows.shape != values.shape or highs.shape != values.shape:
        raise ValueError(f"need one value and item bounds per seed, at least two seeds: got {values.shape}, "
                         f"{lows.shape}, {highs.shape}")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(lows)) and np.all(np.isfinite(highs))):
        raise ValueError("seed values and their item bounds must be finite")
    if np.any(lows > values) or np.any(highs < values):
        raise ValueError(f"each seed's item interval must contain its value: {lows} <= {values} <= {highs}")
    k = values.size
    mean = float(values.mean())
    seeds_half = float(stats.t.ppf(0.5 + level / 2, k - 1) * values.std(ddof=1) / math.sqrt(k))
    below, above = float(np.mean(values - lows)), float(np.mean(highs - values))
    low = max(limits[0], mean - math.hypot(seeds_half, below))
    high = min(limits[1], mean + math.hypot(seeds_half, above))
    return SeedsAndItems(mean, low, high, k)


def paired_seeds_and_items(a_values: Sequence[float], b_values: Sequence[float], items_low: float,
                           items_high: float, level: float = 0.95) -> SeedsAndItems:
    """The interval of mean(a_values) - mean(b_values), two systems' per-seed numbers on the SAME test items,
    from the seeds' spread (Welch's t: the two systems' fine-tunings are independent) and the paired item
    interval [items_low, items_high] of the seed-averaged difference (uncertainty.seed_means_difference, every
    seed of both drawing the same items, so the items' shared difficulty cancels), added in quadrature as in
    `seeds_and_items`. Why paired: the difference of two intervals over seeds and items counts each test set's
    error twice where it cancels (tests/test_seed_interval_coverage.py: a 5-point gain at the study's sizes is
    resolved by neither that nor the t over seeds alone, but is by this)."""
    a, b = (np.asarray(v, dtype=np.float64) for v in (a_values, b_values))
    if a.ndim != 1 or b.ndim != 1 or a.size < 2 or b.size < 2:
        raise ValueError(f"need at least two seeds of each system: got {a.shape}, {b.shape}")
    estimate = float(a.mean() - b.mean())
    if items_low > items_high:
        raise ValueError(f"the items' interval [{items_low}, {items_high}] is empty")
    share_a, share_b = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    spread = share_a + share_b
    if spread > 0:  # Welch-Satterthwaite degrees of freedom
        freedom = spread ** 2 / (share_a ** 2 / (a.size - 1) + share_b ** 2 / (b.size - 1))
        seeds_half = float(stats.t.ppf(0.5 + level / 2, freedom) * math.sqrt(spread))
    else:
        seeds_half = 0.0
    # a percentile interval may leave its estimate out (a skewed resampling): no negative distance
    low = estimate - math.hypot(seeds_half, max(0.0, estimate - items_low))
    high = estimate + math.hypot(seeds_half, max(0.0, items_high - estimate))
    return SeedsAndItems(estimate, low, high, min(a.size, b.size))
