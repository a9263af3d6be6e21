"""Snakemake entry point: the words of one language that the store needs vectors for: the evaluation
dictionaries' words, and the retrieval vocabulary's most frequent words when retrieval.vocabulary_size > 0."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.word_lists import dictionary_words, most_frequent_words  # noqa: E402
from xling.io import atomic_write  # noqa: E402

lang, n_frequent = snakemake.wildcards.lang, snakemake.params.vocabulary_size
words = set(
    dictionary_words(
        list(snakemake.input.dictionaries), lang, snakemake.params.pivot, lowercase=snakemake.params.lowercase
    )
)
if n_frequent:
    words.update(most_frequent_words(snakemake.input.counts, lang, n_frequent))
with atomic_write(snakemake.output[0]) as handle:
    handle.write("".join(f"{w}\n" for w in sorted(words)))
