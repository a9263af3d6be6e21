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
