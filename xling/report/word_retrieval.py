"""Report section for word retrieval (Liu et al. 2020): the MRR of each language pair per model, data size,
context window and BERT layer, with the chance MRR beside every number and the findings' flag on every number
they would not compare (`mrr_flags`). Hugging Face checkpoints (rows with
size 0, e.g. Google's mBERT) stand beside our models as references, at the report layer counted the same way.

Figures and the main table show one selection of the table (metric, dictionary split, BERT layer and
report.select filters; config report.*, falling back on retrieval.*); the full table shows every row.
Seeds are averaged; any other setting that would be averaged stops the report and names the column.
The static models' window sweep (rows marked window_sweep, Liu et al.'s Figure 4) has its own section; the
grid's figures and main table leave out its windows that are not the grid's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import pandas as pd

from xling.evaluate.findings import criteria_from_config, read_tables
from xling.evaluate.findings.liu_what import mrr_label, mrr_measure
from xling.plan.figures import selection_config, window_sweep_declared  # the selection: the findings' too
from xling.report import figures
from xling.report.blocks import DASH, Block, fmt_count, fmt_num, fmt_setting, model_groups, table_block, text
from xling.report.core import (ReportContext, register_list_table, register_section, require_columns,
                               table_with_rows)
from xling.report.flags import flagged_cell
from xling.report.figures import model_label, ordered_models, size_label
from xling.report.published import Matching

# Columns of the word-retrieval table: settings (each a column, one row per setting x pair) and results.
REQUIRED = ("model", "size", "window", "layer", "pair", "mrr", "chance_mrr", "metric", "dictionary_split")
SETTINGS = ("model", "size", "window", "layer", "metric", "dictionary_split", "min_count", "seed", "dim",
            "source", "vocab")
RESULTS = ("mrr", "p_at_1", "p_at_5", "coverage", "n_pairs", "n_covered_pairs", "n_queries", "n_candidates",
           "chance_mrr")
NOT_SETTINGS = ("pair", "src", "tgt")
LONG_COLUMNS = ("hparams", "data_settings", "represent_settings")  # JSON blocks: in Settings, not per row
COLUMN_LABELS = {
    "model": "model", "size": "size (sentences/lang)", "window": "window", "layer": "layer",
    "metric": "metric", "dictionary_split": "dictionary split", "min_count": "min count", "seed": "seed",
    "dim": "dim", "source": "data", "vocab": "vocab", "pair": "pair", "mrr": "MRR", "p_at_1": "P@1",
    "p_at_5": "P@5", "coverage": "coverage", "n_pairs": "n dict pairs", "n_covered_pairs": "n covered pairs",
    "n_queries": "n queries", "n_candidates": "n candidates", "chance_mrr": "chance MRR",
}
DESCRIPTION = (
    "Each source-language word of the bilingual dictionary that the model represents (static vectors; for "
    "BERT the mean of its in-context vectors over the corpus at one layer) is compared with every candidate "
    "target-language word. MRR, over pairs or over words as the run's settings say: 'pairs' averages 1/rank of y_i over the dictionary's pairs "
    "(x_i, y_i), as Liu et al. (eq. 2); 'words' averages over distinct source words the reciprocal rank of "
    "their best-ranked translation. Chance MRR = the expected MRR of a random ranking (H(n)/n for n "
    "candidates with one gold; higher for words scored by their best of several); coverage = share of "
    "dictionary pairs with both words represented.")


# ---------------------------------------------------------------------------------------------- selection

@dataclass(frozen=True)
class Selection:
    """The settings the figures and the main table show (the full table shows all)."""

    metric: str
    dictionary_split: str
    layer: int | None          # BERT layer shown beside the static models; None when there is no BERT
    select: tuple = ()         # extra (column, value) filters from report.select
    checkpoints: tuple = ()    # (name, layer shown) of each Hugging Face checkpoint

    def describe(self) -> str:
        parts = [f"metric {self.metric}", f"dictionary split {self.dictionary_split}"]
        if self.layer is not None:
            parts.append(f"BERT layer {self.layer}")
        parts += [f"{name} layer {layer}" for name, layer in self.checkpoints]
        parts += [f"{c} {v}" for c, v in self.select]
        return ", ".join(parts)


def _choose(df: pd.DataFrame, column: str, wanted, preferred: str | None, where: str):
    present = sorted(df[column].dropna().unique().tolist())
    if wanted is not None:
        if wanted not in present:
            raise ValueError(f"{where}: {column} {wanted!r} asked for (report.{column} or retrieval.{column}) "
                             f"is not in the table (has {present})")
        return wanted
    if preferred in present:
        return preferred
    return present[0]


def apply_select(df: pd.DataFrame, select: Iterable[tuple], where: str) -> pd.DataFrame:
    """The rows with each (column, value) of report.select."""
    for column, value in select:
        if column not in df:
            raise ValueError(f"{where}: report.select names {column!r}, not a column of the table")
        df = df[df[column] == value]
        if df.empty:
            raise ValueError(f"{where}: no rows with {column} = {value!r} (report.select)")
    return df


def select_word_retrieval(df: pd.DataFrame, report_config: Mapping, where: str) -> tuple[Selection, pd.DataFrame]:
    """Pick metric, dictionary split and BERT layer (config, else a default) and filter the table to them.

    Returns the selection and the table filtered by metric, split and report.select — all layers kept.
    """
    select = tuple(sorted((report_config.get("select") or {}).items()))
    df = apply_select(df, select, where)
    metric = _choose(df, "metric", report_config.get("metric"), "cosine", where)
    split = _choose(df, "dictionary_split", report_config.get("dictionary_split"), "test", where)
    df = df[(df["metric"] == metric) & (df["dictionary_split"] == split)]
    wanted = report_config.get("layer")
    ours = df[df["size"] > 0]
    bert_layers = ours.loc[ours["model"] == "bert", "layer"]
    layer = _layer(bert_layers, wanted, "the BERT rows", where) if len(bert_layers) else None
    checkpoints = df[df["size"] == 0]
    chosen = tuple((name, _layer(rows["layer"], wanted, name, where))
                   for name, rows in checkpoints.groupby("model", sort=True))
    return Selection(str(metric), str(split), layer, select, chosen), df


def shown_layers(df: pd.DataFrame, selection: Selection) -> pd.DataFrame:
    """The rows the figures and main tables show: the static models' one layer, our BERTs at the selected layer,
    each checkpoint at its own (counted from its own last layer when the setting is null or negative)."""
    ours, checkpoints = df[df["size"] > 0], df[df["size"] == 0]
    static = ours[ours["model"] != "bert"]
    bert = ours[ours["model"] == "bert"]
    return pd.concat([static, bert[bert["layer"] == selection.layer]]
                     + [checkpoints[(checkpoints["model"] == name) & (checkpoints["layer"] == layer)]
                        for name, layer in selection.checkpoints])


def _layer(layers: pd.Series, wanted, whose: str, where: str) -> int:
    """The layer to show of a BERT's rows: `wanted` (report.layer or retrieval.report_layer; negative counts
    from the last), or the last layer when it is None."""
    present = sorted(int(v) for v in layers.unique())
    if wanted is None:
        return present[-1]
    layer = present[-1] + 1 + int(wanted) if int(wanted) < 0 else int(wanted)
    if layer not in present:
        raise ValueError(f"{where}: BERT layer {wanted} asked for (report.layer or retrieval.report_layer) "
                         f"but {whose} have layers {present}; use one of them, -1 for the last, or null")
    return layer


def setting_columns(df: pd.DataFrame) -> list[str]:
    """The table's setting columns: the known ones first, then any other column that is not a result."""
    known = [c for c in SETTINGS if c in df]
    return known + [c for c in df.columns if c not in SETTINGS and c not in RESULTS
                    and c not in NOT_SETTINGS and not str(c).startswith("_")]


