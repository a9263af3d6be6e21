"""The verdict machinery every study's claims share: the judging settings (`Criteria`: BERT's layer, the
bootstrap, the margin of "at least" claims), what a judge returns (`Finding`, or `NotMeasured` for what the
run lacks), the numbers it compares (`Measure`s with their intervals and flags) and the tables the findings
read with the columns each must have (`TABLES`). The study modules of this package judge their claims with it.

Why a guard before every comparison (`greater`, `at_least`): a degenerate number (at chance, one class, nothing
mined) makes a claim not measurable, and a number without an interval (no per-item scores in the run yet and
one seed) leaves it inconclusive: never "holds" on a number whose uncertainty is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from xling.data.transfer_tasks import TASK_METRIC  # noqa: F401  (re-exported to the study modules)
from xling.evaluate import verdicts
from xling.evaluate.alignment import language_study_rows
from xling.evaluate.chance import at_or_below_chance, flag, nothing_mined
from xling.evaluate.uncertainty import bootstrap_groups, paired_groups_difference
from xling.evaluate.verdicts import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURABLE, Measure, Verdict
from xling.evaluate.verdicts import all_of, any_of, every_unit, most, negate  # noqa: F401  (re-exported)
from xling.plan.tables import FINDINGS_COLUMNS

NOT_MEASURED = "not measured"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE, NOT_MEASURABLE, NOT_MEASURED)
STATIC = ("glove", "word2vec")
LABEL = {"glove": "GloVe", "word2vec": "Word2Vec", "bert": "BERT"}
XNLI_CHANCE = 100 / 3  # three labels, accuracy in percent: the uniform floor, for a table without a chance column
#: the columns each table must have: the tables the findings read, keyed as their inputs (the table registry)
TABLES = FINDINGS_COLUMNS
#: tables that come as several files (one per model), concatenated on reading
MULTI_FILE = ("word_retrieval_ranks", "contextual_retrieval_queries", "transfer_items")
#: fraction columns (0-1) the findings judge in percent, the unit the report shows them in, so a claim's numbers,
#: flags and reasons read as the tables do: table -> columns. MRR and CKA stay 0-1; XNLI, UPOS, LAS and NER F1
#: are stored in percent already.
PERCENT_COLUMNS = {
    "tatoeba": ("accuracy",),
    "bucc": ("f1", "precision", "recall", "dev_f1", "dev_precision", "dev_recall"),
    "token_translation": ("convert_rate",),
    "contextual_retrieval": ("accuracy", "accuracy_src_tgt", "accuracy_tgt_src", "chance"),
    "contextual_retrieval_pos": ("accuracy", "chance"),
    "contextual_retrieval_frequency": ("accuracy", "chance"),
    "contextual_retrieval_queries": ("hit",),
    "monolingual_words": ("p_at_1", "p_at_5"),
    "monolingual_sentences": ("p_at_1",),
}
#: the settings each finding records, one column each (empty when the claim does not use it)
SETTING_COLUMNS = ("table", "metric", "models", "corpus_size", "windows", "layers", "pairs", "alphas")


#: a gathered table's bootstrap interval of each row's number (xling.evaluate.intervals), in the number's unit
ROW_INTERVAL = ("ci_low", "ci_high")


def in_percent(tables: Tables) -> dict[str, pd.DataFrame]:
    """The tables with their PERCENT_COLUMNS multiplied by 100 (copies; the others as they are), and with them
    the rows' interval bounds, which are in the unit of the row's number."""
    scaled = dict(tables)
    for name, columns in PERCENT_COLUMNS.items():
        table = tables.get(name)
        present = [c for c in columns if table is not None and c in table]
        if present:
            present += [c for c in ROW_INTERVAL if c in table]
            scaled[name] = table.assign(**{c: 100 * table[c].astype(float) for c in present})
    return scaled


@dataclass(frozen=True)
class Criteria:
    """How claims are judged: BERT's word-retrieval layer ("report": the layer the report's tables show,
    `shown_layer`; "best"; or an index), the word-retrieval selection the report shows, the margin of the
    non-strict claims (metric units), the freeze depth of the MDS transfer claims (`mds_freeze`, findings.mds_freeze:
    None = the paper's: XNLI at `xnli_mds_freeze`, the plan's transfer.mds_freeze scaled to the run's BERT, POS and
    parsing at the run's smallest depth with MDS scores) and the bootstrap settings. `margins`: the equivalence margin of each metric kind (MARGIN_KINDS) where
    the paper gives none; `aligned_langs`: the languages a model aligned/{n}/{base} was aligned on (its id names
    none; alignment.finetune.languages; None: every language with word pairs); `stand_ins`: {paper language:
    run language} for the claims that name a language the run has not (findings.stand_ins)."""

    layer: str | int = "report"
    shown_layer: int | None = None
    metric: str | None = None
    dictionary_split: str | None = None
    margin: float = 0.0
    mds_freeze: int | None = None
    xnli_mds_freeze: int = 6
    margins: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_MARGINS))
    aligned_langs: tuple[str, ...] | None = ("bg", "de", "el", "es", "fr")  # None: every language
    stand_ins: Mapping[str, str] = field(default_factory=dict)
    resamples: int = 1000
    level: float = 0.95
    seed: int = 0
    method: str = "percentile"

    def boot(self) -> dict:
        return dict(n_resamples=self.resamples, level=self.level, seed=self.seed, method=self.method)


#: the default equivalence margin of each metric kind where the paper's words give none (findings.margins): in
#: the unit the report shows the metric in (percent points; MRR and CKA 0-1)
DEFAULT_MARGINS = {"percent": 1.0, "mrr": 0.01, "cka": 0.01}
MARGIN_KINDS = tuple(DEFAULT_MARGINS)


@dataclass(frozen=True)
class Margin:
    """The margin a claim's comparisons use (metric units) and where it comes from (the paper's words, a
    default of findings.margins, findings.margin for "at least")."""

    value: float
    source: str

    @classmethod
    def default(cls, criteria: "Criteria", kind: str) -> "Margin":
        """findings.margins' default for a metric kind (MARGIN_KINDS)."""
        if kind not in criteria.margins:
            raise ValueError(f"no default margin for {kind!r} (findings.margins has {sorted(criteria.margins)})")
        return cls(float(criteria.margins[kind]), f"default (findings.margins.{kind})")

    @classmethod
    def at_least(cls, criteria: "Criteria") -> "Margin":
        """The non-inferiority margin of the "at least" claims (findings.margin)."""
        return cls(float(criteria.margin), "findings.margin (non-inferiority)")


