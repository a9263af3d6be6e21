"""Snakemake entry point: fetch one file of resources/sources.yaml (download or pre-staged copy)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.sources import Sources, fetch  # noqa: E402

sources = Sources(snakemake.config["data"])
ref = sources.fetch_table(snakemake.config["languages"])[snakemake.output[0]]
fetch(ref, **sources.fetch_options())
