"""The claims of Conneau et al. 2020, Emerging Cross-lingual Structure in Pretrained Language Models: the
pretraining ablations (anchors, parameter sharing) and the monolingual BERTs (alignment through a map, CKA).
"""

from __future__ import annotations

import re

import pandas as pd

from xling.data.transfer_tasks import TASK_METRIC
from xling.evaluate.ablation import ablation_scores
from xling.evaluate.findings.cao import drop
from xling.evaluate.findings.core import (NOT_MEASURABLE, Claim, Criteria, Finding, Margin, Measure, NotMeasured,
                                          Tables, Verdict, _pairs, _table, all_of, at_least, chance_flag, equivalent,
                                          every_unit, greater, rows_mean, transfer_flags, with_table_flags)
from xling.evaluate.findings.seeds import TRANSFER_ITEM_KEYS, over_seeds, paired_over_seeds
from xling.evaluate.uncertainty import Interval
from xling.plan.ablation import parse_setting

# ---------------------------------------------------------------------------------------------- ablations


def ablation_means(scores: pd.DataFrame) -> pd.DataFrame:
    """A frame indexed by setting with a column per task: the mean over the target languages of each language's
    mean over seeds."""
    per_lang = scores.groupby(["setting", "task", "lang"])["value"].mean()
    return per_lang.groupby(["setting", "task"]).mean().unstack("task")


def _ablations(tables: Tables, pivot: str, needed: tuple[str, ...]) -> pd.DataFrame:
    """The ablations' zero-shot test rows with their degenerate reasons (`flag`: at chance, one class, the
    fine-tuning did not learn the pivot)."""
    table = _table(tables, "ablation")
    scores = ablation_scores(table.assign(flag=with_table_flags(table, transfer_flags(table, pivot))), pivot)
    missing = [s for s in needed if s not in set(scores["setting"])]
    if missing:
        raise NotMeasured(f"no zero-shot test scores of the ablation(s) {', '.join(missing)}")
    return scores


def ablation_items(tables: Tables, scores: pd.DataFrame) -> pd.DataFrame | None:
    """The per-item scores of the ablation rows `scores` (transfer_items), so their intervals over seeds are the
    calibrated ones over seeds and items, as the other transfer claims': a row averaged over its best grid points
    (`points`) gets each item's mean over those points' fine-tunings, named by the row's variant. A row whose
    items do not reproduce its score (points whose items have unequal denominators, NER F1's) gets none, and
    over_seeds then takes the rows' bounds. None without per-item scores."""
    items = tables.get("transfer_items")
    if items is None or scores.empty or any(c not in scores for c in TRANSFER_ITEM_KEYS):
        return None
    keys = [k for k in TRANSFER_ITEM_KEYS if k != "variant"]
    named = scores["points"].str.split(", ") if "points" in scores else scores["variant"].map(lambda v: [v])
    wanted = scores[[*keys, "variant", "value"]].assign(point=named).explode("point")
    found = wanted.merge(items.rename(columns={"variant": "point"}), on=[*keys, "point"])
    row = [*keys, "variant"]
    per_item = found.groupby([*row, "item"], dropna=False, as_index=False)[["numerator", "denominator"]].mean()
    check = per_item.groupby(row, dropna=False, as_index=False)[["numerator", "denominator"]].sum().merge(
        found.groupby(row, dropna=False, as_index=False).agg(found=("point", "nunique")), on=row).merge(
        wanted.groupby(row, dropna=False, as_index=False).agg(value=("value", "first"), points=("point", "nunique")),
        on=row)
    good = check[((100 * check["numerator"] / check["denominator"] - check["value"]).abs() < 1e-6)
                 & (check["found"] == check["points"])]
    return per_item.merge(good[row], on=row)


def _rows(scores: pd.DataFrame, setting: str, task: str, lang: str | None = None) -> pd.DataFrame:
    rows = scores[(scores["setting"] == setting) & (scores["task"] == task)]
    return rows if lang is None else rows[rows["lang"] == lang]


