"""presets/real.yaml: the full study's rules on the real copies in ../shared/data. Which rules of config.yaml it
plans (each one it does not is named below with the reason), and its run end to end, at toy scale."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import REPO, job_counts, snakemake

pytestmark = pytest.mark.workflow
REAL_PRESET = REPO / "presets" / "real.yaml"

#: the full study's rule -> the preset's rule that does its work on the staged copies
#: (Leipzig 10K samples for the Wikipedia dump; a random BERT with mBERT's vocabulary, written by the run, for mBERT)
STANDS_IN = {"corpus_wikipedia": "corpus_leipzig", "fetch_checkpoint": "random_checkpoint"}

#: rules config.yaml plans that the real preset cannot run here, and why (a rule that comes to run must leave)
NOT_HERE = {
    "parallel_opus": "no MultiUN or Tanzil copy is staged (the full study's ar, zh, ur parallel text)",
    "bucc": "BUCC is staged for zh-en only, and zh has no staged monolingual corpus (every language of a run "
    "needs one; the only zh text of that size is BUCC's own mined sentences)",
}


def staged_override(tmp_path: Path, shared_data: Path) -> Path:
    """The real preset's data.paths with data.staged at the shared copies, as a config file."""
    paths = yaml.safe_load(REAL_PRESET.read_text())["data"]["paths"]
    override = tmp_path / "staged.yaml"
    override.write_text(yaml.safe_dump({"data": {"staged": str(shared_data), "paths": paths}}), "utf-8")
    return override


def planned_rules(*configfiles: Path, cwd: Path) -> set[str]:
    dry = snakemake("-n", "--configfile", *map(str, configfiles), cwd=cwd, timeout=600)
    assert dry.returncode == 0, dry.stderr[-3000:]
    return {re.sub(r"^\w+_table$", "gather_table", rule) for rule in job_counts(dry.stdout)}


def staged_data() -> Path:
    """The shared_data fixture's copies, for the module-scoped fixtures; skips without them."""
    shared_data = REPO.parent / "shared" / "data"
    if not shared_data.is_dir():
        pytest.skip(f"real data not present at {shared_data}")
    return shared_data


@pytest.fixture(scope="module")
def full_study_rules(tmp_path_factory) -> set[str]:
    """The rules config.yaml (the full study) plans on the staged copies: one dry run in an empty directory, for
    both tests below (a finished real-preset run beside it changes nothing: its results are under another run)."""
    workdir = tmp_path_factory.mktemp("full-plan")
    return planned_rules(staged_override(workdir, staged_data()), cwd=workdir)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """presets/real.yaml end to end in a fresh working directory: one command, no setup."""
    shared_data = staged_data()
    workdir = tmp_path_factory.mktemp("real")
    override = staged_override(workdir, shared_data)
    done = snakemake("--configfile", str(REAL_PRESET), str(override), "--cores", "2", cwd=workdir, timeout=1800)
    assert done.returncode == 0, done.stderr[-5000:]
    (workdir / "ran.txt").write_text(done.stderr, "utf-8")
    return workdir


def test_real_preset_plans_every_rule_of_the_full_study_but_those_named(tmp_path, shared_data, full_study_rules):
    """The dry runs alone (no run): what the preset plans on the staged copies against what config.yaml plans."""
    real = planned_rules(REAL_PRESET, staged_override(tmp_path, shared_data), cwd=tmp_path)
    assert {STANDS_IN.get(rule, rule) for rule in full_study_rules} - real == set(NOT_HERE)
    assert {"xnli_dev_test", "xnli_train", "ud_treebanks", "wikiann", "cka", "mono_pretrain"} <= real


def test_real_preset_runs_every_rule_of_the_full_study_or_says_why(real_run, full_study_rules):
    real = ran_rules(real_run)
    missing = {STANDS_IN.get(rule, rule) for rule in full_study_rules} - real
    assert missing == set(NOT_HERE), (
        f"newly covered (drop from NOT_HERE): {sorted(set(NOT_HERE) - missing)}; "
        f"not run and not named: {sorted(missing - set(NOT_HERE))}"
    )
    assert not set(NOT_HERE) & real


