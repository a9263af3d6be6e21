"""Pretraining data for the MLM trainer: the vocabulary, token files packed into blocks, a seeded batch order
and 80/10/10 dynamic masking, each a pure function of (seed, step) so a resumed run sees the same batches."""

from __future__ import annotations

import logging
from array import array
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from xling.io import read_lines
from xling.plan.seeds import seed_of

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab(vocab_path) -> dict[str, int]:
    """vocab.txt → {piece: id} (id = 0-based line number); the BERT special tokens must be present."""
    vocab: dict[str, int] = {}
    for lineno, piece in read_lines(vocab_path):
        if not piece:
            raise ValueError(f"{vocab_path}:{lineno}: empty line in vocabulary")
        if piece in vocab:
            raise ValueError(f"{vocab_path}:{lineno}: duplicate piece {piece!r} (first on line {vocab[piece] + 1})")
        vocab[piece] = lineno - 1
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise ValueError(f"{vocab_path}: special token(s) {missing} missing from the vocabulary")
    return vocab


def language_of(path) -> str:
    """Language code of a token file: its name up to the first dot (tokens/1000/en.txt → en)."""
    return Path(path).name.split(".")[0]


def _language_ids(path, vocab: dict[str, int], separator: int | None = None) -> np.ndarray:
    """All wordpiece ids of one token file, documents concatenated in file order; `separator` (an id) after each."""
    ids = array("q")
    get = vocab.get
    n_docs = n_empty = 0
    for lineno, line in read_lines(path):
        if not line:
            n_empty += 1
            continue
        pieces = line.split(" ")
        if "" in pieces:
            raise ValueError(f"{path}:{lineno}: empty wordpiece (pieces must be separated by single spaces)")
        ids.extend([get(p, -1) for p in pieces])
        if separator is not None:
            ids.append(separator)
        n_docs += 1
    out = np.frombuffer(ids, dtype=np.int64).copy() if len(ids) else np.zeros(0, dtype=np.int64)
    unknown = int((out == -1).sum())
    out[out == -1] = vocab["[UNK]"]
    log = logger.warning if unknown else logger.info
    log(
        "%s: %d documents (%d empty lines skipped), %d pieces, %d not in the vocabulary → [UNK] (%.3f%%)",
        path,
        n_docs,
        n_empty,
        len(out) - (n_docs if separator is not None else 0),
        unknown,
        100.0 * unknown / max(len(out), 1),
    )
    return out


#: The block format that trains as before the `blocks` setting existed: a plain stream, every block full.
PLAIN_BLOCKS = {"sentence_separator": False, "short_seq_prob": 0.0}


