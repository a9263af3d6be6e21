"""The Conneau et al. section 5 claims of the findings table (xling.evaluate.findings) on hand-made monolingual
tables whose outcomes can be checked by hand: without the rows' intervals (the gather draws them from the
per-query hits) they are inconclusive at best; a number at chance makes its claim not measurable. With planted
intervals (P@1 rows as the gather writes them, CKA's jackknife as the cka job does) the claims reach every
outcome."""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURABLE, NOT_MEASURED, judge_claims

MODELS = dict(lm_src="mono/en/100-w8", lm_tgt="mono/xa/100-w8")
BILINGUAL = dict(lm_multilingual="results/x/models/bert/100-w8")  # the run's BERT at the monolingual size, window


def finding(tables, claim) -> pd.Series:
    return judge_claims(tables, "en").set_index("id").loc[claim]


def words(embedding: float, fasttext: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(pair=pair, level=level, layer=0, p_at_1=value + (0.1 if pair == "en-xb" else 0), **MODELS)
            for pair in ("en-xa", "en-xb")
            for level, value in (("embedding", embedding), ("fasttext", fasttext))
        ]
    )


def sentences(mapped: list[float], unmapped: float = 0.01) -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(pair="en-xa", layer=layer, method=method, direction=direction, p_at_1=value, **MODELS)
            for layer, value in enumerate(mapped)
            for method, value in (("procrustes", value), ("none", unmapped))
            for direction in ("en->xx", "xx->en")
        ]
    )


def cka(mono: list[float], multi: list[float], random: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(pair=pair, comparison=comparison, layer=layer, cka=value, **MODELS, **BILINGUAL)
            for pair in ("en-xa", "en-xb")
            for comparison, values in (("monolingual", mono), ("multilingual", multi), ("random", random))
            for layer, value in enumerate(values)
        ]
    )


def test_embeddings_against_fasttext():
    """No per-query items in the table: inconclusive, never holds; at chance (1 / target words): not measurable."""
    row = finding({"monolingual_words": words(0.30, 0.25)}, "conneau2020.mono.words")
    assert row["outcome"] == INCONCLUSIVE and "no interval for embedding, fasttext yet" in row["reason"]
    assert "embedding 35.000, fasttext 30.000" in row["reason"]  # P@1 judged in percent
    assert row["pairs"] == "en-xa, en-xb" and row["models"] == "mono/en/100-w8, mono/xa/100-w8"
    at_chance = words(0.0, 0.01).assign(n_tgt_words=100)
    at_chance.loc[at_chance["level"] == "embedding", "p_at_1"] = 0.0  # P@1 0 on both pairs: chance is 0.01
    row = finding({"monolingual_words": at_chance}, "conneau2020.mono.words")
    assert row["outcome"] == NOT_MEASURABLE and "at or below chance" in row["flags"]


def p_at_1_intervals(table: pd.DataFrame, half: float) -> pd.DataFrame:
    """The rows' intervals as the gather draws them from the per-query hits: P@1 +- half (within 0-1)."""
    return table.assign(ci_low=(table["p_at_1"] - half).clip(0, 1), ci_high=(table["p_at_1"] + half).clip(0, 1))


def test_embeddings_against_fasttext_on_the_rows_intervals():
    """embedding 35 vs fastText 30 (each pair's mean): within +-2 the embedding is at least as good; at fastText
    50 it is worse beyond the intervals; within +-10 neither is ruled out."""
    assert (
        finding({"monolingual_words": p_at_1_intervals(words(0.35, 0.30), 0.02)}, "conneau2020.mono.words")["outcome"]
        == HOLDS
    )
    row = finding({"monolingual_words": p_at_1_intervals(words(0.30, 0.50), 0.02)}, "conneau2020.mono.words")
    assert row["outcome"] == FAILS and "embedding 35.000 [33.000, 37.000]" in row["reason"], row["reason"]
    assert (
        finding({"monolingual_words": p_at_1_intervals(words(0.30, 0.32), 0.10)}, "conneau2020.mono.words")["outcome"]
        == INCONCLUSIVE
    )


def test_sentences_need_an_interval_at_every_layer():
    row = finding({"monolingual_sentences": sentences([0.5, 0.4, 0.3])}, "conneau2020.mono.sentences")
    assert row["outcome"] == INCONCLUSIVE and row["layers"] == "0, 1, 2"
    assert "layer 1: no interval for layer 1 procrustes, layer 1 none yet" in row["reason"]


