"""The claims of Liu et al. 2020, What makes multilingual BERT multilingual?: word retrieval of BERT against
the static models by data size, window and word class, and zero-shot XNLI of BERT against them.
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings.core import (LABEL, STATIC, Claim, Criteria, Finding, NotMeasured, Tables, _common,
                                          _num, _table, _verdict, _zero_shot)

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


# ---------------------------------------------------------------------------------------------- the claims

# the paper as ../shared/papers/published_results.yaml keys it (claim ids start with the key)
WHAT = "Liu et al. 2020, What makes multilingual BERT multilingual?"

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
]
