"""Snakemake entry point: an ablation pair's vocabulary (joint, or one language's) sized in BPE merges."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.merges_vocab import train_merges_vocab  # noqa: E402

params = snakemake.params
train_merges_vocab(
    list(snakemake.input.corpora),
    snakemake.output[0],
    merges=params.merges,
    min_frequency=params.min_frequency,
    lowercase=params.lowercase,
    limit_alphabet=params.limit_alphabet,
)
