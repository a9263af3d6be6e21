"""The training curves in the report (xling.report.training_curves): the fine-tunings' loss and dev score in the
transfer section and the alignment fine-tuning's loss in Cao et al.'s section, drawn from the files the jobs write
(finetune.json, training_log.tsv), summarised as a median and range per family of models; numbers checked by hand."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import test_report_transfer as transfer
from test_alignment_report import good_retrieval
from xling.plan.figures import ALIGNMENT_CURVES, FINETUNING_CURVES
from xling.report.core import expected_figures, render_report
from xling.report.flags import MARK
from xling.report.training_curves import (
    aligned_name,
    family,
    load_alignment_logs,
    load_finetune_records,
    median_band,
    run_flags,
    variant_words,
)

# (task, lm, variant, seed): dev score of the pivot after epochs 1 and 2; the loss falls from 1.0 by `drop` a step
RUNS = {
    ("xnli", "bert/4000-w128", "f0", 1): (40.0, 60.0),
    ("xnli", "bert/4000-w128", "f0", 2): (50.0, 62.0),
    ("xnli", "bert/12000-w128", "f0", 1): (70.0, 71.0),
    ("xnli", "glove/4000-w128", "static", 1): (45.0, 50.0),
    ("xnli", "aligned/400/bert/4000-w128", "f0-cao", 1): (55.0, 65.0),
    ("ner", "bert/4000-w128", "f0", 1): (0.0, 0.0),
}


def write_record(root: Path, task: str, lm: str, variant: str, seed: int, dev: tuple, loss: bool = True) -> Path:
    path = root / "results" / "x" / "finetuned" / task / lm / variant / f"seed{seed}" / "finetune.json"
    path.parent.mkdir(parents=True)
    record = {
        "task": task,
        "pivot": "en",
        "selection": "en_dev",
        "steps": 10,
        "epochs": [
            {"epoch": e + 1, "step": 5 * (e + 1), "dev": {"en": v, "de": v - 5}, "selection_score": v}
            for e, v in enumerate(dev)
        ],
    }
    if loss:
        record["train_loss"] = [{"step": s, "loss": 1.0 - 0.05 * s} for s in (2, 4, 5, 7, 9, 10)]
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def records(tmp_path: Path, loss: bool = True) -> list[Path]:
    return [write_record(tmp_path, *run, dev, loss=loss) for run, dev in RUNS.items()]


def test_records_load_as_tidy_curves_named_by_their_directories(tmp_path):
    curves = load_finetune_records(records(tmp_path))
    cao = curves[curves["lm"] == "aligned/400/bert/4000-w128"]
    assert set(cao["variant"]) == {"f0-cao"} and set(cao["family"]) == {"Cao et al.'s recipe"}
    dev = curves[(curves["kind"] == "dev") & (curves["seed"] == 2)]
    assert dev[["epoch", "value"]].values.tolist() == [[1, 50.0], [2, 62.0]]  # the pivot's dev score
    loss = curves[(curves["kind"] == "loss") & (curves["seed"] == 2)]
    assert loss["epoch"].tolist() == [0.4, 0.8, 1.0, 1.4, 1.8, 2.0]  # step / 5 steps an epoch
    assert [
        family(lm, v)
        for lm, v in (
            ("glove/4000-w16", "static"),
            ("hf/mbert", "f6"),
            ("bert/1-w2", "f0"),
            ("bert/1-w2", "f0-rotword"),
        )
    ] == ["static vectors", "checkpoints", "our BERTs", "Cao et al.'s recipe"]


def test_a_record_outside_a_fine_tuning_s_directory_or_broken_is_named(tmp_path):
    stray = tmp_path / "finetune.json"
    stray.write_text("{}")
    with pytest.raises(ValueError, match=re.escape(str(stray))):
        load_finetune_records([stray])
    (path,) = records(tmp_path)[:1]
    path.write_text(json.dumps({"pivot": "en", "steps": 4}))
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}: not a fine-tuning record"):
        load_finetune_records([path])


def test_the_median_and_range_are_over_the_runs_of_a_family(tmp_path):
    curves = load_finetune_records(records(tmp_path))
    ours = curves[(curves["family"] == "our BERTs") & (curves["task"] == "xnli")]
    dev = median_band(ours[ours["kind"] == "dev"], grid=None)
    # epoch 1: 40, 50, 70 -> median 50, range 40-70; epoch 2: 60, 62, 71 -> 62, 60-71
    assert dev[["epoch", "median", "low", "high", "runs"]].values.tolist() == [[1, 50, 40, 70, 3], [2, 62, 60, 71, 3]]
    loss = median_band(ours[ours["kind"] == "loss"], grid=5)  # x = 0, 0.5, 1, 1.5, 2; each run covers 0.4-2.0
    assert loss["epoch"].tolist() == [0.5, 1.0, 1.5, 2.0]  # 0 lies before every run's first point
    assert loss["median"].tolist() == pytest.approx([1.0 - 0.05 * 2.5, 0.75, 1.0 - 0.05 * 7.5, 0.5])


def test_alignment_logs_and_names(tmp_path):
    path = tmp_path / "results" / "x" / "models" / "aligned" / "700" / "bert" / "12000-w128" / "training_log.tsv"
    path.parent.mkdir(parents=True)
    pd.DataFrame(
        {
            "step": [1, 2],
            "loss": [9.0, 4.0],
            "pairs": [8.0, 3.0],
            "drift": [1.0, 1.0],
            "links": [3, 3],
            "lr": [1e-5, 2e-5],
        }
    ).to_csv(path, sep="\t", index=False)
    logs = load_alignment_logs([path])
    assert set(logs["lm"]) == {"aligned/700/bert/12000-w128"}
    assert aligned_name("aligned/700/bert/12000-w128") == "BERT 12k w128 aligned on 700 pairs"
    assert [variant_words(v) for v in ("static", "f6-zm", "f0", "f1-rotword")] == [
        "static vectors",
        "frozen to layer 6, zero-mean",
        "frozen to layer 0",
        "frozen to layer 1, word rotation",
    ]
    with pytest.raises(ValueError, match="not an aligned model's training log"):
        load_alignment_logs([tmp_path / "training_log.tsv"])


def alignment_log(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "x" / "models" / "aligned" / "400" / "bert" / "4000-w128" / "training_log.tsv"
    path.parent.mkdir(parents=True)
    steps = np.arange(1, 201)
    pd.DataFrame(
        {
            "step": steps,
            "loss": 500 / steps + 3,
            "pairs": 480 / steps + 1,
            "drift": 2.0 + 0 * steps,
            "links": 12,
            "lr": 1e-5,
        }
    ).to_csv(path, sep="\t", index=False)
    return path


def render(tmp_path: Path, tables: dict) -> tuple[str, dict]:
    config = transfer.CONFIG
    saved = render_report(
        tables,
        config,
        tmp_path / "r.html",
        tmp_path / "figures",
        paper_results=tmp_path / "no",
        expected=[f["name"] for f in expected_figures(config, tables)],
    )
    return html_lib.unescape((tmp_path / "r.html").read_text(encoding="utf-8")), saved


def _section(html: str, name: str) -> str:
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html, flags=re.S))[name]


def test_the_curves_stand_in_their_sections_behind_more_with_the_findings_flags(tmp_path):
    table = transfer.transfer_table(tasks=("xnli", "ner"))
    table["variant"] = np.where(table["model"].isin(["glove", "word2vec"]), "static", "f" + table["freeze"].astype(str))
    run = (
        (table["task"] == "xnli")
        & (table["lm"] == "bert/4000-w128")
        & (table["variant"] == "f0")
        & (table["seed"] == 1)
        & (table["lang"] == "en")
        & (table["transform"] == "none")
    )
    assert (run & (table["split"] == "dev")).sum() == 1
    # its English dev score below chance (33.3): the fine-tuning learned nothing, as the findings say
    table.loc[run & (table["split"] == "dev"), "value"] = 30.0
    html, saved = render(
        tmp_path,
        {
            "transfer": table,
            "finetune_logs": records(tmp_path),
            "contextual_retrieval": good_retrieval(),
            "alignment_logs": [alignment_log(tmp_path)],
        },
    )
    assert {FINETUNING_CURVES, ALIGNMENT_CURVES} <= set(saved)
    xnli = _section(html, "transfer_xnli")
    shown, more = xnli.split('<details class="more">', 1)
    assert f'id="fig-{FINETUNING_CURVES}"' in more and FINETUNING_CURVES not in shown
    caption = re.search(rf'id="fig-{FINETUNING_CURVES}">.*?<figcaption>(.*?)<br>', more, flags=re.S).group(1)
    flagged = run_flags(table, "en")
    ours = {
        (t, lm, v, s)
        for t, lm, v, s in flagged.dropna(subset=["flag"])[["task", "lm", "variant", "seed"]].itertuples(index=False)
    } & set(RUNS)
    assert ("xnli", "bert/4000-w128", "f0", 1) in ours
    assert f"{MARK} {len(ours)} of {len(RUNS)} fine-tunings drawn are flagged by the findings" in caption
    assert "XNLI BERT 4k w128 (frozen to layer 0, seed 1)" in caption and "did not learn en" in caption
    assert "Settings: 6 fine-tunings" in more
    retrieval = _section(html, "alignment_retrieval").split('<details class="more">', 1)[1]
    assert f'id="fig-{ALIGNMENT_CURVES}"' in retrieval and "1 aligned model, 200 steps" in retrieval


def test_a_fine_tuning_without_its_loss_shows_its_dev_score_and_says_so(tmp_path):
    html, saved = render(
        tmp_path, {"transfer": transfer.transfer_table(tasks=("xnli",)), "finetune_logs": records(tmp_path, loss=False)}
    )
    assert FINETUNING_CURVES in saved
    assert "6 fine-tunings recorded no training loss" in _section(html, "transfer_xnli")
