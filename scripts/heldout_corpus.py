"""Snakemake entry point: the BERTs' dev text, held out from every sample (xling.data.heldout)."""

import logging

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.heldout import sample_heldout  # noqa: E402

counts = sample_heldout(
    snakemake.input[0],
    snakemake.output[0],
    snakemake.params.sentences,
    snakemake.params.seed,
    snakemake.params.disjoint_from,
)
logging.getLogger("xling").info("held out %s: %s", snakemake.output[0], counts)
