"""Linear CKA (xling.evaluate.cka) against Kornblith et al.'s reference: the values their demo notebook
prints on its fixture, and their Gram-matrix formulation (written out here from the paper: centre the Gram
matrices, HSIC = <K, L>; debiased: the U-statistic centring of Szekely & Rizzo), which our feature-space
code does not use; plus the invariances Conneau et al. rely on."""

import numpy as np
import pytest
from scipy.stats import ortho_group

from xling.evaluate.cka import cka_by_layer, linear_cka


def gram_cka(x, y, debiased=False):
    """CKA from the examples' Gram matrices (Kornblith et al. 2019, eq. 3-4; debiased: Appendix)."""

    def centre(gram):
        gram = gram.copy()
        n = len(gram)
        if debiased:
            np.fill_diagonal(gram, 0.0)
            means = gram.sum(axis=0) / (n - 2)
            means -= means.sum() / (2 * (n - 1))
            gram -= means[:, None] + means[None, :]
            np.fill_diagonal(gram, 0.0)
            return gram
        h = np.eye(n) - 1.0 / n
        return h @ gram @ h

    k, l = centre(x @ x.T), centre(y @ y.T)
    return float((k * l).sum() / (np.linalg.norm(k) * np.linalg.norm(l)))


def notebook_fixture():
    """The fixture of representation_similarity/Demo.ipynb (google-research): seed 1337, 100 x 10."""
    np.random.seed(1337)
    x = np.random.randn(100, 10)
    y = np.random.randn(100, 10) + x
    return x, y


def test_reference_notebook_values():
    x, y = notebook_fixture()
    # the notebook prints "Linear CKA from Features: 0.55761" and "(Debiased): 0.51346"
    assert linear_cka(x, y) == pytest.approx(0.55761, abs=5e-6)
    assert linear_cka(x, y, debiased=True) == pytest.approx(0.51346, abs=5e-6)


@pytest.mark.parametrize("debiased", [False, True])
@pytest.mark.parametrize("shape", [(30, 5, 8), (12, 20, 3), (200, 16, 16)])
def test_matches_gram_formulation(shape, debiased):
    n, d1, d2 = shape
    rng = np.random.default_rng(n + d1)
    x = rng.normal(size=(n, d1)) + 3.0  # off-centre: the centring must happen inside
    y = x[:, : min(d1, d2)] @ rng.normal(size=(min(d1, d2), d2)) + rng.normal(size=(n, d2))
    assert linear_cka(x, y, debiased) == pytest.approx(gram_cka(x, y, debiased), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("debiased", [False, True])
def test_invariant_to_orthogonal_transform_and_isotropic_scaling(debiased):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 12))
    y = np.tanh(x @ rng.normal(size=(12, 12))) + 0.3 * rng.normal(size=(50, 12))
    base = linear_cka(x, y, debiased)
    q = ortho_group.rvs(12, random_state=4)
    assert linear_cka(x @ q, y, debiased) == pytest.approx(base, rel=1e-10)
    assert linear_cka(x, 7.5 * y @ q.T, debiased) == pytest.approx(base, rel=1e-10)
    assert linear_cka(0.01 * x, y, debiased) == pytest.approx(base, rel=1e-10)
    # not invariant to any invertible linear map: a strong anisotropic scaling changes it
    assert linear_cka(x * np.geomspace(1, 1000, 12), y, debiased) != pytest.approx(base, rel=1e-3)


def test_identical_and_unrelated():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 8))
    assert linear_cka(x, x) == pytest.approx(1.0)
    assert linear_cka(x, x, debiased=True) == pytest.approx(1.0)
    unrelated = linear_cka(x, rng.normal(size=(400, 8)))
    debiased = linear_cka(x, rng.normal(size=(400, 8)), debiased=True)
    assert 0 < unrelated < 0.1  # the biased estimator stays above zero for independent data
    assert abs(debiased) < abs(unrelated) + 0.02


