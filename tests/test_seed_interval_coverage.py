"""The interval over fine-tuning seeds and test items (xling.evaluate.seed_intervals) covers the recipe's expected
score on the test population at the study preset's sizes (3 seeds, 3 test languages of 400 XNLI pairs that are
translations of one another), by seeded simulation: >= 90 % at nominal 95 % where the seeds agree, where they
disagree strongly, at chance, and at and next to 0 % and 100 %. Beside it, the t interval over the seeds' means
alone (the findings' rule before) covers far less where the seeds agree: it has none of the test set's error.

The world: item i of the test population has a difficulty u_i ~ N(0, 1), shared by every seed and language
(translations); seed s's fine-tuning an offset a_s ~ N(0, sigma^2), shared by every language (one model);
seed s gets item i of language l right when sqrt(rho) u_i + sqrt(1 - rho) e_sli < probit(p_l) + a_s. The target,
the expected accuracy over seeds and items, is mean_l Phi(probit(p_l) / sqrt(1 + sigma^2)) (a normal's
convolution), in percent. Each row's item interval is what the gather computes from its 0/1 items: the percentile
bootstrap of their mean (which for 0/1 items is the quantiles of Binomial(n, share) / n: `_row_bounds`, checked
against uncertainty.bootstrap_mean below), Clopper-Pearson where every item is 0 or every one 1."""

import numpy as np
import pytest
from scipy import stats

from xling.evaluate.seed_intervals import (
    bootstrap_seed_means,
    paired_seeds_and_items,
    seed_by_item_variance,
    seed_means_difference,
    seeds_and_items,
    seeds_and_items_from_items,
)
from xling.evaluate.uncertainty import bootstrap_mean, bootstrap_seeds_and_groups, paired_groups_difference

SEEDS, ITEMS, RESAMPLES = 3, 400, 1000
SHIFTS = (-0.1, 0.0, 0.1)  # the languages' offsets on the probit scale (about 4 points apart at 60 %)
RHO = 0.7  # how much of an item's outcome its difficulty decides: seeds and languages agree on the hard items


