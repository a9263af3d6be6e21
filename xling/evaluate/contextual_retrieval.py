"""Contextual word retrieval (Cao, Kitaev and Klein 2020, section 3.2): alignment measured inside parallel sentences.

Given the test sentence pairs and their word pairs (xling.data.alignment), each linked word of a sentence is a
query; its candidates are ALL words of ALL test sentences of the other language, and it is a hit when its
nearest candidate by CSLS (k = 10 neighbours, Conneau et al. 2018) is exactly the linked word: the right
sentence and the right position. Both directions are queried and the accuracy is their average.

Non-contextual retrieval keeps only the first occurrence of each word type, on both sides: a pair counts when
both of its words are first occurrences, and the candidates are the first occurrences of the other language.

A word's vector is its last subword's at one layer (`sentence_word_vectors`: the paper keeps "the BERT vector for
the last subword of each word"). A word without a vector (no wordpiece, or longer than a model input) is neither a
query nor a candidate, and is counted.

The paper's test score leaves out pairs seen among the training word pairs and exact string matches (numbers,
punctuation), which a shared vocabulary aligns for free: `test_filter` marks them, `accuracy` leaves them out.
Ranks come from xling.evaluate.metrics.nn_ranks (CSLS in query blocks, never a full score matrix; ties broken
at random in expectation, so `hit` is the probability of a hit).
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import pandas as pd

from xling.evaluate.chance import retrieval_accuracy as _random_pick
from xling.evaluate.intervals import Bootstrap
from xling.evaluate.metrics import nn_ranks
from xling.evaluate.ranks import expected_hit_at_k
from xling.evaluate.uncertainty import bootstrap_groups
from xling.represent.fasttext import Normalised, retrieval_vectors, rotation

logger = logging.getLogger(__name__)

DIRECTIONS = ("src-tgt", "tgt-src")
QUERY_COLUMNS = ["direction", "sentence", "position", "word", "gold_position", "gold_word", "hit", "n_candidates"]
ACCURACY_COLUMNS = ["accuracy", "accuracy_src_tgt", "accuracy_tgt_src", "n_queries", "n_seen", "n_exact", "chance"]
#: the analysis tables' interval of each row's accuracy (`accuracy(..., bootstrap=...)`)
CI_COLUMNS = ["ci_low", "ci_high"]


def _first_occurrences(words: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Per sentence, a mask of the words that are the first occurrence of their type in the corpus."""
    seen: set[str] = set()
    masks = []
    for sentence in words:
        mask = np.zeros(len(sentence), dtype=bool)
        for position, word in enumerate(sentence):
            if word not in seen:
                seen.add(word)
                mask[position] = True
        masks.append(mask)
    return masks


