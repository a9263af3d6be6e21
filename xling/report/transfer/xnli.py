"""Report section 1 of zero-shot transfer: XNLI by model, data size and window (Liu et al. 2020, Figures 2
and 4), a table per checkpoint selection and a figure per data size.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from xling.report import figures
from xling.report.blocks import DASH, MODEL_KEYS, Block, empty_block, model_groups, model_name, table_block, text
from xling.plan.figures import transfer_sizes
from xling.report.core import ReportContext, register_section
from xling.report.figures import size_label
from xling.report.transfer.common import (
    CHANCE,
    DESCRIPTION,
    PAPER_SELECTION,
    RESULTS,
    TABLE,
    XNLI_CAPTION,
    _check_table,
    _group_rows,
    _stats_index,
    _suptitle,
    average_stats,
    finetune_blocks,
    freeze_cell,
    lang_columns,
    score_cell,
    seed_stats,
    selection_label,
    selection_title,
    selections,
    shown_line,
)


def xnli_grid(df: pd.DataFrame, selection: str) -> pd.DataFrame:
    """The model comparison of Liu et al. Figures 2 and 4: XNLI test accuracy without any transform, for one
    checkpoint selection, each model at its smallest freeze (static models -1, BERTs 0 when fine-tuned whole)."""
    rows = df[
        (df["task"] == "xnli")
        & (df["metric"] == "accuracy")
        & (df["split"] == "test")
        & (df["transform"] == "none")
        & (df["train_transform"] == "none")
        & df["selected"].astype(bool)
        & (df["selection"] == selection)
    ]
    if rows.empty:
        return rows
    smallest = rows.groupby(MODEL_KEYS)["freeze"].transform("min")
    return rows[rows["freeze"] == smallest]


def xnli_table(grid: pd.DataFrame, pivot: str, where: str, title: str, note: str) -> Block:
    """Rows model x size x window, columns languages (the pivot first) and their average without the pivot."""
    langs, header = lang_columns(grid["lang"], pivot)
    stats = _stats_index(seed_stats(grid, [*MODEL_KEYS, "lang"], where), [*MODEL_KEYS, "lang"])
    averages = _stats_index(average_stats(grid, MODEL_KEYS, pivot), MODEL_KEYS)
    rows = []
    for key in model_groups(grid):
        freeze = _group_rows(grid, key)["freeze"].iloc[0]
        row = [
            figures.model_label(key[0]) if key[1] else key[0],
            size_label(key[1]) if key[1] else DASH,
            str(int(key[2])) if key[1] else DASH,
            freeze_cell(freeze),
        ]
        row += [score_cell(stats.get((*key, lang))) for lang in langs]
        rows.append(row + [score_cell(averages.get(key))])
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
        axes[0].text(
            0.5,
            0.5,
            f"no XNLI results for models trained on {size_label(size)} sentences per language",
            ha="center",
            va="center",
            transform=axes[0].transAxes,
        )
        axes[0].set_axis_off()
    summary = grid.groupby([*MODEL_KEYS, "lang"])["value"].agg(["mean", "std"]).reset_index() if len(grid) else None
    bar = min(0.8 / max(1, len(models)), 0.3)
    x = np.arange(len(langs))
    for ax, window in zip(axes, windows, strict=False):
        panel = [(m, size, window) for m in dict.fromkeys(k[0] for k in keys)] + model_groups(reference)
        for j, key in enumerate(panel):
            cell = _group_rows(summary, key).set_index("lang").reindex(langs)
            offsets = x - bar * len(panel) / 2 + bar * (j + 0.5)
            label = model_name(dict(zip(MODEL_KEYS, key, strict=True))) if key[1] == 0 else figures.model_label(key[0])
            spread = cell["std"].to_numpy() if cell["std"].notna().any() else None
            ax.bar(
                offsets,
                cell["mean"],
                bar * 0.92,
                yerr=spread,
                capsize=2,
                error_kw=dict(elinewidth=0.8),
                color=figures.PALETTE[j % len(figures.PALETTE)],
                hatch="//" if key[1] == 0 else "",
                edgecolor="white",
                label=label + (" (reference)" if key[1] == 0 else ""),
            )
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


@register_section(
    "transfer_xnli",
    "Zero-shot transfer: XNLI by model, data size and window",
    required=(TABLE,),
    results={TABLE: RESULTS},
)
def render_xnli(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    pivot = ctx.pivot
    blocks = [
        text(
            DESCRIPTION,
            "This section follows Liu et al. (2020) Figures 2 and 4: XNLI test accuracy of "
            "every model, without transforms, each at its smallest number of frozen layers (the static "
            "models' vectors are always frozen; their classifier is named in the fine-tuning settings "
            "below). English is the fine-tuning language; the other columns are zero-shot.",
        )
    ]
    xnli = df[df["task"] == "xnli"]
    if xnli.empty:
        blocks.append(
            empty_block("XNLI", f"The transfer table ({where}) has no XNLI rows: this run does not fine-tune on XNLI.")
        )
    chosen = selections(xnli)[0] if len(xnli) else PAPER_SELECTION
    for selection in selections(xnli):
        grid = xnli_grid(df, selection)
        choices = ["test split", selection_label(selection), "no transform", "each model at its smallest freeze"]
        blocks.append(
            xnli_table(
                grid,
                pivot,
                where,
                f"XNLI test accuracy (%) by model, {selection_title(selection)}",
                f"Settings: {shown_line(grid, choices)}. Hugging Face checkpoints have no data size or window of ours.",
            )
        )
    grid = xnli_grid(df, chosen) if len(xnli) else xnli
    line = shown_line(grid, ["test split", selection_label(chosen), "no transform", "smallest freeze"])
    for size in transfer_sizes(ctx.config):
        fig = xnli_by_model_figure(grid, size, pivot, line)
        blocks.append(
            ctx.figure(
                f"transfer_xnli_{size}",
                fig,
                XNLI_CAPTION,
                line,
                f"XNLI by model, {size_label(size)} sentences per language",
            )
        )
    blocks += finetune_blocks(df, ["xnli"])
    return blocks
