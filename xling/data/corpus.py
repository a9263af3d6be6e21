"""Corpus preparation and nested, document-level sampling.

Canonical corpus format: UTF-8, one sentence per line, documents separated by one empty line.

`prepare` cleans a raw corpus so that every model (GloVe, word2vec, BERT) trains on exactly the same
text: Unicode normalization (NFC by default, which keeps the characters mBERT's cased vocabulary
was built on; NFKC would fold e.g. full-width forms and ligatures), control characters removed,
whitespace runs collapsed, empty sentences dropped, repeated sentences dropped (first occurrence kept,
across the whole file, because boilerplate repeated across documents inflates frequencies) and
documents that end up empty dropped.

`sample` draws the data-size grid: documents are shuffled once with the seed and taken in that order
until `n` sentences (the last document cut), so for one seed a smaller sample is a prefix of every
larger one. The data-size study then compares corpora that differ only in how much was added.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import unicodedata
from typing import Iterator

import numpy as np

from xling.io import atomic_write, read_lines

logger = logging.getLogger(__name__)

NORMALIZATION_FORMS = ("NFC", "NFKC", "NFD", "NFKD")

# C0/C1 control characters other than the whitespace ones handled by str.split(). Format characters
# (category Cf, e.g. ZWJ/ZWNJ) are kept on purpose: they are meaningful in Indic and Persian scripts.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ufeff\ufffe\uffff]")


def clean_sentence(line: str, normalization: str | None = "NFC") -> str:
    """Normalize one sentence: Unicode form, control characters removed, whitespace collapsed.

    `normalization` is a `unicodedata` form or None (no normalization). Returns "" when nothing is left.
    """
    if normalization:
        line = unicodedata.normalize(normalization, line)
    line = _CONTROL.sub("", line)
    return " ".join(line.split())


def read_documents(path: str | os.PathLike) -> Iterator[list[tuple[int, str]]]:
    """Yield documents as lists of (line number, line); any run of blank lines separates documents."""
    doc: list[tuple[int, str]] = []
    for lineno, line in read_lines(path):
        if line.strip():
            doc.append((lineno, line))
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def _check_form(normalization: str | None) -> None:
    if normalization is not None and normalization not in NORMALIZATION_FORMS:
        raise ValueError(f"unknown Unicode normalization {normalization!r}; use one of {NORMALIZATION_FORMS} or None")


def prepare(raw_path, out_path, normalization: str | None = "NFC", dedup: bool = True) -> dict:
    """Clean `raw_path` into the canonical corpus `out_path` (streaming; written atomically).

    Any blank (or whitespace-only) raw line ends a document. Dedup keeps a set of 128-bit BLAKE2b
    digests of the cleaned sentences (about 80 bytes per distinct sentence in memory), so it works
    across the whole file without holding the text. Returns counts for the log:
    read (non-blank raw lines), kept, duplicates, empty (lines with nothing left after cleaning),
    documents (written), documents_read, documents_dropped (every sentence empty or a duplicate).
    """
    _check_form(normalization)
    seen: set[bytes] = set()
    counts = dict(read=0, kept=0, duplicates=0, empty=0, documents=0, documents_read=0, documents_dropped=0)
    start = last_log = time.monotonic()
    with atomic_write(out_path) as out:
        for doc in read_documents(raw_path):
            counts["documents_read"] += 1
            kept: list[str] = []
            for _, line in doc:
                counts["read"] += 1
                sentence = clean_sentence(line, normalization)
                if not sentence:
                    counts["empty"] += 1
                    continue
                if dedup:
                    digest = hashlib.blake2b(sentence.encode("utf-8"), digest_size=16).digest()
                    if digest in seen:
                        counts["duplicates"] += 1
                        continue
                    seen.add(digest)
                kept.append(sentence)
            if not kept:
                counts["documents_dropped"] += 1
                continue
            if counts["documents"]:
                out.write("\n")
            out.write("\n".join(kept) + "\n")
            counts["documents"] += 1
            counts["kept"] += len(kept)
            if time.monotonic() - last_log > 30:
                last_log = time.monotonic()
                rate = counts["read"] / (last_log - start)
                logger.info("%s: %d sentences read (%.0f/s), %d kept", raw_path, counts["read"], rate, counts["kept"])
        if counts["kept"] == 0:  # raised inside the block, so no output file is left behind
            raise ValueError(
                f"{raw_path}: no sentences left after cleaning ({counts['read']} read, {counts['empty']} empty)"
            )
    logger.info("%s -> %s: %s (%.1fs)", raw_path, out_path, counts, time.monotonic() - start)
    return counts


def _index_documents(path) -> tuple[list[int], list[int]]:
    """Byte offset of each document's first line and its number of sentences (one pass, binary)."""
    offsets: list[int] = []
    sizes: list[int] = []
    position = 0
    in_doc = False
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                if not in_doc:
                    offsets.append(position)
                    sizes.append(0)
                    in_doc = True
                sizes[-1] += 1
            else:
                in_doc = False
            position += len(line)
    return offsets, sizes


def sample(prepared_path, out_path, n_sentences: int, seed: int) -> dict:
    """Write the first `n_sentences` sentences of the seed's document shuffle to `out_path` (atomically).

    Documents are permuted with `numpy.random.default_rng(seed)` and taken in that order, the last one
    cut to hit exactly `n_sentences`; documents are written in the order taken. The permutation depends
    only on the seed and the number of documents, so for one prepared corpus and seed the n=200 file is
    a byte prefix of the n=1000 file (nested samples). Raises ValueError naming the file and both counts
    when the corpus has fewer than `n_sentences` sentences.
    """
    if int(n_sentences) != n_sentences or n_sentences < 1:
        raise ValueError(f"n_sentences must be a positive integer, got {n_sentences!r}")
    n_sentences = int(n_sentences)
    offsets, sizes = _index_documents(prepared_path)
    total = sum(sizes)
    if total < n_sentences:
        raise ValueError(
            f"{prepared_path}: corpus has {total} sentences in {len(sizes)} documents, "
            f"fewer than the {n_sentences} requested"
        )
    order = np.random.default_rng(seed).permutation(len(sizes))
    taken = documents = 0
    with open(prepared_path, "rb") as src, atomic_write(out_path, "wb") as out:
        for index in order:
            need = min(sizes[index], n_sentences - taken)
            src.seek(offsets[index])
            if documents:
                out.write(b"\n")
            for _ in range(need):
                line = src.readline()
                out.write(line if line.endswith(b"\n") else line + b"\n")
            taken += need
            documents += 1
            if taken == n_sentences:
                break
    result = dict(
        sentences=taken,
        documents=documents,
        cut=sizes[index] - need,
        sentences_available=total,
        documents_available=len(sizes),
    )
    logger.info("%s -> %s (seed %d): %s", prepared_path, out_path, seed, result)
    return result
