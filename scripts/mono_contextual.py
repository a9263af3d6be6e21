"""Snakemake entry point: the contextual word level between two monolingual BERTs for one target: maps at each
layer learned on word pairs (alignment.aligner) of XNLI's parallel sentences (once, for every task), and each task
transferred from the pivot through them (MLM align) and through the bilingual MLM (biMLM: the pair's Default
ablation, or the run's multilingual BERT; monolingual.contextual.bimlm)."""

import json
import os

import pandas as pd

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # eflomal's samplers run in OpenMP threads (fast_align: 1)
import torch  # noqa: E402

from xling.encode.encoder import Encoder, resolve_device  # noqa: E402
from xling.evaluate.cka import xnli_parallel  # noqa: E402
from xling.evaluate.monolingual_contextual import contextual_transfer_table, layer_maps, xnli_word_pairs  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402
from xling.tune.heads import read_examples  # noqa: E402
from xling.models.ablation import view_path  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

torch.set_num_threads(snakemake.threads)
inp, p, res = snakemake.input, snakemake.params, snakemake.resources
s, lang = p.settings, snakemake.wildcards.lang
device = resolve_device(snakemake_job_device(snakemake))
pairs = xnli_parallel(*inp.xnli, max_sentences=s["max_sentences"])
pivot_words, target_words, links = xnli_word_pairs(
    pairs,
    p.pivot,
    lang,
    tokenizer=p.words["tokenizer"],
    aligner=p.words["aligner"],
    settings=p.words["settings"],
    what=" / ".join(inp.xnli),
)
encoders = [Encoder.from_pretrained(model, device=device, max_length=p.max_length) for model in inp.models]
maps = layer_maps(
    encoders, pivot_words, target_words, links, s["layers"], n_iter=s["normalize_iterations"], batch_size=res.batch_size
)
del encoders
models = {"mlm-align": (inp.models[0], inp.models[1])}
described = {"mlm-align": p.models}  # each kind's (pivot side, target side) model: lm id and training settings
if p.bimlm:
    models["bimlm"] = (view_path(inp.bimlm[0], p.pivot), None)  # an ablation's pivot view; Default shares all
    described["bimlm"] = [p.bimlm, p.bimlm]
tables = []
for i, task in enumerate(p.tasks):
    finetune = p.task_settings[task]
    first = finetune.get("max_eval")  # the first N examples of each dev and test split (None: all)
    data = {
        "train": read_examples(task, inp.train[i], finetune["max_train"] or None),
        "dev": read_examples(task, inp.dev[i], first),
        "test_pivot": read_examples(task, inp.test_pivot[i], first),
        "test_target": read_examples(task, inp.test_target[i], first),
    }
    table = contextual_transfer_table(
        task,
        data,
        s["layers"],
        models=models,
        maps=maps,
        pivot=p.pivot,
        task_layers=s["task_layers"],
        settings=finetune,
        seed=p.seed,
        checkpoint_dir=f"{p.checkpoints}/{task}",
        batch_size=res.batch_size,
        device=device,
        ner_repair=p.ner_repair if task == "ner" else True,
    )
    tables.append(table.assign(finetune_settings=json.dumps(finetune, sort_keys=True)))
table = pd.concat(tables, ignore_index=True)
for column, side, key in (
    ("lm_src", 0, "lm"),
    ("lm_tgt", 1, "lm"),
    ("hparams_src", 0, "hparams"),
    ("hparams_tgt", 1, "hparams"),
):
    table[column] = table["kind"].map(lambda kind, side=side, key=key: described[kind][side][key])
settings = dict(
    src=p.pivot,
    tgt=lang,
    pair=f"{p.pivot}-{lang}",
    n_map_sentences=len(pivot_words),
    pooling="last",
    normalize_iterations=s["normalize_iterations"],
    map_split=s["map_split"],
    max_sentences=s["max_sentences"],
    tokenizer=p.words["tokenizer"],
    aligner=p.words["aligner"],
    aligner_settings=json.dumps(p.words["settings"], sort_keys=True),
    ner_repair=p.ner_repair,
)
write_parquet(with_settings(table, **settings), snakemake.output[0])
