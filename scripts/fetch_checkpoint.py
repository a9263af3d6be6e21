"""Snakemake entry point: stage one hub checkpoint of language.hf_models at its pinned revision (a local rule)."""

import os

# the workflow runs its jobs offline (rules/common.smk); this one is the download, on the login node
os.environ.pop("HF_HUB_OFFLINE", None)
from xling.logs import setup_logging  # noqa: E402

setup_logging(snakemake.log[0])
from xling.models.hub import stage_checkpoint  # noqa: E402

stage_checkpoint(snakemake.params.name, snakemake.params.revision, snakemake.output[0])
