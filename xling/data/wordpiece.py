"""WordPiece vocabularies and tokenized corpora shared by every model.

All models (GloVe, word2vec, BERT) see the same WordPiece tokens, so differences between them come
from the model, not from the segmentation. The tokenizer is BERT's (`tokenizers` BertWordPiece):
BERT normalizer (clean text, CJK characters split one per token), whitespace + punctuation
pre-tokenization, greedy longest-match WordPiece with "##" marking a continuation piece. Cased by
default with no accent stripping, as mBERT cased; with lowercase=True accents are stripped too, as
BERT's uncased models do. The mBERT cased `vocab.txt` loads unchanged.

How a word is represented: xling.data.words holds the one definition (a maximal run of pieces where
every piece after the first starts with "##", e.g. "Un ##beli ##eva ##bly" is the word "Unbelievably";
its text is the pieces concatenated with the "##" removed); its vector (static models and BERT alike)
is built from its pieces' vectors. A "word" is therefore BERT's pre-tokenized word: punctuation is split off
("don't" -> "don", "'", "t"), each CJK character is its own word.

Token files (`tokenize_corpus`): one DOCUMENT per line, pieces joined by single spaces, no special
tokens; the document structure is what lets static models' context windows span sentences.
"""

from __future__ import annotations

import collections
import logging
import time
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd
from tokenizers import Tokenizer, normalizers
from tokenizers.implementations import BertWordPieceTokenizer

from xling.data.words import PREFIX, word_spans, word_text
from xling.io import atomic_write, read_lines

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
UNK = "[UNK]"


def _bert_tokenizer(vocab, lowercase: bool) -> BertWordPieceTokenizer:
    return BertWordPieceTokenizer(
        vocab,
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=lowercase,
        lowercase=lowercase,
        wordpieces_prefix=PREFIX,
    )


def normalize_word(word: str, lowercase: bool) -> str:
    """A dictionary word as it appears in the token files: lowercased and accent-stripped (NFD, marks
    removed) by the tokenizer's normalizer when `lowercase`, else unchanged.

    Words in the representation store and the word counts are rebuilt from pieces, so a dictionary word
    matches them only in this form ("Über" is "uber" in a lowercased run).
    """
    if not lowercase:
        return word
    return normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=True
    ).normalize_str(word)


def train_vocab(
    corpus_paths, out_vocab, vocab_size: int, min_frequency: int, lowercase: bool = False, limit_alphabet: int = 1000
) -> None:
    """Train a BERT WordPiece vocabulary on the corpora and write it as `vocab.txt` (one token a line).

    The five BERT special tokens come first (ids 0-4). `limit_alphabet` caps the single characters
    kept (the `tokenizers` default, 1000); raise it for corpora with large scripts (CJK).

    Deterministic: `tokenizers`' trainer gives its "##c" continuation tokens ids in hash-map order, and
    merges tie-break on ids, so the same corpus can yield another vocabulary on every run
    (huggingface/tokenizers#1794). We fix the alphabet ourselves and register every "##c" up front, in
    sorted order, which leaves no id to chance.
    """
    paths = [str(p) for p in corpus_paths]
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(f"{p}: corpus for vocabulary training not found")
    start = time.monotonic()
    tokenizer = _bert_tokenizer(None, lowercase)
    alphabet = _alphabet(paths, tokenizer._tokenizer.normalizer, limit_alphabet)
    fixed_ids = SPECIAL_TOKENS + [PREFIX + c for c in alphabet]
    tokenizer.train(
        paths,
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        limit_alphabet=len(alphabet),
        initial_alphabet=alphabet,
        special_tokens=fixed_ids,
        show_progress=False,
        wordpieces_prefix=PREFIX,
    )
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.__getitem__)
    if [vocab[t] for t in tokens] != list(range(len(tokens))) or tokens[: len(SPECIAL_TOKENS)] != SPECIAL_TOKENS:
        raise RuntimeError("trained vocabulary does not start with the BERT special tokens at ids 0-4")
    with atomic_write(out_vocab) as out:
        out.write("".join(t + "\n" for t in tokens))
    logger.info(
        "trained WordPiece vocabulary of %d tokens (alphabet %d) on %d files in %.1fs -> %s",
        len(tokens),
        len(alphabet),
        len(paths),
        time.monotonic() - start,
        out_vocab,
    )


def _alphabet(paths: list[str], normalizer, limit: int) -> list[str]:
    """The `limit` most frequent non-space characters after BERT normalization (ties by code point), sorted."""
    counts: collections.Counter[str] = collections.Counter()
    for path in paths:
        lines: list[str] = []
        for _, line in read_lines(path):
            lines.append(line)
            if len(lines) == 10000:
                counts.update(normalizer.normalize_str("\n".join(lines)))
                lines = []
        counts.update(normalizer.normalize_str("\n".join(lines)))
    ranked = sorted((c for c in counts if not c.isspace()), key=lambda c: (-counts[c], c))
    return sorted(ranked[:limit])


