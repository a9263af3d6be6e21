"""Report section, shown first: what this run shows. The counts of the findings' outcomes, one line per study
saying what the run shows and what it cannot (a number at chance, a degenerate model, no interval yet), and
the findings table in full (xling.evaluate.findings): each claim with the paper's own sentence beside its
outcome and the margin it was judged at, the numbers with their intervals, the flags that made a number unusable
and the model it was judged on."""

from __future__ import annotations

import json
import re

import pandas as pd

from xling.report.blocks import DASH, Block, table_block, text
from xling.report.core import SECTIONS, ReportContext, register_section, require_columns
from xling.report.flags import FRACTION_FLAG_TABLES, MARK, in_percent, label, said_once

#: the settings shown under "judged on" (the table and metric: after the numbers and in eval/findings.csv)
SETTINGS = (
    ("models", "models"),
    ("corpus_size", "size"),
    ("windows", "window"),
    ("layers", "layer"),
    ("pairs", "pairs"),
    ("alphas", "alpha"),
)
#: every column but the judging rule (layer_rule, ci_*: said under the table)
RESULTS = (
    "id",
    "paper",
    "where",
    "claim",
    "quote",
    "outcome",
    "margin",
    "margin_source",
    "reason",
    "measures",
    "judged_on",
    "flags",
    "table",
    "metric",
    *(key for key, _ in SETTINGS),
)
#: the outcomes as the summary counts them: (value, singular, plural)
OUTCOMES = (
    ("holds", "holds", "hold"),
    ("does not hold", "does not hold", "do not hold"),
    ("inconclusive", "inconclusive", "inconclusive"),
    ("not measurable", "not measurable", "not measurable"),
    ("not measured", "not measured (no experiment in this run)", "not measured (no experiment in this run)"),
)
FLAG_MARK = MARK
REASON_CHARS = 300  # the report's cut of a long reason (the findings table keeps it whole)
#: findings metrics in percent (xling.evaluate.findings judges fractions in percent, as the tables show them);
#: MRR and CKA are 0-1
PERCENT_FINDINGS = frozenset(
    {
        "accuracy",
        "accuracy (CSLS)",
        "convert_rate",
        "f1",
        "p_at_1",
        "xnli accuracy",
        "pos upos",
        "parsing las",
        "ner f1",
    }
)


def _settings(row: pd.Series) -> str:
    shown = [f"{label} {row[key]}" for key, label in SETTINGS if isinstance(row[key], str) and row[key]]
    return "; ".join(shown) or DASH


def counts_line(df: pd.DataFrame) -> str:
    counts = df["outcome"].value_counts()
    parts = [f"{counts.get(value, 0)} {one if counts.get(value, 0) == 1 else many}" for value, one, many in OUTCOMES]
    return f"Of {len(df)} claims: " + ", ".join(parts) + "."


def _flagged(rows: pd.DataFrame) -> list[str]:
    """'number: flag label' of each distinct degenerate number the rows' claims compare (the reasons whole: in the
    findings table's tooltips and eval/findings.csv)."""
    found = {}
    for cell in rows["measures"].dropna():
        for measure in json.loads(cell):
            if measure.get("flag"):
                found.setdefault(measure["flag"], measure["label"])
    return list(dict.fromkeys(f"{number}: {label(flag)}" for flag, number in found.items()))


def shown_measures(row: pd.Series) -> list[dict]:
    """The claim's measures, their flags in the unit the report shows the metric in (a table that stores a
    fraction flags its interval in fractions: xling.report.flags.in_percent)."""
    measures = json.loads(row["measures"]) if isinstance(row["measures"], str) else []
    if row.get("table") in FRACTION_FLAG_TABLES and metric_unit(row.get("metric")) == "%":
        measures = [{**m, "flag": in_percent(m.get("flag"))} for m in measures]
    return measures


def flags_line(measures: list[dict]) -> tuple[str, str]:
    """('† not above chance: en-xa BERT, en-xb BERT; nothing mined: xa MDS', the reasons whole): the flagged
    numbers under each label of the report's one flag vocabulary, and every reason whole for the tooltip."""
    by_label: dict[str, list[str]] = {}
    whole: dict[str, None] = {}
    for m in measures:
        if m.get("flag"):
            by_label.setdefault(label(m["flag"]), []).append(m["label"])
            whole[f"{m['label']}: {said_once(m['flag'])}"] = None  # each of its number's reasons once
    if not by_label:
        return "", ""
    every = len(measures) > 1 and len(by_label) == 1 and len(next(iter(by_label.values()))) == len(measures)
    line = "; ".join(
        f"{name}: {'every number' if every else ', '.join(dict.fromkeys(numbers))}"
        for name, numbers in by_label.items()
    )
    return f"{FLAG_MARK} {line}.", "; ".join(whole)


