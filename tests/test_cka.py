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
    y = x[:, :min(d1, d2)] @ rng.normal(size=(min(d1, d2), d2)) + rng.normal(size=(n, d2))
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


# ---------------------------------------------------------------------------------------------- bootstrap intervals

def _paired_sides(n=40, seed=5):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2, 6))
    return x, x[:, :, :4] * 2.0 + rng.normal(size=(n, 2, 4))


@pytest.mark.parametrize("debiased", [False, True])
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_cka_interval_is_scipy_s_paired_bootstrap_on_the_same_draws(method, debiased):
    """The Gram-matrix resampling gives the interval scipy.stats.bootstrap computes with linear_cka on the
    resampled rows (paired, the same generator and seed: the same resamples)."""
    from scipy import stats

    from xling.evaluate.cka_intervals import interval, resampled_cka

    x, y = _paired_sides()
    values = resampled_cka({"x": x, "y": y}, {"xy": ("x", "y")}, n_resamples=200, seed=9, debiased=debiased,
                           leave_one_out=method == "bca")["xy"]
    for layer in range(2):
        ours = interval(values[:, layer], 200, len(x), level=0.9, seed=9, method=method)
        # rows paired as scipy pairs them (paired=True resamples one index array; rows of unequal width do
        # not broadcast as two samples)
        reference = stats.bootstrap((np.arange(len(x)),), lambda i: linear_cka(x[i, layer], y[i, layer], debiased),
                                    n_resamples=200, confidence_level=0.9, method=method, vectorized=False,
                                    rng=np.random.default_rng(9)).confidence_interval
        assert ours.low == pytest.approx(reference.low, abs=1e-12)
        assert ours.high == pytest.approx(reference.high, abs=1e-12)
        assert ours.estimate == pytest.approx(linear_cka(x[:, layer], y[:, layer], debiased), abs=1e-12)


def test_cka_replicates_are_the_cka_of_the_resampled_rows_re_centred():
    """By hand: each resample's CKA is linear_cka of the drawn rows (centred on their own mean); the paired
    difference of two comparisons is the difference on the same draws."""
    from xling.evaluate.cka_intervals import resampled_cka
    from xling.evaluate.uncertainty import resample_blocks

    x, y = _paired_sides()
    z = np.random.default_rng(6).normal(size=y.shape)
    values = resampled_cka({"x": x, "y": y, "z": z}, {"xy": ("x", "y"), "xz": ("x", "z")}, n_resamples=30, seed=2)
    draws = next(resample_blocks(len(x), 30, np.random.default_rng(2)))
    for layer in range(2):
        expected = [linear_cka(x[idx, layer], y[idx, layer]) for idx in draws]
        assert values["xy"][1:, layer] == pytest.approx(expected, abs=1e-12)
        assert values["xz"][1:, layer] - values["xy"][1:, layer] == pytest.approx(
            [linear_cka(x[idx, layer], z[idx, layer]) - e for idx, e in zip(draws, expected)], abs=1e-12)
    assert values["xy"][0] == pytest.approx(cka_by_layer(x, y), abs=1e-12)


def test_cka_interval_rows_pair_each_comparison_with_the_monolingual_one():
    from xling.evaluate.cka_intervals import interval_rows, resampled_cka

    x, y = _paired_sides()
    z = np.random.default_rng(6).normal(size=y.shape)
    values = resampled_cka({"x": x, "y": y, "z": z}, {"monolingual": ("x", "y"), "random": ("x", "z")},
                           n_resamples=300, seed=1)
    rows = {(r["comparison"], r["layer"]): r for r in interval_rows(values, 300, len(x), level=0.95, seed=1,
                                                                    method="percentile")}
    mono, rand = rows[("monolingual", 1)], rows[("random", 1)]
    assert mono["ci_low"] < values["monolingual"][0, 1] < mono["ci_high"] and mono["n_items"] == len(x)
    assert np.isnan(mono["vs_monolingual_low"]) and rand["vs_monolingual_high"] < 0  # random is far below
    difference = values["random"][1:, 1] - values["monolingual"][1:, 1]
    assert rand["vs_monolingual_low"] == pytest.approx(np.quantile(difference, 0.025))
    means = values["monolingual"][1:].mean(axis=1)
    assert mono["layer_mean_ci_high"] == pytest.approx(np.quantile(means, 0.975))
