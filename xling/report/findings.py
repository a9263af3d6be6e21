"""Report section: the findings table (xling.evaluate.findings), each claim of the papers with its verdict on
this run, the numbers that decided it and the settings they were taken at."""

from __future__ import annotations

import pandas as pd

from xling.report.blocks import DASH, Block, table_block, text
from xling.report.core import ReportContext, register_section, require_columns

SETTINGS = (("table", "table"), ("metric", "metric"), ("models", "models"), ("corpus_size", "size"),
            ("windows", "window"), ("layers", "layer"), ("pairs", "pairs"), ("alphas", "alpha"))
#: every column but the judging rule (layer_rule, tolerance: the Settings section lists them)
RESULTS = ("id", "paper", "where", "claim", "verdict", "evidence", *(key for key, _ in SETTINGS))
VERDICTS = ("holds", "does not hold", "not measured")


def _settings(row: pd.Series) -> str:
    shown = [f"{label} {row[key]}" for key, label in SETTINGS if isinstance(row[key], str) and row[key]]
    return "; ".join(shown) or DASH


@register_section("findings", "Findings of the studies on this run", required=("findings",),
                  results={"findings": RESULTS})
def render_findings(ctx: ReportContext) -> list[Block]:
    df = ctx.tables["findings"]
    require_columns(df, RESULTS, ctx.table_paths["findings"])
    counts = df["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    rows = [[{"text": row["claim"], "sub": row["id"]}, {"text": row["paper"], "sub": row["where"]},
             row["verdict"], row["evidence"], _settings(row)] for _, row in df.iterrows()]
    return [text(ctx.caption("findings"), f"Of {len(df)} claims: {summary}."),
            table_block("Claims and verdicts", ["claim", "paper", "verdict", "numbers of this run", "settings"],
                        rows, wrap=(0, 1, 3, 4))]
