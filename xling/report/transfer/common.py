"""Report sections for zero-shot transfer from English: XNLI by model, data size and window (Liu et al. 2020,
Figures 2, 4 and 6), XNLI with MDS and zero-mean (Liu et al. 2020, arXiv:2004.09205 Table 4), UD POS tagging and
dependency parsing with zero-mean and MDS (Liu et al. 2020, arXiv:2010.10041 §5), WikiAnn NER (beside Conneau et
al. 2020 Table 1) and the MDS weight alpha chosen on each language's dev split.

Every section reads one tidy table, `transfer` (results/<run>/eval/transfer.parquet, xling.evaluate.transfer):
one row per number, with the task, the model, the fine-tuning settings (freeze, train_transform, selection,
finetune_settings), the fine-tuning seed, the language, the split, the test-time transform (layer, alpha,
selected) and the metric; values in percent. Seeds are averaged (mean ± sample sd, the count of seeds shown);
every other setting is a table column, a row label, or a choice the section names (the split, the checkpoint
selection, the smallest freeze in the model comparison); a cell where anything but the seed varies stops the
report naming the column. Every language's number is shown whatever it is; XNLI cells below chance (three
balanced classes: one third) are flagged.
"""

from __future__ import annotations

import math
import textwrap
from typing import Iterable, Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from xling.report import figures
from xling.report.blocks import (DASH, MODEL_KEYS, Block, empty_block, flatten, fmt_count, fmt_setting, group,
                                 model_groups, model_name, settings_block, table_block, text)
from xling.report.core import ReportContext, recorded_json, register_section, require_columns
from xling.report.figures import size_label
from xling.report.published import Matching

TABLE = "transfer"
REQUIRED = ("task", "model", "size", "window", "freeze", "train_transform", "seed", "selection", "lang", "split",
            "transform", "layer", "alpha", "selected", "metric", "value", "finetune_settings")
RESULTS = ("value", "n", "best_epoch")  # best_epoch: what each seed's selection chose
TASK_ORDER = ("xnli", "pos", "parsing", "ner")
TASK_LABELS = {"xnli": "XNLI", "pos": "UD POS tagging", "parsing": "UD dependency parsing", "ner": "WikiAnn NER"}
MAIN_METRIC = {"xnli": "accuracy", "pos": "upos", "parsing": "las", "ner": "f1"}  # what alpha curves show
METRIC_LABELS = {"accuracy": "accuracy", "upos": "UPOS accuracy", "uas": "UAS", "las": "LAS", "f1": "span F1",
                 "precision": "span precision", "recall": "span recall"}
CHANCE = {("xnli", "accuracy"): 100 / 3}  # three balanced classes; the other tasks have no single chance level
SELECTION_LABELS = {"en_dev": "English dev (the papers')", "avg_dev": "average dev over languages (Cao et al.)"}
PAPER_SELECTION = "en_dev"
IDENTITY = ("task", "metric", "lang")  # what a published number must share with ours to be the same measurement
DIGITS = 2  # as Liu et al. Table 4 prints accuracy
XNLI_CAPTION, WINDOW_CAPTION, ALPHA_CAPTION = "transfer_xnli", "transfer_window_effect", "transfer_mds_alpha"
DESCRIPTION = (
    "Zero-shot transfer from English: each model is fine-tuned on English training data only (MultiNLI for XNLI, "
    "English UD for POS tagging and parsing, English WikiAnn for NER) and tested on every language of the run. "
    "Numbers are percent: XNLI accuracy, UPOS accuracy (one label per word, on its first subword), UAS and LAS "
    "(CoNLL 2018 semantics) and span F1 (seqeval, IOB2). Each cell is the mean over fine-tuning seeds \u00b1 their "
    "sample standard deviation, with the number of seeds under it. Test-time transforms act at one layer: "
    "zero-mean (each language centred on its mean, also while fine-tuning on English) and MDS (the target "
    "language moved toward English, h + \u03b1 (R_en \u2212 R_xx), \u03b1 chosen per language on that language's "
    "dev split, then applied to its test split).")


# ---------------------------------------------------------------------------------------------- figures declared

def figure_sizes(config: Mapping) -> list[int]:
    """The data sizes with an XNLI-by-model figure: every corpus size of the run."""
    return sorted((config.get("corpus") or {}).get("sizes") or [])


def transfer_figures(config: Mapping) -> list[dict]:
    """The PNGs these sections write: XNLI by model per data size (corpus.sizes), the window effect and the
    alpha curves on dev. Each is written whatever the table holds (a panel says what is missing), so the list
    depends on the config alone."""
    category = "Zero-shot transfer"
    out = [{"name": f"transfer_xnli_{size}", "caption": f"{XNLI_CAPTION}.rst", "category": category,
            "labels": {"figure": "XNLI by model", "size": size_label(size)}} for size in figure_sizes(config)]
    out.append({"name": "transfer_xnli_window_effect", "caption": f"{WINDOW_CAPTION}.rst", "category": category,
                "labels": {"figure": "XNLI window effect", "size": "all"}})
    out.append({"name": "transfer_mds_alpha", "caption": f"{ALPHA_CAPTION}.rst", "category": category,
                "labels": {"figure": "MDS alpha on dev", "size": "all"}})
    return out


# ---------------------------------------------------------------------------------------------- seeds and cells

def _settings_of(df: pd.DataFrame, keys: Iterable[str], free: Iterable[str] = ()) -> list[str]:
    skip = set(keys) | set(free) | set(RESULTS) | {"seed"}
    return [c for c in df.columns if c not in skip and not str(c).startswith("_")]


