"""Snakemake entry point: per-layer means of each vocabulary word's contextual vectors, for one monolingual BERT
over its own language's token file."""
from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import torch  # noqa: E402

from xling.represent.word_spaces import vocabulary, word_means  # noqa: E402

torch.set_num_threads(snakemake.threads)
p, res = snakemake.params, snakemake.resources
words = vocabulary(snakemake.input.counts, p.lang, p.vocabulary["min_count"], p.vocabulary["vocabulary_size"])
word_means(snakemake.input.model, snakemake.input.tokens, p.lang, set(words), snakemake.output[0],
           batch_size=res.batch_size, max_length=p.max_length, device=res.device, max_documents=p.max_documents)
