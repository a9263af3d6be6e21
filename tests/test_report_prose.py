"""No code identifier in the report's prose: paragraphs, list items, captions, headings and summaries of a
report drawn from demo-like tables, and the findings table's cells (its numbers' labels, their notes, the
margins), say settings in words (a config key, a column value, a format string or a model id is not prose; a
claim's id, shown as code, is its name). Allowed: the run's table and file names, a tool, the implementation a number cites, and
the papers' math."""

from __future__ import annotations

import html as html_lib
import re

import pytest

import test_alignment_report as cao
import test_report_published as published
import test_report_transfer as transfer
import test_report_word_pairs as word_pairs
from xling.evaluate.findings import judge_claims

PROSE = re.compile(r"<(p|li|figcaption|h[1-4]|summary|caption)[^>]*>(.*?)</\1>", flags=re.S)
IDENTIFIER = re.compile(
    r"\b[a-z]+\.[a-z_]*_[a-z_]*(?:\.[a-z_]+)*\b"  # a dotted config path
    r"|\b[a-z_]+\.[a-z_]+\.[a-z_.]+\b"
    r"|\b[a-z]+(?:_[a-z0-9]+)+\b"  # snake_case: a config key or a column value
    r"|\w*\{[^}]*\}"  # a format string
    r"|\b\w+\+\w+\b"
)  # a model id such as bert+aligned700
ALLOWED = {
    "word_retrieval",
    "word_retrieval_pos",
    "token_translation",
    "contextual_retrieval",  # eval/<table>.csv
    "word_pairs",
    "monolingual_words",
    "monolingual_sentences",
    "contextual_retrieval_pos",  # (a claim not measured: "no
    "contextual_retrieval_frequency",  # <table> table in this run", under the findings table)
    "paper_results",  # resources/paper_results.yaml
    "fast_align",  # the aligner's name
    "scipy.stats.pearsonr",  # the implementation of Pearson's r the note cites
    "x_i",
    "y_i",
}  # the papers' notation


FINDINGS_ROW = re.compile(r'<tr><td[^>]*title="eval/findings\.csv: [^"]*".*?</tr>', flags=re.S)
CELL = re.compile(r"<td[^>]*>(.*?)</td>", flags=re.S)


def findings_cells(html: str) -> list[str]:
    """The cells of the findings table's rows (a claim each), its claims' ids (code, on purpose) left out."""
    return [
        re.sub(r"<code>.*?</code>", " ", cell, flags=re.S)
        for row in FINDINGS_ROW.findall(html)
        for cell in CELL.findall(row)
    ]


def prose_identifiers(html: str) -> dict[str, str]:
    found = {}
    for body in [body for _, body in PROSE.findall(html)] + findings_cells(html):
        text = html_lib.unescape(re.sub(r"<[^>]+>", " ", body))
        for name in IDENTIFIER.findall(text):
            found.setdefault(name, " ".join(text.split())[:160])
    return found


@pytest.fixture(scope="module")
def demo_like(tmp_path_factory):
    tables = {
        "word_retrieval": published.word_retrieval(),
        "word_retrieval_pos": published.word_retrieval_pos(),
        "token_translation": published.token_translation(),
        "tatoeba": published.tatoeba().assign(report_layer=8),
        "bucc": published.bucc().assign(report_layer=8),
        "transfer": transfer.transfer_table(),
        "contextual_retrieval": cao.good_retrieval(),
        "contextual_retrieval_pos": cao.pos_table(),
        "contextual_retrieval_frequency": cao.frequency_table(),
    }
    tables["findings"] = judge_claims(dict(tables), "en")
    tables["word_pairs"] = word_pairs.word_pairs_table()
    return published.render(tmp_path_factory.mktemp("prose"), tables)


def test_prose_names_no_code_identifier(demo_like):
    found = {name: where for name, where in prose_identifiers(demo_like).items() if name not in ALLOWED}
    assert not found, found


def test_the_findings_table_is_checked(demo_like):
    """Its numbers' labels, the metric after them and the margins: the Cao et al. analyses' and token
    translation's claims are in the page, so their cells are read."""
    cells = " ".join(findings_cells(demo_like))
    assert "closed classes" in cells and "rank difference" in cells and "convert rate" in cells, cells[:300]
    assert "the run's default for percentages" in cells


def test_the_check_catches_the_identifiers_it_is_for():
    page = (
        "<p>in the unit of language.bleu_unit</p><li>alignment.analysis.rank_bins says</li>"
        "<figcaption>f{k}-rot{kind} and bert+aligned700, vocabulary_size 0</figcaption>"
        '<tr><td class="wrap" title="eval/findings.csv: cao2020.pos"><code>cao2020.pos</code></td>'
        '<td>base_bert closed 0.0 (convert_rate, %)<span class="sub">margin (findings.margins.percent)</span></td></tr>'
    )
    assert set(prose_identifiers(page)) == {
        "language.bleu_unit",
        "alignment.analysis.rank_bins",
        "f{k}",
        "rot{kind}",
        "bert+aligned700",
        "vocabulary_size",
        "base_bert",
        "convert_rate",
        "findings.margins.percent",
    }


def test_one_title_per_paper(demo_like):
    """arXiv:2010.10041 under one title: where a title stands before the id (the findings' paper, the published
    tables' source), it is the paper's full title; a bare citation ("Liu et al. (2020, arXiv:...") has none."""
    cited = re.findall(r"([^<>]{0,140})arXiv:2010\.10041", demo_like)
    titled = [before for before in cited if not re.search(r"(Liu et al\. \(2020, |Table 6 of )$", before)]
    assert titled
    for before in titled:
        assert published.SHORT_TITLE in before, before


def test_the_ablation_and_frequency_sections_name_no_code_identifier(tmp_path):
    """Sections the demo-like page lacks: Conneau et al.'s Table 1 and Cao et al.'s frequency figure."""
    import test_ablation as ablation

    table = ablation.ablation_table({("default", "xnli"): 60.0, ("sep-emb-l1", "xnli"): 50.0}).assign(freeze=0)
    page = published.render(tmp_path, {"ablation": table, "contextual_retrieval_frequency": cao.frequency_table()})
    assert 'id="emerging_table1"' in page and 'id="alignment_frequency"' in page
    found = {name: where for name, where in prose_identifiers(page).items() if name not in ALLOWED}
    assert not found, found