def check_cells(df: pd.DataFrame, keys: list[str], where: str, free: Iterable[str] = ()) -> None:
    """Refuse to average anything but seeds: within a cell of `keys` every setting (except those in `free`,
    e.g. the alpha each seed chose) has one value and each seed one row."""
    if df.empty:
        return
    settings = _settings_of(df, keys, free)
    if settings:
        counts = df.groupby(keys, dropna=False)[settings].nunique(dropna=False)
        bad = counts[(counts > 1).any(axis=1)]
        if not bad.empty:
            cell = bad.index[0] if isinstance(bad.index[0], tuple) else (bad.index[0],)
            column = bad.columns[(bad.iloc[0] > 1).to_numpy()][0]
            raise ValueError(f"{where}: several values of {column} in one cell ("
                             + ", ".join(f"{k}={v}" for k, v in zip(keys, cell))
                             + "); the report averages seeds only")
    duplicated = df.duplicated([*keys, "seed"], keep=False)
    if duplicated.any():
        row = df[duplicated].iloc[0]
        raise ValueError(f"{where}: {int(duplicated.sum())} rows share one cell and seed, e.g. "
                         + ", ".join(f"{k}={row[k]}" for k in [*keys, "seed"]))


def seed_stats(df: pd.DataFrame, keys: list[str], where: str, free: Iterable[str] = ()) -> pd.DataFrame:
    """Per cell of `keys`: mean and sample sd (n - 1) of `value` over seeds, and the number of seeds."""
    check_cells(df, keys, where, free)
    return (df.groupby(keys, dropna=False)["value"].agg(mean="mean", sd="std", n_seeds="count")
            .reset_index())


def average_stats(df: pd.DataFrame, keys: list[str], pivot: str) -> pd.DataFrame:
    """Per cell of `keys`: the average over the target languages (every language but the pivot), taken per
    seed, then mean ± sd over seeds; n_langs = languages in the average."""
    targets = df[df["lang"] != pivot]
    if targets.empty:
        return pd.DataFrame(columns=[*keys, "mean", "sd", "n_seeds", "n_langs"])
    per_seed = targets.groupby([*keys, "seed"], dropna=False).agg(value=("value", "mean"), n_langs=("lang", "nunique"))
    return (per_seed.groupby(keys, dropna=False).agg(mean=("value", "mean"), sd=("value", "std"),
                                                      n_seeds=("value", "count"), n_langs=("n_langs", "max"))
            .reset_index())


def fmt_score(mean: float, sd: float, n_seeds: int) -> str:
    """'67.05 ± 0.83' over several seeds, '67.05' for one (no spread to show)."""
    if mean is None or pd.isna(mean):
        return DASH
    return f"{mean:.{DIGITS}f}" + (f" \u00b1 {sd:.{DIGITS}f}" if n_seeds > 1 and pd.notna(sd) else "")


def seeds_text(n: int) -> str:
    return f"{int(n)} seed{'s' if int(n) != 1 else ''}"


def score_cell(stats: Mapping | None, chance: float | None = None, extra: str = "") -> dict | str:
    """A table cell: mean ± sd, and under it the seed count, `extra` (e.g. the alpha chosen) and a flag when
    the mean is below chance."""
    if stats is None:
        return DASH
    sub = [seeds_text(stats["n_seeds"])]
    if extra:
        sub.append(extra)
    if chance is not None and stats["mean"] < chance:
        sub.append(f"below chance ({chance:.1f})")
    return {"text": fmt_score(stats["mean"], stats["sd"], stats["n_seeds"]), "sub": " \u00b7 ".join(sub)}


def window_drop(large: float, small: float) -> float:
    """Liu et al. Figure 6b: the drop from the largest to the smallest window, in percent of the largest
    window's accuracy ((large - small) / large * 100; negative = the small window transfers better)."""
    return (large - small) / large * 100


# ---------------------------------------------------------------------------------------------- labels and settings

def lang_columns(langs: Iterable[str], pivot: str) -> tuple[list[str], list]:
    """The pivot first (marked: the fine-tuning language), then the others in order; and their headers."""
    langs = sorted(set(langs), key=lambda lang: (lang != pivot, lang))
    header = [{"text": lang, "sub": "fine-tuning language"} if lang == pivot else lang for lang in langs]
    return langs, header


def freeze_cell(freeze: int) -> dict:
    """k, and under it what k froze while fine-tuning."""
    freeze = int(freeze)
    if freeze < 0:
        frozen = "static vectors frozen"
    else:
        frozen = "nothing frozen" if freeze == 0 else f"embeddings + layers 1\u2013{freeze} frozen"
    return {"text": str(freeze), "sub": frozen}


def variant_label(train_transform: str, transform: str, layer) -> str:
    """How the vectors were treated: none, zero-mean (in fine-tuning and test) or MDS (test only)."""
    at = f", layer {int(layer)}" if pd.notna(layer) and int(layer) >= 0 else ""
    known = {("none", "none"): "none", ("zero_mean", "zero_mean"): f"zero-mean (fine-tuning and test{at})",
             ("none", "mds"): f"MDS (test{at})", ("none", "rotation-word"): f"word-aligned rotation (test{at})",
             ("none", "rotation-sentence"): f"sentence-aligned rotation (test{at})"}
    return known.get((train_transform, transform), f"fine-tuning {train_transform}, test {transform}{at}")


def selection_label(selection: str) -> str:
    return f"{selection}: {SELECTION_LABELS[selection]}" if selection in SELECTION_LABELS else str(selection)


def selections(df: pd.DataFrame) -> list[str]:
    """The checkpoint selections in the table, the papers' (English dev) first."""
    return sorted(df["selection"].dropna().unique(), key=lambda s: (s != PAPER_SELECTION, str(s)))


def _group_rows(df: pd.DataFrame, key: tuple) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for column, value in zip(MODEL_KEYS, key):
        mask &= (df[column] == value).to_numpy()
    return df[mask]


def _per_model(df: pd.DataFrame, column: str) -> str:
    """'768' when one value; 'GloVe 300, BERT 768' when it differs by model; per trained model when it differs
    within one."""
    if column not in df or df[column].isna().all():
        return ""
    values = df[column].dropna().unique()
    if len(values) == 1:
        return fmt_setting(column, values[0])
    per_model = df.groupby("model")[column]
    if (per_model.nunique() <= 1).all():
        first = per_model.first()
        return ", ".join(f"{figures.model_label(m)} {fmt_setting(column, first[m])}"
                         for m in figures.ordered_models(first.index) if pd.notna(first[m]))
    parts = []
    for key in model_groups(df):
        vals = sorted(_group_rows(df, key)[column].dropna().unique().tolist(), key=str)
        parts.append(f"{model_name(dict(zip(MODEL_KEYS, key)))} {'/'.join(fmt_setting(column, v) for v in vals)}")
    return ", ".join(parts)


