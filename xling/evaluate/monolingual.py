"""Aligning separately trained monolingual BERTs with one orthogonal map (Conneau et al. 2020, §5.1).

Why: if two BERTs that never shared a parameter can be mapped onto each other by a rotation, the similarity
that a multilingual BERT shows is largely there already, and parameter sharing only has to line it up. Each
level takes two spaces X (source language, the pivot) and Y (target), normalises each with iterative
normalisation (unit length and mean centring, repeated; Zhang et al. 2019: xling.represent.rotation), learns
W = procrustes on supervised pairs and scores the mapped space on held-out pairs:

* word level (`word_translation`): one vector per word type — a row of the embedding matrix for words that
  are one wordpiece, the mean of a word's contextual vectors at a layer over a corpus sample, or fastText's
  (xling.represent.word_spaces) — supervised by the train dictionary, scored by word translation on the test
  dictionary with CSLS (k neighbours) among the whole target vocabulary, as MUSE;
* sentence level (`sentence_retrieval`): mean-pooled wordpiece vectors (no [CLS]/[SEP]) per layer; the map is
  learned on XNLI's parallel sentences and scored by Tatoeba nearest-neighbour accuracy (P@1), both ways.

The map is fitted to send the target space onto the pivot's (x_target @ W ~ x_pivot), as the paper maps
the target model's layer onto the English one; retrieval then runs in the pivot's space.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from xling.data.formats import read_dictionary
from xling.data.wordpiece import normalize_word
from xling.evaluate import metrics
from xling.evaluate.ranks import expected_hit_at_k, precision_at_k
from xling.evaluate.cka import mean_pooled
from xling.evaluate.intervals import item_table
from xling.evaluate.sentence_retrieval import retrieval_hits
from xling.represent.rotation import iterative_normalize, procrustes
from xling.represent.store import read_vectors

logger = logging.getLogger(__name__)


def word_translation(
    pivot: tuple[list[str], np.ndarray],
    target: tuple[list[str], np.ndarray],
    train_pairs: Sequence[tuple[str, str]],
    test_pairs: Sequence[tuple[str, str]],
    *,
    n_iter: int,
    csls_k: int = 10,
    block: int = 1024,
    hits: list | None = None,
) -> dict:
    """Word translation pivot -> target through a Procrustes map learned on `train_pairs`.

    pivot, target: (words, vectors [n, H]) of each language's vocabulary (the candidates are the whole target
    vocabulary; CSLS neighbourhoods are both whole vocabularies). A pair counts when both words have a vector.
    Returns p_at_1, p_at_5, the pair counts and the vocabulary sizes; `hits` (a list) gets each query's
    (expected) hit at 1, whose mean is p_at_1. Raises ValueError without a covered train or test pair."""
    src_words, src = pivot
    tgt_words, tgt = target
    src_index = {w: i for i, w in enumerate(src_words)}
    tgt_index = {w: i for i, w in enumerate(tgt_words)}

    def covered(pairs):
        return sorted({(s, t) for s, t in pairs if s in src_index and t in tgt_index})

    train, test = covered(train_pairs), covered(test_pairs)
    if not train or not test:
        raise ValueError(
            f"no covered {'train' if not train else 'test'} dictionary pair "
            f"({len(src_words)} pivot and {len(tgt_words)} target words with a vector)"
        )
    src, tgt = iterative_normalize(src, n_iter), iterative_normalize(tgt, n_iter)
    w = procrustes(tgt[[tgt_index[t] for _, t in train]], src[[src_index[s] for s, _ in train]])
    mapped = tgt @ w  # the target vocabulary in the pivot's space
    queries = sorted({s for s, _ in test})
    q_pos = {s: i for i, s in enumerate(queries)}
    gold: list[set[int]] = [set() for _ in queries]
    for s, t in test:
        gold[q_pos[s]].add(tgt_index[t])
    ranks = metrics.nn_ranks(
        src[[src_index[s] for s in queries]],
        mapped,
        gold,
        block=block,
        metric="csls",
        csls_k=csls_k,
        source_space=src,
        target_space=mapped,
    )
    if hits is not None:
        hits.append(expected_hit_at_k(ranks, 1))
    return {
        "p_at_1": precision_at_k(ranks, 1),
        "p_at_5": precision_at_k(ranks, 5),
        "n_train_pairs": len(train),
        "n_test_pairs": len(test),
        "coverage": len(test) / len({tuple(p) for p in test_pairs}),
        "n_queries": len(queries),
        "n_src_words": len(src_words),
        "n_tgt_words": len(tgt_words),
    }


def sentence_retrieval(
    train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], *, n_iter: int, block: int = 1024
) -> dict[str, dict[str, np.ndarray]]:
    """Tatoeba-style retrieval of line-aligned test sentences (pivot, target) [n, H] at one layer, with and
    without a Procrustes map learned on the line-aligned train sentences: each query's hit (their mean is P@1),
    {"none": {direction: hits}, "procrustes": ...}; directions 'en->xx' (pivot queries) and 'xx->en'."""
    train_src, train_tgt = (iterative_normalize(v, n_iter) for v in train)
    test_src, test_tgt = (iterative_normalize(v, n_iter) for v in test)
    w = procrustes(train_tgt, train_src)
    out = {}
    for method, tgt in (("none", test_tgt), ("procrustes", test_tgt @ w)):
        out[method] = {
            "en->xx": retrieval_hits(test_src, tgt, block=block)[0],
            "xx->en": retrieval_hits(tgt, test_src, block=block)[0],
        }
    return out


def embedding_words(encoder, words: set[str]) -> tuple[list[str], np.ndarray]:
    """The words of `words` that are one piece of the model's vocabulary (not a special token or a continuation:
    "cat", XLM-R's "▁cat"), sorted, and their rows of the input embedding matrix (float64)."""
    special = set(encoder.tokenizer.all_special_tokens)
    subwords = encoder.subwords
    piece = {w: subwords.whole_word(w) for w in words if not subwords.is_continuation(subwords.whole_word(w))}
    chosen = sorted(w for w, p in piece.items() if p in encoder.vocab and p not in special)
    weight = encoder.model.get_input_embeddings().weight.detach().cpu().double().numpy()
    return chosen, weight[[encoder.vocab[piece[w]] for w in chosen]]


