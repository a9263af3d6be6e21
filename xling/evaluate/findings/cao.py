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
- A claim whose table, model, size, window or setting the run lacks is "not measured", never an error; so are
  the claims of studies xling does not run yet (`PENDING`): their issue adds a judge to `CLAIMS`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from xling.evaluate.alignment import cao_retrieval, cao_xnli
from xling.io import atomic_write
from xling.models.ablation import METRIC as ABLATION_METRIC
from xling.models.ablation import ablation_scores, parse_setting
from xling.tables import write_parquet

logger = logging.getLogger(__name__)

HOLDS, FAILS, NOT_MEASURED = "holds", "does not hold", "not measured"
STATIC = ("glove", "word2vec")
LABEL = {"glove": "GloVe", "word2vec": "Word2Vec", "bert": "BERT"}
TASK_METRIC = {"xnli": "accuracy", "pos": "upos", "parsing": "las"}  # the score each paper reports per task
#: the columns each table must have: the tables the findings read, keyed as rules/common.smk passes them
TABLES = {
    "word_retrieval": ("model", "size", "window", "layer", "pair", "mrr"),
    "word_retrieval_pos": ("model", "size", "window", "layer", "pair", "pos", "mrr"),
    "token_translation": ("model", "size", "window", "layer", "pair", "direction", "alpha", "convert_rate"),
    "tatoeba": ("model", "size", "window", "layer", "report_layer", "lang", "direction", "variant", "accuracy"),
    "bucc": ("model", "size", "window", "layer", "report_layer", "lang", "variant", "f1"),
    "transfer": ("model", "size", "window", "task", "lang", "split", "freeze", "train_transform", "transform",
                 "selected", "metric", "value"),
    "contextual_retrieval": ("lm", "lang", "contextual", "method", "accuracy"),
    "contextual_retrieval_pos": ("lm", "lang", "method", "parallel_sentences", "group", "pos", "accuracy"),
    "contextual_retrieval_frequency": ("lm", "lang", "method", "parallel_sentences", "rank_bin", "rank_difference",
                                       "accuracy"),
    "ablation": ("lm", "task", "lang", "split", "transform", "selected", "metric", "seed", "value"),
    "monolingual_words": ("pair", "level", "layer", "lm_src", "lm_tgt", "p_at_1"),
    "monolingual_sentences": ("pair", "layer", "method", "direction", "lm_src", "lm_tgt", "p_at_1"),
    "cka": ("pair", "comparison", "layer", "lm_src", "lm_tgt", "cka"),
}
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
    judge: Judge | None = None  # None: no experiment of xling measures it yet
    pending: str = ""  # what will measure a claim without a judge


def _verdict(holds: bool) -> str:
    return HOLDS if holds else FAILS


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 0.01 and value != 0 else f"{value:.3f}"


def _table(tables: Tables, key: str) -> pd.DataFrame:
    if key not in tables:
        raise NotMeasured(f"no {key} table in this run")
    return tables[key]


# ---------------------------------------------------------------------------------------------- word retrieval

def _our_models(retrieval: pd.DataFrame) -> pd.DataFrame:
    """Rows of the models this run trained (not Hugging Face checkpoints, whose size is 0)."""
    return retrieval[retrieval["model"].isin((*STATIC, "bert")) & (retrieval["size"] > 0)]


def _sizes(retrieval: pd.DataFrame) -> list[int]:
    sizes = sorted(_our_models(retrieval).query("model == 'bert'")["size"].unique())
    if not sizes:
        raise NotMeasured("no BERT trained in this run")
    if len(sizes) < 2:
        raise NotMeasured(f"one corpus size ({sizes[0]}): small and large data are not told apart")
    return [int(s) for s in sizes]


def _bert_windows(retrieval: pd.DataFrame, size: int) -> list[int]:
    rows = _our_models(retrieval)
    return sorted(int(w) for w in rows[(rows["model"] == "bert") & (rows["size"] == size)]["window"].unique())


