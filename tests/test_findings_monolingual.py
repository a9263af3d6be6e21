"""The Conneau et al. section 5 claims of the findings table (xling.evaluate.findings) on hand-made monolingual
tables whose verdicts can be checked by hand."""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings import FAILS, HOLDS, NOT_MEASURED, judge_claims

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
    row = finding({"monolingual_words": words(0.30, 0.25)}, "conneau2020.mono.words")
    assert row["verdict"] == HOLDS and "BERT embeddings 0.350 > fastText 0.300" in row["evidence"]
    assert row["pairs"] == "en-xa, en-xb" and row["models"] == "mono/en/100-w8, mono/xa/100-w8"
    assert finding({"monolingual_words": words(0.20, 0.25)}, "conneau2020.mono.words")["verdict"] == FAILS
    assert finding({"monolingual_words": words(0.245, 0.25)}, "conneau2020.mono.words")["verdict"] == HOLDS  # a tie


def test_sentences_must_beat_the_unmapped_spaces_at_every_layer():
    assert finding({"monolingual_sentences": sentences([0.5, 0.4, 0.3])}, "conneau2020.mono.sentences")["verdict"] \
        == HOLDS
    row = finding({"monolingual_sentences": sentences([0.5, 0.01, 0.3])}, "conneau2020.mono.sentences")
    assert row["verdict"] == FAILS and "layer 1: 0.010 \u2248 0.010" in row["evidence"]


def test_cka_claims():
    table = cka(mono=[0.7, 0.6], multi=[0.8, 0.7], random=[0.2, 0.1])
    assert finding({"cka": table}, "conneau2020.cka.random")["verdict"] == HOLDS
    assert finding({"cka": table}, "conneau2020.cka.shared")["verdict"] == HOLDS
    at_random = cka(mono=[0.7, 0.1], multi=[0.8, 0.7], random=[0.2, 0.1])  # layer 1 at the random level
    assert finding({"cka": at_random}, "conneau2020.cka.random")["verdict"] == FAILS
    below = cka(mono=[0.7, 0.6], multi=[0.6, 0.5], random=[0.2, 0.1])
    row = finding({"cka": below}, "conneau2020.cka.shared")
    assert row["verdict"] == FAILS and "multilingual 0.550 < monolingual 0.650" in row["evidence"]
    no_multi = table[table["comparison"] != "multilingual"]
    assert finding({"cka": no_multi}, "conneau2020.cka.shared")["verdict"] == NOT_MEASURED
