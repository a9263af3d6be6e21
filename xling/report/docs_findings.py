"""The docs' findings table of a run (docs/report.md, the README), generated from its findings table, never typed:

    python -m xling.report.docs_findings results/demo/eval/findings.parquet docs/report.md \\
        --heading "make demo on main at <commit>, <date>: <time>"
    python -m xling.report.docs_findings results/study/eval/findings.parquet README.md --block study \\
        --numbers 3 --measured-only --heading "presets/study.yaml on main at <commit>, <date>: <time>"

A page may hold several runs' tables, each in its own named block (`--block`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

from xling.evaluate.findings.core import NOT_MEASURED
from xling.report.findings import counts_line, numbers_text, shortened

#: the block of a Markdown page that `python -m xling.report.docs_findings` rewrites from a run's findings table
DOCS_BEGIN, DOCS_END = "<!-- findings table: begin -->", "<!-- findings table: end -->"


def markers(block: str | None = None) -> tuple[str, str]:
    """The begin and end markers of a page's findings block: the unnamed one, or the one named `block`."""
    if not block:
        return DOCS_BEGIN, DOCS_END
    return f"<!-- findings table ({block}): begin -->", f"<!-- findings table ({block}): end -->"


def markdown_table(df: pd.DataFrame, numbers: int | None = None) -> str:
    """The findings as a Markdown table (claim id, outcome, the numbers with their intervals): the docs' table of a
    run is generated, never typed. `numbers`: at most this many of a claim's numbers, the count of the rest said."""
    lines = ["| claim | outcome | the run's numbers (interval; † degenerate) |", "|---|---|---|"]
    for _, row in df.iterrows():
        measures = json.loads(row["measures"]) if isinstance(row["measures"], str) else []
        shown = measures if numbers is None else measures[:numbers]
        text = numbers_text(row, shown) or shortened(row["reason"], 200)
        if len(shown) < len(measures):
            text += f"; and {len(measures) - len(shown)} more"
        lines.append(f"| `{row['id']}` | {row['outcome']} | {text.replace('|', '/')} |")
    return "\n".join(lines)


def update_docs(
    findings: Path,
    page: Path,
    heading: str,
    block: str | None = None,
    numbers: int | None = None,
    measured_only: bool = False,
) -> None:
    """Replace the findings block of `page` (the unnamed one, or the one named `block`) with `heading` and the
    findings' table (`measured_only`: the claims the run has no experiment for named in one line instead)."""
    begin, end = markers(block)
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{page}: no '{begin}' ... '{end}' block to rewrite")
    df = pd.read_parquet(findings)
    shown, note = df, ""
    if measured_only:
        absent = df["outcome"] == NOT_MEASURED
        shown = df[~absent]
        if absent.any():
            note = "\n\nNot measured in this run: " + ", ".join(f"`{claim}`" for claim in df.loc[absent, "id"]) + "."
    body = f"{begin}\n{heading}\n\n{counts_line(df)}\n\n{markdown_table(shown, numbers)}{note}\n{end}"
    page.write_text(pattern.sub(lambda _: body, text), encoding="utf-8")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Rewrite a docs page's findings table from a run's findings.")
    parser.add_argument("findings", type=Path, help="results/<run>/eval/findings.parquet")
    parser.add_argument("page", type=Path, help="the Markdown page (docs/report.md)")
    parser.add_argument("--heading", required=True, help="what run it is: preset, commit, date, time")
    parser.add_argument("--block", help="the name of the page's block to rewrite (default: the unnamed one)")
    parser.add_argument("--numbers", type=int, help="at most this many numbers per claim (default: all)")
    parser.add_argument(
        "--measured-only",
        action="store_true",
        help="name the claims the run has no experiment for in one line, not as rows",
    )
    args = parser.parse_args(argv)
    update_docs(args.findings, args.page, args.heading, args.block, args.numbers, args.measured_only)


if __name__ == "__main__":
    main()
