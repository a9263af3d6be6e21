"""The claims of Liu et al. 2020, What makes multilingual BERT multilingual?: word retrieval of BERT against
the static models by data size, window and word class, and zero-shot XNLI of BERT against them.

Word retrieval's intervals come from the per-query reciprocal ranks (eval/retrieval/{lm}.ranks.parquet), the
pairs' queries resampled within each pair; two models scored on the same queries are compared by the paired
interval of their difference. BERT is read at the layer the report's tables show (`Criteria`).
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.findings.core import (
    LABEL,
    STATIC,
    Claim,
    Criteria,
    Finding,
    Measure,
    NotMeasured,
    Tables,
    Verdict,
    _pairs,
    _table,
    _zero_shot,
    all_of,
    any_of,
    at_least,
    every_unit,
    from_items,
    greater,
    most,
    paired,
    point,
    rows_chance_flag,
    rows_mean,
)
from xling.evaluate.findings.seeds import over_seeds, paired_over_seeds

# ---------------------------------------------------------------------------------------------- word retrieval


def _our_models(retrieval: pd.DataFrame) -> pd.DataFrame:
    """Rows of the models this run trained (not Hugging Face checkpoints, whose size is 0)."""
    return retrieval[retrieval["model"].isin((*STATIC, "bert")) & (retrieval["size"] > 0)]


def _selected(table: pd.DataFrame, criteria: Criteria) -> pd.DataFrame:
    """The metric and dictionary split the report shows (cosine / test when the config names none)."""
    for column, wanted, default in (
        ("metric", criteria.metric, "cosine"),
        ("dictionary_split", criteria.dictionary_split, "test"),
    ):
        if column in table and len(table):
            present = set(table[column])
            choice = wanted if wanted is not None else (default if default in present else sorted(present)[0])
            table = table[table[column] == choice]
    return table


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


def bert_layer(by_layer: pd.DataFrame, rule: str | int, shown: int | None = None) -> int:
    """The layer a claim reads: `rule` itself, the report's layer (report: `shown`, else the last), or (best)
    the layer with the highest mean over the pairs (columns of `by_layer`, indexed by layer; a tie: the
    lower layer)."""
    if rule == "report":
        layers = sorted(int(x) for x in by_layer.index)
        return layers[-1] if shown is None else (layers[-1] + 1 + shown if shown < 0 else int(shown))
    if rule != "best":
        return int(rule)
    means = by_layer.mean(axis=1)
    return int(means[means == means.max()].index.min())


def _rows(retrieval: pd.DataFrame, model: str, size: int, window: int, criteria: Criteria) -> tuple[pd.DataFrame, int]:
    """One model's rows at its layer (BERT: the criteria's; a static model: its only one), and that layer."""
    rows = _selected(retrieval, criteria)
    rows = rows[(rows["model"] == model) & (rows["size"] == size) & (rows["window"] == window)]
    if rows.empty:
        raise NotMeasured(f"no {LABEL.get(model, model)} at size {size}, window {window} in word_retrieval")
    by_layer = rows.groupby(["layer", "pair"])["mrr"].mean().unstack("pair")
    layer = bert_layer(by_layer, criteria.layer, criteria.shown_layer) if model == "bert" else int(by_layer.index[0])
    if layer not in by_layer.index:
        raise NotMeasured(f"{LABEL.get(model, model)} at size {size}, window {window} has no layer {layer}")
    return rows[rows["layer"] == layer], int(layer)


def mrr_label(model: str, pairs: list[str], layer: int) -> str:
    """How a claim names one model's MRR over `pairs` ('en-de BERT (layer 8)'; several pairs: their mean), and so
    its flag's reason: the report's MRR table names its cells the same way."""
    where = pairs[0] if len(pairs) == 1 else f"mean of {', '.join(pairs)}"
    return f"{where} {LABEL.get(model, model)}" + (f" (layer {layer})" if model == "bert" else "")


def mrr_measure(
    tables: Tables, key: tuple, rows: pd.DataFrame, pairs: list[str], label: str, criteria: Criteria, value: str = "mrr"
) -> Measure:
    """Mean MRR over `pairs` of the model `key` (model, size, window, layer), whose table rows are `rows`: with
    its interval from the per-query ranks when the run has them, flagged when its interval holds the chance MRR
    (the rows' chance_mrr, the retrieval job's). The report's MRR table flags its cells with this measure too."""
    rows = rows[rows["pair"].isin(pairs)]
    items = _items(tables, key, criteria)
    if items is not None:
        groups = [items.loc[items["pair"] == pair, "reciprocal_rank"].to_numpy() for pair in pairs]
        measure = (
            from_items(label, groups, criteria)
            if all(len(g) for g in groups)
            else point(label, rows.groupby("pair")[value].mean())
        )
    else:
        measure = point(label, rows.groupby("pair")[value].mean())
    return rows_chance_flag(measure, rows, "chance_mrr", by="pair")


