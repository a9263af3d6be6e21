"""The sentence-augmented fastText baseline of contextual word retrieval (Cao et al. 2020, section 3.4).

    fastText per language (gensim, on the run's corpus in the word pairs' tokenization)
    -> each word vector normalised, mean-centred, normalised (Artetxe et al. 2018)
    -> the other language rotated onto the pivot by Procrustes on the train word pairs (the BERT rotation's data)
    -> each word's vector concatenated with its sentence's mean, maximum and minimum word vector (Rücklé et al. 2018)

so a d-dimensional fastText gives 4d-dimensional word-in-sentence vectors (the paper: 300 -> 1200). The mean used
for centring is that of the language's normalised vocabulary vectors; a word outside the vocabulary gets its
vector from its character n-grams, as fastText does. Sentence pooling runs on the rotated word vectors, so the
two languages' sentence parts live in one space.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from xling.data.formats import iter_corpus_documents
from xling.io import atomic_path
from xling.represent.rotation import CrossCovariance, linked_rows

logger = logging.getLogger(__name__)

Tokenize = Callable[[list[str]], list[list[str]]]


class _Sentences:
    """The corpus's sentences as words, re-read on every pass (gensim iterates once to build the vocabulary and
    once per epoch)."""

    def __init__(self, path, tokenize: Tokenize):
        self.path, self.tokenize = path, tokenize

    def __iter__(self) -> Iterator[list[str]]:
        for document in iter_corpus_documents(self.path):
            yield from (words for words in self.tokenize(document) if words)


def train_fasttext(
    corpus_path,
    out_path,
    tokenize: Tokenize,
    *,
    dim: int,
    window: int,
    epochs: int,
    min_count: int,
    min_n: int,
    max_n: int,
    seed: int,
    threads: int,
) -> None:
    """Train skip-gram fastText on one language's corpus (documents of one sentence per line) and save its
    KeyedVectors (n-grams included) to one file, atomically. `window` counts words on each side."""
    from gensim.models import FastText

    model = FastText(
        vector_size=dim, window=window, min_count=min_count, min_n=min_n, max_n=max_n, sg=1, seed=seed, workers=threads
    )
    sentences = _Sentences(corpus_path, tokenize)
    model.build_vocab(corpus_iterable=sentences)
    if not len(model.wv):
        raise ValueError(f"{corpus_path}: no word occurs {min_count} times: fastText has no vocabulary")
    model.train(corpus_iterable=sentences, total_examples=model.corpus_count, epochs=epochs)
    logger.info("%s: %d words of %d sentences, dimension %d", corpus_path, len(model.wv), model.corpus_count, dim)
    with atomic_path(out_path) as tmp:
        model.wv.save(str(tmp), separately=[])  # one file: no sidecar .npy to be renamed with it


def load_vectors(path):
    from gensim.models import KeyedVectors

    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: fastText vectors not found")
    return KeyedVectors.load(str(path))


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


class Normalised:
    """A language's fastText vectors, normalised, centred on its vocabulary's normalised mean, normalised."""

    def __init__(self, vectors):
        self.vectors = vectors
        self.mean = _unit(np.asarray(vectors.vectors, dtype=np.float64)).mean(axis=0)

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        """[len(words), d] float64; any word has a vector (its character n-grams outside the vocabulary)."""
        if not words:
            return np.zeros((0, self.vectors.vector_size))
        raw = np.stack([self.vectors[word] for word in words]).astype(np.float64)
        return _unit(_unit(raw) - self.mean)


def rotation(
    pivot: Normalised,
    other: Normalised,
    pivot_sentences: list[list[str]],
    other_sentences: list[list[str]],
    links: list[set[tuple[int, int]]],
) -> tuple[np.ndarray, int]:
    """(W, pairs): Procrustes mapping the other language's normalised vectors onto the pivot's, on the linked
    words of the sentence pairs (i a pivot position, j the other's)."""
    covariance = CrossCovariance(pivot.vectors.vector_size)
    covariance.add(*linked_rows([pivot(s) for s in pivot_sentences], [other(s) for s in other_sentences], links))
    return covariance.rotation(), covariance.n


def sentence_augmented(words: np.ndarray) -> np.ndarray:
    """[n, d] word vectors of one sentence -> [n, 4d]: each word's vector, then the sentence's mean, maximum and
    minimum vector."""
    if not len(words):
        return np.zeros((0, 4 * words.shape[1]))
    pooled = np.concatenate([words.mean(axis=0), words.max(axis=0), words.min(axis=0)])
    return np.hstack([words, np.broadcast_to(pooled, (len(words), len(pooled)))])


def retrieval_vectors(vectors: Normalised, sentences: list[list[str]], w: np.ndarray | None = None) -> list[np.ndarray]:
    """Per sentence its words' sentence-augmented vectors [n_words, 4d] (float32), rotated by `w` first (the
    other language) or not (the pivot)."""
    out = []
    for sentence in sentences:
        words = vectors(sentence)
        out.append(sentence_augmented(words if w is None else words @ w).astype(np.float32))
    return out
