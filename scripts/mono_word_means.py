"""Snakemake entry point: per-layer means of each vocabulary word's contextual vectors, for one monolingual BERT
over its own language's token file."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import torch  # noqa: E402

from xling.represent.word_spaces import SentenceCap, vocabulary, word_means  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, p, res = snakemake.input, snakemake.params, snakemake.resources
words = vocabulary(inp.counts, p.lang, p.vocabulary["min_count"], p.vocabulary["vocabulary_size"])
cap = None if p.max_sentences is None else SentenceCap(p.max_sentences, inp.corpus, inp.vocab, p.lowercase)
word_means(
    inp.model,
    inp.tokens,
    p.lang,
    set(words),
    snakemake.output[0],
    batch_size=res.batch_size,
    max_length=p.max_length,
    device=device,
    cap=cap,
)
