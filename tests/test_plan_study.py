"""The synthetic study's plan (presets/study.yaml): every experiment its claims need is planned, each transfer
claim over three fine-tuning seeds, and what no claim judges is left out (the 45-minute budget)."""

from __future__ import annotations

from types import SimpleNamespace

from plan_configs import preset_plan

from xling.plan.tables import TABLES

PLAN = preset_plan("study")
BERT = "bert/20000-w128"  # the claims' model: the largest size, the longest window
SEEDS = [1, 2, 3]


def test_pos_and_parsing_on_the_claims_bert_with_mds_at_the_papers_depth():
    """Liu et al. (short) Tables 4-5: POS and parsing on the BERT the MDS claims judge, tested with MDS at the
    depth of "fixing the first six layers" of 12 (2 of 4); no zero-mean fine-tuning (no claim judges one)."""
    assert PLAN.mds_freeze() == 2
    for task in ("pos", "parsing"):
        assert [(lm, v) for t, lm, v in PLAN.transfer_runs() if t == task] == [(BERT, "f0"), (BERT, "f2")]
    assert not [v for _, _, v in PLAN.transfer_runs() if v.endswith("-zm")]


def test_xnli_at_the_long_window_with_the_papers_variants():
    xnli = [(lm, v) for t, lm, v in PLAN.transfer_runs() if t == "xnli"]
    assert sorted(lm for lm, _ in xnli if not lm.startswith("aligned/")) == sorted(
        [f"{m}/{s}-w128" for m in ("glove", "word2vec") for s in (4000, 20000)] + ["bert/4000-w128"] + [BERT] * 5
    )
    assert sorted(v for lm, v in xnli if lm == BERT) == ["f0", "f0-cao", "f0-rotsentence", "f0-rotword", "f2"]
    assert [lm for lm, _ in xnli if lm.startswith("aligned/")] == [f"aligned/700/{BERT}"]


def test_every_transfer_claim_has_three_seeds_the_ablations_five():
    """The ablations' en-xc XNLI spreads over seeds (ablation.seeds); a preset without the key gives them
    transfer.seeds (the demo)."""
    assert PLAN.transfer["seeds"] == SEEDS
    assert len(PLAN.transfer_parts()) == len(PLAN.transfer_runs()) * 3
    assert PLAN.ablation_seeds() == [1, 2, 3, 4, 5]
    assert sorted({part.rsplit("/seed", 1)[1] for part in PLAN.ablation_transfer_parts()}) == [
        f"{s}.parquet" for s in range(1, 6)
    ]
    tables = SimpleNamespace(
        results=PLAN.results, ablation_runs=PLAN.ablation_runs, ablation_seeds=PLAN.ablation_seeds
    )  # what rules/common.smk's table_plan passes
    assert TABLES["ablation"].parts(tables) == PLAN.ablation_transfer_parts()
    demo = preset_plan("demo")
    assert demo.ablation_seeds() == demo.transfer["seeds"] == [1]


def test_conneau_ablations_the_three_claims_compare():
    """anchors: no-anchors against default; extra-anchors: extra-anchors against default; sharing: default
    against a setting with separate embeddings and layers (the paper's Sep Emb + L1-6 of 8: layers 1-2 of 4)."""
    assert PLAN.ablation_models() == [
        f"ablation/{s}/en-xc" for s in ("default", "no-anchors", "extra-anchors", "sep-emb-l2")
    ]
    assert {task for task, _, _ in PLAN.ablation_runs()} == {"xnli"}
    assert len(PLAN.ablation_transfer_parts()) == 4 * 5


def test_monolingual_berts_maps_and_cka_against_the_bilingual_default():
    """§5: monolingual BERTs of en (and en', the CKA's second seed) and xc at the ablations' size and window,
    compared with the ablation default of en-xc."""
    assert PLAN.mono_targets() == ["xc"] and PLAN.en_prime == "en~2"
    assert (PLAN.mono_size, PLAN.mono_window) == (PLAN.ablation_size(), PLAN.ablation["window"]) == (4000, 64)
    tables = SimpleNamespace(
        results=PLAN.results,
        mono_targets=PLAN.mono_targets,
        mono_grid=PLAN.mono_grid,
        en_prime=PLAN.en_prime,
        retrieval_targets=PLAN.retrieval_targets,
        tatoeba_langs=PLAN.tatoeba_langs,
    )  # what rules/common.smk's table_plan passes
    grid = "results/study/eval/{}/4000-w64/{}.parquet"
    assert TABLES["cka"].parts(tables) == [grid.format("cka", "en~2"), grid.format("cka", "xc")]
    assert TABLES["monolingual_words"].parts(tables) == [grid.format("monolingual/words", "xc")]
    assert TABLES["monolingual_sentences"].parts(tables) == [grid.format("monolingual/sentences", "xc")]
    assert PLAN.ablation_targets() == ["results/study/eval/ablation.parquet", "results/study/eval/ablation.csv"]


def test_what_no_claim_judges_is_not_planned():
    """The language experiments on the window-128 BERT only; Cao et al. on the largest amount of parallel data."""
    assert PLAN.language_models() == [BERT]
    assert PLAN.aligned_models() == [f"aligned/700/{BERT}"]
    assert not [lm for _, lm, _ in PLAN.transfer_runs() if lm.endswith("-w16")]


def test_token_translation_at_table_1s_layer_and_alphas_where_the_decoder_still_translates():
    """Liu et al. (short) Table 1 shifts layer 10 of mBERT's 12: layer 3 of the study BERT's 4. Its alphas (1, 2, 3)
    take mBERT's convert rate from 15-62 % to 73-100 %, while the study's BERT converts 77-93 % at alpha 1 and
    repeats one token from there on (the decoder's flag), so the study samples the rise below alpha 1: at least two
    positive alphas under 1, alpha 0 as the baseline, a negative alpha for the claim about it."""
    layers, alphas = PLAN.language["layers"], PLAN.language["alphas"]
    assert layers == [round(10 * PLAN.config["bert"]["num_layers"] / 12)] == [3]
    assert 0 in alphas and any(a < 0 for a in alphas)
    assert len([a for a in alphas if 0 < a < 1]) >= 2 and max(alphas) < 1


def test_the_parser_trains_until_it_parses_english():
    """One epoch of the 2,000 English treebank sentences left the study's parser at en dev LAS 26.5, against a chain
    floor of 16.1 (xling.evaluate.chance.attachment_las), and no zero-shot language above its floor. After four
    epochs (3 s each) en dev LAS is 84.3 and xa and xc parse above their floors, so a low-resource treebank at
    chance says something about the language, not about an untrained parser."""
    assert PLAN.transfer["parsing"]["epochs"] >= 4
