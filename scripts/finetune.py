"""Snakemake entry point: fine-tune one model on one task (English), one variant and seed, then score it on every
language (as it is, zero-mean, MDS). One process for both: the start-up (torch, transformers) is paid once. A rerun
for a scoring setting resumes the fine-tuning from its last checkpoint, so it trains no step."""

import json
from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import numpy as np  # noqa: E402
import torch  # noqa: E402

from xling.encode.encoder import resolve_device  # noqa: E402
from xling.evaluate.transfer import (
    TransferTest,
    corpus_sentences,
    evaluate_items,
    language_means,  # noqa: E402
    score,
    treebank_sentences,
)
from xling.models.ablation import freeze_language_specific, read_spec  # noqa: E402
from xling.encode.encoder import Shift  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402
from xling.tune.finetune import FinetuneRun, fingerprint, finetune  # noqa: E402
from xling.tune.heads import load_bert, load_static, read_examples  # noqa: E402
from xling.models.devices import snakemake_job_device  # noqa: E402

torch.set_num_threads(snakemake.threads)
inp, lm, run, res = snakemake.input, snakemake.params.lm, snakemake.params.run, snakemake.resources
device = resolve_device(snakemake_job_device(snakemake))

# fine-tuning: params.run decides the weights
task, settings, pivot = run["task"], run["settings"], run["pivot"]
if lm["kind"] == "static":
    backbone = load_static(inp.vectors, inp.vocab, run["lowercase"])
else:  # an ablated model: the pivot's view, its language-specific parameters frozen (Conneau et al. 2020 §4.3)
    backbone = load_bert(lm["path"], lm["revision"], language=pivot)
    if lm["kind"] == "ablation":
        freeze_language_specific(backbone.encoder.bert, read_spec(lm["path"])["spec"])
train = read_examples(task, inp.train, settings["max_train"] or None)
first = settings.get("max_eval")  # the first N examples of each dev and test split (None: all)
dev = {lang: read_examples(task, path, first) for lang, path in zip(run["dev_langs"], inp.dev, strict=True)}
zero_mean = None
if "zero_mean" in run:  # the pretrained model's English mean, subtracted while fine-tuning
    shift = run["zero_mean"]
    text = {pivot: corpus_sentences(inp.corpus, shift["sentences"], shift["tokens"])}
    means = language_means(
        lm["path"],
        text,
        shift["layer"],
        stat=shift["stat"],
        positions=shift["positions"],
        batch_size=res.batch_size,
        device=device,
        revision=lm["revision"],
        max_length=lm["max_length"],
    )
    zero_mean = Shift(shift["layer"], -means[pivot], shift["shift_positions"])
rotations, rotation_layer = {}, -1
if "rotation" in run:  # Cao et al.'s rotation baseline: the other languages' dev sets scored through their rotation
    langs = next(iter(run["rotation"]["langs"].values()))  # {kind: [lang, ...]}, the variant's one kind
    rotations = {lang: np.load(path) for lang, path in zip(langs, inp.dev_rotations, strict=True)}
    rotation_layer = run["rotation"]["layer"]
    if rotation_layer is None:  # the model's output, as the rotations were learned
        rotation_layer = backbone.encoder.bert.config.num_hidden_layers
identity = {
    "model": fingerprint(inp.get("model") or inp.vectors),
    "hub": [lm["path"], lm["revision"]],
    "data": fingerprint([inp.train, *inp.dev]),
}
options = FinetuneRun(
    seed=run["seed"],
    freeze=run["freeze"],
    selection=run["selection"],
    pivot=pivot,
    zero_mean=zero_mean,
    identity=identity,
    device=device,
    checkpoint_every=res.checkpoint_every,
    rotations=rotations,
    rotation_layer=rotation_layer,
)
finetuned = snakemake.output.model
finetune(task, backbone, train, dev, finetuned, snakemake.params.checkpoints, settings, options, score=score)
del backbone, train, dev

