"""Report section for word retrieval by part of speech (Liu et al. 2020, "What makes multilingual BERT
multilingual?", Table 1): the MRR of the queries of each class, per language pair, for every model, with the
published values beside ours.

The same selection as the word-retrieval section (metric, dictionary split, BERT at the report layer); the
Table 1 layout shows the largest data size (the paper's table is its 1000k BERT) and every Hugging Face
checkpoint; the full table lists every tag, model, size, window and layer.
"""

from __future__ import annotations

import pandas as pd

from xling.report.blocks import Block, fmt_count, fmt_num, model_groups, model_name, table_block, text
from xling.report.core import ReportContext, register_section, table_with_rows
from xling.report.published import Matching
from xling.report.word_retrieval import apply_select, select_word_retrieval, selection_config, shown_layers

REQUIRED = (
    "model",
    "size",
    "window",
    "layer",
    "pair",
    "tgt",
    "pos",
    "pos_class",
    "mrr",
    "n_queries",
    "metric",
    "dictionary_split",
    "open_class",
    "pos_treebank",
    "pos_splits",
    "pos_tagged_words",
)
RESULTS = ("mrr", "n_queries")
# Table 1's rows: its label (the published table's `pos`) -> our `pos` value
TABLE1_ROWS = {"closed": "closed", "open": "open", "noun": "NOUN", "verb": "VERB", "adverb": "ADV", "adjective": "ADJ"}
PUBLISHED_POS = {ours: label for label, ours in TABLE1_ROWS.items()}
DESCRIPTION = (
    "The word-retrieval queries of each part of speech: each pivot-language query word gets its most frequent "
    "universal POS tag in the pivot's UD treebank (counted on the surface tokens; a tie goes to the tag first "
    "in alphabetical order), and the reciprocal ranks of the queries of a tag or class are averaged. Liu et al. "
    "tag with OntoNotes 5.0 and find the open class aligned better than the closed class, adjectives best."
)


def _values(df: pd.DataFrame, column: str) -> str:
    return ", ".join(str(v) for v in sorted(df[column].dropna().unique()))


@register_section(
    "word_retrieval_pos",
    "Word retrieval by part of speech",
    required=("word_retrieval_pos",),
    results={"word_retrieval_pos": RESULTS},
)
def render_word_retrieval_pos(ctx: ReportContext) -> list[Block]:
    full, where = table_with_rows(ctx, "word_retrieval_pos", REQUIRED, "part-of-speech")
    selection, df = select_word_retrieval(full, selection_config(ctx.config), where)
    df = shown_layers(df, selection)  # the layers the word-retrieval section shows
    duplicated = df.duplicated(["model", "size", "window", "layer", "pair", "pos"], keep=False)
    if duplicated.any():
        row = df[duplicated].iloc[0]
        raise ValueError(
            f"{where}: several rows for {row['model']} {row['size']} w{row['window']} layer "
            f"{row['layer']} {row['pair']} {row['pos']}: they differ in a setting; choose one with "
            "report.select"
        )
    closed_tags = _values(df[(df["pos_class"] == "closed") & (df["pos"] != "closed")], "pos")
    counts = df.pivot_table(
        index=["model", "size", "window", "pair"], columns="pos", values="n_queries", aggfunc="sum", fill_value=0
    )
    untagged = counts["untagged"] if "untagged" in counts else pd.Series(0, index=counts.index)
    total = untagged + sum(counts[c] for c in ("open", "closed") if c in counts)
    closed = f"here {closed_tags}" if closed_tags else "no query has one"
    tagged = (
        f"Tags: {_values(df, 'pos_treebank')} ({_values(df, 'pos_splits').replace(',', ', ')}), "
        f"{fmt_count(df['pos_tagged_words'].max())} words tagged. Open class: "
        f"{_values(df, 'open_class').replace(',', ', ')}; closed class: every other tag ({closed}). "
        f"Untagged queries (in neither class; part of speech 'untagged' in the full table): "
        f"{_range(fmt_count(untagged.min()), fmt_count(untagged.max()))} per model and pair, "
        f"{_share_range(untagged / total)} of the queries."
    )
    blocks = [text(DESCRIPTION, tagged), _table1(df, selection.describe())]
    defaults = {
        "metric": selection.metric,
        "dictionary_split": selection.dictionary_split,
        **({"layer": selection.layer} if selection.layer is not None else {}),
    }
    ours = apply_select(full, selection.select, where)
    ours = ours.assign(lang=ours["tgt"], pos=ours["pos"].map(PUBLISHED_POS).fillna(ours["pos"]))
    blocks += ctx.published_blocks("word_retrieval_pos", ours, Matching(identity=("lang", "pos"), defaults=defaults))
    blocks.append(_full_table(full))
    return blocks


