"""Report section 6 of zero-shot transfer: the MDS weight alpha chosen on each language's dev split (its
curves and table), then every number of the transfer table.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from xling.report import figures
from xling.report.blocks import (
    DASH,
    MODEL_KEYS,
    Block,
    empty_block,
    fmt_count,
    fmt_setting,
    model_name,
    table_block,
    text,
)
from xling.report.core import ReportContext, register_section
from xling.report.transfer.common import (
    ALPHA_CAPTION,
    DIGITS,
    TASK_METRIC,
    METRIC_LABELS,
    RESULTS,
    TABLE,
    TASK_LABELS,
    TASK_ORDER,
    _check_table,
    _stats_index,
    _suptitle,
    fmt_score,
    score_cell,
    seed_stats,
    seeds_text,
    selection_label,
    shown_line,
)
from xling.report.transfer.mds import _chosen_alpha


def alpha_curves(df: pd.DataFrame, where: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The MDS dev curves (main metric per task, every selection): mean ± sd over seeds per alpha, and the
    alpha each seed chose on dev (selected)."""
    main = df["metric"] == df["task"].map(TASK_METRIC)
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
    cells = sorted(
        curves.groupby(keys, sort=True),
        key=lambda kv: TASK_ORDER.index(kv[0][0]) if kv[0][0] in TASK_ORDER else len(TASK_ORDER),
    )
    for cell_key, cell in cells:
        picked = chosen
        for column, value in zip(keys, cell_key, strict=True):
            picked = picked[picked[column] == value]
        by_alpha = cell.set_index("alpha")
        task, metric = cell_key[0], cell_key[1]
        key = dict(zip(keys, cell_key, strict=True))
        line = [
            f"{TASK_LABELS.get(task, task)}: {METRIC_LABELS.get(metric, metric)}",
            model_name(key),
            f"{fmt_setting('freeze', key['freeze'])} / {fmt_setting('layer', key['layer'])}",
            key["lang"],
        ]
        for alpha in alphas:
            if alpha not in by_alpha.index:
                line.append(DASH)
                continue
            r = by_alpha.loc[alpha]
            n_chose = int((picked["alpha"] == alpha).sum())
            n = int(r["n_seeds"])
            mark = f"\u2605 {n_chose} of {n} seeds" if n_chose and n > 1 else seeds_text(n) if n > 1 else ""
            shown = fmt_score(r["mean"], r["sd"], r["n_seeds"]) + (" \u2605" if n_chose and n == 1 else "")
            line.append({"text": shown, "sub": mark} if mark else shown)  # one seed: ★ beside its number, no count
        line.append(_chosen_alpha(picked))
        line.append(score_cell(test_stats.get(cell_key)))
        rows.append(line)
    columns = (
        ["task: metric", "model", "frozen (k) / layer", "language"]
        + [f"\u03b1 = {fmt_setting('alpha', a)}" for a in alphas]
        + ["chosen \u03b1", "test at chosen \u03b1"]
    )
    return table_block(
        title,
        columns,
        rows,
        numeric=range(4, len(columns)),
        wrap=(0, *range(4, 4 + len(alphas))),
        note="Dev scores (%) per \u03b1, mean \u00b1 sd over seeds; \u2605 marks the \u03b1 the seeds "
        "chose (their best dev score); the last column is the test score at the chosen \u03b1, "
        "the number the tables above report. The test split plays no part in the choice.",
    )


#: characters a panel's title line holds at 9 pt in a 3.2-inch panel
TITLE_CHARS = 30


