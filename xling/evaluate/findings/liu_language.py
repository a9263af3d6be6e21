"""The claims of Liu et al. 2020 on language representation (the arXiv paper and its full version): token
translation and sentence retrieval with the MDS shift, and MDS at test time in zero-shot transfer, each judged
on the model of the language experiments.
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings.core import (TASK_METRIC, Claim, Criteria, Finding, Judge, NotMeasured, Tables, _common,
                                          _num, _table, _verdict, _zero_shot)

# ---------------------------------------------------------------------------------------------- transfer

def _language_model(table: pd.DataFrame, name: str) -> tuple[pd.DataFrame, str]:
    """Rows of the language experiments' model: our BERT at the largest size and longest window, else the
    first Hugging Face checkpoint; and its label."""
    bert = table[(table["model"] == "bert") & (table["size"] > 0)]
    if not bert.empty:
        size = bert["size"].max()
        window = bert[bert["size"] == size]["window"].max()
        return bert[(bert["size"] == size) & (bert["window"] == window)], f"bert {size}-w{window}"
    checkpoints = sorted(table[table["size"] == 0]["model"].unique())
    if not checkpoints:
        raise NotMeasured(f"no BERT in {name}")
    return table[table["model"] == checkpoints[0]], checkpoints[0]


def _model_settings(rows: pd.DataFrame, label: str) -> dict:
    return dict(models=label.split(" ")[0], corpus_size=int(rows["size"].iloc[0]),
                windows=int(rows["window"].iloc[0]))


def mds_improves_transfer(task: str) -> Judge:
    """The judge of "MDS at test time improves zero-shot `task`": MDS (alpha chosen on dev) against no
    transform, at each freeze depth that has MDS scores."""
    def judge(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
        rows = _zero_shot(_table(tables, "transfer"), pivot, task)
        rows, label = _language_model(rows, "transfer")
        depths = sorted(int(f) for f in rows[rows["transform"] == "mds"]["freeze"].unique())
        if not depths:
            raise NotMeasured(f"no MDS scores of {task} for {label}")
        results, langs = [], set()
        for depth in depths:
            at = rows[rows["freeze"] == depth]
            means, shared = _common({t: at[at["transform"] == t].groupby("lang")["value"].mean()
                                     for t in ("mds", "none")})
            langs |= set(shared)
            results.append((depth, means, criteria.greater(means["mds"], means["none"])))
        evidence = "; ".join(f"frozen up to {d}: MDS {m['mds']:.1f} {criteria.sign(m['mds'], m['none'])} "
                             f"none {m['none']:.1f}" for d, m, _ in results)
        return Finding(_verdict(all(h for *_, h in results)), f"mean {TASK_METRIC[task]} over "
                       f"{len(langs)} languages, {label}: {evidence}",
                       dict(table="transfer", metric=f"{task} {TASK_METRIC[task]}", **_model_settings(rows, label),
                            layers=", ".join(f"frozen up to {d}" for d in depths),
                            pairs=[f"{pivot}-{lang}" for lang in sorted(langs)], alphas="selected on dev"))
    return judge


# ---------------------------------------------------------------------------------------------- language

def _convert_rates(tables: Tables) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Mean convert rate over pairs and directions, by layer (rows) and alpha (columns)."""
    rows, label = _language_model(_table(tables, "token_translation"), "token_translation")
    return rows.groupby(["layer", "alpha"])["convert_rate"].mean().unstack("alpha"), rows, label


def _translation_settings(rows: pd.DataFrame, label: str, alphas) -> dict:
    return dict(table="token_translation", metric="convert_rate", **_model_settings(rows, label),
                layers=", ".join(str(int(x)) for x in sorted(rows["layer"].unique())),
                pairs=sorted(rows["pair"].unique()), alphas=", ".join(f"{a:g}" for a in alphas))


def convert_rate_rises(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """The convert rate rises with alpha (from 0 up): no step down beyond a tie, and the largest alpha
    converts more than the smallest, at each layer."""
    rates, rows, label = _convert_rates(tables)
    alphas = [a for a in rates.columns if a >= 0]
    if len(alphas) < 2:
        raise NotMeasured("fewer than two non-negative alphas in token_translation")
    rising = {layer: all(criteria.at_least(r[b], r[a]) for a, b in zip(alphas, alphas[1:]))
              and criteria.greater(r[alphas[-1]], r[alphas[0]]) for layer, r in rates[alphas].iterrows()}
    evidence = "; ".join(f"layer {layer}: " + ", ".join(_num(rates.loc[layer, a]) for a in alphas)
                         for layer in rates.index)
    return Finding(_verdict(all(rising.values())),
                   f"mean convert rate at alpha {', '.join(f'{a:g}' for a in alphas)}, {label}: {evidence}",
                   _translation_settings(rows, label, alphas))


def negative_alpha_stays(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """With a negative alpha the output stays in the source language: no more tokens converted than with
    no shift (alpha 0), at each layer."""
    rates, rows, label = _convert_rates(tables)
    negative = [a for a in rates.columns if a < 0]
    if not negative or 0 not in rates.columns:
        raise NotMeasured("token_translation needs a negative alpha and alpha 0")
    stays = all(criteria.at_least(r[0], r[a]) for _, r in rates.iterrows() for a in negative)
    evidence = "; ".join(f"layer {layer}: " + ", ".join(f"{_num(rates.loc[layer, a])} (alpha {a:g})"
                                                        for a in [*negative, 0]) for layer in rates.index)
    return Finding(_verdict(stays), f"mean convert rate, {label}: {evidence}",
                   _translation_settings(rows, label, [*negative, 0]))


def mds_at_least_zero_mean(task: str) -> Judge:
    """The judge of "MDS retrieves at least as well as zero-mean" in sentence retrieval `task` (Tatoeba accuracy,
    BUCC test F1), at the layer the run reports."""
    metric = {"tatoeba": "accuracy", "bucc": "f1"}[task]

    def judge(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
        rows, label = _language_model(_table(tables, task), task)
        rows = rows[rows["layer"] == rows["report_layer"]]
        if rows.empty:
            raise NotMeasured(f"{task} has no rows at its report layer")
        means, langs = _common({v: rows[rows["variant"] == v].groupby("lang")[metric].mean()
                                for v in ("mds", "zero_mean")})
        evidence = (f"mean {metric} over {len(langs)} languages, {label}: MDS {_num(means['mds'])} "
                    f"{criteria.sign(means['mds'], means['zero_mean'])} zero-mean {_num(means['zero_mean'])}")
        return Finding(_verdict(criteria.at_least(means["mds"], means["zero_mean"])), evidence,
                       dict(table=task, metric=metric, **_model_settings(rows, label),
                            layers=int(rows["layer"].iloc[0]), pairs=[f"{pivot}-{lang}" for lang in langs],
                            alphas=", ".join(f"{a:g}" for a in sorted(rows["mds_alpha"].unique()))
                            if "mds_alpha" in rows else None))
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
