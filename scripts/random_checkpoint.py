"""Snakemake entry point: write one language.random_models checkpoint (a random BERT on the run's vocabulary)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.models.stand_in import save_random_bert  # noqa: E402

save_random_bert(snakemake.input.vocab, snakemake.output[0], snakemake.params.settings)
