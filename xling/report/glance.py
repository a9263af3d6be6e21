"""The report's first screen: what this run is, before any verdict on it.

Why: a verdict on a 3-layer BERT of 64 dimensions trained for 400 steps on synthetic data reads like a failed
replication when the reader does not know that; the data, the models (width, depth, steps, final MLM loss), the
seeds, the checkout and the run's cost stand above the findings, each read from the run's own tables and files
(xling.report.metadata), never from the live config.
"""

from __future__ import annotations

from typing import Mapping

from xling.report.blocks import DASH, Block, settings_block, text
from xling.report.core import ReportContext, recorded_json, register_section
from xling.report.figures import model_label, ordered_models, size_label
from xling.report.run import _languages, _values


def _bert_line(ctx: ReportContext) -> str:
    """Our BERTs as their tables recorded them: depth, width, steps, seed, and the final MLM loss."""
    hparams = [recorded_json(v) for v in ctx.recorded("hparams", "bert")]
    hparams = [h for h in hparams if h.get("num_layers")]
    if not hparams:
        return ""
    parts = []
    for key, label in (
        ("num_layers", "layers"),
        ("hidden_size", "dimensions"),
        ("max_steps", "steps"),
        ("seed", "seed"),
    ):
        values = sorted({h[key] for h in hparams if h.get(key) is not None}, key=str)
        if values:
            shown = "/".join(str(v) for v in values)
            parts.append(f"seed {shown}" if key == "seed" else f"{shown} {label}")
    line = "BERT: " + ", ".join(parts)
    log = ctx.tables.get("bert_training")
    if log is not None and len(log):
        keys = [c for c in ("model", "size", "window") if c in log]
        last = log.sort_values("step").groupby(keys).tail(1)["loss"]
        low, high = float(last.min()), float(last.max())
        spread = f"{low:.2f}" if round(low, 2) == round(high, 2) else f"{low:.2f}\u2013{high:.2f}"
        line += f"; final MLM loss {spread} (last logged step, {len(last)} model{'s' if len(last) != 1 else ''})"
    return line


def _static_line(ctx: ReportContext) -> str:
    found = {}
    for model in ("glove", "word2vec"):
        dims = sorted({recorded_json(v).get("dim") for v in ctx.recorded("hparams", model)} - {None})
        if dims:
            found[model] = "/".join(str(d) for d in dims)
    return "; ".join(f"{model_label(m)}: {d} dimensions" for m, d in found.items())


def _checkpoints(ctx: ReportContext) -> list[str]:
    models = {
        m
        for df in ctx.tables.values()
        if "model" in df and "size" in df
        for m in df.loc[df["size"] == 0, "model"].dropna().unique()
    }
    return sorted(models)


def _fine_tuning_seeds(ctx: ReportContext) -> str:
    transfer = ctx.tables.get("transfer")
    if transfer is None or "seed" not in transfer:
        return ""
    seeds = sorted(int(s) for s in transfer["seed"].dropna().unique())
    return f"{len(seeds)} fine-tuning seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))})"


def _data_line(ctx: ReportContext) -> str:
    sources = [str(s) for s in _values(ctx, "source", skip=("token_translation_samples",))]
    kind = (
        "synthetic: generated languages with known dictionaries"
        if sources == ["synthetic"]
        else ", ".join(sources) or DASH
    )
    sizes = [s for s in _values(ctx, "size") if s > 0]
    size_text = ", ".join(f"{size_label(s)} ({int(s):,})" for s in sizes) or DASH
    return f"{kind}; languages {', '.join(_languages(ctx)) or DASH}; sentences per language {size_text}"


def _cost_line(meta: Mapping) -> str:
    jobs = meta.get("jobs")
    if not jobs:
        return "no benchmark files found"
    return (
        f"{_hours(meta['job_seconds'])} of job time over {jobs} benchmarked jobs; "
        f"{_hours(meta['wall_seconds'])} from the first job's start to the last job's end "
        f"({meta['finished']})"
    )


def _hours(seconds: float) -> str:
    seconds = float(seconds)
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


@register_section("run", "What this run is")
def render_run(ctx: ReportContext) -> list[Block]:
    meta = ctx.metadata
    models = [line for line in (_bert_line(ctx), _static_line(ctx)) if line]
    checkpoints = _checkpoints(ctx)
    if checkpoints:
        models.append("published checkpoints: " + ", ".join(checkpoints))
    rows = [
        ("data", _data_line(ctx)),
        (
            "models",
            "; ".join(models)
            or ", ".join(
                model_label(m)
                for m in ordered_models(
                    {m for df in ctx.tables.values() if "model" in df for m in df["model"].dropna().unique()}
                )
            )
            or DASH,
        ),
        ("seeds", _fine_tuning_seeds(ctx) or DASH),
        ("checkout", meta.get("commit") or "unknown (not a git checkout)"),
        ("settings hash", meta.get("config_hash") or DASH),
        ("cost", _cost_line(meta)),
    ]
    blocks = [settings_block("The run", rows)]
    sources = [str(s) for s in _values(ctx, "source", skip=("token_translation_samples",))]
    if sources == ["synthetic"]:
        blocks.append(
            text(
                "The data are synthetic, so a verdict below says whether the pipeline reproduces an "
                "effect on controlled languages, not whether it holds for real ones."
            )
        )
    return blocks