def _measure(scores: pd.DataFrame, setting: str, task: str, criteria: Criteria, items: pd.DataFrame | None,
             keep_flags: bool = True, lang: str | None = None) -> Measure:
    """The setting's score in `task`, the mean over its pairs (one: `lang`'s), over seeds and test items."""
    rows = _rows(scores, setting, task, lang)
    label = f"{setting} {task}" + (f" {lang}" if lang else "")
    if rows.empty:
        return Measure(label, None)
    return over_seeds(label, rows, flags=rows["flag"] if keep_flags else (), items=items, criteria=criteria)


def _paired(scores: pd.DataFrame, first: str, second: str, task: str, criteria: Criteria,
            items: pd.DataFrame | None, lang: str | None = None):
    """The paired interval over seeds and items of first - second in `task` (both tested on the same items of
    the same pairs), None where it cannot be drawn (seeds.paired_over_seeds)."""
    if items is None:
        return None
    return paired_over_seeds({"transfer_items": items}, _rows(scores, first, task, lang),
                             _rows(scores, second, task, lang), criteria)


def _ablation_settings(scores: pd.DataFrame, settings: list[str], tasks) -> dict:
    return dict(table="ablation", metric=", ".join(f"{t} {TASK_METRIC[t]}" for t in tasks),
                models=", ".join(settings), pairs=sorted(scores[scores["setting"].isin(settings)]["pair"].unique()))


#: "the performance of XNLI and parsing drops only around 1 point": the tasks, and the margin read from "around 1
#: point" (its Table 1's own drops are 1.1 on XNLI and 0.9 on parsing, so "around 1" admits half a point more)
ANCHOR_TASKS = ("xnli", "parsing")
ANCHOR_MARGIN = Margin(1.5, "the paper: \"drops only around 1 point\" (read as within 1.5)")


def transfer_without_anchors(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Without any shared token id, zero-shot XNLI and parsing are equivalent to default's (the mean over the
    pairs) within the paper's "around 1 point" (TOST), per task; a task the run lacks or that is degenerate is
    left out and named."""
    scores = _ablations(tables, pivot, ("no-anchors", "default"))
    items = ablation_items(tables, scores)
    parts, labels, measures = [], [], []
    for task in ANCHOR_TASKS:
        ours, default = (_measure(scores, s, task, criteria, items) for s in ("no-anchors", "default"))
        if ours.value is None and default.value is None:
            continue
        measures += [ours, default]
        parts.append(equivalent(ours, default, ANCHOR_MARGIN,
                                _paired(scores, "no-anchors", "default", task, criteria, items)))
        labels.append(task)
    if not parts:
        raise NotMeasured(f"no zero-shot {' or '.join(ANCHOR_TASKS)} of the no-anchors and default ablations")
    return Finding(every_unit(parts, labels, unit="tasks"), measures,
                   _ablation_settings(scores, ["no-anchors", "default"], labels), margin=ANCHOR_MARGIN)


def sharing_carries_transfer(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Every ablation with language-specific parameters transfers worse than default, in each task, and
    separating more layers (with the embeddings shared or separate alike) never transfers better. A separated
    model at chance is what the paper expects (it says "to chance"): its at-chance flag is kept out."""
    scores = _ablations(tables, pivot, ("default",))
    separated = sorted((s for s in set(scores["setting"]) if s.startswith("sep-")),
                       key=lambda s: (s.startswith("sep-emb"), parse_setting(s)["separate_layers"]))
    if not separated:
        raise NotMeasured("no ablation with language-specific parameters")
    means = ablation_means(scores)
    tasks = [t for t in means.columns if means.loc[["default", *separated], t].notna().all()]
    if not tasks:
        raise NotMeasured("no task with scores of default and of every ablation with language-specific parameters")
    items = ablation_items(tables, scores)
    parts, labels, measures = [], [], []
    for task in tasks:
        default = _measure(scores, "default", task, criteria, items)
        seps = [_measure(scores, s, task, criteria, items, keep_flags=False) for s in separated]
        measures += [default, *seps]
        parts += [greater(default, m, _paired(scores, "default", s, task, criteria, items))
                  for s, m in zip(separated, seps, strict=True)]
        labels += [f"{task}: default > {s}" for s in separated]
        for (a, ma), (b, mb) in zip(zip(separated, seps, strict=True), zip(separated[1:], seps[1:], strict=True), strict=False):
            if a.startswith("sep-emb") == b.startswith("sep-emb"):
                parts.append(at_least(ma, mb, criteria, _paired(scores, a, b, task, criteria, items)))
                labels.append(f"{task}: {a} >= {b}")
    return Finding(all_of(parts, labels), measures, _ablation_settings(scores, ["default", *separated], tasks))


