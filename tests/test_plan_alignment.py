"""Contextual alignment's plan (xling.plan.alignment): aligned models, rotations, fastText and their files."""

from __future__ import annotations

import pytest

from plan_configs import make_plan, wildcards
from xling.evaluate.alignment import aligned_lm
from xling.plan.data import RealData
from xling.plan.models import aligned_base

REAL = RealData(datasets={}, parallel={"fr": "europarl"}, treebanks={})


def test_aligned_models_default_to_the_largest_language_bert_and_every_checkpoint():
    plan = make_plan(language={"hf_models": ["org/ckpt"]}, alignment={"finetune": {"sizes": [10, 20]}})
    assert plan.aligned_models() == [
        "aligned/10/bert/200-w10",
        "aligned/20/bert/200-w10",
        "aligned/10/hf/org--ckpt",
        "aligned/20/hf/org--ckpt",
    ]
    with pytest.raises(ValueError, match="not BERTs of this run"):
        make_plan(alignment={"finetune": {"models": ["bert/300-w5"]}}).aligned_models()
    no_parallel = RealData(datasets={}, parallel={}, treebanks={})
    assert make_plan(no_parallel).aligned_models() == [], "no parallel text: nothing to align on"


def test_languages_with_parallel_text_from_the_source():
    plan = make_plan(REAL, alignment={"finetune": {"languages": ["de", "fr"]}})
    assert plan.align_pair_langs() == ["fr"] and plan.align_langs() == ["fr"]
    assert make_plan(alignment={"finetune": {"languages": ["de"]}}).align_langs() == ["de"]
    assert plan.word_pairs_gold(wildcards(lang="fr")) == []
    assert make_plan().word_pairs_gold(wildcards(lang="fr")) == ["results/t/data/parallel/en-fr.align"]


def test_runs_align_one_model_each_on_their_own_languages():
    """alignment.finetune.runs (Cao et al.'s Table 5): one model per base on `size` pairs of each named language,
    beside the models of alignment.finetune.languages at each of `sizes`; its id names the languages."""
    plan = make_plan(
        alignment={
            "train_sentences": [10, 20],
            "finetune": {"sizes": [10], "languages": ["fr"], "runs": [{"languages": ["fr", "de"], "size": 20}]},
        }
    )
    assert plan.aligned_models() == ["aligned/10/bert/200-w10", "aligned/20-de-fr/bert/200-w10"]
    assert plan.align_langs() == ["fr"] and plan.align_langs("10") == ["fr"]
    assert plan.align_langs("20-de-fr") == ["de", "fr"]
    table5 = plan.align_finetune_inputs(wildcards(n="20-de-fr", base="bert/200-w10"))
    assert table5["links"] == ["results/t/data/align/en-de/train20.align", "results/t/data/align/en-fr/train20.align"]
    assert plan.align_finetune_inputs(wildcards(n="10", base="bert/200-w10"))["links"] == [
        "results/t/data/align/en-fr/train10.align"
    ]
    assert aligned_base("aligned/20-de-fr/bert/200-w10") == (20, "bert/200-w10")
    assert aligned_lm("aligned/20-de-fr/bert/200-w10") == ("bert/200-w10", 20)
    with pytest.raises(ValueError, match=r"alignment.finetune.runs: \['ar'\] have no parallel text"):
        make_plan(
            REAL, alignment={"train_sentences": [20], "finetune": {"runs": [{"languages": ["ar", "fr"], "size": 20}]}}
        ).aligned_models()
    with pytest.raises(ValueError, match=r"alignment.finetune.runs: size 30 is not one of"):
        make_plan(alignment={"finetune": {"runs": [{"languages": ["fr"], "size": 30}]}}).aligned_models()


def test_splits_and_the_inputs_of_an_alignment():
    plan = make_plan(REAL, alignment={"train_sentences": [300, 100]})
    assert plan.align_splits() == ["test", "dev", "train100", "train300"] and plan.seen_split() == "train300"
    inputs = plan.align_finetune_inputs(wildcards(n="100", base="bert/100-w5"))
    assert inputs == dict(
        model="results/t/models/bert/100-w5",
        en=["results/t/data/align/en-fr/train100.en"],
        xx=["results/t/data/align/en-fr/train100.fr"],
        links=["results/t/data/align/en-fr/train100.align"],
    )
    assert plan.base_params(wildcards(base="bert/100-w5"))["window"] == 5


def test_rotations_and_fasttext_baselines():
    plan = make_plan(
        REAL,
        alignment={
            "finetune": {"sizes": [10]},
            "rotation": {"kinds": ["word"]},
            "fasttext": {"enabled": True, "size": None},
        },
    )
    assert plan.rotation_lms() == ["bert/200-w10"]
    assert plan.rotation_files("bert/200-w10", 10) == {
        "word": {"fr": "results/t/align/rotations/bert/200-w10/word10/fr.npy"}
    }
    assert plan.fasttext_lms() == ["fasttext/200"]
    assert plan.contextual_retrieval_lms()[-1] == "fasttext/200"
    vectors = plan.fasttext_retrieval_inputs(wildcards(size="200"))["vectors"]
    assert vectors == ["results/t/models/fasttext/200/en.kv", "results/t/models/fasttext/200/fr.kv"]
    with pytest.raises(ValueError, match="alignment.fasttext.size"):
        make_plan(alignment={"fasttext": {"enabled": True, "size": 300}}).fasttext_lms()
