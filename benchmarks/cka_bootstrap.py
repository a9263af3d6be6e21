"""Time of CKA's bootstrap interval over sentences (xling.evaluate.cka_intervals) at the demo's and the study's
sizes: one layer of one comparison, 1000 resamples (percentile), against the per-resample loop of
`bootstrap_statistic` with `linear_cka` (timed on a few resamples and scaled). Run:
`python benchmarks/cka_bootstrap.py` (numbers for docs/performance.md)."""

from __future__ import annotations

import time

import numpy as np

from xling.evaluate.cka import linear_cka
from xling.evaluate.cka_intervals import interval, resampled_cka
from xling.evaluate.uncertainty import bootstrap_statistic

RESAMPLES = 1000
SIZES = {"demo": (500, 64), "study": (2000, 768)}


def main() -> None:
    for name, (n, d) in SIZES.items():
        rng = np.random.default_rng(0)
        x = rng.normal(size=(n, d))
        y = x @ rng.normal(size=(d, d)) / np.sqrt(d) + rng.normal(size=(n, d))
        start = time.perf_counter()
        values = resampled_cka({"x": x, "y": y}, {"xy": ("x", "y")}, n_resamples=RESAMPLES, seed=0)["xy"][:, 0]
        found = interval(values, RESAMPLES, n, level=0.95, seed=0, method="percentile")
        fast = time.perf_counter() - start
        loop_resamples = 20
        start = time.perf_counter()
        bootstrap_statistic(lambda idx: linear_cka(x[idx], y[idx]), n, n_resamples=loop_resamples, seed=0)
        loop = (time.perf_counter() - start) * RESAMPLES / loop_resamples
        print(f"{name}: n={n} d={d} {RESAMPLES} resamples, one layer: {fast:.2f} s from Gram matrices "
              f"({found}); per-resample loop ~{loop:.1f} s (scaled from {loop_resamples})")


if __name__ == "__main__":
    main()
