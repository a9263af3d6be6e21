"""Monolingual BERTs and CKA's plan (xling.plan.monolingual): targets, models, settings and inputs."""

from __future__ import annotations

import json

import pytest

from plan_configs import make_plan, preset_plan, wildcards

from xling.plan.seeds import seed_of


def test_size_window_and_models_of_the_monolingual_berts():
    """null: the bilingual side's size and window (the ablations' under cka.bilingual ablation, the run's BERT's
    under study), so CKA and sharing compare models that differ in sharing only."""
    plan = make_plan(monolingual={"languages": ["fr"], "size": None, "window": None}, ablation={"window": 10})
    assert (plan.mono_size, plan.mono_window, plan.mono_grid) == (100, 10, "100-w10")
    assert plan.mono_targets() == ["fr"] and plan.mono_language("en~7") == "en"
    assert plan.mono_dir("fr") == "results/t/models/mono/fr/100-w10"
    assert plan.en_prime == f"en~{plan.cka['en_prime_seed']}"
    assert (make_plan(ablation={"window": 7}).mono_window, make_plan(ablation={"size": 200}).mono_size) == (7, 200)
    study = make_plan(cka={"bilingual": "study"}, monolingual={"contextual": {"bimlm": "study"}})
    assert (study.mono_size, study.mono_window) == (200, 5)
    with pytest.raises(ValueError, match="monolingual.window: 7 is not in windows"):
        make_plan(cka={"bilingual": "study"}, monolingual={"window": 7})


@pytest.mark.parametrize(
    "mono, cka, key",
    [
        ({"window": 5}, "ablation", "monolingual.window: 5 differs"),
        ({"size": 200}, "ablation", r"monolingual.size: 200 differs.*ablation.size"),
        ({"window": 10}, "study", "monolingual.window: 10 differs"),
        ({"size": 100}, "study", "monolingual.size: 100 differs"),
    ],
)
def test_a_monolingual_side_other_than_the_bilingual_sides_stops_the_plan(mono, cka, key):
    with pytest.raises(ValueError, match=key):
        make_plan(monolingual={**mono, "contextual": {"bimlm": cka}}, cka={"bilingual": cka}, ablation={"window": 10})
    make_plan(monolingual={**mono, "languages": []}, cka={"bilingual": cka}, ablation={"window": 10})  # none: planned


@pytest.mark.parametrize("preset", ["demo", "test"])
def test_the_presets_monolingual_berts_are_at_the_ablations_size_and_window(preset):
    plan = preset_plan(preset)
    assert (plan.mono_size, plan.mono_window) == (plan.ablation_size(), plan.ablation["window"])
    assert plan.cka_bilingual_length() == plan.mono_window


def test_config_yaml_trains_the_monolingual_berts_on_streams_of_256_tokens_at_the_ablations_size():
    plan = make_plan(languages=["en", "fr", "de"], windows=[512, 20], corpus={"sizes": [200000, 1000000]})
    assert (plan.mono_size, plan.mono_window, plan.mono_grid) == (200000, 256, "200000-w256")
    with pytest.raises(ValueError, match="en_prime_seed"):
        make_plan(monolingual={"seed": 3}, cka={"en_prime_seed": 3})


def test_hparams_draw_each_language_its_own_seed():
    plan = make_plan(monolingual={"seed": 3, "max_steps": 5})
    fr, de = (json.loads(plan.mono_hparams(lang, 5)) for lang in ("fr", "de"))
    assert fr["seed"] != de["seed"] and fr["max_steps"] == 5 and fr["window"] == 5
    assert json.loads(plan.mono_hparams("en~9", 5))["seed"] == seed_of(9, "en")
    assert plan.mono_model_params("fr")["lm"] == f"mono/fr/{plan.mono_grid}"