def load_tokenizer(vocab_path, lowercase: bool = False) -> Tokenizer:
    """BERT WordPiece tokenizer for a `vocab.txt` (e.g. mBERT cased), as a `tokenizers.Tokenizer`.

    `encode(text)` adds [CLS]/[SEP]; pass `add_special_tokens=False` for bare pieces.
    """
    path = Path(vocab_path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: vocabulary not found")
    with open(path, encoding="utf-8") as handle:
        tokens = {line.rstrip("\n") for line in handle}
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise ValueError(f"{path}: vocabulary lacks the BERT special tokens {missing}")
    return _bert_tokenizer(str(path), lowercase)._tokenizer


def _iter_sentence_documents(path) -> Iterator[list[str]]:
    doc: list[str] = []
    for _, line in read_lines(path):
        if line.strip():
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def _batches(docs: Iterable[list[str]], max_sentences: int) -> Iterator[list[list[str]]]:
    batch: list[list[str]] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += len(doc)
        if size >= max_sentences:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def tokenize_corpus(corpus_path, vocab_path, out_path, lowercase: bool = False, batch_sentences: int = 20_000) -> dict:
    """Tokenize a canonical corpus into a token file: one document per line, pieces joined by " ".

    Sentences are encoded in batches by the Rust tokenizer (parallel over all cores; set
    RAYON_NUM_THREADS to limit it), without special tokens. A document whose sentences yield no
    pieces at all is left out (counted as `empty_documents`). Returns documents, sentences, tokens,
    unk (pieces that are [UNK]), empty_documents, seconds.
    """
    tokenizer = load_tokenizer(vocab_path, lowercase)
    counts = dict(documents=0, sentences=0, tokens=0, unk=0, empty_documents=0)
    start = last_log = time.monotonic()
    with atomic_write(out_path) as out:
        for batch in _batches(_iter_sentence_documents(corpus_path), batch_sentences):
            encodings = tokenizer.encode_batch([s for doc in batch for s in doc], add_special_tokens=False)
            position = 0
            lines = []
            for doc in batch:
                pieces = [t for enc in encodings[position : position + len(doc)] for t in enc.tokens]
                position += len(doc)
                counts["sentences"] += len(doc)
                if not pieces:
                    counts["empty_documents"] += 1
                    continue
                counts["tokens"] += len(pieces)
                counts["unk"] += pieces.count(UNK)
                lines.append(" ".join(pieces) + "\n")
            counts["documents"] += len(lines)
            out.write("".join(lines))
            if time.monotonic() - last_log > 30:
                last_log = time.monotonic()
                logger.info(
                    "%s: %d sentences, %d tokens (%.0f sentences/s)",
                    corpus_path,
                    counts["sentences"],
                    counts["tokens"],
                    counts["sentences"] / (last_log - start),
                )
    if counts["sentences"] == 0:
        raise ValueError(f"{corpus_path}: empty corpus")
    counts["seconds"] = round(time.monotonic() - start, 3)
    logger.info(
        "%s -> %s: %s (%.0f sentences/s)",
        corpus_path,
        out_path,
        counts,
        counts["sentences"] / max(counts["seconds"], 1e-9),
    )
    return counts


def word_pieces(tokenizer: Tokenizer, word: str) -> list[str]:
    """The WordPiece pieces of `word` (no special tokens); several words if BERT splits it (punctuation)."""
    return tokenizer.encode(word, add_special_tokens=False).tokens


def count_words(token_paths, out_parquet) -> None:
    """Count words (grouped by xling.data.words) per token file into Parquet: lang, word, count.

    `lang` is the file's stem (`tokens/1000/de.txt` -> "de"); words containing an [UNK] piece are not
    counted (their text is lost). Rows are sorted by lang, then count descending, then word.
    """
    frames = []
    seen_langs: dict[str, str] = {}
    for path in token_paths:
        lang = Path(path).stem
        if lang in seen_langs:
            raise ValueError(f"{path}: language {lang!r} already counted from {seen_langs[lang]}")
        seen_langs[lang] = str(path)
        counter: collections.Counter[str] = collections.Counter()
        unk_words = 0
        for _, line in read_lines(path):
            pieces = line.split()
            for start, end in word_spans(pieces):
                if UNK in pieces[start:end]:
                    unk_words += 1
                    continue
                counter[word_text(pieces[start:end])] += 1
        logger.info(
            "%s: %d word types, %d tokens, %d words with [UNK] skipped",
            path,
            len(counter),
            sum(counter.values()),
            unk_words,
        )
        frame = pd.DataFrame({"word": list(counter.keys()), "count": list(counter.values())})
        frame.insert(0, "lang", lang)
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"lang": [], "word": [], "count": []})
    table = table.astype({"lang": str, "word": str, "count": "int64"})
    table = table.sort_values(["lang", "count", "word"], ascending=[True, False, True], ignore_index=True)
    with atomic_write(out_parquet, "wb") as out:
        table.to_parquet(out, index=False)