def test_sentences_through_the_map_against_unmapped_spaces_at_chance():
    """Unmapped, two monolingual BERTs are at chance by design (chance 1 % of 100 sentences): that side's flag
    is kept out and the map's gain is judged; a mapped side at chance makes the claim not measurable."""
    unmapped_at_chance = p_at_1_intervals(sentences([0.5, 0.4, 0.3], unmapped=0.005), 0.02).assign(n_test_sentences=100)
    row = finding({"monolingual_sentences": unmapped_at_chance}, "conneau2020.mono.sentences")
    assert row["outcome"] == HOLDS and not row["flags"], row["reason"]
    mapped_at_chance = p_at_1_intervals(sentences([0.5, 0.4, 0.008], unmapped=0.005), 0.02).assign(n_test_sentences=100)
    row = finding({"monolingual_sentences": mapped_at_chance}, "conneau2020.mono.sentences")
    assert row["outcome"] == NOT_MEASURABLE and "not above chance: layer 2 procrustes 0.800" in row["flags"]  # %
    worse = p_at_1_intervals(sentences([0.5, 0.1, 0.3], unmapped=0.2), 0.02).assign(n_test_sentences=100)
    row = finding({"monolingual_sentences": worse}, "conneau2020.mono.sentences")
    assert row["outcome"] == FAILS and "layer 1 procrustes 10.000 [8.000, 12.000] not > layer 1 none" in row["reason"]


def test_cka_claims_without_intervals_are_inconclusive():
    """A CKA table drawn before the intervals: the claims are open, never hold."""
    table = cka(mono=[0.7, 0.6], multi=[0.8, 0.7], random=[0.2, 0.1])
    assert finding({"cka": table}, "conneau2020.cka.random")["outcome"] == INCONCLUSIVE  # no interval yet
    row = finding({"cka": table}, "conneau2020.cka.shared")
    assert row["outcome"] == INCONCLUSIVE and "en-xa multilingual (layer mean) 0.750" in row["reason"]
    assert "en-xa monolingual (layer mean) 0.650" in row["reason"]
    no_multi = table[table["comparison"] != "multilingual"]
    assert finding({"cka": no_multi}, "conneau2020.cka.shared")["outcome"] == NOT_MEASURED


def with_intervals(table: pd.DataFrame, half: float, paired_half: float) -> pd.DataFrame:
    """Planted intervals as the cka job writes them: each CKA +- half, each paired difference to the monolingual
    comparison (at the layer, and of the layers' mean) +- paired_half around the difference."""
    table = table.copy()
    mono = table[table["comparison"] == "monolingual"].set_index(["pair", "layer"])["cka"]
    table["layer_mean"] = table.groupby(["pair", "comparison"])["cka"].transform("mean")
    mono_mean = table[table["comparison"] == "monolingual"].groupby("pair")["cka"].mean()
    difference = table["cka"].to_numpy() - mono.loc[list(zip(table["pair"], table["layer"], strict=True))].to_numpy()
    mean_difference = table["layer_mean"].to_numpy() - mono_mean.loc[table["pair"]].to_numpy()
    own = table["comparison"] == "monolingual"
    return table.assign(
        ci_low=table["cka"] - half,
        ci_high=table["cka"] + half,
        ci_level=0.95,
        ci_resamples=100,
        ci_seed=0,
        ci_method="jackknife",
        n_items=500,
        vs_monolingual_low=(difference - paired_half),
        vs_monolingual_high=(difference + paired_half),
        layer_mean_ci_low=table["layer_mean"] - half,
        layer_mean_ci_high=table["layer_mean"] + half,
        layer_mean_vs_monolingual_low=mean_difference - paired_half,
        layer_mean_vs_monolingual_high=mean_difference + paired_half,
    ).assign(
        **{
            column: lambda t, c=column: t[c].mask(own)
            for column in (
                "vs_monolingual_low",
                "vs_monolingual_high",
                "layer_mean_vs_monolingual_low",
                "layer_mean_vs_monolingual_high",
            )
        }
    )


def test_cka_above_random_each_outcome():
    """Paired intervals decide: a gap wider than the paired half-width holds (even where the two CKAs'
    own intervals overlap), a paired interval across 0 is inconclusive, a lower CKA does not hold, and a
    missing or flagged CKA is not measurable."""
    claim = "conneau2020.cka.random"
    overlapping = with_intervals(cka(mono=[0.30, 0.25], multi=[0.4, 0.3], random=[0.25, 0.20]), 0.1, 0.02)
    row = finding({"cka": overlapping}, claim)
    assert row["outcome"] == HOLDS and "paired difference +0.05 [+0.03, +0.07]" in row["reason"]
    assert "en-xb layer 1 monolingual 0.250 [0.150, 0.350]" in row["reason"]
    row = finding(
        {"cka": with_intervals(cka(mono=[0.30, 0.25], multi=[0.4, 0.3], random=[0.25, 0.20]), 0.1, 0.08)}, claim
    )
    assert row["outcome"] == INCONCLUSIVE and "the order is not resolved" in row["reason"]
    row = finding(
        {"cka": with_intervals(cka(mono=[0.30, 0.10], multi=[0.4, 0.3], random=[0.25, 0.20]), 0.01, 0.02)}, claim
    )
    assert row["outcome"] == FAILS and "layer 1 monolingual 0.100 [0.090, 0.110] not >" in row["reason"]
    missing = overlapping.copy()
    missing.loc[(missing["comparison"] == "random") & (missing["layer"] == 0), "cka"] = float("nan")
    row = finding({"cka": missing}, claim)
    assert row["outcome"] == NOT_MEASURABLE and "en-xa layer 0 random is missing" in row["reason"]
    flagged = overlapping.assign(flag=None)
    flagged.loc[flagged["comparison"] == "monolingual", "flag"] = "vectors collapsed"
    row = finding({"cka": flagged}, claim)
    assert row["outcome"] == NOT_MEASURABLE and "is degenerate (vectors collapsed)" in row["reason"]