def dictionary_pairs(path, lowercase: bool) -> list[tuple[str, str]]:
    """A MUSE dictionary's pairs in the token files' word form (`normalize_word`)."""
    return [(normalize_word(s, lowercase), normalize_word(t, lowercase)) for s, t in read_dictionary(path)]


def word_alignment_table(
    encoders: tuple,
    stores: tuple,
    fasttext: tuple,
    vocabularies: tuple[list[str], list[str]],
    langs: tuple[str, str],
    train_pairs,
    test_pairs,
    *,
    n_iter: int,
    csls_k: int,
    block: int = 1024,
    items: list[pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Word translation pivot -> target through a Procrustes map, for (pivot, target) monolingual models:
    level 'embedding' (input-embedding rows of the vocabulary's single-piece words), 'fasttext' (the
    `fasttext` stores' vectors of the same single-piece words: the paper's baseline on BERT's vocabulary),
    'fasttext_all' (fastText on the whole vocabulary, the baseline of the contextual level) and 'contextual'
    (each layer of the `stores`: the mean of a word's contextual vectors). One row per level and layer with
    word_translation's numbers; `items` (a list) gets each row's per-query hits at 1 (level, layer, item,
    numerator, denominator), from which the gather draws P@1's interval."""

    def store_space(store, lang, layer, keep):
        store_words, vectors = read_vectors(store, lang, layer)
        chosen = [i for i, w in enumerate(store_words) if w in keep]
        return [store_words[i] for i in chosen], vectors[chosen]

    def row(level, layer, spaces):
        hits: list[np.ndarray] = []
        result = word_translation(
            *spaces, train_pairs, test_pairs, n_iter=n_iter, csls_k=csls_k, block=block, hits=hits
        )
        if items is not None:
            items.append(item_table({"level": level, "layer": int(layer)}, hits[0]))
        logger.info("%s-%s %s layer %d: P@1 %.4f", *langs, level, layer, result["p_at_1"])
        return {"level": level, "layer": int(layer), **result}

    words = [set(v) for v in vocabularies]
    embedding = [embedding_words(encoder, w) for encoder, w in zip(encoders, words, strict=True)]
    rows = [
        row("embedding", 0, embedding),
        row(
            "fasttext",
            0,
            [store_space(s, lang, 0, set(e[0])) for s, lang, e in zip(fasttext, langs, embedding, strict=True)],
        ),
        row("fasttext_all", 0, [store_space(s, lang, 0, w) for s, lang, w in zip(fasttext, langs, words, strict=True)]),
    ]
    layers = sorted(set(pq.read_table(stores[0], columns=["layer"]).column("layer").to_pylist()))
    rows += [
        row(
            "contextual",
            layer,
            [store_space(s, lang, layer, w) for s, lang, w in zip(stores, langs, words, strict=True)],
        )
        for layer in layers
    ]
    return pd.DataFrame(rows)


def sentence_alignment_table(
    encoders: tuple,
    map_pairs: list[tuple[str, str]],
    test_pairs: list[tuple[str, str]],
    *,
    n_iter: int,
    batch_size: int,
    block: int = 1024,
    items: list[pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Tatoeba P@1 per layer for (pivot, target) models, unmapped and through the Procrustes map learned at
    that layer on `map_pairs` (pivot sentence, target sentence); `test_pairs` likewise line-aligned. `items`
    (a list) gets each row's per-query hits (layer, method, direction, item, numerator, denominator)."""
    train = [
        mean_pooled(enc, [p[side] for p in map_pairs], batch_size, f"map sentences ({side})")
        for side, enc in enumerate(encoders)
    ]
    test = [
        mean_pooled(enc, [p[side] for p in test_pairs], batch_size, f"test sentences ({side})")
        for side, enc in enumerate(encoders)
    ]
    rows = []
    for layer in range(train[0].shape[1]):
        result = sentence_retrieval(
            (train[0][:, layer], train[1][:, layer]), (test[0][:, layer], test[1][:, layer]), n_iter=n_iter, block=block
        )
        for method, scores in result.items():
            for direction, hits in scores.items():
                keys = {"layer": layer, "method": method, "direction": direction}
                rows.append({**keys, "p_at_1": float(np.mean(hits))})
                if items is not None:
                    items.append(item_table(keys, hits))
    return pd.DataFrame(rows).assign(n_map_sentences=len(map_pairs), n_test_sentences=len(test_pairs))
