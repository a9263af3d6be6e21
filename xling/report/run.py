"""The report's first two sections: the study and its data, and the settings that produced the numbers.

Both read the tables, not the live config: each result table records the settings that produced it
(xling.tables.run_settings: the model's hyper-parameters, the data settings, the store's, and one column
per evaluation setting). So a report rendered after a config edit shows what its numbers used, and only
what applies to the run (no real-data keys on a synthetic run, no model that is not in the tables).
Tables that disagree (made under different settings) are shown side by side, each naming its tables.
"""

from __future__ import annotations

import os
from typing import Iterable

import pandas as pd

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
    text,
)
from xling.report.core import SECTIONS, ReportContext, recorded_json, register_section
from xling.report.figures import model_label, ordered_models, size_label

JSON_COLUMNS = ("hparams", "data_settings", "represent_settings", "finetune_settings")
LISTED = 12  # a setting with more values than this lists the first ones and the count
#: per-row numbers every table with intervals or chance levels carries beside its results: not settings (how an
#: interval was drawn, ci_level / ci_resamples / ci_seed / ci_method, and chance_how are)
ROW_NUMBERS = ("chance", "flag", "n_items")


def _is_row_number(column: str) -> bool:
    return column in ROW_NUMBERS or column.endswith(("_low", "_high"))


STUDY_DESCRIPTION = (
    "Why is multilingual BERT multilingual? Following Liu, Hsu, Chuang and Lee (2020, \u201cA Study of "
    "Cross-Lingual Ability and Language-specific Information in Multilingual BERT\u201d, arXiv:2004.09205), "
    "static word embeddings (GloVe, Word2Vec) and a BERT are trained from scratch on the same multilingual "
    "corpus, with no cross-lingual signal, for each data size and context window. Cross-lingual alignment is "
    "then measured without any mapping by word retrieval: each source word of a bilingual dictionary is "
    "compared with every candidate word of the other language, and the rank of its translation is scored."
)


def _values(ctx: ReportContext, column: str, skip: tuple[str, ...] = ()) -> list:
    """The values of `column` in every table but those of `skip`."""
    return sorted(
        {v for key, df in ctx.tables.items() if key not in skip and column in df for v in df[column].dropna().unique()}
    )


def _languages(ctx: ReportContext) -> list[str]:
    """The run's languages as its tables recorded them (data_settings), else those its tables name."""
    for value in ctx.recorded("data_settings"):
        if recorded_json(value).get("languages"):
            return list(recorded_json(value)["languages"])
    pairs = {p for df in ctx.tables.values() if "pair" in df for p in df["pair"].dropna().unique()}
    pivots = sorted({p.split("-")[0] for p in pairs})
    return pivots + sorted({p.split("-", 1)[1] for p in pairs} - set(pivots))


def _joined(values: Iterable[str]) -> str:
    return ", ".join(values) or DASH


def _windows_by_model(ctx: ReportContext) -> str:
    """Each model's windows (the grid's, the window sweep's, fastText's and the ablations' own told apart)."""
    found: dict[str, set[int]] = {}
    for df in ctx.tables.values():
        if "model" in df and "window" in df:
            for model, window in df[["model", "window"]].dropna().drop_duplicates().itertuples(index=False):
                if window > 0:
                    found.setdefault(model, set()).add(int(window))
    return (
        "; ".join(
            f"{model_label(m)} {', '.join(str(w) for w in sorted(found[m], reverse=True))}"
            for m in ordered_models(found)
        )
        or DASH
    )


@register_section("overview", "Study and data")
def render_overview(ctx: ReportContext) -> list[Block]:
    models = [m for df in ctx.tables.values() if "model" in df for m in df["model"].dropna().unique()]
    # the data source recorded by every table (the token-translation samples' `source` is a sample's sentence)
    sources = [str(s) for s in _values(ctx, "source", skip=("token_translation_samples",))]
    rows = [
        (
            "run",
            _joined(str(r) for r in _values(ctx, "run")) if _values(ctx, "run") else str(ctx.config.get("run") or DASH),
        ),
        ("data source", _joined(sources)),
        ("languages (first = pivot)", _joined(_languages(ctx))),
        (
            "corpus sizes (sentences per language)",
            _joined(f"{size_label(s)} ({int(s):,})" for s in _values(ctx, "size") if s > 0),
        ),
        ("context windows (tokens), by model", _windows_by_model(ctx)),
        ("models", _joined(model_label(m) for m in ordered_models(models))),
        ("tables", _tables_line(ctx.table_paths)),
    ]
    # behind its summary line: the first screen already says what the run is; this adds each model's windows and
    # the files read (a screen of paths), which a reader opens when they need them
    blocks = [
        text(STUDY_DESCRIPTION, ctx.report_config.get("description", "")),
        group(
            [settings_block("The run", rows)],
            "The run: sources, languages, sizes, each model's windows, the tables read",
        ),
    ]
    if sources == ["synthetic"]:
        blocks.append(
            text(
                "The data are synthetic: generated languages with known translation dictionaries, "
                "so the numbers test the pipeline and the effect of the settings, not real "
                "languages."
            )
        )
    stand_ins = ctx.config.get("stand_ins") or {}
    if stand_ins:
        blocks.append(
            text(
                "Stand-ins: parts of the real data or models are not to be had here, and these stand in "
                "for them, so the numbers on them are not comparable to the papers': "
                + "; ".join(f"{name}: {what}" for name, what in stand_ins.items())
                + "."
            )
        )
    return blocks


