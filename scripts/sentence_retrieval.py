"""Snakemake entry point: Tatoeba or BUCC sentence retrieval (original / zero-mean / MDS) for one model and language."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from xling.data.formats import read_bucc, read_tatoeba  # noqa: E402
from xling.evaluate.sentence_retrieval import run_bucc, run_tatoeba  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, lm, s, p = snakemake.input, snakemake.params.lm, snakemake.params.settings, snakemake.params
task, lang, res = snakemake.wildcards.task, snakemake.wildcards.lang, snakemake.resources
common = dict(
    mean_stat=p.mean,
    alpha=s["mds_alpha"],
    pooling=s["pooling"],
    batch_size=res.batch_size,
    max_length=lm["max_length"],
    device=device,
    revision=lm["revision"],
    block=res.block,
    items=[],
)
if task == "tatoeba":
    table = run_tatoeba(
        lm["path"],
        read_tatoeba(inp.xx, inp.en),
        max_sentences=s["max_sentences"],
        layers=None if s["all_layers"] else [s["layer"]],
        **common,
    )
else:
    dev = read_bucc(inp.dev_xx, inp.dev_en, inp.dev_gold)
    test = read_bucc(inp.test_xx, inp.test_en, inp.test_gold)
    table = run_bucc(
        lm["path"], dev, test, layers=s["bucc_layers"] or [s["layer"]], k=s["bucc_k"], score=s["bucc_score"], **common
    )
settings = dict(
    model=lm["label"],
    size=lm["size"],
    window=lm["window"],
    task=task,
    lang=lang,
    pair=f"{p.pivot}-{lang}",
    report_layer=s["layer"],
    **run_settings(snakemake.config, lm["label"]),
)
write_parquet(with_settings(table, **settings), snakemake.output.table)
# the per-query (Tatoeba) or per-source-sentence (BUCC) items the gather's intervals resample
write_parquet(pd.concat(common["items"], ignore_index=True), snakemake.output.per_item)
