"""Snakemake entry point: normalize and deduplicate one language's corpus."""

import logging

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.corpus import prepare  # noqa: E402

counts = prepare(
    snakemake.input[0], snakemake.output[0], normalization=snakemake.params.normalization, dedup=snakemake.params.dedup
)
logging.getLogger("xling").info("prepared %s: %s", snakemake.input[0], counts)
