"""One flag everywhere: every number of the report's transfer tables that the findings flag carries the mark and
the findings' own reason, and no other number does. The reference is computed here with the findings' functions
(xling.evaluate.findings), not with the report's, and the findings' judged claims are walked too."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from xling.evaluate.alignment import language_study_rows
from xling.evaluate.findings import judge_claims
from xling.evaluate.findings.core import transfer_flags, with_table_flags
from xling.report.blocks import model_name
from xling.report.flags import MARK

from test_report_transfer import LANGS, header, render, table_rows, transfer_table

CONSTANT = ("bert", 12000, 128)  # this BERT's fine-tunings predict one class: 167 of 500 on every XNLI split


@pytest.fixture(scope="module")
def flagged(tmp_path_factory):
    table = transfer_table()
    one_class = ((table["model"] == CONSTANT[0]) & (table["size"] == CONSTANT[1])
                 & (table["window"] == CONSTANT[2]) & (table["task"] == "xnli"))
    table.loc[one_class, ["value", "n"]] = [33.4, 500]
    html, _ = render(tmp_path_factory.mktemp("flags"), {"transfer": table})
    rows = language_study_rows(table)
    reference = rows.assign(flag=with_table_flags(rows, transfer_flags(rows, "en")))
    return html, reference, judge_claims({"transfer": table}, "en")


def xnli_cells(html: str) -> dict[tuple[str, str], str]:
    """(model name, language) -> the cell of the XNLI table (English dev selection)."""
    title = "XNLI test accuracy (%) by model, selection en_dev"
    columns = [c.split()[0] if c else c for c in header(html, title)]  # "en fine-tuning language" -> "en"
    cells = {}
    for row in table_rows(html, title):
        name = row[0] if row[1] == "\u2014" else f"{row[0]} {row[1]} w{row[2]}"
        for lang in LANGS:
            cells[(name, lang)] = row[columns.index(lang)]
    return cells


def test_every_flagged_xnli_cell_carries_the_findings_reason_and_no_other(flagged):
    html, reference, _ = flagged
    shown = reference[(reference["task"] == "xnli") & (reference["split"] == "test")
                      & (reference["transform"] == "none") & (reference["selection"] == "en_dev")
                      & reference["selected"].astype(bool)]
    shown = shown[shown["freeze"] == shown.groupby(["model", "size", "window"])["freeze"].transform("min")]
    cells = xnli_cells(html)
    checked = 0
    for (model, size, window, lang), rows in shown.groupby(["model", "size", "window", "lang"]):
        name = model_name({"model": model, "size": size, "window": window})
        if size:
            name = name.replace("bert", "BERT").replace("glove", "GloVe").replace("word2vec", "Word2Vec")
        cell = cells[(name, lang)]
        reasons = [f for f in rows["flag"] if isinstance(f, str) and f]
        if reasons:
            assert MARK in cell, (name, lang, cell)
            for reason in reasons:
                for part in reason.split("; "):
                    assert part in cell, (name, lang, part, cell)
            checked += 1
        else:
            assert MARK not in cell, (name, lang, cell)
    assert checked >= 4  # the planted constant BERT (3 languages) and the Word2Vec below chance


def test_the_constant_classifier_is_named_in_every_language_and_the_window_drop(flagged):
    html, _, _ = flagged
    cells = xnli_cells(html)
    for lang in LANGS:
        assert "one class's share (167/500): one class predicted" in cells[("BERT 12k w128", lang)]
    window = table_rows(html, "XNLI accuracy drop")
    (bert,) = [r for r in window if r[:2] == ["BERT", "12k"]]
    assert all(MARK in cell and "window 128: " in cell for cell in bert[3:]), bert
    assert "drops start or end at a degenerate accuracy" not in html  # said in the figure, not the page text


def test_every_flag_of_a_transfer_finding_is_shown_in_a_table(flagged):
    html, _, findings = flagged
    judged = findings[findings["table"] == "transfer"]
    flags = {part for cell in judged["measures"].dropna() for m in json.loads(cell) if m.get("flag")
             for part in m["flag"].split("; ")}
    assert flags, "the planted constant classifier must reach a finding"
    missing = sorted(f for f in flags if f not in html)
    assert not missing, missing


def test_each_finding_links_to_the_section_of_its_numbers_and_the_csv(flagged, tmp_path):
    _, _, findings = flagged
    table = transfer_table()
    html, _ = render(tmp_path, {"transfer": table, "findings": findings})
    sections = set(re.findall(r'<section id="([^"]+)"', html))
    judged = findings[findings["table"] == "transfer"]
    assert len(judged)
    for claim in judged["claim"]:
        match = re.search(r'<a href="#([^"]+)">' + re.escape(claim) + "</a>", html)
        assert match and match.group(1) in sections and match.group(1).startswith("transfer"), claim
    assert '<a href="eval/findings.csv">' in html
    for _, row in judged.iterrows():  # the paper's section and the quote stand under the claim
        assert f"the paper's {row['where']}" in html and row["quote"] in html
