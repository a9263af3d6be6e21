"""Snakemake entry point: train GloVe or Word2Vec (the rule name says which) on the token files."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.models import static  # noqa: E402

train = {"glove": static.train_glove, "word2vec": static.train_word2vec}[snakemake.rule]
train(
    list(snakemake.input.tokens),
    snakemake.output[0],
    window=snakemake.params.side_window,
    threads=snakemake.threads,
    **snakemake.params.hp,
)
