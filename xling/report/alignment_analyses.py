"""Cao et al.'s analyses (accuracy by part of speech, Table 4; by frequency-rank difference, Figure 3) as the report
shows them: each cell flagged as the findings flag the same number, and the settings the analysis tables record.

Why: a Table 4 cell of 0.0 % beside a finding that calls base BERT's closed-class accuracy "not above chance"
misleads. The findings (xling.evaluate.findings.cao) take a group's accuracy as the mean over the languages of its
rows, its interval the mean of the rows' bootstrap bounds (`rows_mean`), in percent, flagged when that interval holds
the rows' chance level (`rows_chance_flag`); a report cell is the same mean, so it is flagged by the same functions.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from xling.evaluate.alignment import cao_retrieval
from xling.evaluate.findings.core import in_percent, rows_chance_flag, rows_mean


def analysis_rows(table: pd.DataFrame) -> pd.DataFrame:
    """An analysis table's rows of the paper's settings (base, rotation, fine-tuned), each at its largest amount
    of parallel data per base, named as the paper names them."""
    rows = cao_retrieval(table.assign(contextual=True))
    if "layer" in rows:
        rows = rows[rows["layer"] == rows.groupby("lm")["layer"].transform("max")]
    top = rows.groupby(["base", "setting"])["parallel_sentences"].transform("max")
    return rows[rows["parallel_sentences"] == top]


def analysis_flags(
    table: str, rows: pd.DataFrame, keys: list[str], label: Callable[[tuple], str]
) -> dict[tuple, str | None]:
    """{cell (the values of `keys`): the findings' flag of its mean accuracy over languages} for the analysis table
    `table` (contextual_retrieval_pos or contextual_retrieval_frequency), whose rows are `rows`; `label(cell)` names
    the number in its reason as the findings name it. A table recorded without chance levels flags nothing."""
    scaled = in_percent({table: rows})[table]
    return {
        cell if isinstance(cell, tuple) else (cell,): rows_chance_flag(
            rows_mean(label(cell if isinstance(cell, tuple) else (cell,)), part, "accuracy"), part
        ).flag
        for cell, part in scaled.groupby(keys, sort=False)
    }


def recorded_values(table: pd.DataFrame, column: str, names: dict | None = None) -> str:
    """A setting column's values as the table records them ('not recorded' when it has none), named by `names`."""
    if column not in table:
        return "not recorded"
    return ", ".join(str((names or {}).get(v, v)) for v in table[column].dropna().unique()) or "not recorded"
