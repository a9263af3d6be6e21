"""A changed setting reruns exactly the jobs downstream of it: the jobs `snakemake -n` plans after each kind
of change, on one finished run of presets/test.yaml (the `test_run` fixture of conftest.py, which these
tests never modify: the change comes as an extra --configfile). Snakemake's default rerun triggers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from plan_configs import language_berts, preset_plan
from workflow_helpers import REPO, TEST_PRESET, copy_run, job_counts, snakemake

from xling.runtime import RUNTIME

pytestmark = pytest.mark.workflow

CONFIG = {**yaml.safe_load((REPO / "config.yaml").read_text()), **yaml.safe_load(TEST_PRESET.read_text())}
GRID = len(CONFIG["corpus"]["sizes"]) * len(CONFIG["windows"])  # models of each kind
PAIRS = len(CONFIG["languages"]) - 1  # the pivot with every other language
SHARDS = CONFIG["represent"]["shards"]
LMS = len(language_berts(preset_plan("test")))  # BERTs of the language experiments
TRANSFER = CONFIG["transfer"]
VARIANTS = len(TRANSFER["freeze"]) + TRANSFER.get("zero_mean", True)  # each freeze depth, zero-mean at the first
STATIC_XNLI = GRID  # XNLI fine-tunings of each static model
ALIGNED = len(CONFIG["alignment"]["finetune"]["sizes"])  # aligned models: one base, each amount of parallel data
KINDS = len(CONFIG["alignment"].get("rotation", {}).get("kinds", ["word", "sentence"]))  # the rotation baselines
CAO_XNLI = ALIGNED + 1 + KINDS  # Cao et al.'s XNLI: each aligned model, the base (f{k}-cao), each rotation's
BERT_XNLI = GRID + LMS * (VARIANTS - 1) + CAO_XNLI  # the grid at the first depth, the other variants on the LMS
BERT_TRANSFER = BERT_XNLI + LMS * VARIANTS * 3  # and POS, parsing, NER
# Word2Vec models of the window sweep that are not grid models (the sweep is at the smallest size)
SWEEP_ONLY = len(set(CONFIG["window_sweep"]["windows"]) - set(CONFIG["windows"]))
ABLATION = CONFIG["ablation"]
ABLATIONS = len(ABLATION["settings"]) * len(ABLATION["pairs"])  # bilingual BERTs of Conneau et al.'s ablations
ABLATION_RUNS = ABLATIONS * len(ABLATION["tasks"]) * len(TRANSFER["seeds"])  # their fine-tunings
# the Default bilingual MLMs the CKA compares (cka.bilingual ablation) that the ablations do not train already
CKA_ONLY = len(
    [
        lang
        for lang in CONFIG["monolingual"]["languages"]
        if "default" not in ABLATION["settings"] or lang not in ABLATION["pairs"]
    ]
)
# the Sep rows (ablation.vocab.sep_settings language): on the language-specific vocabularies, not the joint one
SEP_MODELS = len([s for s in ABLATION["settings"] if s.startswith("sep")]) * len(ABLATION["pairs"])
REPORT = {"report": 1, "all": 1}
FINDINGS = {"findings": 1, **REPORT}  # a changed result table: the findings judged on it, and the report
WORD_RETRIEVAL = {"word_retrieval_table": 1, "word_retrieval_pos": 1, **FINDINGS}
# contextual retrieval of the LMS and of each aligned model (rotation rows are the base's), its table and analyses
CONTEXTUAL_TABLES = {
    "contextual_retrieval_table": 1,
    "contextual_retrieval_frequency": 1,
    "contextual_retrieval_pos": 1,
    **FINDINGS,
}
CONTEXTUAL = {"contextual_retrieval": LMS + ALIGNED, **CONTEXTUAL_TABLES}
FASTTEXT = int(CONFIG["alignment"]["fasttext"].get("enabled", True))  # the sentence-augmented fastText's retrieval
ROTATIONS = ALIGNED * PAIRS  # a rotation per language, learned on the aligned models' base
MONO_TARGETS = len(CONFIG["monolingual"]["languages"])  # targets with a monolingual BERT (the preset names them)
MONO_WORDS = {"mono_word_alignment": MONO_TARGETS, "monolingual_words_table": 1, **FINDINGS}
# the contextual word level: one job per target (its maps, then NER and parsing through them)
MONO_CONTEXTUAL = {"mono_contextual": MONO_TARGETS, "monolingual_contextual_table": 1}
# the sentence level and the contextual word level learn their maps on the same XNLI split
MONO_SENTENCES = {
    "mono_sentence_alignment": MONO_TARGETS,
    "monolingual_sentences_table": 1,
    **MONO_CONTEXTUAL,
    **FINDINGS,
}
# the monolingual BERTs (the pivot's, each target's, en') and everything compared on them (CKA: each target, en')
MONOLINGUAL = {
    "mono_pretrain": MONO_TARGETS + 2,
    "mono_word_means": MONO_TARGETS + 1,
    **MONO_WORDS,
    **MONO_SENTENCES,
    "cka": MONO_TARGETS + 1,
    "cka_table": 1,
}

#: a new value for every runtime setting (xling.runtime.RUNTIME), valid for the test preset
EVERY_RUNTIME_SETTING = {
    "data": {
        "cache": "elsewhere",
        "lock": "elsewhere/lock.yaml",
        "mirror": "https://mirror.example",
        "staged": "staged",
        "paths": {"muse": "muse"},
        "stage_mode": "copy",
        "download": {"retries": 1},
    },
    "glove": {"threads": 2, "mem_mb": 2000},
    "word2vec": {"threads": 2},
    "bert": {"threads": 2, "device": "cpu", "checkpoint_every": 20, "keep_checkpoints": 3, "log_every": 5},
    "represent": {"threads": 2, "device": "cpu", "batch_size": 7},
    "retrieval": {"block": 7},
    "language": {"threads": 2, "device": "cpu", "batch_size": 7, "sentence_retrieval": {"block": 7}},
    "transfer": {"threads": 2, "device": "cpu", "batch_size": 7, "checkpoint_every": 5},
    "alignment": {
        "threads": 2,
        "device": "cpu",
        "batch_size": 7,
        "retrieval": {"block": 7},
        "finetune": {"threads": 2, "device": "cpu", "checkpoint_every": 5},
        "rotation": {"block": 7},
        "fasttext": {"threads": 2},
    },
}


def plan(run: Path, tmp_path: Path, change: dict | None = None) -> dict[str, int]:
    """{rule: jobs} that `snakemake -n` plans in the finished run with `change` merged over the preset."""
    configs = [str(TEST_PRESET)]
    if change is not None:
        (tmp_path / "change.yaml").write_text(yaml.safe_dump(change))
        configs.append(str(tmp_path / "change.yaml"))
    dry = snakemake("-n", "--configfile", *configs, cwd=run, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    return job_counts(dry.stdout + dry.stderr)


def runtime_keys(change: dict, block: str = "") -> set[str]:
    """Dotted paths of the settings a change sets, a block of RUNTIME read key by key."""
    keys = set()
    for key, value in change.items():
        path = f"{block}.{key}" if block else key
        nested = any(name == path or name.startswith(f"{path}.") for name in RUNTIME)
        keys |= runtime_keys(value, path) if nested and isinstance(value, dict) else {path}
    return keys


def test_finished_run_plans_nothing(test_run, tmp_path):
    assert plan(test_run, tmp_path) == {}


@pytest.mark.parametrize("change", [{"report": {"title": "Another title"}}], ids=["report.title"])
def test_presentation_setting_reruns_only_the_report(test_run, tmp_path, change):
    assert plan(test_run, tmp_path, change) == REPORT


@pytest.mark.parametrize(
    "change",
    [{"report": {"layer": 1}}, {"retrieval": {"report_layer": 1}}],
    ids=["report.layer", "retrieval.report_layer"],
)
def test_the_report_s_layer_rejudges_the_findings_and_reruns_the_report(test_run, tmp_path, change):
    """The findings judge BERT at the layer the report shows (issue 22), so that layer is their setting too."""
    assert plan(test_run, tmp_path, change) == FINDINGS


def test_findings_settings_rerun_only_the_findings_and_the_report(test_run, tmp_path):
    """findings.* and bootstrap.* change outcomes, not the tables they are judged on (two keys in one dry run: one
    param)."""
    assert plan(test_run, tmp_path, {"findings": {"margin": 0.1, "layer": 1}}) == FINDINGS
    # the bootstrap also draws the intervals the gathers add to the tables with per-item scores, each CKA's
    # interval in its cka job (from the sentence vectors: the monolingual BERTs are not retrained), and the
    # intervals of Cao et al.'s analysis tables (by POS, by frequency rank) from the retrieval's queries
    assert plan(test_run, tmp_path, {"bootstrap": {"resamples": 200, "seed": 1}}) == {
        **{
            f"{table}_table": 1
            for table in (
                "token_translation",
                "tatoeba",
                "bucc",
                "transfer",
                "ablation",
                "cka",
                "monolingual_words",
                "monolingual_sentences",
            )
        },
        "cka": 2,
        "contextual_retrieval_pos": 1,
        "contextual_retrieval_frequency": 1,
        "word_retrieval_pos": 1,  # the open- and closed-class intervals (Liu et al.'s Table 1 claim)
        **FINDINGS,
    }


@pytest.mark.parametrize(
    "change",
    [
        {"glove": {"threads": 2, "mem_mb": 2000}},
        {"represent": {"device": "cpu"}},
        {"language": {"batch_size": 8}},
        EVERY_RUNTIME_SETTING,
    ],
    ids=["glove.threads+mem_mb", "represent.device", "language.batch_size", "every runtime setting"],
)
def test_runtime_setting_reruns_nothing(test_run, tmp_path, change):
    assert plan(test_run, tmp_path, change) == {}


def test_every_runtime_setting_is_checked():
    assert runtime_keys(EVERY_RUNTIME_SETTING) == {f"{block}.{key}" for block, keys in RUNTIME.items() for key in keys}


@pytest.mark.parametrize(
    "change",
    [{"bert": {"learning_rate": 0.002}}, {"bert": {"precision": "fp32"}}],  # config.yaml's bf16 is the test preset's
    ids=["bert.learning_rate", "bert.precision"],
)
def test_bert_setting_reruns_the_berts_and_what_follows_them(test_run, tmp_path, change):
    """The ablations' BERTs too: they train with the bert block (ablation.bert over it)."""
    assert plan(test_run, tmp_path, change) == {
        "bert_pretrain": GRID,
        "bert_extract": GRID * SHARDS,
        "bert_reduce": GRID,
        "word_retrieval": GRID,
        "token_translation": LMS * PAIRS,
        "sentence_retrieval": 2 * LMS * PAIRS,  # Tatoeba and BUCC
        "token_translation_table": 1,
        "token_translation_samples_table": 1,
        "tatoeba_table": 1,
        "bucc_table": 1,
        "finetune": BERT_TRANSFER + ABLATION_RUNS,
        "transfer_table": 1,
        "ablation_pretrain": ABLATIONS + CKA_ONLY,
        "ablation_table": 1,
        **WORD_RETRIEVAL,
        **CONTEXTUAL,
        "align_finetune": ALIGNED,
        "rotation": ROTATIONS,
        **MONOLINGUAL,
    }


