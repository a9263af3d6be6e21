"""The interval of a transfer number over fine-tuning seeds AND test items: the target is the recipe's expected
score (over the seeds it could be fine-tuned with) on the test population, not on the one test set drawn.

Why both: every seed is scored on the SAME test items, so the spread between seeds holds none of the test set's
sampling error (a t interval over three seeds that agree is near zero-width however few the items), while one
seed's item bootstrap holds none of the fine-tuning's. In a seeds x items layout the number's variance is
    Var(mean) = seed variance / k  +  item variance of the seed-averaged per-item score
where the seeds' spread holds the seed-by-item noise too, which the second term already has. Each term gets
its own 95 % half-width and the two add in quadrature, side by side (MOVER, Zou and Donner 2008):
    low  = m - sqrt(h_seeds^2 + (m - L_items)^2),   high = m + sqrt(h_seeds^2 + (U_items - m)^2).

From the per-item scores (`seeds_and_items_from_items`, the calibrated rule): h_seeds = t(0.975, k - 1)
sqrt((sd(seed means)^2 - noise) / k), the noise the seed-by-item mean square's share of a seed's mean
(`seed_by_item_variance`), and [L_items, U_items] the bootstrap of the statistic reported (mean over seeds and
languages) with the same resampled items for every seed, and for every language where they have as many items
(`bootstrap_seed_means`: XNLI's test sets are translations, so their errors go together; for independent
languages of equal size the shared draw gives the same variance), no narrower than the pooled share's
Clopper-Pearson interval (a few hits in all). At the study's sizes (3 seeds, 3 languages of 400 items,
tests/test_seed_interval_coverage.py) it covers 95-97 % where the seeds agree, disagree moderately or
strongly and at chance, 99-100 % next to 0 % and 100 % (the exact floor) and 100 % at them.

From the rows alone (`seeds_and_items`, the fallback where a run has no per-item files): h_seeds from the
whole spread and [L_items, U_items] the mean over seeds of each seed's row bounds, averaged over the languages:
the interval were the item errors perfectly correlated over seeds and languages, the widest case (the sd of a
mean is at most the mean of the sds). Conservative: it covers 98.5-100 % in every case there.

Why not the two-level bootstrap (uncertainty.bootstrap_seeds_and_groups, seeds and items resampled): with three
seeds a bootstrap over seeds has 10 distinct draws and a variance (k - 1) / k of the seeds', so it covers
76 % where the seeds disagree strongly; the t quantile with k - 1 degrees of freedom is what three values allow.
The t over seeds alone covers 72-93 % (100 % only where every item is right, or every one wrong).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats

from dataclasses import replace

from xling.evaluate.uncertainty import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    EXACT,
    Interval,
    Ratio,
    _as_ratio,
    _check,
    _exact_at_the_boundary,
    _grouped,
    _interval,
    _ratio_of_sums,
    resample_blocks,
)


class SeedsAndItems(NamedTuple):
    """The mean over seeds, its interval and what it rests on (seeds; items per seed)."""

    estimate: float
    low: float
    high: float
    n_seeds: int


def seeds_and_items(
    values: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    level: float = 0.95,
    limits: tuple[float, float] = (-math.inf, math.inf),
) -> SeedsAndItems:
    """The interval of the mean of `values` (one number per seed) from the seeds' spread and each seed's item
    interval [lows[s], highs[s]] (module docstring), clipped to the metric's `limits` (0-100 for a percent).
    The rows-only fallback: conservative (98.5-100 % at the study's sizes where about 95 % is due)."""
    values, lows, highs = (np.asarray(v, dtype=np.float64) for v in (values, lows, highs))
    if values.ndim != 1 or values.size < 2 or lows.shape != values.shape or highs.shape != values.shape:
        raise ValueError(
            f"need one value and item bounds per seed, at least two seeds: got {values.shape}, "
            f"{lows.shape}, {highs.shape}"
        )
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


def paired_seeds_and_items(
    a_values: Sequence[float], b_values: Sequence[float], items_low: float, items_high: float, level: float = 0.95
) -> SeedsAndItems:
    """The interval of mean(a_values) - mean(b_values), two systems' per-seed numbers on the SAME test items,
    from the seeds' spread (Welch's t: the two systems' fine-tunings are independent) and the paired item
    interval [items_low, items_high] of the seed-averaged difference (seed_means_difference, every
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
        freedom = spread**2 / (share_a**2 / (a.size - 1) + share_b**2 / (b.size - 1))
        seeds_half = float(stats.t.ppf(0.5 + level / 2, freedom) * math.sqrt(spread))
    else:
        seeds_half = 0.0
    # a percentile interval may leave its estimate out (a skewed resampling): no negative distance
    low = estimate - math.hypot(seeds_half, max(0.0, estimate - items_low))
    high = estimate + math.hypot(seeds_half, max(0.0, items_high - estimate))
    return SeedsAndItems(estimate, low, high, min(a.size, b.size))


def seed_by_item_variance(groups: Sequence[Sequence]) -> float:
    """The seed-by-item noise in one seed's mean over groups (its items' scores' disagreement between seeds that
    no seed effect explains): (1 / G^2) sum_g MS_g / n_g, MS_g the seed-by-item mean square of group g's items
    (a two-way layout's interaction, on the ratio's linearised per-item scores). groups[g][s] = seed s's per-item
    scores or Ratio on group g's items (the same items for every seed). Why: the seeds' spread holds it once and
    the item bootstrap of the seed-averaged score once more, so the unpaired rule takes it out of the former."""
    total = 0.0
    for by_seed in groups:
        deviations = []
        for scores in by_seed:
            top, bottom = (
                (np.asarray(scores.numerator, float), np.asarray(scores.denominator, float))
                if isinstance(scores, Ratio)
                else (np.asarray(scores, float), None)
            )
            bottom = np.ones_like(top) if bottom is None else bottom
            deviations.append((top - bottom * top.sum() / bottom.sum()) / bottom.mean())
        z = np.vstack(deviations)  # [seed, item]; each seed's row sums to 0
        k, n = z.shape
        if k < 2 or n < 2:
            raise ValueError(f"a seed-by-item variance needs two seeds and two items: got {k} x {n}")
        residual = z - z.mean(axis=0, keepdims=True)
        total += float(np.sum(residual**2)) / ((k - 1) * (n - 1)) / n
    return total / len(groups) ** 2


def seeds_and_items_from_items(
    values: Sequence[float],
    items_low: float,
    items_high: float,
    interaction: float,
    level: float = 0.95,
    limits: tuple[float, float] = (-math.inf, math.inf),
) -> SeedsAndItems:
    """The interval of the mean of `values` (one number per seed) from the seeds' spread less the seed-by-item
    noise `interaction` (seed_by_item_variance, in the values' unit squared), and the item bootstrap
    [items_low, items_high] of the seed-averaged score (uncertainty.bootstrap_seed_means: the same items for
    every seed, each language's items resampled within it), added in quadrature (module docstring)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size < 2 or not np.all(np.isfinite(values)):
        raise ValueError(f"need a finite value per seed, at least two seeds: got {values}")
    if items_low > items_high or interaction < 0:
        raise ValueError(
            f"the items' interval [{items_low}, {items_high}] is empty or the seed-by-item variance "
            f"{interaction} negative"
        )
    k = values.size
    mean = float(values.mean())
    between = max(0.0, float(values.var(ddof=1)) - interaction)
    seeds_half = float(stats.t.ppf(0.5 + level / 2, k - 1) * math.sqrt(between / k))
    low = max(limits[0], mean - math.hypot(seeds_half, max(0.0, mean - items_low)))
    high = min(limits[1], mean + math.hypot(seeds_half, max(0.0, items_high - mean)))
    return SeedsAndItems(mean, low, high, k)


def bootstrap_seed_means(
    groups: Sequence[Sequence],
    *,
    shared_items: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
    method: str = "percentile",
) -> Interval:
    """The items' interval of the mean over seeds of the mean over groups: groups[g][s] = seed s on group g's
    items, every seed drawing the same items in each resample (one test set; the seeds' own spread is not in it).
    shared_items: item i of every group is one item (translations of one test set), so every group draws the same
    items too (their errors go together); else each group's items are resampled within it."""
    systems = [[_as_ratio(by_seed[s]) for by_seed in groups] for s in range(len(groups[0]))]
    signs = (1 / len(systems),) * len(systems)
    if not shared_items:
        return _grouped(systems, signs, n_resamples, level, seed, method)
    sizes = {len(ratio.numerator) for groups_of in systems for ratio in groups_of}
    if len(sizes) != 1:
        raise ValueError(f"shared items need as many items in every group and seed: got sizes {sorted(sizes)}")
    n = sizes.pop()
    _check(n, n_resamples, level, method if method != "bca" else "percentile")
    replicates, start = np.zeros(n_resamples), 0
    for idx in resample_blocks(n, n_resamples, np.random.default_rng(seed)):
        replicates[start : start + len(idx)] = sum(
            sign * _ratio_of_sums(r.numerator[idx], r.denominator[idx])
            for sign, groups_of in zip(signs, systems, strict=True)
            for r in groups_of
        )
        start += len(idx)
    replicates /= len(groups)
    estimate = float(np.mean([[_ratio_of_sums(*r) for r in groups_of] for groups_of in systems]))
    interval = _interval(estimate, replicates, None, n * len(groups), n_resamples, level, seed, "percentile")
    exact = [_exact_at_the_boundary(groups_of, level) for groups_of in systems]
    if all(e is not None for e in exact):  # every seed at 0 or 1 on every item: their mean's exact interval
        return replace(
            interval,
            low=float(np.mean([e[0] for e in exact])),
            high=float(np.mean([e[1] for e in exact])),
            method=EXACT,
        )
    # a few hits (or misses) in all: the percentile bootstrap is too narrow there; no narrower than the exact
    # binomial interval of the pooled share on the languages' items (near the middle it is the narrower one)
    n *= len(groups)
    share = float(np.clip(estimate, 0.0, 1.0)) * n
    low = float(stats.beta.ppf((1 - level) / 2, share, n - share + 1)) if share > 0 else 0.0
    high = float(stats.beta.ppf((1 + level) / 2, share + 1, n - share)) if share < n else 1.0
    return replace(interval, low=min(interval.low, low), high=max(interval.high, high))


def seed_means_difference(
    a_groups: Sequence[Sequence],
    b_groups: Sequence[Sequence],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
    method: str = "percentile",
) -> Interval:
    """The items' interval of (mean over a's seeds) - (mean over b's seeds) of the mean over groups:
    a_groups[g][s] = seed s of system a on group g's items (per-item scores or a Ratio), every seed of both
    systems scored on the same items and drawing the same items in each resample (paired)."""
    systems = [[by_seed[s] for by_seed in groups] for groups in (a_groups, b_groups) for s in range(len(groups[0]))]
    k_a, k_b = len(a_groups[0]), len(b_groups[0])
    return _grouped(systems, (1 / k_a,) * k_a + (-1 / k_b,) * k_b, n_resamples, level, seed, method)
