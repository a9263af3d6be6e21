"""The words of a language that the representation store keeps: its dictionaries' words and its most frequent
words, each in the form of the token files."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from xling.data.formats import read_dictionary
from xling.data.wordpiece import normalize_word


def dictionary_words(dictionary_paths: list[str | Path], lang: str, pivot: str, lowercase: bool = False) -> list[str]:
    """The words of `lang` that appear in the pivot-x dictionaries (source side for the pivot), in the
    form of the token files (`normalize_word`: lowercased and accent-stripped when `lowercase`)."""
    words: set[str] = set()
    for path in dictionary_paths:
        tgt = Path(path).name.split(".")[0].split("-", 1)[1]
        pairs = read_dictionary(path)
        if lang == pivot:
            words.update(src for src, _ in pairs)
        elif lang == tgt:
            words.update(t for _, t in pairs)
    return sorted({normalize_word(w, lowercase) for w in words})


def most_frequent_words(counts_path: str | Path, lang: str, n: int) -> list[str]:
    """The `n` most frequent words of `lang` in a word-counts Parquet (lang, word, count), ties by word:
    the retrieval vocabulary the store holds beyond the dictionaries' words."""
    table = pq.read_table(counts_path, columns=["word", "count"], filters=[("lang", "==", lang)])
    table = table.sort_by([("count", "descending"), ("word", "ascending")])
    return table.column("word").to_pylist()[:n]
