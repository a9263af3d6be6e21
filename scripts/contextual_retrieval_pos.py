"""Snakemake entry point: contextual retrieval accuracy by universal POS tag of the pivot word and by group of tags
(Cao et al. Table 4), from every model's queries; tags from the pivot's UD files."""

import pandas as pd

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.evaluate.contextual_retrieval import accuracy_by_pos  # noqa: E402
from xling.evaluate.intervals import Bootstrap  # noqa: E402
from xling.evaluate.word_pos import word_tags  # noqa: E402
from xling.io import atomic_write  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402

params, settings = snakemake.params, snakemake.params.settings
tags = word_tags(snakemake.input.treebanks)
queries = pd.concat([pd.read_parquet(path) for path in snakemake.input.queries], ignore_index=True)
table = accuracy_by_pos(
    queries[queries["contextual"] == settings["pos_contextual"]],
    dict(zip(tags["word"], tags["upos"], strict=True)),
    settings["pos_groups"],
    by=params.by,
    exclude_seen=settings["pos_exclude_seen"],
    exclude_exact=settings["pos_exclude_exact"],
    bootstrap=Bootstrap(**params.bootstrap),
)
table = with_settings(
    table,
    contextual=settings["pos_contextual"],
    exclude_seen=settings["pos_exclude_seen"],
    exclude_exact=settings["pos_exclude_exact"],
    pos_treebank=params.treebank,
    pos_splits=",".join(params.splits),
    pos_tagged_words=len(tags),
)
write_parquet(table, snakemake.output.parquet)
with atomic_write(snakemake.output.csv) as handle:
    table.to_csv(handle, index=False)