def shown_line(df: pd.DataFrame, choices: Iterable[str] = ()) -> str:
    """The settings behind a table or figure: the section's choices, then what the rows recorded (freeze,
    seeds, the pretrained models' dimension, data source, vocabulary, pretraining seed)."""
    parts = list(choices)
    for column, label in (("dim", "dim"), ("source", "data"), ("vocab", "vocabulary"),
                          ("pretrain_seed", "pretraining seed")):
        value = _per_model(df, column)
        if value:
            parts.append(f"{label} {value}")
    seeds = sorted(df["seed"].dropna().unique().tolist()) if "seed" in df else []
    if seeds:
        parts.append(("fine-tuning seed " if len(seeds) == 1 else "mean \u00b1 sd over fine-tuning seeds ")
                     + ", ".join(str(int(s)) for s in seeds))
    return "; ".join(parts)


def finetune_blocks(df: pd.DataFrame, tasks: Iterable[str]) -> list[Block]:
    """The fine-tuning hyper-parameters the rows recorded (finetune_settings), one settings table per task and
    distinct block, naming the models that used it."""
    blocks = []
    for task in tasks:
        rows = df[df["task"] == task]
        for value, part in rows.groupby("finetune_settings", sort=False):
            models = ", ".join(model_name(dict(zip(MODEL_KEYS, key))) for key in model_groups(part))
            pairs = flatten(recorded_json(value)) or [(DASH, "none recorded")]
            # the test-time settings the scoring recorded: the zero-mean / MDS means and alpha grid, NER repair
            if "shift_settings" in part:
                shifts = part[["train_transform", "shift_settings"]].dropna().drop_duplicates()
                for name, shift in shifts.itertuples(index=False):
                    label = "zero-mean" if name == "zero_mean" else "MDS"
                    pairs += flatten(recorded_json(shift), f"{label} (test time).")
            if "ner_repair" in part and part["ner_repair"].notna().any():
                pairs += [("NER span repair", ", ".join(str(v) for v in part["ner_repair"].dropna().unique()))]
            blocks.append(settings_block(f"{TASK_LABELS.get(task, task)} fine-tuning: {models}", pairs))
    return [group(blocks)] if blocks else []


def _num_layers(df: pd.DataFrame) -> int | None:
    """The encoder's layer count as its hyper-parameters recorded it (our BERTs), else None."""
    if "hparams" not in df or df.empty:
        return None
    value = recorded_json(df["hparams"].iloc[0]).get("num_layers")
    return int(value) if value is not None else None


def _suptitle(fig: Figure, title: str, settings: str) -> None:
    """The title and the settings line, wrapped to the figure's width (a PNG lifted out still says what it shows)."""
    width = max(60, int(fig.get_figwidth() * 14))
    fig.suptitle(f"{title}\n{textwrap.fill(settings, width)}" if settings else title, fontsize=10)


def _check_table(ctx: ReportContext) -> tuple[pd.DataFrame, str]:
    where = ctx.table_paths[TABLE]
    df = ctx.tables[TABLE]
    require_columns(df, REQUIRED, where)
    if df.empty:
        raise ValueError(f"{where}: the transfer table has no rows")
    return df, where


def _stats_index(stats: pd.DataFrame, keys: list[str]) -> dict:
    return {tuple(r[k] for k in keys): r for r in stats.to_dict("records")}


# ---------------------------------------------------------------------------------------------- 1. XNLI by model

def xnli_grid(df: pd.DataFrame, selection: str) -> pd.DataFrame:
    """The model comparison of Liu et al. Figures 2 and 4: XNLI test accuracy without any transform, for one
    checkpoint selection, each model at its smallest freeze (static models -1, BERTs 0 when fine-tuned whole)."""
    rows = df[(df["task"] == "xnli") & (df["metric"] == "accuracy") & (df["split"] == "test")
              & (df["transform"] == "none") & (df["train_transform"] == "none") & df["selected"].astype(bool)
              & (df["selection"] == selection)]
    if rows.empty:
        return rows
    smallest = rows.groupby(MODEL_KEYS)["freeze"].transform("min")
    return rows[rows["freeze"] == smallest]


def xnli_table(grid: pd.DataFrame, pivot: str, where: str, title: str, note: str) -> Block:
    """Rows model x size x window, columns languages (the pivot first) and their average without the pivot."""
    langs, header = lang_columns(grid["lang"], pivot)
    stats = _stats_index(seed_stats(grid, [*MODEL_KEYS, "lang"], where), [*MODEL_KEYS, "lang"])
    averages = _stats_index(average_stats(grid, MODEL_KEYS, pivot), MODEL_KEYS)
    chance = CHANCE[("xnli", "accuracy")]
    rows = []
    for key in model_groups(grid):
        freeze = _group_rows(grid, key)["freeze"].iloc[0]
        row = [figures.model_label(key[0]) if key[1] else key[0], size_label(key[1]) if key[1] else DASH,
               str(int(key[2])) if key[1] else DASH, freeze_cell(freeze)]
        row += [score_cell(stats.get((*key, lang)), chance) for lang in langs]
        rows.append(row + [score_cell(averages.get(key), chance)])
    columns = ["model", "size (sentences/lang)", "window", "frozen (k)", *header, f"avg w/o {pivot}"]
    return table_block(title, columns, rows, note=note, numeric=range(4, len(columns)))


