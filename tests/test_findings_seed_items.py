"""Conneau et al.'s ablation claims and Cao et al.'s XNLI claims take their intervals over seeds and test items
from the per-item scores (transfer_items), as Liu et al.'s transfer claims do: each measure equals seeds.over_seeds'
calibrated interval from the items (not the conservative one from the rows' bounds), and two settings tested on
the same items are compared by the paired interval over seeds and items. Planted tables: three seeds whose items
share one difficulty per language (translations), and rows whose own bounds are far wider than the items'."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from xling.evaluate.findings import Criteria, judge_claims
from xling.evaluate.findings.seeds import TRANSFER_ITEM_KEYS, over_seeds, paired_over_seeds

SEEDS, N = (1, 2, 3), 200
#: the rows' own bounds: value -+ 10, far wider than 200 items' bootstrap, so the two rules tell apart
ROW_HALF = 10.0
SETTINGS = dict(resamples=200, stand_ins={"zh": "xc", "fr": "xa"}, aligned_langs=("xa", "xb"))
CRITERIA = Criteria(**SETTINGS)


def planted_hits(rate: float, seed: int, lang: str, model: str) -> np.ndarray:
    """N items right (1) or wrong (0): a difficulty shared by every model and seed in `lang`, a little noise per
    fine-tuning (`model`, `seed`), so the seeds agree on most items."""
    difficulty = np.random.default_rng(sum(map(ord, lang))).random(N)
    noise = np.random.default_rng([seed, sum(map(ord, model))]).random(N)
    return (0.85 * difficulty + 0.15 * noise < rate).astype(int)


def row_and_items(keys: dict, hits: np.ndarray) -> tuple[dict, pd.DataFrame]:
    """A transfer table's test row of `hits` (with its own bounds, n_items) and its per-item scores."""
    value = 100 * hits.mean()
    row = dict(keys, value=value, ci_low=value - ROW_HALF, ci_high=value + ROW_HALF, n_items=N, n=N, selected=True)
    items = pd.DataFrame(
        {**{k: keys[k] for k in TRANSFER_ITEM_KEYS}, "item": np.arange(N), "numerator": hits, "denominator": 1}
    )
    return row, items


def measures(row: pd.Series) -> dict[str, tuple[float, float, float]]:
    return {m["label"]: (m["value"], m["low"], m["high"]) for m in json.loads(row["measures"])}


def finding(tables: dict, claim: str) -> pd.Series:
    return judge_claims(tables, "en", **SETTINGS).set_index("id").loc[claim]


# ---------------------------------------------------------------------------------------------- Conneau et al.

#: accuracy rate of each ablation in each language; two grid points per search, the second 0.04 lower
ABLATIONS = {"default": 0.6, "no-anchors": 0.6, "extra-anchors": 0.72, "sep-emb-l2": 0.45}
POINTS = {"f0-b32-lr0.0005": 0.0, "f0-b32-lr0.001": -0.04}


def ablation_tables() -> dict:
    """An ablation table of XNLI on en-xa and en-xc with two grid points per search (the paper's best two,
    averaged: Conneau et al. §3.2), English dev rows that choose them, and every fine-tuning's items."""
    rows, items = [], []
    for setting, rate in ABLATIONS.items():
        for lang in ("xa", "xc"):
            for seed in SEEDS:
                for variant, shift in POINTS.items():
                    keys = dict(
                        task="xnli",
                        lm=f"ablation/{setting}/en-{lang}",
                        variant=variant,
                        seed=seed,
                        split="test",
                        transform="none",
                        alpha=np.nan,
                        metric="accuracy",
                    )
                    hits = planted_hits(rate + shift, seed, lang, setting + variant)
                    row, part = row_and_items(dict(keys, lang=lang), hits)
                    rows.append(row)
                    items.append(part)
                    rows.append(dict(keys, lang="en", split="dev", value=80.0 + 10 * shift, selected=True, n=N))
    return {"ablation": pd.DataFrame(rows), "transfer_items": pd.concat(items, ignore_index=True)}