def _row_bounds(hits: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The gather's 95 % interval of one row's 0/1 items, in percent (module docstring)."""
    n, k = hits.size, int(hits.sum())
    if k in (0, n):
        low = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
        high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
        return 100 * float(low), 100 * float(high)
    draws = rng.binomial(n, k / n, size=RESAMPLES) / n
    low, high = np.quantile(draws, (0.025, 0.975))
    return 100 * float(low), 100 * float(high)


def _world(
    p: float, sigma: float, rng: np.random.Generator, difficulty: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """hits[seed, language, item] of one test set (`difficulty`: its items', else drawn) and fine-tuning draw,
    and the target (percent)."""
    probits = [stats.norm.ppf(p) + shift if 0 < p < 1 else (np.inf if p == 1 else -np.inf) for shift in SHIFTS]
    difficulty = rng.normal(size=ITEMS) if difficulty is None else difficulty
    offsets = rng.normal(scale=sigma, size=SEEDS)
    noise = rng.normal(size=(SEEDS, len(SHIFTS), ITEMS))
    z = np.sqrt(RHO) * difficulty + np.sqrt(1 - RHO) * noise
    hits = (z < np.asarray(probits)[None, :, None] + offsets[:, None, None]).astype(np.float64)
    target = 100 * float(np.mean([stats.norm.cdf(q / np.sqrt(1 + sigma**2)) for q in probits]))
    return hits, target


def _from_items(hits: np.ndarray, rng: np.random.Generator):
    """The interval over seeds and items of one model's hits as the findings compute it from the per-item files:
    the same items for every seed and language (the test sets are translations), the seeds' spread less the
    seed-by-item noise."""
    groups = [list(hits[:, lang]) for lang in range(len(SHIFTS))]
    items = bootstrap_seed_means(groups, shared_items=True, n_resamples=RESAMPLES, seed=int(rng.integers(1 << 31)))
    values = 100 * hits.mean(axis=2).mean(axis=1)
    return seeds_and_items_from_items(
        values, 100 * items.low, 100 * items.high, 1e4 * seed_by_item_variance(groups), limits=(0.0, 100.0)
    )


def _seeds_and_items(hits: np.ndarray, rng: np.random.Generator):
    """The rows-only interval over seeds and items of one model's hits (from the gathered rows' bounds)."""
    values = 100 * hits.mean(axis=2).mean(axis=1)  # each seed's mean over the languages
    bounds = np.array([[_row_bounds(hits[s, lang], rng) for lang in range(len(SHIFTS))] for s in range(SEEDS)])
    return seeds_and_items(values, bounds[:, :, 0].mean(axis=1), bounds[:, :, 1].mean(axis=1), limits=(0.0, 100.0))


def _t_over_seeds(hits: np.ndarray) -> tuple[float, float]:
    values = 100 * hits.mean(axis=2).mean(axis=1)
    half = stats.t.ppf(0.975, SEEDS - 1) * values.std(ddof=1) / np.sqrt(SEEDS)
    return values.mean() - half, values.mean() + half


def _coverage(p: float, sigma: float, replicates: int, two_level: bool = False) -> dict[str, float]:
    """Shares of replicates whose 95 % interval covers the target: ours, the t over seeds alone and (two_level)
    the two-level bootstrap of seeds and items."""
    rng = np.random.default_rng(34)
    covered = {"from items": 0, "seeds and items": 0, "t over seeds": 0, "two-level bootstrap": 0}
    for _ in range(replicates):
        hits, target = _world(p, sigma, rng)
        calibrated = _from_items(hits, rng)
        covered["from items"] += calibrated.low <= target <= calibrated.high
        ours = _seeds_and_items(hits, rng)
        covered["seeds and items"] += ours.low <= target <= ours.high
        low, high = _t_over_seeds(hits)
        covered["t over seeds"] += low <= target <= high
        if two_level:
            found = bootstrap_seeds_and_groups(
                [list(hits[:, lang]) for lang in range(len(SHIFTS))],
                n_resamples=RESAMPLES,
                seed=int(rng.integers(1 << 31)),
            )
            covered["two-level bootstrap"] += found.low <= target / 100 <= found.high
    return {name: count / replicates for name, count in covered.items()}


def test_row_bounds_are_the_gathers_bootstrap():
    rng = np.random.default_rng(1)
    for share in (0.05, 0.6, 0.99):
        hits = (rng.random(ITEMS) < share).astype(float)
        found = bootstrap_mean(hits, n_resamples=RESAMPLES, seed=3)
        low, high = _row_bounds(hits, rng)
        assert low == pytest.approx(100 * found.low, abs=0.6) and high == pytest.approx(100 * found.high, abs=0.6)
    for every in (np.zeros(ITEMS), np.ones(ITEMS)):
        found = bootstrap_mean(every, n_resamples=RESAMPLES)
        assert _row_bounds(every, rng) == (pytest.approx(100 * found.low), pytest.approx(100 * found.high))


# (expected accuracy p before the seeds' offsets, the seeds' spread on the probit scale): the seeds agree (about
# 0.4 points apart at 60 %), disagree moderately (2 points) and strongly (8 points), XNLI at chance, and next to
# and at the boundaries
CASES = {
    "seeds agree": (0.6, 0.01),
    "seeds moderate": (0.6, 0.05),
    "seeds disagree strongly": (0.6, 0.2),
    "at chance": (1 / 3, 0.02),
    "near 100 %": (0.997, 0.05),
    "near 0 %": (0.003, 0.05),
    "at 100 %": (1.0, 0.05),
    "at 0 %": (0.0, 0.05),
}


@pytest.mark.parametrize("case", CASES)
def test_the_interval_over_seeds_and_items_covers(case):
    p, sigma = CASES[case]
    found = _coverage(p, sigma, replicates=300)
    assert found["seeds and items"] >= 0.90, found  # the rows-only rule: conservative (98.5-100 %)
    assert found["from items"] >= 0.93, found
    if not case.startswith(("near", "at 0", "at 100")):  # calibrated: about 95 %, where the rows-only rule is not
        assert found["from items"] <= 0.98, found
        assert case == "seeds disagree strongly" or found["seeds and items"] > 0.98, found
    if case == "seeds agree":  # the old rule: the test set's error is missing
        assert found["t over seeds"] < 0.75, found


@pytest.mark.slow
def test_the_two_level_bootstrap_undercovers_with_three_seeds_that_disagree():
    """Why the seeds get a t quantile and not a bootstrap (seed_intervals' docstring)."""
    found = _coverage(0.6, 0.2, replicates=150, two_level=True)
    assert found["two-level bootstrap"] < 0.9 <= found["seeds and items"], found


def _paired(a: np.ndarray, b: np.ndarray, rng: np.random.Generator):
    """The paired interval over seeds and items of a - b (percent), from the two systems' per-item hits."""
    items = seed_means_difference(
        [list(a[:, lang]) for lang in range(len(SHIFTS))],
        [list(b[:, lang]) for lang in range(len(SHIFTS))],
        n_resamples=RESAMPLES,
        seed=int(rng.integers(1 << 31)),
    )
    values = [100 * hits.mean(axis=2).mean(axis=1) for hits in (a, b)]
    return paired_seeds_and_items(*values, 100 * items.low, 100 * items.high)


def _paired_coverage(p_a: float, p_b: float, sigma: float, replicates: int) -> dict[str, float]:
    """Coverage of the difference of the targets and share of replicates whose interval lies above 0 (a gain
    resolved): the paired interval over seeds and items, and the difference of the two unpaired intervals."""
    rng = np.random.default_rng(36)
    found = {"paired covers": 0, "paired resolves": 0, "unpaired covers": 0, "unpaired resolves": 0}
    for _ in range(replicates):
        difficulty = rng.normal(size=ITEMS)
        (a, target_a), (b, target_b) = (_world(p, sigma, rng, difficulty) for p in (p_a, p_b))
        truth = target_a - target_b
        paired = _paired(a, b, rng)
        found["paired covers"] += paired.low <= truth <= paired.high
        found["paired resolves"] += paired.low > 0
        ours_a, ours_b = _seeds_and_items(a, rng), _seeds_and_items(b, rng)
        found["unpaired covers"] += ours_a.low - ours_b.high <= truth <= ours_a.high - ours_b.low
        found["unpaired resolves"] += ours_a.low - ours_b.high > 0
    return {name: count / replicates for name, count in found.items()}


@pytest.mark.slow
def test_a_paired_difference_over_seeds_and_items_covers_and_resolves_a_gain():
    """Two systems on the same test items (MDS against none; BERT against GloVe): the paired interval
    (seed_intervals.paired_seeds_and_items) covers the difference of the targets, and resolves a 5-point gain
    with seeds that agree, which the difference of the two unpaired intervals (the verdicts' rule without a
    paired interval) never does: each counts the test set's error that the difference cancels. At and next to
    100 %: the boundary's Clopper-Pearson side (the paired bootstrap's MOVER) keeps it covering."""
    gain = _paired_coverage(0.65, 0.6, 0.01, replicates=60)
    assert gain["paired covers"] >= 0.9 and gain["paired resolves"] >= 0.8, gain
    assert gain["unpaired resolves"] <= 0.1, gain
    top = _paired_coverage(1.0, 0.997, 0.05, replicates=60)
    assert top["paired covers"] >= 0.9, top


def test_the_paired_interval_by_hand():
    """a's seeds 60, 62, 64 (mean 62, variance 4, 4 / 3 per mean), b's 55, 55, 55 (no spread): Welch's degrees
    of freedom are then a's own, 2, and the seeds' half-width t(0.975, 2) sqrt(4 / 3) = 4.302653 x 1.154701 =
    4.968275 (squared 24.683761). The difference is 7, the items' interval [4, 9] (3 below, 2 above), so low =
    7 - sqrt(24.683761 + 9) = 1.196229 and high = 7 + sqrt(24.683761 + 4) = 12.355722."""
    found = paired_seeds_and_items([60.0, 62.0, 64.0], [55.0, 55.0, 55.0], 4.0, 9.0)
    assert found.estimate == 7.0
    assert (round(found.low, 6), round(found.high, 6)) == (1.196229, 12.355722)
    with pytest.raises(ValueError, match="is empty"):
        paired_seeds_and_items([60.0, 62.0, 64.0], [55.0, 55.0, 55.0], 9.0, 8.0)


def test_the_seed_averaged_difference_is_the_paired_bootstrap_of_the_averaged_items():
    """With the same denominators for every seed (XNLI's 0/1 items), the mean over seeds of each seed's score is
    the score of the seed-averaged items, so seed_means_difference draws what paired_groups_difference does on
    those averages (the same resampled items, in the same order)."""
    rng = np.random.default_rng(7)
    a = [[(rng.random(50) < 0.7).astype(float) for _ in range(3)] for _ in range(2)]  # [language][seed]
    b = [[(rng.random(50) < 0.5).astype(float) for _ in range(2)] for _ in range(2)]
    found = seed_means_difference(a, b, n_resamples=500, seed=3)
    reference = paired_groups_difference(
        [np.mean(g, axis=0) for g in a], [np.mean(g, axis=0) for g in b], n_resamples=500, seed=3
    )
    assert found.estimate == pytest.approx(reference.estimate)
    assert (found.low, found.high) == (pytest.approx(reference.low), pytest.approx(reference.high))


def test_the_interval_from_items_by_hand():
    """Two seeds, one language of 4 items: seed 1 hits 1, 1, 0, 0, seed 2 1, 0, 0, 0 (50 % and 25 %). Per item
    the deviations from each seed's share are (0.5, 0.5, -0.5, -0.5) and (0.75, -0.25, -0.25, -0.25); less their
    mean over the seeds, (-0.125, 0.375, -0.125, -0.125) and its negative: sum of squares 0.375, mean square
    0.375 / (1 x 3) = 0.125, over 4 items 0.03125 (312.5 in percent squared). The seeds' variance is 312.5 (two
    values 25 apart: 25^2 / 2), so nothing is left to the seeds: the interval is the items' [20, 60] as given."""
    groups = [[np.array([1.0, 1, 0, 0]), np.array([1.0, 0, 0, 0])]]
    assert seed_by_item_variance(groups) == pytest.approx(0.03125)
    found = seeds_and_items_from_items([50.0, 25.0], 20.0, 60.0, 1e4 * seed_by_item_variance(groups))
    assert (found.estimate, found.low, found.high) == (37.5, pytest.approx(20.0), pytest.approx(60.0))
    # a seed spread of 1250 (50 apart) less 312.5: t(0.975, 1) sqrt(937.5 / 2) = 12.706205 x 21.650635 = 275.0975
    wide = seeds_and_items_from_items([50.0, 0.0], 20.0, 30.0, 312.5)
    assert round(wide.high - wide.estimate, 3) == round(float(np.hypot(275.0974, 5.0)), 3)
    # the items' bootstrap draws the same items for both seeds: the seed-averaged items are 1, .5, 0, 0
    same = bootstrap_seed_means(groups, n_resamples=2000, seed=5)
    assert same.low == pytest.approx(bootstrap_mean([1.0, 0.5, 0, 0], n_resamples=2000, seed=5).low)