#: a file name found in at least this many folders (each fine-tuning's finetune.json) is named once, with its count
MANY_FOLDERS = 3


def _tables_line(paths) -> str:
    """The run's result files by folder, each folder once ('results/demo/eval/: word_retrieval.parquet, ...'), and
    a file name that many folders hold once with their count and common folder ('finetune.json in 22 folders under
    results/demo/finetuned/'): a path per fine-tuning filled half a screen."""
    files = [
        str(path)
        for value in paths.values()
        for path in (value if isinstance(value, (list, tuple)) else str(value).split(", "))
    ]
    folders_of: dict[str, list[str]] = {}
    for path in files:
        folder, _, name = path.rpartition("/")
        folders_of.setdefault(name, []).append(folder)
    by_folder: dict[str, list[str]] = {}
    for path in files:
        folder, _, name = path.rpartition("/")
        if len(folders_of[name]) < MANY_FOLDERS:
            by_folder.setdefault(f"{folder}/" if folder else "", []).append(name)
    parts = [f"{folder} {', '.join(names)}".strip() for folder, names in by_folder.items()]
    parts += [
        f"{name} in {len(folders)} folders under {os.path.commonpath(folders)}/"
        for name, folders in folders_of.items()
        if len(folders) >= MANY_FOLDERS
    ]
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------- settings


def _recorded_blocks(ctx: ReportContext, column: str, title: str, model: str | None = None) -> list[Block]:
    """One settings table per distinct JSON block recorded in `column` (more than one: the tables differ)."""
    recorded = ctx.recorded(column, model)
    blocks = []
    for value, keys in recorded.items():
        suffix = f" ({', '.join(keys)})" if len(recorded) > 1 else ""
        blocks.append(settings_block(title + suffix, flatten(recorded_json(value)) or [(DASH, "none")]))
    return blocks


def _model_blocks(ctx: ReportContext) -> list[Block]:
    models = ordered_models({m for df in ctx.tables.values() if "hparams" in df for m in df["model"].unique()})
    blocks = []
    for model in models:
        if not any(recorded_json(v) for v in ctx.recorded("hparams", model)):  # a Hugging Face checkpoint
            blocks.append(settings_block(model, [("weights", "as published (Hugging Face checkpoint)")]))
            continue
        blocks += _recorded_blocks(ctx, "hparams", model_label(model), model)
        blocks += _recorded_blocks(ctx, "represent_settings", f"{model_label(model)}: representation store", model)
    return blocks


def _column_value(df: pd.DataFrame, column: str) -> str:
    """One value; or the value per model where each model has one; or the values, listed."""
    values = df[column].dropna().unique()
    if len(values) <= 1:
        return fmt_setting(column, values[0]) if len(values) else DASH
    if column not in MODEL_KEYS and set(MODEL_KEYS) <= set(df):
        per_model = df.groupby("model")[column]
        if (per_model.nunique() <= 1).all():
            first = per_model.first()
            return "; ".join(f"{model_label(m)} {fmt_setting(column, first[m])}" for m in ordered_models(first.index))
        per_group = df.groupby(MODEL_KEYS)[column]
        if (per_group.nunique() <= 1).all():
            first = per_group.first()
            return "; ".join(
                f"{model_name(dict(zip(MODEL_KEYS, g, strict=True)))} {fmt_setting(column, first[g])}"
                for g in model_groups(df)
                if g in first.index
            )
    try:
        values = sorted(values)
    except TypeError:  # mixed types
        values = sorted(values, key=str)
    shown = ", ".join(fmt_setting(column, v) for v in values[:LISTED])
    return shown + (f", \u2026 ({len(values)} values)" if len(values) > LISTED else "")


def _evaluation_blocks(ctx: ReportContext) -> list[Block]:
    """Per result table, every column that is not a result: constants, per-model values, the grid."""
    results = {key: cols for section in SECTIONS.values() for key, cols in section.results.items()}
    blocks = []
    for key, df in ctx.tables.items():
        if key not in results:
            continue
        columns = [
            c
            for c in df.columns
            if c not in results[key]
            and c not in JSON_COLUMNS
            and c not in (*MODEL_KEYS, "run", "source", "vocab")
            and not str(c).startswith("_")
            and not _is_row_number(str(c))
        ]
        blocks.append(settings_block(key, [(c, _column_value(df, c)) for c in columns]))
    return blocks


@register_section("settings", "Appendix: settings")
def render_settings(ctx: ReportContext) -> list[Block]:
    """What produced the numbers, as the tables recorded it: data, then each model, then each evaluation."""
    data = _recorded_blocks(ctx, "data_settings", "Data, corpus and tokenizer")
    blocks = [
        text(
            "As recorded in the result tables when they were computed (not the current config): the data, "
            "each model's hyper-parameters, and each table's evaluation settings (grid columns list "
            "their values)."
        )
    ]
    blocks += data or [
        text(
            "The tables record no data settings (made before xling recorded them): rerun the "
            "evaluations to record them."
        )
    ]
    models = _model_blocks(ctx)
    if models:
        blocks.append(group(models))
    evaluation = _evaluation_blocks(ctx)
    if evaluation:
        blocks.append(group(evaluation))
    return blocks
