"""Training curves beside the results they trained: the fine-tunings' training loss and dev score (the transfer
section) and the alignment fine-tuning's loss and its two terms (Cao et al.'s section), drawn from what the jobs
record: each fine-tuning's `finetune.json` (dev score per epoch; the training loss every ~2 % of the steps,
xling.tune.finetune) and each aligned model's `training_log.tsv` (every step, xling.tune.align).

Why: a transfer number is evidence only when its fine-tuning learned; a flat loss or a dev score at chance says
why a cell is flagged, and a loss still falling says the run stopped early. A run has tens of fine-tunings, so a
panel per task draws the median of each family of models and the range over its runs, never a line per run.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from xling.data.transfer_tasks import TASK_METRIC
from xling.evaluate.alignment import aligned_lm
from xling.evaluate.findings.core import transfer_flags, with_table_flags
from xling.plan.figures import ALIGNMENT_CURVES, FINETUNING_CURVES
from xling.report import figures
from xling.report.blocks import Block, model_name
from xling.report.core import ReportContext, register_extra, register_list_table, require_columns
from xling.report.flags import MARK, cell_reason

TASKS = ("xnli", "pos", "parsing", "ner")
TASK_NAMES = {"xnli": "XNLI", "pos": "UD POS", "parsing": "UD parsing", "ner": "WikiAnn NER"}
METRIC_NAMES = {"accuracy": "accuracy", "upos": "UPOS accuracy", "las": "LAS", "f1": "F1"}
FAMILIES = ("static vectors", "our BERTs", "checkpoints", "Cao et al.'s recipe")
GRID = 60  # points of the epoch axis the loss curves are interpolated on for their median
MAX_LINES = 5  # more aligned models than this: their median and range instead of a line each


def family(lm: str, variant: str) -> str:
    """The kind of fine-tuning a run is, for the figure's lines."""
    if variant == "static":
        return "static vectors"
    if lm.startswith("aligned/") or variant.endswith("-cao") or "-rot" in variant:
        return "Cao et al.'s recipe"
    return "checkpoints" if lm.startswith("hf/") else "our BERTs"


def aligned_name(lm: str) -> str:
    """'BERT 12k w128 aligned on 700 pairs' for aligned/700/bert/12000-w128."""
    base, n = aligned_lm(lm)
    return f"{lm_name(base)} aligned on {n:,} pairs" if n else lm_name(base)


def _run_of(path: Path) -> dict:
    """task, lm, variant, seed of .../finetuned/{task}/{lm}/{variant}/seed{seed}/finetune.json."""
    parts = path.parts
    if "finetuned" not in parts or len(parts) - parts.index("finetuned") < 5 or not parts[-2].startswith("seed"):
        raise ValueError(
            f"{path}: not a fine-tuning's finetune.json (.../finetuned/<task>/<lm>/<variant>/seed<n>/finetune.json)"
        )
    start = parts.index("finetuned") + 1
    return {
        "task": parts[start],
        "lm": "/".join(parts[start + 1 : -3]),
        "variant": parts[-3],
        "seed": int(parts[-2].removeprefix("seed")),
    }


