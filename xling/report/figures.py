"""The report's figures: one function per figure, each returns a matplotlib Figure (the caller saves it).

Functions take tidy summary frames that the report has already restricted to one choice of settings
(metric, dictionary split, BERT layer, ...) and averaged over seeds; the `settings` string they get is put
in the title, so a PNG lifted out of the report still says what it shows. Figures are built with
`matplotlib.figure.Figure` (Agg canvas, no pyplot state), so nothing leaks between calls and no display is
needed. Colours are Okabe-Ito (colour-blind safe); chance is always drawn in black dashes.
"""

from __future__ import annotations

import math
import textwrap
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from xling.plan.figures import size_label  # noqa: F401  (used here; the sections import it from here)

MODEL_ORDER = ("glove", "word2vec", "bert")
MODEL_LABELS = {"glove": "GloVe", "word2vec": "Word2Vec", "bert": "BERT"}
# Okabe & Ito (2008), reordered so the first colours are the most distinct on white; yellow last.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
HATCHES = ("", "//", "..", "xx")
CHANCE_STYLE = dict(color="black", linestyle=(0, (3, 1.5)), linewidth=1.6)
DPI = 110
#: the report's content column is 1114 px wide at 1280 px: a wider figure is shrunk by the browser and its 8 pt
#: text falls under 10 px (issue 22), so a figure is saved at most this wide (inches at DPI)
MAX_WIDTH_IN = 10.1


def fit_width(fig: Figure) -> None:
    """Narrow a figure wider than the report's column to the column, keeping its fonts and height: the
    constrained layout gives the panels less room instead of the browser shrinking the text."""
    width, height = fig.get_size_inches()
    if width > MAX_WIDTH_IN:
        fig.set_size_inches(MAX_WIDTH_IN, height)


def model_label(model: str, layer: int | None = None) -> str:
    label = MODEL_LABELS.get(model, model)
    return f"{label} (layer {layer})" if model == "bert" and layer is not None else label


def checkpoint_label(model: str, layer: int | None = None) -> str:
    """A Hugging Face checkpoint (size 0 in the tables): its name, marked as the reference it is."""
    return f"{model} (checkpoint{f', layer {layer}' if layer is not None else ''})"


REFERENCE_STYLE = dict(facecolor="0.55", hatch="//", edgecolor="white")  # a checkpoint's bars: not a model of ours


def ordered_models(models) -> list[str]:
    """Known models in the studies' order (GloVe, Word2Vec, BERT), unknown ones after, alphabetically."""
    present = set(models)
    return [m for m in MODEL_ORDER if m in present] + sorted(present - set(MODEL_ORDER))


def _new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _title(fig: Figure, title: str, settings: str) -> None:
    settings = textwrap.fill(settings, min(120, int(11 * fig.get_figwidth()))) if settings else ""  # fits the width
    fig.suptitle(f"{title}\n{settings}" if settings else title, fontsize=11)


def _chance_handle(label: str = "chance MRR") -> Line2D:
    return Line2D([], [], label=label, **CHANCE_STYLE)


def _chance_text(chance) -> str:
    """The chance level as text too: at real vocabulary sizes it is ~0.001, a line lying on the axis."""
    values = pd.to_numeric(pd.Series(chance), errors="coerce").dropna()
    if values.empty:
        return ""
    lo, hi = f"{values.min():.2g}", f"{values.max():.2g}"
    return f"chance MRR {lo}" if lo == hi else f"chance MRR {lo}\u2013{hi}"


def _ylim_top(*arrays) -> float:
    values = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    values = values[np.isfinite(values)]
    top = float(values.max()) if values.size else 1.0
    return min(1.05, max(0.05, top * 1.15))


def _bar_label(bars: str, value) -> str:
    if bars == "window":
        return f"window {int(value)} ({int(value) // 2} each side)"
    return f"{size_label(value)} sentences/language"


