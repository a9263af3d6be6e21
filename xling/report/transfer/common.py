"""What every zero-shot transfer section shares: the table and its columns, the labels (the figures the
sections declare: xling.plan.figures), seed means and the cells that refuse to average anything else, and the settings lines.
"""

from __future__ import annotations

import textwrap
from typing import Iterable, Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from xling.data.transfer_tasks import TASK_METRIC  # noqa: F401  (what alpha curves show; used by the sections)
from xling.evaluate.alignment import language_study_rows
from xling.plan.figures import ALPHA_CAPTION, WINDOW_CAPTION, XNLI_CAPTION  # noqa: F401  (used by the sections)
from xling.report import figures
from xling.report.blocks import (
    DASH,
    MODEL_KEYS,
    Block,
    flatten,
    fmt_setting,
    group,
    model_groups,
    model_name,
    settings_block,
)
from xling.report.core import ReportContext, recorded_json, table_with_rows
from xling.report.flags import cell_reason, flagged_cell, with_flags

TABLE = "transfer"
REQUIRED = (
    "task",
    "model",
    "size",
    "window",
    "freeze",
    "train_transform",
    "seed",
    "selection",
    "lang",
    "split",
    "transform",
    "layer",
    "alpha",
    "selected",
    "metric",
    "value",
    "finetune_settings",
)
RESULTS = (
    "value",
    "n",
    "best_epoch",
    "ci_low",
    "ci_high",
    "learn_check",
)  # each seed's own: its selection, item interval, learning check
TASK_ORDER = ("xnli", "pos", "parsing", "ner")
TASK_LABELS = {"xnli": "XNLI", "pos": "UD POS tagging", "parsing": "UD dependency parsing", "ner": "WikiAnn NER"}
METRIC_LABELS = {
    "accuracy": "accuracy",
    "upos": "UPOS accuracy",
    "uas": "UAS",
    "las": "LAS",
    "f1": "span F1",
    "precision": "span precision",
    "recall": "span recall",
}
CHANCE = {("xnli", "accuracy"): 100 / 3}  # the figures' chance line; the cells' flags are the findings' (report.flags)
SELECTION_LABELS = {"en_dev": "English dev (the papers')", "avg_dev": "average dev over languages (Cao et al.)"}
#: a table title's words for a checkpoint selection: both selections can stand on one page, each named in full
SELECTION_TITLES = {"en_dev": "checkpoint chosen on English dev", "avg_dev": "checkpoint chosen on the average dev"}
PAPER_SELECTION = "en_dev"
IDENTITY = ("task", "metric", "lang")  # what a published number must share with ours to be the same measurement
DIGITS = 2  # as Liu et al. Table 4 prints accuracy
DESCRIPTION = (
    "Zero-shot transfer from English: each model is fine-tuned on English training data only (MultiNLI for XNLI, "
    "English UD for POS tagging and parsing, English WikiAnn for NER) and tested on every language of the run. "
    "Numbers are percent: XNLI accuracy, UPOS accuracy (one label per word, on its first subword), UAS and LAS "
    "(CoNLL 2018 semantics) and span F1 (seqeval, IOB2). Each cell is the mean over fine-tuning seeds \u00b1 their "
    "sample standard deviation, with the number of seeds under it (a number with neither is one seed's). "
    "Test-time transforms act at one layer: "
    "zero-mean (each language centred on its mean, also while fine-tuning on English) and MDS (the target "
    "language moved toward English, h + \u03b1 (R_en \u2212 R_xx), \u03b1 chosen per language on that language's "
    "dev split, then applied to its test split)."
)


# ---------------------------------------------------------------------------------------------- seeds and cells


