"""The gather step's intervals: each row of an evaluation's table gets the bootstrap interval of its number from
the evaluation's per-item table (`<table stem>.items.parquet`), and its flag the at-chance reason that interval
supports (and, for a fine-tuned model, whether it learned its own language).

Why in the gather: the items are fixed by the evaluation, so changing the bootstrap (config `bootstrap`: resamples,
level, seed, method) reruns only the gathers, never a model.

An items table holds the columns that name its table's rows (any columns it shares with the table), `item`,
`numerator` and `denominator`; a row's number is sum(numerator) / sum(denominator) over its items, times
`scale` (100 for the tables in percent).
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np
import pandas as pd

from xling.evaluate import chance
from xling.evaluate.uncertainty import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, Interval, Ratio, bootstrap_ratio

ITEM_COLUMNS = ("item", "numerator", "denominator")
INTERVAL_COLUMNS = ("ci_low", "ci_high", "ci_level", "ci_resamples", "ci_seed", "ci_method", "n_items")


@dataclass(frozen=True)
class Bootstrap:
    """How the intervals are drawn (config `bootstrap`)."""

    resamples: int = DEFAULT_RESAMPLES
    level: float = DEFAULT_LEVEL
    seed: int = DEFAULT_SEED
    method: str = "percentile"


def item_table(keys: dict, numerator, denominator=1) -> pd.DataFrame:
    """One row's items (ITEM_COLUMNS), named by `keys` (the columns the row shares with its table): item i has
    numerator[i] / denominator[i] (a scalar denominator: the same for every item, a hit's 1)."""
    numerator = np.asarray(numerator)
    return pd.DataFrame({**keys, "item": np.arange(len(numerator)), "numerator": numerator, "denominator": denominator})


def _interval(items: pd.DataFrame, scale: float, bootstrap: Bootstrap) -> Interval | None:
    """The scaled interval of one row's items; None when nothing was scored (denominators sum to 0)."""
    ratio = Ratio(items["numerator"].to_numpy(np.float64), items["denominator"].to_numpy(np.float64))
    if ratio.denominator.sum() <= 0:
        return None
    found = bootstrap_ratio(
        ratio, n_resamples=bootstrap.resamples, level=bootstrap.level, seed=bootstrap.seed, method=bootstrap.method
    )
    return Interval(
        scale * found.estimate,
        scale * found.low,
        scale * found.high,
        found.level,
        found.n_resamples,
        found.seed,
        found.n_items,
        found.method,
    )


def with_intervals(
    table: pd.DataFrame, items: pd.DataFrame, scale: float = 1.0, bootstrap: Bootstrap = Bootstrap()
) -> pd.DataFrame:
    """`table` (one evaluation's rows) with the interval columns of each row from its items, and its `flag`
    extended by the at-chance reason of that interval (rows with a `chance`) and, when a `learn_check` row
    marks the fine-tuning's own dev split, by `did_not_learn` on every row."""
    keys = [column for column in items.columns if column not in ITEM_COLUMNS]
    missing = [column for column in keys if column not in table.columns]
    if missing:
        raise ValueError(f"items name rows by columns the table lacks: {missing}")
    found = []
    for key, group in items.groupby(keys, dropna=False, sort=False):
        interval = _interval(group, scale, bootstrap)
        columns = (
            interval.columns()
            if interval is not None
            else {**dict.fromkeys(INTERVAL_COLUMNS, np.nan), "n_items": len(group)}
        )
        found.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                **columns,
                "_interval": interval,
            }
        )
    out = table.merge(pd.DataFrame(found), on=keys, how="left", validate="many_to_one")
    if "flag" not in out:
        out["flag"] = None
    levels = out["chance"] if "chance" in out else [np.nan] * len(out)
    out["flag"] = [
        chance.flag(old if isinstance(old, str) else None, _at_chance(interval, level))
        for old, interval, level in zip(out["flag"], out["_interval"], levels, strict=True)
    ]
    if "learn_check" in out and out["learn_check"].any():
        dev = out[out["learn_check"].astype(bool)].iloc[0]
        reason = _at_chance(dev["_interval"], dev.get("chance", np.nan), learned_language=dev.get("lang", "English"))
        out["flag"] = [chance.flag(old if isinstance(old, str) else None, reason) for old in out["flag"]]
    return out.drop(columns="_interval")


def _at_chance(interval: Interval | None, level, learned_language: str | None = None) -> str | None:
    """The at-chance reason of an interval (None: no interval or no chance level); with learned_language, the
    fine-tuning's did-not-learn reason on that language's dev split."""
    if interval is None or level is None or not np.isfinite(level):
        return None
    if learned_language is not None:
        return chance.did_not_learn(interval, level, language=learned_language)
    return chance.at_or_below_chance(interval, level)
