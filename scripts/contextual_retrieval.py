"""Snakemake entry point: contextual and non-contextual word retrieval of one BERT on every language's test word
pairs (and on the rotated vectors of each rotation registered for it): the accuracy table and every query."""

import re
from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import numpy as np  # noqa: E402
import torch  # noqa: E402

from xling.data.alignment import read_split  # noqa: E402
from xling.encode.encoder import Encoder  # noqa: E402
from xling.evaluate.contextual_retrieval import evaluate, word_pair_set  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
params, res, lm = snakemake.params, snakemake.resources, snakemake.params.lm
directory = {lang: Path(path).parent for lang, path in zip(params.langs, snakemake.input.test[::3], strict=True)}
test = {lang: read_split(directory[lang], "test", params.pivot, lang) for lang in params.langs}
seen = {
    lang: word_pair_set(*read_split(directory[lang], params.seen_split, params.pivot, lang)) for lang in params.langs
}
rotations = {}
for path in snakemake.input.rotations:  # {RESULTS}/align/rotations/{lm}/{kind}{n}/{lang}.npy
    kind, n, lang = re.search(r"/([a-z]+)(\d+)/([^/]+)\.npy$", path).groups()
    rotations.setdefault((f"rotation-{kind}", int(n)), {})[lang] = np.load(path)
encoder = Encoder.from_pretrained(lm["path"], device=device, revision=lm["revision"], max_length=lm["max_length"])
layer = encoder.n_layers if params.layer is None else params.layer
settings = params.settings
table, queries = evaluate(
    encoder,
    test,
    seen,
    layer=layer,
    k=settings["csls_k"],
    block=res.block,
    batch_size=res.batch_size,
    exclude_seen=settings["exclude_seen"],
    exclude_exact=settings["exclude_exact"],
    rotations=rotations,
)
row_settings = dict(
    lm=snakemake.wildcards.lm,
    model=lm["label"],
    size=lm["size"],
    window=lm["window"],
    layer=layer,
    csls_k=settings["csls_k"],
    exclude_seen=settings["exclude_seen"],
    exclude_exact=settings["exclude_exact"],
    seen_split=params.seen_split,
    **run_settings(snakemake.config, lm["label"]),
)
pairs = {"pair": lambda df: params.pivot + "-" + df["lang"]}
write_parquet(with_settings(table.assign(**pairs), **row_settings), snakemake.output.table)
write_parquet(
    with_settings(
        queries.assign(**pairs), **{key: row_settings[key] for key in ("lm", "model", "size", "window", "layer")}
    ),
    snakemake.output.queries,
)