def _mrr_by_pair(retrieval: pd.DataFrame, model: str, size: int, window: int,
                 criteria: Criteria) -> tuple[pd.Series, int]:
    """(MRR per pair, layer) of one model: BERT at its chosen layer, a static model at its only layer."""
    rows = retrieval[(retrieval["model"] == model) & (retrieval["size"] == size) & (retrieval["window"] == window)]
    if rows.empty:
        raise NotMeasured(f"no {LABEL.get(model, model)} at size {size}, window {window} in word_retrieval")
    by_layer = rows.groupby(["layer", "pair"])["mrr"].mean().unstack("pair")
    layer = bert_layer(by_layer, criteria.layer) if model == "bert" else int(by_layer.index[0])
    if layer not in by_layer.index:
        raise NotMeasured(f"{LABEL.get(model, model)} at size {size}, window {window} has no layer {layer}")
    return by_layer.loc[layer].dropna(), int(layer)


def bert_layer(by_layer: pd.DataFrame, rule: str | int) -> int:
    """The layer a claim reads: `rule` itself, or (best) the layer with the highest mean over the pairs
    (columns of `by_layer`, indexed by layer); a tie goes to the lower layer."""
    if rule != "best":
        return int(rule)
    means = by_layer.mean(axis=1)
    return int(means[means == means.max()].index.min())


def _common(series: Mapping[str, pd.Series]) -> tuple[dict[str, float], list[str]]:
    """Means over the pairs every series has, and those pairs."""
    pairs = sorted(set.intersection(*(set(s.index) for s in series.values())))
    if not pairs:
        raise NotMeasured("the compared models share no language pair")
    return {name: float(s[pairs].mean()) for name, s in series.items()}, pairs


def _chance(retrieval: pd.DataFrame, size: int, window: int, layer: int, pairs: list[str]) -> str:
    """"; chance x" for BERT's rows when the table has the chance MRR: a BERT at chance aligns nothing."""
    if "chance_mrr" not in retrieval:
        return ""
    rows = retrieval[(retrieval["model"] == "bert") & (retrieval["size"] == size) & (retrieval["window"] == window)
                     & (retrieval["layer"] == layer) & retrieval["pair"].isin(pairs)]
    return f"; chance {_num(rows['chance_mrr'].mean())}"


def _bert_against_static(tables: Tables, criteria: Criteria, large: bool) -> Finding:
    """Small data: GloVe and Word2Vec align better than BERT; large data: BERT better than both."""
    retrieval = _table(tables, "word_retrieval")
    size = _sizes(retrieval)[-1 if large else 0]
    window = _bert_windows(retrieval, size)[-1]
    bert, layer = _mrr_by_pair(retrieval, "bert", size, window, criteria)
    series = {"bert": bert, **{m: _mrr_by_pair(retrieval, m, size, window, criteria)[0] for m in STATIC}}
    means, pairs = _common(series)
    if large:
        holds = all(criteria.greater(means["bert"], means[m]) for m in STATIC)
    else:
        holds = all(criteria.greater(means[m], means["bert"]) for m in STATIC)
    chance = _chance(retrieval, size, window, layer, pairs)
    evidence = f"mean MRR over {len(pairs)} pairs: BERT {_num(means['bert'])} (layer {layer}{chance}) " + ", ".join(
        f"{criteria.sign(means['bert'], means[m])} {LABEL[m]} {_num(means[m])}" for m in STATIC)
    return Finding(_verdict(holds), evidence, dict(table="word_retrieval", metric="mrr",
                                                   models="bert, glove, word2vec", corpus_size=size, windows=window,
                                                   layers=f"bert {layer}", pairs=pairs))


