"""How sure a number is: bootstrap intervals over test items or queries, paired differences, spread over seeds.

Why: a claim that one number beats another means nothing when the two differ by less than resampling the test
set moves them (several of the papers' effects are under one point). Every interval records its seed, its
number of resamples and its confidence level, so a table row can be recomputed exactly.

The statistics come in three shapes, all resampling the test's items (queries, examples, sentences) with
replacement, `n_resamples` times:
- a mean of per-item scores (accuracy, reciprocal rank, P@k hits, per-sentence correctness): `bootstrap_mean`;
- a ratio of sums over items (`Ratio`): micro F1 over spans or mined pairs is 2 sum(correct) /
  (sum(predicted) + sum(gold)) with one item per sentence; LAS or UPOS accuracy over words grouped by sentence
  is sum(correct words) / sum(words), so resampling sentences keeps a sentence's words together:
  `bootstrap_ratio`;
- anything else (a correlation over examples, a difference of two on the same items): `bootstrap_statistic`
  recomputes a callback on each resample of item indices. Not CKA: duplicated rows raise it, so its resampled
  values sit above the estimate; its interval is a jackknife (xling.evaluate.cka_intervals).
Several fine-tuning seeds on one test set: `bootstrap_seeds_and_items` resamples both (over several test
languages: `bootstrap_seeds_and_groups`); `seed_spread` gives
their mean, sd and count for the tables.
A finding's "mean over the language pairs" is `bootstrap_groups`: each pair's items resampled within the pair
(a stratified bootstrap), the statistic the mean over pairs of each pair's mean or ratio.
Means and ratios are vectorised (10k items x 1000 resamples in well under a second); the callback is a loop.
`paired_difference` (and `paired_groups_difference`) resamples the SAME items for two systems tested on one
test set, so their shared item difficulty cancels: its interval is much narrower than the two side by side.

Methods: "percentile" (the quantiles of the resampled statistic) and "bca" (bias-corrected and accelerated,
Efron and Tibshirani 1993, ch. 14), both exactly as scipy.stats.bootstrap computes them; the resampled index
matrix is drawn by numpy's default generator from `seed`, in blocks whose size depends only on the number of
items, so the same (seed, items, resamples) gives the same interval. Where every item is at 0 (every query a
miss, no entity found) or every one at 1 no resample differs and either method would give a zero-width [1, 1]:
those intervals are the exact binomial (Clopper-Pearson) ones on the effective number of items instead,
recorded as method "clopper-pearson" (34 hits in 34: [0.897, 1]; a ratio: Kish's effective number of items; a
mean over groups: Korn and Graubard's effective size). A paired difference with a side at 0 or 1 on every item
combines the two sides' intervals (MOVER, method "mover"): the paired bootstrap knows nothing of that side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, NamedTuple, Sequence

import numpy as np
from scipy.special import ndtr, ndtri

METHODS = ("percentile", "bca")
EXACT = "clopper-pearson"  # the method recorded where every item is at 0, or every one at 1 (_exact_at_the_boundary)
MOVER = "mover"  # a paired difference with a side at 0 or 1 on every item (_recovered_at_the_boundary)
DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0
_BLOCK_CELLS = 4_000_000  # resampled indices drawn at once (32 MB of int64)


@dataclass(frozen=True)
class Interval:
    """A statistic on the whole test set and its bootstrap interval, with how the interval was drawn."""

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    seed: int
    n_items: int
    method: str

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def columns(self, prefix: str = "") -> dict:
        """The table columns of this interval (prefix e.g. "mrr_" when a row holds several numbers)."""
        return {f"{prefix}ci_low": self.low, f"{prefix}ci_high": self.high, f"{prefix}ci_level": self.level,
                f"{prefix}ci_resamples": self.n_resamples, f"{prefix}ci_seed": self.seed,
                f"{prefix}ci_method": self.method, f"{prefix}n_items": self.n_items}

    def __str__(self) -> str:
        return f"{_fmt(self.estimate)} [{_fmt(self.low)}, {_fmt(self.high)}]"


@dataclass(frozen=True)
class SeedSpread:
    """Mean, sample standard deviation (ddof 1; NaN with one seed) and number of seeds of one setting."""

    mean: float
    sd: float
    n: int

    def columns(self, prefix: str = "") -> dict:
        return {f"{prefix}seed_mean": self.mean, f"{prefix}seed_sd": self.sd, f"{prefix}n_seeds": self.n}

    def __str__(self) -> str:
        return f"{_fmt(self.mean)} ± {_fmt(self.sd)} sd over {self.n} seeds" if self.n > 1 else \
            f"{_fmt(self.mean)} (one seed)"


class Ratio(NamedTuple):
    """Per-item numerators and denominators of a statistic sum(numerator) / sum(denominator)."""

    numerator: np.ndarray
    denominator: np.ndarray


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value != 0 and abs(value) < 0.01 else f"{value:.3f}"


def _check(n_items: int, n_resamples: int, level: float, method: str) -> None:
    if n_items < 1:
        raise ValueError("a bootstrap over zero items is undefined")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def resample_blocks(n_items: int, n_resamples: int, rng: np.random.Generator):
    """Yield index matrices [block, n_items] of items drawn with replacement, n_resamples rows in all."""
    block = max(1, _BLOCK_CELLS // n_items)
    for start in range(0, n_resamples, block):
        yield rng.integers(0, n_items, size=(min(block, n_resamples - start), n_items))


def _as_ratio(values) -> Ratio:
    """Per-item scores as a ratio (denominator 1: their mean), or a Ratio checked and converted to float."""
    if isinstance(values, Ratio):
        numerator = np.asarray(values.numerator, dtype=np.float64)
        denominator = np.asarray(values.denominator, dtype=np.float64)
    else:
        numerator = np.asarray(values, dtype=np.float64)
        denominator = np.ones_like(numerator)
    if numerator.ndim != 1 or numerator.shape != denominator.shape:
        raise ValueError(f"per-item scores must be 1-D of one length, got {numerator.shape}, {denominator.shape}")
    if numerator.size == 0:
        raise ValueError("a bootstrap over zero items is undefined")
    if not np.all(np.isfinite(numerator)) or not np.all(np.isfinite(denominator)):
        raise ValueError("per-item scores must be finite (leave unscored items out)")
    if denominator.sum() <= 0:
        raise ValueError("the denominator sums to zero over the test set: the statistic is undefined")
    return Ratio(numerator, denominator)


def _ratio_of_sums(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """sum / sum along the last axis; 0 where a resample's denominator is 0 (no unit scored: F1 0)."""
    top, bottom = numerator.sum(axis=-1), denominator.sum(axis=-1)
    return np.divide(top, bottom, out=np.zeros_like(top, dtype=np.float64), where=bottom != 0)


