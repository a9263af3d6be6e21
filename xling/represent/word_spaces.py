"""The word vectors of one language that the monolingual alignment compares (xling.evaluate.monolingual): its
vocabulary, a monolingual BERT's per-layer means of contextual word vectors over the language's sample (the store),
and fastText trained on the same sample (the static baseline)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from xling.data.formats import iter_corpus_documents
from xling.data.wordpiece import tokenize_corpus
from xling.data.words import detokenize
from xling.io import atomic_write, read_lines, scratch
from xling.represent.store import Extraction, extract_bert_shard, reduce_shards

logger = logging.getLogger(__name__)


def vocabulary(counts_path, lang: str, min_count: int, size: int) -> list[str]:
    """A language's word vocabulary: its `size` most frequent words counted at least `min_count` times in a
    word-counts table (lang, word, count), ties by word."""
    table = pq.read_table(
        counts_path, columns=["word", "count"], filters=[("lang", "==", lang), ("count", ">=", min_count)]
    )
    table = table.sort_by([("count", "descending"), ("word", "ascending")])
    return table.column("word").to_pylist()[:size]


@dataclass(frozen=True)
class SentenceCap:
    """The first `n` sentences of the language's corpus sample (`corpus`), tokenized as its token file was
    (`vocab`, `lowercase`): Conneau et al. (2020, §5.1.1) average each word over 500k sentences."""

    n: int
    corpus: str | Path
    vocab: str | Path
    lowercase: bool = False


def first_sentences(corpus_path, n: int, out_path) -> bool:
    """Write the first `n` sentences of a canonical corpus (document breaks kept, the last document cut) to
    `out_path`; whether the corpus had more (False: `out_path` holds the whole corpus)."""
    left, cut = n, False
    with atomic_write(out_path) as out:
        for number, document in enumerate(iter_corpus_documents(corpus_path)):
            if left == 0:
                cut = True
                break
            cut = len(document) > left
            out.write(("\n" if number else "") + "".join(f"{sentence}\n" for sentence in document[:left]))
            left -= min(left, len(document))
    return cut


def word_means(
    model_dir,
    token_path,
    lang: str,
    words: set[str],
    out_path,
    *,
    batch_size: int,
    max_length: int | None,
    device: str | None,
    cap: SentenceCap | None = None,
) -> None:
    """The store of one monolingual model over its own language's token file (or over its first `cap.n`
    sentences): per-layer means of each word's contextual vectors (xling.represent.store, one shard reduced to
    means)."""
    with scratch(Path(out_path).with_name(Path(out_path).name + "-inputs")) as tmp:
        if cap is not None and first_sentences(cap.corpus, cap.n, Path(tmp) / "corpus.txt"):
            token_path = Path(tmp) / "tokens.txt"
            counts = tokenize_corpus(Path(tmp) / "corpus.txt", cap.vocab, token_path, lowercase=cap.lowercase)
            logger.info("%s: the first %d sentences of %s: %d documents", lang, cap.n, cap.corpus, counts["documents"])
        sums = Path(tmp) / "words.parquet"
        extraction = Extraction(batch_size=batch_size, max_length=max_length, device=device)
        extract_bert_shard(model_dir, token_path, lang, words, 0, 1, sums, Path(tmp) / "langs.parquet", extraction)
        reduce_shards([sums], out_path)


class _Words:
    """The words of each document of a token file (pieces joined), re-readable: gensim iterates it per epoch."""

    def __init__(self, token_path):
        self.token_path = token_path

    def __iter__(self):
        for _, line in read_lines(self.token_path):
            yield detokenize(line.split()).split()


def fasttext_vectors(
    token_path, lang: str, words: Sequence[str], *, dim: int, epochs: int, window: int, min_count: int, seed: int
) -> pd.DataFrame:
    """fastText (gensim, skip-gram with character n-grams, one worker: deterministic for a seed) trained on one
    language's token file as words, and the vectors of `words` it trained, in the store layout (layer 0):
    the static baseline of the word level, on the same vocabulary as the BERTs."""
    from gensim.models import FastText

    model = FastText(
        sentences=_Words(token_path),
        vector_size=dim,
        window=window,
        min_count=min_count,
        epochs=epochs,
        sg=1,
        workers=1,
        seed=seed,
    )
    trained = [w for w in words if w in model.wv.key_to_index]
    logger.info(
        "%s: fastText trained %d words; %d of the %d vocabulary words",
        token_path,
        len(model.wv),
        len(trained),
        len(words),
    )
    vectors = np.array([model.wv[w] for w in trained], dtype=np.float64).reshape(len(trained), dim)
    table = pd.DataFrame(
        {
            "lang": lang,
            "word": trained,
            "layer": np.zeros(len(trained), dtype=np.int32),
            "n": np.ones(len(trained), dtype=np.int64),
        }
    )
    return pd.concat([table, pd.DataFrame(vectors, columns=[f"d{j}" for j in range(dim)])], axis=1)