def test_ablation_settings_rerun_only_the_ablations_they_change(test_run, tmp_path):
    """Code-switching reruns the extra-anchors model (drawn per batch: its trainer; once: its token files), its
    dictionary the translations table, the other domain the wiki-cc model, the pair's joint vocabulary every
    ablation on it, an ablation.bert key every ablation; none touches the grid."""
    one = {"ablation_pretrain": 1, "finetune": ABLATION_RUNS // ABLATIONS, "ablation_table": 1, **FINDINGS}
    # and the Default bilingual MLMs that CKA and Figure 5's biMLM compare (cka.bilingual, monolingual.contextual.bimlm)
    every = {
        "ablation_pretrain": ABLATIONS + CKA_ONLY,
        "finetune": ABLATION_RUNS,
        "ablation_table": 1,
        "cka": MONO_TARGETS,
        "cka_table": 1,
        **MONO_CONTEXTUAL,
        **FINDINGS,
    }
    joint = {
        **every,
        "ablation_pretrain": ABLATIONS - SEP_MODELS + CKA_ONLY,
        "finetune": ABLATION_RUNS - SEP_MODELS * ABLATION_RUNS // ABLATIONS,
    }  # all but the Sep rows
    assert plan(test_run, tmp_path, {"ablation": {"code_switch": {"rate": 0.5}}}) == one
    assert plan(test_run, tmp_path, {"ablation": {"code_switch": {"sampling": "once"}}}) == {"code_switch": 2, **one}
    assert plan(test_run, tmp_path, {"ablation": {"code_switch": {"dictionary": "full"}}}) == {"switch_table": 1, **one}
    # the test preset's one Sep row (sep-emb-l1) trains on the language-specific vocabularies (Table 1's 40k/40k):
    # both languages' vocabularies and tokens, the pivot's dev tokens, that model
    assert SEP_MODELS == 1
    language = {"ablation_language_vocab": 2, "ablation_language_tokenize": 2, "ablation_language_dev_tokenize": 1}
    assert plan(test_run, tmp_path, {"ablation": {"vocab": {"language_merges": 300}}}) == {**language, **one}
    assert plan(test_run, tmp_path, {"ablation": {"vocab": {"merges": 800}}}) == {
        "ablation_vocab": 1,
        "ablation_tokenize": 2,
        "ablation_dev_tokenize": 1,
        "domain_tokenize": 1,
        "switch_table": 1,
        **joint,
    }  # the dev text too: the ablation BERTs are selected on it in their vocabulary
    # the Sep row on the joint vocabulary (its tokens are the other settings'): that model alone
    assert plan(test_run, tmp_path, {"ablation": {"vocab": {"sep_settings": "joint"}}}) == one
    # languages drawn by their share of the blocks, not of the sentences: every ablation BERT
    assert plan(test_run, tmp_path, {"ablation": {"sampling_share": "blocks"}}) == every
    assert plan(test_run, tmp_path, {"ablation": {"vocab": {"source": "study"}}}) == {
        "domain_tokenize": 1,
        "switch_table": 1,
        **every,
    }
    assert plan(test_run, tmp_path, {"ablation": {"domain": {"topics_left_out": 0.2}}}) == {
        "domain_corpus": 1,
        "domain_tokenize": 1,
        **one,
    }
    assert plan(test_run, tmp_path, {"ablation": {"bert": {**ABLATION["bert"], "learning_rate": 0.002}}}) == every
    # the CKA's bilingual side the run's BERT: the monolingual BERTs follow it to its size and window (the largest
    # size, the first window), so they and everything compared on them are redone there
    assert plan(test_run, tmp_path, {"cka": {"bilingual": "study"}}) == {
        **MONOLINGUAL,
        "mono_fasttext": MONO_TARGETS + 1,
    }


ABLATION_BERTS = {
    "ablation_pretrain": ABLATIONS + CKA_ONLY,
    "finetune": ABLATION_RUNS,  # and the Default bilingual
    "ablation_table": 1,
    "cka": MONO_TARGETS,
    "cka_table": 1,  # MLMs of CKA and Figure 5's biMLM
    **MONO_CONTEXTUAL,
    **FINDINGS,
}


def test_conneau_recipe_settings_rerun_only_the_berts_that_use_them(test_run, tmp_path):
    """The schedule and the dev selection of ablation.bert retrain the ablations and what they feed, those of
    monolingual.bert the monolingual BERTs; bert.dev_every only the report's settings (the grid BERTs keep the final
    model); the dev text's size every BERT selected on it, after its held-out sample (the pivot's and the monolingual target's)."""
    for change in ({"schedule": "linear"}, {"selection": "final"}):
        assert plan(test_run, tmp_path, {"ablation": {"bert": {**ABLATION["bert"], **change}}}) == ABLATION_BERTS
    mono = {**CONFIG["monolingual"]["bert"], "dev_every": 3}
    assert plan(test_run, tmp_path, {"monolingual": {"bert": mono}}) == MONOLINGUAL
    # the grid BERTs keep their final model, so no number changes: only the report, whose protocol section shows the
    # run's settings, is re-rendered
    assert plan(test_run, tmp_path, {"bert": {"dev_every": 3}}) == REPORT
    assert plan(test_run, tmp_path, {"corpus": {"dev_sentences": 30}}) == {
        "heldout_corpus": 1 + MONO_TARGETS,
        "heldout_tokenize": 1 + MONO_TARGETS,
        "ablation_dev_tokenize": 1,
        "ablation_language_dev_tokenize": 1,  # the Sep row's dev text in its own (40k/40k) vocabularies
        **ABLATION_BERTS,
        **MONOLINGUAL,
    }


@pytest.mark.parametrize(
    "change",
    [{"bert": {"batch_tokens": 512}}, {"bert": {"micro_batch_size": 8}}],
    ids=["bert.batch_tokens", "bert.micro_batch_size"],
)
def test_batch_settings_retrain_the_grid_berts_only(test_run, tmp_path, change):
    """config.yaml counts the window study's batch in tokens; the ablations and monolingual BERTs set their batch
    (Conneau et al.'s 768 streams, in blocks) in their own blocks, so they are not retrained."""
    planned = plan(test_run, tmp_path, change)
    assert planned["bert_pretrain"] == GRID
    assert "ablation_pretrain" not in planned and "mono_pretrain" not in planned and "heldout_corpus" not in planned


def test_word2vec_setting_reruns_only_word2vec_and_what_follows(test_run, tmp_path):
    word2vecs = GRID + SWEEP_ONLY  # the sweep's own models too; they are not fine-tuned
    assert plan(test_run, tmp_path, {"word2vec": {"epochs": 4}}) == {
        "word2vec": word2vecs,
        "static_word_vectors": word2vecs,
        "word_retrieval": word2vecs,
        "finetune": STATIC_XNLI,
        "transfer_table": 1,
        **WORD_RETRIEVAL,
    }


def test_window_sweep_change_runs_only_the_new_sweep_models(test_run, tmp_path):
    """A new sweep window trains one model and evaluates it; a dropped one only re-gathers the table (the
    grid's models the sweep shares are not retrained); a swept model trains at the sweep's own windows."""
    windows = CONFIG["window_sweep"]["windows"]
    new = {"word2vec": 1, "static_word_vectors": 1, "word_retrieval": 1, **WORD_RETRIEVAL}
    assert plan(test_run, tmp_path, {"window_sweep": {"windows": [*windows, 6]}}) == new
    assert plan(test_run, tmp_path, {"window_sweep": {"windows": windows[1:]}}) == WORD_RETRIEVAL
    glove = {"glove": 1, "static_word_vectors": 1, "word_retrieval": 1}
    assert (
        plan(test_run, tmp_path, {"window_sweep": {"models": ["glove", "word2vec"]}})
        == {key: SWEEP_ONLY * count for key, count in glove.items()} | WORD_RETRIEVAL
    )


@pytest.mark.parametrize("change", [{"min_count": 3}, {"mrr": "words"}], ids=["min_count", "mrr"])
def test_retrieval_setting_reruns_only_word_retrieval(test_run, tmp_path, change):
    models = len(CONFIG["models"])
    assert plan(test_run, tmp_path, {"retrieval": change}) == {
        "word_retrieval": models * GRID + SWEEP_ONLY,
        **WORD_RETRIEVAL,
    }


def test_pos_settings_rerun_only_the_pos_table(test_run, tmp_path):
    change = {"retrieval": {"pos": {"open_class": ["NOUN"], "splits": ["train"]}}}
    assert plan(test_run, tmp_path, change) == {"word_retrieval_pos": 1, "contextual_retrieval_pos": 1, **FINDINGS}


def test_language_settings_rerun_only_their_own_task(test_run, tmp_path):
    tatoeba = {"sentence_retrieval": LMS * PAIRS, "tatoeba_table": 1, **FINDINGS}
    translation = {
        "token_translation": LMS * PAIRS,
        "token_translation_table": 1,
        "token_translation_samples_table": 1,
        **FINDINGS,
    }
    assert plan(test_run, tmp_path, {"language": {"sentence_retrieval": {"max_sentences": 50}}}) == tatoeba
    assert plan(test_run, tmp_path, {"language": {"samples": 3}}) == translation
    # the cap on token translation's sentences (null: every XNLI test sentence, premises and hypotheses)
    assert plan(test_run, tmp_path, {"language": {"max_sentences": None}}) == translation
    bucc = {"sentence_retrieval": LMS * PAIRS, "bucc_table": 1, **FINDINGS}
    assert plan(test_run, tmp_path, {"language": {"sentence_retrieval": {"bucc_k": 8}}}) == bucc


def test_transfer_settings_rerun_exactly_what_uses_them(test_run, tmp_path):
    table = {"transfer_table": 1, **FINDINGS}
    pos = LMS * VARIANTS  # POS fine-tunings
    assert plan(test_run, tmp_path, {"transfer": {"pos": {"epochs": 2}}}) == {"finetune": pos, **table}
    assert plan(test_run, tmp_path, {"transfer": {"static": {"hidden": 8}}}) == {"finetune": 2 * STATIC_XNLI, **table}
    # a scoring setting reruns the jobs it scores in, whose fine-tuning resumes from its last checkpoint (no step:
    # test_finetune.py::test_a_finished_fine_tuning_called_again_trains_no_step)
    # alphas: the MDS scoring of the LMS' fine-tunings at each depth
    assert plan(test_run, tmp_path, {"transfer": {"alphas": [0.5]}}) == {
        "finetune": LMS * len(TRANSFER["freeze"]) * 4,
        **table,
    }
    # ner_repair: the NER scoring
    assert plan(test_run, tmp_path, {"transfer": {"ner_repair": False}}) == {
        "finetune": LMS * VARIANTS,
        **MONO_CONTEXTUAL,
        **table,
    }
    # the shift layer: zero-mean fine-tunings and every shifted scoring
    shifted = LMS * 4 * TRANSFER.get("zero_mean", True)  # the zero-mean variant of each task, if the run has it
    shifts = {"finetune": shifted + LMS * len(TRANSFER["freeze"]) * 4, **table}  # one job fine-tunes and scores
    assert plan(test_run, tmp_path, {"transfer": {"layer": 2}}) == shifts
    # the language means' text (its token cap): the same jobs
    assert plan(test_run, tmp_path, {"transfer": {"mean_tokens": 400}}) == shifts


def test_the_mds_depth_adds_its_fine_tunings_and_rescores_the_old_depth(test_run, tmp_path):
    """transfer.mds_freeze 1 (the test preset's 0): each task's new f1 fine-tuning of the language experiments'
    BERTs, scored with MDS; the f0 ones keep theirs (every plain depth is tested with MDS), so they do not rerun."""
    assert plan(test_run, tmp_path, {"transfer": {"mds_freeze": 1}}) == {
        "finetune": LMS * 4,
        "transfer_table": 1,
        **FINDINGS,
    }


def test_alignment_settings_rerun_exactly_what_uses_them(test_run, tmp_path):
    assert plan(test_run, tmp_path, {"alignment": {"retrieval": {"csls_k": 5}}}) == {
        **CONTEXTUAL,
        "fasttext_retrieval": FASTTEXT,
    }
    assert plan(test_run, tmp_path, {"alignment": {"analysis": {"rank_bins": [0, 5]}}}) == {
        "contextual_retrieval_frequency": 1,
        **FINDINGS,
    }
    assert plan(test_run, tmp_path, {"alignment": {"analysis": {"pos_contextual": True}}}) == {
        "contextual_retrieval_pos": 1,
        **FINDINGS,
    }
    # other word pairs: everything learned or scored on them (the aligned models and their XNLI, the rotations and
    # the base's XNLI fine-tunings with them, fastText's retrieval)
    assert plan(test_run, tmp_path, {"alignment": {"fast_align": {"iterations": 6}}}) == {
        "word_pairs": PAIRS,
        "word_pairs_table": 1,
        **CONTEXTUAL,
        "fasttext_retrieval": FASTTEXT,
        "align_finetune": ALIGNED,
        "rotation": ROTATIONS,
        "finetune": ALIGNED + KINDS,
        "transfer_table": 1,
        **MONO_CONTEXTUAL,
    }  # and the contextual word level's word pairs (the aligner's settings)
    # only the chosen aligner's settings reach the word-pair jobs: eflomal's rerun nothing under fast_align but the
    # report, whose protocol section shows every setting a paper speaks to (resources/protocol.yaml)
    assert plan(test_run, tmp_path, {"alignment": {"eflomal": {"null_prior": 0.3}}}) == REPORT


def test_alignment_setting_reruns_the_aligned_models_and_what_follows(test_run, tmp_path):
    """A fine-tuning-alignment setting retrains the aligned models and re-runs what reads them (their XNLI
    fine-tuning and scoring, their contextual retrieval), not the base BERTs."""
    assert plan(test_run, tmp_path, {"alignment": {"finetune": {"learning_rate": 0.001}}}) == {
        "align_finetune": ALIGNED,
        "finetune": ALIGNED,
        "transfer_table": 1,
        "contextual_retrieval": ALIGNED,
        **CONTEXTUAL_TABLES,
    }


def test_cao_xnli_settings_rerun_only_cao_et_als_fine_tunings(test_run, tmp_path):
    """alignment.xnli: the aligned models', their base's and the rotations' XNLI (not the language experiments'
    fine-tunings of the same base, which keep transfer.xnli)."""
    assert plan(test_run, tmp_path, {"alignment": {"xnli": {"epochs": 2, "selection": "en_dev"}}}) == {
        "finetune": CAO_XNLI,
        "transfer_table": 1,
        **FINDINGS,
    }


def test_cao_et_al_s_scope_reruns_only_where_it_changes_the_languages(test_run, tmp_path):
    """alignment.evaluation_languages and alignment.xnli.selection_languages decide languages, not numbers: on the
    test preset every language is aligned and tested, so the other choice names the same languages and reruns
    nothing but the report, whose protocol section shows them (tests/test_plan_scope.py: on config.yaml they pick
    five languages and six dev sets)."""
    assert (
        plan(
            test_run,
            tmp_path,
            {"alignment": {"evaluation_languages": "parallel", "xnli": {"selection_languages": "tested"}}},
        )
        == REPORT
    )


def test_ablation_grid_reruns_only_the_points_it_changes(test_run, tmp_path):
    """A grid point added trains and scores only that point of every ablation; a recipe key every point."""
    recipe = ABLATION["finetune"]["xnli"]
    one = {"finetune": ABLATION_RUNS, "ablation_table": 1, **FINDINGS}
    more = {**recipe, "learning_rate": [*recipe["learning_rate"], 0.002]}
    assert plan(test_run, tmp_path, {"ablation": {"finetune": {"xnli": more}}}) == one
    assert plan(test_run, tmp_path, {"ablation": {"finetune": {"xnli": {**recipe, "epochs": 2}}}}) == one


def test_monolingual_settings_rerun_only_their_comparison(test_run, tmp_path):
    """Four dry runs (CI time): the word level's, the sentence level's, the word means', and en' alone."""
    assert plan(test_run, tmp_path, {"monolingual": {"fasttext": {"epochs": 2}}}) == {
        "mono_fasttext": MONO_TARGETS + 1,
        **MONO_WORDS,
    }
    assert plan(test_run, tmp_path, {"monolingual": {"map_split": "test"}}) == MONO_SENTENCES
    # the sentences the contextual word means average over: those means and the word level
    assert plan(test_run, tmp_path, {"monolingual": {"word_mean_sentences": 100}}) == {
        "mono_word_means": MONO_TARGETS + 1,
        **MONO_WORDS,
    }
    # Figure 5's biMLM the run's BERT of the monolingual size and window (the test grid has it): the contextual
    # word level only (the report draws it; the findings do not read it)
    assert plan(test_run, tmp_path, {"monolingual": {"contextual": {"bimlm": "study"}}}) == {
        **MONO_CONTEXTUAL,
        **REPORT,
    }
    # another en': its BERT and its CKA job only
    assert plan(test_run, tmp_path, {"cka": {"en_prime_seed": 3}}) == {
        "mono_pretrain": 1,
        "cka": 1,
        "cka_table": 1,
        **FINDINGS,
    }


def test_changed_bert_setting_trains_beside_the_old_checkpoints(test_run, tmp_path):
    """Not "hyper-parameters differ ... delete": the new setting gets its own checkpoint directory."""
    run = copy_run(test_run, tmp_path / "run")
    size, window = min(CONFIG["corpus"]["sizes"]), min(CONFIG["windows"])
    model = f"results/{CONFIG['run']}/models/bert/{size}-w{window}"
    (tmp_path / "change.yaml").write_text("bert: {learning_rate: 0.002}\n")
    done = snakemake(
        model, "--configfile", str(TEST_PRESET), str(tmp_path / "change.yaml"), "--cores", "1", cwd=run, timeout=600
    )
    assert done.returncode == 0, done.stderr[-5000:]
    checkpoints = run / f"results/{CONFIG['run']}/checkpoints/bert/{size}-w{window}"
    assert len([d for d in checkpoints.iterdir() if any(d.glob("ckpt-*.pt"))]) == 2
    assert (run / model / "model.safetensors").stat().st_mtime > (
        test_run / model / "model.safetensors"
    ).stat().st_mtime
