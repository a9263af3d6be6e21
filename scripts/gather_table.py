"""Snakemake entry point: concatenate per-setting tables into one tidy table (Parquet + CSV), each row with the
bootstrap interval of its number when its part has a per-item table."""

from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import pandas as pd  # noqa: E402

from xling.evaluate.intervals import Bootstrap, with_intervals  # noqa: E402
from xling.tables import gather  # noqa: E402

# no per-item tables for a table without per-item scores: then no part has one
items = {Path(part): path for part, path in zip(snakemake.input.tables, snakemake.input.per_item, strict=False)}
settings = snakemake.params.bootstrap  # None for a table without per-item scores
bootstrap = settings and Bootstrap(
    resamples=settings["resamples"], level=settings["level"], seed=settings["seed"], method=settings["method"]
)
scale = snakemake.params.item_scale


def intervals(part: Path, table: pd.DataFrame) -> pd.DataFrame:
    return with_intervals(table, pd.read_parquet(items[part]), scale, bootstrap) if part in items else table


gather(
    list(snakemake.input.tables),
    snakemake.output.parquet,
    snakemake.output.csv,
    marks=snakemake.params.get("marks"),
    each=intervals,
)