def _items(tables: Tables, key: tuple, criteria: Criteria) -> pd.DataFrame | None:
    ranks = tables.get("word_retrieval_ranks")
    if ranks is None:
        return None
    model, size, window, layer = key
    items = _selected(ranks, criteria)
    return items[
        (items["model"] == model) & (items["size"] == size) & (items["window"] == window) & (items["layer"] == layer)
    ]


def _paired(tables: Tables, a: tuple, b: tuple, pairs: list[str], criteria: Criteria):
    """The paired interval of MRR(a) - MRR(b) when both were scored on the same queries of every pair (the
    same words, or dictionary pairs with retrieval.mrr pairs: the same test items), else None (the comparison
    is then unpaired)."""
    first, second = _items(tables, a, criteria), _items(tables, b, criteria)
    if first is None or second is None:
        return None
    a_groups, b_groups = [], []
    for pair in pairs:
        x = first[first["pair"] == pair].set_index(["word", "target"])["reciprocal_rank"].sort_index()
        y = second[second["pair"] == pair].set_index(["word", "target"])["reciprocal_rank"].sort_index()
        if x.empty or not x.index.equals(y.index):
            return None
        a_groups.append(x.to_numpy())
        b_groups.append(y.to_numpy())
    return paired(a_groups, b_groups, criteria)


def _settings(**settings) -> dict:
    return dict(table="word_retrieval", metric="mrr", **settings)


def _bert_against_static(tables: Tables, criteria: Criteria, large: bool) -> Finding:
    """Small data: GloVe and Word2Vec align better than BERT; large data: BERT better than both; on every
    language pair (the paper: "on every language paired with English", "on every XX-En language pairs"), each
    pair by its own queries; a degenerate pair is left out and named."""
    retrieval = _table(tables, "word_retrieval")
    size = _sizes(retrieval)[-1 if large else 0]
    window = _bert_windows(retrieval, size)[-1]
    found = {m: _rows(retrieval, m, size, window, criteria) for m in ("bert", *STATIC)}
    pairs = _pairs({m: rows.set_index("pair")["mrr"] for m, (rows, _) in found.items()})
    layer = found["bert"][1]
    keys = {m: (m, size, window, lay) for m, (_, lay) in found.items()}
    first = {m: ("bert", m) if large else (m, "bert") for m in STATIC}  # the claim's greater side first
    per_pair, measures = [], []
    for pair in pairs:
        at = {
            m: mrr_measure(tables, keys[m], rows, [pair], mrr_label(m, [pair], lay), criteria)
            for m, (rows, lay) in found.items()
        }
        measures += list(at.values())
        per_pair.append(
            all_of(
                [greater(at[a], at[b], _paired(tables, keys[a], keys[b], [pair], criteria)) for a, b in first.values()]
            )
        )
    return Finding(
        every_unit(per_pair, pairs, unit="pairs"),
        measures,
        _settings(
            models="bert, glove, word2vec", corpus_size=size, windows=window, layers=f"bert {layer}", pairs=pairs
        ),
    )


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
    found = {w: _rows(retrieval, "bert", size, w, criteria) for w in (short, long)}
    pairs = _pairs({w: rows.set_index("pair")["mrr"] for w, (rows, _) in found.items()})
    measures = {
        w: mrr_measure(tables, ("bert", size, w, lay), rows, pairs, f"window {w} (layer {lay})", criteria)
        for w, (rows, lay) in found.items()
    }
    difference = _paired(
        tables, ("bert", size, long, found[long][1]), ("bert", size, short, found[short][1]), pairs, criteria
    )
    return Finding(
        greater(measures[long], measures[short], difference),
        [measures[long], measures[short]],
        _settings(
            models="bert",
            corpus_size=size,
            windows=f"{long}, {short}",
            layers=f"w{long} {found[long][1]}, w{short} {found[short][1]}",
            pairs=pairs,
        ),
    )


