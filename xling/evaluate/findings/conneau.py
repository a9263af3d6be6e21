"""The claims of Conneau et al. 2020, Emerging Cross-lingual Structure in Pretrained Language Models: the
pretraining ablations (anchors, parameter sharing) and the monolingual BERTs (alignment through a map, CKA).
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings.core import Claim, Criteria, Finding, NotMeasured, Tables, _common, _num, _table, _verdict
from xling.data.transfer_tasks import TASK_METRIC
from xling.evaluate.ablation import ablation_scores
from xling.plan.ablation import parse_setting

# ---------------------------------------------------------------------------------------------- ablations

XNLI_CHANCE = 100 / 3  # three balanced labels, accuracy in percent


def ablation_means(scores: pd.DataFrame) -> pd.DataFrame:
    """A frame indexed by setting with a column per task: the mean over the target languages of each language's
    mean over seeds."""
    per_lang = scores.groupby(["setting", "task", "lang"])["value"].mean()
    return per_lang.groupby(["setting", "task"]).mean().unstack("task")


def _ablations(tables: Tables, pivot: str, needed: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    scores = ablation_scores(_table(tables, "ablation"), pivot)
    means = ablation_means(scores) if len(scores) else pd.DataFrame()
    missing = [s for s in needed if s not in means.index]
    if missing:
        raise NotMeasured(f"no zero-shot test scores of the ablation(s) {', '.join(missing)}")
    return scores, means


def _ablation_settings(scores: pd.DataFrame, settings: list[str], tasks) -> dict:
    return dict(table="ablation", metric=", ".join(f"{t} {TASK_METRIC[t]}" for t in tasks),
                models=", ".join(settings), pairs=sorted(scores[scores["setting"].isin(settings)]["pair"].unique()))


def transfer_without_anchors(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Without any shared token id, zero-shot XNLI is above chance (a third) beyond a tie."""
    scores, means = _ablations(tables, pivot, ("no-anchors",))
    if "xnli" not in means or pd.isna(means.loc["no-anchors", "xnli"]):
        raise NotMeasured("no zero-shot XNLI of the no-anchors ablation")
    ours = means.loc["no-anchors", "xnli"]
    evidence = f"no-anchors XNLI accuracy {ours:.1f} {criteria.sign(ours, XNLI_CHANCE)} chance {XNLI_CHANCE:.1f}"
    if "default" in means.index:
        evidence += f" (default {means.loc['default', 'xnli']:.1f})"
    return Finding(_verdict(criteria.greater(ours, XNLI_CHANCE)), evidence,
                   _ablation_settings(scores, ["no-anchors", "default"], ["xnli"]))


