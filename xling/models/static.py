"""Static embeddings (GloVe, word2vec) trained jointly over all languages' WordPiece token files.

The static baselines see exactly the tokens BERT sees: one token file per language, one document per
line, WordPiece pieces separated by spaces. A context window therefore spans sentence boundaries
inside a document but never crosses documents (nor languages), like BERT's packed blocks.
`window` is the number of tokens on EACH side of the centre token.

Both trainers write word2vec binary format (gensim `KeyedVectors.save_word2vec_format(binary=True)`),
one vector per WordPiece piece with at least `min_count` occurrences, most frequent first.

Determinism: the seed fixes initialisation and sampling, but multi-threaded training is not
bit-reproducible (GloVe's Hogwild SGD and gensim's worker threads race on shared weights). With
threads=1 both are deterministic for a seed.

A word's vector (`word_vectors`) is the mean of its pieces' vectors, the same rule as for BERT's
hidden states (see `xling.data.wordpiece`).
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from xling.io import atomic_path, read_lines, read_word2vec_binary
from xling.data.wordpiece import UNK, load_tokenizer, word_pieces

logger = logging.getLogger(__name__)

GENSIM_MAX_LINE = 10_000  # gensim's MAX_SENTENCE_LEN: longer lines are cut into chunks of this many tokens


def _check_paths(token_paths) -> list[str]:
    paths = [str(p) for p in token_paths]
    if not paths:
        raise ValueError("no token files given")
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(f"{p}: token file not found")
    return paths


def _iter_documents(paths: list[str], label: str) -> Iterator[list[str]]:
    """Yield each line's tokens; logs progress (documents, tokens, rate) every 30 s."""
    start = last = time.monotonic()
    docs = tokens = 0
    for path in paths:
        for _, line in read_lines(path):
            doc = line.split()
            if doc:
                docs += 1
                tokens += len(doc)
                yield doc
            if time.monotonic() - last > 30:
                last = time.monotonic()
                logger.info("%s: %d documents, %d tokens (%.0f tokens/s)", label, docs, tokens, tokens / (last - start))


def _save_vectors(keys: list[str], vectors: np.ndarray, out_path) -> None:
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=vectors.shape[1], dtype=np.float32)
    kv.add_vectors(keys, vectors.astype(np.float32))
    with atomic_path(out_path) as tmp:
        kv.save_word2vec_format(str(tmp), binary=True)
    logger.info("wrote %d vectors of dimension %d -> %s", len(keys), vectors.shape[1], out_path)


class _LogLines(io.TextIOBase):
    """File-like object that turns glove-python's verbose prints into log lines with timing and ETA."""

    def __init__(self, epochs: int):
        self.epochs, self.start, self.buffer = epochs, time.monotonic(), ""

    def write(self, text: str) -> int:
        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            if line.strip():
                elapsed = time.monotonic() - self.start
                match = re.match(r"Epoch (\d+)", line)
                if match and int(match.group(1)) > 0:
                    done = int(match.group(1))
                    eta = elapsed / done * (self.epochs - done)
                    logger.info("glove: %s (%.1fs elapsed, %.1fs/epoch, ETA %.0fs)", line, elapsed, elapsed / done, eta)
                else:
                    logger.info("glove: %s (%.1fs elapsed)", line, elapsed)
        return len(text)


def train_glove(
    token_paths,
    out_path,
    dim: int,
    window: int,
    epochs: int,
    learning_rate: float,
    min_count: int,
    threads: int,
    seed: int,
    x_max: float = 100.0,
    alpha: float = 0.75,
    max_loss: float = 10.0,
) -> None:
    """Train GloVe (glove-python API, package bicleaner-ai-glove) on the token files; write word2vec binary.

    Co-occurrences are counted within `window` tokens on each side inside a document, weighted 1/distance;
    pieces rarer than `min_count` are ignored but keep their place, so window distances stay true.
    `x_max` and `alpha` are the weighting function f(x) = min(1, (x/x_max)^alpha) of the GloVe paper.
    glove-python ties word and context vectors (one matrix, no separate context vectors), so the
    vectors written are those word vectors, the standard GloVe output. Hogwild SGD over `threads`
    threads: bit-deterministic only with threads=1.
    """
    from glove import Corpus, Glove

    paths = _check_paths(token_paths)
    start = time.monotonic()
    counts: collections.Counter[str] = collections.Counter()
    for doc in _iter_documents(paths, "glove vocabulary"):
        counts.update(doc)
    vocab = [t for t, c in sorted(counts.items(), key=lambda tc: (-tc[1], tc[0])) if c >= min_count]
    if not vocab:
        raise ValueError(f"{', '.join(paths)}: no token occurs at least min_count={min_count} times")
    dictionary = {token: i for i, token in enumerate(vocab)}
    logger.info(
        "glove: %d of %d piece types have count >= %d (%.1fs)",
        len(vocab),
        len(counts),
        min_count,
        time.monotonic() - start,
    )
    del counts

    corpus = Corpus(dictionary)
    corpus.fit(_iter_documents(paths, "glove co-occurrences"), window=window, ignore_missing=True)
    logger.info(
        "glove: co-occurrence matrix %d x %d with %d entries (%.1fs)",
        len(vocab),
        len(vocab),
        corpus.matrix.nnz,
        time.monotonic() - start,
    )
    if corpus.matrix.nnz == 0:
        raise ValueError(f"{', '.join(paths)}: no co-occurrences within window={window}")

    model = Glove(
        no_components=dim,
        learning_rate=learning_rate,
        alpha=alpha,
        max_count=x_max,
        max_loss=max_loss,
        random_state=seed,
    )
    with contextlib.redirect_stdout(_LogLines(epochs)):
        model.fit(corpus.matrix, epochs=epochs, no_threads=threads, verbose=True)
    logger.info("glove: trained %d epochs (%.1fs total)", epochs, time.monotonic() - start)
    _save_vectors(vocab, model.word_vectors, out_path)