def _check_single_setting(df: pd.DataFrame, keys: list[str], where: str) -> None:
    """Refuse to average over a setting silently: within a figure cell only `seed` may vary, once each."""
    others = [c for c in setting_columns(df) if c not in keys and c != "seed"]
    if others:
        counts = df.groupby(keys, dropna=False)[others].nunique(dropna=False)
        bad = counts[(counts > 1).any(axis=1)]
        if not bad.empty:
            cell = dict(zip(keys, bad.index[0] if isinstance(bad.index[0], tuple) else (bad.index[0],), strict=True))
            column = bad.columns[(bad.iloc[0] > 1).to_numpy()][0]
            mask = pd.Series(True, index=df.index)
            for k, v in cell.items():
                mask &= df[k] == v
            values = sorted(df.loc[mask, column].astype(str).unique())
            raise ValueError(f"{where}: several values of {column} ({', '.join(values)}) for "
                             + ", ".join(f"{k}={v}" for k, v in cell.items())
                             + f"; choose one with report.select.{column}")
    unique = keys + (["seed"] if "seed" in df else [])
    duplicated = df.duplicated(unique, keep=False)
    if duplicated.any():
        row = df[duplicated].iloc[0]
        raise ValueError(f"{where}: {int(duplicated.sum())} duplicate rows, e.g. "
                         + ", ".join(f"{k}={row[k]}" for k in unique))