def test_by_layer_and_errors():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(20, 3, 4))
    y = rng.normal(size=(20, 3, 6))
    assert cka_by_layer(x, y) == [pytest.approx(gram_cka(x[:, l], y[:, l])) for l in range(3)]
    with pytest.raises(ValueError, match="paired rows"):
        linear_cka(x[:5, 0], y[:6, 0])
    with pytest.raises(ValueError, match="at least 4"):
        linear_cka(x[:3, 0], y[:3, 0], debiased=True)
    with pytest.raises(ValueError, match="no variance"):
        linear_cka(np.ones((5, 2)), y[:5, 0])
    with pytest.raises(ValueError, match="layers"):
        cka_by_layer(x, y[:, :2])


# ---------------------------------------------------------------------------------------------- jackknife intervals


def _paired_sides(n=40, seed=5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2, 6))
    return x, x[:, :, :4] * 2.0 + rng.normal(size=(n, 2, 4))


def _synthetic(n, d, seed=0):
    """benchmarks/cka_intervals.py's data: y a random linear map of x plus as much noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, x @ rng.normal(size=(d, d)) / np.sqrt(d) + rng.normal(size=(n, d))


@pytest.mark.parametrize("debiased", [False, True])
def test_cka_jackknife_by_hand(debiased):
    """n = 6 sentences in G = 3 groups of the seed's permutation (2 each): each theta_g is linear_cka of the kept
    rows, se = sqrt((G-1)/G sum (theta_g - mean)^2), the interval theta_hat +- z_0.95 se; the paired difference is
    jackknifed on the same groups."""
    from scipy.stats import norm

    from xling.evaluate.cka_intervals import MAX_GROUPS, interval, interval_rows, left_out_cka

    x, y = _paired_sides(n=6)
    z = np.random.default_rng(6).normal(size=y.shape)
    order = np.random.default_rng(3).permutation(6)
    groups = [order[0:2], order[2:4], order[4:6]]
    values = left_out_cka(
        {"x": x[:, 1], "y": y[:, 1], "z": z[:, 1]},
        {"xy": ("x", "y"), "xz": ("x", "z")},
        seed=3,
        debiased=debiased,
        max_groups=3,
    )
    assert MAX_GROUPS == 100

    def by_hand(second):
        kept = [np.setdiff1d(np.arange(6), group) for group in groups]
        return [linear_cka(x[k, 1], second[k, 1], debiased) for k in kept]

    theta = np.array(by_hand(y))
    assert values["xy"][1:, 0] == pytest.approx(theta, abs=1e-12)
    se = np.sqrt(2 / 3 * sum((t - theta.mean()) ** 2 for t in theta))
    estimate = linear_cka(x[:, 1], y[:, 1], debiased)
    found = interval(values["xy"][:, 0], 6, level=0.9, seed=3)
    assert found.estimate == pytest.approx(estimate, abs=1e-12)
    assert (found.low, found.high) == pytest.approx(
        (estimate - norm.ppf(0.95) * se, estimate + norm.ppf(0.95) * se), abs=1e-12
    )
    assert (found.n_resamples, found.seed, found.n_items, found.method) == (3, 3, 6, "jackknife")
    difference = np.array(by_hand(z)) - theta
    paired_se = np.sqrt(2 / 3 * np.sum((difference - difference.mean()) ** 2))
    rows = {r["comparison"]: r for r in interval_rows(values, 6, level=0.9, seed=3, reference="xy")}
    centre = linear_cka(x[:, 1], z[:, 1], debiased) - estimate
    assert (rows["xz"]["vs_xy_low"], rows["xz"]["vs_xy_high"]) == pytest.approx(
        (centre - norm.ppf(0.95) * paired_se, centre + norm.ppf(0.95) * paired_se), abs=1e-12
    )


def test_cka_jackknife_groups():
    """G = min(n, 100) contiguous blocks of the seed's permutation: every sentence in exactly one group."""
    from xling.evaluate.cka_intervals import jackknife_groups

    groups = jackknife_groups(250, seed=4)
    assert len(groups) == 100 and sorted(len(g) for g in groups) == [2] * 50 + [3] * 50
    assert np.array_equal(np.concatenate(groups), np.random.default_rng(4).permutation(250))
    assert len(jackknife_groups(30, seed=4)) == 30


