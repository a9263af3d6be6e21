"""Snakemake entry point: word retrieval pivot -> every language, for one model, data size and window, or one
Hugging Face checkpoint (size and window 0): the table, and each query's rank for the MRR by part of speech
(with function-word dictionaries, their queries' ranks apart: scored by part of speech only)."""

import pandas as pd

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.evaluate.word_retrieval import word_retrieval  # noqa: E402
from xling.represent.store import vector_dim  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402

lm, settings, pivot = snakemake.params.lm, snakemake.params.settings, snakemake.params.pivot
# the settings that decide the scores, passed to the retrieval and recorded on every row
scoring = dict(
    min_count=settings["min_count"],
    metric=settings["metric"],
    csls_k=settings["csls_k"],
    candidates=snakemake.params.candidates,
    csls_neighbourhood=snakemake.params.csls_neighbourhood,
    mrr_over=settings["mrr"],
    lowercase=snakemake.params.lowercase,
)
function_dictionaries = list(snakemake.input.function_dictionaries) or [None] * len(snakemake.params.targets)
tables, ranks, function_ranks = [], [], []
for lang, dictionary, function in zip(
    snakemake.params.targets, snakemake.input.dictionaries, function_dictionaries, strict=True
):
    table, query_ranks, *function_query_ranks = word_retrieval(
        snakemake.input.words,
        dictionary,
        pivot,
        lang,
        snakemake.input.counts,
        **scoring,
        block=snakemake.resources.block,
        return_ranks=True,
        function_dictionary_path=function,
    )
    pair = dict(src=pivot, tgt=lang, pair=f"{pivot}-{lang}")
    tables.append(with_settings(table, **pair))
    ranks.append(with_settings(query_ranks, **pair))
    function_ranks += [with_settings(part, **pair) for part in function_query_ranks]
model = run_settings(snakemake.config, lm["label"])
if lm["kind"] == "hf":  # a checkpoint's size is not in the config
    model["dim"] = vector_dim(snakemake.input.words)
row_settings = dict(
    model=lm["label"],
    size=lm["size"],
    window=lm["window"],
    **scoring,
    vocabulary_size=snakemake.params.vocabulary_size,
    dictionary_split=settings["dictionary_split"],
    **model,
)
write_parquet(with_settings(pd.concat(tables, ignore_index=True), **row_settings), snakemake.output[0])
write_parquet(with_settings(pd.concat(ranks, ignore_index=True), **row_settings), snakemake.output.ranks)
if function_ranks:
    write_parquet(
        with_settings(pd.concat(function_ranks, ignore_index=True), **row_settings), snakemake.output.function_ranks
    )
