"""Snakemake entry point: per-shard sums of BERT hidden states per word type and per language (map step),
for one of our BERTs or a Hugging Face checkpoint.

One job covers shard k of every language, so the model is loaded once per shard.
"""

from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import torch  # noqa: E402

from xling.represent.store import Extraction, extract_bert_shard  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inputs, outputs, params = snakemake.input, snakemake.output, snakemake.params
lm = params.lm
extraction = Extraction(
    batch_size=snakemake.resources.batch_size,
    max_length=lm["max_length"],
    max_documents=params.max_documents,
    device=device,
    mean_positions=params.mean_positions,
    corpus=lm["corpus"],
    lowercase=lm.get("lowercase", False),
    revision=lm["revision"],
)
for i, lang in enumerate(params.languages):
    words = set(Path(inputs.words[i]).read_text(encoding="utf-8").split())
    extract_bert_shard(
        lm["path"],
        inputs.text[i],
        lang,
        words,
        int(snakemake.wildcards.shard),
        params.n_shards,
        outputs.words[i],
        outputs.langs[i],
        extraction,
    )
