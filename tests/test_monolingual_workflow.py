"""The monolingual BERTs and CKA on the test-preset run (the `test_run` fixture): each language's own BERT, the
three tables with the rows the preset asks for, the report's figures and the findings judged on them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from plan_configs import preset_plan
from workflow_helpers import REPO

pytestmark = pytest.mark.workflow

CONFIG = yaml.safe_load((REPO / "presets/test.yaml").read_text())
PLAN = preset_plan("test")
GRID = f"{PLAN.mono_size}-w{PLAN.mono_window}"  # the bilingual side's size and window (monolingual.size/window null)
LAYERS = list(range(CONFIG["bert"]["num_layers"] + 1))


def test_each_language_has_its_own_bert(test_run):
    models = test_run / "results/test/models/mono"
    for name in ("en", "xa", "en~2"):
        log = pd.read_csv(models / name / GRID / "training_log.tsv", sep="\t")
        assert log.step.max() == CONFIG["monolingual"]["max_steps"]
    tables = pd.read_parquet(test_run / "results/test/eval/cka.parquet")
    hparams = {row.lm_tgt: json.loads(row.hparams_tgt)["seed"] for row in tables.itertuples()}
    hparams[tables.lm_src.iloc[0]] = json.loads(tables.hparams_src.iloc[0])["seed"]
    assert len(set(hparams.values())) == 3  # the pivot, xa and en' start from different weights


def test_tables_hold_every_level_layer_and_comparison(test_run):
    eval_dir = test_run / "results/test/eval"
    words = pd.read_parquet(eval_dir / "monolingual_words.parquet")
    assert set(words.pair) == {"en-xa"}
    assert sorted(words[words.level == "contextual"].layer) == LAYERS
    assert set(words.level) == {"embedding", "fasttext", "fasttext_all", "contextual"}
    assert words.p_at_1.between(0, 1).all() and (words.n_train_pairs > 0).all()
    sentences = pd.read_parquet(eval_dir / "monolingual_sentences.parquet")
    assert len(sentences) == len(LAYERS) * 2 * 2  # layers x (no map, map) x directions
    cka = pd.read_parquet(eval_dir / "cka.parquet")
    assert set(cka.pair) == {"en-xa", "en-en'"}
    assert set(cka[cka.pair == "en-xa"].comparison) == {"monolingual", "multilingual", "random"}
    assert set(cka[cka.pair == "en-en'"].comparison) == {"monolingual", "random"}
    assert cka.cka.between(0, 1).all() and (cka.groupby(["pair", "comparison"]).size() == len(LAYERS)).all()


def test_report_and_findings(test_run):
    results = test_run / "results/test"
    html = (results / "report.html").read_text(encoding="utf-8")
    for title in ("Linear CKA by layer", "aligned at word level", "aligned at sentence level"):
        assert title in html
    for figure in ("cka_layers", "monolingual_words", "monolingual_sentences"):
        assert (results / f"figures/{figure}.png").stat().st_size > 0
    findings = pd.read_parquet(results / "eval/findings.parquet").set_index("id")
    for claim in (
        "conneau2020.mono.words",
        "conneau2020.mono.sentences",
        "conneau2020.cka.random",
        "conneau2020.cka.shared",
    ):
        assert findings.loc[claim, "outcome"] != "not measured", claim
