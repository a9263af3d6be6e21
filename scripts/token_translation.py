"""Snakemake entry point: unsupervised token translation pivot <-> lang for one model (every layer x alpha)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from xling.data.formats import read_parallel  # noqa: E402
from xling.evaluate.cka import xnli_parallel  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402
from xling.evaluate.translation import TranslationSettings, translate_pair  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, lm, s = snakemake.input, snakemake.params.lm, snakemake.params.settings
pivot, lang = snakemake.params.pivot, snakemake.wildcards.lang
files = dict(
    zip((pivot, lang), inp.get("vocab_files") or inp.get("vocab_corpora") or (), strict=False)
)  # none: the pairs' pieces
translation = TranslationSettings(
    directions=s["directions"],
    layers=s["layers"],
    alphas=s["alphas"],
    mean_stat=s["mean"],
    batch_size=snakemake.resources.batch_size,
    max_length=lm["max_length"],
    device=device,
    min_count=s["vocab_min_count"],
    bleu_tokenize=s["bleu_tokenize"],
    lowercase=snakemake.params.lowercase,
    n_samples=s["samples"],
    max_sentences=s["max_sentences"],
    mean_positions=s["mean_positions"],
    shift_positions=s["shift_positions"],
    revision=lm["revision"],
    bleu_unit=s["bleu_unit"],
)
items = []
# XNLI: every test sentence, premises and hypotheses (example by example, so a cap keeps both kinds)
pairs = (
    xnli_parallel(inp.pivot_text, inp.lang_text, example_order=True)
    if s["data"] == "xnli"
    else read_parallel(inp.pivot_text, inp.lang_text)
)
table, samples = translate_pair(
    lm["path"],
    pivot,
    lang,
    pairs,
    translation,
    langs_store=inp.get("langs"),
    token_files=files if "vocab_files" in inp.keys() else None,
    corpus_files=files if "vocab_corpora" in inp.keys() else None,
    items=items,
)
settings = dict(
    model=lm["label"],
    size=lm["size"],
    window=lm["window"],
    data=s["data"],
    max_sentences=s["max_sentences"],
    **run_settings(snakemake.config, lm["label"]),
)
if lm["kind"] == "hf":
    settings["dim"] = int(table["hidden"].iloc[0])
write_parquet(with_settings(table, **settings), snakemake.output.table)
write_parquet(with_settings(samples, model=lm["label"], size=lm["size"], window=lm["window"]), snakemake.output.samples)
# the per-sentence convert counts the gather's intervals resample
write_parquet(pd.concat(items, ignore_index=True), snakemake.output.per_item)