@dataclass
class Finding:
    verdict: Verdict
    measures: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    judged_on: str = "our models"
    margin: Margin | None = None  # None: strict comparisons only (no margin)

    @property
    def outcome(self) -> str:
        return self.verdict.outcome


class NotMeasured(Exception):
    """What the run lacks to judge a claim (its message is the row's reason)."""


Tables = Mapping[str, pd.DataFrame]
Judge = Callable[[Tables, Criteria, str], Finding]


@dataclass(frozen=True)
class Claim:
    """One claim: `text` our summary of what is judged, `quote` the paper's sentence verbatim (whitespace aside:
    tests/test_findings_rules.py finds it in ../shared/papers)."""

    id: str
    paper: str
    where: str
    text: str
    judge: Judge
    quote: str = ""


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 0.01 and value != 0 else f"{value:.3f}"


def _table(tables: Tables, key: str) -> pd.DataFrame:
    if key not in tables:
        raise NotMeasured(f"no {key} table in this run")
    return tables[key]


def _pairs(series: Mapping[str, pd.Series]) -> list[str]:
    pairs = sorted(set.intersection(*(set(s.index) for s in series.values())))
    if not pairs:
        raise NotMeasured("the compared models share no language pair")
    return pairs


# ---------------------------------------------------------------------------------------------- measures


def unresolved(*measures: Measure) -> Verdict | None:
    """Not measurable when a number is missing or degenerate; inconclusive when one has no interval yet."""
    problems = [m.problem() for m in measures if m.value is None or np.isnan(m.value) or m.flag]
    if problems:
        return Verdict(NOT_MEASURABLE, "; ".join(problems))
    missing = [m.label for m in measures if m.low is None or m.high is None]
    if missing:
        shown = ", ".join(str(m) for m in measures)
        return Verdict(INCONCLUSIVE, f"no interval for {', '.join(missing)} yet ({shown})")
    return None


