"""Snakemake entry point: linear CKA by layer of parallel XNLI sentences, the pivot's monolingual BERT against a
target's (or en', the pivot's other seed), the bilingual model (cka.bilingual) and a random encoder."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import torch  # noqa: E402

from xling.encode.encoder import Encoder  # noqa: E402
from xling.evaluate.cka import cka_table, xnli_parallel  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

# a job that asked for GPUs stops here when torch sees none, before reading anything
device = snakemake_job_device(snakemake)

torch.set_num_threads(snakemake.threads)
inp, p, res = snakemake.input, snakemake.params, snakemake.resources
s, mono = p.settings, snakemake.wildcards.mono


def load(model, max_length=p.max_length, language=None):
    return Encoder.from_pretrained(model, device=device, max_length=max_length, language=language)


multilingual = None
if "multilingual" in inp.keys():  # a bilingual ablation's views of the two languages, or one multilingual BERT
    multilingual = tuple(load(inp.multilingual, p.bilingual_length, language) for language in (p.pivot, p.lang))
table = cka_table(
    [load(model) for model in inp.models],
    xnli_parallel(*inp.xnli, max_sentences=s["max_sentences"]),
    multilingual=multilingual,
    random_seed=s["random_seed"],
    debiased=s["debiased"],
    batch_size=res.batch_size,
    ci_level=p.bootstrap["level"],
    ci_seed=p.bootstrap["seed"],
)
target = f"{p.pivot}'" if mono != p.lang else mono  # en' for the pivot's other seed
settings = dict(
    src=p.pivot,
    tgt=target,
    pair=f"{p.pivot}-{target}",
    lm_src=p.models[0]["lm"],
    lm_tgt=p.models[1]["lm"],
    lm_multilingual=inp.get("multilingual", ""),
    hparams_src=p.models[0]["hparams"],
    hparams_tgt=p.models[1]["hparams"],
    pooling="mean_words",
    split=s["split"],
    max_sentences=s["max_sentences"],
    random_seed=s["random_seed"],
    **p.sides,
)
write_parquet(with_settings(table, **settings), snakemake.output[0])
