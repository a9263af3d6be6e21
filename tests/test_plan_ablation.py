"""Conneau et al.'s ablations' plan (xling.plan.ablation): models, tokens, settings and languages."""

from __future__ import annotations

import pytest

from plan_configs import make_plan, preset_plan, wildcards
from xling.plan.data import RealData


def test_models_are_settings_by_named_pairs():
    plan = make_plan(ablation={"settings": ["default", "sep-emb"], "pairs": ["fr"]})
    assert plan.ablation_models() == ["ablation/default/en-fr", "ablation/sep-emb/en-fr"]
    real = RealData(datasets={}, parallel={}, treebanks={})
    with pytest.raises(ValueError, match="wiki-cc"):
        make_plan(real, ablation={"settings": ["wiki-cc"]}).ablation_models()
    with pytest.raises(ValueError, match="ablation.size"):
        make_plan(ablation={"size": 300}).ablation_size()


def test_tokens_of_each_setting():
    plan = make_plan()  # the pair's vocabularies (ablation.vocab.source pair), extra anchors drawn per batch
    assert plan.ablation_tokens(wildcards(setting="default", pair="en-fr")) == [
        "results/t/ablation/tokens/en-fr/joint/en.txt",
        "results/t/ablation/tokens/en-fr/joint/fr.txt",
    ]
    for setting in (
        "default-anchors",
        "no-anchors",
        "sep-emb",
        "sep-l1",
        "sep-emb-l1",
    ):  # Table 1's 40k/40k rows  # one vocabulary per language, each language's text in its own
        assert plan.ablation_vocabs(wildcards(setting=setting, pair="en-fr")) == [
            "results/t/ablation/vocab/own/en.txt",
            "results/t/ablation/vocab/own/fr.txt",
        ]  # English's: one for all pairs
        assert (
            plan.ablation_tokens(wildcards(setting=setting, pair="en-fr"))[1] == "results/t/ablation/tokens/own/fr.txt"
        )
    assert plan.ablation_vocab_corpora(wildcards(pair="en-fr")) == [
        "results/t/corpus/100/en.txt",
        "results/t/corpus/100/fr.txt",
    ]
    assert plan.ablation_vocab_corpora(wildcards(lang="fr")) == ["results/t/corpus/100/fr.txt"]
    assert (
        plan.ablation_tokens(wildcards(setting="wiki-cc", pair="en-fr"))[1]
        == "results/t/ablation/tokens/wiki-cc/en-fr/fr.txt"
    )
    extra = wildcards(setting="extra-anchors", pair="en-fr")
    assert plan.ablation_tokens(extra)[0] == "results/t/ablation/tokens/en-fr/joint/en.txt"
    assert plan.ablation_switch_table(extra) == ["results/t/ablation/switch/en-fr.json"]
    assert plan.ablation_hparams("extra-anchors")["ablation"]["code_switch"] == {
        "rate": 0.3,
        "max_fraction": 0.15,
        "seed": 1,
    }
    assert "code_switch" not in plan.ablation_hparams("default")["ablation"]
    assert plan.ablation_switch_table(wildcards(setting="default", pair="en-fr")) == []

    study = make_plan(ablation={"vocab": {"source": "study"}, "code_switch": {"sampling": "once"}})
    assert study.ablation_tokens(wildcards(setting="no-anchors", pair="en-fr")) == [
        "results/t/tokens/100/en.txt",
        "results/t/tokens/100/fr.txt",
    ]
    assert study.ablation_vocabs(wildcards(setting="no-anchors", pair="en-fr")) == [study.vocab_source()]
    assert study.ablation_tokens(extra)[0] == "results/t/ablation/tokens/extra-anchors/en-fr/en.txt"
    assert (
        study.ablation_switch_table(extra) == []
        and "code_switch" not in study.ablation_hparams("extra-anchors")["ablation"]
    )


def test_the_sep_rows_train_on_the_language_vocabularies_in_their_union_or_the_joint_one():
    """Conneau et al. Table 1: every Sep row 40k/40k (ablation.vocab.sep_settings language), as Default anchors
    (anchors union: with separate embeddings no row is shared); joint keeps the pair's joint vocabulary."""
    plan = make_plan()
    for setting in ("sep-emb", "sep-l3", "sep-emb-l3"):
        assert plan.ablation_hparams(setting)["ablation"]["anchors"] == "union"
        assert plan.ablation_dev_tokens(wildcards(setting=setting, pair="en-fr")) in (
            [],
            ["results/t/ablation/tokens/dev/own/en.txt"],
        )
    assert plan.ablation_hparams("default")["ablation"]["anchors"] == "default"
    joint = make_plan(ablation={"vocab": {"sep_settings": "joint"}})
    assert joint.ablation_hparams("sep-emb")["ablation"]["anchors"] == "default"
    assert joint.ablation_vocabs(wildcards(setting="sep-emb", pair="en-fr")) == [
        "results/t/ablation/vocab/en-fr/joint.txt"
    ]
    assert (
        joint.ablation_tokens(wildcards(setting="sep-l3", pair="en-fr"))[1]
        == "results/t/ablation/tokens/en-fr/joint/fr.txt"
    )


