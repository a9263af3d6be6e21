"""Snakemake entry point: align one base BERT on n word-aligned sentence pairs per language (xling.tune.align)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import torch  # noqa: E402

from xling.encode.encoder import resolve_device  # noqa: E402
from xling.tune.align import align, read_parallel_words  # noqa: E402
from xling.tune.finetune import fingerprint  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

torch.set_num_threads(snakemake.threads)
inp, p, res = snakemake.input, snakemake.params, snakemake.resources
data = [
    read_parallel_words(lang, en, xx, links)
    for lang, en, xx, links in zip(p.langs, inp.en, inp.xx, inp.links, strict=True)
]
base = p.base
align(
    base["path"],
    data,
    snakemake.output[0],
    p.checkpoints,
    p.settings,
    seed=p.seed,
    revision=base["revision"],
    max_length=base["max_length"],
    identity={
        "model": fingerprint(inp.get("model")),
        "hub": [base["path"], base["revision"]],
        "data": fingerprint([*inp.en, *inp.xx, *inp.links]),
    },
    device=resolve_device(snakemake_job_device(snakemake)),
    checkpoint_every=res.checkpoint_every,
)