def mrr_by_pair(
    summary: pd.DataFrame, settings: str, title: str = "Word retrieval by language pair", bars: str = "size"
) -> Figure:
    """One panel per model (stacked, sharing x = language pair), a bar per data size, chance per bar; a
    Hugging Face checkpoint (size 0) gets a panel of its own with one hatched reference bar per pair (Liu et al.
    Figure 1's "Google BERT").

    `summary`: one row per model × size × pair (already one window and one BERT layer), columns
    model, size, pair, mrr, chance_mrr and optionally mrr_sd (seed spread, drawn as error bars) and layer.
    bars="window" (the window sweep, Liu et al.'s Figure 4): a bar per window, one panel per model and size.
    """
    checkpoints = summary["size"] == 0
    ours = summary[~checkpoints]
    by_model = [(model, ours[ours["model"] == model]) for model in ordered_models(ours["model"])]
    if bars == "size":
        panels = [(model, None, rows, False) for model, rows in by_model]
    else:  # a panel per model and size
        panels = [(model, size, cell, False) for model, rows in by_model for size, cell in rows.groupby("size")]
    panels += [
        (model, None, summary[summary["model"] == model], True)
        for model in sorted(summary.loc[checkpoints, "model"].unique())
    ]
    pairs = sorted(summary["pair"].unique())
    values = sorted(ours[bars].unique())
    n_pairs, n_bars = len(pairs), max(len(values), 1)
    width = float(np.clip(2.5 + 0.42 * n_pairs * n_bars + 0.25 * n_pairs, 6.5, 12))
    fig = _new_figure(width, 0.9 + 2.3 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    bar = min(0.8 / n_bars, 0.35)  # a lone bar per pair gets a bar, not a slab
    group = bar * n_bars
    x = np.arange(n_pairs)
    spread = summary["mrr_sd"].fillna(0) if "mrr_sd" in summary else 0
    top = _ylim_top(summary["mrr"] + spread, summary["chance_mrr"])
    for ax, (model, size, rows, reference) in zip(axes, panels, strict=True):
        layer = rows["layer"].iloc[0] if "layer" in rows and (model == "bert" or reference) else None
        for j, value in enumerate([0] if reference else values):
            cell = (rows if reference else rows[rows[bars] == value]).set_index("pair").reindex(pairs)
            offsets = x if reference else x - group / 2 + bar * (j + 0.5)
            yerr = cell["mrr_sd"].to_numpy() if "mrr_sd" in cell and cell["mrr_sd"].notna().any() else None
            style = REFERENCE_STYLE if reference else dict(color=PALETTE[j % len(PALETTE)])
            ax.bar(offsets, cell["mrr"], bar * 0.92, yerr=yerr, capsize=2, error_kw=dict(elinewidth=0.8), **style)
            ok = cell["chance_mrr"].notna().to_numpy()
            ax.hlines(
                cell["chance_mrr"].to_numpy()[ok],
                (offsets - bar / 2)[ok],
                (offsets + bar / 2)[ok],
                zorder=3,
                **CHANCE_STYLE,
            )
        if reference:
            panel = checkpoint_label(model, layer)
        else:
            panel = model_label(model, layer) + (f", {size_label(size)} sentences/language" if size is not None else "")
        ax.set_title(panel, fontsize=10, loc="left")
        ax.set_title(_chance_text(rows["chance_mrr"]), fontsize=8, loc="right", color="0.25")
        ax.set_ylabel("MRR")
        ax.set_ylim(0, top)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[-1].set_xticks(x, pairs, rotation=45 if n_pairs > 8 else 0, ha="right" if n_pairs > 8 else "center")
    axes[-1].set_xlabel("language pair (query language – candidate language)")
    handles = [Patch(color=PALETTE[j % len(PALETTE)], label=_bar_label(bars, v)) for j, v in enumerate(values)]
    if checkpoints.any():
        handles.append(Patch(label="checkpoint (its own pretraining data)", **REFERENCE_STYLE))
    handles.append(_chance_handle())
    # one row when it fits the width (about 0.065 in per 9-point character, 0.55 in per key), else two
    one_row = 0.065 * sum(len(h.get_label()) for h in handles) + 0.55 * len(handles)
    ncol = len(handles) if one_row <= width else math.ceil(len(handles) / 2)
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=9, frameon=False)
    _title(fig, title, settings)
    return fig


