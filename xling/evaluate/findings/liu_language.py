"""The claims of Liu et al. 2020 on language representation (the arXiv paper and its full version): token
translation and sentence retrieval with the MDS shift, and MDS at test time in zero-shot transfer.

They are claims about mBERT, so they are judged on the run's Hugging Face checkpoint when it has one, else on
our BERT at the largest size and longest window, and the row says which (`judged_on`). Transfer is judged at
the paper's freeze depth only (it fine-tunes the last 6 layers: `Criteria.mds_freeze` when set, else the
smallest depth with MDS scores).
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings.core import (TASK_METRIC, Claim, Criteria, Finding, Judge, Measure, NotMeasured, Tables,
                                          _pairs, _table, _zero_shot, all_of, at_least, bucc_flags, greater,
                                          over_seeds, rows_mean, translation_flags, with_table_flags)

OURS = "our BERT (no Hugging Face checkpoint in this run)"


def _language_model(table: pd.DataFrame, name: str) -> tuple[pd.DataFrame, str, str]:
    """Rows of the model the mBERT claims are judged on: the first Hugging Face checkpoint of the table, else
    our BERT at the largest size and longest window; its short label and the `judged_on` text."""
    checkpoints = sorted(table[table["size"] == 0]["model"].unique())
    if checkpoints:
        return table[table["model"] == checkpoints[0]], checkpoints[0], checkpoints[0]
    bert = table[(table["model"] == "bert") & (table["size"] > 0)]
    if bert.empty:
        raise NotMeasured(f"no BERT in {name}")
    size = bert["size"].max()
    window = bert[bert["size"] == size]["window"].max()
    return bert[(bert["size"] == size) & (bert["window"] == window)], f"bert {size}-w{window}", \
        f"{OURS}: {size}-w{window}"


def _model_settings(rows: pd.DataFrame, label: str) -> dict:
    return dict(models=label.split(" ")[0], corpus_size=int(rows["size"].iloc[0]),
                windows=int(rows["window"].iloc[0]))


def mds_improves_transfer(task: str) -> Judge:
    """The judge of "MDS at test time improves zero-shot `task`": MDS (alpha chosen on dev) against no
    transform, at the paper's freeze depth."""
    def judge(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
        rows = _zero_shot(_table(tables, "transfer"), pivot, task)
        rows, label, judged_on = _language_model(rows, "transfer")
        depths = sorted(int(f) for f in rows[rows["transform"] == "mds"]["freeze"].unique())
        if not depths:
            raise NotMeasured(f"no MDS scores of {task} for {label}")
        depth = criteria.mds_freeze if criteria.mds_freeze is not None else depths[0]
        if depth not in depths:
            raise NotMeasured(f"no MDS scores of {task} at freeze depth {depth} (the run has {depths})")
        at = rows[rows["freeze"] == depth]
        parts = {t: at[at["transform"] == t] for t in ("mds", "none")}
        langs = _pairs({t: p.set_index("lang")["value"] for t, p in parts.items()})
        measures = {t: over_seeds(f"{t} ({TASK_METRIC[task]})", p[p["lang"].isin(langs)],
                                  flags=p.loc[p["lang"].isin(langs), "flag"]) for t, p in parts.items()}
        return Finding(greater(measures["mds"], measures["none"]), list(measures.values()),
                       dict(table="transfer", metric=f"{task} {TASK_METRIC[task]}", **_model_settings(rows, label),
                            layers=f"frozen up to {depth}", pairs=[f"{pivot}-{lang}" for lang in langs],
                            alphas="selected on dev"), judged_on)
    return judge


# ---------------------------------------------------------------------------------------------- language

def _convert_rates(tables: Tables) -> tuple[pd.DataFrame, str, str]:
    rows, label, judged_on = _language_model(_table(tables, "token_translation"), "token_translation")
    return rows.assign(flag=translation_flags(rows)), label, judged_on


def _rate(rows: pd.DataFrame, layer, alpha) -> Measure:
    """Mean convert rate over pairs and directions at one layer and alpha, its interval from the rows' bootstrap
    over sentences (rows_mean)."""
    at = rows[(rows["layer"] == layer) & (rows["alpha"] == alpha)]
    return rows_mean(f"alpha {alpha:g}", at, "convert_rate", None, at["flag"])


def _translation_settings(rows: pd.DataFrame, label: str, alphas) -> dict:
    return dict(table="token_translation", metric="convert_rate", **_model_settings(rows, label),
                layers=", ".join(str(int(x)) for x in sorted(rows["layer"].unique())),
                pairs=sorted(rows["pair"].unique()), alphas=", ".join(f"{a:g}" for a in alphas))


def convert_rate_rises(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """The convert rate rises with alpha (from 0 up): no step down, and the largest alpha converts more than
    the smallest, at each layer."""
    rows, label, judged_on = _convert_rates(tables)
    alphas = sorted(a for a in rows["alpha"].unique() if a >= 0)
    if len(alphas) < 2:
        raise NotMeasured("fewer than two non-negative alphas in token_translation")
    layers = sorted(rows["layer"].unique())
    parts, measures = [], []
    for layer in layers:
        points = [_rate(rows, layer, a) for a in alphas]
        measures += [Measure(f"layer {layer} {m.label}", m.value, m.low, m.high, m.flag) for m in points]
        steps = [at_least(b, a, criteria) for a, b in zip(points, points[1:])]
        parts.append(all_of([*steps, greater(points[-1], points[0])]))
    return Finding(all_of(parts, [f"layer {layer}" for layer in layers]), measures,
                   _translation_settings(rows, label, alphas), judged_on)


def negative_alpha_stays(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """With a negative alpha the output stays in the source language: no more tokens converted than with
    no shift (alpha 0), at each layer."""
    rows, label, judged_on = _convert_rates(tables)
    negative = sorted(a for a in rows["alpha"].unique() if a < 0)
    if not negative or 0 not in set(rows["alpha"]):
        raise NotMeasured("token_translation needs a negative alpha and alpha 0")
    parts, labels, measures = [], [], []
    for layer in sorted(rows["layer"].unique()):
        zero = _rate(rows, layer, 0)
        for alpha in negative:
            shifted = _rate(rows, layer, alpha)
            parts.append(at_least(zero, shifted, criteria))
            labels.append(f"layer {layer}, alpha {alpha:g}")
            measures += [Measure(f"layer {layer} {m.label}", m.value, m.low, m.high, m.flag) for m in (shifted, zero)]
    return Finding(all_of(parts, labels), measures, _translation_settings(rows, label, [*negative, 0]), judged_on)


def mds_at_least_zero_mean(task: str) -> Judge:
    """The judge of "MDS retrieves at least as well as zero-mean" in sentence retrieval `task` (Tatoeba accuracy,
    BUCC test F1), at the layer the run reports."""
    metric = {"tatoeba": "accuracy", "bucc": "f1"}[task]

    def judge(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
        rows, label, judged_on = _language_model(_table(tables, task), task)
        rows = rows[rows["layer"] == rows["report_layer"]]
        if rows.empty:
            raise NotMeasured(f"{task} has no rows at its report layer")
        computed = bucc_flags(rows) if task == "bucc" else pd.Series([None] * len(rows), index=rows.index)
        rows = rows.assign(flag=with_table_flags(rows, computed))
        parts = {v: rows[rows["variant"] == v] for v in ("mds", "zero_mean")}
        langs = _pairs({v: p.groupby("lang")[metric].mean() for v, p in parts.items()})
        measures = {v: rows_mean(v.replace("_", "-"), p[p["lang"].isin(langs)], metric, "lang",
                                 p.loc[p["lang"].isin(langs), "flag"]) for v, p in parts.items()}
        return Finding(at_least(measures["mds"], measures["zero_mean"], criteria), list(measures.values()),
                       dict(table=task, metric=metric, **_model_settings(rows, label),
                            layers=int(rows["layer"].iloc[0]), pairs=[f"{pivot}-{lang}" for lang in langs],
                            alphas=", ".join(f"{a:g}" for a in sorted(rows["mds_alpha"].unique()))
                            if "mds_alpha" in rows else None), judged_on)
    return judge
# ---------------------------------------------------------------------------------------------- the claims

# the papers as ../shared/papers/published_results.yaml keys them (claim ids start with the key)
FULL = "Liu et al. 2020, A Study of Cross-Lingual Ability and Language-specific Information in Multilingual BERT"
SHORT = "Liu et al. 2020, Language Representation in Multilingual BERT and its applications (arXiv:2010.10041)"

CLAIMS = [
    Claim("liu2020_short.translation.alpha", SHORT, "§3.3, Table 1",
          "In unsupervised token translation by MDS, the convert rate rises with alpha.", convert_rate_rises),
    Claim("liu2020_short.translation.negative-alpha", SHORT, "§3.3",
          "With a negative alpha the model keeps decoding tokens of the source language.", negative_alpha_stays),
    Claim("liu2020_short.tatoeba.mds", SHORT, "§4.3, Table 2",
          "In Tatoeba sentence retrieval, MDS-shifted embeddings retrieve at least as well as zero-mean ones.",
          mds_at_least_zero_mean("tatoeba")),
    Claim("liu2020_short.bucc.mds", SHORT, "§4.3, Table 3",
          "In BUCC 2018 bitext mining, MDS-shifted embeddings score at least as well as zero-mean ones (test F1).",
          mds_at_least_zero_mean("bucc")),
    Claim("liu2020_full.xnli.mds", FULL, "§4.3, Table 4",
          "MDS at test time improves zero-shot XNLI.", mds_improves_transfer("xnli")),
    Claim("liu2020_short.pos.mds", SHORT, "§5.3, Table 4",
          "MDS at test time improves zero-shot POS tagging.", mds_improves_transfer("pos")),
    Claim("liu2020_short.parsing.mds", SHORT, "§5.3, Table 5",
          "MDS at test time improves zero-shot dependency parsing (LAS).", mds_improves_transfer("parsing")),
]
