"""Snakemake entry point: train the shared WordPiece vocabulary on the largest sample of every language."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.wordpiece import train_vocab  # noqa: E402

train_vocab(
    list(snakemake.input.corpora),
    snakemake.output[0],
    vocab_size=snakemake.params.vocab_size,
    min_frequency=snakemake.params.min_frequency,
    limit_alphabet=snakemake.params.limit_alphabet,
    lowercase=snakemake.params.lowercase,
)
