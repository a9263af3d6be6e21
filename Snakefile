"""xling: why is multilingual BERT multilingual? One DAG from raw data to an HTML report.

snakemake --profile profiles/local --configfile presets/demo.yaml     # offline demo
snakemake --profile profiles/slurm                                    # the full study (config.yaml)
"""

import os

from snakemake.utils import min_version, validate

min_version("9.0")


# The full study; presets override it. Found beside this file, so `--directory` can point elsewhere.
configfile: os.path.join(workflow.basedir, "config.yaml")


validate(config, schema="schemas/config.schema.yaml")


include: "rules/common.smk"


wildcard_constraints:
    lang="[a-z][a-z0-9_]*",
    size=r"\d+",
    window=r"\d+",
    shard=r"\d+",
    model="|".join(config["models"]),
    static="glove|word2vec",
    split="train|test|full",


include: "rules/data.smk"
include: "rules/tokenize.smk"
include: "rules/pretrain.smk"
include: "rules/checkpoints.smk"
include: "rules/represent.smk"
include: "rules/evaluate.smk"
include: "rules/language.smk"
include: "rules/transfer.smk"
include: "rules/align.smk"
include: "rules/align_finetune.smk"
include: "rules/align_baselines.smk"
include: "rules/ablate.smk"
include: "rules/analyse.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        f"{RESULTS}/report.html",
        table_targets(),
        align_finetune_targets(),
        align_baselines_targets(),
