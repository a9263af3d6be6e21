"""A small synthetic spec for tests that need a few files of one kind: the sizes they vary are arguments, the
files they do not read are as small as the generator allows."""

from __future__ import annotations


def small_spec(
    *,
    seed: int,
    sentences: int,
    concepts: int,
    topics: int,
    dictionary: tuple[int, int, int],
    parallel_sentences: int,
    ud_sentences: dict[str, int],
    languages: dict[str, dict],
) -> dict:
    """dictionary: (train start, train end = test start, test end)."""
    start, middle, end = dictionary
    return {
        "seed": seed,
        "sentences": sentences,
        "document_length": [2, 6],
        "concepts": concepts,
        "topics": topics,
        "dictionary": {"train": [start, middle], "test": [middle, end]},
        "parallel_sentences": parallel_sentences,
        "ud_sentences": ud_sentences,
        "tatoeba_sentences": 10,
        "bucc_sentences": {"dev": 40, "test": 40},
        "xnli_pairs": {"train": 9, "dev": 3, "test": 3},
        "ner_sentences": {"train": 5, "dev": 5, "test": 5},
        "languages": languages,
    }
