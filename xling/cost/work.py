"""What each planned job processes (tokens, steps, examples) and what that costs in FLOPs or in counted units,
read from the job's wildcards and params and the run's config, with the data sizes of throughput.yaml.

FLOPs follow benchmarks/pretrain_throughput.py: training 6 x dense parameters per token plus attention and the
MLM head at the masked positions; inference 2 x dense parameters per token plus attention. A rule's work model
is named in resources/throughput.yaml; a rule with none there is refused (or costed by the explicit fallback).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from xling.plan.models import parse_aligned_run

BERT_BASE = {"hidden_size": 768, "num_layers": 12, "intermediate_size": 3072}  # Hugging Face checkpoints
MBERT_VOCAB = 119547


@dataclass
class Work:
    """One job's work: FLOPs on its device, or `units` of a counted kind for CPU rules timed per unit."""

    flops: float = 0.0
    units: float = 0.0
    tokens: float = 0.0
    steps: float = 0.0
    examples: float = 0.0
    hidden: int = 0
    params: float = 0.0  # dense parameters of the model it trains or runs, for the memory estimate
    batch_tokens: float = 0.0  # tokens in one training batch, for the activation memory
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Context:
    """What every work model may read: the validated config and the data sizes of the run's source."""

    config: dict
    data: dict  # examples per dataset and split (real) and pieces per sentence

    @property
    def synthetic(self) -> bool:
        return self.config.get("data", {}).get("source") == "synthetic"

    def vocab(self) -> int:
        tok = self.config.get("tokenizer", {})
        return MBERT_VOCAB if tok.get("vocab") == "mbert" else int(tok.get("vocab_size", MBERT_VOCAB))

    def pieces_per_sentence(self) -> float:
        return self.data["pieces_per_sentence"]["synthetic" if self.synthetic else "real"]

    def size(self, dataset: str, split: str) -> float:
        """Examples in one language's split of a dataset (synthetic: the generator's counts)."""
        if self.synthetic:
            key = {
                "xnli": "xnli_pairs",
                "pos": "ud_sentences",
                "parsing": "ud_sentences",
                "ner": "ner_sentences",
                "tatoeba": "tatoeba_sentences",
                "bucc": "bucc_sentences",
            }[dataset]
            value = self.config["synthetic"][key]
            return float(value[split] if isinstance(value, dict) else value)
        return float(self.data["examples"][dataset][split])


def dense_params(shape: dict) -> float:
    h, i = shape["hidden_size"], shape["intermediate_size"]
    return shape["num_layers"] * (4 * h * h + 2 * h * i)


def train_flops_per_token(shape: dict, window: int, vocab: int, masked: float = 0.15) -> float:
    h, layers = shape["hidden_size"], shape["num_layers"]
    return 6 * dense_params(shape) + 12 * layers * window * h + 6 * masked * (h * h + h * vocab)


def infer_flops_per_token(shape: dict, window: int) -> float:
    return 2 * dense_params(shape) + 4 * shape["num_layers"] * window * shape["hidden_size"]


def lm_shape(lm, ctx: Context) -> dict | None:
    """The BERT a params `lm` (dict, label or hparams holder) runs; None for a static model."""
    if isinstance(lm, dict) and "hparams" in lm:
        hp = lm["hparams"]
        return json.loads(hp) if isinstance(hp, str) else dict(hp)
    kind = lm.get("kind") if isinstance(lm, dict) else str(lm).split("/")[0]
    label = lm.get("label", "") if isinstance(lm, dict) else str(lm)
    if kind in ("static", "glove", "word2vec", "fasttext"):
        return None
    if kind == "hf" or (isinstance(lm, dict) and lm.get("revision")):
        return dict(BERT_BASE)
    shape = dict(ctx.config["bert"])
    if "ablation" in (label + str(lm.get("path", "") if isinstance(lm, dict) else "")):
        shape.update(ctx.config.get("ablation", {}).get("bert", {}))
    return shape


def _window(lm, default: int) -> int:
    return int(lm.get("max_length") or lm.get("window") or default) if isinstance(lm, dict) else default