def test_cka_multilingual_higher_each_outcome():
    """Each pair's mean over the layers, by the paired interval of multilingual minus monolingual."""
    claim = "conneau2020.cka.shared"
    slightly = cka(mono=[0.70, 0.60], multi=[0.72, 0.62], random=[0.2, 0.1])  # +0.02: the paper's "slightly"
    row = finding({"cka": with_intervals(slightly, 0.05, 0.01)}, claim)
    assert row["outcome"] == HOLDS and "en-xb: en-xb multilingual (layer mean) 0.670 [0.620, 0.720] >" in row["reason"]
    assert "paired difference +0.02 [+0.01, +0.03]" in row["reason"]
    assert finding({"cka": with_intervals(slightly, 0.05, 0.03)}, claim)["outcome"] == INCONCLUSIVE
    lower = cka(mono=[0.70, 0.60], multi=[0.60, 0.50], random=[0.2, 0.1])
    assert finding({"cka": with_intervals(lower, 0.05, 0.01)}, claim)["outcome"] == FAILS
    one_pair_lower = with_intervals(slightly, 0.05, 0.01)
    one_pair_lower.loc[
        (one_pair_lower["pair"] == "en-xb") & (one_pair_lower["comparison"] == "multilingual"),
        ["layer_mean_vs_monolingual_low", "layer_mean_vs_monolingual_high"],
    ] = [-0.05, -0.01]
    row = finding({"cka": one_pair_lower}, claim)  # every pair must hold
    assert (
        row["outcome"] == FAILS and "en-xb: en-xb multilingual (layer mean) 0.670 [0.620, 0.720] not >" in row["reason"]
    )
    missing = with_intervals(slightly, 0.05, 0.01)
    missing.loc[missing["comparison"] == "multilingual", "cka"] = float("nan")
    assert finding({"cka": missing}, claim)["outcome"] == NOT_MEASURABLE


def test_cka_claims_are_judged_on_the_debiased_cka_the_intervals_surround():
    """The cka job's table: `cka` the figure's (biased, the paper's) estimator, `cka_debiased` the centre of the
    intervals; the claims compare the debiased values, labelled so."""
    debiased = with_intervals(cka(mono=[0.30, 0.25], multi=[0.4, 0.3], random=[0.25, 0.20]), 0.1, 0.02)
    table = debiased.assign(cka_debiased=debiased["cka"], cka=debiased["cka"] + 0.3)
    row = finding({"cka": table}, "conneau2020.cka.random")
    assert row["outcome"] == HOLDS and "en-xb layer 1 monolingual debiased 0.250 [0.150, 0.350]" in row["reason"]
    row = finding({"cka": table}, "conneau2020.cka.shared")
    assert "en-xa multilingual debiased (layer mean) 0.350 [0.250, 0.450]" in row["reason"], row["reason"]


def test_cka_shared_needs_both_sides_trained_on_the_same_data_and_window():
    """The paper's two sides differ in sharing only: a bilingual model trained on other data or at another window
    than the monolingual ones (the table's columns, else the ids) makes each such pair not measurable, named."""
    claim = "conneau2020.cka.shared"
    slightly = with_intervals(cka(mono=[0.70, 0.60], multi=[0.72, 0.62], random=[0.2, 0.1]), 0.05, 0.01)
    row = finding({"cka": slightly}, claim)
    assert row["outcome"] == HOLDS and "results/x/models/bert/100-w8" in row["judged_on"]
    assert "bilingual results/x/models/bert/100-w8" in row["models"]
    ablation = slightly.assign(lm_multilingual="results/x/models/ablation/default/en-xa")
    row = finding({"cka": ablation}, claim)  # an ablation's directory says neither size nor window
    assert row["outcome"] == NOT_MEASURABLE and "bilingual model (not recorded)" in row["reason"]
    recorded = ablation.assign(multilingual_size=4000, multilingual_window=64, mono_size=12000, mono_window=16)
    row = finding({"cka": recorded}, claim)
    assert row["outcome"] == NOT_MEASURABLE
    assert "(4,000 sentences at window 64) and the monolingual ones (12,000 sentences at window 16)" in row["reason"]
    same = recorded.assign(multilingual_size=12000, multilingual_window=16)
    assert finding({"cka": same}, claim)["outcome"] == HOLDS
    one_pair = recorded.assign(
        multilingual_size=recorded["pair"].map({"en-xa": 12000, "en-xb": 4000}), multilingual_window=16
    )
    row = finding({"cka": one_pair}, claim)  # the measurable pair decides, the other is named
    assert (
        row["outcome"] == HOLDS
        and "1 of 1 pairs hold" in row["reason"]
        and "left out, not measurable: en-xb" in row["reason"]
    )
