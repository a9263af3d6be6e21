"""Zero-shot transfer's plan (xling.plan.transfer): which fine-tunings, tested on which languages, with which
settings and files."""

from __future__ import annotations

import pytest

from plan_configs import make_plan, wildcards
from xling.plan.data import RealData

REAL = RealData(
    datasets={"xnli": ["en", "de"]}, parallel={}, treebanks={"en": ["EWT"], "fr": ["PUD"]}, splits={"fr": ["test"]}
)


def test_variants_per_model():
    plan = make_plan(transfer={"freeze": [0, 6], "zero_mean": True}, language={"sizes": [200]})
    assert plan.transfer_variants("bert/200-w5") == ["f0", "f6", "f0-zm"], "a BERT of the language experiments"
    assert plan.transfer_variants("bert/100-w5") == ["f0"], "the XNLI grid only"
    assert plan.transfer_variants("glove/100-w5") == ["static"]


def test_runs_xnli_on_the_grid_other_tasks_on_language_models():
    plan = make_plan(
        models=["bert"],
        windows=[5],
        transfer={"tasks": ["xnli", "pos"], "freeze": [0], "mds_freeze": 0, "zero_mean": False},
        language={"sizes": [200]},
        alignment={"finetune": {"sizes": []}},
    )
    assert plan.transfer_runs() == [
        ("xnli", "bert/100-w5", "f0"),
        ("xnli", "bert/200-w5", "f0"),
        ("pos", "bert/200-w5", "f0"),
    ]
    seeds = plan.transfer["seeds"]
    assert len(plan.transfer_parts()) == 3 * len(seeds)


def test_test_languages_and_splits_from_the_source():
    plan = make_plan(REAL, transfer={"xnli": {"languages": ["fr"]}})
    assert plan.transfer_langs("xnli") == ["en"], "fr named but without XNLI data; the pivot always"
    assert plan.transfer_langs("pos") == ["en", "fr"] and plan.task_splits("pos", "fr") == ["test"]
    assert plan.selection_langs("pos") == ["en"]
    assert plan.transfer_langs("pos", "ablation/default/en-de") == ["en"], "an ablation: its pair's languages"


def test_params_and_inputs_of_a_zero_mean_fine_tuning():
    plan = make_plan(transfer={"freeze": [0, 6], "zero_mean": True}, language={"sizes": [200]})
    run = wildcards(task="xnli", lm="bert/200-w5", variant="f0-zm", seed="2")
    params = plan.transfer_params(run)
    assert (params["freeze"], params["seed"], params["zero_mean"]) == (0, 2, plan.shift_settings())
    assert (plan.shift_settings()["sentences"], plan.shift_settings()["tokens"]) == (None, 5_000_000)
    assert params["settings"] == plan.finetune_settings["xnli"]
    inputs = plan.finetune_inputs(run)
    assert inputs["corpus"] == "results/t/corpus/200/en.txt" and inputs["model"] == "results/t/models/bert/200-w5"
    assert inputs["dev"] == ["results/t/data/xnli/dev-en.tsv"]
    # the same job scores the model: every language's splits and corpus sample (each language's own mean)
    assert inputs["data"] == [
        f"results/t/data/xnli/{split}-{lang}.tsv" for lang in ("en", "de", "fr") for split in ("dev", "test")
    ]
    assert inputs["corpora"] == [f"results/t/corpus/200/{lang}.txt" for lang in ("en", "de", "fr")]
    assert "mds" not in plan.transfer_eval_params(run) and "finetuned" not in inputs


