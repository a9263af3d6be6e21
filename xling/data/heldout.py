"""Held-out text for the BERTs' checkpoint selection (bert.selection dev_perplexity; Conneau et al. 2020 §3): the
documents at the end of the document shuffle that xling.data.corpus.sample takes its nested samples from the
beginning of, so no sample up to the largest size shares a document with it. Apart from xling.data.corpus so
that the samples' code, and so every job after them, stays as it was."""

from __future__ import annotations

import logging
from itertools import islice

import numpy as np

from xling.data.corpus import _index_documents
from xling.io import atomic_write

logger = logging.getLogger(__name__)


def documents_for(sizes: np.ndarray, n_sentences: int) -> int:
    """How many documents of `sizes`, in that order, hold the first `n_sentences` sentences."""
    return int(np.searchsorted(np.cumsum(sizes), n_sentences)) + 1


def sample_heldout(prepared_path, out_path, n_sentences: int, seed: int, disjoint_from: int) -> dict:
    """Write `n_sentences` sentences of the documents at the END of `sample`'s shuffle for `seed` (last document
    first, the last one taken cut), apart from the documents of a sample of `disjoint_from` sentences (the
    largest of corpus.sizes). Raises ValueError naming the counts when the corpus cannot hold both."""
    offsets, sizes = _index_documents(prepared_path)
    order = np.random.default_rng(seed).permutation(len(sizes))
    sizes = np.asarray(sizes, dtype=np.int64)
    if disjoint_from + n_sentences > sizes.sum():
        raise ValueError(
            f"{prepared_path}: {sizes.sum()} sentences cannot hold a sample of {disjoint_from} and "
            f"{n_sentences} held-out sentences apart"
        )
    sampled = documents_for(sizes[order], disjoint_from)
    heldout = order[::-1][: documents_for(sizes[order[::-1]], n_sentences)]
    if sampled + len(heldout) > len(order):
        raise ValueError(
            f"{prepared_path}: the sample of {disjoint_from} sentences takes {sampled} of the "
            f"{len(order)} documents, and {n_sentences} held-out sentences need {len(heldout)} more"
        )
    left = n_sentences
    with open(prepared_path, "rb") as src, atomic_write(out_path, "wb") as out:
        for i, index in enumerate(heldout):
            src.seek(offsets[index])
            lines = list(islice(src, min(int(sizes[index]), left)))
            out.write(
                (b"\n" if i else b"") + b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
            )
            left -= len(lines)
    result = dict(
        sentences=n_sentences - left, documents=len(heldout), documents_between=len(order) - sampled - len(heldout)
    )
    logger.info(
        "%s -> %s (seed %d, apart from the first %d sentences): %s",
        prepared_path,
        out_path,
        seed,
        disjoint_from,
        result,
    )
    return result