def block_lengths(n_ids: int, body: int, short_seq_prob: float, seed: int) -> np.ndarray:
    """How many stream ids each block takes, in order, until the stream runs out (its remainder dropped): `body`,
    or with probability short_seq_prob a length drawn uniformly from 2..body (BERT's create_pretraining_data:
    short_seq_prob 0.1, target length randint(2, max_num_tokens)). A pure function of its arguments."""
    if short_seq_prob <= 0:
        return np.full(n_ids // body, body, dtype=np.int64)
    rng = np.random.default_rng(seed)
    lengths, taken = [], 0
    while True:
        short = rng.random() < short_seq_prob
        length = int(rng.integers(2, body + 1)) if short and body > 2 else body
        if taken + length > n_ids:
            break
        lengths.append(length)
        taken += length
    return np.asarray(lengths, dtype=np.int64)


def load_blocks(
    token_paths: Sequence,
    vocab_path,
    window: int,
    vocabs: dict[str, dict[str, int]] | None = None,
    blocks: dict | None = None,
    seed: int = 1,
) -> tuple[torch.Tensor, list[str]]:
    """Pack each language's documents into blocks of `window` ids: [CLS] + up to window-2 stream ids + [SEP].

    Like HF run_mlm's group_texts, documents are concatenated and cut into blocks, but a block never mixes two
    languages; each language's remainder is dropped. `blocks` (the `bert.blocks` setting, PLAIN_BLOCKS when None):
    sentence_separator puts [SEP] after every document (line) in the stream, so blocks hold [SEP] mid-sequence as
    fine-tuning's sentence pairs do (BERT's segments, XLM's </s>); short_seq_prob makes that share of blocks
    shorter (a length drawn from `seed` and the language), padded with [PAD] after their [SEP], so the model also
    sees short sequences. Without either, every block is full and every position trains.
    vocabs: a language's own {piece: id} in place of vocab_path's (language-specific vocabularies).
    Returns (LongTensor [n_blocks, window], language code per block), languages in `token_paths` order.
    """
    window = int(window)
    if window < 3:
        raise ValueError(f"window must be >= 3 ([CLS] + at least one piece + [SEP]), not {window}")
    fmt = {**PLAIN_BLOCKS, **(blocks or {})}
    if set(fmt) != set(PLAIN_BLOCKS):
        raise ValueError(
            f"unknown block setting(s) {sorted(set(fmt) - set(PLAIN_BLOCKS))}; known: {sorted(PLAIN_BLOCKS)}"
        )
    if not 0 <= float(fmt["short_seq_prob"]) <= 1:
        raise ValueError(f"blocks.short_seq_prob must be in [0, 1], not {fmt['short_seq_prob']}")
    vocab = next(iter(vocabs.values())) if vocabs else read_vocab(vocab_path)  # [CLS], [SEP]: every view's ids
    cls, sep, pad = vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"]
    langs = [language_of(p) for p in token_paths]
    if len(set(langs)) != len(langs):
        raise ValueError(f"two token files for the same language in {list(map(str, token_paths))}")
    body = window - 2
    chunks, languages = [], []
    for path, lang in zip(token_paths, langs, strict=True):
        ids = _language_ids(path, (vocabs or {}).get(lang, vocab), sep if fmt["sentence_separator"] else None)
        lengths = block_lengths(len(ids), body, float(fmt["short_seq_prob"]), seed_of(seed, "short blocks", lang))
        n = len(lengths)
        if n == 0:
            logger.warning("%s: %d pieces < one block of %d; language %s gets no block", path, len(ids), body, lang)
            continue
        block = np.full((n, window), pad, dtype=np.int64)
        block[:, 0] = cls
        if (lengths == body).all():
            block[:, 1:-1] = ids[: n * body].reshape(n, body)
        else:
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            for row, (start, length) in enumerate(zip(starts, lengths, strict=True)):
                block[row, 1 : 1 + length] = ids[start : start + length]
        block[np.arange(n), lengths + 1] = sep
        chunks.append(block)
        languages += [lang] * n
        logger.info(
            "%s: %d blocks of %d tokens, %d shorter (%d trailing pieces dropped)",
            lang,
            n,
            window,
            int((lengths < body).sum()),
            len(ids) - int(lengths.sum()),
        )
    if not chunks:
        raise ValueError(f"no block of {window} tokens in {list(map(str, token_paths))}")
    return torch.from_numpy(np.concatenate(chunks)), languages


class BatchOrder:
    """Which blocks step t uses: positions [t*B, (t+1)*B) of the concatenated per-epoch permutations."""

    def __init__(self, n_blocks: int, batch_size: int, seed: int):
        self.n, self.batch, self.seed = n_blocks, batch_size, seed
        self._epoch, self._perm = -1, None

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, index in that epoch's permutation) after `step` completed steps."""
        return divmod(step * self.batch, self.n)

    def _permutation(self, epoch: int) -> torch.Tensor:
        if epoch != self._epoch:
            g = torch.Generator().manual_seed(seed_of(self.seed, "epoch", epoch))
            self._epoch, self._perm = epoch, torch.randperm(self.n, generator=g)
        return self._perm

    def indices(self, step: int) -> torch.Tensor:
        """Global block indices of (0-based) step `step`."""
        start, parts, need = step * self.batch, [], self.batch
        while need:
            epoch, index = divmod(start, self.n)
            take = min(self.n - index, need)
            parts.append(self._permutation(epoch)[index : index + take])
            start, need = start + take, need - take
        return torch.cat(parts)


class LanguageOrder:
    """Batches of one language (Conneau et al. 2020; Lample & Conneau 2019): step t's language is drawn with
    probability proportional to (its share) ** exponent, from a stream seeded by `seed`, and its blocks are the
    next batch of that language's own BatchOrder. The share is of `sentences` ({language: its training
    sentences}, the paper's "fraction of sentences in each training corpus") or, without them, of the blocks.
    A pure function of (seed, step)."""

    def __init__(
        self,
        languages: Sequence[str],
        batch_size: int,
        seed: int,
        exponent: float,
        steps: int,
        sentences: dict[str, int] | None = None,
    ):
        self.codes = list(dict.fromkeys(languages))
        per_block = np.asarray(languages)
        self.blocks = {c: torch.from_numpy(np.flatnonzero(per_block == c)) for c in self.codes}
        if sentences is not None and set(sentences) != set(self.codes):
            raise ValueError(f"sentences name languages {sorted(sentences)}, the blocks' are {sorted(self.codes)}")
        counts = [sentences[c] if sentences is not None else len(self.blocks[c]) for c in self.codes]
        share = np.array(counts, dtype=np.float64) / sum(counts)
        self.probabilities = share**exponent / (share**exponent).sum()
        draws = np.random.default_rng(seed_of(seed, "language")).random(steps)
        self.choices = np.minimum(
            np.searchsorted(np.cumsum(self.probabilities), draws, side="right"), len(self.codes) - 1
        )
        self.nth = np.zeros(steps, dtype=np.int64)  # how many earlier steps had the same language
        for i in range(len(self.codes)):
            same = np.flatnonzero(self.choices == i)
            self.nth[same] = np.arange(len(same))
        self.orders = {c: BatchOrder(len(self.blocks[c]), batch_size, seed_of(seed, "blocks", c)) for c in self.codes}
        self.n, self.batch = len(languages), batch_size

    def language(self, step: int) -> str:
        return self.codes[int(self.choices[step])]

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, index) of the blocks of all languages taken after `step` steps (for the logs)."""
        return divmod(step * self.batch, self.n)

    def indices(self, step: int) -> torch.Tensor:
        """Global block indices of step `step`, all of `language(step)`."""
        code = self.language(step)
        return self.blocks[code][self.orders[code].indices(int(self.nth[step]))]


def mask_tokens(
    input_ids: torch.Tensor,
    special_ids: Sequence[int],
    mask_id: int,
    vocab_size: int,
    mlm_probability: float,
    generator: torch.Generator,
    candidates: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """HF DataCollatorForLanguageModeling masking: each non-special token is chosen with mlm_probability;
    of the chosen, 80% → [MASK], 10% → a random id of the vocabulary (of `candidates` when given: the
    batch language's ids, where embeddings are language-specific), 10% kept. Labels are -100 elsewhere.
    Returns new (inputs, labels); the argument is not modified."""
    inputs, labels = input_ids.clone(), input_ids.clone()
    prob = torch.full(labels.shape, mlm_probability)
    prob.masked_fill_(torch.isin(labels, torch.as_tensor(list(special_ids))), 0.0)
    masked = torch.bernoulli(prob, generator=generator).bool()
    labels[~masked] = -100
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8), generator=generator).bool() & masked
    inputs[replaced] = mask_id
    randomized = torch.bernoulli(torch.full(labels.shape, 0.5), generator=generator).bool() & masked & ~replaced
    if candidates is None:
        words = torch.randint(vocab_size, labels.shape, dtype=torch.long, generator=generator)
    else:
        words = candidates[torch.randint(len(candidates), labels.shape, dtype=torch.long, generator=generator)]
    inputs[randomized] = words[randomized]
    return inputs, labels