def greater(a: Measure, b: Measure, paired=None, by: Margin | None = None) -> Verdict:
    """a > b after the guard; `by`: a gain of more than the margin (a paper's "a gain of at least 1%")."""
    return unresolved(a, b) or verdicts.greater(a, b, paired, by.value if by else 0.0)


def at_least(a: Measure, b: Measure, criteria: Criteria, paired=None) -> Verdict:
    return unresolved(a, b) or verdicts.at_least(a, b, paired, criteria.margin)


def equivalent(a: Measure, b: Measure, margin: Margin, paired=None) -> Verdict:
    """a ~ b within the margin (TOST, xling.evaluate.verdicts.equivalent), after the guard."""
    return unresolved(a, b) or verdicts.equivalent(a, b, paired, margin.value)


def joined_flag(flags) -> str | None:
    """The flags of a measure's rows, joined (None when no row is flagged)."""
    return flag(*(f for f in flags if isinstance(f, str) and f))


def point(label: str, values: pd.Series, flags=()) -> Measure:
    """A mean over groups with no interval (no per-item scores in this run and one seed)."""
    return Measure(label, float(values.mean()), flag=joined_flag(flags))


def rows_mean(label: str, rows: pd.DataFrame, column: str = "value", by: str | None = "lang", flags=()) -> Measure:
    """The mean over groups `by` (languages, pairs; None: every row its own group) of the rows' `column`. Its
    interval: the mean of the rows' bootstrap bounds (ROW_INTERVAL, from each row's per-item scores), where every
    row has them, else none. That is the interval of the mean were the rows' errors perfectly correlated, the
    widest case (the spread of a sum is at most the sum of the spreads): the test languages of XNLI, Tatoeba and
    token translation are translations of one another, so their errors are not independent, and an interval
    that assumed so could call a claim on too little."""

    def mean(values: str) -> float:
        return float((rows.groupby(by)[values].mean() if by else rows[values]).mean())

    if not len(rows) or not all(c in rows and rows[c].notna().all() for c in ROW_INTERVAL):
        return point(label, rows.groupby(by)[column].mean() if by else rows[column], flags)
    return Measure(label, mean(column), mean("ci_low"), mean("ci_high"), joined_flag(flags))


def from_items(label: str, groups: list, criteria: Criteria, flags=()) -> Measure:
    """A mean over groups (pairs, languages) of per-item scores, with its bootstrap interval."""
    return Measure.of(label, bootstrap_groups(groups, **criteria.boot()), joined_flag(flags))


def paired(a_groups: list, b_groups: list, criteria: Criteria):
    return paired_groups_difference(a_groups, b_groups, **criteria.boot())


def chance_flag(measure: Measure, chance: float) -> Measure:
    """The measure with the at-chance flag added: its interval's lower bound (a number without an interval:
    itself) at or below chance (chance.at_or_below_chance's rule)."""
    if measure.value is None:
        return measure
    low = measure.value if measure.low is None else measure.low
    high = measure.value if measure.high is None else measure.high
    reason = None
    if low <= chance:
        reason = f"{'at or below' if high <= chance else 'not above'} chance: {measure} vs chance {_num(chance)}"
    return Measure(measure.label, measure.value, measure.low, measure.high, flag(measure.flag, reason))


def rows_chance_flag(measure: Measure, rows: pd.DataFrame, column: str = "chance", by: str = "lang") -> Measure:
    """`chance_flag` at the rows' chance level (`column`), averaged over `by` as the measure's number is; the
    measure as it is when no row has a chance level (a table drawn before it was recorded)."""
    if column not in rows or rows[column].isna().all():
        return measure
    return chance_flag(measure, float(rows.groupby(by)[column].mean().mean()))


# ---------------------------------------------------------------------------------------------- degenerate rows


