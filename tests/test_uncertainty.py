"""Bootstrap intervals against scipy.stats.bootstrap on the same data and against exact bootstrap distributions
worked out by hand on tiny test sets."""

import time

import numpy as np
import pytest
from scipy import stats

from xling.evaluate.uncertainty import (
    Ratio,
    bootstrap_groups,
    bootstrap_mean,
    bootstrap_ratio,
    bootstrap_seeds_and_groups,
    bootstrap_seeds_and_items,
    bootstrap_statistic,
    paired_difference,
    paired_groups_difference,
    seed_spread,
)

RESAMPLES = 9999


def _reference(data, statistic, method, paired=False):
    result = stats.bootstrap(
        data, statistic, n_resamples=RESAMPLES, method=method, paired=paired, vectorized=False, rng=12345
    )
    return result.confidence_interval, result.standard_error


def _close(ours, reference, standard_error):
    """Two Monte-Carlo estimates of the same bounds agree to a fraction of the statistic's standard error
    (with 9999 resamples a 95% bound moves by about 0.05 standard errors between seeds)."""
    tolerance = 0.15 * standard_error
    assert ours.low == pytest.approx(reference.low, abs=tolerance)
    assert ours.high == pytest.approx(reference.high, abs=tolerance)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_mean_matches_scipy(method):
    scores = np.random.default_rng(0).exponential(size=300)  # skewed: BCa and percentile differ
    ours = bootstrap_mean(scores, n_resamples=RESAMPLES, seed=7, method=method)
    reference, se = _reference((scores,), np.mean, method)
    _close(ours, reference, se)
    assert ours.estimate == pytest.approx(scores.mean())


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_ratio_matches_scipy_paired(method):
    """Micro F1 over sentences: 2 sum(correct) / (sum(predicted) + sum(gold)), sentences resampled whole."""
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 4, size=200)
    predicted = rng.integers(0, 4, size=200)
    correct = np.minimum(gold, predicted) * (rng.random(200) < 0.6)
    ours = bootstrap_ratio(Ratio(2 * correct, predicted + gold), n_resamples=RESAMPLES, seed=3, method=method)
    reference, se = _reference(
        (correct, predicted, gold), lambda c, p, g: 2 * c.sum() / (p.sum() + g.sum()), method, paired=True
    )
    _close(ours, reference, se)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_statistic_callback_matches_scipy(method):
    """A statistic that is no mean of per-item scores (a correlation of two columns over examples)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    ours = bootstrap_statistic(
        lambda idx: np.corrcoef(x[idx], y[idx])[0, 1], len(x), n_resamples=RESAMPLES, seed=4, method=method
    )
    reference, se = _reference((x, y), lambda a, b: np.corrcoef(a, b)[0, 1], method, paired=True)
    _close(ours, reference, se)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_difference_matches_scipy(method):
    rng = np.random.default_rng(3)
    difficulty = rng.random(400)
    a = (rng.random(400) < 0.5 + 0.4 * difficulty).astype(float)
    b = (rng.random(400) < 0.45 + 0.4 * difficulty).astype(float)
    ours = paired_difference(a, b, n_resamples=RESAMPLES, seed=5, method=method)
    reference, se = _reference((a, b), lambda u, v: u.mean() - v.mean(), method, paired=True)
    _close(ours, reference, se)
    assert ours.estimate == pytest.approx(a.mean() - b.mean())


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_groups_match_scipy_independent_samples(method):
    """The mean over three language pairs of their MRRs, each pair's queries resampled on their own: scipy's
    bootstrap of several independent samples."""
    rng = np.random.default_rng(8)
    pairs = [1 / rng.integers(1, 20, size=n) for n in (60, 150, 90)]
    ours = bootstrap_groups(pairs, n_resamples=RESAMPLES, seed=6, method=method)
    reference, se = _reference(tuple(pairs), lambda *groups: np.mean([g.mean() for g in groups]), method)
    _close(ours, reference, se)
    assert ours.estimate == pytest.approx(np.mean([p.mean() for p in pairs]))
    assert ours.n_items == 300


def test_paired_groups_by_hand():
    """Two pairs; system a beats b by one item in the first (differences [1, 0, 0]) and ties in the second:
    the difference of the means over pairs is half the first pair's, whose 50% interval is [0, 2/3]."""
    a = [[1, 1, 0], [1, 0]]
    b = [[0, 1, 0], [1, 0]]
    interval = paired_groups_difference(a, b, n_resamples=20000, level=0.5, seed=3)
    assert (interval.low, interval.high) == (0.0, pytest.approx(1 / 3))
    assert interval.estimate == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="same items"):
        paired_groups_difference(a, [[0, 1, 0], [1, 0, 1]])


