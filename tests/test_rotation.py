"""Procrustes against scipy and a planted rotation; iterative normalisation's fixed point."""

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from scipy.stats import ortho_group

from xling.represent.rotation import iterative_normalize, procrustes


def test_procrustes_equals_scipy_and_is_orthogonal():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 12)), rng.normal(size=(200, 12))
    w = procrustes(x, y)
    np.testing.assert_allclose(w, orthogonal_procrustes(x, y)[0], atol=1e-10)
    np.testing.assert_allclose(w.T @ w, np.eye(12), atol=1e-10)


def test_procrustes_recovers_a_planted_rotation():
    rng = np.random.default_rng(1)
    rotation = ortho_group.rvs(16, random_state=2)
    x = rng.normal(size=(300, 16))
    y = x @ rotation + rng.normal(scale=0.01, size=(300, 16))
    np.testing.assert_allclose(procrustes(x, y), rotation, atol=5e-3)


def test_procrustes_rejects_unpaired_input():
    with pytest.raises(ValueError, match="same shape"):
        procrustes(np.zeros((3, 4)), np.zeros((2, 4)))


def test_iterative_normalize_leaves_unit_length_zero_mean_vectors():
    x = np.random.default_rng(3).normal(size=(500, 16)) + 3.0  # far from zero mean
    once = iterative_normalize(x, n_iter=1)
    assert np.abs(once.mean(axis=0)).max() > 1e-3  # one round is not enough: the test can fail
    y = iterative_normalize(x, n_iter=10)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=1e-9)