def alpha_figure(curves: pd.DataFrame, chosen: pd.DataFrame, settings: str) -> Figure:
    """A panel per task x model x freeze x layer; a line per language (dev score against alpha, mean over
    seeds), a star at each alpha a seed chose."""
    panel_keys = ["task", "metric", *MODEL_KEYS, "selection", "freeze", "train_transform", "layer"]
    panels = (
        sorted(
            curves.groupby(panel_keys, sort=True),
            key=lambda kv: TASK_ORDER.index(kv[0][0]) if kv[0][0] in TASK_ORDER else len(TASK_ORDER),
        )
        if len(curves)
        else []
    )
    ncols = min(max(1, len(panels)), 4)  # four narrow panels a row: the section stays short at 100 % zoom
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig = Figure(figsize=(3.2 * ncols + 1.6, 2.8 * nrows + 1.0), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    if not panels:
        axes[0].text(
            0.5,
            0.5,
            "no MDS rows on a dev split in the transfer table",
            ha="center",
            va="center",
            transform=axes[0].transAxes,
        )
        axes[0].set_axis_off()
    langs = sorted(curves["lang"].unique()) if len(curves) else []
    styles = {
        lang: dict(color=figures.PALETTE[i % 7], marker=figures.MARKERS[i % len(figures.MARKERS)])
        for i, lang in enumerate(langs)
    }
    for ax, (key, part) in zip(axes, panels, strict=False):
        info = dict(zip(panel_keys, key, strict=True))
        for lang, line in part.groupby("lang"):
            line = line.sort_values("alpha")
            ax.plot(line["alpha"], line["mean"], markersize=3.5, linewidth=1.2, **styles[lang])
            picked = chosen
            for column, value in info.items():
                picked = picked[picked[column] == value]
            at = line.set_index("alpha")["mean"]
            for alpha in picked[picked["lang"] == lang]["alpha"].unique():
                ax.plot(
                    [alpha],
                    [at.get(alpha, np.nan)],
                    marker="*",
                    markersize=13,
                    color=styles[lang]["color"],
                    markeredgecolor="black",
                    linestyle="",
                )
        lines = [
            f"{TASK_LABELS.get(info['task'], info['task'])} ({METRIC_LABELS.get(info['metric'])})",
            f"{model_name(info)}, k = {int(info['freeze'])}, layer {int(info['layer'])},",
            selection_label(info["selection"]),
        ]
        # each line within its panel (TITLE_CHARS), not running into the next panel's title
        ax.set_title("\n".join(textwrap.fill(line, TITLE_CHARS) for line in lines), fontsize=9)
        ax.set_xlabel("\u03b1")
        ax.set_ylabel("dev score (%)")
        ax.grid(alpha=0.3)
    for ax in axes[max(1, len(panels)) :]:
        ax.set_visible(False)
    handles = [Line2D([], [], label=lang, markersize=4, **styles[lang]) for lang in langs]
    handles.append(
        Line2D(
            [],
            [],
            marker="*",
            markersize=11,
            color="0.5",
            markeredgecolor="black",
            linestyle="",
            label="\u03b1 chosen on dev",
        )
    )
    fig.legend(handles=handles, loc="outside right center", fontsize=8, frameon=False)
    _suptitle(fig, "MDS: dev score against \u03b1 per language", settings)
    return fig


@register_section("transfer_alpha", "Zero-shot transfer: the MDS weight \u03b1 chosen on dev", required=(TABLE,))
def render_alpha(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    curves, chosen = alpha_curves(df, where)
    main = df["metric"] == df["task"].map(TASK_METRIC)
    test = df[(df["split"] == "test") & (df["transform"] == "mds") & df["selected"].astype(bool) & main]
    mds = df[(df["transform"] == "mds") & main]
    line = shown_line(mds, ["MDS rows"])
    blocks = [
        text(
            "\u03b1 is chosen per language on that language's dev split (the highest dev score over the "
            "configured grid), then applied to its test split: the curves and the table under them show the dev "
            "scores for every \u03b1, the star the choice. Metric: XNLI accuracy, UPOS accuracy, LAS, span F1."
        )
    ]
    if curves.empty:
        blocks.append(empty_block("\u03b1 on dev", f"The transfer table ({where}) has no MDS rows on a dev split."))
    else:
        table = alpha_table(curves, chosen, test, where, "Dev score against \u03b1 and the \u03b1 chosen")
    line = f"dev split; {line}"
    blocks.append(
        ctx.figure(
            "transfer_mds_alpha", alpha_figure(curves, chosen, line), ALPHA_CAPTION, line, "MDS \u03b1 chosen on dev"
        )
    )
    if not curves.empty:  # the figure's numbers, each with its test score: behind its title, as the figure shows them
        blocks.append({**table, "collapsed": True})
    blocks.append(full_table(df))
    return blocks


# ---------------------------------------------------------------------------------------------- all numbers

FULL_KEYS = [
    "task",
    "model",
    "size",
    "window",
    "freeze",
    "train_transform",
    "selection",
    "split",
    "transform",
    "layer",
    "alpha",
    "selected",
    "lang",
    "metric",
    "seed",
]


def full_table(df: pd.DataFrame) -> Block:
    """Every row of the table with its settings (the JSON blocks are in Settings and the sections)."""
    keys = [k for k in FULL_KEYS if k in df]
    results = [r for r in RESULTS if r in df]
    df = df.sort_values(keys, kind="stable")
    rows = [
        [fmt_setting(k, r[k]) for k in keys]
        + [f"{r['value']:.{DIGITS}f}"]
        + ([fmt_count(r["n"])] if "n" in results else [])
        for r in df[keys + results].to_dict("records")
    ]
    return table_block(
        f"Zero-shot transfer: all numbers ({len(rows)} rows)",
        keys + results,
        rows,
        collapsed=True,
        numeric=range(len(keys), len(keys) + len(results)),
    )
