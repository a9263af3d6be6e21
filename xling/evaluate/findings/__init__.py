"""The studies' qualitative findings judged on this run's tables: one row per claim, with the numbers of the
run that test it (each with its interval and degenerate flag), the model it was judged on, and one of four
outcomes (xling.evaluate.verdicts): holds / does not hold / inconclusive / not measurable, or "not measured"
where the run has no experiment for it.

How a claim is judged (one rule for every claim, so each outcome can be checked by hand from the tables):
- Which BERT layer: `layer: report` reads the layer the report's word-retrieval tables show (report.layer or
  retrieval.report_layer; the last when unset); `best` the layer with the highest MRR averaged over the pairs;
  an integer that layer. The static models have one layer. Token translation and sentence retrieval are judged
  at the layers the run measured them at; transfer at the paper's freeze depth (`mds_freeze`).
- Numbers are means over the language pairs (or test languages) that every compared model has. Their
  intervals: the bootstrap over the per-item scores where the run keeps them (word retrieval's per-query ranks,
  contextual retrieval's per-query hits; settings `bootstrap`), else a t interval over seeds where there are
  several; a number with neither leaves its claim inconclusive ("no interval for ... yet").
- A degenerate number (at or below chance, one class's share on XNLI, NER F1 0, nothing mined, one repeated
  token, a fine-tuning that did not learn the pivot) makes its claim not measurable: never "holds" on it.
- A strict claim (a > b) holds when the two intervals lie apart (or the paired difference's interval is above 0);
  a non-strict one (a >= b) when a loss beyond `margin` is ruled out (xling.evaluate.verdicts).
- The mBERT claims (liu_language) are judged on the run's Hugging Face checkpoint when it has one, else on our
  BERT, and `judged_on` says which.

The package: `core` holds the shared machinery and the tables the findings read, `seeds` the numbers over
fine-tuning seeds; one module per study holds its claims and their judges (`liu_what`, `liu_language`, `conneau`,
`cao`); this module lists the claims in the table's order, judges them and writes the table.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from xling.evaluate.findings import cao, conneau, liu_language, liu_what
from xling.evaluate.findings.core import (
    DEFAULT_MARGINS,
    FAILS,
    HOLDS,
    INCONCLUSIVE,  # noqa: F401
    MULTI_FILE,
    NOT_MEASURABLE,
    NOT_MEASURED,
    OUTCOMES,
    SETTING_COLUMNS,
    TABLES,
    Criteria,
    Finding,
    NotMeasured,
    Tables,
    Verdict,
    in_percent,
)
from xling.evaluate.findings.liu_what import bert_layer  # noqa: F401
from xling.evaluate.findings.seeds import transfer_run_of
from xling.evaluate.uncertainty import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from xling.io import atomic_write
from xling.tables import write_parquet

logger = logging.getLogger(__name__)

CLAIMS = [*liu_what.CLAIMS, *liu_language.CLAIMS, *conneau.CLAIMS, *cao.CLAIMS]


def _measures_json(measures) -> str:
    return json.dumps([dict(label=m.label, value=m.value, low=m.low, high=m.high, flag=m.flag) for m in measures])


def judge_claims(tables: Tables, pivot: str, criteria: Criteria | None = None, **settings) -> pd.DataFrame:
    """The findings table: one row per claim of `CLAIMS`, judged on `tables` (key -> table, keys of TABLES;
    a missing key makes its claims not measured). `settings`: the fields of Criteria, when no criteria."""
    criteria = criteria or Criteria(**settings)
    tables = in_percent(tables)  # fractions judged in percent, as the report shows them
    rows = []
    for claim in CLAIMS:
        try:
            finding = claim.judge(tables, criteria, pivot)
        except NotMeasured as why:
            finding = Finding(Verdict(NOT_MEASURABLE, str(why)), judged_on="")
            outcome = NOT_MEASURED
        else:
            outcome = finding.outcome
        values = {key: finding.settings.get(key) for key in SETTING_COLUMNS}
        if values["pairs"] is not None:
            values["pairs"] = ", ".join(values["pairs"])
        flags = sorted({m.flag for m in finding.measures if m.flag})
        margin = finding.margin
        rows.append(
            {
                "id": claim.id,
                "paper": claim.paper,
                "where": claim.where,
                "claim": claim.text,
                "quote": claim.quote,
                "margin": None if margin is None else float(margin.value),
                "margin_source": None if margin is None else margin.source,
                "outcome": outcome,
                "reason": finding.verdict.reason,
                "measures": _measures_json(finding.measures),
                "judged_on": finding.judged_on,
                "flags": "; ".join(flags) or None,
                **{k: None if v is None else str(v) for k, v in values.items()},
            }
        )
        logger.info("%s: %s (%s)", claim.id, outcome, finding.verdict.reason)
    table = pd.DataFrame(rows)
    table["layer_rule"] = str(criteria.layer)
    table["margin"] = table["margin"].astype(float)  # per claim: its comparisons' margin (NaN: strict only)
    table["ci_level"], table["ci_resamples"] = float(criteria.level), int(criteria.resamples)
    table["ci_seed"], table["ci_method"] = int(criteria.seed), str(criteria.method)
    return table


def read_tables(paths: Mapping[str, str | Path | Sequence]) -> dict[str, pd.DataFrame]:
    """Load the run's tables (a MULTI_FILE key: its files concatenated); a table without a column the findings
    read is an error naming the file."""
    tables = {}
    for key, path in paths.items():
        files = list(path) if key in MULTI_FILE and not isinstance(path, (str, Path)) else [path]
        if not files:
            continue
        parts = [pd.read_parquet(f) for f in files]
        if key == "transfer_items":  # its rows name the fine-tuning by their file
            parts = [part.assign(**transfer_run_of(f)) for f, part in zip(files, parts, strict=True)]
        for file, part in zip(files, parts, strict=True):
            missing = [c for c in TABLES[key] if c not in part.columns]
            if missing:
                raise ValueError(f"{file}: {key} table without column(s) {', '.join(missing)}")
        tables[key] = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return tables


def criteria_from_config(
    findings: Mapping,
    bootstrap: Mapping | None = None,
    shown: Mapping | None = None,
    aligned_langs=Criteria.aligned_langs,
    xnli_mds_freeze: int = Criteria.xnli_mds_freeze,
) -> Criteria:
    """Criteria from the config blocks findings (layer, margin, margins, mds_freeze, stand_ins), bootstrap, the report's
    word-retrieval selection (xling.plan.figures.selection_config: metric, dictionary_split, layer) and the
    languages of the alignment's fine-tuning (alignment.finetune.languages; None: every language; unset: Cao et
    al.'s five) and the freeze depth the plan tests XNLI with MDS at (xling.plan: transfer.mds_freeze)."""
    shown, bootstrap = shown or {}, bootstrap or {}
    given = findings.get("margins") or {}  # each kind by name (tests/test_config_keys.py traces the reads)
    margins = dict(
        percent=float(given.get("percent", DEFAULT_MARGINS["percent"])),
        mrr=float(given.get("mrr", DEFAULT_MARGINS["mrr"])),
        cka=float(given.get("cka", DEFAULT_MARGINS["cka"])),
    )
    langs = {
        "aligned_langs": None if aligned_langs is None else tuple(aligned_langs),
        "stand_ins": {str(paper): str(ours) for paper, ours in (findings.get("stand_ins") or {}).items()},
    }
    return Criteria(
        layer=findings.get("layer", "report"),
        margin=float(findings.get("margin", 0.0)),
        margins=margins,
        **langs,
        mds_freeze=findings.get("mds_freeze"),
        xnli_mds_freeze=int(xnli_mds_freeze),
        shown_layer=shown.get("layer"),
        metric=shown.get("metric"),
        dictionary_split=shown.get("dictionary_split"),
        resamples=int(bootstrap.get("resamples", DEFAULT_RESAMPLES)),
        level=float(bootstrap.get("level", DEFAULT_LEVEL)),
        seed=int(bootstrap.get("seed", DEFAULT_SEED)),
        method=str(bootstrap.get("method", "percentile")),
    )


def write_findings(
    paths: Mapping[str, str | Path],
    out_parquet: str | Path,
    out_csv: str | Path,
    pivot: str,
    criteria: Criteria | None = None,
) -> pd.DataFrame:
    """Judge every claim on the tables at `paths` and write the findings table (Parquet and CSV)."""
    table = judge_claims(read_tables(paths), pivot, criteria or Criteria())
    write_parquet(table, out_parquet)
    with atomic_write(out_csv) as handle:
        table.to_csv(handle, index=False)
    return table
