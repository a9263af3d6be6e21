"""Snakemake entry point: fine-tune one model on one task (English), one variant and seed."""
from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import numpy as np  # noqa: E402
import torch  # noqa: E402

from xling.encode.encoder import resolve_device  # noqa: E402
from xling.evaluate.transfer import corpus_sentences, language_means, score  # noqa: E402
from xling.models.ablation import freeze_language_specific, read_spec  # noqa: E402
from xling.encode.encoder import Shift  # noqa: E402
from xling.tune.finetune import FinetuneRun, fingerprint, finetune  # noqa: E402
from xling.tune.heads import load_bert, load_static, read_examples  # noqa: E402

torch.set_num_threads(snakemake.threads)
inp, lm, run, res = snakemake.input, snakemake.params.lm, snakemake.params.run, snakemake.resources
device = resolve_device(res.device)
task, settings, pivot = run["task"], run["settings"], run["pivot"]
if lm["kind"] == "static":
    backbone = load_static(inp.vectors, inp.vocab, run["lowercase"])
else:  # an ablated model: the pivot's view, its language-specific parameters frozen (Conneau et al. 2020 §4.3)
    backbone = load_bert(lm["path"], lm["revision"], language=pivot)
    if lm["kind"] == "ablation":
        freeze_language_specific(backbone.encoder.bert, read_spec(lm["path"])["spec"])
train = read_examples(task, inp.train)[: settings["max_train"] or None]
dev = {lang: read_examples(task, path) for lang, path in zip(run["dev_langs"], inp.dev)}
zero_mean = None
if "zero_mean" in run:  # the pretrained model's English mean, subtracted while fine-tuning
    shift = run["zero_mean"]
    text = {pivot: corpus_sentences(inp.corpus, shift["sentences"], shift["tokens"])}
    means = language_means(lm["path"], text, shift["layer"], stat=shift["stat"], positions=shift["positions"],
                           batch_size=res.batch_size, device=device, revision=lm["revision"], max_length=lm["max_length"])
    zero_mean = Shift(shift["layer"], -means[pivot], shift["shift_positions"])
rotations, rotation_layer = {}, -1
if "rotation" in run:  # Cao et al.'s rotation baseline: the other languages' dev sets scored through their rotation
    langs = next(iter(run["rotation"]["langs"].values()))  # {kind: [lang, ...]}, the variant's one kind
    rotations = {lang: np.load(path) for lang, path in zip(langs, inp.rotations, strict=True)}
    rotation_layer = run["rotation"]["layer"]
    if rotation_layer is None:  # the model's output, as the rotations were learned
        rotation_layer = backbone.encoder.bert.config.num_hidden_layers
identity = {"model": fingerprint(inp.get("model") or inp.vectors), "hub": [lm["path"], lm["revision"]],
            "data": fingerprint([inp.train, *inp.dev])}
options = FinetuneRun(seed=run["seed"], freeze=run["freeze"], selection=run["selection"], pivot=pivot,
                      zero_mean=zero_mean, identity=identity, device=device, checkpoint_every=res.checkpoint_every,
                      rotations=rotations, rotation_layer=rotation_layer)
finetune(task, backbone, train, dev, snakemake.output[0], snakemake.params.checkpoints, settings, options, score=score)