def test_contextual_level_tasks_layers_and_baseline():
    plan = make_plan(
        transfer={"tasks": ["xnli", "ner"], "ner": {"languages": None}},
        ablation={"bert": {"num_layers": 2}},
        monolingual={"languages": None, "contextual": {"enabled": True, "layers": None}},
    )
    assert plan.mono_contextual_tasks("fr") == ["ner"] and plan.mono_contextual_langs() == ["de", "fr"]
    assert plan.mono_contextual_layers() == [0, 1, 2]
    # Figure 5's biMLM: the pair's Default bilingual MLM (monolingual.contextual.bimlm ablation)
    assert plan.mono_contextual_bimlm("fr") == ["results/t/models/ablation/default/en-fr"]
    assert plan.mono_contextual_bimlm_params("de")["lm"] == "ablation/default/en-de"
    assert json.loads(plan.mono_contextual_bimlm_params("de")["hparams"]) == plan.ablation_hparams("default")
    study = make_plan(monolingual={"contextual": {"bimlm": "study"}}, cka={"bilingual": "study"})
    assert study.mono_contextual_bimlm("fr") == [study.model_dir("bert", study.mono_size, study.mono_window)]
    assert plan.mono_contextual_task_settings("ner")["max_length"] <= plan.mono_window
    off = make_plan(monolingual={"contextual": {"enabled": False}})
    assert (
        off.mono_contextual_tasks("fr") == []
        and make_plan(
            models=["glove"], monolingual={"contextual": {"bimlm": "study"}}, cka={"bilingual": "study"}
        ).mono_contextual_bimlm_params("fr")
        is None
    )
    with pytest.raises(ValueError, match=r"above the models' depth \(2"):
        make_plan(
            monolingual={"contextual": {"layers": [3]}}, ablation={"bert": {"num_layers": 2}}
        ).mono_contextual_layers()


def test_monolingual_bert_overrides_the_bert_block():
    """monolingual.bert (config.yaml: Conneau et al.'s 8 layers) over the bert block, in the models' settings; the
    contextual level's layers stop at the shallower of them and the biMLM baseline."""
    plan = make_plan(
        bert={"num_layers": 12, "max_steps": 40},
        monolingual={"bert": {"num_layers": 8}},
        ablation={"bert": {"num_layers": 10}},
    )
    hparams = json.loads(plan.mono_hparams("fr", 5))
    assert hparams["num_layers"] == 8 and hparams["max_steps"] == 40
    assert json.loads(plan.mono_contextual_bimlm_params("fr")["hparams"])["num_layers"] == 10
    assert make_plan(
        monolingual={"bert": {"num_layers": 8}}, ablation={"bert": {"num_layers": 3}}
    ).mono_contextual_layers() == [0, 1, 2, 3]
    assert plan.mono_contextual_layers() == list(range(9))
    assert (
        json.loads(make_plan(monolingual={"bert": {"num_layers": 8}, "max_steps": 7}).mono_hparams("fr", 5))[
            "max_steps"
        ]
        == 7
    )


def test_cka_inputs_of_a_target_and_of_en_prime():
    plan = make_plan()
    target = plan.cka_inputs(wildcards(mono="fr"))
    assert target["models"] == [plan.mono_dir("en"), plan.mono_dir("fr")] and "multilingual" in target
    split = plan.cka["split"]
    assert target["xnli"] == [f"results/t/data/xnli/{split}-en.tsv", f"results/t/data/xnli/{split}-fr.tsv"]
    assert "multilingual" not in plan.cka_inputs(wildcards(mono=plan.en_prime))
    # Conneau et al. §5.2: the Default-setting bilingual MLM of the pair (cka.bilingual ablation), at most its window
    assert target["multilingual"] == "results/t/models/ablation/default/en-fr"
    assert plan.cka_bilingual_length() == min(plan.mono_window, plan.ablation["window"])
    study = make_plan(cka={"bilingual": "study"}, monolingual={"contextual": {"bimlm": "study"}})
    assert study.cka_inputs(wildcards(mono="fr"))["multilingual"] == study.model_dir(
        "bert", study.mono_size, study.mono_window
    )
    assert study.cka_bilingual_length() == study.mono_window
    # each side's training data and window go into the table: the findings compare sharing only where they agree
    assert plan.cka_sides() == dict(
        multilingual_size=plan.ablation_size(),
        multilingual_window=plan.ablation["window"],
        mono_size=plan.mono_size,
        mono_window=plan.mono_window,
    )
    assert study.cka_sides()["multilingual_size"] == study.mono_size


def test_the_contextual_level_is_planned_for_the_test_preset_and_not_for_the_demo():
    assert preset_plan("test").mono_contextual_langs() != []
    assert preset_plan("demo").mono_contextual_langs() == []
