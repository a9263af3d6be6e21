"""Tatoeba's per-query hits and BUCC's per-sentence F1 counts (xling.evaluate.sentence_retrieval) reproduce the
table's numbers, the gather's intervals (xling.evaluate.intervals) bracket them, and the flags fire on planted
degenerate vectors (every score tied, nothing mined)."""

import numpy as np
import pandas as pd
import pytest

from test_sentence_retrieval import bucc_split, planted
from xling.evaluate.intervals import Bootstrap, with_intervals
from xling.evaluate.sentence_retrieval import bucc_table, tatoeba_table

BOOTSTRAP = Bootstrap(resamples=300, seed=1)


def ratio(items: pd.DataFrame) -> pd.Series:
    sums = items.groupby(["layer", "variant", "direction"])[["numerator", "denominator"]].sum()
    return sums.numerator / sums.denominator


def test_tatoeba_items_are_the_hits_whose_mean_is_the_accuracy():
    src, tgt = planted(noise=3.0, seed=2)  # noisy: some queries miss
    ones = np.ones(len(src), dtype=int)
    items = []
    table = tatoeba_table(src[:, None], ones, tgt[:, None], ones, [8], "sentence", alpha=1.0, items=items)
    items = pd.concat(items)
    means = ratio(items)
    for row in table.itertuples():
        assert means[row.layer, row.variant, row.direction] == row.accuracy
    assert (table.chance == 1 / len(src)).all() and table.flag.isna().all()
    out = with_intervals(table, items, 1.0, BOOTSTRAP)
    assert ((out.ci_low <= out.accuracy) & (out.accuracy <= out.ci_high)).all()
    assert (out.n_items == len(src)).all()


def test_collapsed_tatoeba_vectors_are_flagged_tied_and_at_chance():
    n = 30
    same = np.ones((n, 1, 4))
    ones = np.ones(n, dtype=int)
    items = []
    table = tatoeba_table(same, ones, same.copy(), ones, [3], "sentence", alpha=1.0, items=items)
    original = table[table.variant == "original"]
    assert original.flag.str.startswith(f"all {n} scores tied").all()
    out = with_intervals(table, pd.concat(items), 1.0, BOOTSTRAP)
    assert out[out.variant == "original"].flag.str.contains("chance").all()


def test_bucc_items_reproduce_f1_and_nothing_mined_is_flagged():
    dev, dev_gold = bucc_split(0)
    test, test_gold = bucc_split(1)
    items = []
    table = bucc_table(dev, test, dev_gold, test_gold, [7], "sentence", alpha=1.0, k=4, block=8, items=items)
    items = pd.concat(items)
    f1 = ratio(items)
    for row in table.itertuples():
        assert f1[row.layer, row.variant, row.direction] == pytest.approx(row.f1, rel=1e-12)
        assert len(items[items.variant == row.variant]) == row.n_src
    assert table.flag.isna().all() and (table.chance < 0.05).all()
    out = with_intervals(table, items, 1.0, BOOTSTRAP)
    assert ((out.ci_low <= out.f1) & (out.f1 <= out.ci_high)).all()
    perfect = out.set_index("variant").loc["zero_mean"]  # every gold pair mined, nothing else: F1 1 on every item
    mined = items[(items.variant == "zero_mean") & (items.denominator > 0)].denominator
    n_eff = mined.sum() ** 2 / (mined**2).sum()  # Kish's effective items (uncertainty._effective_items)
    assert perfect.ci_method == "clopper-pearson" and perfect.ci_high == 1.0
    assert perfect.ci_low == pytest.approx(0.025 ** (1 / n_eff))  # not a zero-width [1, 1]
    foreign = {(src, en + "-x") for src, en in test_gold}  # no mined pair can be gold
    items = []
    wrong = bucc_table(dev, test, dev_gold, foreign, [7], "sentence", alpha=1.0, k=4, block=8, items=items)
    assert wrong.flag.str.startswith("nothing mined").all() and (wrong.f1 == 0).all()
    # F1 0 on every item: its exact interval reaches above the chance level, which it still holds
    assert with_intervals(wrong, pd.concat(items), 1.0, BOOTSTRAP).flag.str.contains("not above chance").all()
