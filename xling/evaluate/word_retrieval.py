"""Word translation retrieval with per-layer word vectors from the representation store.

Definitions (also in docs/studies/liu_what.md):
- vocabulary of a language: words with count >= min_count in the vocabulary counts (Parquet lang, word,
  count) AND a vector in the store for that language (and layer);
- a dictionary pair (distinct pairs only) is covered when both its words are in their vocabularies;
  coverage = covered pairs / all pairs;
- what MRR and P@k average over (`mrr_over`): "pairs" = every covered pair (x_i, y_i), y_i ranked among the
  candidates as the only gold, so another translation of x_i ranked first counts against it (Liu et al.
  2020, arXiv:2004.09205, eq. 1-2); "words" = the distinct source words of covered pairs, each scored by its
  best-ranked covered translation (MUSE's convention);
- candidates (the search space): "dictionary" = the distinct target words of ALL covered pairs of the
  dictionary (Liu et al. 2020), or "vocabulary" = the whole target vocabulary (MUSE, vecmap);
- CSLS neighbourhoods: "all_words" = the whole source and target vocabularies (MUSE), or "queries" = the
  queries and the candidates;
- ties are broken at random, in expectation (see xling.evaluate.ranks); MRR and P@k are averaged over
  the queries (pairs or words); chance_mrr = the mean over queries of the expected reciprocal rank of the best
  of their golds placed at random among the candidates (H_n / n with one gold, so always H_n / n for pairs).
"""

from __future__ import annotations

import logging
import pandas as pd
import pyarrow.parquet as pq

from xling.evaluate import metrics
from xling.evaluate.ranks import chance_mrr, expected_reciprocal_rank, mrr, precision_at_k
from xling.data.formats import read_dictionary
from xling.data.wordpiece import normalize_word
from xling.represent.store import read_vectors

logger = logging.getLogger(__name__)

COLUMNS = [
    "layer",
    "mrr",
    "p_at_1",
    "p_at_5",
    "coverage",
    "n_pairs",
    "n_covered_pairs",
    "n_queries",
    "n_candidates",
    "chance_mrr",
]
RANK_COLUMNS = ["layer", "word", "target", "reciprocal_rank", "above", "tied", "tied_gold"]
CANDIDATES = ("dictionary", "vocabulary")
MRR_OVER = ("pairs", "words")
CSLS_NEIGHBOURHOODS = ("all_words", "queries")


def frequent_words(vocab_counts_path, lang: str, min_count: int) -> set[str]:
    """Words of `lang` counted at least `min_count` times."""
    table = pq.read_table(
        vocab_counts_path, columns=["word", "count"], filters=[("lang", "==", lang), ("count", ">=", min_count)]
    )
    return set(table.column("word").to_pylist())


def _layers(word_means_path, langs: tuple[str, str]) -> list[int]:
    table = pq.read_table(word_means_path, columns=["lang", "layer"], filters=[("lang", "in", list(langs))])
    return sorted(set(table.column("layer").to_pylist()))


def _queries(
    covered: list[tuple[str, str]], words: list[str], c_pos: dict[str, int], mrr_over: str
) -> tuple[list[tuple[str, str]], list[set[int]]]:
    """The ranked units, as (source word, target or "") in order, and each one's gold candidate indices:
    one per covered pair with its target alone ("pairs"), or one per source word with all its targets."""
    if mrr_over == "pairs":
        return list(covered), [{c_pos[t]} for _, t in covered]
    golds: dict[str, set[int]] = {w: set() for w in words}
    for s, t in covered:
        golds[s].add(c_pos[t])
    return [(w, "") for w in words], [golds[w] for w in words]


def _pairs(dictionary_path, lowercase: bool) -> list[tuple[str, str]]:
    pairs = sorted(
        {(normalize_word(s, lowercase), normalize_word(t, lowercase)) for s, t in read_dictionary(dictionary_path)}
    )
    if not pairs:
        raise ValueError(f"{dictionary_path}: empty dictionary")
    return pairs