def by_hand(tables: dict, setting: str, lang: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A setting's rows as the claims read them (each search's two points averaged) and their items, each item
    the mean over the two points, computed here from the planted tables."""
    test = tables["ablation"]
    test = test[(test["split"] == "test") & test["lm"].str.startswith(f"ablation/{setting}/")]
    if lang:
        test = test[test["lang"] == lang]
    keys = ["task", "lm", "seed", "lang", "split", "transform", "metric"]
    # the value the mean over the two points, the bounds the best point's (xling.evaluate.ablation.best_points)
    rows = (
        test.sort_values("variant")
        .groupby(keys, as_index=False)
        .agg(
            value=("value", "mean"),
            ci_low=("ci_low", "first"),
            ci_high=("ci_high", "first"),
            n_items=("n_items", "max"),
        )
    )
    rows = rows.assign(variant="f0-b32-lr0.0005", alpha=np.nan)
    items = tables["transfer_items"]
    items = (
        items[items["lm"].isin(set(rows["lm"]))]
        .groupby([*keys, "item"], as_index=False)[["numerator", "denominator"]]
        .mean()
    )
    return rows, items.assign(variant="f0-b32-lr0.0005", alpha=np.nan)


def test_ablation_claims_take_the_interval_over_seeds_and_items_from_the_items():
    tables = ablation_tables()
    for claim, settings, lang in (
        ("conneau2020.anchors", ("no-anchors", "default"), None),
        ("conneau2020.sharing", ("default", "sep-emb-l2"), None),
        ("conneau2020.extra-anchors", ("extra-anchors", "default"), "xc"),
    ):
        row = finding(tables, claim)
        found = measures(row)
        for setting in settings:
            rows, items = by_hand(tables, setting, lang)
            label = f"{setting} xnli" + (f" {lang}" if lang else "")
            calibrated = over_seeds(label, rows, items=items, criteria=CRITERIA)
            conservative = over_seeds(label, rows)
            assert calibrated.label == f"{label} (over 3 seeds and {N * (1 if lang else 2)} items)"
            got = found[calibrated.label]
            assert got == pytest.approx((calibrated.value, calibrated.low, calibrated.high)), (claim, setting)
            assert got[2] - got[1] < conservative.high - conservative.low - 1.0  # narrower than the rows' rule
        a, b = (by_hand(tables, s, lang) for s in settings)
        pair = paired_over_seeds({"transfer_items": pd.concat([a[1], b[1]])}, a[0], b[0], CRITERIA)
        assert f"paired difference {pair.estimate:+.3g} [{pair.low:+.3g}, {pair.high:+.3g}]" in row["reason"], (
            claim,
            row["reason"],
        )
    assert finding(tables, "conneau2020.sharing")["outcome"] == "holds"


def test_ablation_items_that_do_not_reproduce_the_row_leave_the_rows_bounds():
    """A fine-tuning whose items do not add up to its row's score (NER F1's items, unequal denominators, are
    averaged over two points so) gets no item interval: the rows' conservative one."""
    tables = ablation_tables()
    items = tables["transfer_items"]
    off = (items["lm"] == "ablation/no-anchors/en-xa") & (items["seed"] == 2) & (items["item"] < 20)
    tables["transfer_items"] = items.assign(numerator=np.where(off, 1 - items["numerator"], items["numerator"]))
    rows, _ = by_hand(tables, "no-anchors")
    conservative = over_seeds("no-anchors xnli", rows)
    assert measures(finding(tables, "conneau2020.anchors"))[conservative.label] == pytest.approx(
        (conservative.value, conservative.low, conservative.high)
    )


# ---------------------------------------------------------------------------------------------- Cao et al.