# scoring: params.test decides the scores of the fine-tuned model
test = snakemake.params.test
paths = iter(inp.data)
data = {
    lang: {split: read_examples(test["task"], next(paths), first) for split in splits}
    for lang, splits in test["langs"].items()
}
shift = test.get("zero_mean") or test.get("mds")
low_resource = test.get("low_resource", {"langs": [], "alpha": "dev_languages"})
means = {}
if shift:  # zero-mean: each language's mean by the pretrained model; MDS: by the fine-tuned one
    # a low-resource treebank's mean over its own train split (no corpus of its language)
    sentences = {
        lang: (treebank_sentences if lang in low_resource["langs"] else corpus_sentences)(
            path, shift["sentences"], shift["tokens"]
        )
        for lang, path in zip(test["langs"], inp.corpora, strict=True)
    }
    model, revision = (lm["path"], lm["revision"]) if "zero_mean" in test else (f"{finetuned}/encoder", None)
    means = language_means(
        model,
        sentences,
        shift["layer"],
        stat=shift["stat"],
        positions=shift["positions"],
        batch_size=res.batch_size,
        device=device,
        revision=revision,
        max_length=lm["max_length"],
    )
rotations, rotation_layer = {}, -1
if "rotation" in test:  # {RESULTS}/align/rotations/{lm}/{kind}{n}/{lang}.npy, in the order the params list them
    paths = iter(inp.rotations)
    rotations = {
        kind: {lang: np.load(next(paths)) for lang in langs} for kind, langs in test["rotation"]["langs"].items()
    }
    rotation_layer = test["rotation"]["layer"]
    if rotation_layer is None:  # the model's output, as the rotations were learned
        rotation_layer = json.loads((Path(finetuned) / "encoder" / "config.json").read_text())["num_hidden_layers"]
transfer_test = TransferTest(
    pivot=test["pivot"],
    layer=shift["layer"] if shift else -1,
    alphas=test["mds"]["alphas"] if "mds" in test else [],
    positions=shift["shift_positions"] if shift else "all",
    mds="mds" in test,
    pretrained_means=means if "zero_mean" in test else None,
    finetuned_means=means if "mds" in test else None,
    batch_size=res.batch_size,
    device=device,
    ner_repair=test.get("ner_repair", True),
    rotations=rotations,
    rotation_layer=rotation_layer,
    low_resource=low_resource["langs"],
    low_resource_alpha=low_resource["alpha"],
)
table, items = evaluate_items(
    finetuned,
    data,
    transfer_test,
    vectors=inp.get("vectors"),
    vocab=inp.get("vocab"),
    lowercase=test.get("lowercase", False),
    pretrained=lm["path"] if lm["kind"] == "ablation" else None,
)
table_settings = run_settings(snakemake.config, lm["label"])
table_settings["pretrain_seed"] = table_settings.pop("seed")
if lm["kind"] == "ablation":  # the trainer's settings of this model: the bert block as the ablations change it
    table_settings["hparams"] = json.dumps(lm["hparams"], sort_keys=True)
rotation = {"rotation": {**test["rotation"], "layer": rotation_layer}} if "rotation" in test else {}
rotation.update({"low_resource": test["low_resource"]} if "low_resource" in test and shift else {})
table_settings.update(
    model=lm["label"],
    size=lm["size"],
    window=lm["window"],
    lm=snakemake.wildcards.lm,
    variant=snakemake.wildcards.variant,  # f{k}-cao, f{k}-rot{kind}: Cao et al.'s fine-tunings
    # the test-time settings behind the numbers (zero-mean / MDS means and alpha grid, NER repair)
    shift_settings=json.dumps({**(shift or {}), **rotation}, sort_keys=True),
    ner_repair=test.get("ner_repair"),
)
write_parquet(with_settings(table, **table_settings), snakemake.output.table)
write_parquet(items, snakemake.output.per_item)  # the per-item counts the gather's intervals resample