def test_max_eval_caps_the_scored_examples_of_its_task_only_and_decides_the_weights():
    """transfer.<task>.max_eval (the first N examples of each dev and test split) is in the settings that decide a
    fine-tuning's weights (the dev examples choose the epoch), of its own task alone, Cao et al.'s XNLI too."""
    plan = make_plan(transfer={"ner": {"max_eval": 200}}, language={"sizes": [200]})
    assert plan.finetune_settings["ner"]["max_eval"] == 200 and plan.finetune_settings["xnli"]["max_eval"] is None
    ner = plan.transfer_params(wildcards(task="ner", lm="bert/200-w5", variant="f0", seed="1"))
    assert ner["settings"]["max_eval"] == 200
    plan = make_plan(transfer={"xnli": {"max_eval": 50}})
    assert (
        plan.transfer_params(wildcards(task="xnli", lm="bert/100-w5", variant="f0", seed="1"))["settings"]["max_eval"]
        == 50
    )


def test_static_variant_reads_vectors_and_its_own_rate():
    plan = make_plan(tokenizer={"vocab": "train"})
    run = wildcards(task="xnli", lm="glove/100-w5", variant="static", seed="1")
    assert plan.transfer_model_inputs(run) == dict(
        vectors="results/t/models/glove/100-w5/vectors.bin", vocab="results/t/vocab/trained.txt"
    )
    params = plan.transfer_params(run)
    assert params["freeze"] == -1 and params["settings"]["learning_rate"] == plan.transfer["static"]["learning_rate"]


def test_rotations_registered_for_a_model_are_fine_tuned_and_tested_with_on_xnli():
    """f{k}-rot{kind}: the dev languages' rotation files select the epoch, the tested ones are scored rotated."""
    plan = make_plan(transfer={"xnli": {"languages": ["de"]}})
    plan.transfer_rotations["bert/200-w10"] = dict(
        sentences=9, layer=8, files={"orth": {"de": "r/de.npy"}, "word": {"de": "w/de.npy"}}
    )
    run = wildcards(task="xnli", lm="bert/200-w10", variant="f0-rotorth", seed="1")
    assert plan.transfer_eval_inputs(run)["rotations"] == ["r/de.npy"]
    assert plan.transfer_eval_params(run)["rotation"] == dict(sentences=9, layer=8, langs={"orth": ["de"]})
    assert plan.finetune_inputs(run)["rotations"] == ["r/de.npy"]
    params = plan.transfer_params(run)
    assert params["rotation"] == dict(sentences=9, layer=8, langs={"orth": ["de"]})
    assert (params["selection"], params["dev_langs"]) == ("avg_dev", ["en", "de"])  # alignment.xnli's default
    plain = wildcards(task="xnli", lm="bert/200-w10", variant="f0", seed="1")
    assert "rotations" not in plan.transfer_eval_inputs(plain) and "rotation" not in plan.transfer_params(plain)


def test_cao_fine_tunings_are_their_own_variants_with_alignment_xnli():
    """The aligned models and their base get f{k}-cao (and the base f{k}-rot{kind}) with alignment.xnli's recipe
    and selection; the language experiments keep transfer.xnli's and en_dev (Conneau et al.'s selection)."""
    plan = make_plan(
        transfer={"freeze": [1, 6], "zero_mean": True, "tasks": ["xnli", "pos"]},
        language={"sizes": [200]},
        alignment={"finetune": {"sizes": [10]}},
    )
    base, aligned = "bert/200-w10", "aligned/10/bert/200-w10"
    assert plan.alignment_bases() == [base]
    assert plan.transfer_variants(base) == ["f1", "f6", "f1-zm", "f1-cao", "f1-rotword", "f1-rotsentence"]
    assert plan.transfer_variants(aligned) == ["f1-cao"]
    assert plan.transfer_variants("bert/200-w5") == ["f1", "f6", "f1-zm"], "not a base of an aligned model"
    runs = plan.transfer_runs()
    assert ("pos", base, "f1-cao") not in runs and ("xnli", base, "f1-rotword") in runs, "Cao et al.'s: XNLI only"
    cao = plan.transfer_params(wildcards(task="xnli", lm=aligned, variant="f1-cao", seed="1"))
    ours = plan.transfer_params(wildcards(task="xnli", lm=base, variant="f1", seed="1"))
    assert (cao["selection"], ours["selection"]) == ("avg_dev", "en_dev")
    assert cao["dev_langs"] == ["en", "de", "fr"] and ours["dev_langs"] == ["en"]
    assert {key: cao["settings"][key] for key in ("betas", "eps", "weight_decay", "epochs", "batch_size")} == {
        "betas": [0.9, 0.98],
        "eps": 1e-9,
        "weight_decay": 0.0,
        "epochs": 3,
        "batch_size": 32,
    }
    assert "betas" not in ours["settings"] and ours["settings"] == plan.finetune_settings["xnli"]
    assert cao["settings"]["max_length"] == ours["settings"]["max_length"], "transfer.xnli's where A.1 is silent"
    assert "mds" not in plan.transfer_eval_params(wildcards(task="xnli", lm=base, variant="f1-cao", seed="1"))
    other = make_plan(alignment={"finetune": {"sizes": [10]}, "xnli": {"selection": "en_dev", "epochs": 5}})
    changed = other.transfer_params(wildcards(task="xnli", lm=aligned, variant="f0-cao", seed="1"))
    assert (changed["selection"], changed["settings"]["epochs"]) == ("en_dev", 5)