def study_line(paper: str, rows: pd.DataFrame) -> dict:
    """One study's line: the counts, what this run shows (claims that hold or not) and what it cannot."""
    by = {value: rows[rows["outcome"] == value] for value, *_ in OUTCOMES}
    shows = [f"{r['where']} {r['outcome']}" for _, r in pd.concat([by["holds"], by["does not hold"]]).iterrows()]
    cannot = []
    flagged = _flagged(by["not measurable"])
    if flagged:
        cannot.append(
            f"{len(by['not measurable'])} claim(s) not measurable, on degenerate numbers ("
            + "; ".join(flagged[:3])
            + (f"; and {len(flagged) - 3} more" if len(flagged) > 3 else "")
            + ")"
        )
    if len(by["inconclusive"]):
        no_interval = by["inconclusive"]["reason"].str.contains("no interval for").sum()
        cannot.append(
            f"{len(by['inconclusive'])} inconclusive"
            + (f" ({no_interval} for want of an interval: no per-item scores and one seed)" if no_interval else "")
        )
    if len(by["not measured"]):
        cannot.append(f"{len(by['not measured'])} not measured")
    summary = f"This run shows: {', '.join(shows)}." if shows else "This run shows none of its claims either way."
    if cannot:
        summary += " It cannot show: " + "; ".join(cannot) + "."
    return {"text": paper, "sub": summary}


def _fmt(value) -> str:
    return DASH if value is None else f"{value:.3g}" if value != 0 and abs(value) < 0.01 else f"{value:.3f}"


def measure_text(measure: dict, percent: bool = False) -> str:
    """'label 0.300 [0.281, 0.319]' (a flagged number marked); `percent`: a percentage, one decimal."""
    value, low, high = (measure.get(key) for key in ("value", "low", "high"))
    fmt = _fmt_percent if percent else _fmt
    interval = f" [{fmt(low)}, {fmt(high)}]" if low is not None and high is not None and low != high else ""
    return f"{measure['label']} {fmt(value)}{interval}" + (f" {FLAG_MARK}" if measure.get("flag") else "")


def _fmt_percent(value) -> str:
    return DASH if value is None else f"{value:.2g}" if value != 0 and abs(value) < 0.1 else f"{value:.1f}"


#: each metric the findings name, as the page says it (the findings table keeps the run's names: metric_unit
#: reads them); a metric not here: its words, underscores as spaces
METRIC_WORDS = {
    "mrr": "MRR",
    "cka": "CKA",
    "convert_rate": "convert rate",
    "p_at_1": "P@1",
    "f1": "F1",
    "xnli accuracy": "XNLI accuracy",
    "pos upos": "POS accuracy (UPOS)",
    "parsing las": "parsing LAS",
    "ner f1": "NER F1",
}


def metric_words(metric) -> str:
    """'convert rate' for convert_rate; a list of metrics ('xnli accuracy, pos upos') each in words."""
    return ", ".join(METRIC_WORDS.get(m, m.replace("_", " ")) for m in str(metric).split(", "))


def margin_words(source: str) -> str:
    """Where a margin comes from, in words: the paper's words as they are; a default of the run's settings
    (findings.margins.<kind>, findings.margin) named by what it is, not by its key (docs/report.md lists them)."""
    kind = re.fullmatch(r"default \(findings\.margins\.(\w+)\)", source)
    if kind:
        return "the run's default for " + {"percent": "percentages"}.get(
            kind.group(1), METRIC_WORDS.get(kind.group(1), kind.group(1))
        )
    return "the run's non-inferiority margin" if source.startswith("findings.margin ") else source


def metric_unit(metric) -> str:
    """The unit the findings table shows a claim's numbers in."""
    if metric in PERCENT_FINDINGS or str(metric).endswith(("accuracy", "f1")):
        return "%"
    return "0-1" if metric in ("mrr", "cka") else ""


#: a measure's number and interval inside a reason ('en-xa w10 0.302 [0.242, 0.372] vs ...'): the numbers column
#: shows them above it; a signed difference's interval ('+0.717 [+0.68, +0.753]') and a flag's interval stay
_NUMBER_AND_INTERVAL = re.compile(r"(?<!interval) \d+(?:\.\d+)? \[\d+(?:\.\d+)?, \d+(?:\.\d+)?\]")


def without_numbers(reason: str) -> str:
    """The reason without the measures' numbers and intervals the numbers column shows above it."""
    return _NUMBER_AND_INTERVAL.sub("", reason)


def shortened(reason: str, limit: int = REASON_CHARS) -> str:
    if len(reason) <= limit:
        return reason
    return reason[:limit].rsplit(" ", 1)[0] + " \u2026 (whole in the findings table, linked under the table)"


def numbers_text(row: pd.Series, measures: list[dict]) -> str:
    """The claim's numbers with their intervals, in the metric's unit, the metric named after them."""
    unit = metric_unit(row.get("metric"))
    numbers = "; ".join(dict.fromkeys(measure_text(m, unit == "%") for m in measures))
    if numbers and unit:
        named = metric_words(row.get("metric"))
        numbers += f" ({named}, {unit})" if unit == "%" else f" ({named})"
    return numbers


