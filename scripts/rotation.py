"""Snakemake entry point: the word- and sentence-aligned rotations of one BERT for one language, learned on the
train{n} word pairs (Cao et al. 2020's rotation baselines)."""

import functools
from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import logging  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from xling.data.alignment import read_split  # noqa: E402
from xling.encode.encoder import Encoder  # noqa: E402
from xling.encode.encoder import sentence_word_vectors  # noqa: E402
from xling.io import atomic_write  # noqa: E402
from xling.represent.rotation import learn_rotations  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, params, res, lang = snakemake.input, snakemake.params, snakemake.resources, snakemake.wildcards.lang
split = Path(inp.links).stem  # train{n}
pivot, other, links = read_split(Path(inp.links).parent, split, params.pivot, lang)
lm = params.lm
encoder = Encoder.from_pretrained(lm["path"], device=device, revision=lm["revision"], max_length=lm["max_length"])
layer = encoder.n_layers if params.layer is None else params.layer
vectors = functools.partial(
    sentence_word_vectors, encoder, layer=layer, batch_size=res.batch_size, what=f"{split} sentences"
)
for kind, (w, pairs) in learn_rotations(vectors, pivot, other, links, block=res.block).items():
    logging.getLogger(__name__).info(
        "%s rotation of %s onto %s at layer %d: %d pairs", kind, lang, params.pivot, layer, pairs
    )
    with atomic_write(snakemake.output[kind], "wb") as handle:
        np.save(handle, w.astype(np.float32))
