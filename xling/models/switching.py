"""Extra anchors drawn anew in every batch (Conneau et al. 2020 §4.2, "Extra anchors": "in each batch, at most 15 %
of the words are replaced by a translation"; ablation.code_switch.sampling batch): the trainer code-switches the
blocks of each step before masking them. Once-before-training code-switching of the token files is
xling.models.anchors.code_switch."""

from __future__ import annotations

import json

import numpy as np

from xling.data.words import PREFIX
from xling.io import atomic_write
from xling.plan.seeds import seed_of


def write_table(path, translations: dict[str, dict[str, list[str]]], pieces_of) -> dict:
    """The trainer's translations table as JSON: per language, each dictionary word's pieces (joined by " ") ->
    its translations' pieces, as `pieces_of(word)` segments them. Returns the words per language."""
    table = {
        lang: {" ".join(pieces_of(word)): [" ".join(pieces_of(t)) for t in targets] for word, targets in words.items()}
        for lang, words in translations.items()
    }
    with atomic_write(path) as handle:
        json.dump(table, handle, ensure_ascii=False, sort_keys=True)
    return {lang: len(words) for lang, words in table.items()}


class BatchSwitch:
    """Code-switches a batch of blocks ([CLS] ids [SEP]) of one language, a pure function of (seed, step): each
    word (xling.data.words: a piece, then its "##" pieces) the table has is replaced with probability `rate` by one
    of its translations, drawn uniformly; when more than `max_fraction` of the batch's words are drawn, a uniform
    subset of that many is kept. The last word of a block may be cut by the packing and is never switched. A
    switched block is cut back to its length, or ends in [SEP] and [PAD]s (the attention mask skips them).
    Words are found in numpy (a polynomial hash of their ids, checked against the word itself when chosen), so
    a batch of 256 blocks of 256 costs milliseconds, not a Python loop over its words."""

    def __init__(
        self,
        table: dict[str, dict[str, list[str]]],
        vocab: dict[str, int],
        *,
        rate: float,
        max_fraction: float,
        seed: int,
    ):
        self.continuation = np.zeros(max(vocab.values()) + 1, dtype=bool)
        for piece, i in vocab.items():
            self.continuation[i] = piece.startswith(PREFIX)
        self.pad, self.sep = vocab["[PAD]"], vocab["[SEP]"]
        self.rate, self.max_fraction, self.seed = rate, max_fraction, seed
        self.table: dict[str, dict[int, tuple[tuple[int, ...], list[tuple[int, ...]]]]] = {}
        self.hashes: dict[str, np.ndarray] = {}
        for lang, words in table.items():
            entries = self.table.setdefault(lang, {})
            for word, targets in words.items():
                ids, options = _ids(word, vocab), [t for t in (_ids(t, vocab) for t in targets) if t]
                if ids and options:
                    entries[_hash(ids)] = (ids, options)
            self.hashes[lang] = np.fromiter(entries, dtype=np.uint64, count=len(entries))

    def __call__(self, blocks: np.ndarray, language: str, step: int) -> tuple[np.ndarray, dict]:
        """(switched blocks, counts: words, candidates, switched) of step `step`'s blocks in `language`."""
        rng = np.random.default_rng(seed_of(self.seed, "switch", step))
        body = blocks[:, 1:-1]
        rows, length = body.shape
        flat = body.reshape(-1)
        starts = np.flatnonzero(~self.continuation[flat])
        next_start = np.append(starts[1:], flat.size)
        complete = next_start < (starts // length + 1) * length  # another word follows in the same block
        words = int(complete.sum())
        table = self.table.get(language, {})
        candidates = np.zeros(0, dtype=np.int64)
        if table and len(starts):
            word_of = np.cumsum(~self.continuation[flat]) - 1
            inside = np.arange(flat.size) - starts[np.maximum(word_of, 0)]
            terms = (flat.astype(np.uint64) + np.uint64(1)) * _powers(length)[np.minimum(inside, length)]
            hashes = np.add.reduceat(terms, starts)
            candidates = np.flatnonzero(complete & np.isin(hashes, self.hashes[language]))
        chosen = candidates[rng.random(len(candidates)) < self.rate]
        cap = int(self.max_fraction * words)
        if len(chosen) > cap:
            chosen = np.sort(rng.choice(chosen, size=cap, replace=False))
        picks = rng.random(len(chosen))
        out, switched, by_row = blocks.copy(), 0, {}
        for index, pick in zip(chosen.tolist(), picks.tolist(), strict=True):
            start, end = int(starts[index]), int(next_start[index])
            ids, options = table.get(int(hashes[index]), ((), []))
            if tuple(flat[start:end].tolist()) != ids:  # a hash collision: not this word
                continue
            by_row.setdefault(start // length, []).append(
                (start % length, end - start, options[int(pick * len(options))])
            )
            switched += 1
        for row, spans in by_row.items():
            parts, last = [], 0
            for offset, size, translation in spans:
                parts += [body[row, last:offset], np.asarray(translation, dtype=body.dtype)]
                last = offset + size
            new = np.concatenate(parts + [body[row, last:]])[:length]
            out[row, 1 : 1 + len(new)] = new
            out[row, 1 + len(new)] = self.sep
            out[row, 2 + len(new) :] = self.pad
        return out, {"words": words, "candidates": len(candidates), "switched": switched}


_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


def _powers(length: int) -> np.ndarray:
    """MULTIPLIER ** k modulo 2 ** 64 for k = 0 .. length."""
    out = np.ones(length + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(1, length + 1):
            out[k] = out[k - 1] * _MULTIPLIER
    return out


def _hash(ids: tuple[int, ...]) -> int:
    """The polynomial hash BatchSwitch computes in numpy, of one word's ids (modulo 2 ** 64)."""
    return sum((i + 1) * pow(int(_MULTIPLIER), k, 1 << 64) for k, i in enumerate(ids)) % (1 << 64)


def _ids(pieces: str, vocab: dict[str, int]) -> tuple[int, ...] | None:
    """The ids of pieces joined by " ", None where one is not in the vocabulary."""
    ids = tuple(vocab.get(p, -1) for p in pieces.split())
    return ids if ids and -1 not in ids else None
