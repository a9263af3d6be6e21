"""Snakemake entry point: fastText trained on one language's sample alone, its vocabulary words' vectors (the
static baseline of the monolingual word-level alignment)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.represent.word_spaces import fasttext_vectors, vocabulary  # noqa: E402
from xling.tables import write_parquet  # noqa: E402

p, lang = snakemake.params, snakemake.wildcards.lang
words = vocabulary(snakemake.input.counts, lang, p.vocabulary["min_count"], p.vocabulary["vocabulary_size"])
write_parquet(
    fasttext_vectors(snakemake.input.tokens, lang, words, min_count=p.vocabulary["min_count"], **p.fasttext),
    snakemake.output[0],
)
