"""`snakemake --report` holds every table the run writes as CSV under eval/: each such output of rules/*.smk is a
report() output with a caption that exists (read statically: running the workflow is tests/test_workflow.py's)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a report() call's arguments may start on the next line (snakefmt puts each argument of a long call on its own)
CSV_OUTPUT = re.compile(r'^\s*(\w+)=(report\(\s*)?f"\{RESULTS\}/eval/([^"]+)\.csv"(.*)$', flags=re.M)


def csv_outputs() -> list[tuple[str, str, bool, str]]:
    """(rule file, table, inside report(), the rest of the report() call) of every eval/*.csv output."""
    found = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        for match in CSV_OUTPUT.finditer(text):
            rest = text[match.end(3) : text.index(")", match.end(3)) + 1]
            found.append((path.name, match.group(3), bool(match.group(2)), rest))
    return found


def test_every_eval_csv_is_in_the_snakemake_report_with_a_caption():
    outputs = csv_outputs()
    tables = {table for _, table, _, _ in outputs}
    assert {
        "{{table}}",
        "findings",
        "word_retrieval_pos",
        "contextual_retrieval_pos",
        "contextual_retrieval_frequency",
    } <= tables, tables
    for rule_file, table, in_report, rest in outputs:
        assert in_report, f"rules/{rule_file}: eval/{table}.csv is not a report() output"
        caption = re.search(r'caption="\.\./([^"]+)"', rest)
        assert caption and (REPO / caption.group(1)).is_file(), (rule_file, table, rest)
        assert 'category="Tables"' in rest or 'category="Findings"' in rest, (rule_file, table)