def test_tiny_case_by_hand():
    """Scores [0, 0, 1]: a resample's mean is k/3, k ~ Binomial(3, 1/3): P(0) = 8/27 = 0.296, P(1/3) = 12/27,
    P(2/3) = 6/27, P(1) = 1/27, cumulative 0.296, 0.741, 0.963, 1. So the 50% percentile interval (quartiles)
    is [0, 2/3] and the 90% one [0, 2/3] (5% < 0.296; 0.741 < 95% <= 0.963)."""
    for level in (0.5, 0.9):
        interval = bootstrap_mean([0, 0, 1], n_resamples=20000, level=level, seed=0)
        assert (interval.low, interval.high) == (0.0, pytest.approx(2 / 3))
        assert interval.estimate == pytest.approx(1 / 3)


def test_paired_cancels_shared_difficulty():
    """Two systems that differ on one item of three: the difference per item is [1, 0, 0], which has the
    hand-worked distribution above; a constant shift of every item gives a zero-width interval."""
    interval = paired_difference([1, 1, 0], [0, 1, 0], n_resamples=20000, level=0.5, seed=1)
    assert (interval.low, interval.high, interval.estimate) == (0.0, pytest.approx(2 / 3), pytest.approx(1 / 3))
    scores = np.random.default_rng(4).random(50)
    shifted = paired_difference(scores + 0.01, scores, seed=2)
    assert shifted.low == pytest.approx(0.01) and shifted.high == pytest.approx(0.01)
    unpaired_width = bootstrap_mean(scores + 0.01).high - bootstrap_mean(scores + 0.01).low
    assert unpaired_width > 0.05


def test_constant_scores_give_a_point():
    for method in ("percentile", "bca"):
        interval = bootstrap_mean(np.full(30, 0.25), method=method)
        assert (interval.low, interval.estimate, interval.high) == (0.25, 0.25, 0.25)


@pytest.mark.parametrize("hits, n", [(34, 34), (0, 34), (5, 5), (0, 1)])
def test_all_hits_or_all_misses_get_the_exact_binomial_interval(hits, n):
    """Every query a hit (or every one a miss): no resample differs, so the bootstrap alone would say [1, 1]
    ([0, 0]); the interval is the Clopper-Pearson one, as scipy.stats.binomtest computes it."""
    for method in ("percentile", "bca"):
        interval = bootstrap_mean([1.0] * hits + [0.0] * (n - hits), level=0.95, method=method)
        exact = stats.binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
        assert interval.method == "clopper-pearson" and interval.estimate == hits / n
        assert (interval.low, interval.high) == (pytest.approx(exact.low), pytest.approx(exact.high))
    assert bootstrap_mean([1.0] * 34).low == pytest.approx(0.8972, abs=1e-4)  # the demo's 34 closed-class words


def test_exact_bounds_over_groups_use_their_effective_size_and_only_hits():
    """Over groups (a mean over languages or tags): the effective size G^2 / sum(1/n_g) in Clopper-Pearson's beta
    quantiles, by hand: all hits in groups of 12, 4, 6, 12 -> n_eff = 16 / (7/12) = 27.43, low (0.025)^(1/n_eff)
    = 0.874 (pooling the 34 would say 0.897: the small groups weigh more in the mean); one group of 10 hits and
    one of 20 misses -> n_eff = 26.67, k = 13.33. One group that varies leaves the bootstrap; scores that are
    not 0/1 (a constant 0.25) stay points; a ratio at 1 on every item is exact on its items
    (tests/test_boundary_intervals.py)."""
    closed = bootstrap_groups([[1.0] * n for n in (12, 4, 6, 12)])
    assert closed.method == "clopper-pearson" and closed.high == 1.0
    assert closed.low == pytest.approx(0.025 ** (7 / 12 / 16)) and closed.low == pytest.approx(0.874, abs=1e-3)
    both = bootstrap_groups([[1.0] * 10, [0.0] * 20])
    n = 4 / (1 / 10 + 1 / 20)
    assert both.method == "clopper-pearson" and both.estimate == 0.5
    assert (both.low, both.high) == (
        pytest.approx(stats.beta.ppf(0.025, n / 2, n / 2 + 1)),
        pytest.approx(stats.beta.ppf(0.975, n / 2 + 1, n / 2)),
    )
    assert bootstrap_groups([[1.0] * 10, [0.0, 1.0] * 10]).method == "percentile"
    assert bootstrap_mean(np.full(30, 0.25)).method == "percentile"
    ratio = bootstrap_ratio(Ratio(np.full(5, 2.0), np.full(5, 2.0)))
    assert (ratio.low, ratio.high, ratio.method) == (pytest.approx(0.025 ** (1 / 5)), 1.0, "clopper-pearson")


