"""Snakemake entry point: sample `size` sentences (whole documents, nested across sizes)."""

import logging

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.corpus import sample  # noqa: E402

counts = sample(snakemake.input[0], snakemake.output[0], int(snakemake.wildcards.size), snakemake.params.seed)
logging.getLogger("xling").info("sampled %s: %s", snakemake.output[0], counts)