def test_avg_dev_cannot_select_zero_mean():
    with pytest.raises(ValueError, match="avg_dev"):
        make_plan(transfer={"selection": "avg_dev", "zero_mean": True})


LOW = RealData(
    datasets={"xnli": ["en", "de"]},
    parallel={},
    treebanks={"en": ["EWT"], "de": ["GSD"]},
    low_resource={"kk": ["UD_Kazakh-KTB"], "ga": ["UD_Irish-IDT"]},
)


def test_low_resource_treebanks_are_parsed_test_only_with_means_from_their_train_text():
    """Liu et al. short §5.2 (transfer.parsing.low_resource): parsing of the language experiments' BERTs is also
    tested on the treebanks without dev, their mean text their own train split, MDS's alpha by the rule; POS,
    the ablations and the epoch selection never read them."""
    plan = make_plan(LOW, language={"sizes": [200]}, transfer={"selection": "avg_dev", "zero_mean": False})
    assert plan.transfer_langs("parsing") == ["en", "de", "kk", "ga"] and plan.transfer_langs("pos") == ["en", "de"]
    assert plan.task_splits("parsing", "kk") == ["test"], "the dev split is never read"
    assert plan.transfer_langs("parsing", "ablation/default/en-de") == ["en", "de"]
    run = wildcards(task="parsing", lm="bert/200-w5", variant="f0", seed="1")
    assert plan.selection_langs("parsing", run.lm, run.variant) == ["en", "de"], "no dev: never selects the epoch"
    inputs = plan.finetune_inputs(run)
    assert inputs["data"][-2:] == ["results/t/data/ud/kk.test.conllu", "results/t/data/ud/ga.test.conllu"]
    assert inputs["corpora"] == [
        "results/t/corpus/200/en.txt",
        "results/t/corpus/200/de.txt",
        "results/t/data/ud/kk.train.conllu",
        "results/t/data/ud/ga.train.conllu",
    ]
    params = plan.transfer_eval_params(run)
    assert params["langs"]["kk"] == ["test"] and "mds" in params
    assert params["low_resource"] == dict(langs=["kk", "ga"], mean_text="treebank train split", alpha="dev_languages")
    assert "low_resource" not in plan.transfer_eval_params(wildcards(task="pos", lm=run.lm, variant="f0", seed="1"))
    assert plan.transfer_params(run) == make_plan(
        REAL, language={"sizes": [200]}, transfer={"selection": "avg_dev", "zero_mean": False}
    ).transfer_params(run) | {"dev_langs": ["en", "de"]}, "the weights do not depend on them"
    fixed = make_plan(LOW, language={"sizes": [200]}, transfer={"parsing": {"low_resource": {"alpha": 1.0}}})
    assert fixed.transfer_eval_params(run)["low_resource"]["alpha"] == 1.0
    assert make_plan(language={"sizes": [200]}).transfer_langs("parsing") == ["en", "de", "fr"], (
        "synthetic data has no such treebanks"
    )


