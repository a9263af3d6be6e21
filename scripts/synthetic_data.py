"""Snakemake entry point: write the synthetic languages in the canonical data layout."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.synthetic import generate  # noqa: E402

generate(snakemake.params.spec, snakemake.params.languages, snakemake.params.out_dir)
