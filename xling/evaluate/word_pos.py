"""Word-retrieval MRR by part of speech (Liu et al. 2020, "What makes multilingual BERT multilingual?", Table 1).

The paper gives each vocabulary token its most common POS in OntoNotes and averages the reciprocal ranks of
the queries of each class. xling tags each pivot-language word with its most frequent universal POS (UPOS)
in the pivot's UD treebank files, counted on the surface tokens of the text, because the queries are words
as the corpus writes them:
- a word outside any multiword token counts with its own UPOS;
- a multiword token (`1-2 du` over `de` ADP + `le` DET) counts once, as its surface form, with the UPOS of
  the word of its span that heads the others (the one whose head lies outside the span: `du` is ADP); the
  syntactic words inside it are not in the text and are not counted;
- a tie between tags goes to the tag first in alphabetical order, so the result does not depend on the
  order of the files or sentences.
A query without a tag is "untagged": it gets its own row and is in neither class. Open class = the tags
of `open_class` (the paper: "lexical words (e.g. noun, verb, adjective and adverb)"); closed class = the tags of
`closed_class` (the paper: "fixed sets of words serving grammatical functions": adposition, auxiliary,
conjunctions, determiner, particle, pronoun); a tag in neither (proper noun, numeral, interjection, punctuation,
symbol, other) gets its own row with pos_class "other" and counts in neither class.

Each class row carries the bootstrap interval of its MRR over its queries (ci_low, ci_high:
the queries resampled within each pair's row, xling.evaluate.uncertainty), so the findings compare the classes
with intervals.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Iterable

import pandas as pd

from xling.data.formats import iter_conllu, numbered_lines
from xling.data.wordpiece import normalize_word
from xling.evaluate.uncertainty import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_groups
from xling.evaluate.word_retrieval import RANK_COLUMNS

logger = logging.getLogger(__name__)

OPEN, CLOSED, OTHER, UNTAGGED = "open", "closed", "other", "untagged"
TAG_COLUMNS = ["word", "upos", "count", "occurrences"]
RESULT_COLUMNS = ["pos", "pos_class", "mrr", "n_queries", "ci_low", "ci_high"]
#: the grammatical-function tags (the closed class's default; schema retrieval.pos.closed_class)
CLOSED_CLASS = ("ADP", "AUX", "CCONJ", "DET", "PART", "PRON", "SCONJ")


def _surface_tags(sentence) -> Iterable[tuple[str, str]]:
    """(surface form, UPOS) of every token of a sentence read with its multiword tokens (module docstring)."""
    words = {token["id"]: token for token in sentence if isinstance(token["id"], int)}
    inside: set[int] = set()
    for token in sentence:
        if isinstance(token["id"], tuple):
            first, _, last = token["id"]
            span = range(first, last + 1)
            inside.update(span)
            heads = [words[i] for i in span if i in words and not first <= words[i]["head"] <= last]
            yield token["form"], (heads or [words[first]])[0]["upos"]
    for i, word in words.items():
        if i not in inside:
            yield word["form"], word["upos"]


def word_tags(conllu_paths: Iterable[str | Path], lowercase: bool = False) -> pd.DataFrame:
    """Each word's most frequent UPOS over the CoNLL-U files (ties: the alphabetically first tag).

    Words are compared in the token files' form (`normalize_word`, as the retrieval queries are).
    Returns TAG_COLUMNS, one row per word: its tag, the occurrences with that tag and all its occurrences.
    A malformed file raises FormatError naming the file and line."""
    conllu_paths = list(conllu_paths)
    counts: Counter = Counter()
    for path in conllu_paths:
        for sentence in iter_conllu(numbered_lines(path), path, keep_multiword=True):
            counts.update((normalize_word(form, lowercase), upos) for form, upos in _surface_tags(sentence))
    if not counts:
        raise ValueError(f"no words in {', '.join(map(str, conllu_paths))}")
    table = pd.DataFrame([(w, t, n) for (w, t), n in counts.items()], columns=["word", "upos", "count"])
    table["occurrences"] = table.groupby("word")["count"].transform("sum")
    table = table.sort_values(["word", "count", "upos"], ascending=[True, False, True], kind="stable")
    table = table.drop_duplicates("word").reset_index(drop=True)
    logger.info("tagged %d words from %d tokens", len(table), sum(counts.values()))
    return table[TAG_COLUMNS]


def mrr_by_pos(
    ranks: pd.DataFrame,
    tags: pd.DataFrame,
    open_class: Iterable[str],
    closed_class: Iterable[str] = CLOSED_CLASS,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """MRR of the queries of each tag, of the open and closed classes and of the untagged queries.

    ranks: per-query ranks (xling.evaluate.word_retrieval RANK_COLUMNS, plus constant setting columns such
    as model, size, window, pair); tags: `word_tags`. Each group of the other columns (a model, size, window,
    pair, layer, ...) gets one row per tag, class and "untagged" that has queries: RESULT_COLUMNS, where
    pos_class says which class a tag row counts in (open, closed, other: neither, untagged), and ci_low/ci_high
    the bootstrap interval of a class row's MRR over its queries (seeded; a tag row's: NaN).
    """
    open_class, closed_class = set(open_class), set(closed_class)
    both = sorted(open_class & closed_class)
    if both:
        raise ValueError(f"tags in both the open and the closed class: {', '.join(both)}")
    if ranks.empty:
        raise ValueError("no query ranks: MRR by part of speech is undefined")
    keys = [c for c in ranks.columns if c not in RANK_COLUMNS or c == "layer"]
    tagged = ranks.merge(tags[["word", "upos"]], on="word", how="left", validate="many_to_one")
    upos = tagged["upos"].fillna(UNTAGGED)
    pos_class = upos.map(
        lambda tag: (
            UNTAGGED if tag == UNTAGGED else OPEN if tag in open_class else CLOSED if tag in closed_class else OTHER
        )
    )
    tagged = tagged.assign(pos=upos, pos_class=pos_class)
    classes = tagged[tagged["pos_class"].isin([OPEN, CLOSED])].assign(pos=lambda df: df["pos_class"])
    grouped = pd.concat([tagged, classes], ignore_index=True).groupby(
        keys + ["pos", "pos_class"], dropna=False, sort=True
    )["reciprocal_rank"]
    rows = []
    for key, ranks_of in grouped:
        low = high = float("nan")
        if key[-1] == key[-2]:  # a class row (pos = its class): the findings compare these
            interval = bootstrap_groups([ranks_of.to_numpy(float)], n_resamples=n_resamples, level=level, seed=seed)
            low, high = interval.low, interval.high
        rows.append((*key, float(ranks_of.mean()), len(ranks_of), low, high))
    table = pd.DataFrame(rows, columns=keys + RESULT_COLUMNS)
    return table[keys + RESULT_COLUMNS]
