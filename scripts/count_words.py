"""Snakemake entry point: word frequencies per language, which define every model's vocabulary."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.wordpiece import count_words  # noqa: E402

count_words(list(snakemake.input.tokens), snakemake.output[0])