def with_table_flags(rows: pd.DataFrame, computed: pd.Series) -> pd.Series:
    """The flags the findings compute from a table's numbers joined with the table's own `flag` column (the
    gather's: at chance by the row's interval, constant predictions), so that no claim rests on a number its
    table already marks degenerate."""
    if "flag" not in rows:
        return computed
    own = [f if isinstance(f, str) and f else None for f in rows["flag"]]
    return pd.Series(
        [flag(a, b if isinstance(b, str) else None) for a, b in zip(own, computed, strict=True)],
        index=rows.index,
        dtype=object,
    )


def transfer_flags(rows: pd.DataFrame, pivot: str) -> pd.Series:
    """Each transfer row's degenerate reasons the table allows: XNLI at chance or at exactly one class's share
    of a balanced three-way test set (167 of 500: one class predicted), NER F1 0, and a fine-tuning whose pivot
    dev score is degenerate (it did not learn its own language: every row of that model is flagged)."""

    def own(row) -> str | None:
        if row["task"] == "xnli":
            n = int(row["n"]) if "n" in row and pd.notna(row["n"]) else 0
            correct = round(row["value"] * n / 100)
            share = n and correct in (n // 3, -(-n // 3)) and abs(100 * correct / n - row["value"]) < 1e-6
            # the table's own chance level (the gather's, computed once per test set: the better of a uniform
            # guess and the test set's majority class), the uniform floor only where the table has none
            chance = row["chance"] if "chance" in row and pd.notna(row["chance"]) else XNLI_CHANCE
            return flag(
                at_or_below_chance(row["value"], chance),
                f"one class's share ({correct}/{n}): one class predicted" if share else None,
            )
        if row["task"] == "ner" and row["value"] == 0:
            return "F1 0: no correct entity"
        return None

    if rows.empty:
        return pd.Series([], dtype=object)
    own_flags = rows.apply(own, axis=1)
    model = [
        c
        for c in ("model", "size", "window", "lm", "task", "freeze", "train_transform", "seed", "variant")
        if c in rows
    ]  # variant: Cao et al.'s and a grid point's fine-tunings are fine-tunings of their own
    dev = (rows["split"] == "dev") & (rows["lang"] == pivot) & (rows["transform"] == "none")
    own_flags = own_flags.map(lambda f: f if isinstance(f, str) else None)
    dead = own_flags[dev].dropna()
    keys = rows[model].astype(str).apply(tuple, axis=1)  # str: a missing lm (NaN) matches itself
    dead_models = dict(zip(keys[dead.index], dead, strict=True))
    learn = keys.map(
        lambda key: (
            f"the fine-tuning did not learn {pivot} ({pivot} dev {dead_models[key]})" if key in dead_models else None
        )
    )
    text = [[f for f in (a, b) if isinstance(f, str)] for a, b in zip(own_flags, learn, strict=True)]
    return pd.Series([flag(*t) for t in text], index=rows.index, dtype=object)


def bucc_flags(rows: pd.DataFrame) -> pd.Series:
    if "n_extracted" not in rows:
        return pd.Series([None] * len(rows), index=rows.index, dtype=object)
    return rows["n_extracted"].map(lambda n: nothing_mined(int(n)))


def translation_flags(rows: pd.DataFrame) -> pd.Series:
    """Token translation rows whose decoder repeats one token (one distinct prediction) or changes nothing."""

    def own(row) -> str | None:
        repeated = "distinct_predictions" in row and row["distinct_predictions"] <= 1
        return flag("one token repeated: one distinct prediction" if repeated else None)

    return rows.apply(own, axis=1) if len(rows) else pd.Series([], dtype=object)


def _zero_shot(transfer: pd.DataFrame, pivot: str, task: str) -> pd.DataFrame:
    """Test scores of `task` in the languages other than the pivot, with the epoch the run selected, with
    their degenerate reasons in `flag`."""
    transfer = language_study_rows(transfer)  # before the flags: Cao et al.'s fine-tunings are other runs
    rows = transfer.assign(flag=with_table_flags(transfer, transfer_flags(transfer, pivot)))
    rows = rows[
        (rows["task"] == task)
        & (rows["split"] == "test")
        & (rows["lang"] != pivot)
        & (rows["metric"] == TASK_METRIC[task])
        & (rows["train_transform"] == "none")
        & rows["selected"].astype(bool)
    ]
    if rows.empty:
        raise NotMeasured(f"no zero-shot {task} test scores in transfer")
    return rows
