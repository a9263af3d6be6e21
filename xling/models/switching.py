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
    table = {lang: {" ".join(pieces_of(word)): [" ".join(pieces_of(t)) for t in targets]
                    for word, targets in words.items()}
             for lang, words in translations.items()}
    with atomic_write(path) as handle:
        json.dump(table, handle, ensure_ascii=False, sort_keys=True)
    return {lang: len(words) for lang, words in table.items()}


class BatchSwitch:
    """Code-switches a batch of blocks ([CLS] ids [SEP]) of one language, a pure function of (seed, step): each
    word (xling.data.words: a piece, then its "##" pieces) the table has is replaced with probability `rate` by one
    of its translations, drawn uniformly; when more than `max_fraction` of the batch's words are drawn, a uniform
    subset of that many is kept. The last word of a block may be cut by the packing and is never switched. A
    switched block is cut back to its length, or ends in [SEP] and [PAD]s (the attention mask skips them)."""

    def __init__(self, table: dict[str, dict[str, list[str]]], vocab: dict[str, int], *, rate: float,
                 max_fraction: float, seed: int):
        self.continuation = np.zeros(max(vocab.values()) + 1, dtype=bool)
        for piece, i in vocab.items():
            self.continuation[i] = piece.startswith(PREFIX)
        self.pad, self.sep = vocab["[PAD]"], vocab["[SEP]"]
        self.rate, self.max_fraction, self.seed = rate, max_fraction, seed
        self.table: dict[str, dict[tuple[int, ...], list[tuple[int, ...]]]] = {}
        for lang, words in table.items():
            entries = self.table.setdefault(lang, {})
            for word, targets in words.items():
                ids, options = _ids(word, vocab), [t for t in (_ids(t, vocab) for t in targets) if t]
                if ids and options:
                    entries[ids] = options

    def __call__(self, blocks: np.ndarray, language: str, step: int) -> tuple[np.ndarray, dict]:
        """(switched blocks, counts: words, candidates, switched) of step `step`'s blocks in `language`."""
        rng = np.random.default_rng(seed_of(self.seed, "switch", step))
        table = self.table.get(language, {})
        words, candidates = 0, []
        for row, block in enumerate(blocks):
            body = block[1:-1]
            starts = np.flatnonzero(~self.continuation[body]).tolist()
            ends = starts[1:]  # the last word may run past the block: not a candidate
            words += len(ends)
            candidates += [(row, s, e) for s, e in zip(starts, ends) if tuple(body[s:e].tolist()) in table]
        chosen = [c for c in candidates if rng.random() < self.rate]
        cap = int(self.max_fraction * words)
        if len(chosen) > cap:
            chosen = [chosen[i] for i in sorted(rng.choice(len(chosen), size=cap, replace=False).tolist())]
        out = blocks.copy()
        by_row: dict[int, list[tuple[int, int]]] = {}
        for row, s, e in chosen:
            by_row.setdefault(row, []).append((s, e))
        for row, spans in by_row.items():
            body, parts, last = blocks[row, 1:-1], [], 0
            for s, e in spans:
                options = table[tuple(body[s:e].tolist())]
                parts += [body[last:s], np.asarray(options[int(rng.integers(len(options)))], dtype=body.dtype)]
                last = e
            new = np.concatenate(parts + [body[last:]])[: len(body)]
            out[row, 1 : 1 + len(new)] = new
            out[row, 1 + len(new)] = self.sep
            out[row, 2 + len(new):] = self.pad
        return out, {"words": words, "candidates": len(candidates), "switched": len(chosen)}


def _ids(pieces: str, vocab: dict[str, int]) -> tuple[int, ...] | None:
    """The ids of pieces joined by " ", None where one is not in the vocabulary."""
    ids = tuple(vocab.get(p, -1) for p in pieces.split())
    return ids if ids and -1 not in ids else None