BASE, ALIGNED = "bert/500-w64", "aligned/400/bert/500-w64"
#: (lm, variant, transform, accuracy rate) of Table 1's settings: base, fine-tuned alignment, the two rotations
CAO = (
    (BASE, "f0-cao", "none", 0.5),
    (ALIGNED, "f0-cao", "none", 0.62),
    (BASE, "f0-rotword", "rotation-word", 0.52),
    (BASE, "f0-rotsentence", "rotation-sentence", 0.53),
)


def cao_tables() -> dict:
    rows, items = [], []
    for lm, variant, transform, rate in CAO:
        for lang in ("xa", "xb"):
            for seed in SEEDS:
                keys = dict(
                    task="xnli",
                    lm=lm,
                    variant=variant,
                    seed=seed,
                    lang=lang,
                    split="test",
                    transform=transform,
                    alpha=np.nan,
                    metric="accuracy",
                )
                row, part = row_and_items(keys, planted_hits(rate, seed, lang, lm + variant))
                rows.append(
                    dict(
                        row,
                        model="bert",
                        size=500,
                        window=64,
                        freeze=0,
                        train_transform="none",
                        shift_settings='{"rotation": {"sentences": 400}}' if transform != "none" else "{}",
                    )
                )
                items.append(part)
    return {"transfer": pd.DataFrame(rows), "transfer_items": pd.concat(items, ignore_index=True)}


def cao_rows(tables: dict, lm: str, variant: str, lang: str | None = None) -> pd.DataFrame:
    rows = tables["transfer"]
    rows = rows[(rows["lm"] == lm) & (rows["variant"] == variant)]
    return rows if lang is None else rows[rows["lang"] == lang]


def test_cao_xnli_claims_take_the_interval_over_seeds_and_items_from_the_items():
    tables = cao_tables()
    items = tables["transfer_items"]
    row = finding(tables, "cao2020.xnli")
    found = measures(row)
    for lang in ("xa", "xb"):
        aligned, base = cao_rows(tables, ALIGNED, "f0-cao", lang), cao_rows(tables, BASE, "f0-cao", lang)
        for name, rows in (("aligned", aligned), ("base", base)):
            calibrated = over_seeds(f"{lang} {name}", rows, items=items, criteria=CRITERIA)
            conservative = over_seeds(f"{lang} {name}", rows)
            got = found[calibrated.label]
            assert got == pytest.approx((calibrated.value, calibrated.low, calibrated.high)), (lang, name)
            assert got[2] - got[1] < conservative.high - conservative.low - 1.0
        pair = paired_over_seeds(tables, aligned, base, CRITERIA)
        assert f"paired difference {pair.estimate:+.3g} [{pair.low:+.3g}, {pair.high:+.3g}]" in row["reason"]
    assert row["outcome"] == "holds", row["reason"]
    row = finding(tables, "cao2020.xnli.rotations")
    found = measures(row)
    fine_tuned = cao_rows(tables, ALIGNED, "f0-cao")
    for variant, words in (
        ("f0-rotword", "word-aligned BERT (rotation)"),
        ("f0-rotsentence", "sentence-aligned BERT (rotation)"),
    ):
        rotated = cao_rows(tables, BASE, variant)
        calibrated = over_seeds(words, rotated, items=items, criteria=CRITERIA)
        assert found[calibrated.label] == pytest.approx((calibrated.value, calibrated.low, calibrated.high))
        pair = paired_over_seeds(tables, fine_tuned, rotated, CRITERIA)
        assert f"paired difference {pair.estimate:+.3g} [{pair.low:+.3g}, {pair.high:+.3g}]" in row["reason"]
    calibrated = over_seeds("word-aligned BERT (fine-tuned)", fine_tuned, items=items, criteria=CRITERIA)
    assert found[calibrated.label] == pytest.approx((calibrated.value, calibrated.low, calibrated.high))
    assert row["outcome"] == "holds", row["reason"]
