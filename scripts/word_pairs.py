"""Snakemake entry point: the word pairs of one language's parallel text with the pivot (Moses tokens, the run's
aligner both ways, the one-to-one intersection), written per split, and their counts and AER where gold links exist."""

import os

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # eflomal's samplers run in OpenMP threads (fast_align: 1)
from xling.data.alignment import align_corpus  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402

params, lang = snakemake.params, snakemake.wildcards.lang
splits = params.splits
table = align_corpus(
    snakemake.input.src,
    snakemake.input.tgt,
    params.out_dir,
    params.pivot,
    lang,
    tokenizer=params.tokenizer,
    test=splits["test_sentences"],
    dev=splits["dev_sentences"],
    train=splits["train_sentences"],
    aligner=params.aligner,
    aligner_settings=params.aligner_settings,
    gold_path=snakemake.input.gold[0] if snakemake.input.gold else None,
)
write_parquet(
    with_settings(
        table,
        lang=lang,
        pair=f"{params.pivot}-{lang}",
        tokenizer=params.tokenizer,
        gold=bool(snakemake.input.gold),
        aligner=params.aligner,
        **{f"{params.aligner}_{k}": v for k, v in params.aligner_settings.items()},
    ),
    snakemake.output.table,
)