def test_interval_records_how_it_was_drawn_and_is_reproducible():
    scores = np.random.default_rng(5).random(100)
    first = bootstrap_mean(scores, n_resamples=500, level=0.9, seed=11)
    assert first == bootstrap_mean(scores, n_resamples=500, level=0.9, seed=11)
    assert first != bootstrap_mean(scores, n_resamples=500, level=0.9, seed=12)
    assert first.columns("mrr_") == {
        "mrr_ci_low": first.low,
        "mrr_ci_high": first.high,
        "mrr_ci_level": 0.9,
        "mrr_ci_resamples": 500,
        "mrr_ci_seed": 11,
        "mrr_ci_method": "percentile",
        "mrr_n_items": 100,
    }
    assert str(first).startswith(f"{scores.mean():.3f} [")


def test_blocks_do_not_change_the_result():
    """Items beyond one block of resamples (4M cells) are drawn in several blocks; the interval is still the
    quantiles over every resample."""
    scores = np.random.default_rng(6).random(5000)
    interval = bootstrap_mean(scores, n_resamples=1000, seed=3)
    assert interval.low < scores.mean() < interval.high
    se = scores.std() / np.sqrt(len(scores))
    assert interval.high - interval.low == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_fast_enough_for_ten_thousand_items():
    scores = (np.random.default_rng(7).random(10_000) < 0.3).astype(float)
    start = time.perf_counter()
    bootstrap_mean(scores, n_resamples=1000)
    paired_difference(scores, np.roll(scores, 1), n_resamples=1000, method="bca")
    assert time.perf_counter() - start < 10  # about 0.4 s on one core


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="zero items"):
        bootstrap_mean([])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean([0.5, np.nan])
    with pytest.raises(ValueError, match="same items"):
        paired_difference([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="method"):
        bootstrap_mean([1, 0], method="basic")
    with pytest.raises(ValueError, match="denominator"):
        bootstrap_ratio(Ratio(np.zeros(3), np.zeros(3)))


def test_seeds_and_items_by_hand():
    """Two seeds, each constant over its items (0 and 1): only the seeds vary. The mean of two seeds drawn with
    replacement is 0 (1/4), 0.5 (1/2) or 1 (1/4): the 90% interval is [0, 1], the 30% one [0.5, 0.5]. With
    one seed it is the item bootstrap of that seed."""
    scores = [np.zeros(20), np.ones(20)]
    wide = bootstrap_seeds_and_items(scores, n_resamples=20000, level=0.9, seed=1)
    assert (wide.low, wide.estimate, wide.high) == (0.0, 0.5, 1.0)
    narrow = bootstrap_seeds_and_items(scores, n_resamples=20000, level=0.3, seed=1)
    assert (narrow.low, narrow.high) == (0.5, 0.5)
    one = np.random.default_rng(9).random(200)
    alone = bootstrap_seeds_and_items([one], n_resamples=RESAMPLES, seed=2)
    reference = bootstrap_mean(one, n_resamples=RESAMPLES, seed=3)
    assert alone.low == pytest.approx(reference.low, abs=0.005)
    assert alone.high == pytest.approx(reference.high, abs=0.005)
    with pytest.raises(ValueError, match="same items"):
        bootstrap_seeds_and_items([np.zeros(3), np.zeros(4)])


def test_seeds_are_drawn_once_for_every_group():
    """Seed 0 scores 0 and seed 1 scores 1 in both languages. A resample draws two seeds for both languages, so
    the mean over languages is 0 (1/4), 0.5 (1/2) or 1 (1/4): the 60% interval (20% and 80% quantiles) is
    [0, 1]. Seeds drawn per language would give 0, 0.25, ..., 1 with cumulative 0.0625, 0.3125, 0.6875,
    0.9375, 1, and the interval [0.25, 0.75]."""
    language = [np.zeros(10), np.ones(10)]
    interval = bootstrap_seeds_and_groups([language, language], n_resamples=20000, level=0.6, seed=4)
    assert (interval.low, interval.estimate, interval.high) == (0.0, 0.5, 1.0)
    with pytest.raises(ValueError, match="same items"):
        bootstrap_seeds_and_groups([language, [np.zeros(10)]])


def test_seed_spread():
    spread = seed_spread([70.0, 72.0, float("nan"), 74.0])
    assert (spread.mean, spread.sd, spread.n) == (72.0, pytest.approx(2.0), 3)
    one = seed_spread([70.0])
    assert one.n == 1 and np.isnan(one.sd) and str(one) == "70.000 (one seed)"
    assert "sd over 3 seeds" in str(spread)