def retrieve(
    src: Sequence[np.ndarray],
    tgt: Sequence[np.ndarray],
    links: Sequence[set[tuple[int, int]]],
    *,
    k: int = 10,
    contextual: bool = True,
    block: int = 1024,
    words: tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]] | None = None,
) -> pd.DataFrame:
    """Contextual word retrieval in both directions (module docstring): one row per query, QUERY_COLUMNS.

    src, tgt: per sentence pair, the word vectors [n_words, H] of each side (NaN rows: no vector); links: per
    pair, the (src position, tgt position) word pairs; k: the CSLS neighbourhood; block: queries scored at a
    time; words: the (src, tgt) words of each sentence, for the word columns (None without them) and needed for
    non-contextual retrieval. `hit` is the probability that the nearest candidate is the gold word (ties broken
    at random); `sentence` is the pair's index; `n_candidates` the words the query chose among (its chance of a
    hit is 1 / n_candidates: one gold word)."""
    if not len(src) == len(tgt) == len(links):
        raise ValueError(f"{len(src)} source sentences, {len(tgt)} target sentences and {len(links)} link sets")
    if not contextual and words is None:
        raise ValueError("non-contextual retrieval needs the words (it keeps the first occurrence of each type)")
    if words is not None:
        for side, vectors, sentence_words in (("source", src, words[0]), ("target", tgt, words[1])):
            lengths = [len(v) for v in vectors], [len(w) for w in sentence_words]
            if lengths[0] != lengths[1]:
                raise ValueError(f"{side}: the word lists do not match the vectors' lengths")
    sides = []
    for index, vectors in enumerate((src, tgt)):
        keep = [~np.isnan(np.asarray(v, dtype=np.float32)).any(axis=1) for v in vectors]
        if not contextual:
            keep = [a & b for a, b in zip(keep, _first_occurrences(words[index]), strict=True)]
        flat = [(s, p) for s, mask in enumerate(keep) for p in np.flatnonzero(mask)]
        if not flat:
            raise ValueError(f"no {('source', 'target')[index]} word has a vector")
        matrix = np.concatenate([np.asarray(v, dtype=np.float32)[m] for v, m in zip(vectors, keep, strict=True)])
        sides.append((matrix, {key: row for row, key in enumerate(flat)}))
    tables = []
    for direction, (query_side, gold_side, pairs) in zip(
        DIRECTIONS,
        (
            (0, 1, [(s, i, j) for s, a in enumerate(links) for i, j in sorted(a)]),
            (1, 0, [(s, j, i) for s, a in enumerate(links) for i, j in sorted(a)]),
        ),
        strict=True,
    ):
        (queries, query_rows), (candidates, gold_rows) = sides[query_side], sides[gold_side]
        pairs = [(s, q, g) for s, q, g in pairs if (s, q) in query_rows and (s, g) in gold_rows]
        if not pairs:
            raise ValueError(f"{direction}: no word pair has vectors on both sides")
        ranks = nn_ranks(
            queries[[query_rows[(s, q)] for s, q, _ in pairs]],
            candidates,
            [{gold_rows[(s, g)]} for s, _, g in pairs],
            block=block,
            metric="csls",
            csls_k=k,
            source_space=queries,
            target_space=candidates,
        )
        table = pd.DataFrame(pairs, columns=["sentence", "position", "gold_position"])
        table.insert(0, "direction", direction)
        if words is not None:
            table["word"] = [words[query_side][s][q] for s, q, _ in pairs]
            table["gold_word"] = [words[gold_side][s][g] for s, _, g in pairs]
        else:
            table["word"] = table["gold_word"] = None
        table["hit"] = expected_hit_at_k(ranks, 1)
        table["n_candidates"] = len(candidates)
        tables.append(table[QUERY_COLUMNS])
        logger.info(
            "%s: %d queries, %d candidates, accuracy %.4f", direction, len(pairs), len(candidates), table["hit"].mean()
        )
    return pd.concat(tables, ignore_index=True)


def word_pair_set(
    src_words: Sequence[Sequence[str]], tgt_words: Sequence[Sequence[str]], links: Sequence[set[tuple[int, int]]]
) -> set[tuple[str, str]]:
    """The (source word, target word) pairs of a split's links: what "seen in training" means."""
    return {(s[i], t[j]) for s, t, a in zip(src_words, tgt_words, links, strict=True) for i, j in a}


