"""The claims of Liu et al. 2020 on language representation (the arXiv paper and its full version): token
translation and sentence retrieval with the MDS shift, and MDS at test time in zero-shot transfer.

They are claims about mBERT, so they are judged on the run's Hugging Face checkpoint when it has one, else on
our BERT at the largest size and longest window, and the row says which (`judged_on`). Transfer is judged at
the paper's freeze depth only (it fine-tunes the last 6 layers: `Criteria.mds_freeze` when set, else the
smallest depth with MDS scores).
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.chance import is_degenerate
from xling.evaluate.findings.core import (
    NOT_MEASURABLE,
    TASK_METRIC,
    Claim,
    Criteria,
    Finding,
    Judge,
    Measure,
    NotMeasured,
    Tables,
    Verdict,
    _pairs,
    _table,
    _zero_shot,
    all_of,
    at_least,
    bucc_flags,
    every_unit,
    greater,
    most,
    rows_mean,
    translation_flags,
    with_table_flags,
)
from xling.evaluate.findings.seeds import over_seeds, paired_over_seeds

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
    return (
        bert[(bert["size"] == size) & (bert["window"] == window)],
        f"bert {size}-w{window}",
        f"{OURS}: {size}-w{window}",
    )


def _model_settings(rows: pd.DataFrame, label: str) -> dict:
    return dict(models=label.split(" ")[0], corpus_size=int(rows["size"].iloc[0]), windows=int(rows["window"].iloc[0]))


#: the freeze depth each paper's MDS transfer runs at: the full paper's XNLI "fixing the first six layers" (of 12:
#: Criteria.xnli_mds_freeze, the plan's transfer.mds_freeze scaled to the run's BERT); the short paper names no
#: frozen layer for POS and parsing (None: the run's smallest depth with MDS scores, its transfer depth)
PAPER_FREEZE = {"xnli": "planned", "pos": None, "parsing": None}
#: a test treebank without an official development set (the short paper's parsing languages) is marked so in the
#: transfer table's `low_resource` column
LOW_RESOURCE = "low_resource"


def mds_improves_transfer(task: str) -> Judge:
    """The judge of "MDS at test time improves zero-shot `task` in most languages" (each paper names its
    exceptions): per test language MDS (alpha chosen on dev) against no transform, at the paper's freeze depth
    (PAPER_FREEZE, or findings.mds_freeze) and never another; a degenerate language is left out and named.
    Parsing: on the low-resource treebanks only (the paper's six without a development set; on synthetic data
    the test-only languages without pretraining text that stand for them)."""

    def judge(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
        rows = _zero_shot(_table(tables, "transfer"), pivot, task)
        rows, label, judged_on = _language_model(rows, "transfer")
        pretrained = rows
        if task == "parsing":
            low = rows[LOW_RESOURCE].fillna(False).astype(bool) if LOW_RESOURCE in rows else None
            if low is None or not low.any():
                raise NotMeasured(
                    "no low-resource parsing treebank in this run (the paper: 6 low-resource "
                    "languages without an official development set; on synthetic data, test-only "
                    "languages the run does not pretrain on); its parsing languages: "
                    + ", ".join(sorted(rows["lang"].unique()))
                )
            pretrained, rows = rows[~low], rows[low]
        depths = sorted(int(f) for f in rows[rows["transform"] == "mds"]["freeze"].unique())
        depth = criteria.mds_freeze if criteria.mds_freeze is not None else PAPER_FREEZE[task]
        depth = criteria.xnli_mds_freeze if depth == "planned" else depth
        depth = (depths[0] if depths else 0) if depth is None else depth
        if depth not in depths:
            raise NotMeasured(
                f"no MDS scores of {task} at the paper's freeze depth {depth} for {label} "
                f"(the run has {depths or 'none'})"
            )
        at = rows[rows["freeze"] == depth]
        parts = {t: at[at["transform"] == t] for t in ("mds", "none")}
        langs = _pairs({t: p.set_index("lang")["value"] for t, p in parts.items()})
        per_lang, measures = [], []
        for lang in langs:
            here = {t: p[p["lang"] == lang] for t, p in parts.items()}
            found = {
                t: over_seeds(
                    f"{lang} {t} ({TASK_METRIC[task]})",
                    p,
                    flags=p["flag"],
                    items=tables.get("transfer_items"),
                    criteria=criteria,
                )
                for t, p in here.items()
            }
            measures += list(found.values())
            per_lang.append(
                greater(found["mds"], found["none"], paired_over_seeds(tables, here["mds"], here["none"], criteria))
            )
        verdict = most(per_lang, langs)
        if task == "parsing" and verdict.outcome == NOT_MEASURABLE:
            verdict = Verdict(
                NOT_MEASURABLE, verdict.reason + _unseen_languages(rows, pretrained[pretrained["freeze"] == depth])
            )
        return Finding(
            verdict,
            measures,
            dict(
                table="transfer",
                metric=f"{task} {TASK_METRIC[task]}",
                **_model_settings(rows, label),
                layers=f"frozen up to {depth}",
                pairs=[f"{pivot}-{lang}" for lang in langs],
                alphas="selected on dev",
            ),
            judged_on,
        )

    return judge


def _unseen_languages(low: pd.DataFrame, pretrained: pd.DataFrame) -> str:
    """Why no synthetic low-resource treebank can be measured, in the reason: they are languages no BERT of the
    run pretrains on, and the run's own languages show whether the parser transfers where BERT has seen the
    language (each of its unshifted scores unflagged in every seed). Real treebanks get no such note."""
    if "source" not in low or set(low["source"]) != {"synthetic"}:
        return ""
    unshifted = pretrained[pretrained["transform"] == "none"]
    above = sorted(lang for lang, part in unshifted.groupby("lang") if not part["flag"].map(is_degenerate).any())
    return (
        "; the low-resource languages are test-only: no BERT of this run pretrains on their text, and their "
        "words are their own but for the anchors shared with English. Languages it pretrains on with parsing "
        f"above the floor: {', '.join(above) if above else 'none'}"
    )


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
    return dict(
        table="token_translation",
        metric="convert_rate",
        **_model_settings(rows, label),
        layers=", ".join(str(int(x)) for x in sorted(rows["layer"].unique())),
        pairs=sorted(rows["pair"].unique()),
        alphas=", ".join(f"{a:g}" for a in alphas),
    )


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
        steps = [at_least(b, a, criteria) for a, b in zip(points, points[1:], strict=False)]
        parts.append(all_of([*steps, greater(points[-1], points[0])]))
    return Finding(
        all_of(parts, [f"layer {layer}" for layer in layers]),
        measures,
        _translation_settings(rows, label, alphas),
        judged_on,
    )


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


#: the unshifted embeddings' variant in the sentence-retrieval tables (the paper's "doing nothing")
UNSHIFTED = "original"


def mds_beats_unshifted(task: str) -> Judge:
    """The judge of "MDS-shifted embeddings retrieve better than the unshifted ones" in sentence retrieval `task`
    (Tatoeba accuracy, BUCC test F1), per language at the layer the run reports: BUCC in every language (the
    paper: "on all of the languages"), Tatoeba in most (the paper names three exceptions). A degenerate
    language is left out and named."""
    metric = {"tatoeba": "accuracy", "bucc": "f1"}[task]

    def judge(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
        rows, label, judged_on = _language_model(_table(tables, task), task)
        rows = rows[rows["layer"] == rows["report_layer"]]
        if rows.empty:
            raise NotMeasured(f"{task} has no rows at its report layer")
        if not {"mds", UNSHIFTED} <= set(rows["variant"]):
            raise NotMeasured(f"{task} needs rows of MDS and of the unshifted embeddings (variant {UNSHIFTED!r})")
        computed = bucc_flags(rows) if task == "bucc" else pd.Series([None] * len(rows), index=rows.index)
        rows = rows.assign(flag=with_table_flags(rows, computed))
        parts = {v: rows[rows["variant"] == v] for v in ("mds", UNSHIFTED)}
        langs = _pairs({v: p.groupby("lang")[metric].mean() for v, p in parts.items()})
        per_lang, measures = [], []
        for lang in langs:
            found = {
                v: rows_mean(
                    f"{lang} {'MDS' if v == 'mds' else 'unshifted'}",
                    p[p["lang"] == lang],
                    metric,
                    "lang",
                    p.loc[p["lang"] == lang, "flag"],
                )
                for v, p in parts.items()
            }
            measures += list(found.values())
            per_lang.append(greater(found["mds"], found[UNSHIFTED]))
        verdict = every_unit(per_lang, langs) if task == "bucc" else most(per_lang, langs)
        return Finding(
            verdict,
            measures,
            dict(
                table=task,
                metric=metric,
                **_model_settings(rows, label),
                layers=int(rows["layer"].iloc[0]),
                pairs=[f"{pivot}-{lang}" for lang in langs],
                alphas=", ".join(f"{a:g}" for a in sorted(rows["mds_alpha"].unique())) if "mds_alpha" in rows else None,
            ),
            judged_on,
        )

    return judge


# ---------------------------------------------------------------------------------------------- the claims

# the papers as ../shared/papers/published_results.yaml keys them (claim ids start with the key)
FULL = "Liu et al. 2020, A Study of Cross-Lingual Ability and Language-specific Information in Multilingual BERT"
SHORT = (
    "Liu et al. 2020, Language Representation in Multilingual BERT and its applications to improve "
    "Cross-lingual Generalization (arXiv:2010.10041)"
)

CLAIMS = [
    Claim(
        "liu2020_short.translation.alpha",
        SHORT,
        "§3.3, Table 1",
        "In unsupervised token translation by MDS, the convert rate rises with alpha.",
        convert_rate_rises,
        "as α became larger, the model converted more tokens to target language L2",
    ),
    Claim(
        "liu2020_short.translation.negative-alpha",
        SHORT,
        "§3.3",
        "With a negative alpha the model keeps decoding tokens of the source language.",
        negative_alpha_stays,
        "When given a negative α, the model always decoded tokens belonging toL1.",
    ),
    Claim(
        "liu2020_short.tatoeba.mds",
        SHORT,
        "§4.3, Table 2",
        "In Tatoeba sentence retrieval, MDS-shifted embeddings retrieve better than the unshifted ones in most "
        "languages.",
        mds_beats_unshifted("tatoeba"),
        "On Tatoeba test-set, MDS embeddings were also the best in most of the languages except for Hindi, "
        "Russian and Vietnamese.",
    ),
    Claim(
        "liu2020_short.bucc.mds",
        SHORT,
        "§4.3, Table 3",
        "In BUCC 2018 bitext mining, MDS-shifted embeddings score better than the unshifted ones in every "
        "language (test F1).",
        mds_beats_unshifted("bucc"),
        "embeddings shifted by MDS consistently achieved higher accuracies on all of the languages",
    ),
    Claim(
        "liu2020_full.xnli.mds",
        FULL,
        "§4.3, Table 4",
        "With the first six layers frozen in fine-tuning, MDS at the 6th layer at test time improves zero-shot "
        "XNLI in most languages.",
        mds_improves_transfer("xnli"),
        "For XNLI task, we finetuned the m-BERT model on the English dataset while fixing the first six layers of it",
    ),
    Claim(
        "liu2020_short.pos.mds",
        SHORT,
        "§5.3, Table 4",
        "MDS at test time improves zero-shot POS tagging in most languages.",
        mds_improves_transfer("pos"),
        "For the POS tagging task, Zero-mean and MDS both improved the performances on the testing sets across "
        "languages with only a few exceptions.",
    ),
    Claim(
        "liu2020_short.parsing.mds",
        SHORT,
        "§5.3, Table 5",
        "On low-resource treebanks, MDS at test time improves zero-shot dependency parsing (LAS) in most languages.",
        mds_improves_transfer("parsing"),
        "We evaluated the zero-shot performance on 6 low-resource languages that do not have an official "
        "development set.",
    ),
]
