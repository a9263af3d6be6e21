"""Anchors of a Conneau et al. (2020) ablation that change the training data, used by pretraining only:
language-specific vocabularies (no anchors: no piece id is shared; Default anchors: their union, shared strings
one id) and extra anchors (dictionary code-switching of the training text, once: per batch is
xling.models.switching). Apart from xling.models.ablation, which every job that loads a BERT reads, so that editing
them reruns the pretraining and what follows from it, nothing else."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Iterable

import numpy as np

from xling.data.words import PREFIX, word_spans, word_text
from xling.io import atomic_write, read_lines

logger = logging.getLogger(__name__)

SEPARATOR = "@"  # language prefix of a piece in another language's vocabulary ("xa@##ka"); BERT splits on '@'


# ---------------------------------------------------------------------------------------------- vocabularies


def language_blocks(
    pieces: list[str], used: dict[str, set[str]], special: Iterable[str]
) -> tuple[list[str], dict[str, list[str]]]:
    """Language-specific vocabularies cut out of one joint vocabulary (ablation.vocab.source study): the
    `special` tokens in joint order, and per language the pieces its token files use and every single character
    (so any word of the language can still be spelled), in joint-vocabulary order."""
    special = set(special)
    head = [p for p in pieces if p in special]
    return head, {
        lang: [p for p in pieces if p not in special and (p in seen or len(p.removeprefix(PREFIX)) == 1)]
        for lang, seen in used.items()
    }


def trained_blocks(
    vocabularies: dict[str, list[str]], special: Iterable[str]
) -> tuple[list[str], dict[str, list[str]]]:
    """Language-specific vocabularies trained on each language's text (ablation.vocab.source pair): the
    `special` tokens in the first vocabulary's order, and each vocabulary without them."""
    special = set(special)
    head = [p for p in next(iter(vocabularies.values())) if p in special]
    return head, {lang: [p for p in pieces if p not in special] for lang, pieces in vocabularies.items()}


def view_vocabularies(head: list[str], blocks: dict[str, list[str]], shared: bool) -> dict[str, list[str]]:
    """One id space for language-specific vocabularies, as each language's tokenizer reads it. The ids are
    `head` (shared model machinery: [CLS], [MASK], ...), then the blocks: with `shared` (Conneau et al.'s
    "Default anchors") their union, a string in several blocks once (one id: an anchor); without (no anchors)
    every block whole, so a string in two blocks gets two ids. A language's view spells its own entries as
    they are and every other id prefixed with the language it comes from ("xa@##ka", a string no text
    tokenizes to), so its text segments with its own vocabulary alone."""
    owned: list[tuple[str, str]] = []
    seen: set[str] = set()
    for lang, block in blocks.items():
        for piece in block:
            if not (shared and piece in seen):
                owned.append((lang, piece))
                seen.add(piece)
    views = {}
    for lang, block in blocks.items():
        own = set(block)
        views[lang] = head + [p if (p in own if shared else o == lang) else f"{o}{SEPARATOR}{p}" for o, p in owned]
    return views


def view_vocabularies_of(
    anchors: str, vocab_paths: list, token_paths: list, special: Iterable[str]
) -> dict[str, list[str]] | None:
    """The trainer's per-language vocabularies for an ablation's `anchors`: None where every language reads the
    one joint vocabulary (default, extra); for no anchors ("none") and Default anchors ("union") one vocabulary
    file per token file, in the same language order (trained on that language), or the joint one cut to the
    pieces each language's token files use."""
    if anchors not in ("none", "union"):
        if len(vocab_paths) != 1:
            raise ValueError(f"anchors {anchors!r} train on one joint vocabulary, not {len(vocab_paths)}")
        return None
    languages = [Path(p).name.split(".")[0] for p in token_paths]
    if len(vocab_paths) == 1:
        used = {lang: used_pieces(p) for lang, p in zip(languages, token_paths, strict=True)}
        head, blocks = language_blocks([piece for _, piece in read_lines(vocab_paths[0])], used, special)
    else:
        own = {Path(p).name.split(".")[0]: [piece for _, piece in read_lines(p)] for p in vocab_paths}
        if list(own) != languages:
            raise ValueError(f"one vocabulary per language {languages} in their order, not {list(own)}")
        head, blocks = trained_blocks(own, special)
    return view_vocabularies(head, blocks, shared=anchors == "union")


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


def code_switch(
    token_path,
    out_path,
    dictionary: dict[str, list[str]],
    pieces_of,
    *,
    rate: float,
    max_fraction: float,
    seed: int | tuple[int, ...],
) -> dict:
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
            replace = {i: pieces_of(dictionary[words[i]][int(rng.integers(len(dictionary[words[i]])))]) for i in chosen}
            new = [p for i, (s, e) in enumerate(spans) for p in replace.get(i, pieces[s:e])]
            out.write(" ".join(new) + "\n")
            counts.update(words=len(words), dictionary_words=len(candidates), switched=len(chosen))
    logger.info(
        "%s -> %s: %d of %d dictionary words switched (%.1f%%; %.1f%% of all %d words)",
        token_path,
        out_path,
        counts["switched"],
        counts["dictionary_words"],
        100 * counts["switched"] / max(counts["dictionary_words"], 1),
        100 * counts["switched"] / max(counts["words"], 1),
        counts["words"],
    )
    return dict(counts)


def translations(pairs: list[tuple[str, str]], reverse: bool) -> dict[str, list[str]]:
    """{word: its translations} of dictionary pairs (source, target); reverse: from the target side."""
    out: dict[str, list[str]] = {}
    for a, b in pairs:
        src, tgt = (b, a) if reverse else (a, b)
        if tgt not in out.setdefault(src, []):
            out[src].append(tgt)
    return out