def word2vec_window_not_always_better(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """At small data, a larger Word2Vec window does not help on most pairs: on a pair, some step up the run's
    windows (the grid's and the window sweep's) clearly lowers MRR (the smaller window's MRR greater, its
    interval apart). Falsifiable: where every step helps or ties, the claim does not hold on that pair."""
    retrieval = _our_models(_table(tables, "word_retrieval"))
    rows = _selected(retrieval[retrieval["model"] == "word2vec"], criteria)
    if rows.empty:
        raise NotMeasured("no Word2Vec in word_retrieval")
    size = int(rows["size"].min())
    rows = rows[rows["size"] == size]
    windows = sorted(int(w) for w in rows["window"].unique())
    if len(windows) < 2:
        raise NotMeasured(f"one Word2Vec window ({windows[0]}) at size {size}")
    pairs = _pairs({w: rows[rows["window"] == w].set_index("pair")["mrr"] for w in windows})
    per_pair, measures = [], []
    for pair in pairs:
        at = [
            mrr_measure(
                tables,
                ("word2vec", size, w, int(rows["layer"].iloc[0])),
                rows[rows["window"] == w],
                [pair],
                f"{pair} w{w}",
                criteria,
            )
            for w in windows
        ]
        measures += at
        per_pair.append(_any_step_down(at))
    return Finding(
        most(per_pair, pairs, unit="pairs"),
        measures,
        _settings(models="word2vec", corpus_size=size, windows=", ".join(map(str, windows)), pairs=pairs),
    )


def _any_step_down(points: list[Measure]) -> Verdict:
    """Some step to a larger window lowers MRR beyond the intervals (a smaller window's MRR greater)."""
    return any_of(
        [greater(a, b) for a, b in zip(points, points[1:], strict=False)],
        [f"{a.label} -> {b.label}" for a, b in zip(points, points[1:], strict=False)],
    )


def open_class_better(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """BERT (large data, long window, its word-retrieval layer) retrieves open-class words better than
    closed-class ones (the classes of retrieval.pos: the paper's), by the classes' MRR averaged over the pairs
    with their intervals from the queries' bootstrap (the table's ci_low/ci_high; different queries: unpaired;
    a table without them leaves the claim without an interval)."""
    retrieval, pos = _table(tables, "word_retrieval"), _selected(_table(tables, "word_retrieval_pos"), criteria)
    size = _sizes(retrieval)[-1]
    window = _bert_windows(retrieval, size)[-1]
    _, layer = _rows(retrieval, "bert", size, window, criteria)
    rows = pos[(pos["model"] == "bert") & (pos["size"] == size) & (pos["window"] == window) & (pos["layer"] == layer)]
    parts = {c: rows[rows["pos"] == c] for c in ("open", "closed")}
    if any(p.empty for p in parts.values()):
        raise NotMeasured(f"no open and closed class rows for BERT size {size}, window {window}, layer {layer}")
    pairs = _pairs({c: p.groupby("pair")["mrr"].mean() for c, p in parts.items()})
    bert = mrr_measure(
        tables,
        ("bert", size, window, layer),
        _rows(retrieval, "bert", size, window, criteria)[0],
        pairs,
        f"BERT (layer {layer}, all words)",
        criteria,
    )
    measures = {
        c: rows_mean(f"{c} class", p[p["pair"].isin(pairs)], "mrr", by="pair", flags=[bert.flag])
        for c, p in parts.items()
    }  # BERT at chance: its word classes are too
    return Finding(
        greater(measures["open"], measures["closed"]),
        [*measures.values(), bert],
        dict(
            table="word_retrieval_pos",
            metric="mrr",
            models="bert",
            corpus_size=size,
            windows=window,
            layers=layer,
            pairs=pairs,
        ),
    )


# ---------------------------------------------------------------------------------------------- transfer


def _xnli_against_static(tables: Tables, criteria: Criteria, pivot: str, large: bool) -> Finding:
    """Small data: BERT's zero-shot XNLI is not better than GloVe's and Word2Vec's (each at least BERT's within
    the margin); large data: better."""
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
    parts = {m: at[(at["model"] == m) & (at["freeze"] == (freeze if m == "bert" else -1))] for m in ("bert", *STATIC)}
    missing = [LABEL[m] for m, p in parts.items() if p.empty]
    if missing:
        raise NotMeasured(f"no XNLI of {', '.join(missing)} at size {size}, window {window}")
    langs = _pairs({m: p.set_index("lang")["value"] for m, p in parts.items()})
    parts = {m: p[p["lang"].isin(langs)] for m, p in parts.items()}
    items = tables.get("transfer_items")
    measures = {m: over_seeds(LABEL[m], p, flags=p["flag"], items=items, criteria=criteria) for m, p in parts.items()}
    verdicts = [
        greater(measures["bert"], measures[m], paired_over_seeds(tables, parts["bert"], parts[m], criteria))
        if large
        else at_least(
            measures[m], measures["bert"], criteria, paired_over_seeds(tables, parts[m], parts["bert"], criteria)
        )
        for m in STATIC
    ]
    return Finding(
        all_of(verdicts),
        list(measures.values()),
        dict(
            table="transfer",
            metric="xnli accuracy",
            models="bert, glove, word2vec",
            corpus_size=size,
            windows=window,
            layers=f"bert frozen up to {freeze}",
            pairs=[f"{pivot}-{lang}" for lang in langs],
        ),
    )


def small_data_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    return _xnli_against_static(tables, criteria, pivot, large=False)


def large_data_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    return _xnli_against_static(tables, criteria, pivot, large=True)


# ---------------------------------------------------------------------------------------------- the claims

# the paper as ../shared/papers/published_results.yaml keys it (claim ids start with the key)
WHAT = "Liu et al. 2020, What makes multilingual BERT multilingual?"

CLAIMS = [
    Claim(
        "liu2020_what.small-data.retrieval",
        WHAT,
        "§2.3.1, Fig. 1a",
        "With small pretraining data, GloVe and Word2Vec align words across languages better than BERT "
        "(word retrieval MRR) on every language pair.",
        small_data_retrieval,
        "GloVe and Word2Vec achieved stronger cross-lingual alignment than BERT in terms of MRR score on word "
        "retrieval task on every language paired with English.",
    ),
    Claim(
        "liu2020_what.small-data.xnli",
        WHAT,
        "§2.3.1, Fig. 2a",
        "With small pretraining data, BERT's zero-shot XNLI accuracy is not better than GloVe's and Word2Vec's.",
        small_data_xnli,
        "the overall performances were not better than GloVe and Word2Vec.",
    ),
    Claim(
        "liu2020_what.large-data.retrieval",
        WHAT,
        "§2.3.2, Fig. 1b",
        "With large pretraining data, BERT overtakes GloVe and Word2Vec in word retrieval MRR on every language pair.",
        large_data_retrieval,
        "BERT achieved an overwhelmingly higher MRR score than other embeddings on every XX-En language pairs",
    ),
    Claim(
        "liu2020_what.large-data.xnli",
        WHAT,
        "§2.3.2, Fig. 2b",
        "With large pretraining data, BERT's zero-shot XNLI accuracy is higher than GloVe's and Word2Vec's.",
        large_data_xnli,
        "BERT reached higher accuracies than GloVe and Word2Vec",
    ),
    Claim(
        "liu2020_what.window.bert",
        WHAT,
        "§2.4, Fig. 3a",
        "With large pretraining data, a short window (input sliced into short segments) hurts BERT's "
        "word retrieval MRR.",
        short_window_hurts_bert,
        "In the case of big pretraining data (1000k), pretraining BERT with shortened inputs drastically hurt "
        "the cross-lingual ability of BERT, indicated by lower MRR score on word retrieval",
    ),
    Claim(
        "liu2020_what.window.word2vec",
        WHAT,
        "§2.4, Fig. 4",
        "For Word2Vec on small data, increasing the window is not always beneficial (in most languages).",
        word2vec_window_not_always_better,
        "In most of the languages, increasing window size was not always beneficial",
    ),
    Claim(
        "liu2020_what.pos.open-closed",
        WHAT,
        "§2.5, Table 1",
        "BERT (large data) aligns open-class words (nouns, verbs, adjectives, adverbs) better than closed-class "
        "words (grammatical function words).",
        open_class_better,
        "we showed that our BERT has higher alignment score for open-class versus closed-class categories.",
    ),
]
