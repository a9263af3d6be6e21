"""Report section for sentence retrieval with original / zero-mean / MDS vectors (Libovický et al. 2020;
XTREME's Tatoeba and BUCC), beside token translation (xling.report.language, whose helpers it shares). Importing
this module registers the section with xling.report.core.

Table keys (render_report(tables=...)): tatoeba, bucc; published numbers: the same keys in
resources/paper_results.yaml. Directions: 'a->b' means queries in a, candidates in b; XTREME's Tatoeba script
searches the xx sentences with English queries, so the papers' numbers are en->xx (XTREME_DIRECTION). BUCC mining
is symmetric (xx<->en, BUCC_DIRECTION of xling.evaluate.sentence_retrieval).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from xling.report import figures
from xling.report.blocks import MODEL_KEYS, fmt_percent, fmt_setting, model_groups, model_name, table_block, text
from xling.report.core import ReportContext, register_section
from xling.report.flags import MARK, cell_reason, flagged_cell, row_flags
from xling.report.language import (
    COLLAPSED_SPREAD,
    full_table,
    mean_line,
    select_key,
    short_mean_line,
    vector_flags,
    wrap_line,
)
from xling.report.published import Matching

XTREME_DIRECTION = "en->xx"  # English queries, xx candidates: what XTREME's Tatoeba (and the papers) report
TATOEBA_RESULTS = ("accuracy", "n_queries", "n_candidates", "vector_spread")
BUCC_RESULTS = (
    "f1",
    "precision",
    "recall",
    "threshold",
    "dev_f1",
    "dev_precision",
    "dev_recall",
    "n_gold",
    "n_extracted",
    "n_src",
    "n_en",
    "vector_spread",
)
VARIANT_LABELS = {"original": "Original", "zero_mean": "Zero-mean", "mds": "MDS"}
RETRIEVAL_DESCRIPTION = (
    "Sentence vectors are mean-pooled wordpiece vectors of one layer. Original: as they are; Zero-mean: each "
    "language centred on its own mean (Libovick\u00fd et al. 2020); MDS: the query language moved onto the "
    "candidate language, q + alpha (R_cand \u2212 R_query). Language means are computed on the whole "
    "evaluation set of each language, as in the papers."
)


def report_layer(df: pd.DataFrame, config: Mapping) -> int:
    wanted = ((config.get("language") or {}).get("sentence_retrieval") or {}).get("layer")
    if wanted is None and "report_layer" in df:
        wanted = int(df["report_layer"].iloc[0])
    layers = sorted(df["layer"].unique())
    return int(wanted) if wanted in layers else int(layers[-1])


def variant_table(df: pd.DataFrame, metric: str, title: str, note: str, flagged: pd.Series) -> dict:
    """Rows model x variant, a column per language (+ mean), and the model's flags (vector_flags). A cell
    drawn from rows the findings flag (`flagged`: xling.report.flags.row_flags of the table) carries the mark
    and the findings' reason; the mean carries every reason of its languages."""
    langs = sorted(df["lang"].unique())
    rows = []
    for key in model_groups(df):
        part = select_key(df, key)
        flags = "; ".join(f"{lang}: {flag}" for lang, p in part.groupby("lang") if (flag := vector_flags(p)))
        for variant in ("original", "zero_mean", "mds"):
            shown = part[part["variant"] == variant]
            cell = shown.groupby("lang")[metric].mean()
            if cell.empty:
                continue
            reasons = {lang: cell_reason(flagged[p.index]) for lang, p in shown.groupby("lang")}
            marked = sum(1 for r in reasons.values() if r)
            rows.append(
                [model_name(dict(zip(MODEL_KEYS, key, strict=True))), VARIANT_LABELS[variant]]
                + [flagged_cell(fmt_percent(cell.get(lang, np.nan)), reasons.get(lang)) for lang in langs]
                + [
                    flagged_cell(fmt_percent(cell.mean()), cell_reason(flagged[shown.index])),
                    "; ".join(filter(None, [flags, f"{MARK} {marked} of {len(reasons)} languages" if marked else ""]))
                    or "none",
                ]
            )
    columns = ["model", "vectors"] + langs + ["mean", "flags"]
    return table_block(
        title,
        columns,
        rows,
        note=note + f" {MARK}: a number the findings flag as degenerate, "
        f"with its label; the reason whole under the table. Flags: collapsed vectors = spread (1 \u2212 the mean cosine of two "
        f"different sentences' vectors) below {COLLAPSED_SPREAD:g}.",
        numeric=range(2, len(columns) - 1),
        wrap=range(2, len(columns)),
    )


