"""Language-specific information and model ids (xling.plan.language, xling.plan.lms): which models and
languages, and each job's inputs and settings."""

from __future__ import annotations

import pytest

from plan_configs import make_plan, preset_plan, wildcards
from xling.plan.data import RealData

REAL = RealData(datasets={"tatoeba": ["de"], "bucc": ["de", "fr"]}, parallel={"fr": "europarl"}, treebanks={})


def test_language_models_of_language_sizes_and_checkpoints():
    plan = make_plan(language={"sizes": [200], "hf_models": ["bert-base-multilingual-cased"]})
    assert plan.language_models() == ["bert/200-w5", "bert/200-w10", "hf/bert-base-multilingual-cased"]
    assert make_plan(models=["glove"]).language_models() == []
    with pytest.raises(ValueError, match="language.sizes"):
        make_plan(language={"sizes": [300]}).language_models()


def test_language_windows_choose_the_berts_of_the_language_experiments():
    """language.windows keeps the language experiments to those windows' BERTs, at each of language.sizes."""
    plan = make_plan(language={"sizes": [200], "windows": [10]})
    assert plan.language_models() == ["bert/200-w10"]
    assert make_plan(language={"windows": [5]}).language_models() == ["bert/100-w5", "bert/200-w5"]
    with pytest.raises(ValueError, match=r"language.windows: \[7\] are not in windows \[5, 10\]"):
        make_plan(language={"windows": [7]}).language_models()


def test_languages_of_each_task_from_the_source():
    real = make_plan(REAL, language={"data": "parallel"})
    assert real.translation_langs() == ["fr"] and real.tatoeba_langs() == ["de"]
    named = make_plan(REAL, language={"sentence_retrieval": {"bucc_languages": ["fr", "zh"]}})
    assert named.bucc_langs() == ["fr"]
    assert make_plan().bucc_langs() == ["de", "fr"], "synthetic: the default names every target"
    assert real.retrieval_parts("tatoeba") == [
        f"results/t/eval/sentence_retrieval/tatoeba/bert/{grid}/de.parquet"
        for grid in ("100-w5", "100-w10", "200-w5", "200-w10")
    ]


def test_lm_params_of_ours_a_checkpoint_and_an_aligned_model():
    plan = make_plan(language={"hf_models": ["org/ckpt"], "max_length": 8, "hf_revisions": {"org/ckpt": "abc"}})
    ours = plan.lm_params(wildcards(lm="bert/100-w10"))
    assert ours == dict(
        kind="bert",
        path="results/t/models/bert/100-w10",
        label="bert",
        size=100,
        window=10,
        max_length=8,
        revision=None,
    )
    hf = plan.lm_params(wildcards(lm="hf/org--ckpt"))
    # a hub id is loaded from its directory staged in the run (rules/checkpoints.smk), which is its model input
    assert (hf["path"], hf["label"], hf["size"], hf["revision"]) == (
        "results/t/models/hf/org--ckpt",
        "org/ckpt",
        0,
        "abc",
    )
    aligned = plan.lm_params(wildcards(lm="aligned/500/hf/org--ckpt"))
    assert (aligned["path"], aligned["label"], aligned["revision"]) == (
        "results/t/models/aligned/500/hf/org--ckpt",
        "org/ckpt+aligned500",
        None,
    )
    assert plan.lm_model(wildcards(lm="hf/org--ckpt")) == "results/t/models/hf/org--ckpt"
    assert plan.hf_hub_models() == {"org--ckpt": "org/ckpt"}
    local = make_plan(language={"hf_models": ["results/hf/tiny-mbert"]})
    assert (
        local.hf_hub_models() == {}
        and local.lm_params(wildcards(lm="hf/results--hf--tiny-mbert"))["path"] == "results/hf/tiny-mbert"
    )
    assert plan.any_lm(wildcards(lm="glove/200-w5"))["kind"] == "static"


SHAPE = {"hidden_size": 16, "num_layers": 2, "num_heads": 2, "intermediate_size": 32, "max_positions": 128, "seed": 0}