def _jackknife_ratio(ratio: Ratio) -> np.ndarray:
    """The ratio with each item left out in turn (closed form, no loop)."""
    top = ratio.numerator.sum() - ratio.numerator
    bottom = ratio.denominator.sum() - ratio.denominator
    return np.divide(top, bottom, out=np.zeros_like(top), where=bottom != 0)


def _acceleration(leave_one_out: list[np.ndarray]) -> float:
    """BCa's acceleration from the jackknife values of the statistic, one array per independently resampled
    group of items (scipy.stats.bootstrap's formula for several samples; Efron and Tibshirani eq. 14.15)."""
    skew = spread = 0.0
    for theta in leave_one_out:
        n = len(theta)
        u = (n - 1) * (theta.mean() - theta)
        skew += np.sum(u ** 3) / n ** 3
        spread += np.sum(u ** 2) / n ** 2
    return float(skew / (6 * spread ** 1.5)) if spread > 0 else 0.0


def _bounds(estimate: float, replicates: np.ndarray, level: float, method: str,
            jackknife: Callable[[], list[np.ndarray]]) -> tuple[float, float]:
    """Interval bounds from the resampled statistics, as scipy.stats.bootstrap computes them."""
    alpha = (1 - level) / 2
    if np.all(replicates == replicates[0]):  # every resample gives one value: no spread to speak of
        return float(replicates[0]), float(replicates[0])
    quantiles = (alpha, 1 - alpha)
    if method == "bca":
        share_below = (np.count_nonzero(replicates < estimate) + np.count_nonzero(replicates <= estimate)) / (
            2 * len(replicates))
        z0 = ndtri(share_below)
        acceleration = _acceleration(jackknife())
        z = ndtri(np.array(quantiles))
        quantiles = tuple(ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z))))
        if not np.all(np.isfinite(quantiles)):
            raise ValueError("BCa is undefined here (the estimate lies outside every resample); use percentile")
    low, high = np.quantile(replicates, quantiles)
    return float(low), float(high)


def _interval(estimate: float, replicates: np.ndarray, jackknife, n_items: int, n_resamples: int, level: float,
              seed: int, method: str) -> Interval:
    low, high = _bounds(estimate, replicates, level, method, jackknife)
    return Interval(float(estimate), low, high, float(level), int(n_resamples), int(seed), int(n_items), method)


