"""Tidy result tables: every number carries the settings that produced it, as columns."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from xling.data.formats import read_dictionary
from xling.data.wordpiece import normalize_word
from xling.io import atomic_path, atomic_write


def run_settings(config: dict, model: str) -> dict:
    """Settings of the run and of `model` that every result row of that model carries.

    The model's whole hyper-parameter block travels as compact JSON (`hparams`), so a row can always
    be traced back to the exact configuration; the ones readers compare most get their own column.
    """
    hp = {k: v for k, v in config.get(model, {}).items() if k not in ("threads", "mem_mb", "device")}
    return {
        "dim": hp.get("dim", hp.get("hidden_size")),
        "seed": hp.get("seed"),
        "source": config["data"]["source"],
        "vocab": config["tokenizer"]["vocab"],
        "run": config["run"],
        "hparams": json.dumps(hp, sort_keys=True),
    }


def with_settings(table: pd.DataFrame, **settings) -> pd.DataFrame:
    """Return `table` with one constant column per setting (the tidy-table convention)."""
    table = table.copy()
    for key, value in settings.items():
        table[key] = value
    return table


def write_parquet(table: pd.DataFrame, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        table.to_parquet(tmp, index=False)


def gather(paths: list[str | Path], out_parquet: str | Path, out_csv: str | Path) -> pd.DataFrame:
    """Concatenate per-setting tables (same columns) into one table, also as CSV for spreadsheets."""
    table = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    write_parquet(table, out_parquet)
    with atomic_write(out_csv) as handle:
        table.to_csv(handle, index=False)
    return table


def dictionary_words(dictionary_paths: list[str | Path], lang: str, pivot: str, lowercase: bool = False) -> list[str]:
    """The words of `lang` that appear in the pivot-x dictionaries (source side for the pivot), in the
    form of the token files (`normalize_word`: lowercased and accent-stripped when `lowercase`)."""
    words: set[str] = set()
    for path in dictionary_paths:
        tgt = Path(path).name.split(".")[0].split("-", 1)[1]
        pairs = read_dictionary(path)
        if lang == pivot:
            words.update(src for src, _ in pairs)
        elif lang == tgt:
            words.update(t for _, t in pairs)
    return sorted({normalize_word(w, lowercase) for w in words})
