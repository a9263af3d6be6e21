"""The word pairs of Cao et al.'s study in the report (xling.report.word_pairs): precision, recall and AER against
the gold links per language and split, computed here by hand on a few links, the pairs kept, the flags, and the
section's place just before Cao et al.'s Table 3."""

from __future__ import annotations

import html as html_lib
import re

import numpy as np
import pandas as pd

from test_alignment_report import good_retrieval
from xling.data.alignment import alignment_error
from xling.report.core import render_report
from xling.report.flags import MARK

# Two sentence pairs. Predicted A: 4 links; sure S: 5 links; possible: (2,3) besides the sure ones.
PREDICTED = [{(0, 0), (1, 1)}, {(2, 2), (2, 3)}]
SURE = [{(0, 0), (1, 1), (4, 4)}, {(3, 3), (2, 1)}]
POSSIBLE = [set(), {(2, 3)}]
# by hand: |A & S| = 2, |A & P| = 3 (P = S | possible): precision 3/4, recall 2/5, AER 1 - (2 + 3) / (4 + 5) = 4/9
BY_HAND = {"precision": "75.0", "recall": "40.0", "aer": "44.4"}


def word_pairs_table() -> pd.DataFrame:
    scores = alignment_error(PREDICTED, SURE, POSSIBLE)
    rows = [
        dict(
            lang="de",
            split=split,
            links_from=source,
            sentence_pairs=2,
            links=4,
            **{k: scores[k] for k in ("precision", "recall", "aer")},
        )
        for split in ("train400", "test", "dev", "train100")
        for source in ("forward", "pairs", "reverse")
    ]
    rows.append(
        dict(
            lang="xb",
            split="test",
            links_from="pairs",
            sentence_pairs=3,
            links=0,
            precision=np.nan,
            recall=0.0,
            aer=1.0,
        )
    )  # gold, but no pair kept
    rows.append(
        dict(
            lang="zz",
            split="test",
            links_from="pairs",
            sentence_pairs=5,
            links=12,
            precision=np.nan,
            recall=np.nan,
            aer=np.nan,
        )
    )  # no gold links
    return pd.DataFrame(rows).assign(aligner="fast_align", tokenizer="moses", pair=lambda d: "en-" + d["lang"])


def rows_of(html: str, title: str) -> list[list[str]]:
    start = html.index(title)
    body = html[start : html.index("</table>", start)]
    return [
        [
            " ".join(re.sub(r"<[^>]+>", " ", cell).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)[1:]
    ]


def render(tmp_path, tables) -> str:
    render_report(
        tables,
        {"languages": ["en", "de", "xb", "zz"], "run": "t"},
        tmp_path / "r.html",
        tmp_path / "figures",
        paper_results=tmp_path / "none.yaml",
    )
    return html_lib.unescape((tmp_path / "r.html").read_text(encoding="utf-8"))


def test_the_scores_are_the_hand_computed_ones():
    scores = alignment_error(PREDICTED, SURE, POSSIBLE)
    assert (scores["precision"], scores["recall"]) == (0.75, 0.4) and abs(scores["aer"] - 4 / 9) < 1e-12


def test_the_table_shows_each_language_and_split_with_its_scores_and_flags(tmp_path):
    html = render(tmp_path, {"word_pairs": word_pairs_table()})
    rows = rows_of(html, "Word pairs kept and their quality against the gold links")
    # the kept pairs only, test / dev / training splits by size, each language in turn
    assert [row[:2] for row in rows] == [
        ["en-de", "test"],
        ["en-de", "dev"],
        ["en-de", "train (100)"],
        ["en-de", "train (400)"],
        ["en-xb", "test"],
        ["en-zz", "test"],
    ]
    assert rows[0] == ["en-de", "test", "2", "4", BY_HAND["precision"], BY_HAND["recall"], BY_HAND["aer"]]
    no_pairs = rows[4]
    assert no_pairs[3] == f"0 {MARK} {MARK}a no word pairs kept"
    assert no_pairs[4] == f"\u2014 {MARK} {MARK}a no word pairs kept"  # precision undefined, flagged
    assert no_pairs[6] == f"100.0 {MARK} {MARK}a no word pairs kept"
    assert rows[5][4:] == ["\u2014 no gold links"] * 3
    assert "Gold links for en-de, en-xb; none for en-zz" in html
    every = rows_of(html, "Word pairs: each direction of the aligner and their intersection")
    assert [row[2] for row in every[:3]] == ["intersection (kept)", "forward", "reverse"]


def test_a_recall_of_zero_is_flagged():
    from xling.report.flags import no_word_pairs

    assert no_word_pairs(7, 0.0) == "none of 7 word pairs is a gold link"
    assert no_word_pairs(7, 0.5) is None and no_word_pairs(7, None) is None


def test_the_section_stands_just_before_cao_et_al_s_table_3(tmp_path):
    html = render(tmp_path, {"word_pairs": word_pairs_table(), "contextual_retrieval": good_retrieval()})
    sections = re.findall(r'<section id="([^"]+)">', html)
    assert sections.index("word_pairs") + 1 == sections.index("alignment_retrieval")
    assert 'href="#word_pairs"' in html  # in the table of contents
