"""The experiments' scope as the papers state it (issue 33), read from the plan of config.yaml on the real
sources (resources/sources.yaml, as rules/sources.smk builds them): the languages Cao et al.'s analyses score and
their XNLI selection averages, and the other scopes a key or the code fixes."""

from __future__ import annotations

import pytest
from plan_configs import HELPERS, SCHEMA, make_config, make_plan, wildcards

from xling.data.sources import Sources
from xling.plan.data import RealData
from xling.plan.study import Plan

CAO_FIVE = ["bg", "de", "el", "es", "fr"]  # Cao et al. §3.5: "Bulgarian, German, Greek, Spanish, and French"


def real_plan(**overrides) -> Plan:
    """The plan of config.yaml (with `overrides`) on the real sources, as rules/sources.smk builds them."""
    config = make_config(**overrides)
    sources, langs = Sources(config["data"]), config["languages"]
    source = RealData(
        {name: sources.available(name, langs) for name in sources.datasets},
        sources.parallel_sources(langs[1:]),
        treebanks={lang: sources.treebanks(lang) for lang in sources.available("ud", langs) if sources.treebanks(lang)},
    )
    return Plan(config, source, SCHEMA, HELPERS)


def test_cao_et_al_s_retrieval_pos_and_frequency_score_the_five_languages():
    """Tables 3-4 and Figure 3 on the five aligned languages; every language with parallel text (Table 5's ar, zh,
    ur too) keeps its word pairs, and alignment.evaluation_languages parallel scores all eight."""
    plan = real_plan()
    assert sorted(plan.align_pair_langs()) == sorted([*CAO_FIVE, "ar", "zh", "ur"])
    assert sorted(plan.align_eval_langs()) == CAO_FIVE
    inputs = plan.contextual_retrieval_inputs(wildcards(lm="bert/1000000-w512"))
    assert sorted({path.split("/")[-2] for path in inputs["test"]}) == [f"en-{lang}" for lang in CAO_FIVE]
    eight = real_plan(alignment={"evaluation_languages": "parallel"})
    assert sorted(eight.align_eval_langs()) == sorted(plan.align_pair_langs())


def test_cao_et_al_s_xnli_selects_on_the_six_languages():
    """ "we select a single model using the average accuracy across the six languages" (Table 1 note a): English
    and the five, for every Cao et al. fine-tuning (aligned, base, rotations, the Table 5 model), while XNLI is
    still tested on every language; alignment.xnli.selection_languages tested averages every tested one."""
    plan = real_plan()
    cao = [
        (lm, variant)
        for lm in plan.aligned_models() + plan.alignment_bases()
        for variant in plan.transfer_variants(lm)
        if variant.endswith(("-cao", "-rotword", "-rotsentence"))
    ]
    assert len(cao) == len(plan.aligned_models()) + 3 * len(plan.alignment_bases())
    for lm, variant in cao:
        assert sorted(plan.selection_langs("xnli", lm, variant)) == sorted(["en", *CAO_FIVE]), (lm, variant)
    assert len(plan.transfer_langs("xnli")) > 6
    tested = real_plan(alignment={"xnli": {"selection_languages": "tested"}})
    assert tested.selection_langs("xnli", *cao[0]) == tested.transfer_langs("xnli")
    assert plan.selection_langs("xnli", "bert/1000000-w512", "f0") == ["en"], "the language experiments: en_dev"


def test_evaluation_languages_follow_the_aligned_ones_on_any_source():
    plan = make_plan(alignment={"finetune": {"languages": ["fr"]}})
    assert plan.align_pair_langs() == ["de", "fr"] and plan.align_eval_langs() == ["fr"]
    params = plan.transfer_params(wildcards(task="xnli", lm="aligned/700/bert/200-w10", variant="f0-cao", seed="1"))
    assert params["dev_langs"] == ["en", "fr"]
    with pytest.raises(Exception, match="evaluation_languages"):
        make_plan(alignment={"evaluation_languages": "every"})


def test_mds_is_planned_at_the_papers_freeze_depth_scaled_to_the_layers():
    """Liu et al. (full), XNLI: "fixing the first six layers ... added MDS to the hidden representations of the
    6-th layer": half the layers frozen (6 of 12, 2 of a 4-layer BERT), planned beside transfer.freeze; every plain
    depth is scored with MDS (the short paper names no frozen layer for POS and parsing: the run's own depth)."""
    assert real_plan().mds_freeze() == 6 and "f6" in real_plan().transfer_variants("bert/1000000-w512")
    plan = make_plan(bert={"num_layers": 4}, transfer={"freeze": [0]})
    assert plan.mds_freeze() == 2
    assert plan.transfer_variants("bert/200-w10")[:2] == ["f0", "f2"]
    assert plan.transfer_variants("glove/200-w10") == ["static"]
    mds = {variant: plan.uses_mds(wildcards(lm="bert/200-w10", variant=variant)) for variant in ("f0", "f2")}
    assert mds == {"f0": True, "f2": True}
    assert not plan.uses_mds(wildcards(lm="bert/200-w10", variant="f0-zm"))
    params = plan.transfer_eval_params(wildcards(task="pos", lm="bert/200-w10", variant="f2"))
    assert "mds" in params and "mds" not in plan.transfer_eval_params(
        wildcards(task="pos", lm="bert/200-w10", variant="f0-zm")
    )
    assert make_plan(bert={"num_layers": 3}).mds_freeze() == 1
    assert make_plan(bert={"num_layers": 3}, transfer={"freeze": [1]}).transfer_variants("bert/200-w10")[:1] == ["f1"]
    chosen = make_plan(bert={"num_layers": 4}, transfer={"freeze": [0], "mds_freeze": 0})
    assert chosen.transfer_variants("bert/200-w10")[:2] == ["f0", "f0-zm"]
    assert make_plan(transfer={"mds": False, "freeze": [0]}).transfer_variants("bert/200-w10")[:1] == ["f0"]
    assert make_plan(transfer={"mds": False, "freeze": [0]}).transfer_variants("bert/200-w10")[1] != "f6"
    with pytest.raises(ValueError, match="transfer.mds_freeze: 5 is more than bert.num_layers"):
        make_plan(bert={"num_layers": 4}, transfer={"mds_freeze": 5}).mds_freeze()
