"""The report's degenerate-number flags: the same flag and reason the findings use, on every cell the report
shows.

Why: a table that shows 33.40 without a mark beside a finding that calls the same number "one class predicted"
misleads; the chance level and the degenerate checks are computed in one place (xling.evaluate.chance, applied
per table by xling.evaluate.findings.core), and the report only reads them. A cell shows the mark and, in the
small print under it, the reason; a cell that averages several rows carries every reason of its rows.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from xling.evaluate.chance import flag as joined, is_degenerate
from xling.evaluate.findings.core import bucc_flags, transfer_flags, translation_flags, with_table_flags

MARK = "\u2020"


def no_word_pairs(n_links: int, recall: float | None = None) -> str | None:
    """An aligner that kept no word pair (precision undefined, recall 0), or none of whose pairs is a sure gold
    link: the word pairs carry no alignment, and whatever is trained or scored on them measures nothing. Here, not
    in xling.evaluate.chance: only the report reads it, and a change there would rerun every job that imports it."""
    if n_links == 0:
        return "no word pairs kept"
    if recall == 0:
        return f"none of {n_links} word pairs is a gold link"
    return None


#: how the findings compute each table's own flags (besides the gather's `flag` column, which every table keeps)
COMPUTED = {"transfer": lambda rows, pivot: transfer_flags(rows, pivot),
            "bucc": lambda rows, pivot: bucc_flags(rows),
            "token_translation": lambda rows, pivot: translation_flags(rows),
            "word_pairs": lambda rows, pivot: pd.Series(
                [no_word_pairs(int(n), r if pd.notna(r) else None) for n, r in zip(rows["links"], rows["recall"])],
                index=rows.index, dtype=object)}


def row_flags(table: str, rows: pd.DataFrame, pivot: str) -> pd.Series:
    """Each row's degenerate reasons (None where there are none), exactly as the findings flag that table's rows:
    the gather's `flag` column joined with the findings' own checks of the table (transfer: at chance, one class
    predicted, a fine-tuning that did not learn the pivot; BUCC: nothing mined; token translation: one token
    repeated). The transfer rows must already be the language study's (xling.evaluate.alignment)."""
    if rows.empty:
        return pd.Series([], index=rows.index, dtype=object)
    computed = COMPUTED.get(table)
    own = computed(rows, pivot) if computed else pd.Series([None] * len(rows), index=rows.index, dtype=object)
    found = with_table_flags(rows, own)
    return found.map(lambda f: f if is_degenerate(f) else None)


def with_flags(table: str, rows: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """The rows with their `flag` column replaced by `row_flags`."""
    return rows.assign(flag=row_flags(table, rows, pivot))


def cell_reason(flags: Iterable) -> str | None:
    """The reasons of the rows one cell shows (several rows: seeds or languages averaged), each once."""
    reasons = [part for f in flags if is_degenerate(f) for part in str(f).split("; ")]
    return joined(*reasons)


def flagged_text(shown: str, reason: str | None) -> str:
    """A number as a cell shows it, marked when degenerate."""
    return f"{shown} {MARK}" if is_degenerate(reason) else shown


def flagged_cell(shown: str, reason: str | None, sub: str = "") -> dict | str:
    """A cell: the number (marked when degenerate) and under it its small print and the reason."""
    parts = [p for p in (sub, f"{MARK} {reason}" if is_degenerate(reason) else "") if p]
    return {"text": flagged_text(shown, reason), "sub": " \u00b7 ".join(parts)} if parts else shown


def figure_note(rows: pd.DataFrame, flags: pd.Series, point: list[str]) -> str:
    """The caption's sentence for a figure whose points (the means over `rows` grouped by `point`) are drawn
    from degenerate rows: how many of its points, and the findings' reasons; '' when none is. A point averages
    its rows, so one flagged row flags it (as `cell_reason` does for a table cell)."""
    if rows.empty:
        return ""
    reasons = [cell_reason(flags[part.index]) for _, part in rows.groupby(point, dropna=False)]
    marked = [r for r in reasons if r]
    if not marked:
        return ""
    every = cell_reason(marked)
    mostly = " Most of its points are degenerate: it shows no evidence either way." if 2 * len(marked) > len(
        reasons) else ""
    return f"{MARK} {len(marked)} of {len(reasons)} points are drawn from numbers the findings flag ({every}).{mostly}"


def with_figure_note(block: dict, note: str) -> dict:
    """The figure block with `note` added to its caption."""
    return {**block, "caption": f"{block['caption']} {note}".strip()}
