"""Cao et al.'s baselines in the test preset's run (the shared `test_run` fixture): the rotations are orthogonal
and reach contextual retrieval and XNLI, the fastText baseline joins the retrieval table, the report shows the
layouts and the findings judge the claims."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_helpers import REPO

pytestmark = pytest.mark.workflow


def preset() -> dict:
    return yaml.safe_load((REPO / "presets" / "test.yaml").read_text())


def test_rotations_are_orthogonal_and_tested_in_retrieval_and_xnli(test_run):
    results = test_run / "results/test"
    config = preset()
    sizes = config["alignment"]["finetune"]["sizes"]
    # the preset names no base: our BERT of the language experiments at their largest size and longest window
    (base,) = config["alignment"]["finetune"].get("models") or [
        f"bert/{max(config['language']['sizes'])}-w{max(config['windows'])}"
    ]
    for kind in ("word", "sentence"):
        for n in sizes:
            w = np.load(results / f"align/rotations/{base}/{kind}{n}/xa.npy")
            np.testing.assert_allclose(w.T @ w, np.eye(len(w)), atol=1e-4)
    retrieval = pd.read_parquet(results / "eval/contextual_retrieval.parquet")
    rotated = retrieval[retrieval["method"].str.startswith("rotation") & (retrieval["lm"] == base)]
    assert set(zip(rotated["method"], rotated["parallel_sentences"], strict=True)) == {
        (f"rotation-{kind}", n) for kind in ("word", "sentence") for n in sizes
    }
    fasttext = retrieval[retrieval["lm"].str.startswith("fasttext/")]
    assert set(fasttext["parallel_sentences"]) == set(sizes) and set(fasttext["contextual"]) == {True, False}
    # xe is a copy of English: its test pairs are exact matches, left out of the score, so nothing is scored (NaN)
    scored = fasttext["n_queries"] > 0
    assert set(fasttext.loc[scored, "lang"]) == {"xa"} and fasttext.loc[scored, "accuracy"].between(0, 1).all()
    assert fasttext.loc[~scored, "accuracy"].isna().all()
    transfer = pd.read_parquet(results / "eval/transfer.parquet")
    xnli = transfer[(transfer["task"] == "xnli") & (transfer["lm"] == base)]
    rows = xnli[xnli["transform"].str.startswith("rotation")]
    assert set(rows["transform"]) == {"rotation-word", "rotation-sentence"}
    assert config["languages"][0] not in set(rows["lang"])  # the pivot is never rotated
    settings = json.loads(rows["shift_settings"].iloc[0])["rotation"]
    assert settings["sentences"] == max(sizes)


def test_report_has_the_layouts_and_the_findings_judge_the_claims(test_run):
    results = test_run / "results/test"
    html = (results / "report.html").read_text(encoding="utf-8")
    for section in ("alignment_retrieval", "alignment_xnli", "alignment_pos", "alignment_frequency"):
        assert f'id="{section}"' in html, section
    assert "Aligned fastText + sentence" in html and "Table 1 layout" in html
    findings = pd.read_parquet(results / "eval/findings.parquet").set_index("id")
    for claim in (
        "cao2020.xnli",
        "cao2020.xnli.rotations",
        "cao2020.retrieval.contextual",
        "cao2020.retrieval.non-contextual",
        "cao2020.pos",
        "cao2020.frequency",
    ):
        assert findings.loc[claim, "outcome"] != "not measured", (claim, findings.loc[claim, "reason"])