def xnli_by_model_figure(grid: pd.DataFrame, size: int, pivot: str, settings: str) -> Figure:
    """Liu et al. Figures 2 and 4 for one data size: a panel per window, x = language (the pivot shaded), a bar
    per model (GloVe, Word2Vec, BERT; Hugging Face checkpoints as reference bars), sd as error bars, chance
    dashed."""
    ours = grid[grid["size"] == size]
    reference = grid[grid["size"] == 0]
    windows = sorted(ours["window"].unique(), reverse=True)
    langs, _ = lang_columns(grid["lang"], pivot)
    n_panels = max(1, len(windows))
    keys = [k for k in model_groups(ours) if k[1] == size]
    models = list(dict.fromkeys(k[0] for k in keys)) + [k[0] for k in model_groups(reference)]
    width = float(np.clip(2.5 + 0.35 * max(1, len(langs)) * max(1, len(models)), 7, 15))
    fig = Figure(figsize=(width, 0.9 + 2.6 * n_panels), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_panels, 1, sharex=True, sharey=True, squeeze=False)[:, 0])
    chance = CHANCE[("xnli", "accuracy")]
    if not windows:
        axes[0].text(0.5, 0.5, f"no XNLI results for models trained on {size_label(size)} sentences per language",
                     ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
    summary = (grid.groupby([*MODEL_KEYS, "lang"])["value"].agg(["mean", "std"]).reset_index()
               if len(grid) else None)
    bar = min(0.8 / max(1, len(models)), 0.3)
    x = np.arange(len(langs))
    for ax, window in zip(axes, windows):
        panel = [(m, size, window) for m in dict.fromkeys(k[0] for k in keys)] + model_groups(reference)
        for j, key in enumerate(panel):
            cell = _group_rows(summary, key).set_index("lang").reindex(langs)
            offsets = x - bar * len(panel) / 2 + bar * (j + 0.5)
            label = model_name(dict(zip(MODEL_KEYS, key))) if key[1] == 0 else figures.model_label(key[0])
            spread = cell["std"].to_numpy() if cell["std"].notna().any() else None
            ax.bar(offsets, cell["mean"], bar * 0.92, yerr=spread, capsize=2, error_kw=dict(elinewidth=0.8),
                   color=figures.PALETTE[j % len(figures.PALETTE)], hatch="//" if key[1] == 0 else "",
                   edgecolor="white", label=label + (" (reference)" if key[1] == 0 else ""))
        if pivot in langs:
            ax.axvspan(langs.index(pivot) - 0.5, langs.index(pivot) + 0.5, color="0.92", zorder=0)
        ax.axhline(chance, zorder=3, **figures.CHANCE_STYLE)
        ax.set_title(f"context window {window}", fontsize=10, loc="left")
        ax.set_ylabel("XNLI accuracy (%)")
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[-1].set_xticks(x, [f"{lang}\n(fine-tuning)" if lang == pivot else lang for lang in langs])
    handles, _ = axes[0].get_legend_handles_labels()
    handles.append(Line2D([], [], label="chance (1/3)", **figures.CHANCE_STYLE))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 3), fontsize=9, frameon=False)
    _suptitle(fig, f"XNLI zero-shot accuracy by model, {size_label(size)} sentences per language", settings)
    return fig


@register_section("transfer_xnli", "Zero-shot transfer: XNLI by model, data size and window", required=(TABLE,),
                  figures=transfer_figures, results={TABLE: RESULTS})