def small_data_retrieval(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    return _bert_against_static(tables, criteria, large=False)


def large_data_retrieval(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    return _bert_against_static(tables, criteria, large=True)


def short_window_hurts_bert(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """At large data, BERT trained on short segments aligns worse than on long ones (each at its layer)."""
    retrieval = _table(tables, "word_retrieval")
    size = _sizes(retrieval)[-1]
    windows = _bert_windows(retrieval, size)
    if len(windows) < 2:
        raise NotMeasured(f"one BERT window ({windows[0]}) at size {size}")
    short, long = windows[0], windows[-1]
    (short_mrr, short_layer), (long_mrr, long_layer) = (
        _mrr_by_pair(retrieval, "bert", size, w, criteria) for w in (short, long))
    means, pairs = _common({"short": short_mrr, "long": long_mrr})
    evidence = (f"mean MRR over {len(pairs)} pairs: window {long} {_num(means['long'])} (layer {long_layer}) "
                f"{criteria.sign(means['long'], means['short'])} window {short} {_num(means['short'])} "
                f"(layer {short_layer})")
    return Finding(_verdict(criteria.greater(means["long"], means["short"])), evidence,
                   dict(table="word_retrieval", metric="mrr", models="bert", corpus_size=size,
                        windows=f"{long}, {short}", layers=f"w{long} {long_layer}, w{short} {short_layer}",
                        pairs=pairs))


def word2vec_window_not_always_better(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """At small data, a larger Word2Vec window does not raise MRR on most pairs: on a pair, some step up
    the run's windows (the grid's and the window sweep's) does not improve beyond a tie."""
    retrieval = _our_models(_table(tables, "word_retrieval"))
    rows = retrieval[retrieval["model"] == "word2vec"]
    if rows.empty:
        raise NotMeasured("no Word2Vec in word_retrieval")
    size = int(rows["size"].min())
    by_window = rows[rows["size"] == size].groupby(["window", "pair"])["mrr"].mean().unstack("pair").dropna(axis=1)
    if len(by_window) < 2:
        raise NotMeasured(f"one Word2Vec window ({by_window.index[0]}) at size {size}")
    if by_window.empty or by_window.shape[1] == 0:
        raise NotMeasured("the Word2Vec windows share no language pair")
    windows = [int(w) for w in by_window.index]
    not_better = [pair for pair in by_window.columns
                  if any(not criteria.greater(by_window[pair].iloc[i + 1], by_window[pair].iloc[i])
                         for i in range(len(windows) - 1))]
    means = by_window.mean(axis=1)
    evidence = ("mean MRR " + ", ".join(f"{_num(means[w])} (w{w})" for w in windows) +
                f"; a larger window did not help on {len(not_better)} of {by_window.shape[1]} pairs"
                + (f" ({', '.join(not_better)})" if not_better else ""))
    return Finding(_verdict(2 * len(not_better) > by_window.shape[1]), evidence,
                   dict(table="word_retrieval", metric="mrr", models="word2vec", corpus_size=size,
                        windows=", ".join(map(str, windows)), pairs=list(by_window.columns)))


def open_class_better(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """BERT (large data, long window, its word-retrieval layer) retrieves open-class words better than
    closed-class ones."""
    retrieval, pos = _table(tables, "word_retrieval"), _table(tables, "word_retrieval_pos")
    size = _sizes(retrieval)[-1]
    window = _bert_windows(retrieval, size)[-1]
    _, layer = _mrr_by_pair(retrieval, "bert", size, window, criteria)
    rows = pos[(pos["model"] == "bert") & (pos["size"] == size) & (pos["window"] == window) & (pos["layer"] == layer)]
    series = {c: rows[rows["pos"] == c].groupby("pair")["mrr"].mean() for c in ("open", "closed")}
    if any(s.empty for s in series.values()):
        raise NotMeasured(f"no open and closed class rows for BERT size {size}, window {window}, layer {layer}")
    means, pairs = _common(series)
    evidence = (f"mean MRR over {len(pairs)} pairs: open class {_num(means['open'])} "
                f"{criteria.sign(means['open'], means['closed'])} closed class {_num(means['closed'])}")
    return Finding(_verdict(criteria.greater(means["open"], means["closed"])), evidence,
                   dict(table="word_retrieval_pos", metric="mrr", models="bert", corpus_size=size, windows=window,
                        layers=layer, pairs=pairs))


# ---------------------------------------------------------------------------------------------- transfer

def _zero_shot(transfer: pd.DataFrame, pivot: str, task: str) -> pd.DataFrame:
    """Test scores of `task` in the languages other than the pivot, with the epoch the run selected."""
    rows = transfer[(transfer["task"] == task) & (transfer["split"] == "test") & (transfer["lang"] != pivot)
                    & (transfer["metric"] == TASK_METRIC[task]) & (transfer["train_transform"] == "none")
                    & transfer["selected"].astype(bool)]
    if rows.empty:
        raise NotMeasured(f"no zero-shot {task} test scores in transfer")
    return rows


def _xnli_against_static(tables: Tables, criteria: Criteria, pivot: str, large: bool) -> Finding:
    """Small data: BERT's zero-shot XNLI is not better than GloVe's and Word2Vec's; large data: better."""
    xnli = _zero_shot(_table(tables, "transfer"), pivot, "xnli")
    xnli = xnli[(xnli["transform"] == "none") & (xnli["size"] > 0)]
    bert = xnli[xnli["model"] == "bert"]
    sizes = sorted(int(s) for s in bert["size"].unique())
    if len(sizes) < 2:
        raise NotMeasured("XNLI of BERT at fewer than two corpus sizes")
    size = sizes[-1 if large else 0]
    window = int(bert[bert["size"] == size]["window"].max())
    at = xnli[(xnli["size"] == size) & (xnli["window"] == window)]
    # the freeze depth every BERT of the XNLI grid was fine-tuned at (its first); static models: frozen vectors
    common = set.intersection(*(set(g["freeze"]) for _, g in bert.groupby(["size", "window"])))
    if not common:
        raise NotMeasured("the BERTs of the XNLI grid share no freeze depth")
    freeze = min(common)
    series = {m: at[(at["model"] == m) & (at["freeze"] == (freeze if m == "bert" else -1))].groupby("lang")["value"]
              .mean() for m in ("bert", *STATIC)}
    missing = [LABEL[m] for m, s in series.items() if s.empty]
    if missing:
        raise NotMeasured(f"no XNLI of {', '.join(missing)} at size {size}, window {window}")
    means, langs = _common(series)
    if large:
        holds = all(criteria.greater(means["bert"], means[m]) for m in STATIC)
    else:
        holds = all(criteria.at_least(means[m], means["bert"]) for m in STATIC)
    evidence = f"mean accuracy over {len(langs)} languages: BERT {means['bert']:.1f} " + ", ".join(
        f"{criteria.sign(means['bert'], means[m])} {LABEL[m]} {means[m]:.1f}" for m in STATIC)
    return Finding(_verdict(holds), evidence, dict(table="transfer", metric="xnli accuracy",
                                                   models="bert, glove, word2vec", corpus_size=size, windows=window,
                                                   layers=f"bert frozen up to {freeze}",
                                                   pairs=[f"{pivot}-{lang}" for lang in langs]))


def small_data_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    return _xnli_against_static(tables, criteria, pivot, large=False)


def large_data_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    return _xnli_against_static(tables, criteria, pivot, large=True)


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


# ---------------------------------------------------------------------------------------------- alignment

def _by_lang(rows: pd.DataFrame, value: str) -> pd.Series:
    return rows.groupby("lang")[value].mean()


def _largest_common_n(*frames: pd.DataFrame) -> int:
    common = set.intersection(*(set(f["parallel_sentences"]) for f in frames))
    if not common:
        raise NotMeasured("the compared settings share no amount of parallel data")
    return max(common)


def _xnli_bases(tables: Tables, pivot: str) -> tuple[pd.DataFrame, list[str]]:
    transfer = _table(tables, "transfer")
    if "lm" not in transfer:
        raise NotMeasured("the transfer table has no lm column (no alignment study)")
    rows = cao_xnli(transfer)
    if rows.empty:
        raise NotMeasured("no XNLI of an aligned or rotated BERT in transfer")
    rows = rows[rows["lang"] != pivot]
    depth = int(rows["freeze"].min())  # the smallest freeze depth, as the transfer section compares models
    return rows[rows["freeze"] == depth], sorted(rows["base"].unique())


def aligned_improves_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Each base BERT fine-tuned for alignment (the largest amount of parallel data) scores higher in zero-shot
    XNLI than the base, in every language but the pivot (beyond a tie)."""
    rows, bases = _xnli_bases(tables, pivot)
    results, langs, ns = [], set(), []
    for base in bases:
        at = rows[rows["base"] == base]
        aligned = at[at["setting"] == "word_aligned_finetuned"]
        if aligned.empty:
            continue
        n = int(aligned["parallel_sentences"].max())
        series = {"aligned": _by_lang(aligned[aligned["parallel_sentences"] == n], "value"),
                  "base": _by_lang(at[at["setting"] == "zero_shot_base_bert"], "value")}
        _, shared = _common(series)
        langs |= set(shared)
        ns.append(n)
        results.append((base, n, {lang: (series["aligned"][lang], series["base"][lang]) for lang in shared}))
    if not results:
        raise NotMeasured("no aligned BERT in the XNLI rows of transfer")
    holds = all(criteria.greater(a, b) for *_, by in results for a, b in by.values())
    evidence = "; ".join(f"{base} aligned on {n:,}: " + ", ".join(
        f"{lang} {a:.1f} {criteria.sign(a, b)} {b:.1f}" for lang, (a, b) in by.items()) for base, n, by in results)
    return Finding(_verdict(holds), f"zero-shot XNLI test accuracy, aligned vs base ({evidence})",
                   dict(table="transfer", metric="xnli accuracy", models=", ".join(b for b, *_ in results),
                        corpus_size=", ".join(f"{n:,} parallel sentences" for n in ns),
                        layers=f"frozen up to {int(rows['freeze'].iloc[0])}",
                        pairs=[f"{pivot}-{lang}" for lang in sorted(langs)]))


def aligned_beats_rotations_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Fine-tuning alignment beats both rotations in zero-shot XNLI on average over the languages (with the
    same amount of parallel data)."""
    rows, bases = _xnli_bases(tables, pivot)
    results, langs = [], set()
    for base in bases:
        at = rows[rows["base"] == base]
        parts = {s: at[at["setting"] == s] for s in ("word_aligned_finetuned", "word_aligned_rotation",
                                                      "sentence_aligned_rotation")}
        if any(p.empty for p in parts.values()):
            continue
        n = _largest_common_n(*parts.values())
        means, shared = _common({s: _by_lang(p[p["parallel_sentences"] == n], "value") for s, p in parts.items()})
        langs |= set(shared)
        results.append((base, n, means))
    if not results:
        raise NotMeasured("no base BERT with XNLI after fine-tuning alignment and after both rotations")
    aligned = "word_aligned_finetuned"
    holds = all(criteria.greater(m[aligned], m[s]) for *_, m in results for s in m if s != aligned)
    evidence = "; ".join(f"{base} on {n:,} sentences: fine-tuned {m[aligned]:.1f} "
                         f"{criteria.sign(m[aligned], m['word_aligned_rotation'])} word rotation "
                         f"{m['word_aligned_rotation']:.1f}, {criteria.sign(m[aligned], m['sentence_aligned_rotation'])} "
                         f"sentence rotation {m['sentence_aligned_rotation']:.1f}" for base, n, m in results)
    return Finding(_verdict(holds), f"mean zero-shot XNLI test accuracy over {len(langs)} languages: {evidence}",
                   dict(table="transfer", metric="xnli accuracy", models=", ".join(b for b, *_ in results),
                        corpus_size=", ".join(f"{n:,} parallel sentences" for _, n, _ in results),
                        layers=f"frozen up to {int(rows['freeze'].iloc[0])}",
                        pairs=[f"{pivot}-{lang}" for lang in sorted(langs)]))


def _retrieval_means(tables: Tables, retrieval: str) -> tuple[list[tuple[str, int, dict]], set, pd.DataFrame]:
    """Per base BERT: mean accuracy over languages of fine-tuned BERT, fastText + sentence and the word rotation
    (each at the largest amount of parallel data they share), in `retrieval` (contextual / non_contextual)."""
    rows = cao_retrieval(_table(tables, "contextual_retrieval"))
    rows = rows[rows["retrieval"] == retrieval]
    if "layer" in rows:  # BERT at the layer the retrieval was run at (the last one when there are several)
        top = rows.groupby("lm")["layer"].transform("max")
        rows = rows[rows["layer"] == top]
    fasttext = rows[rows["setting"] == "aligned_fasttext_sentence"]
    if fasttext.empty:
        raise NotMeasured(f"no {retrieval} retrieval of the fastText baseline")
    results, langs = [], set()
    for base in sorted(rows.loc[rows["setting"] == "word_aligned_finetuned", "base"].unique()):
        at = rows[rows["base"] == base]
        parts = {"aligned": at[at["setting"] == "word_aligned_finetuned"], "fasttext": fasttext,
                 "rotation": at[at["setting"] == "word_aligned_rotation"]}
        if parts["rotation"].empty:
            continue
        n = _largest_common_n(*parts.values())
        means, shared = _common({k: _by_lang(p[p["parallel_sentences"] == n], "accuracy") for k, p in parts.items()})
        langs |= set(shared)
        results.append((base, n, means))
    if not results:
        raise NotMeasured(f"no base BERT with {retrieval} retrieval after fine-tuning alignment and rotation")
    return results, langs, rows


def _retrieval_finding(results, langs, rows, criteria: Criteria, holds: bool, retrieval: str, pivot: str
                       ) -> Finding:
    evidence = "; ".join(f"{base} on {n:,} sentences: fine-tuned {_num(m['aligned'])} "
                         f"{criteria.sign(m['aligned'], m['fasttext'])} fastText + sentence {_num(m['fasttext'])} "
                         f"{criteria.sign(m['fasttext'], m['rotation'])} word rotation {_num(m['rotation'])}"
                         for base, n, m in results)
    layers = ", ".join(f"{lm} {int(layer)}" for lm, layer in rows.groupby("lm")["layer"].max().items()) \
        if "layer" in rows else None
    return Finding(_verdict(holds), f"mean {retrieval.replace('_', '-')} retrieval accuracy over {len(langs)} "
                   f"languages: {evidence}",
                   dict(table="contextual_retrieval", metric="accuracy (CSLS)", models=", ".join(
                       [b for b, *_ in results] + sorted(rows.loc[rows["setting"] == "aligned_fasttext_sentence",
                                                                  "lm"].unique())),
                        corpus_size=", ".join(f"{n:,} parallel sentences" for _, n, _ in results), layers=layers,
                        pairs=sorted(f"{lang}-{pivot}" for lang in langs)))


def contextual_retrieval_order(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """In contextual retrieval, fine-tuned BERT > sentence-augmented fastText > rotation-aligned BERT."""
    results, langs, rows = _retrieval_means(tables, "contextual")
    holds = all(criteria.greater(m["aligned"], m["fasttext"]) and criteria.greater(m["fasttext"], m["rotation"])
                for *_, m in results)
    return _retrieval_finding(results, langs, rows, criteria, holds, "contextual", pivot)


def non_contextual_aligned_matches_fasttext(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """In non-contextual retrieval, fine-tuned BERT matches fastText: at least as accurate, or a tie."""
    results, langs, rows = _retrieval_means(tables, "non_contextual")
    holds = all(criteria.at_least(m["aligned"], m["fasttext"]) for *_, m in results)
    return _retrieval_finding(results, langs, rows, criteria, holds, "non_contextual", pivot)


def _analysis(tables: Tables, key: str) -> pd.DataFrame:
    """An analysis table's (by POS, by rank difference) rows of base BERT and of fine-tuned alignment at its
    largest amount of parallel data, with `base` and `setting`."""
    rows = cao_retrieval(_table(tables, key).assign(contextual=True))
    if "layer" in rows:
        rows = rows[rows["layer"] == rows.groupby("lm")["layer"].transform("max")]
    rows = rows[rows["setting"].isin(["base_bert", "word_aligned_finetuned"])]
    rows = rows[rows["parallel_sentences"] == rows.groupby(["base", "setting"])["parallel_sentences"].transform("max")]
    bases = sorted(set(rows.loc[rows["setting"] == "word_aligned_finetuned", "base"])
                   & set(rows.loc[rows["setting"] == "base_bert", "base"]))
    if not bases:
        raise NotMeasured(f"no base BERT with its fine-tuned alignment in {key}")
    return rows[rows["base"].isin(bases)]


def open_class_gap_closed_by_alignment(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Base BERT retrieves closed-class words better than open-class ones (group averages over the language
    pairs), and after alignment open-class words are retrieved at least as well as closed-class ones."""
    rows = _analysis(tables, "contextual_retrieval_pos")
    rows = rows[(rows["pos"] == "average") & rows["group"].isin(["closed_class", "open_class"])]
    means = rows.groupby(["base", "setting", "parallel_sentences", "group"])["accuracy"].mean().unstack("group")
    if not {"closed_class", "open_class"} <= set(means.columns) or means.isna().any().any():
        raise NotMeasured("contextual_retrieval_pos lacks the closed-class or open-class average")
    results = []
    for (base, setting, n), row in means.iterrows():
        closed, open_ = row["closed_class"], row["open_class"]
        ok = criteria.greater(closed, open_) if setting == "base_bert" else criteria.at_least(open_, closed)
        results.append((f"{base} {'aligned on ' + format(int(n), ',') if n else 'base'}: closed {_num(closed)} "
                        f"{criteria.sign(closed, open_)} open {_num(open_)}", ok))
    return Finding(_verdict(all(ok for _, ok in results)),
                   "mean accuracy by POS group over the pairs: " + "; ".join(e for e, _ in results),
                   dict(table="contextual_retrieval_pos", metric="accuracy (CSLS)",
                        models=", ".join(sorted(rows["base"].unique())),
                        pairs=sorted(f"{pivot}-{lang}" for lang in rows["lang"].unique())))


def alignment_removes_frequency_drop(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Base BERT's contextual retrieval accuracy is lower for the largest frequency-rank differences than for
    the smallest (mean over the pairs), and fine-tuned alignment drops less between the two."""
    rows = _analysis(tables, "contextual_retrieval_frequency")
    curves = rows.groupby(["base", "setting", "rank_bin"])["accuracy"].mean()
    results = []
    for base in sorted(rows["base"].unique()):
        drop = {}
        for setting in ("base_bert", "word_aligned_finetuned"):
            curve = curves[base, setting]
            if len(curve) < 2:
                raise NotMeasured(f"{base}: fewer than two frequency-rank bins")
            drop[setting] = (curve.iloc[0], curve.iloc[-1])
        (b0, b1), (a0, a1) = drop["base_bert"], drop["word_aligned_finetuned"]
        ok = criteria.greater(b0, b1) and (a0 - a1) < (b0 - b1)
        results.append((f"{base}: base {_num(b0)} -> {_num(b1)}, aligned {_num(a0)} -> {_num(a1)}", ok))
    labels = rows.drop_duplicates("rank_bin").sort_values("rank_bin")["rank_difference"]
    return Finding(_verdict(all(ok for _, ok in results)), f"mean accuracy in the smallest ({labels.iloc[0]}) and "
                   f"largest ({labels.iloc[-1]}) rank-difference bins: " + "; ".join(e for e, _ in results),
                   dict(table="contextual_retrieval_frequency", metric="accuracy (CSLS)",
                        models=", ".join(sorted(rows["base"].unique())),
                        pairs=sorted(f"{pivot}-{lang}" for lang in rows["lang"].unique())))
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
    return dict(table="ablation", metric=", ".join(f"{t} {ABLATION_METRIC[t]}" for t in tasks),
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

# the papers as ../shared/papers/published_results.yaml keys them (claim ids start with the key)
WHAT = "Liu et al. 2020, What makes multilingual BERT multilingual?"
FULL = "Liu et al. 2020, A Study of Cross-Lingual Ability and Language-specific Information in Multilingual BERT"
SHORT = "Liu et al. 2020, Language Representation in Multilingual BERT and its applications (arXiv:2010.10041)"
CONNEAU = "Conneau et al. 2020, Emerging Cross-lingual Structure in Pretrained Language Models"
CAO = "Cao et al. 2020, Multilingual Alignment of Contextual Word Representations"

CLAIMS = [
    Claim("liu2020_what.small-data.retrieval", WHAT, "§2.3.1, Fig. 1a",
          "With small pretraining data, GloVe and Word2Vec align words across languages better than BERT "
          "(word retrieval MRR).", small_data_retrieval),
    Claim("liu2020_what.small-data.xnli", WHAT, "§2.3.1, Fig. 2a",
          "With small pretraining data, BERT's zero-shot XNLI accuracy is not better than GloVe's and Word2Vec's.",
          small_data_xnli),
    Claim("liu2020_what.large-data.retrieval", WHAT, "§2.3.2, Fig. 1b",
          "With large pretraining data, BERT overtakes GloVe and Word2Vec in word retrieval MRR.",
          large_data_retrieval),
    Claim("liu2020_what.large-data.xnli", WHAT, "§2.3.2, Fig. 2b",
          "With large pretraining data, BERT's zero-shot XNLI accuracy is higher than GloVe's and Word2Vec's.",
          large_data_xnli),
    Claim("liu2020_what.window.bert", WHAT, "§2.4, Fig. 3a",
          "With large pretraining data, a short window (input sliced into short segments) hurts BERT's "
          "word retrieval MRR.", short_window_hurts_bert),
    Claim("liu2020_what.window.word2vec", WHAT, "§2.4, Fig. 4",
          "For Word2Vec on small data, increasing the window is not always beneficial (in most languages).",
          word2vec_window_not_always_better),
    Claim("liu2020_what.pos.open-closed", WHAT, "§2.5, Table 1",
          "BERT (large data) aligns open-class words better than closed-class words.", open_class_better),
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
    Claim("cao2020.xnli", CAO, "§4.1, Table 1",
          "Fine-tuning alignment on parallel word pairs improves zero-shot XNLI in every language.",
          aligned_improves_xnli),
    Claim("cao2020.xnli.rotations", CAO, "§4.1, Table 1",
          "Rotations (word- or sentence-aligned) are sub-optimal overall: fine-tuning alignment transfers better "
          "on average.", aligned_beats_rotations_xnli),
    Claim("cao2020.retrieval.contextual", CAO, "§5.1, Table 3",
          "In contextual word retrieval, fine-tuned BERT outperforms the sentence-augmented fastText, which "
          "outperforms rotation-aligned BERT.", contextual_retrieval_order),
    Claim("cao2020.retrieval.non-contextual", CAO, "§5.1, Table 3",
          "In non-contextual word retrieval (first occurrences only), fine-tuned BERT matches fastText.",
          non_contextual_aligned_matches_fasttext),
    Claim("cao2020.pos", CAO, "§5.2, Table 4",
          "Base BERT aligns open-class words worse than closed-class words; alignment removes the gap.",
          open_class_gap_closed_by_alignment),
    Claim("cao2020.frequency", CAO, "§5.3, Figure 3",
          "Base BERT's contextual retrieval accuracy falls as the frequency ranks of the two words differ more; "
          "alignment remedies it.", alignment_removes_frequency_drop),
]


def judge_claims(tables: Tables, pivot: str, layer: str | int = "best", tolerance: float = 0.02) -> pd.DataFrame:
    """The findings table: one row per claim of `CLAIMS`, judged on `tables` (key -> table, keys of TABLES;
    a missing key makes its claims not measured)."""
    criteria = Criteria(layer=layer, tolerance=tolerance)
    rows = []
    for claim in CLAIMS:
        if claim.judge is None:
            finding = Finding(NOT_MEASURED, f"needs {claim.pending}", {})
        else:
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
