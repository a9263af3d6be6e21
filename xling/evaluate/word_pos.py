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
of `open_class` (the paper: noun, verb, adjective, adverb); closed class = every other tag.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Iterable

import pandas as pd

from xling.data.formats import iter_conllu, numbered_lines
from xling.data.wordpiece import normalize_word
from xling.evaluate.word_retrieval import RANK_COLUMNS

logger = logging.getLogger(__name__)

OPEN, CLOSED, UNTAGGED = "open", "closed", "untagged"
TAG_COLUMNS = ["word", "upos", "count", "occurrences"]
RESULT_COLUMNS = ["pos", "pos_class", "mrr", "n_queries"]


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


def mrr_by_pos(ranks: pd.DataFrame, tags: pd.DataFrame, open_class: Iterable[str]) -> pd.DataFrame:
    """MRR of the queries of each tag, of the open and closed classes and of the untagged queries.

    ranks: per-query ranks (xling.evaluate.word_retrieval RANK_COLUMNS, plus constant setting columns such
    as model, size, window, pair); tags: `word_tags`. Each group of the other columns (a model, size, window,
    pair, layer, ...) gets one row per tag, class and "untagged" that has queries: RESULT_COLUMNS, where
    pos_class says which class a tag row counts in (open, closed, untagged).
    """
    open_class = set(open_class)
    if ranks.empty:
        raise ValueError("no query ranks: MRR by part of speech is undefined")
    keys = [c for c in ranks.columns if c not in RANK_COLUMNS or c == "layer"]
    tagged = ranks.merge(tags[["word", "upos"]], on="word", how="left", validate="many_to_one")
    upos = tagged["upos"].fillna(UNTAGGED)
    pos_class = upos.where(upos == UNTAGGED, upos.isin(open_class).map({True: OPEN, False: CLOSED}))
    tagged = tagged.assign(pos=upos, pos_class=pos_class)
    classes = tagged[tagged["pos_class"] != UNTAGGED].assign(pos=lambda df: df["pos_class"])
    table = (pd.concat([tagged, classes], ignore_index=True)
             .groupby(keys + ["pos", "pos_class"], dropna=False, sort=True)
             .agg(mrr=("reciprocal_rank", "mean"), n_queries=("word", "size"))
             .reset_index())
    return table[keys + RESULT_COLUMNS]