def _grouped(systems: list[list], signs: tuple[float, ...], n_resamples: int, level: float, seed: int,
             method: str) -> Interval:
    """Interval of sum_s signs[s] * (mean over groups of system s's ratio in that group), the items of each group
    resampled within it, and every system drawing the same items (paired)."""
    systems = [[_as_ratio(group) for group in groups] for groups in systems]
    sizes = [len(group.numerator) for group in systems[0]]
    if not sizes:
        raise ValueError("a bootstrap over zero groups is undefined")
    for groups in systems[1:]:
        if [len(group.numerator) for group in groups] != sizes:
            raise ValueError(f"a paired difference needs the same items: groups of {sizes} against "
                             f"{[len(group.numerator) for group in groups]}")
    _check(min(sizes), n_resamples, level, method)
    rng = np.random.default_rng(seed)
    replicates = np.zeros(n_resamples)
    for g, n in enumerate(sizes):
        start = 0
        for idx in resample_blocks(n, n_resamples, rng):
            for sign, groups in zip(signs, systems, strict=True):
                ratio = groups[g]
                replicates[start : start + len(idx)] += sign * _ratio_of_sums(ratio.numerator[idx],
                                                                              ratio.denominator[idx])
            start += len(idx)
    replicates /= len(sizes)
    by_group = np.array([[_ratio_of_sums(*ratio) for ratio in groups] for groups in systems])  # [systems, groups]
    estimate = float(np.dot(signs, by_group.mean(axis=1)))

    def jackknife() -> list[np.ndarray]:
        """Per group, the statistic with each of its items left out (the other groups unchanged)."""
        return [estimate + sum(sign * (_jackknife_ratio(groups[g]) - by_group[s, g])
                               for s, (sign, groups) in enumerate(zip(signs, systems, strict=True))) / len(sizes)
                for g in range(len(sizes))]

    interval = _interval(estimate, replicates, jackknife, sum(sizes), n_resamples, level, seed, method)
    if len(systems) > 1:
        return _recovered_at_the_boundary(interval, systems, signs, n_resamples, level, seed, method)
    exact = _exact_at_the_boundary(systems[0], level)
    return interval if exact is None else replace(interval, low=exact[0], high=exact[1], method=EXACT)


def _recovered_at_the_boundary(paired: Interval, systems: list[list[Ratio]], signs: tuple[float, ...],
                               n_resamples: int, level: float, seed: int, method: str) -> Interval:
    """The paired interval of sum_s signs[s] * system s, unless a system is at 0 or 1 on every item: then the
    paired bootstrap has nothing of that side's uncertainty (both sides there: a zero-width [1, 1] for 40/40
    against 0/40), and the interval is the MOVER one (Zou and Donner 2008's method of variance estimates
    recovery; Newcombe 1998's hybrid for paired proportions is the same with score intervals) from each side's
    own interval: its exact one at the boundary (`_exact_at_the_boundary`), else its bootstrap on the same
    resamples. d - sqrt(sum of the squared distances to the bounds below d), d + the same above, with the
    sides' correlation taken as 0, as Newcombe does where a margin is empty: where one side does not vary, the
    items cannot estimate it."""
    if all(_exact_at_the_boundary(groups, level) is None for groups in systems):
        return paired
    sides = [_grouped([groups], (1.0,), n_resamples, level, seed, method) for groups in systems]
    below = above = 0.0
    for sign, side in zip(signs, sides, strict=True):
        down, up = abs(sign) * (side.estimate - side.low), abs(sign) * (side.high - side.estimate)
        below, above = (below + down ** 2, above + up ** 2) if sign > 0 else (below + up ** 2, above + down ** 2)
    return replace(paired, low=paired.estimate - math.sqrt(below), high=paired.estimate + math.sqrt(above),
                   method=MOVER)


def _effective_items(ratio: Ratio) -> float:
    """Kish's effective number of items (sum d)^2 / sum d^2 of a ratio's denominators d (items with d = 0 carry
    nothing): the number of independent 0/1 trials whose proportion has the ratio's variance when each item's
    units all share one outcome (the most clustered case); the item count for per-item scores (d = 1)."""
    weights = ratio.denominator[ratio.denominator > 0]
    return float(weights.sum() ** 2 / np.sum(weights ** 2))