def render_xnli(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    pivot = ctx.pivot
    blocks = [text(DESCRIPTION, "This section follows Liu et al. (2020) Figures 2 and 4: XNLI test accuracy of "
                   "every model, without transforms, each at its smallest number of frozen layers (the static "
                   "models' vectors are always frozen; their classifier is named in the fine-tuning settings "
                   "below). English is the fine-tuning language; the other columns are zero-shot.")]
    xnli = df[df["task"] == "xnli"]
    if xnli.empty:
        blocks.append(empty_block("XNLI", f"The transfer table ({where}) has no XNLI rows: this run does not "
                                          "fine-tune on XNLI."))
    chosen = selections(xnli)[0] if len(xnli) else PAPER_SELECTION
    for selection in selections(xnli):
        grid = xnli_grid(df, selection)
        choices = ["test split", f"checkpoint selection {selection_label(selection)}", "no transform",
                   "each model at its smallest freeze"]
        blocks.append(xnli_table(grid, pivot, where, f"XNLI test accuracy (%) by model, selection {selection}",
                                 f"Settings: {shown_line(grid, choices)}. Hugging Face checkpoints have no data "
                                 "size or window of ours."))
    grid = xnli_grid(df, chosen) if len(xnli) else xnli
    line = shown_line(grid, ["test split", f"selection {chosen}", "no transform", "smallest freeze"])
    for size in figure_sizes(ctx.config):
        fig = xnli_by_model_figure(grid, size, pivot, line)
        blocks.append(ctx.figure(f"transfer_xnli_{size}", fig, XNLI_CAPTION, line,
                                 f"XNLI by model, {size_label(size)} sentences per language"))
    blocks += finetune_blocks(df, ["xnli"])
    return blocks


# ---------------------------------------------------------------------------------------------- 2. window effect

def window_effect(grid: pd.DataFrame, pivot: str, where: str) -> pd.DataFrame:
    """Per model x size x language (and 'avg' over the targets): accuracy at the largest and the smallest
    window (seed means) and the drop in percent (`window_drop`). Hugging Face checkpoints have no window."""
    columns = ["model", "size", "lang", "large", "small", "acc_large", "acc_small", "drop"]
    ours = grid[grid["size"] > 0]
    if ours.empty:
        return pd.DataFrame(columns=columns)
    stats = seed_stats(ours, [*MODEL_KEYS, "lang"], where)
    averages = average_stats(ours, MODEL_KEYS, pivot).assign(lang=f"avg w/o {pivot}")
    both = pd.concat([stats, averages[stats.columns]], ignore_index=True) if len(averages) else stats
    rows = []
    for (model, size, lang), cell in both.groupby(["model", "size", "lang"], sort=False):
        windows = cell.set_index("window")["mean"]
        if len(windows) < 2:
            continue
        large, small = int(windows.index.max()), int(windows.index.min())
        rows.append(dict(model=model, size=size, lang=lang, large=large, small=small, acc_large=windows[large],
                         acc_small=windows[small], drop=window_drop(windows[large], windows[small])))
    return pd.DataFrame(rows, columns=columns)


def window_table(effect: pd.DataFrame, pivot: str, title: str, note: str) -> Block:
    langs, header = lang_columns([lang for lang in effect["lang"].unique() if not lang.startswith("avg")], pivot)
    average = f"avg w/o {pivot}"
    rows = []
    order = {m: i for i, m in enumerate(figures.ordered_models(effect["model"]))}
    for (model, size), cell in sorted(effect.groupby(["model", "size"]), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        cell = cell.set_index("lang")
        first = cell.iloc[0]
        row = [figures.model_label(model), size_label(size), f"{int(first['large'])} \u2192 {int(first['small'])}"]
        for lang in [*langs, average]:
            if lang in cell.index:
                r = cell.loc[lang]
                row.append({"text": f"{r['drop']:+.1f} %",
                            "sub": f"{r['acc_large']:.{DIGITS}f} \u2192 {r['acc_small']:.{DIGITS}f}"})
            else:
                row.append(DASH)
        rows.append(row)
    columns = ["model", "size (sentences/lang)", "window large \u2192 small", *header, average]
    return table_block(title, columns, rows, note=note, numeric=range(3, len(columns)))


def window_figure(effect: pd.DataFrame, pivot: str, settings: str) -> Figure:
    """Liu et al. Figure 6b: the drop (%) from the largest to the smallest window, a panel per data size,
    x = language, a bar per model."""
    sizes = sorted(effect["size"].unique())
    langs, _ = lang_columns([lang for lang in effect["lang"].unique() if not lang.startswith("avg")], pivot)
    models = figures.ordered_models(effect["model"])
    fig = Figure(figsize=(float(np.clip(2.5 + 0.35 * max(1, len(langs)) * max(1, len(models)), 7, 15)),
                          0.9 + 2.6 * max(1, len(sizes))), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(max(1, len(sizes)), 1, sharex=True, squeeze=False)[:, 0])
    if effect.empty:
        axes[0].text(0.5, 0.5, "no window effect to show: the XNLI rows have one context window per model "
                     "(or none)", ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
    bar = min(0.8 / max(1, len(models)), 0.3)
    x = np.arange(len(langs))
    for ax, size in zip(axes, sizes):
        for j, model in enumerate(models):
            cell = effect[(effect["size"] == size) & (effect["model"] == model)].set_index("lang").reindex(langs)
            ax.bar(x - bar * len(models) / 2 + bar * (j + 0.5), cell["drop"], bar * 0.92,
                   color=figures.PALETTE[j % len(figures.PALETTE)], label=figures.model_label(model))
        windows = effect[effect["size"] == size]
        ax.set_title(f"{size_label(size)} sentences/language: window {int(windows['large'].max())} \u2192 "
                     f"{int(windows['small'].min())}", fontsize=10, loc="left")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_ylabel("accuracy drop (%)")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    if len(effect):
        axes[-1].set_xticks(x, [f"{lang}\n(fine-tuning)" if lang == pivot else lang for lang in langs])
        handles, _ = axes[0].get_legend_handles_labels()
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9, frameon=False)
    _suptitle(fig, "XNLI accuracy drop from the largest to the smallest context window", settings)
    return fig


@register_section("transfer_window", "Zero-shot transfer: effect of the context window on XNLI", required=(TABLE,))
def render_window(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    pivot = ctx.pivot
    xnli = df[df["task"] == "xnli"]
    chosen = selections(xnli)[0] if len(xnli) else PAPER_SELECTION
    grid = xnli_grid(df, chosen) if len(xnli) else xnli
    effect = window_effect(grid, pivot, where)
    line = shown_line(grid, ["XNLI test accuracy", f"selection {chosen}", "no transform", "smallest freeze"])
    blocks = [text("Liu et al. (2020) Figure 6: the same models pretrained with the largest and the smallest "
                   "context window. Drop = (accuracy at the largest window \u2212 accuracy at the smallest) / "
                   "accuracy at the largest \u00d7 100, from the seed means; a negative drop means the small "
                   "window transfers better. Under each drop: the two accuracies.")]
    if effect.empty:
        blocks.append(empty_block("Window effect", "No model has XNLI results at two context windows in this "
                                                   "run."))
    else:
        blocks.append(window_table(effect, pivot, "XNLI accuracy drop (%) from the largest to the smallest window",
                                   f"Settings: {line}."))
    blocks.append(ctx.figure("transfer_xnli_window_effect", window_figure(effect, pivot, line), WINDOW_CAPTION,
                             line, "XNLI window effect"))
    return blocks


# ---------------------------------------------------------------------------------------------- 3. XNLI with MDS

def _chosen_alpha(rows: pd.DataFrame) -> str:
    """The alpha each seed chose on dev ('1.5' when they agree; else per seed, in seed order)."""
    values = rows.sort_values("seed")["alpha"].tolist()
    if not values:
        return DASH
    if len(set(values)) == 1:
        return fmt_setting("alpha", values[0])
    return " / ".join(fmt_setting("alpha", v) for v in values)


def variant_rows(part: pd.DataFrame) -> list[tuple[tuple, pd.DataFrame]]:
    """The (freeze, train_transform, transform, layer) variants of one model's rows, in the papers' order:
    by freeze, then none, MDS, zero-mean, anything else."""
    rank = {("none", "none"): 0, ("none", "mds"): 1, ("zero_mean", "zero_mean"): 2}
    keys = part[["freeze", "train_transform", "transform", "layer"]].drop_duplicates()
    ordered = sorted(keys.itertuples(index=False),
                     key=lambda r: (r[0], rank.get((r[1], r[2]), 3), r[1], r[2], r[3]))
    out = []
    for freeze, train_transform, transform, layer in ordered:
        mask = ((part["freeze"] == freeze) & (part["train_transform"] == train_transform)
                & (part["transform"] == transform) & (part["layer"] == layer))
        out.append(((freeze, train_transform, transform, layer), part[mask]))
    return out


def reported_rows(df: pd.DataFrame, task: str, metric: str, selection: str) -> pd.DataFrame:
    """Test rows of one task, metric and checkpoint selection as reported: MDS at the alpha chosen on dev
    (selected), every other transform as it is."""
    return df[(df["task"] == task) & (df["metric"] == metric) & (df["split"] == "test")
              & (df["selection"] == selection) & df["selected"].astype(bool)]


def mds_table(rows: pd.DataFrame, pivot: str, where: str, title: str, note: str) -> Block:
    """Liu et al. Table 4: per fine-tuned encoder, 'fine-tune all layers' (k = 0), 'fine-tune last n-k layers'
    (k > 0), '+ MDS' (alpha chosen on dev), '+ zero-mean', and the chosen alpha; languages and the average
    without the pivot as columns."""
    keys = [*MODEL_KEYS, "freeze", "train_transform", "transform", "layer"]
    langs, header = lang_columns(rows["lang"], pivot)
    stats = _stats_index(seed_stats(rows, [*keys, "lang"], where, free=("alpha",)), [*keys, "lang"])
    averages = _stats_index(average_stats(rows, keys, pivot), keys)
    chance = CHANCE[("xnli", "accuracy")]
    table = []
    for key in model_groups(rows):
        part = _group_rows(rows, key)
        n_layers = _num_layers(part)
        name = model_name(dict(zip(MODEL_KEYS, key)))
        for variant, cells in variant_rows(part):
            freeze, train_transform, transform, layer = variant
            if (train_transform, transform) == ("none", "none"):
                label = ("fine-tune all layers" if freeze == 0 else
                         f"fine-tune last n\u2212k layers (k = {int(freeze)}"
                         + (f", n = {n_layers})" if n_layers else ")"))
            elif (train_transform, transform) == ("none", "mds"):
                label = "+ MDS"
            elif (train_transform, transform) == ("zero_mean", "zero_mean"):
                label = "+ zero-mean"
            else:
                label = variant_label(train_transform, transform, layer)
            full = (*key, *variant)
            table.append([name, label, freeze_cell(freeze), fmt_setting("layer", layer) if layer >= 0
                          else DASH] + [score_cell(stats.get((*full, lang)), chance) for lang in langs]
                         + [score_cell(averages.get(full), chance)])
            if transform == "mds":
                table.append([name, "chosen \u03b1 (on dev)", freeze_cell(freeze),
                              fmt_setting("layer", layer)]
                             + [_chosen_alpha(cells[cells["lang"] == lang]) for lang in langs] + [DASH])
    columns = ["model", "", "frozen (k)", "layer", *header, f"avg w/o {pivot}"]
    return table_block(title, columns, table, note=note, numeric=range(4, len(columns)))


def published_ours(df: pd.DataFrame) -> pd.DataFrame:
    """Our rows that published numbers are compared with: test split, MDS at its chosen alpha, fine-tuned
    encoders only (freeze >= 0: the papers' models are BERTs)."""
    return df[(df["split"] == "test") & df["selected"].astype(bool) & (df["freeze"] >= 0)]


@register_section("transfer_mds", "Zero-shot transfer: XNLI with MDS and zero-mean", required=(TABLE,))
def render_mds(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    pivot = ctx.pivot
    encoders = df[(df["task"] == "xnli") & (df["freeze"] >= 0)]
    blocks = [text("Liu et al. (2020, arXiv:2004.09205) Table 4: a BERT fine-tuned on English MultiNLI with all "
                   "layers trained (k = 0) or with the embeddings and layers 1..k frozen; at test time MDS adds "
                   "\u03b1 (R_en \u2212 R_xx) to layer l, with \u03b1 chosen per language on that language's XNLI "
                   "dev split (row 'chosen \u03b1'; one value per seed when the seeds chose differently) and then "
                   "applied to its test split. Zero-mean subtracts each language's mean at layer l while "
                   "fine-tuning on English and at test time. Means of language: MDS from the fine-tuned model, "
                   "zero-mean from the pretrained model, on the run's corpus.")]
    if encoders.empty:
        blocks.append(empty_block("XNLI with MDS", f"The transfer table ({where}) has no XNLI rows of a fine-tuned "
                                                   "encoder."))
    for selection in selections(encoders):
        rows = reported_rows(encoders, "xnli", "accuracy", selection)
        blocks.append(mds_table(rows, pivot, where, f"XNLI test accuracy (%) with MDS and zero-mean, selection "
                                                    f"{selection}",
                                f"Settings: {shown_line(rows, ['test split', selection_label(selection)])}."))
    if len(encoders):
        main = selections(encoders)[0]
        ours = published_ours(df)
        ours = ours[ours["selection"] == main]
        blocks += ctx.published_blocks("transfer_mds", ours, Matching(
            identity=IDENTITY, defaults={"freeze": int(ours["freeze"].max()) if len(ours) else 0,
                                          "selection": main}))
    return blocks


# ---------------------------------------------------------------------------------------------- 4-5. tagging, NER

def variant_table(rows: pd.DataFrame, task: str, metric: str, pivot: str, where: str, title: str,
                  note: str) -> Block:
    """Rows model x freeze x variant (none / zero-mean / MDS at its layer), columns languages and the average
    over the target languages; the alpha chosen on dev under each MDS number."""
    keys = [*MODEL_KEYS, "freeze", "train_transform", "transform", "layer"]
    langs, header = lang_columns(rows["lang"], pivot)
    stats = _stats_index(seed_stats(rows, [*keys, "lang"], where, free=("alpha",)), [*keys, "lang"])
    averages = _stats_index(average_stats(rows, keys, pivot), keys)
    chance = CHANCE.get((task, metric))
    table = []
    for key in model_groups(rows):
        part = _group_rows(rows, key)
        for variant, cells in variant_rows(part):
            freeze, train_transform, transform, layer = variant
            full = (*key, *variant)
            line = [model_name(dict(zip(MODEL_KEYS, key))), freeze_cell(freeze),
                    variant_label(train_transform, transform, layer)]
            for lang in langs:
                extra = (f"\u03b1 {_chosen_alpha(cells[cells['lang'] == lang])}"
                         if transform == "mds" and lang != pivot else "")
                line.append(score_cell(stats.get((*full, lang)), chance, extra))
            table.append(line + [score_cell(averages.get(full), chance)])
    columns = ["model", "frozen (k)", "vectors", *header, f"avg w/o {pivot}"]
    return table_block(title, columns, table, note=note, numeric=range(3, len(columns)))


def _task_tables(ctx: ReportContext, df: pd.DataFrame, where: str, task: str, metrics: Iterable[str]) -> list[Block]:
    rows = df[df["task"] == task]
    if rows.empty:
        return [empty_block(TASK_LABELS[task], f"The transfer table ({where}) has no {TASK_LABELS[task]} rows: "
                                               "this run does not fine-tune this task.")]
    blocks = []
    for selection in selections(rows):
        for metric in metrics:
            shown = reported_rows(rows, task, metric, selection)
            if shown.empty:
                continue
            choices = ["test split", selection_label(selection)]
            blocks.append(variant_table(shown, task, metric, ctx.pivot, where,
                                        f"{TASK_LABELS[task]}: {METRIC_LABELS.get(metric, metric)} (%), "
                                        f"selection {selection}",
                                        f"Settings: {shown_line(shown, choices)}. Under each MDS number: the "
                                        "\u03b1 chosen on that language's dev split."))
    return blocks


@register_section("transfer_ud", "Zero-shot transfer: UD POS tagging and dependency parsing", required=(TABLE,))
def render_ud(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    blocks = [text("Liu et al. (2020, arXiv:2010.10041) \u00a75: a BERT fine-tuned on English UD, tested on the "
                   "other languages' treebanks; without a transform, with zero-mean (in fine-tuning and at test "
                   "time) and with MDS (at test time, \u03b1 chosen on each language's dev split) at layer l. POS: "
                   "UPOS accuracy over words (each word labelled on its first subword). Parsing: a biaffine parser "
                   "(Dozat & Manning) with maximum-spanning-tree decoding, UAS and LAS with the CoNLL 2018 shared "
                   "task's semantics (multiword tokens expanded, punctuation scored, relation subtypes ignored). "
                   "The paper prints its Tables 4 and 5 without numbers in the text copy we hold, so no published "
                   "numbers stand beside these.")]
    blocks += _task_tables(ctx, df, where, "pos", ["upos"])
    blocks += _task_tables(ctx, df, where, "parsing", ["uas", "las"])
    blocks += finetune_blocks(df, [t for t in ("pos", "parsing") if (df["task"] == t).any()])
    return blocks


@register_section("transfer_ner", "Zero-shot transfer: WikiAnn NER", required=(TABLE,))
def render_ner(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    blocks = [text("Named-entity recognition on WikiAnn (IOB2 tags, one label per word on its first subword), "
                   "fine-tuned on English and tested on the other languages; span F1 with seqeval (precision and "
                   "recall in the full table). Beside ours: Conneau et al. (2020) Table 1, Default row, for XNLI, "
                   "NER and parsing in fr, ru and zh \u2014 a bilingual MLM trained per language pair, not one "
                   "multilingual model, so its numbers are a reference, not the same setting.")]
    blocks += _task_tables(ctx, df, where, "ner", ["f1"])
    blocks += finetune_blocks(df, ["ner"] if (df["task"] == "ner").any() else [])
    ours = published_ours(df)
    if len(ours):
        main = selections(ours)[0]
        ours = ours[ours["selection"] == main]
        blocks += ctx.published_blocks("transfer_bilingual_mlm", ours, Matching(
            identity=IDENTITY, defaults={"selection": main}))
    return blocks


# ---------------------------------------------------------------------------------------------- 6. alpha on dev

def alpha_curves(df: pd.DataFrame, where: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The MDS dev curves (main metric per task, every selection): mean ± sd over seeds per alpha, and the
    alpha each seed chose on dev (selected)."""
    main = df["metric"] == df["task"].map(MAIN_METRIC)
    dev = df[(df["split"] == "dev") & (df["transform"] == "mds") & main]
    keys = ["task", "metric", *MODEL_KEYS, "selection", "freeze", "train_transform", "layer", "lang"]
    curves = seed_stats(dev, [*keys, "alpha"], where, free=("selected",))
    chosen = dev[dev["selected"].astype(bool)][[*keys, "seed", "alpha"]]
    return curves, chosen


def alpha_table(curves: pd.DataFrame, chosen: pd.DataFrame, test: pd.DataFrame, where: str, title: str) -> Block:
    """Rows task x model x freeze x layer x language, a column per alpha (dev score, the chosen alpha marked),
    then the test score at the chosen alpha."""
    alphas = sorted(curves["alpha"].unique())
    keys = ["task", "metric", *MODEL_KEYS, "selection", "freeze", "train_transform", "layer", "lang"]
    test_stats = _stats_index(seed_stats(test, keys, where, free=("alpha",)), keys) if len(test) else {}
    rows = []
    cells = sorted(curves.groupby(keys, sort=True), key=lambda kv: TASK_ORDER.index(kv[0][0])
                   if kv[0][0] in TASK_ORDER else len(TASK_ORDER))
    for cell_key, cell in cells:
        picked = chosen
        for column, value in zip(keys, cell_key):
            picked = picked[picked[column] == value]
        by_alpha = cell.set_index("alpha")
        task, metric = cell_key[0], cell_key[1]
        key = dict(zip(keys, cell_key))
        line = [TASK_LABELS.get(task, task), METRIC_LABELS.get(metric, metric), model_name(key),
                fmt_setting("freeze", key["freeze"]), fmt_setting("layer", key["layer"]), key["lang"]]
        for alpha in alphas:
            if alpha not in by_alpha.index:
                line.append(DASH)
                continue
            r = by_alpha.loc[alpha]
            n_chose = int((picked["alpha"] == alpha).sum())
            mark = f"\u2605 chosen by {n_chose} of {int(r['n_seeds'])} seeds" if n_chose else seeds_text(r["n_seeds"])
            line.append({"text": fmt_score(r["mean"], r["sd"], r["n_seeds"]), "sub": mark})
        line.append(_chosen_alpha(picked))
        line.append(score_cell(test_stats.get(cell_key)))
        rows.append(line)
    columns = (["task", "metric", "model", "frozen (k)", "layer", "language"]
               + [f"\u03b1 = {fmt_setting('alpha', a)}" for a in alphas] + ["chosen \u03b1", "test at chosen \u03b1"])
    return table_block(title, columns, rows, collapsed=len(rows) > 40, numeric=range(6, len(columns)),
                       note="Dev scores (%) per \u03b1, mean \u00b1 sd over seeds; \u2605 marks the \u03b1 a seed "
                            "chose (its best dev score); the last column is the test score at the chosen \u03b1, "
                            "the number the tables above report. The test split plays no part in the choice.")


def alpha_figure(curves: pd.DataFrame, chosen: pd.DataFrame, settings: str) -> Figure:
    """A panel per task x model x freeze x layer; a line per language (dev score against alpha, mean over
    seeds), a star at each alpha a seed chose."""
    panel_keys = ["task", "metric", *MODEL_KEYS, "selection", "freeze", "train_transform", "layer"]
    panels = sorted(curves.groupby(panel_keys, sort=True), key=lambda kv: TASK_ORDER.index(kv[0][0])
                    if kv[0][0] in TASK_ORDER else len(TASK_ORDER)) if len(curves) else []
    ncols = min(max(1, len(panels)), 3)
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig = Figure(figsize=(4.2 * ncols + 1.6, 3.0 * nrows + 1.0), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    if not panels:
        axes[0].text(0.5, 0.5, "no MDS rows on a dev split in the transfer table", ha="center", va="center",
                     transform=axes[0].transAxes)
        axes[0].set_axis_off()
    langs = sorted(curves["lang"].unique()) if len(curves) else []
    styles = {lang: dict(color=figures.PALETTE[i % 7], marker=figures.MARKERS[i % len(figures.MARKERS)])
              for i, lang in enumerate(langs)}
    for ax, (key, part) in zip(axes, panels):
        info = dict(zip(panel_keys, key))
        for lang, line in part.groupby("lang"):
            line = line.sort_values("alpha")
            ax.plot(line["alpha"], line["mean"], markersize=3.5, linewidth=1.2, **styles[lang])
            picked = chosen
            for column, value in info.items():
                picked = picked[picked[column] == value]
            at = line.set_index("alpha")["mean"]
            for alpha in picked[picked["lang"] == lang]["alpha"].unique():
                ax.plot([alpha], [at.get(alpha, np.nan)], marker="*", markersize=13, color=styles[lang]["color"],
                        markeredgecolor="black", linestyle="")
        ax.set_title(f"{TASK_LABELS.get(info['task'], info['task'])} ({METRIC_LABELS.get(info['metric'])}), "
                     f"{model_name(info)}\nk = {int(info['freeze'])}, layer {int(info['layer'])}, "
                     f"selection {info['selection']}", fontsize=9)
        ax.set_xlabel("\u03b1")
        ax.set_ylabel("dev score (%)")
        ax.grid(alpha=0.3)
    for ax in axes[max(1, len(panels)):]:
        ax.set_visible(False)
    handles = [Line2D([], [], label=lang, markersize=4, **styles[lang]) for lang in langs]
    handles.append(Line2D([], [], marker="*", markersize=11, color="0.5", markeredgecolor="black", linestyle="",
                          label="\u03b1 chosen on dev"))
    fig.legend(handles=handles, loc="outside right center", fontsize=8, frameon=False)
    _suptitle(fig, "MDS: dev score against \u03b1 per language", settings)
    return fig


@register_section("transfer_alpha", "Zero-shot transfer: the MDS weight \u03b1 chosen on dev", required=(TABLE,))
def render_alpha(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    curves, chosen = alpha_curves(df, where)
    main = df["metric"] == df["task"].map(MAIN_METRIC)
    test = df[(df["split"] == "test") & (df["transform"] == "mds") & df["selected"].astype(bool) & main]
    mds = df[(df["transform"] == "mds") & main]
    line = shown_line(mds, ["MDS rows"])
    blocks = [text("\u03b1 is chosen per language on that language's dev split (the highest dev score over the "
                   "configured grid), then applied to its test split: the curves and the table show the dev scores "
                   "for every \u03b1, the star the choice. Metric: XNLI accuracy, UPOS accuracy, LAS, span F1.")]
    if curves.empty:
        blocks.append(empty_block("\u03b1 on dev", f"The transfer table ({where}) has no MDS rows on a dev split."))
    else:
        blocks.append(alpha_table(curves, chosen, test, where, "Dev score against \u03b1 and the \u03b1 chosen"))
    line = f"dev split; {line}"
    blocks.append(ctx.figure("transfer_mds_alpha", alpha_figure(curves, chosen, line), ALPHA_CAPTION, line,
                             "MDS \u03b1 chosen on dev"))
    blocks.append(full_table(df))
    return blocks


# ---------------------------------------------------------------------------------------------- all numbers

FULL_KEYS = ["task", "model", "size", "window", "freeze", "train_transform", "selection", "split", "transform",
             "layer", "alpha", "selected", "lang", "metric", "seed"]


def full_table(df: pd.DataFrame) -> Block:
    """Every row of the table with its settings (the JSON blocks are in Settings and the sections)."""
    keys = [k for k in FULL_KEYS if k in df]
    results = [r for r in RESULTS if r in df]
    df = df.sort_values(keys, kind="stable")
    rows = [[fmt_setting(k, r[k]) for k in keys] + [f"{r['value']:.{DIGITS}f}"]
            + ([fmt_count(r["n"])] if "n" in results else []) for r in df[keys + results].to_dict("records")]
    return table_block(f"Zero-shot transfer: all numbers ({len(rows)} rows)", keys + results, rows, collapsed=True,
                       numeric=range(len(keys), len(keys) + len(results)))
