"""Published numbers beside ours: read resources/paper_results.yaml and compare each number with the run's.

paper_results.yaml: {table key: [entry, ...]}. An entry is one published table: `source` (citation),
`id` (its table id), `paper` (its key in ../shared/papers/published_results.yaml, which a test checks every
copied value against), `metric` (our result column), `scale` (ours x scale = the published unit),
`model` (our `model` value of the published model), `settings` (the published settings, named as our
setting columns), optional `best_of`, `what`, `note`, `in_source`, and `rows`: {value, ...} where a row
adds settings (language, variant, alpha, ...) and `at` (where a "best" value was reached).

A published number is compared with our rows that share its *identity* (the section says which
columns: language, direction, variant); every other published setting is matched where our table has
that value, and otherwise our value is shown beside it, flagged (paper: Google's mBERT, ours: a BERT of
this run; paper layer 8, ours the report layer). A setting given as `best` (and any setting left
open) takes our best value over it. One table per published entry: a row per published number, a
column per model of ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml

from xling.report.blocks import (
    DASH,
    MODEL_KEYS,
    PERCENT_METRICS,
    Block,
    empty_block,
    fmt_setting,
    model_groups,
    model_name,
    table_block,
)

DEFAULT_PAPER_RESULTS = Path("resources/paper_results.yaml")
NO_PUBLISHED = "No published numbers recorded"
BEST = "best"
ENTRY_KEYS = {
    "source",
    "id",
    "paper",
    "metric",
    "scale",
    "model",
    "settings",
    "best_of",
    "what",
    "note",
    "in_source",
    "rows",
}
NOT_SETTINGS = {"value", "at"}
COLUMN_LABELS = {"lang": "language", "src": "from", "tgt": "into", "alpha": "\u03b1", "pos": "part of speech"}
PUBLISHED_MODELS = {
    "bert-base-multilingual-cased": "Google's mBERT",
    "bert": "BERT from scratch",
    "bilingual-mlm": "a bilingual MLM per language pair",
}


def load_paper_results(path: str | Path | None) -> dict[str, list[dict]]:
    """Read paper_results.yaml (layout: module docstring); an absent file means no entries. A malformed
    entry raises ValueError naming the file, table key and entry."""
    if path is None or not Path(path).exists():
        return {}
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected a mapping of table key -> list of entries")
    out = {}
    for table, entries in data.items():
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            raise ValueError(f"{path}: {table}: expected a list of entries")
        for i, entry in enumerate(entries):
            _check_entry(entry, f"{path}: {table}[{i}]")
        out[table] = [_one_model(entry) for entry in entries]
    return out


def _check_entry(entry: Any, where: str) -> None:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: expected a mapping")
    for key in ("source", "id", "metric", "rows"):
        if key not in entry:
            raise ValueError(f"{where}: missing '{key}'")
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {sorted(ENTRY_KEYS)}")
    for key in ("settings", "best_of", "in_source"):
        if not isinstance(entry.get(key) or {}, Mapping):
            raise ValueError(f"{where}: '{key}' must be a mapping of setting column -> value")
    for j, row in enumerate(entry["rows"] or []):
        if not isinstance(row, Mapping) or "value" not in row:
            raise ValueError(f"{where}.rows[{j}]: needs a value")
        if not isinstance(row["value"], (int, float)) or isinstance(row["value"], bool):
            raise ValueError(f"{where}.rows[{j}]: value must be a number, got {row['value']!r}")
    models = {row.get("model", entry.get("model")) for row in entry["rows"] or []} | (
        {entry["model"]} if "model" in entry else set()
    )
    if None in models or len(models) > 1:
        raise ValueError(f"{where}: give one model for the entry (found {sorted(map(str, models))})")


def _one_model(entry: Mapping) -> dict:
    """The entry with its model on the entry (rows may name it instead, all the same one)."""
    rows = [{k: v for k, v in row.items() if k != "model"} for row in entry["rows"] or []]
    model = entry.get("model") or next((row["model"] for row in entry["rows"] or []), None)
    return {**entry, "model": model, "rows": rows}


# ---------------------------------------------------------------------------------------------- matching


@dataclass(frozen=True)
class Matching:
    """How a section's table meets its published numbers.

    identity: published settings our rows must share to be the same measurement (language, direction,
    variant); a published number whose identity is not in our table is listed as "not in this run".
    defaults: our value of a setting when the paper's is not in our table, or the paper gives none
    (the report layer; BEST = ours at its best). absent: how to name our side of a published setting that
    is no column of ours (e.g. {"pos": "all dictionary words"})."""

    identity: tuple[str, ...]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    absent: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Cell:
    """Ours for one published number and one model of ours."""

    value: float
    chosen: dict  # setting -> our value where it was chosen as best
    differs: list[str]  # published settings ours does not share, as 'layer 2 (paper 8)'


def _row_settings(entry: Mapping, prow: Mapping) -> dict:
    return {**(entry.get("settings") or {}), **{k: v for k, v in prow.items() if k not in NOT_SETTINGS}}


def _label(column: str, value: Any) -> str:
    return "best" if value == BEST else fmt_setting(column, value)


def compare(
    df: pd.DataFrame, metric: str, scale: float, settings: Mapping, matching: Matching, best_of: Mapping
) -> Cell | None:
    """Ours for one model of ours (`df`: its rows sharing the published identity) against published
    `settings` (model and identity left out): None when no row is left."""
    for column, allowed in best_of.items():
        if column in df:
            df = df[df[column].isin(allowed)]
    unmatched, best = [], []
    for column in dict.fromkeys([*settings, *matching.defaults]):
        wanted = settings.get(column)
        if column not in df:  # no setting of ours: said once, in the table's note
            continue
        if wanted == BEST:
            best.append(column)
            continue
        if column in settings and (df[column] == wanted).any():
            df = df[df[column] == wanted]
            continue
        fallback = matching.defaults.get(column)
        if df[column].nunique() == 1:
            pass  # one value: nothing to choose
        elif fallback is None or fallback == BEST or not (df[column] == fallback).any():
            best.append(column)
        else:
            df = df[df[column] == fallback]
        if column in settings:
            unmatched.append(column)
    if df.empty:
        return None
    chosen = {}
    if best:
        means = df.groupby(best, as_index=False)[metric].mean()
        top = means.sort_values([metric, *best], ascending=[False] + [True] * len(best), kind="stable").iloc[0]
        chosen = {c: top[c] for c in best}
        for column, value in chosen.items():
            df = df[df[column] == value]
    differs = [f"{c} {_label(c, df[c].iloc[0])} (paper {_label(c, settings[c])})" for c in unmatched]
    return Cell(float(df[metric].mean()) * scale, chosen, differs)


def published_blocks(
    table: str,
    ours: pd.DataFrame,
    published: Mapping[str, list[dict]],
    where: str,
    matching: Matching,
    title: str = "Published numbers",
) -> list[Block]:
    """One block per published entry of `table`: its numbers beside ours (see the module docstring), or
    the line saying none are recorded."""
    entries = published.get(table) or []
    if not entries:
        return [empty_block(title, f"{NO_PUBLISHED} for this table ({table}) in {where}.")]
    return [_entry_block(entry, ours, matching, where) for entry in entries]


def _entry_block(entry: Mapping, ours: pd.DataFrame, matching: Matching, where: str) -> Block:
    metric, scale = entry["metric"], float(entry.get("scale", 1))
    title = f"Published: {entry['source']}, {entry['id']}" + (f" \u2014 {entry['what']}" if entry.get("what") else "")
    rows, digits = entry["rows"] or [], _digits(entry)
    if metric in PERCENT_METRICS and scale == 1:  # a fraction printed by the paper: in percent, as our tables
        rows = [dict(r, value=100 * r["value"]) for r in rows]
        scale, digits = 100.0, max(1, digits - 2)
        title = title.replace(" (0-1)", "") + " (in %; the paper prints 0-1)"  # one unit per metric on the page
    shown = [c for c in dict.fromkeys(k for r in rows for k in r if k not in ("value", "at"))]
    labels = [COLUMN_LABELS.get(c, c) for c in shown]
    paper = _paper_settings(entry)
    if metric not in ours:
        cells = [[fmt_setting(c, r.get(c)) for c in shown] + [f"{r['value']:,.{digits}f}"] for r in rows]
        return table_block(
            title,
            labels + ["published"],
            cells,
            numeric=[len(shown)],
            note=f"Our table has no column {metric}: this run does not measure these numbers. {paper} From {where}.",
        )
    matched, absent = [], []  # absent: the identities (e.g. languages) of the published numbers not in this run
    for prow in rows:
        settings = _row_settings(entry, prow)
        mask = pd.Series(True, index=ours.index)
        for column in matching.identity:
            if column in settings:
                if column not in ours:
                    raise ValueError(
                        f"{where}: {entry['source']} {entry['id']}: our table has no column {column!r} "
                        "to match the published numbers on"
                    )
                mask &= ours[column] == settings[column]
        if mask.any():
            matched.append((prow, settings, ours[mask]))
        else:
            absent.append(settings)
    missing = _not_in_run(absent, ours, matching.identity)
    if not matched:  # e.g. synthetic languages: the published numbers are listed for reference, not compared
        cells = [[fmt_setting(c, r.get(c)) for c in shown] + [f"{r['value']:,.{digits}f}"] for r in rows]
        return table_block(
            title,
            labels + ["published"],
            cells,
            numeric=[len(shown)],
            collapsed=True,
            note=f"None of the published numbers is for a setting of this run ({missing}): they "
            f"stand beside ours for reference, not as a comparison. {paper} From {where}.",
        )
    groups = _groups(entry, [m[2] for m in matched])
    header = [
        {"text": model_name(dict(zip(MODEL_KEYS, g, strict=True))), "sub": _group_flags(entry, g)} for g in groups
    ]
    cells = []
    for prow, settings, rows_in_run in matched:
        model_settings = {k: v for k, v in settings.items() if k not in MODEL_KEYS and k not in matching.identity}
        line = [fmt_setting(c, prow[c]) if c in prow else DASH for c in shown]
        at = ", ".join(f"{c} {_label(c, v)}" for c, v in (prow.get("at") or {}).items())
        printed = f"{prow['value']:,.{digits}f}"
        line.append({"text": printed, "sub": f"at {at}"} if at else printed)
        for g in groups:
            part = rows_in_run
            for column, value in zip(MODEL_KEYS, g, strict=True):
                part = part[part[column] == value]
            cell = (
                compare(part, metric, scale, model_settings, matching, entry.get("best_of") or {})
                if len(part)
                else None
            )
            line.append(_cell(cell, prow["value"], digits, _comparable(entry, g, part)))
        cells.append(line)
    note = f"{paper} Ours \u00d7 {fmt_setting('scale', scale)} to match the shown unit. " if scale != 1 else f"{paper} "
    note += (
        "Under each of ours: the difference (ours \u2212 published) where the setting is comparable (the "
        "paper's model, or the same real data), else \u201cfor reference\u201d; and the settings that differ "
        "from the paper's."
    )
    no_column = [
        c
        for c in dict.fromkeys(k for _, settings, _ in matched for k in settings)
        if c not in ours and c not in MODEL_KEYS
    ]
    if no_column:
        note += (
            " No setting of ours: "
            + "; ".join(f"{c} (ours: {matching.absent.get(c, 'not chosen')})" for c in no_column)
            + "."
        )
    if absent:
        note += f" Not in this run: {missing}."
    if entry.get("note"):
        note += f" {entry['note']}"
    note += f" From {where}."
    return table_block(
        title,
        labels + ["published"] + header,
        cells,
        note=note,
        numeric=range(len(shown), len(shown) + 1 + len(groups)),
        wrap=range(len(shown) + 1, len(shown) + 1 + len(groups)),
    )


def _not_in_run(absent: list[Mapping], ours: pd.DataFrame, identity: tuple[str, ...]) -> str:
    """'lang es, ar' for the identity values of published numbers that this run lacks (in words: 'proper noun')."""
    parts = []
    for column in identity:
        values = [
            v
            for v in dict.fromkeys(s[column] for s in absent if column in s)
            if column not in ours or not (ours[column] == v).any()
        ]
        if values:
            named = ", ".join(_label(column, v).replace("_", " ") for v in values)
            parts.append(f"{COLUMN_LABELS.get(column, column)} {named}")
    return "; ".join(parts) or "other combinations of " + ", ".join(identity)


def _groups(entry: Mapping, parts: list[pd.DataFrame]) -> list[tuple]:
    """Our models to compare with: the published model (and size, window) where this run has it, else all."""
    everything = pd.concat(parts)
    settings = {"model": entry.get("model"), **(entry.get("settings") or {})}
    for column in MODEL_KEYS:
        if settings.get(column) is not None and (everything[column] == settings[column]).any():
            everything = everything[everything[column] == settings[column]]
    return model_groups(everything)


def _group_flags(entry: Mapping, group: tuple) -> str:
    """How one model of ours differs from the published one (model, data size, window)."""
    settings = {"model": entry.get("model"), **(entry.get("settings") or {})}
    flags = []
    for column, ours in zip(MODEL_KEYS, group, strict=True):
        paper = settings.get(column)
        if paper is not None and paper != ours:
            flags.append(
                f"paper: {PUBLISHED_MODELS.get(paper, model_name({'model': paper, 'size': 0}))}"
                if column == "model"
                else f"paper {column} {fmt_setting(column, paper)}"
            )
    return "; ".join(flags) if flags else "as in the paper"


#: setting values the papers' lines say in words, not as the run's column values
WORDS = {"en_dev": "English dev", "avg_dev": "average dev", "token": "token mean", "sentence": "sentence mean"}


def _paper_settings(entry: Mapping) -> str:
    model = entry.get("model")
    parts = [f"model {PUBLISHED_MODELS.get(model, model)}"] if model else []
    parts += [
        f"{k.replace('_', ' ')} {WORDS.get(str(v), _label(k, v))}" for k, v in (entry.get("settings") or {}).items()
    ]
    parts += [f"{k} among {', '.join(fmt_setting(k, x) for x in v)}" for k, v in (entry.get("best_of") or {}).items()]
    return f"Paper's settings: {'; '.join(parts)}." if parts else ""


def _decimals(value: float) -> int:
    text = repr(value)
    return 0 if isinstance(value, int) or "e" in text else len(text.split(".")[1])


def _digits(entry: Mapping) -> int:
    """Decimals the paper printed in this table: the most any of its values has (YAML drops trailing zeros)."""
    return max((_decimals(r["value"]) for r in entry["rows"] or []), default=0)


def _comparable(entry: Mapping, group: tuple, rows: pd.DataFrame) -> bool:
    """Whether a difference to the published number means anything: ours is the paper's model, or was
    measured on the same data (not the synthetic languages)."""
    same_model = entry.get("model") is None or entry.get("model") == group[0]
    real_data = "source" in rows and len(rows) and not (rows["source"].astype(str) == "synthetic").any()
    return bool(same_model or real_data)


def _cell(cell: Cell | None, published: float, digits: int, comparable: bool = True) -> Any:
    """Ours with the paper's decimals (at least one), the difference (only where comparable), what was chosen
    and what differs."""
    if cell is None:
        return DASH
    digits = max(digits, 1)
    sub = [f"\u0394 {cell.value - published:+.{digits}f}" if comparable else "for reference"]
    sub += [f"best at {', '.join(f'{c} {fmt_setting(c, v)}' for c, v in cell.chosen.items())}"] if cell.chosen else []
    sub += [f"\u2260 {d}" for d in cell.differs]
    return {"text": f"{cell.value:,.{digits}f}", "sub": " \u00b7 ".join(sub)}
