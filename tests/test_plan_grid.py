"""The run's grid and shared settings (xling.plan.grid): config dicts in, paths and lists out."""

from __future__ import annotations

import pytest

from plan_configs import make_plan, wildcards
from xling.plan.data import RealData

REAL = RealData(datasets={"muse": ["fr"]}, parallel={}, treebanks={"en": ["EWT"]}, splits={"en": ["train", "test"]})


def test_window_sweep_of_the_swept_models_this_run_trains():
    plan = make_plan(models=["bert", "word2vec"], window_sweep={"models": ["word2vec", "glove"], "windows": [2, 4]})
    assert plan.window_sweep() == [("word2vec", 100, 2), ("word2vec", 100, 4)], "null sizes: the smallest"
    assert make_plan(window_sweep={"models": ["word2vec"], "windows": [2]}).window_sweep() == [], "not trained"
    with pytest.raises(ValueError, match="window_sweep.sizes"):
        make_plan(models=["word2vec"], window_sweep={"sizes": [300]}).window_sweep()


def test_vocabulary_dictionary_and_token_files():
    plan = make_plan(tokenizer={"vocab": "train"})
    assert plan.vocab_source() == "results/t/vocab/trained.txt"
    assert make_plan(tokenizer={"vocab": "mbert"}).vocab_source() == "results/t/data/vocab/mbert-cased.txt"
    assert plan.dictionary("fr", "train") == "results/t/data/dict/en-fr.train.txt"
    assert plan.token_files(wildcards(size="200")) == [
        f"results/t/tokens/200/{lang}.txt" for lang in ("en", "de", "fr")
    ]
    assert plan.model_dir("glove", 100, 5) == "results/t/models/glove/100-w5"


def test_languages_and_treebanks_are_asked_of_the_source():
    assert make_plan().retrieval_targets() == ["de", "fr"]
    real = make_plan(REAL, retrieval={"pos": {"splits": ["test"]}})
    assert real.retrieval_targets() == ["fr"]
    assert real.pos_treebanks() == ["results/t/data/ud/en.test.conllu"] and real.pos_treebank_name() == "EWT"
    with pytest.raises(ValueError, match="no UD \\['dev'\\] split"):
        make_plan(REAL, retrieval={"pos": {"splits": ["dev"]}}).pos_treebanks()


def test_report_config_shows_the_grid_and_the_source_blocks():
    shown = make_plan().report_config()
    assert shown["languages"] == ["en", "de", "fr"] and "synthetic" in shown and "bert" in shown and "glove" in shown
    assert shown["language"] == {"sentence_retrieval": {"layer": make_plan().sent["layer"]}}
    assert "transfer" not in shown and "synthetic" not in make_plan(REAL).report_config()


def test_two_checkpoints_of_one_name_stop_the_plan():
    with pytest.raises(ValueError, match="share a name"):
        make_plan(language={"hf_models": ["a b", "a_b"]})
