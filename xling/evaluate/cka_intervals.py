"""Bootstrap intervals of linear CKA over sentences (the rows of X and Y resampled together, paired), cheap.

Why not `bootstrap_statistic` with `linear_cka`: each resample would recompute three d x d products of every
layer (n = 2000 sentences, d = 768: minutes per layer). Instead each layer's Gram matrices K = X X^T, L = Y Y^T
are computed once and a resample enters as its counts w (how often each sentence is drawn, summing to m):

    HSIC_w = w'(K o L)w - (2/m) sum_i w_i (Kw)_i (Lw)_i + (w'Kw)(w'Lw) / m^2

is ||Yw^T Xw||_F^2 of the resampled rows re-centred on the resample's own means (the biased estimator of
xling.evaluate.cka, exactly, up to rounding). The debiased estimator (Song et al. 2012) is the same U-statistic
written with counts: tr(K~L~) = w'(K o L)w - sum_i w_i K_ii L_ii, 1'K~1 = w'Kw - sum_i w_i K_ii, and
(K~1) at a drawn copy of sentence i = (Kw)_i - K_ii (U-centring needs no re-centring: it removes any mean).
Every resample is then a few [resamples, n] x [n, n] products per layer.

Every comparison of one table draws the same resamples (one seed, one sentence set), so the difference of two
comparisons (monolingual minus random at a layer, multilingual minus monolingual over the layers' mean) gets a
paired interval from the same replicates at no extra cost.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from xling.evaluate.uncertainty import Interval, interval_from_replicates, resampled_counts

_BLOCK_ROWS = 500  # resamples per product: [500, n] float64 matrices


def _gram(x: np.ndarray) -> np.ndarray:
    """X X^T of the column-centred rows (centring here only keeps the counts' sums well conditioned)."""
    x = np.asarray(x, dtype=np.float64)
    x = x - x.mean(axis=0)
    return x @ x.T


def _hsic(w: np.ndarray, kw: np.ndarray, lw: np.ndarray, quad: np.ndarray, k: np.ndarray, l: np.ndarray,
          debiased: bool) -> np.ndarray:
    """HSIC of each row of counts w [B, n] (module docstring); kw = w K, lw = w L, quad = w'(K o L)w."""
    m = w.sum(axis=1)
    k_total, l_total = np.einsum("bi,bi->b", w, kw), np.einsum("bi,bi->b", w, lw)
    if not debiased:
        return quad - 2.0 / m * np.einsum("bi,bi,bi->b", w, kw, lw) + k_total * l_total / m ** 2
    k_diag, l_diag = np.diag(k), np.diag(l)
    trace = quad - w @ (k_diag * l_diag)
    k_total, l_total = k_total - w @ k_diag, l_total - w @ l_diag
    cross = np.einsum("bi,bi,bi->b", w, kw - k_diag, lw - l_diag)
    return (trace + k_total * l_total / ((m - 1) * (m - 2)) - 2.0 / (m - 2) * cross) / (m * (m - 3))


def _cka_rows(grams: Mapping[str, np.ndarray], comparisons: Mapping[str, tuple[str, str]], w: np.ndarray,
              debiased: bool) -> dict[str, np.ndarray]:
    """CKA of each comparison (its two sides' names in `grams`) on each row of counts w."""
    products = {name: w @ gram for name, gram in grams.items()}
    quads: dict[tuple[str, str], np.ndarray] = {}

    def hsic(a: str, b: str) -> np.ndarray:
        if (a, b) not in quads:
            quads[(a, b)] = np.einsum("bi,bi->b", w @ (grams[a] * grams[b]), w)
        return _hsic(w, products[a], products[b], quads[(a, b)], grams[a], grams[b], debiased)

    with np.errstate(divide="ignore", invalid="ignore"):
        return {name: hsic(a, b) / np.sqrt(hsic(a, a) * hsic(b, b)) for name, (a, b) in comparisons.items()}


def _count_rows(n: int, counts: np.ndarray, leave_one_out: bool):
    """Blocks of count rows: every sentence once (the estimate), the resamples, and (BCa) each sentence left out."""
    yield np.ones((1, n))
    for start in range(0, len(counts), _BLOCK_ROWS):
        yield counts[start : start + _BLOCK_ROWS]
    if leave_one_out:
        for start in range(0, n, _BLOCK_ROWS):
            block = np.ones((min(_BLOCK_ROWS, n - start), n))
            block[np.arange(len(block)), start + np.arange(len(block))] = 0.0
            yield block


def resampled_cka(sides: Mapping[str, np.ndarray], comparisons: Mapping[str, tuple[str, str]], *,
                  n_resamples: int, seed: int, debiased: bool = False,
                  leave_one_out: bool = False) -> dict[str, np.ndarray]:
    """{comparison: CKA values [1 + n_resamples (+ n), layers]}: row 0 on every sentence, then each resample of
    `resampled_counts(n, n_resamples, seed)`, then (leave_one_out) each sentence left out. sides: name ->
    representations [n, layers, d] (or [n, d]: one layer) of the same n sentences; comparisons: name ->
    (side, side)."""
    sides = {name: np.asarray(x)[:, None] if np.ndim(x) == 2 else np.asarray(x) for name, x in sides.items()}
    n, n_layers = next(iter(sides.values())).shape[:2]
    if any(x.shape[:2] != (n, n_layers) for x in sides.values()):
        raise ValueError(f"CKA intervals need every side on the same sentences and layers: "
                         f"{ {name: x.shape for name, x in sides.items()} }")
    counts = resampled_counts(n, n_resamples, seed)
    values = {name: [] for name in comparisons}
    for layer in range(n_layers):
        grams = {name: _gram(x[:, layer]) for name, x in sides.items()
                 if any(name in pair for pair in comparisons.values())}
        blocks = [_cka_rows(grams, comparisons, w, debiased) for w in _count_rows(n, counts, leave_one_out)]
        for name in comparisons:
            values[name].append(np.concatenate([block[name] for block in blocks]))
    return {name: np.stack(by_layer, axis=1) for name, by_layer in values.items()}


def interval(values: np.ndarray, n_resamples: int, n_items: int, *, level: float, seed: int,
             method: str) -> Interval:
    """The interval of one statistic from its `resampled_cka` rows [1 + n_resamples (+ n_items with BCa)]."""
    leave_one_out = (lambda: values[1 + n_resamples:]) if method == "bca" else None
    return interval_from_replicates(float(values[0]), values[1 : 1 + n_resamples], n_items, level=level,
                                    seed=seed, method=method, leave_one_out=leave_one_out)


def interval_rows(values: Mapping[str, np.ndarray], n_resamples: int, n_items: int, *, level: float, seed: int,
                  method: str, reference: str = "monolingual") -> list[dict]:
    """One row per (comparison, layer) of `resampled_cka` values: the CKA's interval (ci_* columns); the paired
    interval of this comparison minus `reference` at the layer (vs_<reference>_low/high; NaN on the reference's
    own rows and when the run lacks it); and the comparison's mean over layers (the paper's "average" row) with
    its interval and its paired difference to the reference's mean (layer_mean*)."""
    boot = dict(level=level, seed=seed, method=method)

    def bounds(v: np.ndarray | None) -> tuple[float, float]:
        if v is None:
            return np.nan, np.nan
        found = interval(v, n_resamples, n_items, **boot)
        return found.low, found.high

    base = values.get(reference)
    rows = []
    for name, by_layer in values.items():
        other = base is not None and name != reference
        mean = by_layer.mean(axis=1)
        mean_interval = interval(mean, n_resamples, n_items, **boot)
        mean_vs = bounds(mean - base.mean(axis=1) if other else None)
        for layer in range(by_layer.shape[1]):
            vs = bounds(by_layer[:, layer] - base[:, layer] if other else None)
            rows.append({"comparison": name, "layer": layer,
                         **interval(by_layer[:, layer], n_resamples, n_items, **boot).columns(),
                         f"vs_{reference}_low": vs[0], f"vs_{reference}_high": vs[1],
                         "layer_mean": mean_interval.estimate, "layer_mean_ci_low": mean_interval.low,
                         "layer_mean_ci_high": mean_interval.high,
                         f"layer_mean_vs_{reference}_low": mean_vs[0], f"layer_mean_vs_{reference}_high": mean_vs[1]})
    return rows
