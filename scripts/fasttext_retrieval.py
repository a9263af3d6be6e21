"""Snakemake entry point: contextual and non-contextual word retrieval of the sentence-augmented fastText baseline
on every language's test word pairs, rotated on each train{n} split (Cao et al. 2020, Table 3)."""

import json
from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import pandas as pd  # noqa: E402

from xling.data.alignment import read_split  # noqa: E402
from xling.evaluate.contextual_retrieval import evaluate_fasttext, word_pair_set  # noqa: E402
from xling.represent.fasttext import Normalised, load_vectors  # noqa: E402
from xling.tables import data_settings, with_settings, write_parquet  # noqa: E402

params, settings, size = snakemake.params, snakemake.params.settings, int(snakemake.wildcards.size)
vectors = {Path(path).stem: Normalised(load_vectors(path)) for path in snakemake.input.vectors}
tables, queries = [], []
for lang in params.langs:
    directory = Path(params.align_dir) / f"{params.pivot}-{lang}"  # the word-pair files of the rule's input
    seen = word_pair_set(*read_split(directory, params.seen_split, params.pivot, lang))
    trains = {n: read_split(directory, f"train{n}", params.pivot, lang) for n in params.sizes}
    table, found = evaluate_fasttext(
        vectors[params.pivot],
        vectors[lang],
        read_split(directory, "test", params.pivot, lang),
        seen,
        trains,
        k=settings["csls_k"],
        block=snakemake.resources.block,
        exclude_seen=settings["exclude_seen"],
        exclude_exact=settings["exclude_exact"],
    )
    tables.append(table.assign(lang=lang, pair=f"{params.pivot}-{lang}"))
    queries.append(found.assign(lang=lang, pair=f"{params.pivot}-{lang}"))
lm = f"fasttext/{size}"
row_settings = dict(
    lm=lm,
    model="fasttext",
    size=size,
    window=params.hparams["window"],
    layer=0,
    csls_k=settings["csls_k"],
    exclude_seen=settings["exclude_seen"],
    exclude_exact=settings["exclude_exact"],
    seen_split=params.seen_split,
    dim=4 * params.hparams["dim"],
    seed=params.hparams["seed"],
    source=snakemake.config["data"]["source"],
    vocab="fasttext words",
    run=snakemake.config["run"],
    hparams=json.dumps(params.hparams, sort_keys=True),
    data_settings=json.dumps(data_settings(snakemake.config), sort_keys=True),
)
write_parquet(with_settings(pd.concat(tables, ignore_index=True), **row_settings), snakemake.output.table)
write_parquet(
    with_settings(
        pd.concat(queries, ignore_index=True),
        **{key: row_settings[key] for key in ("lm", "model", "size", "window", "layer")},
    ),
    snakemake.output.queries,
)
