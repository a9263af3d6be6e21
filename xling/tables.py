"""Tidy result tables: every number carries the settings that produced it, as columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pandas as pd

from xling.io import atomic_path, atomic_write
from xling.runtime import computed


TRAINED_VOCAB_KEYS = ("vocab_size", "min_frequency", "limit_alphabet")


def data_settings(config: dict) -> dict:
    """The settings that made the run's data, only those that apply to it: the languages, the synthetic
    generator's block (synthetic data) or the real-data choices (not the download transport: files are
    pinned by sha256), the corpus sampling and the tokenizer (training keys only for a trained vocabulary)."""
    data = config.get("data") or {}
    if data.get("source") == "synthetic":
        source = {"data": {"source": "synthetic"}, "synthetic": config.get("synthetic") or {}}
    else:
        drop = {"wikipedia"} if data.get("corpus", "wikipedia") != "wikipedia" else set()
        source = {"data": {k: v for k, v in computed("data", data).items() if k not in drop}}
    tokenizer = {
        k: v
        for k, v in (config.get("tokenizer") or {}).items()
        if k not in TRAINED_VOCAB_KEYS or (config.get("tokenizer") or {}).get("vocab") == "train"
    }
    return {
        "languages": config.get("languages"),
        **source,
        "corpus": config.get("corpus") or {},
        "tokenizer": tokenizer,
    }


def run_settings(config: dict, model: str) -> dict:
    """Settings of the run and of `model` that every result row of that model carries.

    JSON blocks trace each row to the exact configuration that produced it (the report's Settings
    section reads them, never the live config): the model's hyper-parameters (`hparams`), the data
    (`data_settings`) and, for our BERT, the representation store (`represent_settings`). The settings
    readers compare most get their own column.
    """
    hp = computed(model, config.get(model, {}))
    settings = {
        "dim": hp.get("dim", hp.get("hidden_size")),
        "seed": hp.get("seed"),
        "source": config["data"]["source"],
        "vocab": config["tokenizer"]["vocab"],
        "run": config["run"],
        "hparams": json.dumps(hp, sort_keys=True),
        "data_settings": json.dumps(data_settings(config), sort_keys=True),
    }
    if model == "bert":
        represent = computed("represent", config.get("represent") or {})
        settings["represent_settings"] = json.dumps(represent, sort_keys=True)
    return settings


def with_settings(table: pd.DataFrame, **settings) -> pd.DataFrame:
    """Return `table` with one constant column per setting (the tidy-table convention)."""
    table = table.copy()
    for key, value in settings.items():
        table[key] = value
    return table


def write_parquet(table: pd.DataFrame, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        table.to_parquet(tmp, index=False)


def gather(
    paths: list[str | Path],
    out_parquet: str | Path,
    out_csv: str | Path,
    marks: Mapping[str, Iterable[str | Path]] | None = None,
    each: Callable[[Path, pd.DataFrame], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Concatenate per-setting tables (same columns) into one table, also as CSV for spreadsheets.

    `marks` {column: paths}: a boolean column per experiment, True on the rows read from its paths, so an
    experiment that shares some tables with another (the window sweep, the grid) keeps its rows identifiable.
    `each(path, table)`: what to add to each table before concatenating (its rows' intervals from its items).
    """
    marked = {column: {Path(p) for p in experiment} for column, experiment in (marks or {}).items()}
    stray = set().union(*marked.values()) - {Path(p) for p in paths}
    if stray:
        raise ValueError(f"marked tables that are not gathered: {sorted(map(str, stray))}")
    tables = [
        pd.read_parquet(p).assign(**{column: Path(p) in experiment for column, experiment in marked.items()})
        for p in paths
    ]
    if each is not None:
        tables = [each(Path(p), table) for p, table in zip(paths, tables, strict=True)]
    table = pd.concat(tables, ignore_index=True)
    write_parquet(table, out_parquet)
    with atomic_write(out_csv) as handle:
        table.to_csv(handle, index=False)
    return table