def _rank_table(layer: int, queries: list[tuple[str, str]], ranks) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": int(layer),
            "word": [w for w, _ in queries],
            "target": [t for _, t in queries],
            "reciprocal_rank": expected_reciprocal_rank(ranks),
            "above": ranks.above,
            "tied": ranks.tied,
            "tied_gold": ranks.tied_gold,
        },
        columns=RANK_COLUMNS,
    )


def word_retrieval(
    word_means_path,
    dictionary_path,
    src_lang: str,
    tgt_lang: str,
    vocab_counts_path,
    min_count: int,
    metric: str = "cosine",
    csls_k: int = 10,
    candidates: str = "dictionary",
    csls_neighbourhood: str = "all_words",
    mrr_over: str = "pairs",
    block: int = 1024,
    lowercase: bool = False,
    return_ranks: bool = False,
    function_dictionary_path=None,
) -> pd.DataFrame | tuple[pd.DataFrame, ...]:
    """Retrieve each covered source word's translation among the `candidates`, at every layer.

    candidates: "dictionary" or "vocabulary"; csls_neighbourhood (metric "csls" only): "all_words" or
    "queries"; mrr_over: "pairs" or "words" (the module docstring). With `lowercase` (the tokenizer's setting) the dictionary's words are compared in the token
    files' form (`normalize_word`), so "Über"-"uber" pairs collapse into one. `block`: queries scored at
    once (memory O(block x candidates)); results do not depend on it.

    Returns one row per layer present in the store: layer, mrr, p_at_1, p_at_5, coverage,
    n_pairs, n_covered_pairs, n_queries, n_candidates, chance_mrr (definitions in the module docstring).
    With `return_ranks`, also each query's rank at every layer (RANK_COLUMNS: the query word, the pair's
    target (empty with mrr_over "words"), its expected reciprocal rank, whose mean is the layer's MRR, and the
    ranks.Ranks counts), so that the MRR of any subset of queries (e.g. by part of speech) can be computed
    afterwards, and its interval resamples the units the MRR is a mean over.
    With `function_dictionary_path` (and `return_ranks`), also the ranks of that dictionary's queries (the
    synthetic grammar's function words), each ranked among the main retrieval's candidates plus the function
    words' covered targets (with "vocabulary" candidates: the same candidates): a third table, for the MRR by
    part of speech only; the main table and ranks do not depend on it.
    Raises ValueError when a layer has no covered pair: a score over nothing would be meaningless.
    """
    if candidates not in CANDIDATES:
        raise ValueError(f"candidates must be one of {CANDIDATES}, got {candidates!r}")
    if csls_neighbourhood not in CSLS_NEIGHBOURHOODS:
        raise ValueError(f"csls_neighbourhood must be one of {CSLS_NEIGHBOURHOODS}, got {csls_neighbourhood!r}")
    if mrr_over not in MRR_OVER:
        raise ValueError(f"mrr_over must be one of {MRR_OVER}, got {mrr_over!r}")
    if function_dictionary_path is not None and not return_ranks:
        raise ValueError("function_dictionary_path: its queries are only ranked with return_ranks")
    pairs = _pairs(dictionary_path, lowercase)
    main_pairs = set(pairs)
    function_pairs = (
        []
        if function_dictionary_path is None
        else [p for p in _pairs(function_dictionary_path, lowercase) if p not in main_pairs]
    )
    frequent = {lang: frequent_words(vocab_counts_path, lang, min_count) for lang in (src_lang, tgt_lang)}
    layers = _layers(word_means_path, (src_lang, tgt_lang))
    if not layers:
        raise ValueError(f"{word_means_path}: no vectors for {src_lang} or {tgt_lang}")
    rows, rank_tables, function_tables = [], [], []
    for layer in layers:
        src_words, src_vecs = read_vectors(word_means_path, src_lang, layer)
        tgt_words, tgt_vecs = read_vectors(word_means_path, tgt_lang, layer)
        src_index = {w: i for i, w in enumerate(src_words) if w in frequent[src_lang]}
        tgt_index = {w: i for i, w in enumerate(tgt_words) if w in frequent[tgt_lang]}
        covered = [(s, t) for s, t in pairs if s in src_index and t in tgt_index]
        if not covered:
            raise ValueError(
                f"{dictionary_path}: no pair covered at layer {layer} ({len(pairs)} pairs; vocabularies "
                f"{src_lang} {len(src_index)} words, {tgt_lang} {len(tgt_index)} words with count >= {min_count} "
                f"in {vocab_counts_path} and a vector in {word_means_path})"
            )
        targets = sorted({t for _, t in covered} if candidates == "dictionary" else tgt_index)

        def rank(
            queried: list[tuple[str, str]],
            candidate_words: list[str],
            src_vecs=src_vecs,
            src_index=src_index,
            tgt_vecs=tgt_vecs,
            tgt_index=tgt_index,
        ):
            """The ranks of the covered pairs `queried` among `candidate_words` (this layer's vectors), and the
            ranked units."""
            source_words = sorted({s for s, _ in queried})
            queries, golds = _queries(queried, source_words, {w: i for i, w in enumerate(candidate_words)}, mrr_over)
            spaces = {}
            if metric == "csls" and csls_neighbourhood == "all_words":
                spaces = dict(
                    source_space=src_vecs[sorted(src_index.values())], target_space=tgt_vecs[sorted(tgt_index.values())]
                )
            elif metric == "csls":  # "queries": each distinct source word once, however many pairs it has
                spaces = dict(source_space=src_vecs[[src_index[w] for w in source_words]])
            return (
                queries,
                golds,
                metrics.nn_ranks(
                    src_vecs[[src_index[w] for w, _ in queries]],
                    tgt_vecs[[tgt_index[w] for w in candidate_words]],
                    golds,
                    block=block,
                    metric=metric,
                    csls_k=csls_k,
                    **spaces,
                ),
            )

        queries, golds, ranks = rank(covered, targets)
        if return_ranks:
            rank_tables.append(_rank_table(layer, queries, ranks))
        function_covered = [(s, t) for s, t in function_pairs if s in src_index and t in tgt_index]
        if function_covered:  # the main candidates, plus the function words' targets where those are the dictionary's
            function_queries, _, function_ranks = rank(
                function_covered, sorted(set(targets) | {t for _, t in function_covered})
            )
            function_tables.append(_rank_table(layer, function_queries, function_ranks))
        rows.append(
            {
                "layer": int(layer),
                "mrr": mrr(ranks),
                "p_at_1": precision_at_k(ranks, 1),
                "p_at_5": precision_at_k(ranks, 5),
                "coverage": len(covered) / len(pairs),
                "n_pairs": len(pairs),
                "n_covered_pairs": len(covered),
                "n_queries": len(queries),
                "n_candidates": len(targets),
                "chance_mrr": chance_mrr(len(targets), [len(g) for g in golds]),
            }
        )
        logger.info(
            "%s-%s layer %d (%s): MRR %.4f P@1 %.4f, %d queries, %d candidates (%s), coverage %.3f",
            src_lang,
            tgt_lang,
            layer,
            metric,
            rows[-1]["mrr"],
            rows[-1]["p_at_1"],
            len(queries),
            len(targets),
            candidates,
            rows[-1]["coverage"],
        )
    table = pd.DataFrame(rows, columns=COLUMNS)
    if not return_ranks:
        return table
    ranks_table = pd.concat(rank_tables, ignore_index=True)
    if function_dictionary_path is None:
        return table, ranks_table
    function_table = (
        pd.concat(function_tables, ignore_index=True) if function_tables else pd.DataFrame(columns=RANK_COLUMNS)
    )
    logger.info(
        "%s: %d function-word queries ranked over %d layers (MRR by part of speech only)",
        function_dictionary_path,
        len(function_table),
        len(layers),
    )
    return table, ranks_table, function_table