def test_the_full_study_plans_the_six_low_resource_treebanks_and_none_is_a_run_language():
    from plan_configs import make_config
    from xling.plan.data import low_resource_treebanks

    config = make_config()
    assert low_resource_treebanks(config) == {
        "kk": ["UD_Kazakh-KTB"],
        "ga": ["UD_Irish-IDT"],
        "bxr": ["UD_Buryat-BDT"],
        "hsb": ["UD_Upper_Sorbian-UFAL"],
        "kmr": ["UD_Kurmanji-MG"],
        "sme": ["UD_North_Sami-Giella"],
    }
    assert low_resource_treebanks(make_config(transfer={"tasks": ["xnli", "pos"]})) == {}, "no parsing, none"
    with pytest.raises(ValueError, match="kk also in `languages`"):
        low_resource_treebanks(make_config(languages=["en", "kk"]))


def test_the_low_resource_alpha_and_treebanks_change_only_the_parsing_scores():
    """A changed low-resource setting reruns only what it changes: the parsing fine-tunings' scoring (params.test),
    never their weights (params.run; the fine-tuning resumes without a step) nor another task's jobs."""

    def plan(alpha, treebanks):
        return make_plan(
            RealData(
                datasets={"xnli": ["en", "de"], "wikiann": ["en", "de"]},
                parallel={},
                treebanks={"en": ["EWT"], "de": ["GSD"]},
                low_resource=treebanks,
            ),
            language={"sizes": [200]},
            transfer={"parsing": {"low_resource": {"alpha": alpha}}},
        )

    base, other_alpha, other_set = (
        plan("dev_languages", LOW.low_resource),
        plan(0.5, LOW.low_resource),
        plan("dev_languages", {"kk": ["UD_Kazakh-KTB"]}),
    )
    for task in ("xnli", "pos", "parsing", "ner"):
        for variant in ("f0", "f0-zm"):
            run = wildcards(task=task, lm="bert/200-w5", variant=variant, seed="1")
            assert base.transfer_params(run) == other_alpha.transfer_params(run) == other_set.transfer_params(run)
            changed = [p.transfer_eval_params(run) != base.transfer_eval_params(run) for p in (other_alpha, other_set)]
            assert changed == [task == "parsing", task == "parsing"], (task, variant)


def test_transfer_windows_narrow_the_xnli_grid_and_keep_the_language_and_alignment_berts():
    """transfer.windows: the XNLI grid at the short window only; the language experiments' BERT (window 10, also
    the alignment base) keeps its XNLI, MDS depth and Cao et al.'s variants; null is every window."""
    settings = dict(tasks=["xnli"], freeze=[0], mds_freeze=1, zero_mean=False)
    plan = make_plan(transfer={**settings, "windows": [5]}, language={"sizes": [200], "windows": [10]})
    runs = plan.transfer_runs()
    assert sorted({lm for _, lm, _ in runs if not lm.startswith("aligned/")}) == [
        "bert/100-w5",
        "bert/200-w10",
        "bert/200-w5",
        "glove/100-w5",
        "glove/200-w5",
    ]
    assert [v for _, lm, v in runs if lm == "bert/200-w10"] == ["f0", "f1", "f0-cao", "f0-rotword", "f0-rotsentence"]
    assert [lm for _, lm, _ in runs if lm.startswith("aligned/")] == plan.aligned_models() != []
    every = make_plan(transfer=settings, language={"sizes": [200], "windows": [10]})
    assert {lm for _, lm, _ in every.transfer_runs()} - {lm for _, lm, _ in runs} == {
        "bert/100-w10",
        "glove/100-w10",
        "glove/200-w10",
    }
    with pytest.raises(ValueError, match=r"transfer.windows: \[7\] are not in windows \[5, 10\]"):
        make_plan(transfer={"windows": [7]}).transfer_runs()
