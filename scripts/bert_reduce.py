"""Snakemake entry point: DuckDB reduction of the per-shard sums to means (reduce step)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.represent.store import reduce_shards  # noqa: E402

reduce_shards(list(snakemake.input.words), snakemake.output.words)
reduce_shards(list(snakemake.input.langs), snakemake.output.langs)