def _pretrain(job, ctx: Context) -> Work:
    hp = json.loads(job.params["hparams"])
    window = int(hp.get("window") or job.wildcards.get("window"))
    steps = float(hp["max_steps"])
    # bert.batch_tokens counts the batch in tokens: batch_tokens // window blocks (xling.models.bert_hparams)
    batch = float(int(hp["batch_tokens"]) // window if hp.get("batch_tokens") else hp["batch_size"])
    tokens = steps * batch * window
    return Work(
        flops=tokens * train_flops_per_token(hp, window, ctx.vocab(), hp.get("mlm_probability", 0.15)),
        tokens=tokens,
        steps=steps,
        examples=steps * batch,
        hidden=hp["hidden_size"],
        params=dense_params(hp),
        batch_tokens=batch * window,
        notes=[f"tokens = max_steps x blocks a step x window ({steps:.0f} x {batch:.0f} x {window})"],
    )


def _example_length(ctx: Context, task: str, max_length: int) -> float:
    per_task = ctx.data["pieces_per_example"]["synthetic" if ctx.synthetic else "real"]
    return min(float(max_length), per_task.get(task, ctx.pieces_per_sentence()))


def _finetune(job, ctx: Context) -> Work:
    """One fine-tuning job: the fine-tuning, then the scoring of every tested language (rules/transfer.smk)."""
    fit, test = _fit(job, ctx), _scoring(job, ctx)
    return Work(
        flops=fit.flops + test.flops,
        units=fit.units + test.units,
        tokens=fit.tokens + test.tokens,
        steps=fit.steps,
        examples=fit.examples + test.examples,
        hidden=fit.hidden,
        params=fit.params,
        batch_tokens=fit.batch_tokens,
        notes=fit.notes + test.notes,
    )


def _evaluated(ctx: Context, task: str, split: str, settings: dict) -> float:
    """Examples scored of one language's dev or test split: its size, capped by the task's max_eval."""
    size = ctx.size(task, split)
    return min(size, float(settings["max_eval"])) if settings.get("max_eval") else size


def _fit(job, ctx: Context) -> Work:
    run, lm = job.params["run"], job.params["lm"]
    task, settings = run["task"], run["settings"]
    train = ctx.size(task, "train") if ctx.synthetic else float(ctx.data["examples"][task]["train"])
    if settings.get("max_train"):
        train = min(train, float(settings["max_train"]))
    length = _example_length(ctx, task, settings["max_length"])
    examples = settings["epochs"] * train
    tokens = examples * length
    steps = examples / settings["batch_size"]
    dev = sum(_evaluated(ctx, task, "dev", settings) for _ in run.get("dev_langs", [run["pivot"]]))
    dev *= settings["epochs"] * length
    shape = lm_shape(lm, ctx)
    if shape is None:  # frozen static vectors under a small trained head: CPU, per example
        return Work(
            units=examples,
            tokens=tokens,
            steps=steps,
            examples=examples,
            notes=["static model: counted in examples (frozen vectors, small head)"],
        )
    flops = tokens * train_flops_per_token(shape, int(length), 0, 0) + dev * infer_flops_per_token(shape, int(length))
    return Work(
        flops=flops,
        tokens=tokens,
        steps=steps,
        examples=examples,
        hidden=shape["hidden_size"],
        params=dense_params(shape),
        batch_tokens=settings["batch_size"] * settings["max_length"],
        notes=[
            f"{task}: {settings['epochs']} epochs x {train:.0f} examples x {length:.0f} pieces; "
            "every layer counted as trained (freezing saves part of the backward)"
        ],
    )


def _scoring(job, ctx: Context) -> Work:
    test, lm, settings = job.params["test"], job.params["lm"], job.params["run"]["settings"]
    task = test["task"]
    examples = sum(_evaluated(ctx, task, split, settings) for splits in test["langs"].values() for split in splits)
    length = _example_length(ctx, task, ctx.config["transfer"][task]["max_length"])
    return _inference(lm, ctx, examples, length, f"{task} dev/test of {len(test['langs'])} languages")


def _inference(lm, ctx: Context, examples: float, length: float, what: str) -> Work:
    shape = lm_shape(lm, ctx)
    tokens = examples * length
    if shape is None:
        return Work(units=examples, tokens=tokens, examples=examples, notes=[f"{what}: static model, per example"])
    return Work(
        flops=tokens * infer_flops_per_token(shape, int(min(length, _window(lm, 512)))),
        tokens=tokens,
        examples=examples,
        hidden=shape["hidden_size"],
        params=dense_params(shape),
        notes=[f"{what}: {examples:.0f} x {length:.0f} pieces"],
    )


def _extract(job, ctx: Context) -> Work:
    lm = job.params["lm"]
    label = job.wildcards["lm"].split("/")[-1].split("-")[0]
    size = float(label) if label.isdigit() else float(max(ctx.config["corpus"]["sizes"]))  # a hub model: the largest
    docs = job.params.get("max_documents")
    sentences = size * len(job.params["languages"]) / float(job.params["n_shards"])
    if docs:
        sentences = min(sentences, float(docs) * len(job.params["languages"]))
    shape_lm = {"kind": "bert", "label": job.wildcards["lm"], **lm}
    return _inference(shape_lm, ctx, sentences, ctx.pieces_per_sentence(), "corpus sentences of the shard")


def _language_pairs(job, ctx: Context, sentences: float, what: str) -> Work:
    lm = job.params.get("lm") or job.params.get("base") or {"kind": "bert", "label": job.wildcards.get("lm", "bert")}
    return _inference(lm, ctx, 2 * sentences, ctx.pieces_per_sentence(), what)


def _token_translation(job, ctx: Context) -> Work:
    settings = job.params["settings"]
    every = (
        ctx.size("xnli", "test") * 4 / 3 if settings["data"] == "xnli" else ctx.config["alignment"]["test_sentences"]
    )
    n = float(settings.get("max_sentences") or every)  # XNLI: each premise (one per three examples), each hypothesis
    return _language_pairs(job, ctx, n, "parallel sentences, both sides")


def _sentence_retrieval(job, ctx: Context) -> Work:
    task, split = job.wildcards["task"], job.wildcards.get("bucc_split", "test")
    n = ctx.size(task, split if task == "bucc" else "test")
    cap = job.params["settings"].get("max_sentences")
    return _language_pairs(job, ctx, min(n, float(cap)) if cap else n, f"{task} sentences, both sides")


def _contextual_retrieval(job, ctx: Context) -> Work:
    n = float(ctx.config["alignment"]["test_sentences"]) * len(job.params["langs"])
    return _language_pairs(job, ctx, n, "alignment test sentences of every language")


def _rotation(job, ctx: Context) -> Work:
    return _language_pairs(
        job, ctx, float(parse_aligned_run(job.wildcards["n"])[0]), "alignment train pairs of the language"
    )


def _align_finetune(job, ctx: Context) -> Work:
    base, settings = job.params["base"], job.params["settings"]
    shape = lm_shape(base, ctx)
    pairs = float(parse_aligned_run(job.wildcards["n"])[0]) * len(job.params["langs"]) * settings["epochs"]
    length = ctx.pieces_per_sentence()
    tokens = 2 * pairs * length
    # the aligned model and the frozen base (the regulariser) both read every sentence
    flops = tokens * (train_flops_per_token(shape, int(length), 0, 0) + infer_flops_per_token(shape, int(length)))
    return Work(
        flops=flops,
        tokens=tokens,
        examples=pairs,
        steps=pairs / (2 * settings["pairs_per_language"]),
        hidden=shape["hidden_size"],
        params=dense_params(shape),
        batch_tokens=64 * length,
        notes=[f"{pairs:.0f} pairs x 2 sides x {length:.0f} pieces, trained + frozen base forward"],
    )


def _models_on(job, ctx: Context, sentences: float, what: str) -> Work:
    """Jobs that run several BERTs (params `models`) over the same sentences, two languages each."""
    models = job.params["models"]
    works = [_inference(m, ctx, 2 * sentences, ctx.pieces_per_sentence(), what) for m in models]
    return Work(
        flops=sum(w.flops for w in works),
        tokens=sum(w.tokens for w in works),
        examples=2 * sentences,
        hidden=max(w.hidden for w in works),
        params=max(w.params for w in works),
        notes=[f"{len(models)} models x {what}: 2 x {sentences:.0f} sentences"],
    )


def _cka(job, ctx: Context) -> Work:
    settings = job.params["settings"]
    n = min(ctx.size("xnli", settings["split"]), float(settings["max_sentences"]))
    return _models_on(job, ctx, n, f"XNLI {settings['split']}")


def _mono_sentences(job, ctx: Context) -> Work:
    settings = job.params["settings"]
    n = ctx.size("xnli", settings["map_split"]) + ctx.size("tatoeba", "test")
    return _models_on(job, ctx, n, "map split + Tatoeba")


def _mono_contextual(job, ctx: Context) -> Work:
    settings, tasks = job.params["settings"], job.params["task_settings"]
    maps = _models_on(job, ctx, ctx.size("xnli", settings["map_split"]), "map split")
    shape = lm_shape(job.params["models"][0], ctx)
    layer_flops = train_flops_per_token(shape, 128, 0, 0) / shape["num_layers"]
    work = maps
    for task in job.params["tasks"]:
        s = tasks[task]
        length = _example_length(ctx, task, s["max_length"])
        tokens = s["epochs"] * ctx.size(task, "train") * length
        # per layer and model (mono, biMLM): frozen features through the task layers, trained; forward of the BERT
        runs = len(settings["layers"]) * 2
        per_token = settings["task_layers"] * layer_flops + infer_flops_per_token(shape, int(length))
        work.flops += runs * tokens * per_token
        work.tokens += runs * tokens
    work.notes.append(
        f"{len(settings['layers'])} layers x 2 models x tasks {job.params['tasks']} with "
        f"{settings['task_layers']} trained task layers"
    )
    return work


def _mono_word_means(job, ctx: Context) -> Work:
    lm = {"kind": "bert", "label": "mono", "max_length": job.params["max_length"]}
    sentences = min(float(job.wildcards["size"]), float(job.params.get("max_sentences") or "inf"))
    return _inference(lm, ctx, sentences, ctx.pieces_per_sentence(), "the language's corpus sample")


def _corpus_sentences(job, ctx: Context) -> Work:
    """CPU rules timed per corpus sentence (sampling, tokenising, counting, code-switching)."""
    size = float(job.wildcards.get("size") or max(ctx.config["corpus"]["sizes"]))
    langs = 1 if "lang" in job.wildcards else len(ctx.config["languages"])
    return Work(
        units=size * langs,
        examples=size * langs,
        tokens=size * langs * ctx.pieces_per_sentence(),
        notes=[f"{size * langs:.0f} corpus sentences"],
    )


def _static_train(job, ctx: Context) -> Work:
    """GloVe / Word2Vec / fastText: units = tokens x epochs x dim (x side window for skip-gram)."""
    hp = job.params.get("hp") or job.params.get("hparams") or job.params.get("fasttext") or {}
    size = float(job.wildcards.get("size") or max(ctx.config["corpus"]["sizes"]))
    langs = 1 if "lang" in job.wildcards else len(ctx.config["languages"])
    tokens = size * langs * ctx.pieces_per_sentence()
    side = float(job.params.get("side_window") or hp.get("window") or 5)
    dim, epochs = float(hp.get("dim", 300)), float(hp.get("epochs", 5))
    context = side if job.rule != "glove" else 1.0
    return Work(
        units=tokens * epochs * dim * context / 1e6,
        tokens=tokens * epochs,
        examples=size * langs,
        notes=[f"units = tokens x epochs x dim{' x side window' if context != 1 else ''} / 1e6"],
    )


def _word_pairs(job, ctx: Context) -> Work:
    splits = job.params["splits"]
    n = float(max(splits["train_sentences"]) + splits["test_sentences"] + splits["dev_sentences"])
    aligner = job.params.get("aligner", "eflomal")
    return Work(units=n, examples=n, notes=[f"{n:.0f} sentence pairs aligned by {aligner} both ways"])


def _fixed(job, ctx: Context) -> Work:
    return Work(
        notes=[
            "a fixed time per job, as measured at calibration scale (tables, parsers, retrieval on stored "
            "vectors): its growth with the data is not modelled, a floor at larger scales"
        ]
    )


WORK_MODELS = {
    "pretrain": _pretrain,
    "finetune": _finetune,
    "extract": _extract,
    "token_translation": _token_translation,
    "sentence_retrieval": _sentence_retrieval,
    "contextual_retrieval": _contextual_retrieval,
    "rotation": _rotation,
    "align_finetune": _align_finetune,
    "cka": _cka,
    "mono_sentences": _mono_sentences,
    "mono_contextual": _mono_contextual,
    "mono_word_means": _mono_word_means,
    "corpus_sentences": _corpus_sentences,
    "static_train": _static_train,
    "word_pairs": _word_pairs,
    "fixed": _fixed,
}