def load_finetune_records(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per point of every fine-tuning's curves: kind loss (the training loss, where recorded) or dev (the
    pivot's dev score after each epoch, in percent), at `epoch` (steps over steps per epoch)."""
    rows = []
    for path in map(Path, paths):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            run = {**_run_of(path), "pivot": record["pivot"], "selection": record.get("selection")}
            per_epoch = record["steps"] / max(len(record["epochs"]), 1)
            for point in record.get("train_loss") or []:
                rows.append(
                    {
                        **run,
                        "kind": "loss",
                        "step": point["step"],
                        "epoch": point["step"] / per_epoch,
                        "value": float(point["loss"]),
                    }
                )
            for epoch in record["epochs"]:
                rows.append(
                    {
                        **run,
                        "kind": "dev",
                        "step": epoch["step"],
                        "epoch": epoch["epoch"],
                        "value": float(epoch["dev"][record["pivot"]]),
                    }
                )
        except (KeyError, TypeError, ZeroDivisionError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a fine-tuning record ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise ValueError("load_finetune_records: no fine-tuning records given")
    out = pd.DataFrame(rows)
    return out.assign(family=[family(lm, v) for lm, v in zip(out["lm"], out["variant"], strict=True)])


def load_alignment_logs(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The aligned models' training logs (xling.tune.align.LOG_COLUMNS) with each model's lm id, from
    .../models/aligned/{n}/{base}/training_log.tsv."""
    frames = []
    for path in map(Path, paths):
        parts = path.parts
        if "aligned" not in parts:
            raise ValueError(
                f"{path}: not an aligned model's training log (.../models/aligned/<n>/<base>/training_log.tsv)"
            )
        frame = pd.read_csv(path, sep="\t")
        require_columns(frame, ("step", "loss", "pairs", "drift"), str(path))
        if frame.empty:
            raise ValueError(f"{path}: training log has a header but no rows")
        frames.append(frame.assign(lm="/".join(parts[parts.index("aligned") : -1])))
    if not frames:
        raise ValueError("load_alignment_logs: no logs given")
    return pd.concat(frames, ignore_index=True)


register_list_table("finetune_logs", "finetuning", load_finetune_records)
register_list_table("alignment_logs", "alignment_training", load_alignment_logs)


# ---------------------------------------------------------------------------------------------- summaries


def median_band(points: pd.DataFrame, grid: int | None = GRID) -> pd.DataFrame:
    """Median, min and max over runs (task, lm, variant, seed) of `value` against `epoch`: on `grid` points
    (each run interpolated within its own span) or, with grid None, at the epochs the runs share (dev scores)."""
    runs = [run.sort_values("epoch") for _, run in points.groupby(["task", "lm", "variant", "seed"], sort=False)]
    if grid is None:
        table = pd.concat([run.set_index("epoch")["value"] for run in runs], axis=1)
    else:
        x = np.linspace(0, points["epoch"].max(), grid)
        table = pd.DataFrame(
            {
                i: np.where(
                    (x >= run["epoch"].min()) & (x <= run["epoch"].max()),
                    np.interp(x, run["epoch"], run["value"]),
                    np.nan,
                )
                for i, run in enumerate(runs)
            },
            index=x,
        )
    values = table.to_numpy(dtype=float)
    seen = ~np.isnan(values).all(axis=1)
    with np.errstate(all="ignore"):
        return pd.DataFrame(
            {
                "epoch": table.index[seen],
                "median": np.nanmedian(values[seen], axis=1),
                "low": np.nanmin(values[seen], axis=1),
                "high": np.nanmax(values[seen], axis=1),
                "runs": (~np.isnan(values[seen])).sum(axis=1),
            }
        )


def finetuning_figure(curves: pd.DataFrame, settings: str) -> Figure:
    """A column per task; the training loss above, the pivot's dev score below; a line per family of models (the
    median over its runs) and a band over the range of its runs."""
    tasks = [t for t in TASKS if t in set(curves["task"])] + sorted(set(curves["task"]) - set(TASKS))
    kinds = ("loss", "dev") if (curves["kind"] == "loss").any() else ("dev",)  # no loss recorded: dev only
    fig = figures._new_figure(min(figures.MAX_WIDTH_IN, 1.2 + 2.6 * len(tasks)), 1.4 + 2.2 * len(kinds))
    axes = fig.subplots(len(kinds), len(tasks), squeeze=False, sharex="col")
    colours = {f: figures.PALETTE[i] for i, f in enumerate(FAMILIES)}
    counts: dict[str, int] = {}
    for c, task in enumerate(tasks):
        last = float(curves.loc[curves["task"] == task, "epoch"].max())
        for r, kind in enumerate(kinds):
            ax = axes[r, c]
            rows = curves[(curves["task"] == task) & (curves["kind"] == kind)]
            if rows.empty:
                ax.text(
                    0.5,
                    0.5,
                    "not recorded" if kind == "loss" else "no dev score",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    fontsize=9,
                    color="0.35",
                )
            for name in [f for f in FAMILIES if f in set(rows["family"])]:
                band = median_band(rows[rows["family"] == name], GRID if kind == "loss" else None)
                counts[name] = max(counts.get(name, 0), int(band["runs"].max()))
                ax.plot(
                    band["epoch"],
                    band["median"],
                    color=colours[name],
                    linewidth=1.6,
                    marker="o" if kind == "dev" else None,
                    markersize=3.5,
                )
                ax.fill_between(band["epoch"], band["low"], band["high"], color=colours[name], alpha=0.18, linewidth=0)
            ax.grid(alpha=0.3)
            ax.set_xlim(0, last + 0.1)
            ax.set_xticks(range(0, math.ceil(last) + 1, max(1, math.ceil(last / 6))))
            if r == 0:
                ax.set_title(TASK_NAMES.get(task, task), fontsize=10)
            ax.set_ylabel(
                "training loss"
                if kind == "loss"
                else f"dev {METRIC_NAMES.get(TASK_METRIC.get(task, ''), 'score')} (%)",
                fontsize=9,
            )
            if r == len(kinds) - 1:
                ax.set_xlabel("epoch")
    handles = [
        Line2D(
            [],
            [],
            color=colours[f],
            linewidth=1.6,
            label=f"{f}: median of {counts[f]} run{'s' if counts[f] != 1 else ''}" if counts[f] > 1 else f"{f}: 1 run",
        )
        for f in FAMILIES
        if f in counts
    ]
    handles.append(Patch(color="0.5", alpha=0.3, label="band: range over the runs"))
    ncol = min(len(handles), 3 if fig.get_figwidth() >= 8 else 2)
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=8.5, frameon=False)
    figures._title(
        fig,
        "Fine-tuning: training loss and the pivot's dev score"
        if len(kinds) == 2
        else "Fine-tuning: the pivot's dev score (no training loss recorded)",
        settings,
    )
    return fig


def run_flags(transfer: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Each fine-tuning (task, lm, variant, seed) with the findings' reasons on its pivot dev rows (the
    fine-tuning did not learn its own language, or scored at chance there)."""
    keys = [k for k in ("task", "lm", "variant", "seed") if k in transfer]
    if len(keys) < 4 or transfer.empty:
        return pd.DataFrame(columns=["task", "lm", "variant", "seed", "flag"])
    flags = with_table_flags(transfer, transfer_flags(transfer, pivot))
    dev = (transfer["split"] == "dev") & (transfer["lang"] == pivot) & (transfer["transform"] == "none")
    rows = transfer[dev].assign(flag=flags[dev])
    return rows.groupby(keys, as_index=False).agg(flag=("flag", cell_reason))


def _short(reason: str) -> list[str]:
    """A reason's clauses without their numbers: 'not above chance: 95% interval ...' -> 'not above chance'."""
    return [part.split(" (")[0].split(":")[0].strip() for part in str(reason).split("; ")]


def _flag_note(curves: pd.DataFrame, flagged: pd.DataFrame) -> str:
    """The caption's sentence naming the fine-tunings drawn that the findings flag, with their reasons in short
    (in full under the transfer tables' cells)."""
    runs = curves[["task", "lm", "variant", "seed"]].drop_duplicates()
    found = runs.merge(flagged, on=["task", "lm", "variant", "seed"], how="left").dropna(subset=["flag"])
    if found.empty:
        return ""
    named = [
        f"{TASK_NAMES.get(task, task)} {lm_name(lm)} ({variant_words(variant)}, seed {seed})"
        for task, lm, variant, seed in found[["task", "lm", "variant", "seed"]].itertuples(index=False)
    ]
    reasons = list(dict.fromkeys(clause for reason in found["flag"] for clause in _short(reason)))
    mostly = " Most of the runs drawn are flagged: their curves show no learning." if 2 * len(found) > len(runs) else ""
    return (
        f"{MARK} {len(found)} of {len(runs)} fine-tunings drawn are flagged by the findings ({'; '.join(reasons)};"
        f" in full under the transfer tables' cells): {', '.join(named)}.{mostly}"
    )


def variant_words(variant: str) -> str:
    """A fine-tuning variant in words: f6-zm -> 'frozen to layer 6, zero-mean'."""
    found = re.fullmatch(r"f(\d+)(-.*)?", variant)
    if variant == "static" or not found:
        return "static vectors" if variant == "static" else variant
    rest = (found[2] or "").lstrip("-")
    words = {
        "": "",
        "zm": "zero-mean",
        "cao": "Cao et al.'s recipe",
        "rotword": "word rotation",
        "rotsentence": "sentence rotation",
    }.get(rest, rest)
    return f"frozen to layer {found[1]}" + (f", {words}" if words else "")


def lm_name(lm: str) -> str:
    """'BERT 12k w128' for bert/12000-w128, a checkpoint's name for hf/<name>, an aligned model in words."""
    if lm.startswith("aligned/"):
        return aligned_name(lm)
    model, _, grid = lm.partition("/")
    size, _, window = grid.partition("-w")
    if size.isdigit() and window.isdigit():
        return model_name({"model": model, "size": int(size), "window": int(window)})
    return grid if model == "hf" else lm


@register_extra("finetuning_curves", "transfer_xnli", required=("finetuning", "transfer"))
def render_finetuning_curves(ctx: ReportContext) -> list[Block]:
    curves = ctx.tables["finetuning"]
    missing = (
        curves[curves["kind"] == "dev"][["task", "lm", "variant", "seed"]]
        .drop_duplicates()
        .merge(
            curves[curves["kind"] == "loss"][["task", "lm", "variant", "seed"]].drop_duplicates(),
            how="left",
            indicator=True,
        )
    )
    unrecorded = int((missing["_merge"] == "left_only").sum())
    settings = (
        f"{curves[['task', 'lm', 'variant', 'seed']].drop_duplicates().shape[0]} fine-tunings; loss: the "
        "mean over every ~2 % of the steps; dev: the pivot's, after each epoch"
    )
    block = ctx.figure(
        FINETUNING_CURVES, finetuning_figure(curves, settings), FINETUNING_CURVES, settings, "Fine-tuning curves"
    )
    note = _flag_note(curves, run_flags(ctx.tables["transfer"], ctx.pivot))
    if unrecorded:
        note += (
            f" {unrecorded} fine-tuning{'s' if unrecorded != 1 else ''} recorded no training loss (made "
            "before fine-tunings recorded it): dev scores only."
        )
    return [{**block, "caption": f"{block['caption']} {note}".strip()}]


# ---------------------------------------------------------------------------------------------- alignment


def alignment_figure(logs: pd.DataFrame, settings: str) -> Figure:
    """The alignment loss and its two terms against the step: a line per aligned model (a rolling mean over the
    noisy per-batch values, the raw values faint), or the median and range of the models when they are many."""
    fig = figures._new_figure(figures.MAX_WIDTH_IN, 3.6)
    axes = fig.subplots(1, 3, squeeze=False)[0]
    models = sorted(logs["lm"].unique())
    many = len(models) > MAX_LINES
    handles = []
    for ax, (column, title) in zip(
        axes,
        (("loss", "loss L + \u03bbR"), ("pairs", "word-pair term L"), ("drift", "pivot drift term R")),
        strict=True,
    ):
        if many:
            smooth = logs.assign(
                value=logs.groupby("lm")[column].transform(
                    lambda v: v.rolling(max(1, len(v) // 50), min_periods=1, center=True).mean()
                )
            )
            band = smooth.groupby("step")["value"].agg(["median", "min", "max"])
            ax.plot(band.index, band["median"], color=figures.PALETTE[0], linewidth=1.6)
            ax.fill_between(band.index, band["min"], band["max"], color=figures.PALETTE[0], alpha=0.2, linewidth=0)
        for i, lm in enumerate([] if many else models):
            run = logs[logs["lm"] == lm].sort_values("step")
            colour = figures.PALETTE[i % len(figures.PALETTE)]
            ax.plot(run["step"], run[column], color=colour, linewidth=0.5, alpha=0.25)
            ax.plot(
                run["step"],
                run[column].rolling(max(1, len(run) // 50), min_periods=1, center=True).mean(),
                color=colour,
                linewidth=1.6,
            )
            if column == "loss":
                handles.append(Line2D([], [], color=colour, linewidth=1.6, label=aligned_name(lm)))
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("sum over the batch's words")
    if many:
        handles = [
            Line2D([], [], color=figures.PALETTE[0], linewidth=1.6, label=f"median of {len(models)} models"),
            Patch(color=figures.PALETTE[0], alpha=0.3, label="range over the models"),
        ]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize=8.5, frameon=False)
    figures._title(fig, "Alignment fine-tuning: loss and its two terms", settings)
    return fig


@register_extra("alignment_curves", "alignment_retrieval", required=("alignment_training", "contextual_retrieval"))
def render_alignment_curves(ctx: ReportContext) -> list[Block]:
    logs = ctx.tables["alignment_training"]
    steps = logs.groupby("lm")["step"].max()
    settings = (
        f"{len(steps)} aligned model{'s' if len(steps) != 1 else ''}, "
        f"{int(steps.min()):,}{'' if steps.min() == steps.max() else f' to {int(steps.max()):,}'} steps; "
        "the loss of each step's batch, a rolling mean over 2 % of the steps"
    )
    return [
        ctx.figure(
            ALIGNMENT_CURVES,
            alignment_figure(logs, settings),
            ALIGNMENT_CURVES,
            settings,
            "Alignment fine-tuning curves",
        )
    ]
