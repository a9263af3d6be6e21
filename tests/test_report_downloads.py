"""Every table of the report links to the run's file it is drawn from (xling.report.downloads): a relative link
from the report's HTML to the CSV the run writes beside each table (or the training logs a table summarises)."""

from __future__ import annotations

import html as html_lib
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

import test_report_published as published
import test_report_transfer as transfer
from test_alignment_report import good_retrieval
from test_report import training_log_table
from test_report_word_pairs import word_pairs_table
from xling.evaluate.findings import judge_claims
from xling.plan import tables as registry
from xling.report.core import expected_figures, render_report
from xling.report.downloads import with_downloads

#: a table with its heading (where a shown table's link sits) and the note under it (a collapsed table's link)
TABLE = re.compile(
    r'(<h3>(?:(?!</h3>).)*</h3>)?\s*<div class="table-(?:wrap|full)">\s*<table class="data.*?</table>'
    r'\s*</div>\s*(<p class="note">.*?</p>)?',
    flags=re.S,
)
APPENDIX = ("protocol", "settings")


def run_like(tmp_path: Path, frames: dict[str, pd.DataFrame]) -> tuple[Path, dict]:
    """A run's folder: each table as Parquet and CSV under results/x/eval, the BERTs' training logs under
    results/x/models/bert/<size>-w<window>; the tables as the report rule gives them."""
    results = tmp_path / "results" / "x"
    (results / "eval").mkdir(parents=True)
    tables: dict = {}
    for name, frame in frames.items():
        frame.to_parquet(results / "eval" / f"{name}.parquet", index=False)
        frame.to_csv(results / "eval" / f"{name}.csv", index=False)
        tables[name] = results / "eval" / f"{name}.parquet"
    tables["bert_training_logs"] = []
    for (size, window), log in training_log_table().groupby(["size", "window"]):
        path = results / "models" / "bert" / f"{size}-w{window}" / "training_log.tsv"
        path.parent.mkdir(parents=True)
        log.drop(columns=["model", "size", "window"]).to_csv(path, sep="\t", index=False)
        tables["bert_training_logs"].append(path)
    return results, tables


def written_by_the_run(results: Path) -> set[Path]:
    """The files the run writes that a table can link to: each registered table's CSV (the gather's, the
    findings'), and each BERT's training log."""
    plan = SimpleNamespace(results=str(results))
    csvs = {Path(table.path(plan, "csv")) for table in registry.REGISTRY if table.files is None}
    return csvs | set(results.glob("models/bert/*-w*/training_log.tsv"))


def test_every_table_links_to_a_file_the_run_writes(tmp_path):
    frames = {
        "word_retrieval": published.word_retrieval(),
        "word_retrieval_pos": published.word_retrieval_pos(),
        "token_translation": published.token_translation(),
        "tatoeba": published.tatoeba().assign(report_layer=8),
        "bucc": published.bucc().assign(report_layer=8),
        "transfer": transfer.transfer_table(),
        "contextual_retrieval": good_retrieval(),
        "word_pairs": word_pairs_table(),
    }
    frames["findings"] = judge_claims(dict(frames), "en")
    results, tables = run_like(tmp_path, frames)
    config = published.CONFIG
    out = results / "report.html"
    render_report(
        tables,
        config,
        out,
        results / "figures",
        paper_results=published.PAPER_RESULTS,
        expected=[f["name"] for f in expected_figures(config, tables)],
    )
    page = out.read_text(encoding="utf-8")
    written = written_by_the_run(results)
    checked = set()
    for section, body in re.findall(r'<section id="([^"]+)">(.*?)</section>', page, flags=re.S):
        found = TABLE.findall(body)
        assert len(found) == body.count('<table class="data'), section
        for heading, note in found:
            hrefs = [html_lib.unescape(h) for h in re.findall(r'<a href="([^"]+)" download>', heading + note)]
            if section in APPENDIX:
                assert not hrefs, section  # drawn from the checkout and the config, not from a table of the run
                continue
            assert hrefs, f"{section}: a table without a link to its file"
            for href in hrefs:
                assert not href.startswith(("/", "file:", "http")), href  # relative to the report
                target = Path(os.path.normpath(out.parent / href))
                assert target.is_file() and target in written, (section, href)
                checked.add(target.relative_to(results).as_posix())
    assert {f"eval/{name}.csv" for name in frames} | {"models/bert/200000-w512/training_log.tsv"} <= checked
    assert 'href="eval/word_pairs.csv" download>word pairs (CSV)</a>' in page
    # one link per file where a table is drawn from it: the findings' CSV once (not also in a line of its own)
    assert page.count('href="eval/findings.csv"') == 1
    # Cao et al.'s Tables 1, 2 and 5 are drawn from the transfer table only (the section needs contextual
    # retrieval to be shown, but none of its tables is drawn from it)
    (xnli,) = re.findall(r'<section id="alignment_xnli">(.*?)</section>', page, flags=re.S)
    linked = set(re.findall(r'<a href="([^"]+)" download>', xnli))
    assert linked == {"eval/transfer.csv"}, linked


def test_a_table_links_its_own_sources_else_its_section_s():
    links = {"a": [("a (CSV)", "eval/a.csv")], "b": [("b (CSV)", "eval/b.csv")]}
    blocks = [
        {"kind": "table", "title": "t"},
        {"kind": "table", "title": "u", "sources": ["b"]},
        {"kind": "more", "blocks": [{"kind": "table", "title": "v"}]},
        {"kind": "text"},
    ]
    shown = with_downloads(blocks, ["a", "missing"], links)
    assert shown[0]["csv"] == links["a"] and shown[1]["csv"] == links["b"]
    assert shown[2]["blocks"][0]["csv"] == links["a"] and "csv" not in shown[3]


def test_a_table_given_as_a_frame_or_without_its_csv_has_no_link(tmp_path):
    from xling.report.downloads import download_links

    (tmp_path / "eval").mkdir()
    word_pairs_table().to_parquet(tmp_path / "eval" / "word_pairs.parquet")
    links = download_links(
        {"word_pairs": tmp_path / "eval" / "word_pairs.parquet", "transfer": transfer.transfer_table()},
        {},
        tmp_path / "report.html",
    )
    assert links == {}  # no CSV beside the Parquet: a link never points at nothing
    word_pairs_table().to_csv(tmp_path / "eval" / "word_pairs.csv")
    assert download_links({"word_pairs": tmp_path / "eval" / "word_pairs.parquet"}, {}, tmp_path / "report.html") == {
        "word_pairs": [("word pairs (CSV)", "eval/word_pairs.csv")]
    }
