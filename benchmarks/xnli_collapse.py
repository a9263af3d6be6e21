"""Why a BERT's zero-shot XNLI collapses to one class (issue 34): fine-tune one BERT directory on the English XNLI
train split with one setting changed, and print one JSON line per run: English dev accuracy, each language's test
accuracy and the share of its majority predicted class, the same after moving each language's vectors to English's
(`centred`: the classifier's input by its mean, `out`, or by its mean and sd per dimension, `outstd`; or the
`--centre-layer` output by its mean, as MDS), and an in-language probe (a logistic regression on the fine-tuned
model's vectors of the language's own dev pairs, scored on its test pairs: is the label there at all). With
--offsets, no fine-tuning: per layer, how far apart the languages' mean [CLS] and mean-pooled vectors lie in
units of their within-language spread, and nearest-centroid language identification (25 % = chance).

The recipe is xling.tune's (AdamW without decay on biases and LayerNorm, linear warm-up and decay, clipping at 1,
the epoch order of xling.tune.finetune.epoch_order); no dev selection: the last epoch is scored. One thread; a run
of 3,000 pairs x 2 epochs at hidden size 64 takes 15-30 s of CPU. Not a test: a script that prints figures.

    python benchmarks/xnli_collapse.py --model results/demo/models/bert/12000-w128 --data results/demo/data/xnli
    python benchmarks/xnli_collapse.py --model ... --data ... --random-init     # the same BERT, never pretrained
    python benchmarks/xnli_collapse.py --model ... --data ... --offsets
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.data import formats  # noqa: E402
from xling.encode.encoder import Shift  # noqa: E402
from xling.tune.finetune import batches, epoch_order, linear_schedule, optimizer_for, set_seed  # noqa: E402
from xling.tune.heads import PairClassifier, collate, load_bert, read_examples  # noqa: E402

LABELS = list(formats.XNLI_LABELS)


class PooledPair(PairClassifier):
    """PairClassifier (its `pooling`: [CLS] as the papers, or the mean over the pair's pieces) with an `offset`
    added to the pooled vector (the test-time centring)."""

    def __init__(self, encoder, dropout: float, pool: str):
        super().__init__(encoder, len(LABELS), dropout, pool)
        self.offset = torch.zeros(encoder.hidden_size)

    def logits(self, batch):
        return self.out(self.dropout(self.pooled(batch) + self.offset))


def in_batches(features, pad_id, fn, size=64) -> torch.Tensor:
    return torch.cat([fn(collate("xnli", features[i : i + size], pad_id, True)) for i in range(0, len(features), size)])


@torch.no_grad()
def layer_states(bert, features, pad_id, layer: int | None = None):
    """Per layer (or one): the [CLS] vectors and the mean-pooled vectors of every pair, and the mean over all
    non-pad positions."""
    cls, mean, total, count = [], [], 0, 0
    for i in range(0, len(features), 64):
        b = collate("xnli", features[i : i + 64], pad_id, True)
        hidden = bert(
            input_ids=b["input_ids"],
            attention_mask=b["attention_mask"],
            token_type_ids=b.get("token_type_ids"),
            output_hidden_states=True,
        ).hidden_states
        hidden = hidden if layer is None else hidden[layer : layer + 1]
        m = b["attention_mask"].unsqueeze(-1).float()
        cls.append(torch.stack([h[:, 0] for h in hidden]))
        mean.append(torch.stack([(h * m).sum(1) / m.sum(1) for h in hidden]))
        total = total + torch.stack([(h * m).sum((0, 1)) for h in hidden])
        count += m.sum()
    return torch.cat(cls, 1).numpy(), torch.cat(mean, 1).numpy(), (total / count).numpy()


def offsets(bert, feats: dict, pad_id: int) -> dict:
    """Per layer and pooling: mean distance of each other language's mean from English's, over the pooled
    within-language RMS spread; nearest-centroid language identification (centroids on the first half)."""
    langs = list(feats)
    states = {lang: layer_states(bert, f, pad_id) for lang, f in feats.items()}
    out = {}
    for k, pool in enumerate(("cls", "mean")):
        rows = []
        for layer in range(states[langs[0]][k].shape[0]):
            x = {lang: states[lang][k][layer] for lang in langs}
            spread = float(np.sqrt(np.mean([x[lang].var(0).mean() for lang in langs])))
            gap = float(np.mean([np.linalg.norm(x[lang].mean(0) - x[langs[0]].mean(0)) for lang in langs[1:]]))
            half = {lang: len(x[lang]) // 2 for lang in langs}
            centroid = {lang: x[lang][: half[lang]].mean(0) for lang in langs}
            hits = [
                int(np.argmin([np.linalg.norm(v - centroid[c]) for c in langs])) == i
                for i, lang in enumerate(langs)
                for v in x[lang][half[lang] :]
            ]
            rows.append(
                {
                    "layer": layer,
                    "offset": round(gap / max(spread, 1e-12), 2),
                    "spread": round(spread, 3),
                    "langid": round(100 * float(np.mean(hits)), 1),
                }
            )
        out[pool] = rows
    return out


def summary(logits: torch.Tensor, features) -> dict:
    pred = logits.argmax(-1).numpy()
    gold = np.array([f["label"] for f in features])
    counts = np.bincount(pred, minlength=len(LABELS))
    return {
        "acc": round(100 * float((pred == gold).mean()), 1),
        "major": round(100 * counts.max() / len(pred), 1),
        "major_label": LABELS[int(counts.argmax())],
    }


def probe(x_dev, y_dev, x_test, y_test) -> float:
    """A logistic regression on standardised vectors (300 Adam steps): in-language accuracy, %."""
    mu, sd = x_dev.mean(0), x_dev.std(0) + 1e-6
    linear = nn.Linear(x_dev.shape[1], len(LABELS))
    optimizer = torch.optim.Adam(linear.parameters(), lr=0.01, weight_decay=1e-3)
    for _ in range(300):
        optimizer.zero_grad()
        F.cross_entropy(linear((x_dev - mu) / sd), y_dev).backward()
        optimizer.step()
    with torch.no_grad():
        return round(100 * float((linear((x_test - mu) / sd).argmax(-1) == y_test).float().mean()), 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a BERT directory (xling.models.bert's output)")
    p.add_argument("--data", required=True, help="the run's data/xnli folder (train-en, dev-*, test-*.tsv)")
    p.add_argument("--langs", nargs="+", default=["en", "xa", "xb", "xc"], help="the pivot first")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--pool", default="cls", choices=["cls", "mean"])
    p.add_argument("--dropout", type=float, default=0.1, help="before the classifier")
    p.add_argument("--bert-dropout", type=float, default=None, help="every dropout inside the BERT")
    p.add_argument("--freeze", type=int, default=1, help="the embeddings and encoder layers 1..k frozen")
    p.add_argument("--centre-layer", type=int, default=1, help="the layer the `layer` centring shifts")
    p.add_argument("--freeze-words", action="store_true", help="the word embeddings frozen (every language's)")
    p.add_argument("--random-init", action="store_true", help="the model's architecture, never pretrained")
    p.add_argument("--offsets", action="store_true", help="print the language offsets of the model; no tuning")
    p.add_argument("--train", type=int, default=3000)
    p.add_argument("--eval", type=int, default=300, help="the first N pairs of each dev and test split")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--label", default="")
    a = p.parse_args()
    torch.set_num_threads(1)
    start = time.time()
    set_seed(a.seed)
    backbone = load_bert(a.model)
    bert, pad = backbone.encoder.bert, backbone.pad_id
    if a.random_init:  # a BertForMaskedLM drawn with seed 0, the global generator left as it was
        from transformers import BertForMaskedLM

        state = torch.get_rng_state()
        torch.manual_seed(0)
        bert.load_state_dict(BertForMaskedLM(bert.config).bert.state_dict(), strict=False)
        torch.set_rng_state(state)
    if a.bert_dropout is not None:
        for module in bert.modules():
            if isinstance(module, nn.Dropout):
                module.p = a.bert_dropout
    featurize = backbone.featurizer("xnli", 64, LABELS)
    dev = {lang: featurize(read_examples("xnli", f"{a.data}/dev-{lang}.tsv", a.eval)) for lang in a.langs}
    name = "random-init" if a.random_init else Path(a.model).name
    if a.offsets:
        bert.eval()
        print(json.dumps({"label": a.label, "model": name, **offsets(bert, dev, pad)}), flush=True)
        return
    train = featurize(read_examples("xnli", f"{a.data}/train-{a.langs[0]}.tsv", a.train))
    test = {lang: featurize(read_examples("xnli", f"{a.data}/test-{lang}.tsv", a.eval)) for lang in a.langs}
    model = PooledPair(backbone.encoder, a.dropout, a.pool)
    backbone.encoder.freeze(a.freeze)
    if a.freeze_words:
        bert.embeddings.word_embeddings.weight.requires_grad_(False)

    steps = math.ceil(len(train) / a.batch) * a.epochs
    optimizer = optimizer_for(model, a.lr, 0.01)
    scheduler = linear_schedule(optimizer, round(a.warmup * steps), steps)
    losses = []
    for epoch in range(a.epochs):
        model.train()
        for batch in batches(train, epoch_order(len(train), a.seed, epoch), a.batch):
            loss = model.loss(collate("xnli", batch, pad, True))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_([q for q in model.parameters() if q.requires_grad], 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    model.eval()

    with torch.no_grad():
        pooled_dev = {lang: in_batches(f, pad, model.pooled) for lang, f in dev.items()}
        layer_means = {lang: layer_states(bert, f, pad, a.centre_layer)[2][0] for lang, f in dev.items()}
        pivot = a.langs[0]
        stats = {lang: (v.mean(0), v.std(0) + 1e-6) for lang, v in pooled_dev.items()}

        def score(lang: str, centre: str, split=test) -> dict:
            if centre == "out":
                model.offset = stats[pivot][0] - stats[lang][0]
            elif centre == "outstd":
                (mu, sd), (mu_p, sd_p) = stats[lang], stats[pivot]
                return summary(
                    in_batches(split[lang], pad, lambda b: model.out((model.pooled(b) - mu) / sd * sd_p + mu_p)),
                    split[lang],
                )
            elif centre == "layer":
                backbone.encoder.shift = Shift(a.centre_layer, layer_means[pivot] - layer_means[lang], "all")
            try:
                return summary(in_batches(split[lang], pad, model.logits), split[lang])
            finally:
                model.offset = torch.zeros_like(model.offset)
                backbone.encoder.shift = None

        others = a.langs[1:]
        result = {
            "label": a.label,
            "model": name,
            "en_dev": score(pivot, "none", dev)["acc"],
            **{lang: score(lang, "none") for lang in a.langs},
            "xmean": round(float(np.mean([score(lang, "none")["acc"] for lang in others])), 1),
            "centred": {c: {lang: score(lang, c) for lang in others} for c in ("out", "outstd", "layer")},
        }
        labels_of = {lang: torch.tensor([f["label"] for f in feats]) for lang, feats in {**dev}.items()}
        test_labels = {lang: torch.tensor([f["label"] for f in feats]) for lang, feats in test.items()}
        pooled_test = {lang: in_batches(f, pad, model.pooled) for lang, f in test.items()}
    result["probe"] = {
        lang: probe(pooled_dev[lang], labels_of[lang], pooled_test[lang], test_labels[lang]) for lang in a.langs
    }
    result.update(
        loss_last50=round(float(np.mean(losses[-50:])), 3),
        seconds=round(time.time() - start, 1),
        args={k: v for k, v in vars(a).items() if k not in ("model", "data", "label")},
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