def _boundary_share(ratio: Ratio) -> float | None:
    """0 or 1 where a ratio of per-item proportions (0 <= numerator <= denominator) is at that end on every item
    (no resample can differ); None otherwise, and for any ratio that is not a proportion (a rate above 1)."""
    top, bottom = ratio.numerator, ratio.denominator
    if np.any(top < 0) or np.any(top > bottom):
        return None
    if np.all(top == 0):
        return 0.0
    return 1.0 if np.all(top == bottom) else None


def _exact_at_the_boundary(groups: list[Ratio], level: float) -> tuple[float, float] | None:
    """Clopper-Pearson bounds where every group's items are all at 0 or all at 1 (every query a miss, no NER
    entity found, every token converted): there no resample differs, and the bootstrap's [1, 1] ([0, 0]) would
    claim a certainty the items do not give. One group: the exact binomial interval of its share on its
    effective number of items n (`_effective_items`; the item count for 0/1 scores, [(alpha/2)^(1/n), 1] at 1).
    Why the items and not the pooled units (a sentence's words, entities, tokens): at the boundary the data
    cannot tell how strongly an item's units go together, and the item is what the bootstrap resamples; and
    the binomial is the least favourable case for any per-item score in [0, 1] (P(score = 0) <= 1 - mean), so
    the bound holds for per-item F1 and convert rates too, not only for 0/1 hits. Several groups, their
    statistic the mean of the groups' shares: the same with the effective size n = G^2 / sum(1/n_g), under
    which that mean has a binomial proportion's variance (Korn and Graubard 1998's Clopper-Pearson with an
    effective size), so small groups widen it. None for any other items."""
    from scipy.stats import beta

    shares = [_boundary_share(ratio) for ratio in groups]
    if any(share is None for share in shares):
        return None
    n = len(groups) ** 2 / sum(1 / _effective_items(ratio) for ratio in groups)
    k = float(np.mean(shares)) * n
    alpha = (1 - level) / 2
    low = float(beta.ppf(alpha, k, n - k + 1)) if k > 0 else 0.0
    high = float(beta.ppf(1 - alpha, k + 1, n - k)) if k < n else 1.0
    return low, high


def bootstrap_groups(groups: Sequence, *, n_resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                     seed: int = DEFAULT_SEED, method: str = "percentile") -> Interval:
    """Interval of the mean over groups (language pairs, test languages) of each group's statistic (per-item
    scores: their mean; a Ratio: its ratio of sums), the items resampled within their own group: the
    findings' "mean over the pairs" with each pair's test set resampled (a stratified bootstrap)."""
    return _grouped([list(groups)], (1.0,), n_resamples, level, seed, method)


def bootstrap_ratio(ratio: Ratio, *, n_resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                    seed: int = DEFAULT_SEED, method: str = "percentile") -> Interval:
    """Interval of sum(numerator) / sum(denominator) over resampled items (F1, LAS by sentence, ...)."""
    return bootstrap_groups([ratio], n_resamples=n_resamples, level=level, seed=seed, method=method)


def bootstrap_mean(scores: Sequence[float] | np.ndarray, *, n_resamples: int = DEFAULT_RESAMPLES,
                   level: float = DEFAULT_LEVEL, seed: int = DEFAULT_SEED, method: str = "percentile") -> Interval:
    """Interval of the mean of per-item scores (accuracy from 0/1 hits, MRR from reciprocal ranks, ...)."""
    return bootstrap_groups([scores], n_resamples=n_resamples, level=level, seed=seed, method=method)


def paired_groups_difference(a_groups: Sequence, b_groups: Sequence, *, n_resamples: int = DEFAULT_RESAMPLES,
                             level: float = DEFAULT_LEVEL, seed: int = DEFAULT_SEED,
                             method: str = "percentile") -> Interval:
    """Interval of bootstrap_groups(a) - bootstrap_groups(b) for two systems scored on the same items of the
    same groups, each resample drawing the same items for both."""
    if len(a_groups) != len(b_groups):
        raise ValueError(f"a paired difference needs the same groups: {len(a_groups)} against {len(b_groups)}")
    return _grouped([list(a_groups), list(b_groups)], (1.0, -1.0), n_resamples, level, seed, method)


def paired_difference(a, b, *, n_resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                      seed: int = DEFAULT_SEED, method: str = "percentile") -> Interval:
    """Interval of statistic(a) - statistic(b) for two systems scored on the same items, each resample
    drawing the same items for both. a, b: per-item scores (their mean) or a Ratio each."""
    return paired_groups_difference([a], [b], n_resamples=n_resamples, level=level, seed=seed, method=method)


