"""Snakemake entry point: the words of one language that the evaluation dictionaries need vectors for."""
from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.io import atomic_write  # noqa: E402
from xling.tables import dictionary_words  # noqa: E402

words = dictionary_words(list(snakemake.input.dictionaries), snakemake.wildcards.lang, snakemake.params.pivot)
with atomic_write(snakemake.output[0]) as handle:
    handle.write("".join(f"{w}\n" for w in words))
