"""Intervals of linear CKA over sentences: a delete-a-group jackknife (the rows of X and Y left out together).

Why not the bootstrap: resampling sentences with replacement duplicates rows, and duplicated rows raise linear
CKA, so the resampled values sit above the estimate (synthetic n = 500, d = 64: CKA 0.516, 95 % percentile
interval [0.549, 0.572]). Leaving sentences out duplicates none. The n sentences go to G = min(n, 100) groups
(a permutation drawn from `seed`, cut into contiguous blocks); theta_g is the CKA with group g left out,
se = sqrt((G - 1) / G * sum_g (theta_g - mean_g theta_g)^2), and the interval is theta_hat +- z se with
z = ndtri((1 + level) / 2). Its ci_resamples column records G, its ci_method "jackknife".

Why from Gram matrices: each leave-group-out CKA would otherwise recompute three d x d products of every layer.
Each layer's K = X X^T, L = Y Y^T are computed once, and a set of kept sentences enters as weights w (1 kept,
0 left out; m = sum w):

    HSIC_w = w'(K o L)w - (2/m) sum_i w_i (Kw)_i (Lw)_i + (w'Kw)(w'Lw) / m^2

is ||Yw^T Xw||_F^2 of the kept rows re-centred on their own means (the biased estimator of xling.evaluate.cka,
exactly, up to rounding). The debiased estimator (Song et al. 2012) is the same U-statistic written with
weights: tr(K~L~) = w'(K o L)w - sum_i w_i K_ii L_ii, 1'K~1 = w'Kw - sum_i w_i K_ii, and (K~1)_i = (Kw)_i - K_ii.

Every comparison of one table leaves out the same groups, so the difference of two comparisons (monolingual
minus random at a layer, multilingual minus monolingual over the layers' mean) is jackknifed on the same
groups: a paired interval at no extra cost.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy.special import ndtri

from xling.evaluate.uncertainty import Interval

MAX_GROUPS = 100
METHOD = "jackknife"


def _gram(x: np.ndarray) -> np.ndarray:
    """X X^T of the column-centred rows (centring here only keeps the weighted sums well conditioned)."""
    x = np.asarray(x, dtype=np.float64)
    x = x - x.mean(axis=0)
    return x @ x.T


def _hsic(
    w: np.ndarray, kw: np.ndarray, lw: np.ndarray, quad: np.ndarray, k: np.ndarray, l: np.ndarray, debiased: bool
) -> np.ndarray:
    """HSIC of each row of weights w [B, n] (module docstring); kw = w K, lw = w L, quad = w'(K o L)w."""
    m = w.sum(axis=1)
    k_total, l_total = np.einsum("bi,bi->b", w, kw), np.einsum("bi,bi->b", w, lw)
    if not debiased:
        return quad - 2.0 / m * np.einsum("bi,bi,bi->b", w, kw, lw) + k_total * l_total / m**2
    k_diag, l_diag = np.diag(k), np.diag(l)
    trace = quad - w @ (k_diag * l_diag)
    k_total, l_total = k_total - w @ k_diag, l_total - w @ l_diag
    cross = np.einsum("bi,bi,bi->b", w, kw - k_diag, lw - l_diag)
    return (trace + k_total * l_total / ((m - 1) * (m - 2)) - 2.0 / (m - 2) * cross) / (m * (m - 3))


def _cka_rows(
    grams: Mapping[str, np.ndarray], comparisons: Mapping[str, tuple[str, str]], w: np.ndarray, debiased: bool
) -> dict[str, np.ndarray]:
    """CKA of each comparison (its two sides' names in `grams`) on each row of weights w."""
    products = {name: w @ gram for name, gram in grams.items()}
    quads: dict[tuple[str, str], np.ndarray] = {}

    def hsic(a: str, b: str) -> np.ndarray:
        if (a, b) not in quads:
            quads[(a, b)] = np.einsum("bi,bi->b", w @ (grams[a] * grams[b]), w)
        return _hsic(w, products[a], products[b], quads[(a, b)], grams[a], grams[b], debiased)

    with np.errstate(divide="ignore", invalid="ignore"):
        return {name: hsic(a, b) / np.sqrt(hsic(a, a) * hsic(b, b)) for name, (a, b) in comparisons.items()}


def jackknife_groups(n: int, seed: int, max_groups: int = MAX_GROUPS) -> list[np.ndarray]:
    """The sentences of each of the G = min(n, max_groups) groups: a permutation of range(n) drawn from `seed`,
    cut into G contiguous blocks (sizes differing by at most one)."""
    return np.array_split(np.random.default_rng(seed).permutation(n), min(n, max_groups))


