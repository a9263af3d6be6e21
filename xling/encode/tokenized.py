"""Vectors of sentences that come already split into words (Moses tokens of word-aligned parallel text).

Why: word pairs (Pharaoh links) index the words of a tokenized sentence, while the encoder groups wordpieces
into words by the "##" marker (xling.encode.words). The two need not agree: the model's tokenizer splits a
Moses word such as "l'homme" into three pieces none of which starts with "##", so it is three encoder words.
Here each Moses word is tokenized on its own, the pieces of a sentence are run as one item, and the vector of
a Moses word is the hidden state of its LAST piece (Cao et al. 2020, footnote 1), whatever the encoder's
grouping. A word the tokenizer turns into no piece has no vector (a row of NaN).

`encode_tokenized` also returns each sentence's mean-pooled vector (the mean over its wordpieces, no [CLS] or
[SEP]: Aldarmaki and Diab's sentence vector for the sentence-aligned rotation), from the same forward pass.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from xling.encode.words import chunk_words, word_spans


def _occurrence_owners(word_pieces: list[list[str]], max_pieces: int) -> tuple[list[str], np.ndarray]:
    """The sentence's pieces and, per encoder word occurrence (in the encoder's order, chunking included),
    the Moses word its last piece belongs to."""
    pieces = [p for word in word_pieces for p in word]
    owner = np.repeat(np.arange(len(word_pieces)), [len(word) for word in word_pieces])
    chunks, _ = chunk_words(word_spans(pieces), max_pieces, "split")
    return pieces, np.array([owner[end - 1] for chunk in chunks for _, end in chunk], dtype=np.int64)


def encode_tokenized(encoder, sentences: Sequence[Sequence[str]], layer: int, batch_size: int,
                     what: str = "sentences") -> tuple[list[np.ndarray], np.ndarray]:
    """Per sentence an array [n_words, H] (float32) of its words' last-piece vectors at `layer` (NaN rows for
    a word without pieces), and the mean-pooled sentence vectors [n_sentences, H] (zeros for a sentence
    without pieces)."""
    flat = [word for sentence in sentences for word in sentence]
    tokenized = iter(encoder.tokenize(flat))
    items, owners = [], []
    for sentence in sentences:
        pieces, owner = _occurrence_owners([next(tokenized) for _ in sentence], encoder.max_length - 2)
        items.append(pieces)
        owners.append(owner)
    occurrences: dict[int, dict[int, np.ndarray]] = {}  # item -> chunk order -> its occurrences' vectors
    sums = np.zeros((len(sentences), encoder.hidden), dtype=np.float64)
    counts = np.zeros(len(sentences), dtype=np.int64)
    for out in encoder.encode(items, batch_size, layers=[layer], long_words="split", what=what):
        vectors = out.word_vectors("last")[0].cpu().numpy()
        rows = (out.batch.word_start // out.batch.input_ids.shape[1]).numpy()
        for row, (item, chunk) in enumerate(zip(out.batch.items, out.batch.chunks)):
            occurrences.setdefault(item, {})[chunk] = vectors[rows == row]
        row_sums, row_counts = out.pooled("words")
        np.add.at(sums, np.array(out.batch.items), row_sums[0].cpu().numpy())
        np.add.at(counts, np.array(out.batch.items), row_counts.cpu().numpy())
    words = []
    for item, sentence in enumerate(sentences):
        out_vectors = np.full((len(sentence), encoder.hidden), np.nan, dtype=np.float32)
        chunks = occurrences.get(item, {})
        if chunks:
            vectors = np.concatenate([chunks[c] for c in sorted(chunks)])
            if len(vectors) != len(owners[item]):
                raise RuntimeError(f"{what}: sentence {item} gave {len(vectors)} word occurrences, expected "
                                   f"{len(owners[item])}")
            last = np.full(len(sentence), -1)  # a word's last occurrence ends in its last piece
            np.maximum.at(last, owners[item], np.arange(len(owners[item])))
            out_vectors[last >= 0] = vectors[last[last >= 0]]
        words.append(out_vectors)
    return words, (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