def summarize(df: pd.DataFrame, keys: list[str], where: str) -> pd.DataFrame:
    """Mean over seeds per cell (with the seeds' standard deviation), after checking nothing else varies."""
    _check_single_setting(df, keys, where)
    agg = dict(mrr=("mrr", "mean"), mrr_sd=("mrr", "std"), chance_mrr=("chance_mrr", "mean"))
    if "seed" in df:
        agg["n_seeds"] = ("seed", "nunique")
    return df.groupby(keys, as_index=False).agg(**agg)


def _constant_settings(df: pd.DataFrame, columns: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Split setting columns into those that vary (shown as columns) and constants (listed once)."""
    varying, constant = [], []
    for column in columns:
        if column not in df:
            continue
        values = df[column].dropna().unique()
        if len(values) == 1 and df[column].notna().all():
            constant.append((COLUMN_LABELS.get(column, column), fmt_setting(column, values[0])))
        else:
            varying.append(column)
    return varying, constant


def _per_model(df: pd.DataFrame, column: str) -> str:
    """'5' when one value; 'GloVe 300, Word2Vec 300, BERT 768' when it differs by model."""
    if column not in df:
        return ""
    values = df[column].dropna().unique()
    if len(values) == 1:
        return fmt_setting(column, values[0])
    parts = []
    for model in ordered_models(df["model"]):
        vals = sorted(df.loc[df["model"] == model, column].dropna().unique().tolist())
        parts.append(f"{model_label(model)} {'/'.join(fmt_setting(column, v) for v in vals)}")
    return ", ".join(parts)


def _settings_line(df: pd.DataFrame, selection: Selection, extra: str = "") -> str:
    parts = [selection.describe()]
    for column, label in (("min_count", "min count"), ("dim", "dim"), ("vocab", "vocab"), ("source", "data")):
        value = _per_model(df, column)
        if value:
            parts.append(f"{label} {value}")
    if "seed" in df:
        seeds = sorted(df["seed"].dropna().unique().tolist())
        parts.append(("seed " if len(seeds) == 1 else "mean over seeds ") + ", ".join(map(str, seeds)))
    if extra:
        parts.append(extra)
    return "; ".join(parts)


def grid_rows(df: pd.DataFrame, config: Mapping) -> pd.DataFrame:
    """The table without the window sweep's own rows (marked window_sweep, at a window the grid, config
    `windows`, does not have): they are in the sweep's section."""
    if "window_sweep" not in df:
        return df
    sweep_only = df["window_sweep"].astype(bool) & ~df["window"].isin(config.get("windows") or [])
    return df[~sweep_only]


# ---------------------------------------------------------------------------------------------- flags

RANKS = "word_retrieval_ranks"  # the per-query reciprocal ranks (one file per retrieval job): the intervals
register_list_table(RANKS, RANKS, lambda files: read_tables({RANKS: files})[RANKS])
MEAN = None  # the key of a model's mean over its pairs in `mrr_flags`


def mrr_flags(ctx: ReportContext, shown: pd.DataFrame, selection: Selection) -> dict[tuple, str | None]:
    """{(model, size, window, layer, pair; MEAN for the mean over its pairs): the findings' flag of that MRR}: the
    findings' own measure (xling.evaluate.findings.liu_what.mrr_measure: the interval from the per-query ranks,
    the retrieval job's chance MRR, the run's bootstrap settings), so a cell is flagged exactly when a claim on
    its number would be, with the same reason."""
    criteria = criteria_from_config({}, ctx.config.get("bootstrap"), {"metric": selection.metric,
                                                                      "dictionary_split": selection.dictionary_split})
    tables = {RANKS: ctx.tables[RANKS]} if RANKS in ctx.tables else {}
    flags = {}
    for (model, size, window, layer), rows in shown.groupby(["model", "size", "window", "layer"]):
        key = (model, size, window, layer)
        pairs = sorted(rows["pair"].unique())
        for group, name in [*(([pair], pair) for pair in pairs), (pairs, MEAN)]:
            flags[(*key, name)] = mrr_measure(tables, key, rows, group, mrr_label(model, group, layer), criteria).flag
    return flags