#: "English-Chinese has a larger effect than English-French with over 3 points improvement on NER and XNLI"
DISTANT, CLOSE, EXTRA_TASKS = "zh", "fr", ("ner", "xnli")


def extra_anchors_help(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Dictionary code-switching helps especially the distant pair: on English-Chinese extra anchors transfer
    better than default in NER and XNLI, and gain more there than on English-French (the gains' difference by
    `cao.drop`'s conservative interval), per task."""
    scores = _ablations(tables, pivot, ("default", "extra-anchors"))
    items = ablation_items(tables, scores)
    langs = set(scores["lang"])
    distant, close = (_standing_for(lang, langs, criteria) for lang in (DISTANT, CLOSE))
    if distant not in langs:
        raise NotMeasured(f"the paper's distant pair {pivot}-{DISTANT} is not among the ablation pairs "
                          f"({', '.join(sorted(scores['pair'].unique()))}), nor a stand-in for it (findings.stand_ins)")
    parts, labels, measures = [], [], []
    for task in EXTRA_TASKS:
        far = {s: _measure(scores, s, task, criteria, items, lang=distant) for s in ("extra-anchors", "default")}
        if all(m.value is None for m in far.values()):
            continue
        measures += list(far.values())
        parts.append(greater(far["extra-anchors"], far["default"],
                             _paired(scores, "extra-anchors", "default", task, criteria, items, distant)))
        labels.append(f"{task}: extra > default on {pivot}-{_named_pair(distant, DISTANT)}")
        if close in langs:
            near = {s: _measure(scores, s, task, criteria, items, lang=close) for s in ("extra-anchors", "default")}
            measures += list(near.values())
            if None in (m.value for m in [*far.values(), *near.values()]):
                parts.append(greater(*near.values()))  # the missing number makes it not measurable
            else:
                parts.append(greater(gain(f"{task} {distant} gain", far), gain(f"{task} {close} gain", near)))
            labels.append(f"{task}: gain on {pivot}-{_named_pair(distant, DISTANT)} > gain on "
                          f"{pivot}-{_named_pair(close, CLOSE)}")
    if not parts:
        raise NotMeasured(f"no {' or '.join(EXTRA_TASKS)} of extra-anchors and default on {pivot}-{distant}")
    return Finding(every_unit(parts, labels, unit="comparisons"), measures,
                   _ablation_settings(scores, ["extra-anchors", "default"], sorted({l.split(":")[0] for l in labels})))


def _standing_for(lang: str, langs: set, criteria: Criteria) -> str:
    """The paper's language where the run has it, else its stand-in (findings.stand_ins; the synthetic study's
    hard language for Chinese), else the paper's (then missing)."""
    return lang if lang in langs else criteria.stand_ins.get(lang, lang)


def _named_pair(lang: str, paper: str) -> str:
    return lang if lang == paper else f"{lang} (for {paper})"


def gain(label: str, by: dict) -> Measure:
    """extra-anchors minus default (independent fine-tunings), its interval the conservative one of cao.drop."""
    return drop(label, by["extra-anchors"], by["default"])


# ---------------------------------------------------------------------------------------------- monolingual BERTs

def _mono_settings(table: str, rows: pd.DataFrame, metric: str, **extra) -> dict:
    models = ", ".join(sorted(set(rows["lm_src"]) | set(rows["lm_tgt"])))
    return dict(table=table, metric=metric, models=models, pairs=sorted(rows["pair"].unique()), **extra)


def _p_at_1(rows: pd.DataFrame, label: str, candidates: str | None) -> Measure:
    """Mean P@1 over pairs in percent, with the interval of the rows' per-query bootstrap (rows_mean; none in a
    table gathered before the items), flagged at or below a random pick's (100 / candidates; None: no flag)."""
    measure = rows_mean(label, rows, "p_at_1", by="pair")
    if candidates and candidates in rows and len(rows):
        measure = chance_flag(measure, float((100 / rows[candidates]).mean()))
    return measure


def mono_embeddings_against_fasttext(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """The embedding layers of monolingual BERTs align (P@1 through the map, mean over pairs) at least as well as
    fastText on the same single-piece words."""
    rows = _table(tables, "monolingual_words")
    parts = {level: rows[rows["level"] == level] for level in ("embedding", "fasttext")}
    pairs = _pairs({level: p.groupby("pair")["p_at_1"].mean() for level, p in parts.items()})
    measures = {level: _p_at_1(p[p["pair"].isin(pairs)], level, "n_tgt_words") for level, p in parts.items()}
    return Finding(at_least(measures["embedding"], measures["fasttext"], criteria), list(measures.values()),
                   _mono_settings("monolingual_words", rows[rows["pair"].isin(pairs)], "p_at_1", layers=0))


def mono_sentences_align(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Through the map, Tatoeba P@1 (en->xx) of monolingual BERTs beats the unmapped spaces at every layer (both
    means over the pairs). Two BERTs that never shared a parameter are expected at chance unmapped (that is the
    point of the map): the unmapped side's at-chance flag is kept out, the mapped side's kept."""
    rows = _table(tables, "monolingual_sentences")
    rows = rows[rows["direction"] == "en->xx"]
    if not {"none", "procrustes"} <= set(rows["method"]):
        raise NotMeasured("monolingual_sentences needs rows with and without the map")
    parts, labels, measures = [], [], []
    for layer, at in rows.groupby("layer"):
        mapped, none = (_p_at_1(at[at["method"] == m], f"layer {layer} {m}", flag_on)
                        for m, flag_on in (("procrustes", "n_test_sentences"), ("none", None)))
        measures += [mapped, none]
        parts.append(greater(mapped, none))
        labels.append(f"layer {layer}")
    layers = ", ".join(map(str, sorted(set(rows["layer"]))))
    return Finding(all_of(parts, labels), measures, _mono_settings("monolingual_sentences", rows, "p_at_1",
                                                                  layers=layers))


def _judged(rows: pd.DataFrame) -> str:
    """The CKA column the claims are judged on: the debiased one, which the table's intervals surround
    (xling.evaluate.cka's docstring); `cka` in a table that has no other."""
    return "cka_debiased" if "cka_debiased" in rows else "cka"


def _named(rows: pd.DataFrame) -> str:
    return " debiased" if _judged(rows) == "cka_debiased" else ""


def _cka(tables: Tables, first: str, second: str) -> tuple[pd.DataFrame, list[str]]:
    rows = _table(tables, "cka")
    pairs = _pairs({c: rows[rows["comparison"] == c].groupby("pair")[_judged(rows)].mean() for c in (first, second)})
    return rows[rows["pair"].isin(pairs) & rows["comparison"].isin((first, second))], pairs


def _cka_measure(label: str, value: float, row: pd.Series, prefix: str = "") -> Measure:
    """A CKA of the table with its jackknife interval over the sentences (the row's `<prefix>ci_low/high`; none
    in a table drawn before the intervals) and the row's degenerate flag, if the table has one."""
    low, high = (row.get(f"{prefix}ci_{end}", float("nan")) for end in ("low", "high"))
    flag = row.get("flag") if isinstance(row.get("flag"), str) and row.get("flag") else None
    if pd.isna(low) or pd.isna(high):
        return Measure(label, float(value), flag=flag)
    return Measure(label, float(value), float(low), float(high), flag)


def _vs_monolingual(row: pd.Series, value: float, mono_value: float, prefix: str,
                    negate: bool = False) -> Interval | None:
    """The paired interval of value - mono_value (the row's `<prefix>_low/high`: its comparison minus the
    monolingual one jackknifed on the same groups of sentences), of mono_value - value when `negate`; None
    without it."""
    low, high = (row.get(f"{prefix}_{end}", float("nan")) for end in ("low", "high"))
    if pd.isna(low) or pd.isna(high):
        return None
    difference, low, high = float(value - mono_value), float(low), float(high)
    if negate:
        difference, low, high = -difference, -high, -low
    return Interval(difference, low, high, float(row["ci_level"]), int(row["ci_resamples"]), int(row["ci_seed"]),
                    int(row["n_items"]), str(row["ci_method"]))


def cka_above_random(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Monolingual BERTs' CKA is above the random encoder's (the lower bound) at every layer of every pair: each
    layer by the paired interval of the difference, jackknifed on the same groups of sentences."""
    rows, _ = _cka(tables, "monolingual", "random")
    parts, labels, measures = [], [], []
    for (pair, layer), at in rows.groupby(["pair", "layer"]):
        mono_row, rand_row = (at[at["comparison"] == c].iloc[0] for c in ("monolingual", "random"))
        mono, rand = (_cka_measure(f"{pair} layer {layer} {c}{_named(rows)}", r[_judged(rows)], r)
                      for c, r in (("monolingual", mono_row), ("random", rand_row)))
        measures += [mono, rand]
        paired = _vs_monolingual(rand_row, rand.value, mono.value, "vs_monolingual", negate=True)
        parts.append(greater(mono, rand, paired))
        labels.append(f"{pair} layer {layer}")
    return Finding(all_of(parts, labels), measures, _mono_settings("cka", rows, "cka", layers="all"))


GRID = re.compile(r"(?:^|/)(\d+)-w(\d+)$")  # a model id's or directory's {size}-w{window}: mono/en/100-w8


def _trained_on(row: pd.Series, side: str) -> tuple[int, int] | None:
    """(sentences per language, window) a CKA side's model was trained on: the table's `<side>_size` and
    `<side>_window` where it records them, else its model id's {size}-w{window}; None where neither tells."""
    size, window = row.get(f"{side}_size"), row.get(f"{side}_window")
    if size is not None and window is not None and not pd.isna(size) and not pd.isna(window):
        return int(size), int(window)
    lm = str(row.get("lm_multilingual" if side == "multilingual" else "lm_src", ""))
    match = GRID.search(lm.rstrip("/"))
    return (int(match[1]), int(match[2])) if match else None


def cka_multilingual_higher(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """One bilingual model's CKA averaged over the layers (the paper's "average" row of Fig. 7) is above the
    monolingual models' in every pair: each pair by the paired interval of the difference of the two means,
    jackknifed on the same groups of sentences. Only where the bilingual and the monolingual models were trained
    on the same data size and window (the table's multilingual_size/_window and mono_size/_window, else the
    models' ids): otherwise the two sides differ in more than sharing, and the pair is not measurable."""
    rows, pairs = _cka(tables, "multilingual", "monolingual")
    parts, measures, bilingual = [], [], set()
    for pair in pairs:
        at = rows[rows["pair"] == pair]
        means = at.groupby("comparison")[_judged(rows)].mean()  # = the table's layer_mean(_debiased)
        multi_row, mono_row = (at[at["comparison"] == c].iloc[0] for c in ("multilingual", "monolingual"))
        bilingual.add(str(multi_row.get("lm_multilingual", "") or "the table names none"))
        multi, mono = (_cka_measure(f"{pair} {c}{_named(rows)} (layer mean)", means[c], r, "layer_mean_")
                       for c, r in (("multilingual", multi_row), ("monolingual", mono_row)))
        measures += [multi, mono]
        sides = {side: _trained_on(multi_row, side) for side in ("multilingual", "mono")}
        if None in sides.values() or sides["multilingual"] != sides["mono"]:
            said = {side: "not recorded" if t is None else f"{t[0]:,} sentences at window {t[1]}"
                    for side, t in sides.items()}
            parts.append(Verdict(NOT_MEASURABLE, f"the bilingual model ({said['multilingual']}) and the "
                                                 f"monolingual ones ({said['mono']}) are not shown to share data "
                                                 "size and window: they differ in more than sharing"))
            continue
        paired = _vs_monolingual(multi_row, multi.value, mono.value, "layer_mean_vs_monolingual")
        parts.append(greater(multi, mono, paired))
    settings = _mono_settings("cka", rows, "cka", layers="all")
    settings["models"] = f"bilingual {', '.join(sorted(bilingual))}; monolingual {settings['models']}"
    return Finding(every_unit(parts, pairs, unit="pairs"), measures, settings,
                   judged_on=f"bilingual {', '.join(sorted(bilingual))} against the monolingual BERTs")


# ---------------------------------------------------------------------------------------------- the claims

# the paper as ../shared/papers/published_results.yaml keys it (claim ids start with the key)
CONNEAU = "Conneau et al. 2020, Emerging Cross-lingual Structure in Pretrained Language Models"

CLAIMS = [
    Claim("conneau2020.anchors", CONNEAU, "§4.2, Table 1",
          "Without anchor points (no shared vocabulary) zero-shot XNLI and parsing are equivalent to the default "
          "model's within about one point (per task, mean over the pairs).", transfer_without_anchors,
          "XNLI and parsing drops only around 1 point while NER even improve 1 points averaging over three "
          "languages."),
    Claim("conneau2020.extra-anchors", CONNEAU, "§4.2, Table 1",
          "More anchor points (dictionary code-switching) help especially the distant pair: on English-Chinese "
          "they improve NER and XNLI, more than on English-French.", extra_anchors_help,
          "English-Chinese has a larger effect than English-French with over 3 points improvement on NER and "
          "XNLI"),
    Claim("conneau2020.sharing", CONNEAU, "§4.3, Table 1",
          "Parameter sharing carries the transfer: separating the embeddings and bottom layers per language "
          "lowers it, and separating more layers lowers it further (to chance with the embeddings and layers 1-6 "
          "separate).", sharing_carries_transfer, "Performance degrades as fewer layers are shared for all pairs"),
    Claim("conneau2020.mono.words", CONNEAU, "§5.1.1, Fig. 4a",
          "The embedding layers of separately trained monolingual BERTs align with an orthogonal map at least as "
          "well as fastText on the same words (word translation P@1).", mono_embeddings_against_fasttext,
          "can easily be aligned with an orthogonal mapping and obtain slightly better performance than the same "
          "subset of fastText."),
    Claim("conneau2020.mono.sentences", CONNEAU, "§5.1.3, Fig. 6",
          "Sentence representations of monolingual BERTs align with an orthogonal map: Tatoeba retrieval through "
          "it beats the unmapped spaces at every layer.", mono_sentences_align,
          "The performance is surprisingly good given we only use 10k parallel sentences to learn the alignment "
          "without fine-tuning at all."),
    Claim("conneau2020.cka.random", CONNEAU, "§5.2, Fig. 7",
          "Monolingual BERTs' representations of parallel sentences are more similar (CKA) than a random "
          "encoder's, at every layer.", cka_above_random,
          "Figure 7 shows bilingual models have slightly higher similarity compared to monolingual models with random "
          "encoders serving as a lower bound."),
    Claim("conneau2020.cka.shared", CONNEAU, "§5.2, Fig. 7",
          "A bilingual model gives higher CKA than two monolingual models trained on the same data size and "
          "window, in every pair.", cka_multilingual_higher,
          "Figure 7 shows bilingual models have slightly higher similarity compared to monolingual models with random "
          "encoders serving as a lower bound."),
]
