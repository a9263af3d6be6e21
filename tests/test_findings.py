"""The findings table (xling.evaluate.findings): each verdict on hand-made tables whose numbers are chosen so the
verdict can be checked by hand, "not measured" for whatever the run lacks, and the report section; the rule on
the shared test-preset run (change a table, the verdict changes)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml
from workflow_helpers import TEST_PRESET, job_counts, snakemake

from xling.evaluate.findings import (CLAIMS, FAILS, HOLDS, NOT_MEASURED, TABLES, Criteria, bert_layer, judge_claims,
                                    read_tables)
from xling.report.core import render_report

PAIRS = ("en-xa", "en-xb")
SMALL, LARGE = 100, 500
LONG, SHORT = 64, 8


def verdicts(tables, **settings) -> dict[str, str]:
    return judge_claims(tables, "en", **settings).set_index("id")["verdict"].to_dict()


def finding(tables, claim, **settings) -> pd.Series:
    return judge_claims(tables, "en", **settings).set_index("id").loc[claim]


def retrieval(mrr: dict) -> pd.DataFrame:
    """{(model, size, window, layer): (MRR of en-xa, MRR of en-xb)} -> word-retrieval rows."""
    return pd.DataFrame([dict(model=m, size=s, window=w, layer=layer, pair=pair, mrr=value)
                         for (m, s, w, layer), values in mrr.items() for pair, value in zip(PAIRS, values)])


# BERT: layer 1 is the best (mean 0.30 over the pairs); small data behind GloVe (0.40) and Word2Vec (0.35),
# large data ahead of both; at large data the short window (best layer 0: 0.20) is behind the long one.
GRID = {
    ("bert", SMALL, LONG, 0): (0.10, 0.10), ("bert", SMALL, LONG, 1): (0.20, 0.40),
    ("bert", SMALL, LONG, 2): (0.20, 0.20),
    ("glove", SMALL, LONG, 0): (0.40, 0.40), ("word2vec", SMALL, LONG, 0): (0.30, 0.40),
    ("bert", LARGE, LONG, 0): (0.20, 0.20), ("bert", LARGE, LONG, 1): (0.60, 0.80),
    ("glove", LARGE, LONG, 0): (0.50, 0.50), ("word2vec", LARGE, LONG, 0): (0.60, 0.40),
    ("bert", LARGE, SHORT, 0): (0.20, 0.20), ("bert", LARGE, SHORT, 1): (0.10, 0.10),
}


def test_data_size_and_window_claims_hold_on_numbers_that_show_them():
    found = verdicts({"word_retrieval": retrieval(GRID)})
    assert found["liu2020_what.small-data.retrieval"] == HOLDS
    assert found["liu2020_what.large-data.retrieval"] == HOLDS
    assert found["liu2020_what.window.bert"] == HOLDS
    row = finding({"word_retrieval": retrieval(GRID)}, "liu2020_what.small-data.retrieval")
    assert "BERT 0.300 (layer 1) < GloVe 0.400, < Word2Vec 0.350" in row["evidence"]
    assert (row["corpus_size"], row["windows"], row["layers"], row["pairs"]) == ("100", "64", "bert 1", "en-xa, en-xb")


def test_data_size_and_window_claims_fail_when_the_numbers_turn():
    grid = {**GRID, ("word2vec", LARGE, LONG, 0): (0.80, 0.80),  # Word2Vec ahead of BERT (0.70) at large data
            ("bert", SMALL, LONG, 2): (0.50, 0.50),  # the best small BERT layer (0.50) beats both static models
            ("bert", LARGE, SHORT, 1): (0.90, 0.90)}  # the short window beats the long one
    found = verdicts({"word_retrieval": retrieval(grid)})
    assert found["liu2020_what.small-data.retrieval"] == FAILS
    assert found["liu2020_what.large-data.retrieval"] == FAILS
    assert found["liu2020_what.window.bert"] == FAILS


def test_a_fixed_layer_replaces_the_best_one():
    """At layer 0 the large BERT (0.20) is behind GloVe and Word2Vec (0.50): the claim its best layer (1) passes
    fails; a layer the BERT does not have is not measured."""
    tables = {"word_retrieval": retrieval(GRID)}
    assert verdicts(tables, layer=0)["liu2020_what.large-data.retrieval"] == FAILS
    assert finding(tables, "liu2020_what.large-data.retrieval", layer=0)["layers"] == "bert 0"
    assert finding(tables, "liu2020_what.large-data.retrieval", layer=5)["verdict"] == NOT_MEASURED


def test_best_layer_is_the_highest_mean_over_pairs_and_a_tie_goes_to_the_lower_layer():
    by_layer = pd.DataFrame({"en-xa": [0.1, 0.5, 0.3], "en-xb": [0.2, 0.1, 0.3]}, index=[0, 1, 2])
    assert bert_layer(by_layer, "best") == 1  # means 0.15, 0.30, 0.30
    assert bert_layer(by_layer, 2) == 2


def test_tolerance_makes_a_tie_that_fails_a_strict_claim_and_passes_a_non_strict_one():
    criteria = Criteria(tolerance=0.05)
    assert criteria.tie(1.0, 0.96) and not criteria.tie(1.0, 0.94)
    assert not criteria.greater(1.0, 0.96) and criteria.greater(1.0, 0.94)
    assert criteria.at_least(0.96, 1.0) and not criteria.at_least(0.94, 1.0)
    # the large BERT (0.70) against Word2Vec at 0.68: ahead with no tolerance, a tie with 5%
    tables = {"word_retrieval": retrieval({**GRID, ("word2vec", LARGE, LONG, 0): (0.68, 0.68)})}
    assert verdicts(tables, tolerance=0.0)["liu2020_what.large-data.retrieval"] == HOLDS
    assert verdicts(tables, tolerance=0.05)["liu2020_what.large-data.retrieval"] == FAILS


def test_word2vec_window_sweep_counts_the_pairs_where_a_larger_window_does_not_help():
    sweep = {("word2vec", SMALL, 5, 0): (0.20, 0.20), ("word2vec", SMALL, 128, 0): (0.30, 0.30),
             ("word2vec", SMALL, 256, 0): (0.25, 0.40), ("word2vec", LARGE, 5, 0): (0.1, 0.1)}
    row = finding({"word_retrieval": retrieval(sweep)}, "liu2020_what.window.word2vec")
    assert row["verdict"] == FAILS  # en-xa drops at 256, en-xb rises at each step: 1 of 2 is not most
    assert "did not help on 1 of 2 pairs (en-xa)" in row["evidence"] and row["windows"] == "5, 128, 256"
    sweep[("word2vec", SMALL, 256, 0)] = (0.25, 0.30)  # en-xb ties at 256: a larger window did not help
    assert finding({"word_retrieval": retrieval(sweep)}, "liu2020_what.window.word2vec")["verdict"] == HOLDS


def test_open_class_claim_reads_the_pos_table_at_the_bert_layer_of_word_retrieval():
    pos = pd.DataFrame([dict(model="bert", size=LARGE, window=LONG, layer=layer, pair=pair, pos=cls, mrr=mrr)
                        for layer, values in ((1, {"open": 0.6, "closed": 0.4}), (0, {"open": 0.1, "closed": 0.5}))
                        for cls, mrr in values.items() for pair in PAIRS])
    tables = {"word_retrieval": retrieval(GRID), "word_retrieval_pos": pos}
    assert verdicts(tables)["liu2020_what.pos.open-closed"] == HOLDS  # the best layer is 1
    assert verdicts(tables, layer=0)["liu2020_what.pos.open-closed"] == FAILS


def translation(rates: dict) -> pd.DataFrame:
    """{alpha: convert rate} for one layer of the large long-window BERT, both directions alike."""
    return pd.DataFrame([dict(model="bert", size=LARGE, window=LONG, layer=2, pair=pair, direction=d, alpha=a,
                              convert_rate=rate) for a, rate in rates.items() for pair in PAIRS
                         for d in ("en->xx", "xx->en")])


def test_convert_rate_claims():
    rising = {"token_translation": translation({-1: 0.0, 0: 0.05, 1: 0.4, 3: 0.9})}
    assert verdicts(rising)["liu2020_short.translation.alpha"] == HOLDS
    assert verdicts(rising)["liu2020_short.translation.negative-alpha"] == HOLDS
    falling = {"token_translation": translation({-1: 0.3, 0: 0.05, 1: 0.9, 3: 0.4})}
    assert verdicts(falling)["liu2020_short.translation.alpha"] == FAILS
    assert verdicts(falling)["liu2020_short.translation.negative-alpha"] == FAILS
    row = finding(rising, "liu2020_short.translation.alpha")
    assert row["alphas"] == "0, 1, 3" and row["layers"] == "2" and row["models"] == "bert"
    no_zero = {"token_translation": translation({-1: 0.0, 1: 0.4, 3: 0.9})}
    assert verdicts(no_zero)["liu2020_short.translation.negative-alpha"] == NOT_MEASURED


def test_sentence_retrieval_compares_mds_and_zero_mean_at_the_report_layer_only():
    def tatoeba(at_report_layer, elsewhere):
        return pd.DataFrame([dict(model="bert", size=LARGE, window=LONG, layer=layer, report_layer=2, lang=lang,
                                  direction="xx->en", variant=v, accuracy=acc, mds_alpha=1.0)
                             for layer, accs in ((2, at_report_layer), (1, elsewhere))
                             for v, acc in zip(("mds", "zero_mean"), accs) for lang in ("xa", "xb")])
    assert verdicts({"tatoeba": tatoeba((0.5, 0.4), (0.1, 0.9))})["liu2020_short.tatoeba.mds"] == HOLDS
    assert verdicts({"tatoeba": tatoeba((0.4, 0.5), (0.9, 0.1))})["liu2020_short.tatoeba.mds"] == FAILS
    assert verdicts({"tatoeba": tatoeba((0.495, 0.5), (0.9, 0.1))})["liu2020_short.tatoeba.mds"] == HOLDS  # a tie


def transfer_rows(task, model, size, window, freeze, transform, value, langs=("en", "xa", "xb")):
    metric = {"xnli": "accuracy", "pos": "upos", "parsing": "las"}[task]
    return [dict(model=model, size=size, window=window, task=task, lang=lang, split=split, freeze=freeze,
                 train_transform="none", transform=transform, selected=True, metric=metric,
                 value=value + (10 if split == "dev" or lang == "en" else 0))  # pivot and dev rows are not read
            for lang in langs for split in ("dev", "test")]


def test_transfer_claims_read_zero_shot_test_scores():
    rows = []
    for size, bert in ((SMALL, 40.0), (LARGE, 60.0)):
        rows += transfer_rows("xnli", "bert", size, LONG, 0, "none", bert)
        rows += transfer_rows("xnli", "glove", size, LONG, -1, "none", 50.0)
        rows += transfer_rows("xnli", "word2vec", size, LONG, -1, "none", 45.0)
    rows += transfer_rows("xnli", "bert", LARGE, LONG, 0, "mds", 62.0)
    rows += transfer_rows("pos", "bert", LARGE, LONG, 0, "none", 50.0) + transfer_rows("pos", "bert", LARGE, LONG, 0,
                                                                                       "mds", 49.0)
    found = verdicts({"transfer": pd.DataFrame(rows)})
    assert found["liu2020_what.small-data.xnli"] == HOLDS  # 40 is not better than 50 and 45
    assert found["liu2020_what.large-data.xnli"] == HOLDS  # 60 beats 50 and 45
    assert found["liu2020_full.xnli.mds"] == HOLDS  # 62 against 60
    assert found["liu2020_short.pos.mds"] == FAILS  # 49 against 50
    assert found["liu2020_short.parsing.mds"] == NOT_MEASURED
    row = finding({"transfer": pd.DataFrame(rows)}, "liu2020_full.xnli.mds")
    assert "MDS 62.0 > none 60.0" in row["evidence"] and row["pairs"] == "en-xa, en-xb"


def test_what_the_run_lacks_is_not_measured_never_an_error():
    empty = judge_claims({}, "en")
    assert list(empty["id"]) == [c.id for c in CLAIMS]
    assert set(empty["verdict"]) == {NOT_MEASURED}
    assert finding({"word_retrieval": retrieval(GRID)}, "liu2020_what.pos.open-closed")["evidence"] == \
        "no word_retrieval_pos table in this run"
    assert empty.set_index("id").loc["conneau2020.sharing", "evidence"] == "no ablation table in this run"
    one_size = retrieval({k: v for k, v in GRID.items() if k[1] == LARGE})
    row = finding({"word_retrieval": one_size}, "liu2020_what.large-data.retrieval")
    assert row["verdict"] == NOT_MEASURED and "one corpus size" in row["evidence"]
    no_glove = retrieval({k: v for k, v in GRID.items() if k[0] != "glove"})
    assert "no GloVe at size 100, window 64" in finding({"word_retrieval": no_glove},
                                                         "liu2020_what.small-data.retrieval")["evidence"]


def test_a_table_without_a_column_it_needs_names_the_file(tmp_path):
    path = tmp_path / "word_retrieval.parquet"
    retrieval(GRID).drop(columns="mrr").to_parquet(path)
    with pytest.raises(ValueError, match=r"word_retrieval.parquet: word_retrieval table without column\(s\) mrr"):
        read_tables({"word_retrieval": path})


def test_report_shows_each_claim_with_its_verdict_and_numbers(tmp_path):
    table = judge_claims({"word_retrieval": retrieval(GRID)}, "en")
    wr = retrieval(GRID).assign(chance_mrr=0.01, metric="cosine", dictionary_split="test")
    render_report({"word_retrieval": wr, "findings": table}, {"run": "unit"}, tmp_path / "r.html", tmp_path / "fig")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    section = html.split('id="findings"', 1)[1]
    assert f"Of {len(CLAIMS)} claims: 3 holds, 0 does not hold, {len(CLAIMS) - 3} not measured." in section
    assert "BERT 0.300 (layer 1) &lt; GloVe 0.400, &lt; Word2Vec 0.350" in section


@pytest.mark.workflow
def test_findings_rule_judges_the_run_tables_and_follows_a_changed_table(test_run, tmp_path):
    """On a copy of the shared test-preset run: the rule's table is the module's verdicts on the run's tables;
    after a word-retrieval table edit that turns the large-data claim, rerunning only the findings rule turns it."""
    run = tmp_path / "run"
    shutil.copytree(test_run, run, symlinks=True)
    results = run / f"results/{yaml.safe_load(TEST_PRESET.read_text())['run']}/eval"
    claim = "liu2020_what.large-data.retrieval"
    before = pd.read_parquet(results / "findings.parquet").set_index("id")
    tables = read_tables({key: results / f"{key}.parquet" for key in TABLES if (results / f"{key}.parquet").exists()})
    pd.testing.assert_frame_equal(before.reset_index(), judge_claims(tables, "en"))
    table = pd.read_parquet(results / "word_retrieval.parquet")
    large_bert = (table["model"] == "bert") & (table["size"] == table["size"].max())
    flipped = FAILS if before.loc[claim, "verdict"] == HOLDS else HOLDS
    table.loc[large_bert, "mrr"] = 0.0 if flipped == FAILS else 1.0
    table.to_parquet(results / "word_retrieval.parquet", index=False)
    done = snakemake(str(results.relative_to(run) / "findings.parquet"), "--configfile", str(TEST_PRESET),
                     "--cores", "1", cwd=run, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert job_counts(done.stdout + done.stderr) == {"findings": 1}
    assert pd.read_parquet(results / "findings.parquet").set_index("id").loc[claim, "verdict"] == flipped
