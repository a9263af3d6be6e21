"""Snakemake entry point: word-retrieval MRR by part of speech, from every model's per-query ranks and the pivot's
UD treebank (one table, Parquet + CSV)."""

import pandas as pd

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.evaluate.word_pos import mrr_by_pos, word_tags  # noqa: E402
from xling.io import atomic_write  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402

params = snakemake.params
tags = word_tags(snakemake.input.treebanks, lowercase=params.lowercase)
ranks = pd.concat([pd.read_parquet(path) for path in snakemake.input.ranks], ignore_index=True)
table = with_settings(
    mrr_by_pos(ranks, tags, params.open_class, params.closed_class, **params.bootstrap),
    open_class=",".join(params.open_class),
    closed_class=",".join(params.closed_class),
    pos_treebank=params.treebank,
    pos_splits=",".join(params.splits),
    pos_tagged_words=len(tags),
)
write_parquet(table, snakemake.output.parquet)
with atomic_write(snakemake.output.csv) as handle:
    table.to_csv(handle, index=False)
