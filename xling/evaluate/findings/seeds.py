"""Numbers over fine-tuning seeds: a transfer score's mean over seeds with its interval over the seeds and the
test items (xling.evaluate.seed_intervals), the paired interval of two settings' difference, and when such a
mean counts as degenerate (`seed_flag`). The study modules judge every transfer claim with several seeds here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from xling.evaluate.findings.core import (
    ROW_INTERVAL,
    Criteria,
    Measure,
    Tables,
    joined_flag,
    rows_chance_flag,
    rows_mean,
)
from xling.evaluate.seed_intervals import (
    bootstrap_seed_means,
    paired_seeds_and_items,
    seed_by_item_variance,
    seed_means_difference,
    seeds_and_items,
    seeds_and_items_from_items,
)
from xling.evaluate.uncertainty import Interval, Ratio


def over_seeds(
    label: str,
    rows: pd.DataFrame,
    by: str = "lang",
    flags=(),
    limits: tuple[float, float] = (0.0, 100.0),
    items: pd.DataFrame | None = None,
    criteria: Criteria | None = None,
) -> Measure:
    """The mean over `by` (languages) of `value` (a transfer score, in percent: `limits`). With several seeds and
    every row's item interval (ROW_INTERVAL, the gather's bootstrap), the interval over seeds AND test items
    (xling.evaluate.seed_intervals: every seed is scored on the same items, so the seeds' spread alone holds none
    of the test set's error), labelled with the seeds and the items per seed: from the per-item scores `items`
    (transfer_items) where every row has them (seed_intervals.seeds_and_items_from_items, calibrated), else from
    the rows' bounds (seed_intervals.seeds_and_items, conservative); with several seeds and no item intervals,
    Student's t over the seeds' means; with one seed, the rows' item interval (rows_mean). Its flag: `seed_flag`."""
    if "seed" not in rows or rows["seed"].nunique() < 2:
        return rows_mean(label, rows, "value", by, flags)
    from_items = _from_seed_items(rows, items, by, criteria or Criteria(), limits)
    if from_items is not None:
        found = Measure(
            f"{label} (over {from_items.n_seeds} seeds and {_items_per_seed(rows, by)} items)",
            from_items.estimate,
            from_items.low,
            from_items.high,
        )
    elif all(c in rows and rows[c].notna().all() for c in ROW_INTERVAL):
        per_seed = rows.groupby(["seed", by])[["value", *ROW_INTERVAL]].mean().groupby("seed").mean()
        bounds = seeds_and_items(per_seed["value"], per_seed["ci_low"], per_seed["ci_high"], limits=limits)
        found = Measure(
            f"{label} (over {bounds.n_seeds} seeds and {_items_per_seed(rows, by)} items)",
            bounds.estimate,
            bounds.low,
            bounds.high,
        )
    else:
        means = rows.groupby(["seed", by])["value"].mean().groupby("seed").mean()
        half = stats.t.ppf(0.5 + 0.95 / 2, len(means) - 1) * means.std(ddof=1) / np.sqrt(len(means))
        mean = float(means.mean())
        found = Measure(f"{label} (over {len(means)} seeds)", mean, mean - half, mean + half)
    return seed_flag(found, rows, flags, by)


def seed_flag(measure: Measure, rows: pd.DataFrame, flags, by: str = "lang") -> Measure:
    """A mean over fine-tuning seeds is degenerate when half its seeds or more are (a seed is when any of its
    rows is: at chance, one class) or when its own interval is not above the rows' chance. A minority of
    degenerate seeds is a draw of the recipe, whose spread the seeds are there to measure (a fine-tuning that
    answers one class in one language while its English was learned: the failed runs of Mosbach et al. 2021):
    the mean keeps them and its label names them. `flags` not aligned with the rows (a tuple) are joined."""
    if not isinstance(flags, pd.Series) or not flags.index.equals(rows.index):
        return Measure(measure.label, measure.value, measure.low, measure.high, joined_flag(flags))
    marked = flags.map(lambda f: isinstance(f, str) and bool(f)).astype(bool)
    bad = sorted(rows.loc[marked, "seed"].unique().tolist())
    if 2 * len(bad) >= rows["seed"].nunique():
        return Measure(measure.label, measure.value, measure.low, measure.high, joined_flag(flags))
    label = measure.label
    if bad:
        named = f"seed{'s' if len(bad) > 1 else ''} {', '.join(str(s) for s in bad)}"
        label = f"{label[:-1]}; {named} degenerate)" if label.endswith(")") else f"{label} ({named} degenerate)"
    return rows_chance_flag(Measure(label, measure.value, measure.low, measure.high), rows, by=by)


def _from_seed_items(
    rows: pd.DataFrame,
    items: pd.DataFrame | None,
    by: str,
    criteria: Criteria,
    limits: tuple[float, float],
    scale: float = 100.0,
):
    """over_seeds' interval from the per-item scores (None where a row has none): the item bootstrap of the
    seed-averaged score, the groups drawing the same items where they have as many (translations)."""
    if items is None or any(c not in rows for c in TRANSFER_ITEM_KEYS) or rows.duplicated(["seed", by]).any():
        return None
    groups = _seed_items(rows, items, by, sorted(set(rows[by])))
    if groups is None:
        return None
    shared = len({len(by_seed[0].numerator) for by_seed in groups}) == 1
    found = bootstrap_seed_means(groups, shared_items=shared, **criteria.boot())
    means = rows.groupby(["seed", by])["value"].mean().groupby("seed").mean()
    return seeds_and_items_from_items(
        means, scale * found.low, scale * found.high, scale**2 * seed_by_item_variance(groups), criteria.level, limits
    )


def _items_per_seed(rows: pd.DataFrame, by: str) -> str:
    """The test items each seed was scored on, summed over the rows' test sets ("1,200"; "900-1,200" where the
    seeds differ; "?" where the table does not count them)."""
    if "n_items" not in rows or rows["n_items"].isna().any():
        return "?"
    counts = rows.groupby(["seed", by])["n_items"].max().groupby("seed").sum()
    low, high = int(counts.min()), int(counts.max())
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


#: what names a transfer row's items: the fine-tuning (from the items file's path, `transfer_run_of`) and the row
TRANSFER_ITEM_KEYS = ("task", "lm", "variant", "seed", "lang", "split", "transform", "alpha", "metric")


def transfer_run_of(path) -> dict:
    """The fine-tuning a per-item transfer file belongs to, from its path
    .../eval/transfer/{task}/{lm}/{variant}/seed{seed}.items.parquet (lm holds a slash or more)."""
    parts = Path(path).parts
    at = max(i for i in range(len(parts) - 1) if parts[i] == "eval" and parts[i + 1] == "transfer")
    task, *lm, variant, name = parts[at + 2 :]
    return dict(task=task, lm="/".join(lm), variant=variant, seed=int(name.removeprefix("seed").split(".")[0]))


def _seed_items(rows: pd.DataFrame, items: pd.DataFrame, by: str, groups: list) -> list[list[Ratio]] | None:
    """rows' items as [group][seed] Ratios (seeds in order; None where a row has no items or a seed lacks a
    group: then no paired interval)."""
    found = rows[list(TRANSFER_ITEM_KEYS)].merge(items, on=list(TRANSFER_ITEM_KEYS))
    seeds = sorted(rows["seed"].unique())
    out = []
    for group in groups:
        by_seed = []
        for seed in seeds:
            part = found[(found[by] == group) & (found["seed"] == seed)].sort_values("item")
            if part.empty or part["item"].duplicated().any():
                return None
            by_seed.append(Ratio(part["numerator"].to_numpy(float), part["denominator"].to_numpy(float)))
        out.append(by_seed)
    return out


def paired_over_seeds(
    tables: Tables,
    a_rows: pd.DataFrame,
    b_rows: pd.DataFrame,
    criteria: Criteria,
    by: str = "lang",
    scale: float = 100.0,
) -> Interval | None:
    """The paired interval of over_seeds(a) - over_seeds(b), two transfer settings with several seeds on the same
    test items (xling.evaluate.seed_intervals.paired_seeds_and_items: the seeds' spread and the item bootstrap of
    the seed-averaged difference, every seed of both drawing the same items), in the rows' unit (`scale` times
    the items' fractions). None where the run has no per-item transfer scores for every row, a side has one seed,
    or the two sides are not over the same groups (the verdicts then compare the two intervals)."""
    items = tables.get("transfer_items")
    if items is None or any(
        r.empty or "seed" not in r or r["seed"].nunique() < 2 or any(c not in r for c in TRANSFER_ITEM_KEYS)
        for r in (a_rows, b_rows)
    ):
        return None
    groups = sorted(set(a_rows[by]))
    if groups != sorted(set(b_rows[by])) or any(r.duplicated(["seed", by]).any() for r in (a_rows, b_rows)):
        return None
    a_items, b_items = (_seed_items(r, items, by, groups) for r in (a_rows, b_rows))
    if (
        a_items is None
        or b_items is None
        or any(len(a[0].numerator) != len(b[0].numerator) for a, b in zip(a_items, b_items, strict=True))
    ):
        return None
    found = seed_means_difference(a_items, b_items, **criteria.boot())
    a_means, b_means = (r.groupby(["seed", by])["value"].mean().groupby("seed").mean() for r in (a_rows, b_rows))
    pair = paired_seeds_and_items(a_means, b_means, scale * found.low, scale * found.high, criteria.level)
    return Interval(
        pair.estimate,
        pair.low,
        pair.high,
        criteria.level,
        criteria.resamples,
        criteria.seed,
        found.n_items,
        "seeds and items",
    )
