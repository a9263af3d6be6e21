"""Snakemake entry point: judge the papers' claims on the run's tables (the findings table, Parquet + CSV)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.evaluate.findings import TABLES, criteria_from_config, write_findings  # noqa: E402

write_findings(
    {key: snakemake.input[key] for key in TABLES if key in snakemake.input.keys()},
    snakemake.output.parquet,
    snakemake.output.csv,
    pivot=snakemake.params.pivot,
    criteria=criteria_from_config(
        snakemake.params.settings,
        snakemake.params.bootstrap,
        snakemake.params.shown,
        snakemake.params.aligned_langs,
        snakemake.params.xnli_mds_freeze,
    ),
)