def _settings_of(df: pd.DataFrame, keys: Iterable[str], free: Iterable[str] = ()) -> list[str]:
    skip = set(keys) | set(free) | set(RESULTS) | {"seed", "flag"}
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
            raise ValueError(
                f"{where}: several values of {column} in one cell ("
                + ", ".join(f"{k}={v}" for k, v in zip(keys, cell, strict=True))
                + "); the report averages seeds only"
            )
    duplicated = df.duplicated([*keys, "seed"], keep=False)
    if duplicated.any():
        row = df[duplicated].iloc[0]
        raise ValueError(
            f"{where}: {int(duplicated.sum())} rows share one cell and seed, e.g. "
            + ", ".join(f"{k}={row[k]}" for k in [*keys, "seed"])
        )


def seed_stats(df: pd.DataFrame, keys: list[str], where: str, free: Iterable[str] = ()) -> pd.DataFrame:
    """Per cell of `keys`: mean and sample sd (n - 1) of `value` over seeds, and the number of seeds."""
    check_cells(df, keys, where, free)
    grouped = df.groupby(keys, dropna=False)
    stats = grouped["value"].agg(mean="mean", sd="std", n_seeds="count")
    if "flag" in df:  # a cell is degenerate when any of its seeds is (the findings judge each seed's row)
        stats = stats.join(grouped["flag"].agg(cell_reason).rename("flag"))
    return stats.reset_index()


def average_stats(df: pd.DataFrame, keys: list[str], pivot: str) -> pd.DataFrame:
    """Per cell of `keys`: the average over the target languages (every language but the pivot), taken per
    seed, then mean ± sd over seeds; n_langs = languages in the average."""
    targets = df[df["lang"] != pivot]
    if targets.empty:
        return pd.DataFrame(columns=[*keys, "mean", "sd", "n_seeds", "n_langs"])
    per_seed = targets.groupby([*keys, "seed"], dropna=False).agg(value=("value", "mean"), n_langs=("lang", "nunique"))
    stats = per_seed.groupby(keys, dropna=False).agg(
        mean=("value", "mean"), sd=("value", "std"), n_seeds=("value", "count"), n_langs=("n_langs", "max")
    )
    if "flag" in df:  # an average over a degenerate language carries that language's reason, named
        named = targets.assign(
            flag=[
                f"{lang}: {f}" if isinstance(f, str) and f else None
                for lang, f in zip(targets["lang"], targets["flag"], strict=True)
            ]
        )
        stats = stats.join(named.groupby(keys, dropna=False)["flag"].agg(cell_reason).rename("flag"))
    return stats.reset_index()


def fmt_score(mean: float, sd: float, n_seeds: int) -> str:
    """'67.05 ± 0.83' over several seeds, '67.05' for one (no spread to show)."""
    if mean is None or pd.isna(mean):
        return DASH
    return f"{mean:.{DIGITS}f}" + (f" \u00b1 {sd:.{DIGITS}f}" if n_seeds > 1 and pd.notna(sd) else "")


def seeds_text(n: int) -> str:
    return f"{int(n)} seed{'s' if int(n) != 1 else ''}"


def score_cell(stats: Mapping | None, extra: str = "") -> dict | str:
    """A table cell: mean ± sd, and under it the seed count (several seeds), `extra` (e.g. the alpha chosen) and, when a row of
    the cell is degenerate, the mark and the findings' reason (xling.report.flags)."""
    if stats is None:
        return DASH
    sub = [seeds_text(stats["n_seeds"])] if stats["n_seeds"] > 1 else []  # one seed: a number without ± or count
    if extra:
        sub.append(extra)
    reason = stats.get("flag")
    return flagged_cell(
        fmt_score(stats["mean"], stats["sd"], stats["n_seeds"]),
        reason if isinstance(reason, str) else None,
        " \u00b7 ".join(sub),
    )


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


def freeze_cell(freeze: int) -> str:
    """k and what k froze while fine-tuning, on one line (a second line made every row of the table two high)."""
    freeze = int(freeze)
    if freeze < 0:
        frozen = "static vectors"
    else:  # short: the column is narrow
        frozen = {0: "nothing", 1: "emb. + layer 1"}.get(freeze, f"emb. + layers 1\u2013{freeze}")
    return f"{freeze} ({frozen})"