def pair_words(queries: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """The (src word, tgt word) of each query's word pair, whichever its direction."""
    forward = queries["direction"] == DIRECTIONS[0]
    return queries["word"].where(forward, queries["gold_word"]), queries["gold_word"].where(forward, queries["word"])


def test_filter(queries: pd.DataFrame, seen_pairs: set[tuple[str, str]]) -> pd.DataFrame:
    """`queries` (from `retrieve`, with words) with two columns the test score leaves out: `seen`, the word
    pair (source word, target word) is among the training pairs; `exact`, the two words are the same string."""
    src_word, tgt_word = pair_words(queries)
    return queries.assign(
        seen=[pair in seen_pairs for pair in zip(src_word, tgt_word, strict=True)],
        exact=(src_word == tgt_word).to_numpy(),
    )


def mean_interval(hits: Sequence[np.ndarray], bootstrap: Bootstrap) -> tuple[float, float]:
    """(low, high) of the mean over `hits` (arrays of per-query hits: a direction, a tag's direction) of each
    array's mean, its queries resampled within their array (xling.evaluate.uncertainty.bootstrap_groups); NaN
    when an array is empty (its accuracy is NaN too)."""
    if not hits or any(len(h) == 0 for h in hits):
        return np.nan, np.nan
    found = bootstrap_groups(
        list(hits), n_resamples=bootstrap.resamples, level=bootstrap.level, seed=bootstrap.seed, method=bootstrap.method
    )
    return found.low, found.high


def _chance(scored: pd.DataFrame) -> float:
    """A random pick's accuracy over these queries: per direction the mean over queries of
    xling.evaluate.chance.retrieval_accuracy (1 / n_candidates, one gold), then the mean of the directions (as
    `accuracy`); NaN without the candidates' count or without a query in a direction."""
    if "n_candidates" not in scored or scored["n_candidates"].isna().any():
        return np.nan
    levels = []
    for _, group in scored.groupby("direction"):  # one count per direction (one retrieval), weighted if several
        counts, weights = np.unique(group["n_candidates"].to_numpy(np.int64), return_counts=True)
        levels.append(np.average([_random_pick(int(n)).value for n in counts], weights=weights))
    return float(np.mean(levels)) if len(levels) == len(DIRECTIONS) else np.nan


def _scored(queries: pd.DataFrame, exclude_seen: bool, exclude_exact: bool) -> np.ndarray:
    """Which queries the test score counts: neither a seen pair nor an exact match the settings leave out."""
    return ~((queries["seen"].to_numpy() & exclude_seen) | (queries["exact"].to_numpy() & exclude_exact))


def accuracy(
    queries: pd.DataFrame,
    by: Sequence[str] = (),
    exclude_seen: bool = True,
    exclude_exact: bool = True,
    bootstrap: Bootstrap | None = None,
) -> pd.DataFrame:
    """Accuracy per group of `by` (ACCURACY_COLUMNS): the mean hit of each direction and their average (the
    paper's number), over the queries `test_filter` marks and these settings do not exclude; n_queries counts
    the queries scored (both directions), n_seen and n_exact those left out for each reason (a query can be
    both). A group with no scored query in a direction has accuracy NaN. `chance`: the accuracy of a random
    pick (xling.evaluate.chance.retrieval_accuracy: 1 / candidates per query, averaged as the accuracy is: within
    each direction, then over the two; NaN for queries kept before their candidates were counted). With
    `bootstrap`, each row also gets the interval of its accuracy over its scored queries (CI_COLUMNS; the
    findings judge the analysis tables' claims with it)."""
    seen = queries["seen"].to_numpy() & exclude_seen
    exact = queries["exact"].to_numpy() & exclude_exact
    frame = queries.assign(_scored=_scored(queries, exclude_seen, exclude_exact), _seen=seen, _exact=exact, _all=0)
    keys = list(by) or ["_all"]
    columns = ACCURACY_COLUMNS + (CI_COLUMNS if bootstrap else [])
    rows = []
    for key, group in frame.groupby(keys, sort=True, observed=True):
        scored = group[group["_scored"]]
        hits = {d: scored.loc[scored["direction"] == d, "hit"].to_numpy(np.float64) for d in DIRECTIONS}
        per = {d: h.mean() if len(h) else np.nan for d, h in hits.items()}
        row = {
            **dict(zip(keys, key, strict=True)),
            "accuracy": float(np.mean(list(per.values()))),
            "accuracy_src_tgt": per[DIRECTIONS[0]],
            "accuracy_tgt_src": per[DIRECTIONS[1]],
            "n_queries": len(scored),
            "n_seen": int(group["_seen"].sum()),
            "n_exact": int(group["_exact"].sum()),
            "chance": _chance(scored),
        }
        if bootstrap:
            row.update(zip(CI_COLUMNS, mean_interval(list(hits.values()), bootstrap), strict=True))
        rows.append(row)
    return pd.DataFrame(rows, columns=keys + columns)[list(by) + columns]


def evaluate(
    encoder,
    test: dict,
    seen: dict,
    *,
    layer: int,
    k: int,
    block: int,
    batch_size: int,
    exclude_seen: bool = True,
    exclude_exact: bool = True,
    rotations: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Contextual and non-contextual retrieval of one model for every language pair.

    test {lang: (src words, tgt words, links)} of the test split (xling.data.alignment.read_split; src is the
    pivot); seen {lang: word pairs of the training split} (`word_pair_set`); rotations {(method, parallel
    sentences): {lang: W}}: orthogonal maps applied to the tgt side's vectors (x @ W, as
    xling.represent.rotation.procrustes returns them), each evaluated beside the model as it is (method "none").
    Returns the accuracy table (a row per lang, method, contextual; ACCURACY_COLUMNS) and every query
    (`retrieve`'s columns, `test_filter`'s, and lang, method, parallel_sentences, contextual)."""
    # here, not at the top: the fastText baseline and the tables by frequency and part of speech use this module
    # without a model, and the encoder imports torch (most of such a job's start-up)
    from xling.encode.encoder import sentence_word_vectors

    methods = {("none", 0): None, **(rotations or {})}
    tables, queries = [], []
    for lang, (src_words, tgt_words, links) in test.items():
        src = sentence_word_vectors(encoder, src_words, layer, batch_size, what=f"test sentences ({lang} pair, src)")
        tgt = sentence_word_vectors(encoder, tgt_words, layer, batch_size, what=f"test sentences ({lang})")
        for (method, n), maps in methods.items():
            if maps is not None and lang not in maps:
                raise ValueError(f"{method} ({n} sentences): no rotation for {lang}")
            side = tgt if maps is None else [v @ np.asarray(maps[lang], dtype=np.float32) for v in tgt]
            for contextual in (True, False):
                found = test_filter(
                    retrieve(src, side, links, k=k, contextual=contextual, block=block, words=(src_words, tgt_words)),
                    seen[lang],
                )
                keys = dict(lang=lang, method=method, parallel_sentences=n, contextual=contextual)
                tables.append(accuracy(found, exclude_seen=exclude_seen, exclude_exact=exclude_exact).assign(**keys))
                queries.append(found.assign(**keys))
                logger.info(
                    "%s, %s, %scontextual: accuracy %.4f",
                    lang,
                    method,
                    "" if contextual else "non-",
                    tables[-1]["accuracy"].iloc[0],
                )
    return pd.concat(tables, ignore_index=True), pd.concat(queries, ignore_index=True)


def accuracy_by_pos(
    queries: pd.DataFrame,
    tags: dict[str, str],
    groups: dict[str, Sequence[str]],
    by: Sequence[str],
    exclude_seen: bool,
    exclude_exact: bool,
    bootstrap: Bootstrap | None = None,
) -> pd.DataFrame:
    """Accuracy per universal POS tag of the pair's src (pivot) word and per group of tags (Cao et al. Table 4:
    lexical overlap, closed class, open class), per group of `by`.

    tags: word -> UPOS (xling.evaluate.word_pos.word_tags); a tag in no group (PART, SYM, INTJ, X) and an
    untagged word are left out, as the paper omits them. A group's accuracy is the mean of its tags' (the
    paper's "Average" column); n_queries counts its queries. With `bootstrap`, every row gets its interval
    (CI_COLUMNS): a group's over the queries of its tags, each tag's directions resampled within themselves."""
    group_of = {tag: group for group, members in groups.items() for tag in members}
    src_word, _ = pair_words(queries)
    upos = src_word.map(tags)
    tagged = queries.assign(pos=upos, group=upos.map(group_of)).dropna(subset=["group"])
    by = list(by)
    per_tag = accuracy(
        tagged, by=by + ["group", "pos"], exclude_seen=exclude_seen, exclude_exact=exclude_exact, bootstrap=bootstrap
    )
    per_group = (
        per_tag.groupby(by + ["group"], sort=True)
        .agg(accuracy=("accuracy", "mean"), n_queries=("n_queries", "sum"), chance=("chance", "mean"))
        .reset_index()
        .assign(pos="average")
    )
    columns = by + ["group", "pos", "accuracy", "n_queries", "chance"] + (CI_COLUMNS if bootstrap else [])
    if bootstrap:
        scored = tagged[_scored(tagged, exclude_seen, exclude_exact)]
        measured = per_tag.dropna(subset=["accuracy"])  # pandas' group mean skips a tag without an accuracy
        kept = set(map(tuple, measured[by + ["group", "pos"]].itertuples(index=False)))
        hits: dict[tuple, list] = {}
        for key, group in scored.groupby(by + ["group", "pos", "direction"], sort=True):
            if key[:-1] in kept:
                hits.setdefault(key[:-2], []).append(group["hit"].to_numpy(np.float64))
        bounds = [
            mean_interval(hits.get(tuple(key), []), bootstrap)
            for key in per_group[by + ["group"]].itertuples(index=False)
        ]
        per_group[CI_COLUMNS] = bounds if bounds else np.empty((0, 2))
    return pd.concat([per_tag, per_group], ignore_index=True)[columns]


def frequency_ranks(sentences: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each word's frequency rank in the sentences: 1 = the most frequent; ties in the order of the words."""
    counts: dict[str, int] = {}
    for sentence in sentences:
        for word in sentence:
            counts[word] = counts.get(word, 0) + 1
    ordered = sorted(counts, key=lambda w: (-counts[w], w))
    return {word: rank for rank, word in enumerate(ordered, start=1)}


def accuracy_by_rank_difference(
    queries: pd.DataFrame,
    src_ranks: dict,
    tgt_ranks: dict,
    bins: Sequence[int],
    by: Sequence[str],
    exclude_seen: bool,
    exclude_exact: bool,
    bootstrap: Bootstrap | None = None,
) -> pd.DataFrame:
    """Accuracy against |rank of the src word - rank of the tgt word| (`frequency_ranks`; Cao et al. Figure 3),
    per group of `by`: bin b holds the differences in [bins[b], bins[b + 1]), the last bin [bins[-1], inf).
    With `bootstrap`, each bin's interval (CI_COLUMNS)."""
    edges = np.asarray(bins)
    if edges.size == 0 or edges[0] != 0 or np.any(np.diff(edges) <= 0):
        raise ValueError(f"rank bins must start at 0 and increase, got {list(bins)}")
    src_word, tgt_word = pair_words(queries)
    difference = (src_word.map(src_ranks) - tgt_word.map(tgt_ranks)).abs()
    if difference.isna().any():
        raise ValueError(f"{int(difference.isna().sum())} queries have a word without a frequency rank")
    index = np.searchsorted(edges, difference.to_numpy(), side="right") - 1
    labels = [f"{lo}-{hi - 1}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)] + [f"{edges[-1]}+"]
    binned = queries.assign(rank_bin=index, rank_difference=[labels[i] for i in index])
    table = accuracy(
        binned,
        by=list(by) + ["rank_bin", "rank_difference"],
        exclude_seen=exclude_seen,
        exclude_exact=exclude_exact,
        bootstrap=bootstrap,
    )
    return table[
        list(by)
        + ["rank_bin", "rank_difference", "accuracy", "n_queries", "chance"]
        + (CI_COLUMNS if bootstrap else [])
    ]


def evaluate_fasttext(
    pivot: Normalised,
    other: Normalised,
    test: tuple,
    seen: set,
    trains: dict[int, tuple],
    *,
    k: int,
    block: int,
    exclude_seen: bool = True,
    exclude_exact: bool = True,
):
    """Contextual and non-contextual word retrieval of the baseline for one language pair, with the rotation of
    each train split: (accuracy table, queries), the columns of `evaluate`
    (method "rotation-word", parallel_sentences n).
    Here, not in xling.represent.fasttext, so that training fastText does not import the retrieval metrics.

    test, trains[n]: (pivot sentences, other sentences, links) of the split (xling.data.alignment.read_split);
    seen: the training word pairs the test score leaves out (word_pair_set)."""
    pivot_words, other_words, links = test
    src = retrieval_vectors(pivot, pivot_words)
    tables, queries = [], []
    for n, train in sorted(trains.items()):
        w, pairs = rotation(pivot, other, *train)
        logger.info("rotation on train%d: %d word pairs", n, pairs)
        tgt = retrieval_vectors(other, other_words, w)
        for contextual in (True, False):
            found = test_filter(
                retrieve(src, tgt, links, k=k, contextual=contextual, block=block, words=(pivot_words, other_words)),
                seen,
            )
            keys = dict(method="rotation-word", parallel_sentences=n, contextual=contextual)
            tables.append(accuracy(found, exclude_seen=exclude_seen, exclude_exact=exclude_exact).assign(**keys))
            queries.append(found.assign(**keys))
            logger.info(
                "train%d, %scontextual: accuracy %.4f", n, "" if contextual else "non-", tables[-1]["accuracy"].iloc[0]
            )
    return pd.concat(tables, ignore_index=True), pd.concat(queries, ignore_index=True)
