"""Report section: the word pairs Cao et al.'s alignment study rests on (their §3.3: fastAlign both ways, the
one-to-one pairs of the intersection), scored against gold links where the data have them.

Why: every rotation, every alignment fine-tuning and every contextual-retrieval query of the next sections is
built from these pairs; a reader judging those tables needs to know how many pairs there were and how good they
are. Table read: `word_pairs` (eval/word_pairs.parquet: one row per language, split and link source (forward,
reverse, pairs: the intersection kept), sentence pairs, links, and precision, recall and AER, NaN without gold).
The table records corpus-level counts only, so its numbers have no interval; a number is flagged as the findings
flag (xling.report.flags: no word pair kept, none of them a gold link).
"""

from __future__ import annotations

import re

import pandas as pd

from xling.report.blocks import DASH, Block, fmt_count, fmt_percent, table_block, text
from xling.report.core import ReportContext, register_section, table_with_rows
from xling.report.flags import flagged_cell, with_flags

REQUIRED = ("lang", "split", "links_from", "sentence_pairs", "links", "precision", "recall", "aer")
RESULTS = ("sentence_pairs", "links", "precision", "recall", "aer")
SOURCES = {"pairs": "intersection (kept)", "forward": "forward", "reverse": "reverse"}
SCORES = ("precision", "recall", "aer")
COLUMNS = ["language pair", "split", "sentence pairs", "word pairs", "precision (%)", "recall (%)", "AER (%)"]


def split_rank(split: str) -> tuple[int, int]:
    """test, dev, then the training splits by size (train10000 before train250000)."""
    found = re.fullmatch(r"train(\d+)", str(split))
    return (2, int(found[1])) if found else ({"test": 0, "dev": 1}.get(str(split), 3), 0)


def split_label(split: str) -> str:
    found = re.fullmatch(r"train(\d+)", str(split))
    return f"train ({int(found[1]):,})" if found else str(split)


def _lines(rows: pd.DataFrame, pivot: str, source: bool) -> list[list]:
    order = rows.assign(_rank=rows["split"].map(split_rank), _source=rows["links_from"].map(list(SOURCES).index))
    lines = []
    for _, row in order.sort_values(["lang", "_rank", "_source"], kind="stable").iterrows():
        reason, gold = row["flag"], pd.notna(row["aer"])
        scores = [
            flagged_cell(fmt_percent(row[key]), reason) if gold else {"text": DASH, "sub": "no gold links"}
            for key in SCORES
        ]
        line = [f"{pivot}-{row['lang']}", split_label(row["split"])]
        line += [SOURCES.get(row["links_from"], row["links_from"])] if source else []
        lines.append(line + [fmt_count(row["sentence_pairs"]), flagged_cell(fmt_count(row["links"]), reason), *scores])
    return lines


def _settings(rows: pd.DataFrame) -> str:
    found = [
        f"{label} {', '.join(str(v) for v in rows[column].dropna().unique())}"
        for column, label in (("aligner", "aligner"), ("tokenizer", "tokenizer"))
        if column in rows
    ]
    return "; ".join(found)


@register_section(
    "word_pairs",
    "Word pairs of the parallel text (Cao et al. 2020, Section 3.3)",
    required=("word_pairs",),
    results={"word_pairs": RESULTS},
)
def render_word_pairs(ctx: ReportContext) -> list[Block]:
    table, where = table_with_rows(ctx, "word_pairs", REQUIRED, "word pairs")
    rows = with_flags("word_pairs", table, ctx.pivot)
    kept = rows[rows["links_from"] == "pairs"]
    if kept.empty:
        raise ValueError(f"{where}: no row of the kept word pairs (links_from 'pairs')")
    gold = sorted(kept.loc[kept["aer"].notna(), "lang"].unique())
    without = sorted(set(kept["lang"]) - set(gold))
    settings = _settings(rows)
    intro = text(
        "The word pairs every rotation, alignment fine-tuning and contextual-retrieval query below is built from: "
        "each language's parallel text with the pivot, tokenized and aligned both ways, keeping the one-to-one "
        "pairs of the intersection, as Cao et al. do with fastAlign"
        + (f" ({settings})" if settings else "")
        + ". Against the gold links: precision = |A \u2229 P| / |A|, recall = |A \u2229 S| / |S| and "
        "AER = 1 \u2212 (|A \u2229 S| + |A \u2229 P|) / (|A| + |S|) (Och and Ney 2003; A the pairs, S the sure and "
        "P the possible gold links), over every sentence pair of the split. "
        + (f"Gold links for {', '.join(f'{ctx.pivot}-{lang}' for lang in gold)}" if gold else "No gold links")
        + (
            f"; none for {', '.join(f'{ctx.pivot}-{lang}' for lang in without)} (scores \u2014)."
            if without and gold
            else "."
        )
    )
    note = (
        "Word pairs: the one-to-one links kept, the pairs the next sections use; the test split is the one "
        "contextual retrieval scores, the training splits the ones rotations and fine-tunings learn from. "
        "No interval: the table records corpus totals only. Cao et al. print no alignment quality."
    )
    return [
        intro,
        table_block(
            "Word pairs kept and their quality against the gold links",
            COLUMNS,
            _lines(kept, ctx.pivot, source=False),
            numeric=range(2, 7),
            note=note,
        ),
        table_block(
            "Word pairs: each direction of the aligner and their intersection",
            [*COLUMNS[:2], "links from", *COLUMNS[2:]],
            _lines(rows, ctx.pivot, source=True),
            numeric=range(3, 8),
            collapsed=True,
            note="Forward and reverse: the aligner run in each direction; intersection: the links both "
            "directions find, one-to-one (kept).",
        ),
    ]
