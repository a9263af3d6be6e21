"""The studies' qualitative findings judged on this run's tables: one row per claim, with the numbers of the
run that test it, the settings they were taken at, and a verdict (holds / does not hold / not measured).

How a claim is judged (one rule for every claim, so each verdict can be checked by hand from the tables):
- Which BERT layer: `layer: best` takes each BERT's layer with the highest word-retrieval MRR averaged over
  its language pairs (a tie: the lower layer); an integer takes that layer of every BERT. The static models
  have one layer. Token translation and sentence retrieval are judged at the layers the run measured them at
  (language.layers, language.sentence_retrieval.layer: the papers' own choice), transfer at each freeze depth
  that has MDS scores; a claim measured at several layers or depths holds when it holds at each.
- Numbers are means over the language pairs (or test languages, directions and seeds) that every compared
  model has; the pairs are a column.
- Two numbers a and b tie when |a - b| <= tolerance * max(|a|, |b|): relative, so MRR, accuracy in percent
  and convert rates share one tolerance. A strict claim ("overtakes", "hurts", "improves": a > b) holds when
  a exceeds b by more than a tie; a non-strict one ("not better than", "at least": a >= b) also holds on a tie.
- Small data is the run's smallest corpus size, large data its largest; the long window is the BERTs' longest
  at that size, the short one their shortest. The language and transfer claims are judged on the model of the
  language experiments: our BERT at the largest size and longest window, else the first Hugging Face
  checkpoint of the table.
- A claim whose table, model, size, window or setting the run lacks is "not measured", never an error.

The package: `core` holds the verdict machinery and the tables the findings read; one module per study holds its
claims and their judges (`liu_what`, `liu_language`, `conneau`, `cao`); this module lists the claims in the
table's order, judges them and writes the table.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

import pandas as pd

from xling.evaluate.findings import cao, conneau, liu_language, liu_what
from xling.evaluate.findings.core import (FAILS, HOLDS, NOT_MEASURED, SETTING_COLUMNS, TABLES, Criteria,  # noqa: F401
                                          Finding, NotMeasured, Tables)
from xling.evaluate.findings.liu_what import bert_layer  # noqa: F401
from xling.io import atomic_write
from xling.tables import write_parquet

logger = logging.getLogger(__name__)

CLAIMS = [*liu_what.CLAIMS, *liu_language.CLAIMS, *conneau.CLAIMS, *cao.CLAIMS]


def judge_claims(tables: Tables, pivot: str, layer: str | int = "best", tolerance: float = 0.02) -> pd.DataFrame:
    """The findings table: one row per claim of `CLAIMS`, judged on `tables` (key -> table, keys of TABLES;
    a missing key makes its claims not measured)."""
    criteria = Criteria(layer=layer, tolerance=tolerance)
    rows = []
    for claim in CLAIMS:
        try:
            finding = claim.judge(tables, criteria, pivot)
        except NotMeasured as why:
            finding = Finding(NOT_MEASURED, str(why), {})
        settings = {key: finding.settings.get(key) for key in SETTING_COLUMNS}
        if settings["pairs"] is not None:
            settings["pairs"] = ", ".join(settings["pairs"])
        rows.append({"id": claim.id, "paper": claim.paper, "where": claim.where, "claim": claim.text,
                     "verdict": finding.verdict, "evidence": finding.evidence,
                     **{k: None if v is None else str(v) for k, v in settings.items()}})
        logger.info("%s: %s (%s)", claim.id, finding.verdict, finding.evidence)
    table = pd.DataFrame(rows)
    table["layer_rule"] = str(layer)
    table["tolerance"] = float(tolerance)
    return table


def read_tables(paths: Mapping[str, str | Path]) -> dict[str, pd.DataFrame]:
    """Load the run's tables; a table without a column the findings read is an error naming the file."""
    tables = {}
    for key, path in paths.items():
        table = pd.read_parquet(path)
        missing = [c for c in TABLES[key] if c not in table.columns]
        if missing:
            raise ValueError(f"{path}: {key} table without column(s) {', '.join(missing)}")
        tables[key] = table
    return tables


def write_findings(paths: Mapping[str, str | Path], out_parquet: str | Path, out_csv: str | Path, pivot: str,
                   layer: str | int = "best", tolerance: float = 0.02) -> pd.DataFrame:
    """Judge every claim on the tables at `paths` and write the findings table (Parquet and CSV)."""
    table = judge_claims(read_tables(paths), pivot, layer=layer, tolerance=tolerance)
    write_parquet(table, out_parquet)
    with atomic_write(out_csv) as handle:
        table.to_csv(handle, index=False)
    return table
