"""Snakemake entry point: word translation pivot -> target through a Procrustes map between two monolingual BERTs,
at the embedding layer and at every layer of their contextual word means."""

import json

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from xling.encode.encoder import Encoder  # noqa: E402
from xling.evaluate.monolingual import dictionary_pairs, word_alignment_table  # noqa: E402
from xling.represent.word_spaces import vocabulary  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, p, res = snakemake.input, snakemake.params, snakemake.resources
s, lang = p.settings, snakemake.wildcards.lang
langs = (p.pivot, lang)
encoders = [Encoder.from_pretrained(model, device=device, max_length=p.max_length) for model in inp.models]
vocabularies = [vocabulary(inp.counts, code, s["min_count"], s["vocabulary_size"]) for code in langs]
items = []  # each row's per-query hits: the gather draws P@1's interval from them
table = word_alignment_table(
    encoders,
    inp.stores,
    inp.fasttext,
    vocabularies,
    langs,
    dictionary_pairs(inp.train, p.lowercase),
    dictionary_pairs(inp.test, p.lowercase),
    n_iter=s["normalize_iterations"],
    csls_k=s["csls_k"],
    block=res.block,
    items=items,
)
settings = dict(
    src=p.pivot,
    tgt=lang,
    pair=f"{p.pivot}-{lang}",
    lm_src=p.models[0]["lm"],
    lm_tgt=p.models[1]["lm"],
    hparams_src=p.models[0]["hparams"],
    hparams_tgt=p.models[1]["hparams"],
    metric="csls",
    dictionary_split=p.dictionary_split,
    **{**s, "fasttext": json.dumps(s["fasttext"], sort_keys=True)},
)
write_parquet(with_settings(table, **settings), snakemake.output.table)
write_parquet(pd.concat(items, ignore_index=True), snakemake.output.per_item)
