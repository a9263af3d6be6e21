"""Snakemake entry point: the treebanks of the synthetic test-only low-resource languages (train and test, no dev)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.synthetic import low_resource_treebanks  # noqa: E402

params = snakemake.params
low_resource_treebanks(
    params.spec, params.languages, params.low_resource["languages"], params.low_resource["sentences"], params.out_dir
)