# ---------------------------------------------------------------------------------------------- section

@register_section("word_retrieval", "Word retrieval", required=("word_retrieval",),
                  results={"word_retrieval": RESULTS})
def render_word_retrieval(ctx: ReportContext) -> list[Block]:
    full, where = table_with_rows(ctx, "word_retrieval", REQUIRED, "word-retrieval")
    grid = grid_rows(full, ctx.config)
    selection, df = select_word_retrieval(grid, selection_config(ctx.config), where)
    bert = df[(df["size"] > 0) & (df["model"] == "bert")]
    shown = shown_layers(df, selection)
    keys = ["model", "size", "window", "layer", "pair"]
    summary = summarize(shown, keys, where)
    line = _settings_line(shown, selection)
    blocks = [text(DESCRIPTION, "Figures and the main table show one selection, stated under the table; the full "
                                "table at the end lists every setting."),
              _main_table(summary, selection, line, mrr_flags(ctx, shown, selection))]
    for window in sorted(summary.loc[summary["size"] > 0, "window"].unique(), reverse=True):
        panel = summary[(summary["window"] == window) | (summary["size"] == 0)]  # checkpoints: in every window's
        fig = figures.mrr_by_pair(panel, settings=selection.describe(),
                                  title=f"Word retrieval by language pair, context window {window}")
        blocks.append(ctx.figure(f"word_retrieval_mrr_by_pair_w{window}", fig, "word_retrieval_mrr_by_pair",
                                 f"window {window}; {line}", f"MRR by language pair, window {window}"))
    fig = figures.window_effect(summary, settings=selection.describe())
    blocks.append(ctx.figure("word_retrieval_window_effect", fig, "word_retrieval_window_effect", line,
                             "Effect of the context window"))
    if len(bert):
        bsum = summarize(bert, keys, where)
        bline = _settings_line(bert, Selection(selection.metric, selection.dictionary_split, None,
                                               selection.select), "all layers")
        fig = figures.bert_layers(bsum, settings=f"metric {selection.metric}, dictionary split "
                                  f"{selection.dictionary_split}", highlight_layer=selection.layer)
        blocks.append(ctx.figure("word_retrieval_bert_layers", fig, "word_retrieval_bert_layers", bline,
                                 "BERT word retrieval by layer"))
    defaults = {"metric": selection.metric, "dictionary_split": selection.dictionary_split,
                **({"layer": selection.layer} if selection.layer is not None else {})}
    ours = apply_select(grid, selection.select, where)
    blocks += ctx.published_blocks("word_retrieval", ours.assign(lang=ours["tgt"] if "tgt" in ours else
                                                                 ours["pair"].str.split("-").str[-1]),
                                   Matching(identity=("lang",), defaults=defaults))
    blocks.append(_full_table(full, "Word retrieval: all numbers"))
    return blocks


# ---------------------------------------------------------------------------------------------- window sweep

SWEEP_DESCRIPTION = (
    "Liu et al. (\"What makes multilingual BERT multilingual?\", Figure 4) trained Word2Vec with windows 5, 128 "
    "and 256 on their small data and found that a larger window is not always better. Here each static model "
    "that the run's window sweep names is trained at each of its windows on the same data as the grid (word "
    "retrieval only). A window of w tokens is a span of w // 2 tokens on each side, the unit of the grid's "
    "windows, so the paper's Word2Vec windows 5, 128, 256 (tokens on each side) are the spans 10, 256, 512; a "
    "sweep window that is also a grid window is the grid's model.")


@register_section("window_sweep", "Window sweep of the static models", required=("word_retrieval",),
                  results={"word_retrieval": RESULTS})
def render_window_sweep(ctx: ReportContext) -> list[Block]:
    if not window_sweep_declared(ctx.config):
        return [text("This run sweeps no window (its settings name no window to sweep, or no static model the run "
                     "trains).")]
    where = ctx.table_paths["word_retrieval"]
    full = ctx.tables["word_retrieval"]
    require_columns(full, REQUIRED + ("window_sweep",), where)
    sweep = full[full["window_sweep"].astype(bool)]
    if sweep.empty:
        raise ValueError(f"{where}: no row has window_sweep true, but the config declares a window sweep")
    selection, df = select_word_retrieval(sweep, selection_config(ctx.config), where)
    summary = summarize(df, ["model", "size", "window", "layer", "pair"], where)
    line = _settings_line(df, selection)
    fig = figures.mrr_by_pair(summary, settings=selection.describe(), bars="window",
                              title="Effect of the window on the static models' word retrieval")
    return [text(SWEEP_DESCRIPTION),
            _main_table(summary, selection, line, mrr_flags(ctx, df, selection),
                        title="Window sweep: MRR by language pair"),
            ctx.figure("word_retrieval_window_sweep", fig, "word_retrieval_window_sweep", line,
                       "MRR by language pair, one bar per window")]