def variant_label(train_transform: str, transform: str, layer) -> str:
    """How the vectors were treated: none, zero-mean (in fine-tuning and test) or MDS (test only)."""
    at = f", layer {int(layer)}" if pd.notna(layer) and int(layer) >= 0 else ""
    known = {
        ("none", "none"): "none",
        ("zero_mean", "zero_mean"): f"zero-mean (fine-tuning and test{at})",
        ("none", "mds"): f"MDS (test{at})",
        ("none", "rotation-word"): f"word-aligned rotation (test{at})",
        ("none", "rotation-sentence"): f"sentence-aligned rotation (test{at})",
    }
    return known.get((train_transform, transform), f"fine-tuning {train_transform}, test {transform}{at}")


def selection_label(selection: str) -> str:
    """The checkpoint selection in words (no column value in prose)."""
    return f"checkpoint chosen on {SELECTION_LABELS[selection]}" if selection in SELECTION_LABELS else str(selection)


def selection_title(selection: str) -> str:
    return SELECTION_TITLES.get(selection, f"checkpoint selection {selection}")


def selections(df: pd.DataFrame) -> list[str]:
    """The checkpoint selections in the table, the papers' (English dev) first."""
    return sorted(df["selection"].dropna().unique(), key=lambda s: (s != PAPER_SELECTION, str(s)))


def _group_rows(df: pd.DataFrame, key: tuple) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for column, value in zip(MODEL_KEYS, key, strict=True):
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
        return ", ".join(
            f"{figures.model_label(m)} {fmt_setting(column, first[m])}"
            for m in figures.ordered_models(first.index)
            if pd.notna(first[m])
        )
    parts = []
    for key in model_groups(df):
        vals = sorted(_group_rows(df, key)[column].dropna().unique().tolist(), key=str)
        parts.append(
            f"{model_name(dict(zip(MODEL_KEYS, key, strict=True)))} {'/'.join(fmt_setting(column, v) for v in vals)}"
        )
    return ", ".join(parts)


def shown_line(df: pd.DataFrame, choices: Iterable[str] = ()) -> str:
    """The settings behind a table or figure: the section's choices, then what the rows recorded (freeze,
    seeds, the pretrained models' dimension, data source, vocabulary, pretraining seed)."""
    parts = list(choices)
    for column, label in (
        ("dim", "dim"),
        ("source", "data"),
        ("vocab", "vocabulary"),
        ("pretrain_seed", "pretraining seed"),
    ):
        value = _per_model(df, column)
        if value:
            parts.append(f"{label} {value}")
    seeds = sorted(df["seed"].dropna().unique().tolist()) if "seed" in df else []
    if seeds:
        parts.append(
            ("fine-tuning seed " if len(seeds) == 1 else "mean \u00b1 sd over fine-tuning seeds ")
            + ", ".join(str(int(s)) for s in seeds)
        )
    return "; ".join(parts)


def finetune_blocks(df: pd.DataFrame, tasks: Iterable[str]) -> list[Block]:
    """The fine-tuning hyper-parameters the rows recorded (finetune_settings), one settings table per task and
    distinct block, naming the models that used it."""
    blocks = []
    for task in tasks:
        rows = df[df["task"] == task]
        for value, part in rows.groupby("finetune_settings", sort=False):
            models = ", ".join(model_name(dict(zip(MODEL_KEYS, key, strict=True))) for key in model_groups(part))
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
    return [group(blocks, "Fine-tuning settings of these numbers")] if blocks else []


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
    """The transfer table without Cao et al.'s fine-tunings (their own section, xling.report.alignment), each row
    with the degenerate reasons the findings give it (`flag`)."""
    df, where = table_with_rows(ctx, TABLE, REQUIRED, "transfer")
    return with_flags(TABLE, language_study_rows(df), ctx.pivot), where


def _stats_index(stats: pd.DataFrame, keys: list[str]) -> dict:
    return {tuple(r[k] for k in keys): r for r in stats.to_dict("records")}