def _corpus_file(paths: list[str], directory: Path) -> tuple[str, bool, dict]:
    """One file for gensim's corpus_file mode: the token file itself, or a concatenation (temporary).

    Also counts documents, tokens and documents longer than gensim's line limit.
    """
    stats = dict(documents=0, tokens=0, long_documents=0)
    single = len(paths) == 1
    out = None
    if not single:
        fd, name = tempfile.mkstemp(prefix=".word2vec-corpus.", suffix=".tmp", dir=directory)
        out = os.fdopen(fd, "w", encoding="utf-8")
    try:
        for path in paths:
            for _, line in read_lines(path):
                n = len(line.split())
                if n:
                    stats["documents"] += 1
                    stats["tokens"] += n
                    stats["long_documents"] += n > GENSIM_MAX_LINE
                    if out is not None:
                        out.write(line + "\n")
    except BaseException:
        if out is not None:
            out.close()
            os.unlink(name)
        raise
    if out is not None:
        out.close()
        return name, True, stats
    return paths[0], False, stats


def train_word2vec(
    token_paths,
    out_path,
    dim: int,
    window: int,
    epochs: int,
    min_count: int,
    sg: int,
    negative: int,
    threads: int,
    seed: int,
    sample: float = 1e-3,
    alpha: float = 0.025,
    min_alpha: float = 0.0001,
) -> None:
    """Train gensim Word2Vec in corpus_file mode (`workers=threads`) on the token files; write word2vec binary.

    Several token files are concatenated into one temporary file (corpus_file takes one path).
    gensim cuts lines longer than 10,000 tokens into 10,000-token chunks, so for such (rare, logged)
    documents the window does not span a chunk boundary. gensim's dynamic window (uniformly shrunk
    per centre token) is kept. Multi-worker training is not bit-deterministic; threads=1 is.
    """
    from gensim.models import Word2Vec

    paths = _check_paths(token_paths)
    out_dir = Path(out_path).resolve().parent
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    corpus_file, temporary, stats = _corpus_file(paths, out_dir)
    try:
        logger.info("word2vec: %d documents, %d tokens from %d files", stats["documents"], stats["tokens"], len(paths))
        if stats["long_documents"]:
            logger.warning(
                "word2vec: %d documents exceed gensim's %d-token line limit and are trained in chunks",
                stats["long_documents"],
                GENSIM_MAX_LINE,
            )
        if stats["tokens"] == 0:
            raise ValueError(f"{', '.join(paths)}: no tokens")
        model = Word2Vec(
            corpus_file=corpus_file,
            vector_size=dim,
            window=window,
            min_count=min_count,
            sg=sg,
            hs=0,
            negative=negative,
            sample=sample,
            alpha=alpha,
            min_alpha=min_alpha,
            epochs=epochs,
            workers=threads,
            seed=seed,
        )
    except RuntimeError as error:  # gensim's message for an empty vocabulary
        raise ValueError(f"{', '.join(paths)}: word2vec failed (min_count={min_count}): {error}") from error
    finally:
        if temporary:
            os.unlink(corpus_file)
    logger.info("word2vec: %d vectors trained in %.1fs", len(model.wv), time.monotonic() - start)
    _save_vectors(list(model.wv.index_to_key), model.wv.vectors, out_path)


def word_vectors(
    vectors_path, vocab_path, words_by_lang: dict[str, list[str]], lowercase: bool = False
) -> pd.DataFrame:
    """Static word vectors in the representation-store layout (layer 0, n=1, means).

    Each word is tokenized with the WordPiece tokenizer of `vocab_path`; its vector is the mean of its
    pieces' vectors (float64). A word with no pieces, an [UNK] piece, or a piece without a vector
    (below min_count) is absent. Duplicate words of a language appear once.
    Columns: lang, word, layer (int32, 0), n (int64, 1), d0..d{H-1} (float64).
    """
    keys, vectors = read_word2vec_binary(vectors_path)
    tokenizer = load_tokenizer(vocab_path, lowercase)
    index = {key: row for row, key in enumerate(keys)}
    matrix = vectors.astype(np.float64)
    langs, words, rows = [], [], []
    for lang, lang_words in words_by_lang.items():
        found = missing = 0
        for word in dict.fromkeys(lang_words):
            pieces = word_pieces(tokenizer, word)
            if not pieces or UNK in pieces or any(p not in index for p in pieces):
                missing += 1
                continue
            found += 1
            langs.append(lang)
            words.append(word)
            rows.append(matrix[[index[p] for p in pieces]].mean(axis=0))
        logger.info("%s: %d words with vectors, %d absent", lang, found, missing)
    dim = vectors.shape[1]
    values = np.vstack(rows) if rows else np.zeros((0, dim))
    frame = pd.DataFrame(
        {
            "lang": pd.Series(langs, dtype=object),
            "word": pd.Series(words, dtype=object),
            "layer": np.zeros(len(words), dtype=np.int32),
            "n": np.ones(len(words), dtype=np.int64),
        }
    )
    dims = pd.DataFrame(values, columns=[f"d{i}" for i in range(dim)], dtype=np.float64)
    return pd.concat([frame, dims], axis=1)
