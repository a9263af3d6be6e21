"""Snakemake entry point: score one fine-tuned model on every language (as it is, zero-mean, MDS)."""
import json
from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import numpy as np  # noqa: E402
import torch  # noqa: E402

from xling.encode.encoder import resolve_device  # noqa: E402
from xling.evaluate.transfer import TransferTest, corpus_sentences, evaluate_items, language_means  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402
from xling.tune.heads import read_examples  # noqa: E402

torch.set_num_threads(snakemake.threads)
inp, lm, run, res = snakemake.input, snakemake.params.lm, snakemake.params.run, snakemake.resources
device = resolve_device(res.device)
paths = iter(inp.data)
data = {lang: {split: read_examples(run["task"], next(paths)) for split in splits} for lang, splits in run["langs"].items()}
shift = run.get("zero_mean") or run.get("mds")
means = {}
if shift:  # zero-mean: each language's mean by the pretrained model; MDS: by the fine-tuned one
    sentences = {lang: corpus_sentences(path, shift["sentences"], shift["tokens"]) for lang, path in zip(run["langs"], inp.corpora)}
    model, revision = (lm["path"], lm["revision"]) if "zero_mean" in run else (f"{inp.finetuned}/encoder", None)
    means = language_means(model, sentences, shift["layer"], stat=shift["stat"], positions=shift["positions"],
                           batch_size=res.batch_size, device=device, revision=revision, max_length=lm["max_length"])
rotations, rotation_layer = {}, -1
if "rotation" in run:  # {RESULTS}/align/rotations/{lm}/{kind}{n}/{lang}.npy, in the order the params list them
    paths = iter(inp.rotations)
    rotations = {kind: {lang: np.load(next(paths)) for lang in langs} for kind, langs in run["rotation"]["langs"].items()}
    rotation_layer = run["rotation"]["layer"]
    if rotation_layer is None:  # the model's output, as the rotations were learned
        rotation_layer = json.loads((Path(inp.finetuned) / "encoder" / "config.json").read_text())["num_hidden_layers"]
test = TransferTest(pivot=run["pivot"], layer=shift["layer"] if shift else -1,
                    alphas=run["mds"]["alphas"] if "mds" in run else [],
                    positions=shift["shift_positions"] if shift else "all", mds="mds" in run,
                    pretrained_means=means if "zero_mean" in run else None,
                    finetuned_means=means if "mds" in run else None, batch_size=res.batch_size, device=device,
                    ner_repair=run.get("ner_repair", True), rotations=rotations, rotation_layer=rotation_layer)
table, items = evaluate_items(inp.finetuned, data, test, vectors=inp.get("vectors"), vocab=inp.get("vocab"),
                              lowercase=run.get("lowercase", False),
                              pretrained=lm["path"] if lm["kind"] == "ablation" else None)
settings = run_settings(snakemake.config, lm["label"])
settings["pretrain_seed"] = settings.pop("seed")
if lm["kind"] == "ablation":  # the trainer's settings of this model: the bert block as the ablations change it
    settings["hparams"] = json.dumps(lm["hparams"], sort_keys=True)
settings.update(model=lm["label"], size=lm["size"], window=lm["window"], lm=snakemake.wildcards.lm,
                variant=snakemake.wildcards.variant,  # f{k}-cao, f{k}-rot{kind}: Cao et al.'s fine-tunings
                # the test-time settings behind the numbers (zero-mean / MDS means and alpha grid, NER repair)
                shift_settings=json.dumps({**(shift or {}), **({"rotation": {**run["rotation"], "layer": rotation_layer}}
                                                                if "rotation" in run else {})}, sort_keys=True),
                ner_repair=run.get("ner_repair"))
write_parquet(with_settings(table, **settings), snakemake.output.table)
write_parquet(items, snakemake.output.per_item)  # the per-item counts the gather's intervals resample