@pytest.mark.parametrize("n, d", [(500, 64), (2000, 768)])
def test_cka_interval_brackets_its_estimate(n, d):
    """The bootstrap's failure (duplicated rows raise CKA: its whole interval lay above the estimate on this
    data) does not recur: the interval brackets the estimate with a positive width."""
    from xling.evaluate.cka_intervals import interval, left_out_cka

    x, y = _synthetic(n, d)
    found = interval(left_out_cka({"x": x, "y": y}, {"xy": ("x", "y")}, seed=0)["xy"][:, 0], n, level=0.95, seed=0)
    assert found.low < linear_cka(x, y) < found.high and found.n_resamples == 100
    assert 0.001 < found.high - found.low < 0.2


def test_cka_jackknife_se_matches_the_spread_over_fresh_samples():
    """The interval's width is right: the jackknife se of one sample is within a factor 1.5 of the standard
    deviation of the CKA over 200 fresh samples of the same distribution (n = 200, d = 8)."""
    from scipy.stats import norm

    from xling.evaluate.cka_intervals import interval, left_out_cka

    rng = np.random.default_rng(11)
    mixing = rng.normal(size=(8, 8)) / np.sqrt(8)

    def sample():
        x = rng.normal(size=(200, 8))
        return x, x @ mixing + rng.normal(size=(200, 8))

    spread = np.std([linear_cka(*sample()) for _ in range(200)], ddof=1)
    x, y = sample()
    found = interval(left_out_cka({"x": x, "y": y}, {"xy": ("x", "y")}, seed=0)["xy"][:, 0], 200, level=0.95, seed=0)
    se = (found.high - found.low) / (2 * norm.ppf(0.975))
    assert spread / 1.5 < se < spread * 1.5


def test_cka_interval_rows_pair_each_comparison_with_the_monolingual_one():
    from xling.evaluate.cka_intervals import interval_rows, left_out_cka

    x, y = _paired_sides()
    z = np.random.default_rng(6).normal(size=y.shape)
    values = left_out_cka({"x": x, "y": y, "z": z}, {"monolingual": ("x", "y"), "random": ("x", "z")}, seed=1)
    assert values["monolingual"].shape == (1 + 40, 2)  # n = 40 < 100 groups: leave-one-out
    assert values["monolingual"][0] == pytest.approx(cka_by_layer(x, y), abs=1e-12)
    rows = {(r["comparison"], r["layer"]): r for r in interval_rows(values, len(x), level=0.95, seed=1)}
    mono, rand = rows[("monolingual", 1)], rows[("random", 1)]
    assert mono["ci_low"] < values["monolingual"][0, 1] < mono["ci_high"] and mono["n_items"] == len(x)
    assert mono["ci_method"] == "jackknife" and mono["ci_resamples"] == 40
    assert np.isnan(mono["vs_monolingual_low"]) and rand["vs_monolingual_high"] < 0  # random is far below
    assert mono["layer_mean"] == pytest.approx(values["monolingual"][0].mean())
    assert mono["layer_mean_ci_low"] < mono["layer_mean"] < mono["layer_mean_ci_high"]


def test_a_collapsed_side_keeps_its_rows_without_an_interval():
    """A side whose sentences all get one vector has HSIC 0 and CKA NaN: its rows carry no interval (NaN bounds,
    the findings then judge them as having none) instead of failing the whole CKA job; the other rows keep theirs."""
    from xling.evaluate.cka_intervals import interval_rows, left_out_cka

    x, y = _paired_sides()
    collapsed = np.ones_like(y)
    values = left_out_cka({"x": x, "y": y, "c": collapsed}, {"monolingual": ("x", "y"), "random": ("x", "c")}, seed=1)
    rows = {(r["comparison"], r["layer"]): r for r in interval_rows(values, len(x), level=0.95, seed=1)}
    assert np.isnan(rows[("random", 0)]["ci_low"]) and np.isnan(rows[("random", 0)]["ci_high"])
    assert np.isnan(rows[("random", 0)]["vs_monolingual_low"])
    assert rows[("monolingual", 0)]["ci_low"] < rows[("monolingual", 0)]["ci_high"]
    one_sentence = left_out_cka({"x": x[:1], "y": y[:1]}, {"monolingual": ("x", "y")}, seed=1)
    with pytest.raises(ValueError, match="at least 2 groups"):
        interval_rows(one_sentence, 1, level=0.95, seed=1)
