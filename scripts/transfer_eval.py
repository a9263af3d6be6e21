"""Snakemake entry point: score one fine-tuned model on every language (as it is, zero-mean, MDS)."""
from xling.logs import setup_logging

setup_logging(snakemake.log[0])
import torch  # noqa: E402

from xling.encode.encoder import resolve_device  # noqa: E402
from xling.evaluate.transfer import corpus_sentences, evaluate, language_means  # noqa: E402
from xling.models.heads import read_examples  # noqa: E402
from xling.tables import run_settings, with_settings, write_parquet  # noqa: E402

torch.set_num_threads(snakemake.threads)
inp, lm, run, res = snakemake.input, snakemake.params.lm, snakemake.params.run, snakemake.resources
device = resolve_device(res.device)
paths = iter(inp.data)
data = {lang: {split: read_examples(run["task"], next(paths)) for split in splits} for lang, splits in run["langs"].items()}
pretrained = finetuned = None
if "corpora" in inp.keys():
    mean = run["mean"]
    sentences = {lang: corpus_sentences(path, mean["sentences"]) for lang, path in zip(run["langs"], inp.corpora)}
    common = dict(stat=mean["stat"], positions=mean["positions"], batch_size=res.batch_size, device=device)
    if run["zero_mean"]:  # zero-mean: each language's mean by the pretrained model
        pretrained = language_means(lm["path"], sentences, run["layer"], revision=lm["revision"],
                                    max_length=lm["max_length"], **common)
    else:  # MDS: the means by the fine-tuned model
        finetuned = language_means(f"{inp.finetuned}/encoder", sentences, run["layer"], max_length=lm["max_length"],
                                   **common)
table = evaluate(inp.finetuned, data, pivot=run["pivot"], layer=run["layer"], alphas=run["alphas"],
                 positions=run["mean"]["shift_positions"], mds=run["mds"], pretrained_means=pretrained,
                 finetuned_means=finetuned, batch_size=res.batch_size, device=device, ner_repair=run["ner_repair"],
                 vectors=inp.get("vectors"), vocab=inp.get("vocab"), lowercase=run["lowercase"])
settings = run_settings(snakemake.config, lm["label"])
settings["pretrain_seed"] = settings.pop("seed")
settings.update(model=lm["label"], size=lm["size"], window=lm["window"], lm=snakemake.wildcards.lm)
write_parquet(with_settings(table, **settings), snakemake.output[0])