def _main_table(summary: pd.DataFrame, selection: Selection, line: str, flags: Mapping[tuple, str | None],
                title: str = "MRR by language pair") -> Block:
    """The papers' table: rows model x size x window, columns language pairs + mean; the chance MRR of each
    cell's candidates in a 'chance' row per data size when every model of that size has the same one as shown
    (the same dictionary and vocabulary), else under each MRR; each MRR the findings flag (`mrr_flags`) marked
    with their reason. Checkpoints (size 0) come last, with no size or window of ours."""
    pairs = sorted(summary["pair"].unique())
    chance = summary.assign(shown=summary["chance_mrr"].map(fmt_num))
    per_size = chance.groupby(["size", "pair"])["shown"].nunique().max() == 1
    rows = []
    for model, size, window in model_groups(summary):
        cell = summary[(summary["model"] == model) & (summary["size"] == size) & (summary["window"] == window)]
        cell = cell.set_index("pair")
        row = ([model_label(model), size_label(size), str(window)] if size else [str(model), DASH, DASH])
        layer = cell["layer"].iloc[0]
        row.append(str(int(layer)))
        for pair in pairs:
            if pair in cell.index:
                row.append(flagged_cell(fmt_num(cell.at[pair, "mrr"]), flags[(model, size, window, layer, pair)],
                                        "" if per_size else f"chance {fmt_num(cell.at[pair, 'chance_mrr'])}"))
            else:
                row.append(DASH)
        row.append(flagged_cell(fmt_num(cell["mrr"].mean()), flags[(model, size, window, layer, MEAN)],
                                "" if per_size else f"chance {fmt_num(cell['chance_mrr'].mean())}"))
        rows.append(row)
    if per_size:  # one row of chance levels per data size instead of one under every number
        for size, cell in chance.groupby("size"):
            levels = cell.groupby("pair")["chance_mrr"].first()
            rows.append([{"text": "chance", "sub": "random ranking"}, size_label(size) if size else DASH, DASH, DASH]
                        + [fmt_num(levels[p]) if p in levels.index else DASH for p in pairs]
                        + [fmt_num(levels.mean())])
    columns = ["model", COLUMN_LABELS["size"], "window", "layer"] + pairs + ["mean"]
    where = "the 'chance' row of each data size" if per_size else "the small grey number under each MRR"
    return table_block(f"{title} ({selection.describe()})", columns, rows,
                       note=f"Settings: {line}. Chance MRR for the same candidates: {where}.",
                       numeric=range(4, len(columns)))


def _full_table(df: pd.DataFrame, title: str) -> Block:
    """Every row of the table, settings first; settings constant over the table are listed above it."""
    order = {m: i for i, m in enumerate(ordered_models(df["model"]))}
    df = df.assign(_m=df["model"].map(order))
    sort = ["_m"] + [c for c in ("size", "window", "metric", "dictionary_split", "layer", "pair", "seed") if c in df]
    df = df.sort_values(sort, ascending=[c != "window" for c in sort], kind="stable")  # windows large first
    settings = [c for c in setting_columns(df) if c not in LONG_COLUMNS]
    varying, constant = _constant_settings(df, settings)
    results = [c for c in RESULTS if c in df]
    columns = varying + ["pair"] + results
    rows = [[fmt_setting(c, r[c]) for c in varying] + [str(r["pair"])]
            + [fmt_count(r[c]) if c.startswith("n_") else fmt_num(r[c]) for c in results]
            for r in df[columns].to_dict("records")]
    note = "Same settings for every row: " + "; ".join(f"{k} {v}" for k, v in constant) + ". " if constant else ""
    if any(c in df for c in LONG_COLUMNS):
        note += "Each model's hyper-parameters and the data settings are in Settings (JSON columns of the table)."
    return table_block(f"{title} ({len(rows)} rows)", [COLUMN_LABELS.get(c, c) for c in columns], rows, note=note,
                       numeric=range(len(varying) + 1, len(columns)))
