"""Anchors of a Conneau et al. (2020) ablation that change the training data, used by pretraining only: no
anchors (language-specific vocabularies, so no piece id is shared) and extra anchors (dictionary code-switching of
the training text). Apart from xling.models.ablation, which every job that loads a BERT reads, so that editing
them reruns the pretraining and what follows from it, nothing else."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Iterable

import numpy as np

from xling.data.words import PREFIX, word_spans, word_text
from xling.io import atomic_write, read_lines

logger = logging.getLogger(__name__)

SEPARATOR = "@"  # language prefix of a piece in another language's vocabulary ("xa@##ka"); BERT splits on '@'


# ---------------------------------------------------------------------------------------------- vocabularies

def language_vocabularies(pieces: list[str], used: dict[str, set[str]], special: Iterable[str]
                          ) -> dict[str, list[str]]:
    """No anchors: language-specific vocabularies with no shared id. The union is the `special` tokens (shared
    model machinery: [CLS], [MASK], ...), then each language's block: the pieces its token files use and
    every single character (so any word of the language can still be spelled), in joint-vocabulary order.
    Returns, per language, the union as that language's tokenizer reads it: its own block as it is, every
    other block prefixed with its language ("xa@##ka", a string no text tokenizes to)."""
    special = set(special)
    head = [p for p in pieces if p in special]
    blocks = {lang: [p for p in pieces if p not in special and (p in seen or len(p.removeprefix(PREFIX)) == 1)]
              for lang, seen in used.items()}
    return {lang: head + [p if other == lang else f"{other}{SEPARATOR}{p}"
                             for other, block in blocks.items() for p in block]
            for lang in used}


def used_pieces(token_path) -> set[str]:
    """Every piece of a token file."""
    seen: set[str] = set()
    for _, line in read_lines(token_path):
        seen.update(line.split())
    return seen


def write_vocab(pieces: Iterable[str], path) -> None:
    with atomic_write(path) as handle:
        handle.writelines(p + "\n" for p in pieces)


# ---------------------------------------------------------------------------------------------- code-switching

def code_switch(token_path, out_path, dictionary: dict[str, list[str]], pieces_of, *, rate: float,
                max_fraction: float, seed: int | tuple[int, ...]) -> dict:
    """Extra anchors (Conneau et al. 2020 §4.2): each word of a token file that the dictionary has is replaced
    by one of its translations (uniformly) with probability `rate`, at most `max_fraction` of a document's
    words (the paper: of a batch's; when more are drawn, a uniform subset of that many is kept), once for the
    whole training (the paper draws again in every batch). Words are xling.data.words'; a translation is
    written as `pieces_of(word)` gives it. Deterministic for a seed. Returns counts: words, dictionary_words,
    switched."""
    rng = np.random.default_rng(seed)
    counts = Counter()
    with atomic_write(out_path) as out:
        for _, line in read_lines(token_path):
            pieces = line.split()
            spans = word_spans(pieces)
            words = [word_text(pieces[s:e]) for s, e in spans]
            candidates = [i for i, w in enumerate(words) if w in dictionary]
            chosen = [i for i in candidates if rng.random() < rate]
            cap = int(max_fraction * len(words))
            if len(chosen) > cap:
                chosen = sorted(rng.choice(chosen, size=cap, replace=False).tolist())
            replace = {i: pieces_of(dictionary[words[i]][int(rng.integers(len(dictionary[words[i]])))])
                       for i in chosen}
            new = [p for i, (s, e) in enumerate(spans) for p in replace.get(i, pieces[s:e])]
            out.write(" ".join(new) + "\n")
            counts.update(words=len(words), dictionary_words=len(candidates), switched=len(chosen))
    logger.info("%s -> %s: %d of %d dictionary words switched (%.1f%%; %.1f%% of all %d words)", token_path, out_path,
                counts["switched"], counts["dictionary_words"], 100 * counts["switched"] / max(counts["dictionary_words"], 1),
                100 * counts["switched"] / max(counts["words"], 1), counts["words"])
    return dict(counts)


def translations(pairs: list[tuple[str, str]], reverse: bool) -> dict[str, list[str]]:
    """{word: its translations} of dictionary pairs (source, target); reverse: from the target side."""
    out: dict[str, list[str]] = {}
    for a, b in pairs:
        src, tgt = (b, a) if reverse else (a, b)
        if tgt not in out.setdefault(src, []):
            out[src].append(tgt)
    return out
