"""Snakemake entry point: fastText vectors of one language on the run's corpus, in the word pairs' tokenization
(the sentence-augmented fastText baseline of Cao et al. 2020)."""

import functools

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.alignment import tokenize  # noqa: E402
from xling.represent.fasttext import train_fasttext  # noqa: E402

train_fasttext(
    snakemake.input.corpus,
    snakemake.output[0],
    functools.partial(tokenize, lang=snakemake.wildcards.lang, method=snakemake.params.tokenizer),
    threads=snakemake.threads,
    **snakemake.params.hparams,
)
