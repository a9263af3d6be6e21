"""Report section 2 of zero-shot transfer: the effect of the context window on XNLI (Liu et al. 2020,
Figure 6b), the drop from the largest to the smallest window.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from xling.report import figures
from xling.report.blocks import DASH, MODEL_KEYS, Block, empty_block, table_block, text
from xling.report.core import ReportContext, register_section
from xling.report.figures import size_label
from xling.report.flags import cell_reason, flagged_cell
from xling.report.transfer.common import (
    DIGITS,
    PAPER_SELECTION,
    TABLE,
    WINDOW_CAPTION,
    _check_table,
    _suptitle,
    average_stats,
    lang_columns,
    seed_stats,
    selection_label,
    selections,
    shown_line,
    window_drop,
)
from xling.report.transfer.xnli import xnli_grid


def window_effect(grid: pd.DataFrame, pivot: str, where: str) -> pd.DataFrame:
    """Per model x size x language (and 'avg' over the targets): accuracy at the largest and the smallest
    window (seed means) and the drop in percent (`window_drop`). Hugging Face checkpoints have no window."""
    columns = ["model", "size", "lang", "large", "small", "acc_large", "acc_small", "drop", "flag"]
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
        # a drop from or to a degenerate accuracy carries its reason, named by window
        flags = cell.set_index("window")["flag"] if "flag" in cell else pd.Series(dtype=object)
        reason = cell_reason(
            f"window {w}: {flags[w]}" for w in (large, small) if w in flags.index and isinstance(flags[w], str)
        )
        rows.append(
            dict(
                model=model,
                size=size,
                lang=lang,
                large=large,
                small=small,
                acc_large=windows[large],
                acc_small=windows[small],
                drop=window_drop(windows[large], windows[small]),
                flag=reason,
            )
        )
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
                reason = r["flag"] if isinstance(r.get("flag"), str) else None
                row.append(
                    flagged_cell(
                        f"{r['drop']:+.1f} %", reason, f"{r['acc_large']:.{DIGITS}f} \u2192 {r['acc_small']:.{DIGITS}f}"
                    )
                )
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
    fig = Figure(
        figsize=(
            float(np.clip(2.5 + 0.35 * max(1, len(langs)) * max(1, len(models)), 7, 15)),
            0.9 + 2.6 * max(1, len(sizes)),
        ),
        dpi=figures.DPI,
        layout="constrained",
    )
    axes = np.atleast_1d(fig.subplots(max(1, len(sizes)), 1, sharex=True, squeeze=False)[:, 0])
    if effect.empty:
        axes[0].text(
            0.5,
            0.5,
            "no window effect to show: the XNLI rows have one context window per model (or none)",
            ha="center",
            va="center",
            transform=axes[0].transAxes,
        )
        axes[0].set_axis_off()
    bar = min(0.8 / max(1, len(models)), 0.3)
    x = np.arange(len(langs))
    for ax, size in zip(axes, sizes, strict=False):
        for j, model in enumerate(models):
            cell = effect[(effect["size"] == size) & (effect["model"] == model)].set_index("lang").reindex(langs)
            bars = ax.bar(
                x - bar * len(models) / 2 + bar * (j + 0.5),
                cell["drop"],
                bar * 0.92,
                color=figures.PALETTE[j % len(figures.PALETTE)],
                label=figures.model_label(model),
            )
            for patch, reason in zip(bars, cell["flag"] if "flag" in cell else [], strict=False):
                if isinstance(reason, str):  # drawn from a degenerate accuracy: hatched, as the legend says
                    patch.set_hatch("xx")
                    patch.set_edgecolor("black")
        windows = effect[effect["size"] == size]
        ax.set_title(
            f"{size_label(size)} sentences/language: window {int(windows['large'].max())} \u2192 "
            f"{int(windows['small'].min())}",
            fontsize=10,
            loc="left",
        )
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_ylabel("accuracy drop (%)")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    if len(effect):
        axes[-1].set_xticks(x, [f"{lang}\n(fine-tuning)" if lang == pivot else lang for lang in langs])
        handles, _ = axes[0].get_legend_handles_labels()
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9, frameon=False)
    drawn = effect[~effect["lang"].astype(str).str.startswith("avg")]
    flagged = int(drawn["flag"].map(lambda f: isinstance(f, str)).sum()) if "flag" in drawn else 0
    degenerate = (
        (
            f"\nhatched: {flagged} of {len(drawn)} drops start or end at a degenerate accuracy "
            f"(\u2020 in the table), so they carry no window effect"
        )
        if flagged
        else ""
    )
    _suptitle(fig, "XNLI accuracy drop from the largest to the smallest context window" + degenerate, settings)
    return fig


@register_section("transfer_window", "Zero-shot transfer: effect of the context window on XNLI", required=(TABLE,))
def render_window(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    pivot = ctx.pivot
    xnli = df[df["task"] == "xnli"]
    chosen = selections(xnli)[0] if len(xnli) else PAPER_SELECTION
    grid = xnli_grid(df, chosen) if len(xnli) else xnli
    effect = window_effect(grid, pivot, where)
    line = shown_line(grid, ["XNLI test accuracy", selection_label(chosen), "no transform", "smallest freeze"])
    blocks = [
        text(
            "Liu et al. (2020) Figure 6: the same models pretrained with the largest and the smallest "
            "context window. Drop = (accuracy at the largest window \u2212 accuracy at the smallest) / "
            "accuracy at the largest \u00d7 100, from the seed means; a negative drop means the small "
            "window transfers better. Under each drop: the two accuracies."
        )
    ]
    if effect.empty:
        blocks.append(empty_block("Window effect", "No model has XNLI results at two context windows in this run."))
    else:
        blocks.append(
            window_table(
                effect, pivot, "XNLI accuracy drop (%) from the largest to the smallest window", f"Settings: {line}."
            )
        )
    blocks.append(
        ctx.figure(
            "transfer_xnli_window_effect",
            window_figure(effect, pivot, line),
            WINDOW_CAPTION,
            line,
            "XNLI window effect",
        )
    )
    return blocks
