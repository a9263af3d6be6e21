"""Time and result of CKA's jackknife interval over sentences (xling.evaluate.cka_intervals) at the demo's and the
study's sizes: one layer of one comparison, G = 100 groups left out in turn, from the layer's Gram matrices,
against the loop of `linear_cka` over the kept rows (timed on a few groups and scaled). Prints the estimate and
its interval (which must bracket it: the bootstrap's duplicated rows put its whole interval above the estimate on
this data). Run: `python benchmarks/cka_intervals.py` (numbers for docs/performance.md)."""

from __future__ import annotations

import time

import numpy as np

from xling.evaluate.cka import linear_cka
from xling.evaluate.cka_intervals import interval, jackknife_groups, left_out_cka

SIZES = {"demo": (500, 64), "study": (2000, 768)}
LOOP_GROUPS = 10


def main() -> None:
    for name, (n, d) in SIZES.items():
        rng = np.random.default_rng(0)
        x = rng.normal(size=(n, d))
        y = x @ rng.normal(size=(d, d)) / np.sqrt(d) + rng.normal(size=(n, d))
        start = time.perf_counter()
        values = left_out_cka({"x": x, "y": y}, {"xy": ("x", "y")}, seed=0)["xy"][:, 0]
        found = interval(values, n, level=0.95, seed=0)
        fast = time.perf_counter() - start
        groups = jackknife_groups(n, seed=0)
        start = time.perf_counter()
        for group in groups[:LOOP_GROUPS]:
            kept = np.setdiff1d(np.arange(n), group)
            linear_cka(x[kept], y[kept])
        loop = (time.perf_counter() - start) * len(groups) / LOOP_GROUPS
        print(
            f"{name}: n={n} d={d} {len(groups)} groups, one layer: CKA {linear_cka(x, y):.3f}, "
            f"95% interval [{found.low:.3f}, {found.high:.3f}]; {fast:.2f} s from Gram matrices, "
            f"loop over the kept rows ~{loop:.2f} s (scaled from {LOOP_GROUPS})"
        )


if __name__ == "__main__":
    main()