def _table1(df: pd.DataFrame, shown: str) -> Block:
    """Table 1's layout: rows closed, open, noun, verb, adverb, adjective per model; columns pairs + average."""
    ours = df["size"] > 0
    largest = df[ours]["size"].max() if ours.any() else 0
    df = df[(df["size"] == largest) | ~ours]
    pairs = sorted(df["pair"].unique())
    rows = []
    for group in model_groups(df):
        cell = df[(df["model"] == group[0]) & (df["size"] == group[1]) & (df["window"] == group[2])]
        for label, pos in TABLE1_ROWS.items():
            by_pair = cell[cell["pos"] == pos].set_index("pair")
            row = [
                model_name(dict(zip(("model", "size", "window"), group, strict=True))),
                str(int(cell["layer"].iloc[0])),
                label,
            ]
            row += [
                {"text": fmt_num(by_pair.at[pair, "mrr"]), "sub": f"n {fmt_count(by_pair.at[pair, 'n_queries'])}"}
                if pair in by_pair.index
                else "\u2014"
                for pair in pairs
            ]
            row.append(fmt_num(by_pair["mrr"].mean()) if len(by_pair) == len(pairs) else "\u2014")
            rows.append(row)
    columns = ["model", "layer", "part of speech"] + pairs + ["avg"]
    return table_block(
        f"MRR by part of speech ({shown})",
        columns,
        rows,
        numeric=range(3, len(columns)),
        note="The layout of Liu et al.'s Table 1, at the largest data size (theirs: 1000k sentences "
        "per language). Small grey number: the queries of that class. avg: the mean over the "
        "pairs (a dash when a pair has no query of that class).",
    )


def _full_table(df: pd.DataFrame) -> Block:
    """Every row: model, size, window, layer, pair, tag or class, MRR and queries."""
    columns = [
        "model",
        "size",
        "window",
        "metric",
        "dictionary_split",
        "layer",
        "pair",
        "pos",
        "pos_class",
        "mrr",
        "n_queries",
    ]
    df = df.sort_values(columns[:8], kind="stable")
    rows = [
        [model_name(r), *(str(r[c]) for c in columns[3:9]), fmt_num(r["mrr"]), fmt_count(r["n_queries"])]
        for r in df.to_dict("records")
    ]
    return table_block(
        f"Word retrieval by part of speech: all numbers ({len(rows)} rows)",
        ["model", "metric", "dictionary split", "layer", "pair", "part of speech", "class", "MRR", "n queries"],
        rows,
        collapsed=True,
        numeric=(7, 8),
    )


def _range(low: str, high: str) -> str:
    """'5 to 6', or one number when the range is one ('5', not '5 to 5')."""
    return low if low == high else f"{low} to {high}"


def _share_range(shares: pd.Series) -> str:
    """'4.8 % to 6.1 %' of the queries, in the report's unit (one decimal, not '5% to 5%')."""
    return _range(f"{100 * shares.min():.1f} %", f"{100 * shares.max():.1f} %")
