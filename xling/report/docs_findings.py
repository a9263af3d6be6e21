"""The docs' findings table of a run (docs/report.md), generated from its findings table, never typed:

    python -m xling.report.docs_findings results/demo/eval/findings.parquet docs/report.md \\
        --heading "make demo on main at <commit>, <date>: <time>"
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

from xling.report.findings import counts_line, numbers_text, shortened

#: the block of a Markdown page that `python -m xling.report.docs_findings` rewrites from a run's findings table
DOCS_BEGIN, DOCS_END = "<!-- findings table: begin -->", "<!-- findings table: end -->"


def markdown_table(df: pd.DataFrame) -> str:
    """The findings as a Markdown table (claim id, outcome, the numbers with their intervals): the docs' table of a
    run is generated, never typed."""
    lines = ["| claim | outcome | the run's numbers (interval; † degenerate) |", "|---|---|---|"]
    for _, row in df.iterrows():
        measures = json.loads(row["measures"]) if isinstance(row["measures"], str) else []
        numbers = numbers_text(row, measures) or shortened(row["reason"], 200)
        lines.append(f"| `{row['id']}` | {row['outcome']} | {numbers.replace('|', '/')} |")
    return "\n".join(lines)


def update_docs(findings: Path, page: Path, heading: str) -> None:
    """Replace the block between DOCS_BEGIN and DOCS_END of `page` with `heading` and the findings' table."""
    text = page.read_text(encoding="utf-8")
    block = re.compile(re.escape(DOCS_BEGIN) + ".*?" + re.escape(DOCS_END), re.S)
    if not block.search(text):
        raise SystemExit(f"{page}: no '{DOCS_BEGIN}' ... '{DOCS_END}' block to rewrite")
    df = pd.read_parquet(findings)
    body = f"{DOCS_BEGIN}\n{heading}\n\n{counts_line(df)}\n\n{markdown_table(df)}\n{DOCS_END}"
    page.write_text(block.sub(lambda _: body, text), encoding="utf-8")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Rewrite a docs page's findings table from a run's findings.")
    parser.add_argument("findings", type=Path, help="results/<run>/eval/findings.parquet")
    parser.add_argument("page", type=Path, help="the Markdown page (docs/report.md)")
    parser.add_argument("--heading", required=True, help="what run it is: preset, commit, date, time")
    args = parser.parse_args(argv)
    update_docs(args.findings, args.page, args.heading)


if __name__ == "__main__":
    main()
