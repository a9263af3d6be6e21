"""Snakemake entry point: WordPiece-tokenize one sampled corpus (one document per line)."""

import logging

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.wordpiece import tokenize_corpus  # noqa: E402

counts = tokenize_corpus(
    snakemake.input.corpus, snakemake.input.vocab, snakemake.output[0], lowercase=snakemake.params.lowercase
)
logging.getLogger("xling").info("tokenized %s: %s", snakemake.input.corpus, counts)