def test_the_demo_trains_its_sep_row_on_the_language_vocabularies():
    plan = preset_plan("demo")
    assert plan.ablation_vocabs(wildcards(setting="sep-emb-l2", pair="en-xa")) == [
        "results/demo/ablation/vocab/own/en.txt",
        "results/demo/ablation/vocab/own/xa.txt",
    ]


def test_languages_are_sampled_by_their_share_of_the_sentences():
    """§3.1 "proportionally to the fraction of sentences in each training corpus": every corpus of a pair holds
    ablation.size sentences, passed to the trainer; blocks keeps the streams' share."""
    spec = make_plan(ablation={"size": 200}).ablation_hparams("default")["ablation"]
    assert (spec["sampling_share"], spec["sentences"], spec["sampling_exponent"]) == ("sentences", 200, 0.7)
    blocks = make_plan(ablation={"sampling_share": "blocks"}).ablation_hparams("wiki-cc")["ablation"]
    assert blocks["sampling_share"] == "blocks" and "sentences" not in blocks


def test_lm_params_carry_the_trainer_settings():
    plan = make_plan(ablation={"window": 64, "bert": {"num_layers": 2}}, language={"max_length": 32})
    params = plan.lm_params(wildcards(lm="ablation/sep-emb/en-fr"))
    assert (params["path"], params["size"], params["window"], params["max_length"]) == (
        "results/t/models/ablation/sep-emb/en-fr",
        100,
        64,
        32,
    )
    assert params["hparams"]["num_layers"] == 2 and params["hparams"]["ablation"]["sampling_exponent"] is not None
    assert plan.ablation_langs("ablation/default/en-fr", ["en", "de", "fr"]) == ["en", "fr"]
    assert plan.ablation_langs("bert/100-w5", ["en", "de"]) == ["en", "de"]


def test_transfer_parts_and_targets():
    one = {"xnli": {"batch_size": [8], "learning_rate": [1e-3], "classifier_learning_rate": None}}
    plan = make_plan(
        ablation={"settings": ["default"], "pairs": ["fr"], "tasks": ["xnli"], "finetune": one},
        transfer={"seeds": [1, 2]},
    )
    k = plan.transfer["freeze"][0]
    assert plan.ablation_transfer_parts() == [
        f"results/t/eval/transfer/xnli/ablation/default/en-fr/f{k}-b8-lr0.001/seed{s}.parquet" for s in (1, 2)
    ]
    assert plan.ablation_targets() == ["results/t/eval/ablation.parquet", "results/t/eval/ablation.csv"]
    assert make_plan(ablation={"settings": []}).ablation_targets() == []


def test_the_papers_search_is_one_fine_tuning_per_grid_point():
    """§3.2: XNLI 200 epochs, batch {4, 8} x encoder rate {1.25e-6, 2.5e-6, 5e-6} x classifier rate {5e-6,
    2.5e-5, 1.25e-4}, fixed rate; NER and parsing 10 epochs, batch {16, 32} x rate {2e-5, 3e-5, 5e-5}, 10 %
    warm-up then linear decay; Adam (no weight decay). The rest of a fine-tuning's settings stay transfer's."""
    plan = make_plan(ablation={"settings": ["default"], "pairs": ["fr"]}, transfer={"freeze": [0]})
    xnli, ner = plan.ablation_grid("xnli"), plan.ablation_grid("ner")
    assert len(xnli) == 18 and len(ner) == 6 and len(plan.ablation_grid("parsing")) == 6
    assert xnli["f0-b4-lr1.25e-06-clr0.000125"] == {
        "epochs": 200,
        "warmup": 0.0,
        "schedule": "constant",
        "weight_decay": 0.0,
        "batch_size": 4,
        "learning_rate": 1.25e-6,
        "classifier_learning_rate": 1.25e-4,
    }
    assert ner["f0-b32-lr3e-05"] == {
        "epochs": 10,
        "warmup": 0.1,
        "schedule": "linear",
        "weight_decay": 0.0,
        "batch_size": 32,
        "learning_rate": 3e-5,
    }
    runs = plan.ablation_runs()
    assert len(runs) == 18 + 6 + 6 and ("ner", "ablation/default/en-fr", "f0-b16-lr2e-05") in runs
    params = plan.transfer_params(
        wildcards(task="ner", lm="ablation/default/en-fr", variant="f0-b32-lr3e-05", seed="1")
    )
    assert params["settings"] == {**plan.finetune_settings["ner"], **ner["f0-b32-lr3e-05"]}
    assert params["freeze"] == 0 and params["selection"] == "en_dev" and params["dev_langs"] == ["en"]
