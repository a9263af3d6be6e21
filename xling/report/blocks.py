"""How the report writes things: number and setting formatting, and the blocks a section returns.

A block is a plain dict (kind text, settings, group, table, figure or published) that the generic template
reports/report.html.j2 lays out, so a new section needs no template change. A table cell, or a column
header, is a string or {'text': str, 'sub': str} (a second, smaller line; 'title': a tooltip).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from xling.report.figures import model_label, ordered_models, size_label
from xling.report.flags import lettered

DASH = "\u2014"
MODEL_KEYS = ["model", "size", "window"]  # what identifies one trained model (size, window 0 for a checkpoint)
Block = dict


def fmt_num(value: Any, digits: int = 3) -> str:
    """0.4321 -> '0.432'; tiny values keep 3 significant digits (a chance MRR of 0.000512 stays visible)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return fmt_count(value)
    if value is None or pd.isna(value):
        return DASH
    value = float(value)
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.{digits}f}"
    return f"{value:.3g}"


#: Result columns stored as fractions (0-1) that the report shows in percent, the papers' unit for them, so one
#: metric has one unit in every table and figure. MRR and CKA stay 0-1, as the papers print them; BLEU is 0-100.
PERCENT_METRICS = frozenset(
    {
        "accuracy",
        "f1",
        "precision",
        "recall",
        "dev_f1",
        "dev_precision",
        "dev_recall",
        "convert_rate",
        "p_at_1",
        "p_at_5",
        "coverage",
        "none",
        "procrustes",
    }
)


def fmt_percent(fraction: Any, digits: int = 1) -> str:
    """A fraction in percent: 0.0567 -> '5.7'; tiny non-zero values keep 2 significant digits ('0.024')."""
    if fraction is None or pd.isna(fraction):
        return DASH
    value = 100 * float(fraction)
    if value == 0 or abs(value) >= 0.1:
        return f"{value:.{digits}f}"
    return f"{value:.2g}"


def fmt_metric(metric: str, value: Any, digits: int = 3) -> str:
    """A result cell in its metric's report unit (PERCENT_METRICS in percent, the rest as stored)."""
    return fmt_percent(value) if metric in PERCENT_METRICS else fmt_num(value, digits)


def metric_header(metric: str, label: str | None = None) -> str:
    """A result column's header with its unit: 'accuracy (%)'."""
    label = label or metric
    return f"{label} (%)" if metric in PERCENT_METRICS else label


def fmt_count(value: Any) -> str:
    if value is None or pd.isna(value):
        return DASH
    return f"{int(value):,}"


def fmt_setting(column: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if column == "size":
        return size_label(value)
    if column == "model":
        return model_label(str(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def model_name(row: Mapping) -> str:
    """'BERT 4k w128' for a model we trained (size, window), the checkpoint name for a Hugging Face model."""
    if int(row.get("size") or 0) == 0:
        return str(row["model"])
    return f"{model_label(str(row['model']))} {size_label(row['size'])} w{int(row['window'])}"


def model_groups(df: pd.DataFrame) -> list[tuple]:
    """The (model, size, window) keys of a table: ours first (GloVe, Word2Vec, BERT; sizes up, windows
    down), then checkpoints by name."""
    keys = df[MODEL_KEYS].drop_duplicates()
    rank = {m: i for i, m in enumerate(ordered_models(keys["model"]))}
    order = keys.assign(_hf=keys["size"] == 0, _m=keys["model"].map(rank)).sort_values(
        ["_hf", "_m", "size", "window"], ascending=[True, True, True, False]
    )
    return [tuple(r) for r in order[MODEL_KEYS].itertuples(index=False)]


def flatten(mapping: Mapping, prefix: str = "") -> list[tuple[str, str]]:
    """Nested config dict -> [('a.b', 'value'), ...]; lists are joined so one setting is one table row."""
    rows = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows.extend(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            rows.append((name, ", ".join(str(v) for v in value)))
        else:
            rows.append((name, DASH if value is None else str(value)))
    return rows


def text(*paragraphs: str) -> Block:
    return {"kind": "text", "paragraphs": [p for p in paragraphs if p]}


def settings_block(title: str, rows: list[tuple[str, str]]) -> Block:
    return {"kind": "settings", "title": title, "rows": rows}


def group(blocks: list[Block], title: str = "") -> Block:
    """Blocks laid out side by side (e.g. one settings table per model); with a title, collapsed behind it (the
    settings beside a section's results, which a reader opens when they need them)."""
    return {"kind": "group", "blocks": blocks, "title": title}


#: a table with more columns than this is set compact (smaller, reports/report.html.j2: `compact`); its headers
#: (the CSV's column names) may break after an underscore, never inside a word
COMPACT_COLUMNS = 12
_BREAK = "_\u200b"  # a zero-width space after each underscore: a place to break that shows nothing


def breakable(header):
    """'n_tgt_only' that may wrap after its underscores (a header string or {'text', 'sub'})."""
    if isinstance(header, dict):
        return {**header, "text": str(header["text"]).replace("_", _BREAK)}
    return str(header).replace("_", _BREAK)


#: a table with more rows than this is collapsed behind its title unless the caller says otherwise: the report
#: as first shown stays short (issue 22: at most 25 screens for the demo), and nothing is left out
LONG_TABLE = 15


def table_block(
    title: str,
    columns: list,
    rows: list[list],
    note: str = "",
    collapsed: bool | None = None,
    numeric: Iterable[int] = (),
    wrap: Iterable[int] = (),
    full: bool = False,
) -> Block:
    """numeric: column indices right-aligned; wrap: columns of prose allowed to wrap (others stay on one line);
    collapsed: behind a <details> summary (default: when longer than LONG_TABLE rows);
    full: open and laid out to the page width, for the tables a reader must see whole (the findings)."""
    if collapsed is None:
        collapsed = len(rows) > LONG_TABLE and not full
    rows, flags = lettered(rows)  # a flagged cell's reason whole: once, under the table (xling.report.flags)
    if len(columns) > COMPACT_COLUMNS:
        columns = [breakable(c) for c in columns]
    return {
        "kind": "table",
        "title": title,
        "columns": columns,
        "rows": rows,
        "note": note,
        "flags": flags,
        "collapsed": collapsed,
        "numeric": set(numeric),
        "wrap": set(wrap),
        "full": full,
    }


def empty_block(title: str, message: str) -> Block:
    """A heading with one italic line saying why there is nothing to show."""
    return {"kind": "published", "title": title, "empty": message}