def _kept_weights(n: int, groups: list[np.ndarray]) -> np.ndarray:
    """[1 + G, n] weights: every sentence (the estimate), then each group left out."""
    weights = np.ones((1 + len(groups), n))
    for g, members in enumerate(groups, start=1):
        weights[g, members] = 0.0
    return weights


def left_out_cka(
    sides: Mapping[str, np.ndarray],
    comparisons: Mapping[str, tuple[str, str]],
    *,
    seed: int,
    debiased: bool = False,
    max_groups: int = MAX_GROUPS,
) -> dict[str, np.ndarray]:
    """{comparison: CKA values [1 + G, layers]}: row 0 on every sentence, then with each group of
    `jackknife_groups(n, seed, max_groups)` left out. sides: name -> representations [n, layers, d] (or [n, d]:
    one layer) of the same n sentences; comparisons: name -> (side, side)."""
    sides = {name: np.asarray(x)[:, None] if np.ndim(x) == 2 else np.asarray(x) for name, x in sides.items()}
    n, n_layers = next(iter(sides.values())).shape[:2]
    if any(x.shape[:2] != (n, n_layers) for x in sides.values()):
        raise ValueError(
            f"CKA intervals need every side on the same sentences and layers: "
            f"{ {name: x.shape for name, x in sides.items()} }"
        )
    weights = _kept_weights(n, jackknife_groups(n, seed, max_groups))
    values = {name: [] for name in comparisons}
    for layer in range(n_layers):
        grams = {
            name: _gram(x[:, layer]) for name, x in sides.items() if any(name in pair for pair in comparisons.values())
        }
        for name, by_row in _cka_rows(grams, comparisons, weights, debiased).items():
            values[name].append(by_row)
    return {name: np.stack(by_layer, axis=1) for name, by_layer in values.items()}


def interval(values: np.ndarray, n_items: int, *, level: float, seed: int) -> Interval:
    """The jackknife interval of one statistic from its `left_out_cka` rows [1 + G]: estimate +- z se."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    values = np.asarray(values, dtype=np.float64)
    estimate, left_out = float(values[0]), values[1:]
    if len(left_out) < 2:
        raise ValueError(f"the jackknife needs at least 2 groups of sentences, got {len(left_out)}")
    groups = len(left_out)
    if not np.all(np.isfinite(values)):  # a collapsed side (HSIC 0): no interval, the row is kept, not the job lost
        return Interval(estimate, np.nan, np.nan, level, groups, seed, n_items, METHOD)
    se = float(np.sqrt((groups - 1) / groups * np.sum((left_out - left_out.mean()) ** 2)))
    half = float(ndtri((1 + level) / 2)) * se
    return Interval(estimate, estimate - half, estimate + half, level, groups, seed, n_items, METHOD)


def interval_rows(
    values: Mapping[str, np.ndarray], n_items: int, *, level: float, seed: int, reference: str = "monolingual"
) -> list[dict]:
    """One row per (comparison, layer) of `left_out_cka` values: the CKA's interval (ci_* columns); the paired
    interval of this comparison minus `reference` at the layer (vs_<reference>_low/high; NaN on the reference's
    own rows and when the run lacks it); and the comparison's mean over layers (the paper's "average" row) with
    its interval and its paired difference to the reference's mean (layer_mean*)."""

    def bounds(v: np.ndarray | None) -> tuple[float, float]:
        if v is None:
            return np.nan, np.nan
        found = interval(v, n_items, level=level, seed=seed)
        return found.low, found.high

    base = values.get(reference)
    rows = []
    for name, by_layer in values.items():
        other = base is not None and name != reference
        mean = by_layer.mean(axis=1)
        mean_interval = interval(mean, n_items, level=level, seed=seed)
        mean_vs = bounds(mean - base.mean(axis=1) if other else None)
        for layer in range(by_layer.shape[1]):
            vs = bounds(by_layer[:, layer] - base[:, layer] if other else None)
            rows.append(
                {
                    "comparison": name,
                    "layer": layer,
                    **interval(by_layer[:, layer], n_items, level=level, seed=seed).columns(),
                    f"vs_{reference}_low": vs[0],
                    f"vs_{reference}_high": vs[1],
                    "layer_mean": mean_interval.estimate,
                    "layer_mean_ci_low": mean_interval.low,
                    "layer_mean_ci_high": mean_interval.high,
                    f"layer_mean_vs_{reference}_low": mean_vs[0],
                    f"layer_mean_vs_{reference}_high": mean_vs[1],
                }
            )
    return rows