def sharing_carries_transfer(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Every ablation with language-specific parameters transfers worse than default beyond a tie, in each task,
    and separating more layers (with the embeddings shared or separate alike) never transfers better."""
    scores, means = _ablations(tables, pivot, ("default",))
    separated = sorted((s for s in means.index if s.startswith("sep-")),
                       key=lambda s: (s.startswith("sep-emb"), parse_setting(s)["separate_layers"]))
    if not separated:
        raise NotMeasured("no ablation with language-specific parameters")
    tasks = [t for t in means.columns if means.loc[["default", *separated], t].notna().all()]
    if not tasks:
        raise NotMeasured("no task with scores of default and of every ablation with language-specific parameters")
    lower = all(criteria.greater(means.loc["default", t], means.loc[s, t]) for s in separated for t in tasks)
    more = [(a, b) for a, b in zip(separated, separated[1:]) if a.startswith("sep-emb") == b.startswith("sep-emb")]
    monotone = all(criteria.at_least(means.loc[a, t], means.loc[b, t]) for a, b in more for t in tasks)
    evidence = "; ".join(f"{t}: default {means.loc['default', t]:.1f}, " + ", ".join(
        f"{s} {means.loc[s, t]:.1f}" for s in separated) for t in tasks)
    return Finding(_verdict(lower and monotone), f"mean over the target languages, {evidence}",
                   _ablation_settings(scores, ["default", *separated], tasks))


def extra_anchors_help(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Dictionary code-switching transfers at least as well as default, on the mean over the tasks."""
    scores, means = _ablations(tables, pivot, ("default", "extra-anchors"))
    tasks = [t for t in means.columns if means.loc[["default", "extra-anchors"], t].notna().all()]
    if not tasks:
        raise NotMeasured("no task with scores of both default and extra-anchors")
    extra, default = means.loc["extra-anchors", tasks].mean(), means.loc["default", tasks].mean()
    evidence = (f"mean over {', '.join(tasks)}: extra-anchors {extra:.1f} {criteria.sign(extra, default)} default "
                f"{default:.1f} (" + ", ".join(f"{t} {means.loc['extra-anchors', t] - means.loc['default', t]:+.1f}"
                                                for t in tasks) + ")")
    return Finding(_verdict(criteria.at_least(extra, default)), evidence,
                   _ablation_settings(scores, ["extra-anchors", "default"], tasks))


# ---------------------------------------------------------------------------------------------- monolingual BERTs

def _mono_settings(table: str, rows: pd.DataFrame, metric: str, **extra) -> dict:
    models = ", ".join(sorted(set(rows["lm_src"]) | set(rows["lm_tgt"])))
    return dict(table=table, metric=metric, models=models, pairs=sorted(rows["pair"].unique()), **extra)


def mono_embeddings_against_fasttext(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """The embedding layers of monolingual BERTs align (P@1 through the map, mean over pairs) at least as well as
    fastText on the same single-piece words."""
    rows = _table(tables, "monolingual_words")
    means, pairs = _common({level: rows[rows["level"] == level].groupby("pair")["p_at_1"].mean()
                            for level in ("embedding", "fasttext")})
    evidence = (f"mean P@1 over {len(pairs)} pairs: BERT embeddings {_num(means['embedding'])} "
                f"{criteria.sign(means['embedding'], means['fasttext'])} fastText {_num(means['fasttext'])}")
    return Finding(_verdict(criteria.at_least(means["embedding"], means["fasttext"])), evidence,
                   _mono_settings("monolingual_words", rows[rows["pair"].isin(pairs)], "p_at_1", layers=0))


def mono_sentences_align(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Through the map, Tatoeba P@1 (en->xx) of monolingual BERTs beats the unmapped spaces at every layer (both
    means over the pairs)."""
    rows = _table(tables, "monolingual_sentences")
    rows = rows[rows["direction"] == "en->xx"]
    by_layer = rows.pivot_table(index="layer", columns="method", values="p_at_1")
    if not {"none", "procrustes"} <= set(by_layer.columns):
        raise NotMeasured("monolingual_sentences needs rows with and without the map")
    holds = all(criteria.greater(r["procrustes"], r["none"]) for _, r in by_layer.iterrows())
    evidence = "mean P@1 over the pairs, map vs none: " + "; ".join(
        f"layer {layer}: {_num(r['procrustes'])} {criteria.sign(r['procrustes'], r['none'])} {_num(r['none'])}"
        for layer, r in by_layer.iterrows())
    return Finding(_verdict(holds), evidence, _mono_settings("monolingual_sentences", rows, "p_at_1",
                                                             layers=", ".join(map(str, by_layer.index))))


def _cka_by_comparison(tables: Tables, first: str, second: str) -> tuple[dict[str, float], list[str], pd.DataFrame]:
    """CKA averaged over layers per pair, for two comparisons, over the pairs that have both."""
    rows = _table(tables, "cka")
    means, pairs = _common({c: rows[rows["comparison"] == c].groupby("pair")["cka"].mean() for c in (first, second)})
    return means, pairs, rows[rows["pair"].isin(pairs) & rows["comparison"].isin((first, second))]


def cka_above_random(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Monolingual BERTs' CKA is above the random encoder's (the lower bound) at every layer of every pair."""
    _, pairs, rows = _cka_by_comparison(tables, "monolingual", "random")
    grid = rows.pivot_table(index=["pair", "layer"], columns="comparison", values="cka")
    holds = all(criteria.greater(r["monolingual"], r["random"]) for _, r in grid.iterrows())
    mean = grid.groupby("pair").mean()
    evidence = "CKA averaged over layers, monolingual vs random: " + "; ".join(
        f"{pair} {_num(r['monolingual'])} {criteria.sign(r['monolingual'], r['random'])} {_num(r['random'])}"
        for pair, r in mean.iterrows())
    return Finding(_verdict(holds), evidence, _mono_settings("cka", rows, "cka", layers="all"))


def cka_multilingual_higher(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """One (multilingual) model's CKA averaged over layers and pairs is above the monolingual models'."""
    means, pairs, rows = _cka_by_comparison(tables, "multilingual", "monolingual")
    evidence = (f"CKA averaged over layers and {len(pairs)} pairs: multilingual {_num(means['multilingual'])} "
                f"{criteria.sign(means['multilingual'], means['monolingual'])} monolingual "
                f"{_num(means['monolingual'])}")
    return Finding(_verdict(criteria.greater(means["multilingual"], means["monolingual"])), evidence,
                   _mono_settings("cka", rows, "cka", layers="all"))


# ---------------------------------------------------------------------------------------------- the claims

# the paper as ../shared/papers/published_results.yaml keys it (claim ids start with the key)
CONNEAU = "Conneau et al. 2020, Emerging Cross-lingual Structure in Pretrained Language Models"

CLAIMS = [
    Claim("conneau2020.anchors", CONNEAU, "§4.2, Table 1",
          "Cross-lingual transfer works without a shared vocabulary (no anchor points): zero-shot XNLI above "
          "chance.", transfer_without_anchors),
    Claim("conneau2020.extra-anchors", CONNEAU, "§4.2, Table 1",
          "More anchor points help: dictionary code-switching transfers at least as well as the default model.",
          extra_anchors_help),
    Claim("conneau2020.sharing", CONNEAU, "§4.3, Table 1",
          "Parameter sharing carries the transfer: separating the embeddings and bottom layers per language "
          "lowers it, and separating more layers lowers it further (to chance with the embeddings and layers 1-6 "
          "separate).", sharing_carries_transfer),
    Claim("conneau2020.mono.words", CONNEAU, "§5.1.1, Fig. 4a",
          "The embedding layers of separately trained monolingual BERTs align with an orthogonal map at least as "
          "well as fastText on the same words (word translation P@1).", mono_embeddings_against_fasttext),
    Claim("conneau2020.mono.sentences", CONNEAU, "§5.1.3, Fig. 6",
          "Sentence representations of monolingual BERTs align with an orthogonal map: Tatoeba retrieval through "
          "it beats the unmapped spaces at every layer.", mono_sentences_align),
    Claim("conneau2020.cka.random", CONNEAU, "§5.2, Fig. 7",
          "Monolingual BERTs' representations of parallel sentences are more similar (CKA) than a random "
          "encoder's, at every layer.", cka_above_random),
    Claim("conneau2020.cka.shared", CONNEAU, "§5.2, Fig. 7",
          "One model shared by two languages gives slightly higher CKA than two monolingual models.",
          cka_multilingual_higher),
]
