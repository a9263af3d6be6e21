"""Snakemake entry point: one synthetic language's corpus from another domain (the wiki-cc ablation)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.synthetic import domain_corpus  # noqa: E402

params = snakemake.params
domain_corpus(
    params.spec,
    params.languages,
    snakemake.wildcards.lang,
    snakemake.output[0],
    params.sentences,
    params.topics_left_out,
)
