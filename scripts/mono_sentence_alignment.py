"""Snakemake entry point: Tatoeba P@1 per layer between two monolingual BERTs, unmapped and through a Procrustes
map learned on XNLI's parallel sentences."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from xling.data.formats import read_tatoeba  # noqa: E402
from xling.encode.encoder import Encoder  # noqa: E402
from xling.evaluate.cka import xnli_parallel  # noqa: E402
from xling.evaluate.monolingual import sentence_alignment_table  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, p, res = snakemake.input, snakemake.params, snakemake.resources
s, lang = p.settings, snakemake.wildcards.lang
encoders = [Encoder.from_pretrained(model, device=device, max_length=p.max_length) for model in inp.models]
map_pairs = xnli_parallel(*inp.xnli, max_sentences=s["max_sentences"])
test_pairs = [(en, xx) for xx, en in read_tatoeba(inp.tatoeba[1], inp.tatoeba[0])][: s["max_sentences"] or None]
items = []  # each row's per-query hits: the gather draws P@1's interval from them
table = sentence_alignment_table(
    encoders,
    map_pairs,
    test_pairs,
    n_iter=s["normalize_iterations"],
    batch_size=res.batch_size,
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
    pooling="mean_words",
    metric="cosine",
    **s,
)
write_parquet(with_settings(table, **settings), snakemake.output.table)
write_parquet(pd.concat(items, ignore_index=True), snakemake.output.per_item)