def _numbers(row: pd.Series) -> dict:
    """The numbers the claim compares, each with its interval, and below them the flags' labels (each reason
    whole in the tooltip) and why the outcome."""
    measures = shown_measures(row)
    numbers = numbers_text(row, measures) or DASH
    why, whole = flags_line(measures)
    cell = (
        {"text": numbers, "sub": why}
        if why and row["outcome"] == "not measurable"
        else {  # the flags: the reason
            "text": numbers,
            "sub": f"{why} Why: {shortened(without_numbers(row['reason']))}".strip(),
        }
    )
    return {**cell, "title": whole} if whole else cell


def evidence_sections(rendered: set[str] | None = None) -> dict[str, str]:
    """table -> the id of the first report section that shows it (its anchor), among the `rendered` ones."""
    found: dict[str, str] = {}
    for section in SECTIONS.values():
        if rendered is not None and section.name not in rendered:
            continue
        for table in section.required:
            found.setdefault(table, section.name)
    found.pop("findings", None)
    return found


def claim_cell(row: pd.Series, anchors: dict[str, str] | None = None) -> dict:
    """Our summary of the claim, linked to the section that shows its evidence, and under it where in the paper
    and the paper's sentence verbatim; the claim's id (the key of eval/findings.csv, a code name, not prose) in
    the tooltip."""
    quote = f": \u201c{row['quote']}\u201d" if isinstance(row.get("quote"), str) and row["quote"] else ""
    cell = {
        "text": row["claim"],
        "sub": f"the paper's {row['where']}{quote}",
        "title": f"eval/findings.csv: {row['id']}",
    }
    section = (anchors or {}).get(row.get("table")) if isinstance(row.get("table"), str) else None
    if section:
        cell["href"] = f"#{section}"
    return cell


def outcome_cell(row: pd.Series) -> dict:
    """The outcome, and under it the margin its comparisons used (none: strict comparisons only)."""
    margin = row.get("margin")
    if margin is None or pd.isna(margin):
        return {"text": row["outcome"], "sub": "no margin (strict)"}
    unit = metric_unit(row.get("metric"))
    return {
        "text": row["outcome"],
        "sub": f"margin \u00b1{float(margin):g}{_points(float(margin)) if unit == '%' else ''} "
        f"({margin_words(str(row['margin_source']))})",
    }


def _points(margin: float) -> str:
    return " point" if margin == 1 else " points"


@register_section(
    "findings", "What this run shows: the papers' claims", required=("findings",), results={"findings": RESULTS}
)
def render_findings(ctx: ReportContext) -> list[Block]:
    df = ctx.tables["findings"]
    require_columns(df, RESULTS, ctx.table_paths["findings"])
    studies = [study_line(paper, rows) for paper, rows in df.groupby("paper", sort=False)]
    anchors = evidence_sections({s.name for s in SECTIONS.values() if all(t in ctx.tables for t in s.required)})
    measured = df[df["outcome"] != "not measured"]
    rows = [
        [
            claim_cell(row, anchors),
            outcome_cell(row),
            _numbers(row),
            {"text": row["judged_on"] or DASH, "sub": _settings(row)},
        ]
        for _, row in measured.iterrows()
    ]
    # a claim the run has no experiment for has no number: one line under the table, not an empty row
    absent = [
        {**claim_cell(row), "sub": f"{claim_cell(row)['sub']}. Why: {row['reason']}"}
        for _, row in df[df["outcome"] == "not measured"].iterrows()
    ]
    how = ""
    if "ci_level" in df and len(df):
        first = df.iloc[0]
        how = (
            f"Intervals: {float(first['ci_level']):.0%} bootstrap ({first['ci_method']}, "
            f"{int(first['ci_resamples'])} resamples, seed {int(first['ci_seed'])}) over the test queries where "
            f"the run keeps them (exact binomial, Clopper-Pearson, where every query is a hit or every one a "
            f"miss; over languages or tags with their effective size), else a t interval over seeds; each claim's "
            f"margin under its outcome (an equivalence holds when the difference's interval lies within "
            f"\u00b1margin); BERT's layer rule: {first['layer_rule']}. "
            f"{FLAG_MARK}: the degenerate numbers (at chance, one class, nothing mined, ...) that make a claim "
            "not measurable, by the label every table of the report uses; each reason whole in the cell's tooltip "
            "and in the table's CSV (eval/findings.csv, linked above the table)."
        )
    return [
        text(counts_line(df)),
        {"kind": "list", "title": "By study", "items": studies},
        table_block(
            "Claims and outcomes",
            ["claim", "outcome", "numbers of this run (with intervals)", {"text": "judged on", "sub": "settings"}],
            rows,
            wrap=(0, 1, 2, 3),
            full=True,
            note=how,
        ),
        *(
            [{"kind": "list", "title": f"Not measured: no experiment in this run ({len(absent)})", "items": absent}]
            if absent
            else []
        ),
    ]
