"""The Conneau et al. section 5 claims of the findings table (xling.evaluate.findings) on hand-made monolingual
tables whose outcomes can be checked by hand: without per-item scores or seeds they have no interval, so
they are inconclusive at best; a number at chance makes its claim not measurable."""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings import INCONCLUSIVE, NOT_MEASURABLE, NOT_MEASURED, judge_claims

MODELS = dict(lm_src="mono/en/100-w8", lm_tgt="mono/xa/100-w8")


def finding(tables, claim) -> pd.Series:
    return judge_claims(tables, "en").set_index("id").loc[claim]


def words(embedding: float, fasttext: float) -> pd.DataFrame:
    return pd.DataFrame([dict(pair=pair, level=level, layer=0, p_at_1=value + (0.1 if pair == "en-xb" else 0), **MODELS)
                         for pair in ("en-xa", "en-xb") for level, value in (("embedding", embedding),
                                                                             ("fasttext", fasttext))])


def sentences(mapped: list[float], unmapped: float = 0.01) -> pd.DataFrame:
    return pd.DataFrame([dict(pair="en-xa", layer=layer, method=method, direction=direction, p_at_1=value, **MODELS)
                         for layer, value in enumerate(mapped)
                         for method, value in (("procrustes", value), ("none", unmapped))
                         for direction in ("en->xx", "xx->en")])


def cka(mono: list[float], multi: list[float], random: list[float]) -> pd.DataFrame:
    return pd.DataFrame([dict(pair=pair, comparison=comparison, layer=layer, cka=value, **MODELS)
                         for pair in ("en-xa", "en-xb") for comparison, values in
                         (("monolingual", mono), ("multilingual", multi), ("random", random))
                         for layer, value in enumerate(values)])


def test_embeddings_against_fasttext():
    """No per-query items in the table: inconclusive, never holds; at chance (1 / target words): not measurable."""
    row = finding({"monolingual_words": words(0.30, 0.25)}, "conneau2020.mono.words")
    assert row["outcome"] == INCONCLUSIVE and "no interval for embedding, fasttext yet" in row["reason"]
    assert "embedding 0.350, fasttext 0.300" in row["reason"]
    assert row["pairs"] == "en-xa, en-xb" and row["models"] == "mono/en/100-w8, mono/xa/100-w8"
    at_chance = words(0.0, 0.01).assign(n_tgt_words=100)
    at_chance.loc[at_chance["level"] == "embedding", "p_at_1"] = 0.0  # P@1 0 on both pairs: chance is 0.01
    row = finding({"monolingual_words": at_chance}, "conneau2020.mono.words")
    assert row["outcome"] == NOT_MEASURABLE and "at or below chance" in row["flags"]


def test_sentences_need_an_interval_at_every_layer():
    row = finding({"monolingual_sentences": sentences([0.5, 0.4, 0.3])}, "conneau2020.mono.sentences")
    assert row["outcome"] == INCONCLUSIVE and row["layers"] == "0, 1, 2"
    assert "layer 1: no interval for layer 1 procrustes, layer 1 none yet" in row["reason"]
    unmapped_at_chance = sentences([0.5, 0.4, 0.3], unmapped=0.001).assign(n_test_sentences=100)
    row = finding({"monolingual_sentences": unmapped_at_chance}, "conneau2020.mono.sentences")
    assert row["outcome"] == NOT_MEASURABLE and "at or below chance: layer 0 none 0.001" in row["flags"]


def test_cka_claims():
    table = cka(mono=[0.7, 0.6], multi=[0.8, 0.7], random=[0.2, 0.1])
    assert finding({"cka": table}, "conneau2020.cka.random")["outcome"] == INCONCLUSIVE  # no interval yet
    row = finding({"cka": table}, "conneau2020.cka.shared")
    assert row["outcome"] == INCONCLUSIVE and "multilingual 0.750, monolingual 0.650" in row["reason"]
    no_multi = table[table["comparison"] != "multilingual"]
    assert finding({"cka": no_multi}, "conneau2020.cka.shared")["outcome"] == NOT_MEASURED