def test_a_random_model_is_written_in_the_run_and_named_a_stand_in():
    """language.random_models: the row is written by the run (random_checkpoint), where a staged hub checkpoint
    lies, never fetched from the hub, and the report's stand-ins name it; it must be a row of hf_models."""
    plan = make_plan(language={"hf_models": ["tiny-mbert", "org/ckpt"], "random_models": {"tiny-mbert": SHAPE}})
    assert plan.random_checkpoints() == {"tiny-mbert": "tiny-mbert"}
    assert plan.hf_hub_models() == {"org--ckpt": "org/ckpt"}
    assert plan.lm_model(wildcards(lm="hf/tiny-mbert")) == "results/t/models/hf/tiny-mbert"
    assert plan.lm_params(wildcards(lm="hf/tiny-mbert"))["label"] == "tiny-mbert"
    assert "random weights (2 layers, 16 wide" in plan.report_config()["stand_ins"]["tiny-mbert"]
    assert "stand_ins" not in make_plan(language={"hf_models": ["org/ckpt"]}).report_config()
    with pytest.raises(ValueError, match=r"language.random_models: \['other'\] are not in language.hf_models"):
        make_plan(language={"hf_models": ["tiny-mbert"], "random_models": {"other": SHAPE}})
    with pytest.raises(ValueError, match="are not names of letters"):
        make_plan(language={"hf_models": ["a/b"], "random_models": {"a/b": SHAPE}})


def test_represent_text_and_translation_inputs_follow_the_vocabulary():
    plan = make_plan(language={"hf_models": ["org/ckpt"], "data": "parallel"}, tokenizer={"vocab": "train"})
    assert plan.represent_text(wildcards(lm="bert/100-w5"))[0] == "results/t/tokens/100/en.txt"
    assert plan.represent_text(wildcards(lm="hf/org--ckpt"))[0] == "results/t/corpus/200/en.txt"
    mbert = make_plan(language={"hf_models": ["org/ckpt"]}, tokenizer={"vocab": "mbert"})
    assert mbert.represent_text(wildcards(lm="hf/org--ckpt"))[0] == "results/t/tokens/200/en.txt"
    inputs = plan.translation_inputs(wildcards(lm="hf/org--ckpt", lang="fr"))
    assert inputs["vocab_corpora"] == ["results/t/corpus/200/en.txt", "results/t/corpus/200/fr.txt"]
    assert "langs" in plan.translation_inputs(wildcards(lm="bert/100-w5", lang="fr"))


def test_translation_on_xnli_reads_the_test_splits_and_no_token_sets():
    """language.data xnli (Liu et al. §3.1): the pivot's and the language's XNLI test files; the convert rate's token
    sets are the pieces of those sentences, so no token file or corpus is an input."""
    plan = make_plan(language={"hf_models": ["org/ckpt"], "data": "xnli"})
    ours = plan.translation_inputs(wildcards(lm="bert/100-w5", lang="fr"))
    assert ours == dict(
        pivot_text="results/t/data/xnli/test-en.tsv",
        lang_text="results/t/data/xnli/test-fr.tsv",
        langs="results/t/reps/bert/100-w5/langs.parquet",
    )
    hub = plan.translation_inputs(wildcards(lm="hf/org--ckpt", lang="fr"))
    assert set(hub) == {"pivot_text", "lang_text"}
    real = make_plan(RealData(datasets={"xnli": ["de"]}, parallel={"fr": "europarl"}, treebanks={}))
    assert real.translation_langs() == ["de"], "the languages with XNLI data"


def test_sentence_retrieval_settings_of_each_task_only():
    plan = make_plan()
    assert "bucc_k" in plan.sentence_retrieval_settings(wildcards(task="bucc"))
    assert "bucc_k" not in plan.sentence_retrieval_settings(wildcards(task="tatoeba"))
    assert set(plan.retrieval_inputs(wildcards(task="bucc", lang="de"))) == {
        f"{split}_{side}" for split in ("dev", "test") for side in ("xx", "en", "gold")
    }


def test_language_sizes_choose_the_berts_of_the_language_experiments():
    """language.sizes keeps token translation to those sizes' BERTs (every window); [] means every size."""
    plan = preset_plan("demo")
    pairs, windows = len(plan.targets), len(plan.windows)
    assert plan.language["sizes"] == [max(plan.sizes)] and plan.language["windows"] == [max(plan.windows)]
    assert len(plan.translation_parts("table")) == pairs
    every_window = {"sizes": [], "windows": []}
    assert (
        len(preset_plan("demo", language=every_window).translation_parts("table")) == len(plan.sizes) * windows * pairs
    )
