"""Report section for BERT pretraining: the masked-LM loss curve of every BERT of the run and a summary.

Its table is built from the models' training logs (`bert_training_logs`: the training_log.tsv of each
model directory). The hyper-parameters shown are those the result tables recorded for BERT (`hparams`),
not the live config.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from xling.report import figures
from xling.report.blocks import DASH, Block, flatten, fmt_count, fmt_num, table_block
from xling.report.core import (
    ReportContext,
    read_table,
    recorded_json,
    register_list_table,
    register_section,
    require_columns,
)
from xling.report.figures import size_label

# BERT hyper-parameters named in the loss figure's title (all of them are in the Settings section).
# batch_tokens where set: the batch counted in tokens (batch_size then counts nothing at any window)
TITLE_KEYS = (
    "hidden_size",
    "num_layers",
    "num_heads",
    "intermediate_size",
    "learning_rate",
    "batch_size",
    "batch_tokens",
    "max_steps",
    "warmup_steps",
    "mlm_probability",
    "seed",
)
LOG_COLUMN_ALIASES = {
    "tokens/s": "tokens_per_s",
    "tokens_per_sec": "tokens_per_s",
    "tok/s": "tokens_per_s",
    "learning_rate": "lr",
}
MODEL_DIR_NAME = re.compile(r"^(?P<size>\d+)-w(?P<window>\d+)$")


def load_training_logs(logs: Iterable[str | Path | tuple[str | Path, int, int] | Mapping[str, Any]]) -> pd.DataFrame:
    """Concatenate BERT training logs (TSV with a header: step, loss, lr, tokens_per_s) into one tidy frame.

    `logs`: (path, size, window) tuples, dicts with path, size, window and optional model (default bert),
    or bare paths inside the workflow's model directory `.../{model}/{size}-w{window}/training_log.tsv`.
    Should a log repeat steps (a resume that appended), the later row wins: it led to the saved model.
    Bad rows raise ValueError naming the file and line.
    """
    frames = []
    for item in logs:
        if isinstance(item, Mapping):
            path, size, window, model = item["path"], item["size"], item["window"], item.get("model", "bert")
        elif isinstance(item, (str, Path)):
            path = Path(item)
            match = MODEL_DIR_NAME.match(path.parent.name)
            if not match:
                raise ValueError(
                    f"{path}: cannot tell size and window from the directory name "
                    f"{path.parent.name!r} (expected '<size>-w<window>'); pass (path, size, window)"
                )
            size, window, model = int(match["size"]), int(match["window"]), "bert"
        else:
            (path, size, window), model = item, "bert"
        path = Path(path)
        frame = read_table(path) if path.suffix == ".parquet" else pd.read_csv(path, sep="\t")
        frame.columns = [LOG_COLUMN_ALIASES.get(str(c).strip().lower(), str(c).strip().lower()) for c in frame.columns]
        require_columns(frame, ("step", "loss"), str(path))
        if frame.empty:
            raise ValueError(f"{path}: training log has a header but no rows")
        for column in [c for c in ("step", "loss", "lr", "tokens_per_s") if c in frame]:
            numeric = pd.to_numeric(frame[column], errors="coerce")
            bad = numeric.isna() & frame[column].notna()
            if bad.any():
                row = int(bad.to_numpy().nonzero()[0][0])
                raise ValueError(f"{path}:{row + 2}: {column} is not a number: {frame[column].iloc[row]!r}")
            frame[column] = numeric
        frame = frame.drop_duplicates("step", keep="last").sort_values("step")
        frame.insert(0, "window", int(window))
        frame.insert(0, "size", int(size))
        frame.insert(0, "model", model)
        frames.append(frame)
    if not frames:
        raise ValueError("load_training_logs: no logs given")
    return pd.concat(frames, ignore_index=True)


register_list_table("bert_training_logs", "bert_training", load_training_logs)


def hparams_line(ctx: ReportContext) -> str:
    """The main hyper-parameters of the BERTs the loss figure plots (the grid's: the ablations' bilingual BERTs,
    recorded under model bert in the ablation table, are not plotted), as the result tables recorded them; one
    line per distinct setting, '' when no table did."""
    recorded = {
        value: keys for value, keys in ctx.recorded("hparams", model="bert").items() if set(keys) - {"ablation"}
    }
    lines = [
        ", ".join(f"{k} {v}" for k, v in flatten(recorded_json(value)) if k in TITLE_KEYS and v != DASH)
        for value in recorded
    ]
    return " | ".join(dict.fromkeys(line for line in lines if line))


@register_section("bert_training", "BERT pretraining", required=("bert_training",))
def render_bert_training(ctx: ReportContext) -> list[Block]:
    where = ctx.table_paths["bert_training"]
    log = ctx.tables["bert_training"]
    require_columns(log, ("size", "window", "step", "loss"), where)
    if "model" in log:
        log = log[log["model"] == "bert"]
    if log.empty:
        raise ValueError(f"{where}: no BERT training-log rows")
    line = hparams_line(ctx)
    fig = figures.pretraining_loss(log, settings=line)
    block = ctx.figure(
        "bert_pretraining_loss", fig, "bert_pretraining_loss", line or "see Settings", "BERT pretraining loss"
    )
    rows = []
    log = log.sort_values(["size", "window", "step"], ascending=[True, False, True])
    for (size, window), run in log.groupby(["size", "window"], sort=False):
        rate = run["tokens_per_s"].mean() if "tokens_per_s" in run else float("nan")
        rows.append(
            [
                size_label(size),
                str(window),
                fmt_count(run["step"].iloc[-1]),
                fmt_num(run["loss"].iloc[0]),
                fmt_num(run["loss"].iloc[-1]),
                fmt_num(run["loss"].min()),
                "\u2014" if math.isnan(rate) else f"{rate:,.0f}",
            ]
        )
    columns = ["size (sentences/lang)", "window", "last step", "first loss", "last loss", "min loss", "mean tokens/s"]
    table = table_block(
        "Pretraining summary",
        columns,
        rows,
        numeric=range(2, 7),
        note="Loss is the training masked-LM loss as logged (one batch per logged step). "
        + (
            f"Settings: {line}; the full list is in Settings."
            if line
            else "The result tables record no BERT hyper-parameters."
        ),
    )
    return [block, table]
