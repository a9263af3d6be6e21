"""The verdict machinery every study's claims share: how numbers are compared (`Criteria`), what a judge
returns (`Finding`, or `NotMeasured` for what the run lacks), a claim, and the tables the findings read with
the columns each must have (`TABLES`). The study modules of this package judge their claims with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import pandas as pd

from xling.data.transfer_tasks import TASK_METRIC  # noqa: F401  (re-exported to the study modules)
from xling.plan.tables import FINDINGS_COLUMNS

HOLDS, FAILS, NOT_MEASURED = "holds", "does not hold", "not measured"
STATIC = ("glove", "word2vec")
LABEL = {"glove": "GloVe", "word2vec": "Word2Vec", "bert": "BERT"}
#: the columns each table must have: the tables the findings read, keyed as their inputs (the table registry)
TABLES = FINDINGS_COLUMNS
#: the settings each finding records, one column each (empty when the claim does not use it)
SETTING_COLUMNS = ("table", "metric", "models", "corpus_size", "windows", "layers", "pairs", "alphas")


@dataclass(frozen=True)
class Criteria:
    """How numbers are compared: BERT's layer in word retrieval ("best" or an index) and the tie tolerance."""

    layer: str | int = "best"
    tolerance: float = 0.02

    def tie(self, a: float, b: float) -> bool:
        return abs(a - b) <= self.tolerance * max(abs(a), abs(b))

    def greater(self, a: float, b: float) -> bool:
        """a > b beyond a tie (a strict claim)."""
        return a > b and not self.tie(a, b)

    def at_least(self, a: float, b: float) -> bool:
        """a >= b, or a tie (a non-strict claim)."""
        return a >= b or self.tie(a, b)

    def sign(self, a: float, b: float) -> str:
        return "\u2248" if self.tie(a, b) else (">" if a > b else "<")


@dataclass
class Finding:
    verdict: str
    evidence: str
    settings: dict


class NotMeasured(Exception):
    """What the run lacks to judge a claim (its message is the row's evidence)."""


Tables = Mapping[str, pd.DataFrame]
Judge = Callable[[Tables, Criteria, str], Finding]


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    where: str
    text: str
    judge: Judge


def _verdict(holds: bool) -> str:
    return HOLDS if holds else FAILS


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 0.01 and value != 0 else f"{value:.3f}"


def _table(tables: Tables, key: str) -> pd.DataFrame:
    if key not in tables:
        raise NotMeasured(f"no {key} table in this run")
    return tables[key]


def _common(series: Mapping[str, pd.Series]) -> tuple[dict[str, float], list[str]]:
    """Means over the pairs every series has, and those pairs."""
    pairs = sorted(set.intersection(*(set(s.index) for s in series.values())))
    if not pairs:
        raise NotMeasured("the compared models share no language pair")
    return {name: float(s[pairs].mean()) for name, s in series.items()}, pairs


def _zero_shot(transfer: pd.DataFrame, pivot: str, task: str) -> pd.DataFrame:
    """Test scores of `task` in the languages other than the pivot, with the epoch the run selected."""
    rows = transfer[(transfer["task"] == task) & (transfer["split"] == "test") & (transfer["lang"] != pivot)
                    & (transfer["metric"] == TASK_METRIC[task]) & (transfer["train_transform"] == "none")
                    & transfer["selected"].astype(bool)]
    if rows.empty:
        raise NotMeasured(f"no zero-shot {task} test scores in transfer")
    return rows
