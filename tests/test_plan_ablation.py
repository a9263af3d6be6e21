"""Conneau et al.'s ablations' plan (xling.plan.ablation): models, tokens, settings and languages."""

from __future__ import annotations

import pytest

from plan_configs import make_plan, wildcards
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
    plan = make_plan()
    assert plan.ablation_tokens(wildcards(setting="default", pair="en-fr")) == [
        "results/t/tokens/100/en.txt", "results/t/tokens/100/fr.txt"]
    assert plan.ablation_tokens(wildcards(setting="wiki-cc", pair="en-fr"))[1] == "results/t/ablation/tokens/wiki-cc/fr.txt"
    assert plan.ablation_tokens(wildcards(setting="extra-anchors", pair="en-fr"))[0] == (
        "results/t/ablation/tokens/extra-anchors/en-fr/en.txt")


def test_lm_params_carry_the_trainer_settings():
    plan = make_plan(ablation={"window": 64, "bert": {"num_layers": 2}}, language={"max_length": 32})
    params = plan.lm_params(wildcards(lm="ablation/sep-emb/en-fr"))
    assert (params["path"], params["size"], params["window"], params["max_length"]) == (
        "results/t/models/ablation/sep-emb/en-fr", 100, 64, 32)
    assert params["hparams"]["num_layers"] == 2 and params["hparams"]["ablation"]["sampling_exponent"] is not None
    assert plan.ablation_langs("ablation/default/en-fr", ["en", "de", "fr"]) == ["en", "fr"]
    assert plan.ablation_langs("bert/100-w5", ["en", "de"]) == ["en", "de"]


def test_transfer_parts_and_targets():
    plan = make_plan(ablation={"settings": ["default"], "pairs": ["fr"], "tasks": ["xnli"]}, transfer={"seeds": [1, 2]})
    assert plan.ablation_transfer_parts() == [
        f"results/t/eval/transfer/xnli/ablation/default/en-fr/f{plan.transfer['freeze'][0]}/seed{s}.parquet" for s in (1, 2)]
    assert plan.ablation_targets() == ["results/t/eval/ablation.parquet", "results/t/eval/ablation.csv"]
    assert make_plan(ablation={"settings": []}).ablation_targets() == []