def window_effect(
    summary: pd.DataFrame, settings: str, title: str = "Effect of the context window on word retrieval"
) -> Figure:
    """Panels per data size; per model a bar per window = MRR averaged over pairs, dots = single pairs; each
    Hugging Face checkpoint (size 0) as one hatched reference bar in every panel (Liu et al. Figure 3's
    "Google BERT").

    `summary`: one row per model × size × window × pair (one BERT layer), columns as in `mrr_by_pair`.
    The chance segment on each bar is the chance MRR averaged over the same pairs.
    """
    reference = summary[summary["size"] == 0]
    summary = summary[summary["size"] > 0]
    checkpoints = sorted(reference["model"].unique())
    models = ordered_models(summary["model"])
    sizes = sorted(summary["size"].unique()) or [0]
    windows = sorted(summary["window"].unique(), reverse=True)
    n_pairs = summary["pair"].nunique()
    n_w = len(windows)
    bar = min(0.8 / n_w, 0.3)
    group = bar * n_w
    width = float(np.clip(1.5 + len(sizes) * (1.2 + 0.6 * (len(models) * n_w + len(checkpoints))), 6, 15))
    fig = _new_figure(width, 4.4)
    axes = fig.subplots(1, len(sizes), sharey=True, squeeze=False)[0]
    means = summary.groupby(["model", "size", "window"], as_index=False)[["mrr", "chance_mrr"]].mean()
    ref_means = reference.groupby("model")[["mrr", "chance_mrr"]].mean().reindex(checkpoints)
    top = _ylim_top(summary["mrr"], summary["chance_mrr"], reference["mrr"], reference["chance_mrr"])
    rng = np.random.default_rng(0)  # jitter only; fixed so the PNG is reproducible
    for ax, size in zip(axes, sizes, strict=True):
        x = np.arange(len(models))
        for j, window in enumerate(windows):
            colour = PALETTE[(j + 3) % len(PALETTE)]
            offsets = x - group / 2 + bar * (j + 0.5)
            cell = means[(means["size"] == size) & (means["window"] == window)].set_index("model").reindex(models)
            ax.bar(
                offsets,
                cell["mrr"],
                bar * 0.92,
                color=colour,
                alpha=0.85,
                hatch=HATCHES[j % len(HATCHES)],
                edgecolor="white",
            )
            ok = cell["chance_mrr"].notna().to_numpy()
            ax.hlines(
                cell["chance_mrr"].to_numpy()[ok],
                (offsets - bar / 2)[ok],
                (offsets + bar / 2)[ok],
                zorder=3,
                **CHANCE_STYLE,
            )
            for i, model in enumerate(models):
                points = summary[
                    (summary["model"] == model) & (summary["size"] == size) & (summary["window"] == window)
                ]["mrr"].to_numpy()
                jitter = rng.uniform(-bar * 0.25, bar * 0.25, size=len(points))
                ax.scatter(offsets[i] + jitter, points, s=10, color="black", alpha=0.55, zorder=4, linewidths=0)
        x_ref = np.arange(len(models), len(models) + len(checkpoints))
        ax.bar(x_ref, ref_means["mrr"], bar * 0.92, **REFERENCE_STYLE)
        ax.hlines(ref_means["chance_mrr"], x_ref - bar / 2, x_ref + bar / 2, zorder=3, **CHANCE_STYLE)
        for i, name in zip(x_ref, checkpoints, strict=True):
            points = reference.loc[reference["model"] == name, "mrr"].to_numpy()
            ax.scatter(
                i + rng.uniform(-bar * 0.25, bar * 0.25, size=len(points)),
                points,
                s=10,
                color="black",
                alpha=0.55,
                zorder=4,
                linewidths=0,
            )
        labels = [model_label(m, _layer_of(summary, m)) for m in models]
        labels += [textwrap.fill(checkpoint_label(m, _layer_of(reference, m)), 18) for m in checkpoints]
        ax.set_xticks(np.arange(len(labels)), labels, fontsize=9)
        chance = _chance_text(summary.loc[summary["size"] == size, "chance_mrr"])
        ax.set_title(f"{size_label(size)} sentences/language\n{chance}" if size else chance, fontsize=10)
        ax.set_ylim(0, top)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0].set_ylabel(f"MRR (mean over {n_pairs} pair{'s' if n_pairs != 1 else ''})")
    handles = [
        Patch(
            facecolor=PALETTE[(j + 3) % len(PALETTE)],
            hatch=HATCHES[j % len(HATCHES)],
            edgecolor="white",
            label=f"window {w}",
        )
        for j, w in enumerate(windows)
    ]
    if checkpoints:
        handles.append(Patch(label="checkpoint (no window of ours)", **REFERENCE_STYLE))
    handles += [
        Line2D([], [], marker="o", linestyle="", color="black", alpha=0.55, markersize=4, label="single language pair"),
        _chance_handle("chance MRR (mean over pairs)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9, frameon=False)
    _title(fig, title, settings)
    return fig


def _layer_of(summary: pd.DataFrame, model: str):
    """The one layer a BERT or a checkpoint is shown at; None for a static model or several layers."""
    rows = summary[summary["model"] == model]
    if "layer" not in summary or (model != "bert" and not (rows["size"] == 0).all()):
        return None
    layers = rows["layer"].unique()
    return int(layers[0]) if len(layers) == 1 else None


def bert_layers(
    summary: pd.DataFrame,
    settings: str,
    highlight_layer: int | None = None,
    title: str = "BERT word retrieval by layer",
) -> Figure:
    """Panels per size (rows) × window (columns); one line per pair plus their mean; chance as a band.

    `summary`: BERT rows only, one per size × window × layer × pair, columns layer, mrr, chance_mrr.
    The chance band spans the pairs' chance MRR (min to max) with a dashed line at their mean.
    """
    sizes = sorted(summary["size"].unique())
    windows = sorted(summary["window"].unique(), reverse=True)
    pairs = sorted(summary["pair"].unique())
    layers = sorted(summary["layer"].unique())
    fig = _new_figure(float(np.clip(2.5 + 3.6 * len(windows), 6.5, 15)), 0.9 + 2.9 * len(sizes))
    axes = fig.subplots(len(sizes), len(windows), sharex=True, sharey=True, squeeze=False)
    top = _ylim_top(summary["mrr"], summary["chance_mrr"])
    styles = {
        p: dict(
            color=PALETTE[i % 7], marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[(i // 7) % len(LINESTYLES)]
        )
        for i, p in enumerate(pairs)
    }
    for r, size in enumerate(sizes):
        for c, window in enumerate(windows):
            ax = axes[r, c]
            cell = summary[(summary["size"] == size) & (summary["window"] == window)]
            if cell.empty:
                ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
            for pair in pairs:
                line = cell[cell["pair"] == pair].sort_values("layer")
                ax.plot(line["layer"], line["mrr"], markersize=3.5, linewidth=1.1, alpha=0.85, **styles[pair])
            if not cell.empty:
                mean = cell.groupby("layer")[["mrr", "chance_mrr"]].mean()
                lo = cell.groupby("layer")["chance_mrr"].min()
                hi = cell.groupby("layer")["chance_mrr"].max()
                ax.plot(mean.index, mean["mrr"], color="black", linewidth=2.4, label="mean over pairs")
                ax.fill_between(lo.index, lo, hi, color="0.6", alpha=0.35, linewidth=0)
                ax.plot(mean.index, mean["chance_mrr"], zorder=3, **CHANCE_STYLE)
            if highlight_layer is not None:
                ax.axvline(highlight_layer, color="0.4", linestyle=":", linewidth=1)
            ax.set_title(
                f"{size_label(size)} sentences/language, window {window}\n{_chance_text(cell['chance_mrr'])}",
                fontsize=9.5,
            )
            ax.grid(alpha=0.3)
            ax.set_ylim(0, top)
            if r == len(sizes) - 1:
                ax.set_xlabel("layer (0 = embeddings)")
            if c == 0:
                ax.set_ylabel("MRR")
    step = max(1, math.ceil(len(layers) / 13))
    axes[-1, 0].set_xticks(layers[::step])
    handles = [Line2D([], [], markersize=4, label=p, **styles[p]) for p in pairs]
    handles += [
        Line2D([], [], color="black", linewidth=2.4, label="mean over pairs"),
        _chance_handle("chance MRR (mean; band = range over pairs)"),
    ]
    if highlight_layer is not None:
        handles.append(Line2D([], [], color="0.4", linestyle=":", label=f"layer {highlight_layer} (other figures)"))
    fig.legend(
        handles=handles, loc="outside right center", fontsize=8, frameon=False, ncol=1 if len(handles) <= 20 else 2
    )
    _title(fig, title, settings)
    return fig


def pretraining_loss(log: pd.DataFrame, settings: str = "", title: str = "BERT pretraining loss") -> Figure:
    """Masked-LM loss against step, a line per size (colour) × window (line style); lr below when logged.

    Long logs are drawn raw (faint) with a rolling mean on top, so the trend reads through the noise.
    """
    sizes = sorted(log["size"].unique())
    windows = sorted(log["window"].unique(), reverse=True)
    has_lr = "lr" in log and log["lr"].notna().any()
    fig = _new_figure(9, 4.6 + (1.8 if has_lr else 0))
    if has_lr:
        ax, ax_lr = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    else:
        ax, ax_lr = fig.subplots(1, 1), None
    handles = []
    for i, size in enumerate(sizes):
        for j, window in enumerate(windows):
            run = log[(log["size"] == size) & (log["window"] == window)].sort_values("step")
            if run.empty:
                continue
            style = dict(color=PALETTE[i % len(PALETTE)], linestyle=LINESTYLES[j % len(LINESTYLES)])
            label = f"{size_label(size)} sentences/language, window {window}"
            if len(run) > 200:
                ax.plot(run["step"], run["loss"], linewidth=0.6, alpha=0.25, color=style["color"])
                smooth = run["loss"].rolling(max(5, len(run) // 50), min_periods=1, center=True).mean()
                ax.plot(run["step"], smooth, linewidth=1.8, **style)
            else:
                ax.plot(
                    run["step"],
                    run["loss"],
                    linewidth=1.6,
                    marker="o" if len(run) < 30 else None,
                    markersize=3,
                    **style,
                )
            if ax_lr is not None:
                ax_lr.plot(run["step"], run["lr"], linewidth=1.2, **style)
            handles.append(Line2D([], [], linewidth=1.8, label=label, **style))
    ax.set_ylabel("masked-LM loss (train)")
    ax.grid(alpha=0.3)
    if ax_lr is not None:
        ax_lr.set_ylabel("learning rate")
        ax_lr.grid(alpha=0.3)
        ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
        ax_lr.set_xlabel("training step")
    else:
        ax.set_xlabel("training step")
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2), fontsize=9, frameon=False)
    _title(fig, title, settings)
    return fig


__all__ = (
    "size_label",
    "model_label",
    "checkpoint_label",
    "ordered_models",
    "mrr_by_pair",
    "window_effect",
    "bert_layers",
    "pretraining_loss",
    "MODEL_LABELS",
    "PALETTE",
)
