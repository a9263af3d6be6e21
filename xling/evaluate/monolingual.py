"""Aligning separately trained monolingual BERTs with one orthogonal map (Conneau et al. 2020, §5.1), and the
inputs of their CKA comparison (§5.2).

Why: if two BERTs that never shared a parameter can be mapped onto each other by a rotation, the similarity
that a multilingual BERT shows is largely there already, and parameter sharing only has to line it up. Each
level takes two spaces X (source language, the pivot) and Y (target), normalises each with iterative
normalisation (unit length and mean centring, repeated; Zhang et al. 2019: xling.represent.rotation), learns
W = procrustes on supervised pairs and scores the mapped space on held-out pairs:

* word level (`word_translation`): one vector per word type — a row of the embedding matrix for words that
  are one wordpiece, or the mean of a word's contextual vectors at a layer over a corpus sample (the store,
  xling.represent.store) — supervised by the train dictionary, scored by word translation on the test
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
import torch

from xling.data.formats import read_xnli
from xling.evaluate import metrics
from xling.evaluate.sentence_retrieval import retrieval_accuracy
from xling.represent.rotation import iterative_normalize, procrustes

logger = logging.getLogger(__name__)


def fit_map(src: np.ndarray, tgt: np.ndarray) -> np.ndarray:
    """Orthogonal W with src @ W ~ tgt for paired rows (both already normalised)."""
    return procrustes(src, tgt)


def word_translation(pivot: tuple[list[str], np.ndarray], target: tuple[list[str], np.ndarray],
                     train_pairs: Sequence[tuple[str, str]], test_pairs: Sequence[tuple[str, str]], *,
                     n_iter: int, csls_k: int = 10, block: int = 1024) -> dict:
    """Word translation pivot -> target through a Procrustes map learned on `train_pairs`.

    pivot, target: (words, vectors [n, H]) of each language's vocabulary (the candidates are the whole target
    vocabulary; CSLS neighbourhoods are both whole vocabularies). A pair counts when both words have a vector.
    Returns p_at_1, p_at_5, the pair counts and the vocabulary sizes. Raises ValueError without a covered
    train or test pair."""
    src_words, src = pivot
    tgt_words, tgt = target
    src_index = {w: i for i, w in enumerate(src_words)}
    tgt_index = {w: i for i, w in enumerate(tgt_words)}

    def covered(pairs):
        return sorted({(s, t) for s, t in pairs if s in src_index and t in tgt_index})

    train, test = covered(train_pairs), covered(test_pairs)
    if not train or not test:
        raise ValueError(f"no covered {'train' if not train else 'test'} dictionary pair "
                         f"({len(src_words)} pivot and {len(tgt_words)} target words with a vector)")
    src, tgt = iterative_normalize(src, n_iter), iterative_normalize(tgt, n_iter)
    w = fit_map(tgt[[tgt_index[t] for _, t in train]], src[[src_index[s] for s, _ in train]])
    mapped = tgt @ w  # the target vocabulary in the pivot's space
    queries = sorted({s for s, _ in test})
    q_pos = {s: i for i, s in enumerate(queries)}
    gold: list[set[int]] = [set() for _ in queries]
    for s, t in test:
        gold[q_pos[s]].add(tgt_index[t])
    ranks = metrics.nn_ranks(src[[src_index[s] for s in queries]], mapped, gold, block=block, metric="csls",
                             csls_k=csls_k, source_space=src, target_space=mapped)
    return {"p_at_1": metrics.precision_at_k(ranks, 1), "p_at_5": metrics.precision_at_k(ranks, 5),
            "n_train_pairs": len(train), "n_test_pairs": len(test),
            "coverage": len(test) / len({tuple(p) for p in test_pairs}), "n_queries": len(queries),
            "n_src_words": len(src_words), "n_tgt_words": len(tgt_words)}


def sentence_retrieval(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], *,
                       n_iter: int, block: int = 1024) -> dict[str, float]:
    """Tatoeba-style P@1 of line-aligned test sentences (pivot, target) [n, H] at one layer, with and without
    a Procrustes map learned on the line-aligned train sentences: {"none": {direction: acc}, "procrustes": ...};
    directions 'en->xx' (pivot queries) and 'xx->en'."""
    train_src, train_tgt = (iterative_normalize(v, n_iter) for v in train)
    test_src, test_tgt = (iterative_normalize(v, n_iter) for v in test)
    w = fit_map(train_tgt, train_src)
    out = {}
    for method, tgt in (("none", test_tgt), ("procrustes", test_tgt @ w)):
        out[method] = {"en->xx": retrieval_accuracy(test_src, tgt, block=block),
                       "xx->en": retrieval_accuracy(tgt, test_src, block=block)}
    return out


def xnli_parallel(pivot_path, target_path, max_sentences: int | None = None) -> list[tuple[str, str]]:
    """The distinct (pivot, target) sentence pairs of two line-aligned XNLI files (premises, then hypotheses,
    in file order; XNLI repeats each premise for its three hypotheses), the first `max_sentences`."""
    pivot, target = read_xnli(pivot_path), read_xnli(target_path)
    if len(pivot) != len(target):
        raise ValueError(f"{pivot_path}: {len(pivot)} examples, but {target_path}: {len(target)}; the XNLI "
                         "files of two languages must be line-aligned translations")
    pairs = dict.fromkeys([(p[0], t[0]) for p, t in zip(pivot, target)] +
                          [(p[1], t[1]) for p, t in zip(pivot, target)])
    return list(pairs)[:max_sentences] if max_sentences else list(pairs)


def random_encoder(like, seed: int):
    """An encoder with the architecture and tokenizer of `like` (an xling.encode Encoder) and freshly
    initialised weights (HF's initialisation under torch seed `seed`): the untrained lower bound of CKA."""
    from transformers import BertForMaskedLM

    from xling.encode.encoder import Encoder

    torch.manual_seed(seed)
    model = BertForMaskedLM(like.model.config).to(like.device).eval()
    return Encoder(model, like.tokenizer, like.device, like.dtype, like.max_length, f"random({like.name})")


def embedding_words(encoder, words: set[str]) -> tuple[list[str], np.ndarray]:
    """The words of `words` that are one piece of the model's vocabulary (not a special token or a '##'
    continuation), sorted, and their rows of the input embedding matrix (float64)."""
    special = set(encoder.tokenizer.all_special_tokens)
    chosen = sorted(w for w in words if w in encoder.vocab and w not in special and not w.startswith("##"))
    weight = encoder.model.get_input_embeddings().weight.detach().cpu().double().numpy()
    return chosen, weight[[encoder.vocab[w] for w in chosen]]
