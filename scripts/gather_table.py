"""Snakemake entry point: concatenate per-setting tables into one tidy table (Parquet + CSV)."""
from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.tables import gather  # noqa: E402

gather(list(snakemake.input.tables), snakemake.output.parquet, snakemake.output.csv,
       marks=snakemake.params.get("marks"))