def ran_rules(workdir: Path) -> set[str]:
    """The rules of the run's job table (printed before it starts), once every one of its jobs is done."""
    log = (workdir / "ran.txt").read_text("utf-8")
    done = re.search(r"^(\d+) of (\d+) steps \(100%\) done$", log, re.M)
    assert done and done[1] == done[2], log[-3000:]
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m[1] for m in re.finditer(r"^(\w+)\s+\d+$", table, re.M)} - {"total"}


def test_real_preset_tables_have_real_language_rows(real_run):
    config = yaml.safe_load(REAL_PRESET.read_text())
    targets = config["languages"][1:]
    pairs = {f"en-{lang}" for lang in targets}
    results = real_run / "results/real"
    words = pd.read_parquet(results / "eval/word_retrieval.parquet")
    assert set(words.pair) == pairs and set(words.source) == {"real"}
    assert (words.n_queries > 20).all() and words.mrr.between(0, 1).all()
    sweep = words[(words.model == "word2vec")]
    assert set(sweep.window) == set(config["window_sweep"]["windows"])  # the window sweep ran on real text
    label = config["language"]["hf_models"][0]
    assert {"bert", "glove", "word2vec"} <= set(words.model)
    tatoeba = pd.read_parquet(results / "eval/tatoeba.parquet")
    assert set(tatoeba.lang) == set(targets) and (tatoeba.n_queries == 1000).all()  # LASER's whole test sets
    assert set(tatoeba.variant) == {"original", "zero_mean", "mds"}
    translation = pd.read_parquet(results / "eval/token_translation.parquet")
    assert set(translation.pair) == pairs and translation.bleu1.notna().all()
    for table in (words, tatoeba, translation):
        assert label in set(table.model_label if "model_label" in table else table.model), table.columns
    aligned = pd.read_parquet(results / "eval/contextual_retrieval.parquet")  # Cao et al. on Europarl en-fr
    assert len(aligned) and any(
        aligned[c].astype(str).str.endswith("fr").any() for c in ("lang", "pair") if c in aligned
    )
    assert (results / "eval/word_pairs.parquet").exists()
    assert set(aligned.lang) == set(targets) & set(config["data"]["paths"]["europarl"])  # the Europarl samples
    transfer = pd.read_parquet(results / "eval/transfer.parquet")  # zero-shot from English, on the stand-ins
    tested = transfer[transfer.split == "test"].groupby("task").lang.agg(set).to_dict()
    assert tested == {
        "xnli": {"en", *targets},
        "ner": {"en", *targets},
        "pos": {"en", *targets} - {"ar"},
        "parsing": {"en", *targets} - {"ar"},
    }  # no ar treebank
    assert transfer.value.notna().all() and label in set(transfer.get("model_label", transfer.model))
    xnli = transfer[transfer.task == "xnli"]  # n: XNLI's pairs (tokens for POS and parsing, entities for NER)
    assert (xnli.n == config["transfer"]["xnli"]["max_eval"]).all()  # the first 200 of each split (max_eval)
    ablation = pd.read_parquet(results / "eval/ablation.parquet")
    assert set(ablation.lang) == {"en", "fr"} and ablation.value.notna().all()
    for name in ("monolingual_words", "monolingual_sentences", "cka"):
        table = pd.read_parquet(results / f"eval/{name}.parquet")
        assert "en-fr" in set(table.pair), name  # (CKA also compares en with en', its second seed)
    html = (results / "report.html").read_text(encoding="utf-8")
    assert all(pair in html for pair in pairs) and "real" in html
    assert "Stand-ins" in html and "MultiNLI" in html  # the report says what stands in for unstaged data
    assert f"{label}: a BertForMaskedLM of random weights" in html  # ... and for the pretrained mBERT