def bootstrap_statistic(statistic: Callable[[np.ndarray], float], n_items: int, *,
                        n_resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL, seed: int = DEFAULT_SEED,
                        method: str = "percentile") -> Interval:
    """Interval of any statistic of the items: `statistic(indices)` computes it on the items at `indices` (an
    int array of length n_items, with repeats); it is called once on every item in order, then once per
    resample, and (BCa) once per item left out. A statistic of two systems on the same items (the difference
    of two correlations) gives a paired interval."""
    _check(n_items, n_resamples, level, method)
    estimate = float(statistic(np.arange(n_items)))
    replicates = np.array([float(statistic(row)) for idx in resample_blocks(n_items, n_resamples,
                                                                            np.random.default_rng(seed))
                           for row in idx])
    if not np.all(np.isfinite(replicates)):
        raise ValueError("the statistic is not finite on some resample (too few items for it?)")

    def jackknife() -> list[np.ndarray]:
        everything = np.arange(n_items)
        return [np.array([float(statistic(np.delete(everything, i))) for i in range(n_items)])]

    return _interval(estimate, replicates, jackknife, n_items, n_resamples, level, seed, method)


def bootstrap_seeds_and_groups(groups: Sequence[Sequence], *, n_resamples: int = DEFAULT_RESAMPLES,
                               level: float = DEFAULT_LEVEL, seed: int = DEFAULT_SEED) -> Interval:
    """Interval of the mean over groups (test languages) of the mean over seeds of each seed's statistic in
    the group: groups[g][s] = per-item scores or a Ratio of seed s on group g's items (the same items for
    every seed, the same seeds in every group). Each resample draws every group's items once for all seeds
    (one test set) and the seeds with replacement once for all groups (a seed is one fine-tuned model, tested
    on every language). Why both levels: the spread over fine-tuning seeds is often larger than the test
    set's, and an item bootstrap of one seed hides it. Percentile method (BCa's jackknife is not defined
    over two levels)."""
    groups = [[_as_ratio(scores) for scores in by_seed] for by_seed in groups]
    if not groups or not groups[0]:
        raise ValueError("a bootstrap over zero groups or zero seeds is undefined")
    n_seeds = len(groups[0])
    for by_seed in groups:
        sizes = [len(r.numerator) for r in by_seed]
        if len(by_seed) != n_seeds or len(set(sizes)) != 1:
            raise ValueError(f"every seed must score the same items of every group: {n_seeds} seeds, sizes {sizes}")
    _check(min(len(by_seed[0].numerator) for by_seed in groups), n_resamples, level, "percentile")
    rng = np.random.default_rng(seed)
    per_seed = np.zeros((n_resamples, n_seeds))  # summed over groups
    for by_seed in groups:
        start = 0
        for idx in resample_blocks(len(by_seed[0].numerator), n_resamples, rng):
            for j, ratio in enumerate(by_seed):
                per_seed[start : start + len(idx), j] += _ratio_of_sums(ratio.numerator[idx], ratio.denominator[idx])
            start += len(idx)
    drawn = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))
    replicates = np.take_along_axis(per_seed, drawn, axis=1).mean(axis=1) / len(groups)
    estimate = float(np.mean([[_ratio_of_sums(*ratio) for ratio in by_seed] for by_seed in groups]))
    n_items = sum(len(by_seed[0].numerator) for by_seed in groups)
    return _interval(estimate, replicates, None, n_items, n_resamples, level, seed, "percentile")


def bootstrap_seeds_and_items(scores_by_seed: Sequence, *, n_resamples: int = DEFAULT_RESAMPLES,
                              level: float = DEFAULT_LEVEL, seed: int = DEFAULT_SEED) -> Interval:
    """Interval of the mean over seeds of each seed's statistic on one test set (per-item scores or a Ratio
    per seed, the same items in the same order), seeds and items both resampled (bootstrap_seeds_and_groups
    with one group)."""
    return bootstrap_seeds_and_groups([scores_by_seed], n_resamples=n_resamples, level=level, seed=seed)


def seed_spread(values: Sequence[float]) -> SeedSpread:
    """Mean, sd and count of one setting's numbers over its seeds (NaN left out: a seed that did not run)."""
    values = np.asarray([v for v in values if not (v is None or math.isnan(v))], dtype=np.float64)
    if values.size == 0:
        raise ValueError("a spread over zero seeds is undefined")
    sd = float(values.std(ddof=1)) if values.size > 1 else math.nan
    return SeedSpread(float(values.mean()), sd, int(values.size))