def tatoeba_layers(df: pd.DataFrame, settings: str, direction: str = XTREME_DIRECTION) -> Figure:
    """Accuracy (one direction, mean over languages) against the layer, a panel per model, a line per variant."""
    df = df[df["direction"] == direction]
    models = model_groups(df)
    ncols = min(len(models), 4)
    nrows = int(np.ceil(len(models) / ncols))
    fig = Figure(figsize=(3.4 * ncols + 0.5, 2.8 * nrows + 0.9), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False, sharey=True)).ravel()
    for ax, key in zip(axes, models, strict=False):
        part = select_key(df, key)
        for i, variant in enumerate(("original", "zero_mean", "mds")):
            line = part[part["variant"] == variant].groupby("layer")["accuracy"].mean()
            ax.plot(
                line.index,
                100 * line.to_numpy(),
                marker=figures.MARKERS[i],
                color=figures.PALETTE[i],
                label=VARIANT_LABELS[variant],
            )
        ax.set_title(model_name(dict(zip(MODEL_KEYS, key, strict=True))), fontsize=9)
        ax.set_xlabel("layer")
        ax.set_ylim(bottom=0)  # the values' own range: accuracies of a few percent stay readable
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"accuracy (%, {_arrow(direction)})")
    axes[0].legend(fontsize=8)
    for ax in axes[len(models) :]:
        ax.set_visible(False)
    fig.suptitle(
        "Tatoeba accuracy by layer (mean over languages)\n" + wrap_line(settings, fig.get_figwidth()), fontsize=10
    )
    return fig


def _arrow(direction: str) -> str:
    return direction.replace("<->", "\u2194").replace("->", "\u2192")


@register_section(
    "sentence_retrieval",
    "Sentence retrieval: Tatoeba and BUCC",
    required=("tatoeba",),
    results={"tatoeba": TATOEBA_RESULTS, "bucc": BUCC_RESULTS},
)
def render_sentence_retrieval(ctx: ReportContext) -> list[dict]:
    df = ctx.tables["tatoeba"]
    where = ctx.table_paths["tatoeba"]
    missing = [c for c in MODEL_KEYS + ["lang", "layer", "variant", "direction", "accuracy"] if c not in df]
    if missing:
        raise ValueError(f"{where}: columns {missing} missing from the Tatoeba table")
    layer = report_layer(df, ctx.config)
    alpha = ", ".join(fmt_setting("alpha", a) for a in sorted(df["mds_alpha"].unique())) if "mds_alpha" in df else "1"
    line = f"layer {layer}, MDS \u03b1 {alpha}; {mean_line(df)}"
    blocks = [
        text(
            RETRIEVAL_DESCRIPTION,
            "Tatoeba: accuracy of the cosine nearest neighbour among all sentences of "
            "the other side (ties go to the first candidate, as XTREME's argmax; a candidate with the same "
            "text as the reference translation also counts as correct). a\u2192b: queries in a, candidates "
            f"in b. {_arrow(XTREME_DIRECTION)} (English queries) is what XTREME's script and the papers "
            f"report; it comes first. Shown: {line}.",
        )
    ]
    directions = sorted(df["direction"].unique(), key=lambda d: (d != XTREME_DIRECTION, d))
    for direction in directions:
        shown = df[(df["layer"] == layer) & (df["direction"] == direction)]
        blocks.append(
            variant_table(
                shown,
                "accuracy",
                f"Tatoeba accuracy (%, {_arrow(direction)}, layer {layer})",
                line,
                row_flags("tatoeba", shown, ctx.pivot),
            )
        )
    if df["layer"].nunique() > 1:
        short = f"MDS \u03b1 {alpha}; {short_mean_line(df)} (whole test sets)"
        blocks.append(
            ctx.figure(
                "language_tatoeba_layers",
                tatoeba_layers(df, short, directions[0]),
                "language_tatoeba_layers",
                line,
                "Tatoeba accuracy by layer",
            )
        )
    blocks += ctx.published_blocks(
        "tatoeba",
        df,
        Matching(identity=("lang", "direction", "variant"), defaults={"layer": layer, "direction": XTREME_DIRECTION}),
    )
    bucc = ctx.tables.get("bucc")
    if bucc is not None and len(bucc):
        b_layer = report_layer(bucc, ctx.config)
        b_line = (
            f"layer {b_layer}, score {', '.join(map(str, sorted(bucc['score'].unique())))}"
            if "score" in bucc
            else f"layer {b_layer}"
        )
        blocks.append(
            text(
                "BUCC 2018 (XTREME's procedure): candidates mined in both directions and kept one-to-one "
                "by score (ratio margin over the k nearest neighbours, or cosine); the threshold that "
                "maximises F1 on the sample (dev) split is applied to the test split. Mining is "
                "symmetric, so BUCC has no query direction (xx\u2194en); the MDS variant moves the xx "
                "vectors onto English."
            )
        )
        shown = bucc[bucc["layer"] == b_layer]
        blocks.append(
            variant_table(
                shown,
                "f1",
                f"BUCC F1 (%, test, xx\u2194en, {b_line})",
                f"{b_line}; {mean_line(bucc)}. Precision, recall and the threshold are in the full table.",
                row_flags("bucc", shown, ctx.pivot),
            )
        )
        blocks += ctx.published_blocks(
            "bucc", bucc, Matching(identity=("lang", "variant"), defaults={"layer": b_layer})
        )
        blocks.append(
            full_table(
                bucc,
                "BUCC: all numbers",
                ["model", "size", "window", "lang", "direction", "layer", "variant"],
                [c for c in BUCC_RESULTS if not c.startswith("dev_") or c == "dev_f1"],
            )
        )
    blocks.append(
        full_table(
            df,
            "Tatoeba: all numbers",
            ["model", "size", "window", "lang", "direction", "layer", "variant"],
            ["accuracy", "n_queries", "n_candidates", "vector_spread"],
        )
    )
    return blocks
