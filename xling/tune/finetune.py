"""Fine-tuning for zero-shot transfer: one loop for every task and encoder (xling.tune.heads).

AdamW (weight decay on weights, not on biases and LayerNorm; `betas`, `eps` from the settings where given, else
torch's; weight decay 0 is Adam, as Cao et al. 2020) with a linear warm-up over the first
`warmup` fraction of the steps and a linear decay to 0 (Devlin et al.; Cao et al. 2020); gradients clipped
at norm 1. `freeze` = k freezes the embeddings and encoder layers 1..k (Liu et al. 2020 fine-tune the last
6 layers of mBERT: k = 6; k = 0 trains everything). Zero-mean training (Liu et al. 2020, short paper §5.1)
subtracts the pretrained model's English mean at one layer in every forward pass.

Selection: after every epoch the model is scored on the English dev set (`en_dev`, the papers' default)
or on the average of every language's dev set (`avg_dev`, Cao et al.); the best epoch's weights are kept. With
`rotations` ({lang: W}), a language's dev set is scored with its states at `rotation_layer` multiplied by W (Cao
et al.'s rotation baselines: English trains as it is, the epoch is chosen on the rotated other languages).

Deterministic for a seed: the order of examples in epoch e is a permutation drawn from a generator seeded
with (seed, e), dropout draws from the global torch RNG seeded with `seed`, whose state every checkpoint
saves. Checkpoints (atomic; the one training loop, xling.models.loop) are written every `checkpoint_every` steps
and at each epoch end, in a subdirectory named by a hash of everything that decides the weights; a killed run
resumes from the last one and ends with the same weights as an uninterrupted run. SIGTERM/SIGUSR1 finish
the step, checkpoint and exit (Interrupted).

Output directory: `finetune.json` (task, labels, settings, dev scores per epoch, the chosen epoch, and the
training loss: its mean over each run of `loss_every` steps and over each epoch's last steps, the report's curve),
`head.pt` (the task model's weights outside the BERT encoder and the frozen static vectors) and, for a
BERT, `encoder/` (save_pretrained + tokenizer: a BERT directory xling.encode.Encoder loads, which MDS
uses to compute the fine-tuned model's language means).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from xling.data.transfer_tasks import TASK_METRIC
from xling.encode.encoder import Shift
from xling.io import atomic_path, atomic_write
from xling.models.checkpoints import atomic_directory, hms, rng_state, set_rng_state
from xling.models.loop import Progress, TrainingLoop
from xling.represent.rotation import rotate_layer
from xling.tune.heads import Backbone, InferSent, build_model, collate, label_inventory, n_pieces

logger = logging.getLogger(__name__)

SELECTIONS = ("en_dev", "avg_dev")
#: about this many points of the training-loss curve in finetune.json, whatever the number of steps
LOSS_POINTS = 50
#: settings a fine-tuning may add to the optimizer's (Cao et al.'s Adam; Conneau et al.'s classifier rate)
OPTIONAL_OPTIMIZER = ("betas", "eps", "classifier_learning_rate")
ScoreFn = Callable[[str, list, list, list], dict]  # (task, examples, predictions, labels) -> {metric: (value, n)}


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def optimizer_for(model: nn.Module, learning_rate: float, weight_decay: float, betas=(0.9, 0.999),
                  eps: float = 1e-8, classifier_learning_rate: float | None = None) -> torch.optim.AdamW:
    """AdamW over the trainable parameters: decay on weights, none on biases and LayerNorm (BERT recipe). With a
    classifier_learning_rate, the parameters outside the encoder (the task head) train at it, the encoder's at
    learning_rate (Conneau et al. 2020's XNLI search)."""
    groups: dict[tuple[bool, bool], list] = {}
    for prefix, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if p.requires_grad:
                decays = not (name == "bias" or isinstance(module, nn.LayerNorm))
                head = classifier_learning_rate is not None and prefix.split(".")[0] != "encoder"
                groups.setdefault((decays, head), []).append(p)
    return torch.optim.AdamW([{"params": params, "weight_decay": weight_decay if decays else 0.0,
                               "lr": classifier_learning_rate if head else learning_rate}
                              for (decays, head), params in sorted(groups.items(), key=_decay_first)],
                             lr=learning_rate, betas=tuple(betas), eps=eps)


def _decay_first(group) -> tuple[bool, bool]:
    """The groups' order: decayed weights first (the BERT recipe's), the encoder before the head."""
    (decays, head), _ = group
    return not decays, head


SCHEDULES = ("linear", "constant")


def linear_schedule(optimizer, warmup_steps: int, total_steps: int, schedule: str = "linear"
                    ) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up to the peak learning rate, then linear decay to 0 at total_steps (`linear`) or the peak
    kept (`constant`: Conneau et al. 2020's fixed XNLI rate)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        if schedule == "constant":
            return 1.0
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=generator).tolist()


def batches(features: list[dict], order: list[int], size: int) -> list[list[dict]]:
    return [[features[i] for i in order[start : start + size]] for start in range(0, len(order), size)]


@torch.no_grad()
def predict(model: nn.Module, task: str, features: list[dict], batch_size: int, device: torch.device,
            pad_id: int) -> list:
    """The model's predictions for every feature, in input order (eval mode; batches sorted by length)."""
    model.eval()
    order = sorted(range(len(features)), key=lambda i: _length(features[i]))
    pair = not isinstance(model, InferSent)
    out: list = [None] * len(features)
    for start in range(0, len(order), batch_size):
        index = order[start : start + batch_size]
        batch = {k: v.to(device) for k, v in collate(task, [features[i] for i in index], pad_id, pair).items()}
        for i, prediction in zip(index, model.predict(batch), strict=True):
            out[i] = prediction
    return out


def _length(feature: dict) -> int:
    if "rows" in feature:
        return sum(len(r) for r in feature["rows"])
    return len(feature["a"]) + len(feature["b"])


def fingerprint(paths) -> str:
    """A content hash of files (a directory: every file in it, by relative path); "" for no path (a hub
    name: its pinned revision identifies it). Part of a checkpoint's key, so retrained inputs never resume
    a stale checkpoint."""
    if not paths:
        return ""
    digest = hashlib.blake2b(digest_size=8)
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(path)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
            with open(file, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def array_digest(array) -> str:
    """A content hash of an array (a rotation's part of a checkpoint key, not its 768 x 768 numbers)."""
    return hashlib.blake2b(np.ascontiguousarray(array, dtype=np.float64).tobytes(), digest_size=8).hexdigest()


def checkpoint_key(spec: dict) -> str:
    return hashlib.blake2b(json.dumps(spec, sort_keys=True, default=str).encode(), digest_size=6).hexdigest()


@dataclass(frozen=True)
class FinetuneRun:
    """How one fine-tuning run trains and selects, beside the `settings` of the config block.

    freeze: k frozen encoder layers (a BERT; static vectors are always frozen and record -1). selection: en_dev or
    avg_dev, on the `pivot`'s dev set or every language's. zero_mean: the shift added at one layer while training
    (Liu et al. 2020: the pretrained model's pivot mean, negated). identity: what else decides the weights (e.g.
    the model path, data fingerprints), hashed with the settings into the checkpoint subdirectory's name.
    rotations: {lang: W} applied at `rotation_layer` when scoring that language's dev set (module docstring).
    """

    seed: int
    freeze: int = 0
    selection: str = "en_dev"
    pivot: str = "en"
    zero_mean: Shift | None = None
    identity: dict = field(default_factory=dict)
    device: str | torch.device = "cpu"
    checkpoint_every: int = 500
    rotations: dict = field(default_factory=dict)
    rotation_layer: int = -1


def finetune(task: str, backbone: Backbone, train: list, dev: dict[str, list], out_dir, checkpoint_dir,
             settings: dict, run: FinetuneRun, *, score: ScoreFn,
             on_step: Callable[[dict], None] | None = None) -> dict:
    """Fine-tune `backbone` on `train` (English examples of `task`), select on `dev` ({lang: examples}),
    write out_dir (see the module docstring) and return its finetune.json record.

    settings: epochs, batch_size, learning_rate, warmup (fraction of steps), weight_decay, dropout,
    max_length, and the head's sizes (xling.tune.heads.build_model); optionally betas, eps,
    classifier_learning_rate (`optimizer_for`) and schedule (linear | constant, `linear_schedule`). on_step:
    called after every optimizer step with the loop's state (step, pieces, seconds;
    benchmarks/finetune_throughput.py times the steps after a warm-up with it).
    """
    seed, freeze, selection, pivot, zero_mean = run.seed, run.freeze, run.selection, run.pivot, run.zero_mean
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if pivot not in dev:
        raise ValueError(f"no {pivot} dev set to select on (dev languages: {sorted(dev)})")
    device = torch.device(run.device)
    set_seed(seed)
    labels = label_inventory(task, train)
    featurize = backbone.featurizer(task, settings["max_length"], labels)
    train_features = featurize(train)
    dev_langs = sorted(dev) if selection == "avg_dev" else [pivot]
    dev_features = {lang: featurize(dev[lang]) for lang in dev_langs}
    model = build_model(task, backbone, len(labels), settings)
    if backbone.encoder is not None:
        backbone.encoder.freeze(freeze)
        backbone.encoder.shift = zero_mean
    model.to(device)
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    steps_per_epoch = math.ceil(len(train_features) / settings["batch_size"])
    total = steps_per_epoch * settings["epochs"]
    optimizer = optimizer_for(model, settings["learning_rate"], settings["weight_decay"],
                              **{key: settings[key] for key in OPTIONAL_OPTIMIZER if key in settings})
    scheduler = linear_schedule(optimizer, round(settings["warmup"] * total), total,
                                settings.get("schedule", "linear"))
    pair = backbone.kind == "bert"

    key = checkpoint_key({"task": task, "settings": settings, "seed": seed, "freeze": freeze, "selection": selection,
                          "zero_mean": None if zero_mean is None else [zero_mean.layer, zero_mean.positions,
                                                                     (-np.asarray(zero_mean.delta)).tolist()],
                          "identity": run.identity, "n_train": len(train_features),
                          **({"rotations": [run.rotation_layer, {lang: array_digest(w) for lang, w
                                                                 in sorted(run.rotations.items())}]}
                             if run.rotations else {})})
    ckpt_dir = Path(checkpoint_dir) / key
    state = {"epoch": 0, "batch": 0, "step": 0, "scores": [], "best": None, "best_epoch": None, "seconds": 0.0,
             "pieces": 0, "train_loss": [], "loss_window": [0.0, 0]}
    # the loss curve: the losses summed on the device (no wait for the device each step) and averaged every
    # loss_every steps and at each epoch's end; the sum so far goes into a checkpoint, so a resumed run's curve is
    # the uninterrupted run's. It reads the losses the steps compute anyway: no number changes.
    loss_every = max(1, math.ceil(total / LOSS_POINTS))
    loss_sum = torch.zeros((), device=device)

    def content() -> dict:
        state["loss_window"][0] = float(loss_sum)
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "rng": rng_state(), "state": state}

    def restore(saved: dict) -> str:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        set_rng_state(saved["rng"])
        state.update(saved["state"])
        loss_sum.fill_(state["loss_window"][0])
        return f"epoch {state['epoch'] + 1} of {settings['epochs']}, {total} steps in all"

    def report(progress: Progress) -> None:
        logger.info("epoch %d step %d/%d loss %.4f lr %.2e, %s", state["epoch"] + 1, progress.step, total,
                    loss.item(), scheduler.get_last_lr()[0], progress.text("pieces"))

    best_path = ckpt_dir / "best.pt"
    with TrainingLoop(ckpt_dir, total, content, checkpoint_every=run.checkpoint_every, log=logger) as loop:
        loop.resume(restore)
        logger.info("%s: %d train examples, dev %s, %d epochs x %d steps of %d, %d trainable parameters, freeze %d, "
                    "zero-mean %s, %s", task, len(train_features), {k: len(v) for k, v in dev_features.items()},
                    settings["epochs"], steps_per_epoch, settings["batch_size"], n_train, freeze,
                    "off" if zero_mean is None else f"at layer {zero_mean.layer}", device)
        while state["epoch"] < settings["epochs"]:
            order = epoch_order(len(train_features), seed, state["epoch"])
            epoch_batches = batches(train_features, order, settings["batch_size"])
            model.train()
            while state["batch"] < len(epoch_batches):
                batch = {k: v.to(device) for k, v in collate(task, epoch_batches[state["batch"]], backbone.pad_id,
                                                             pair).items()}
                loss = model.loss(batch)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                loss_sum += loss.detach()
                nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
                optimizer.step()
                scheduler.step()
                state["batch"] += 1
                state["step"] = loop.advance()
                state["pieces"] += n_pieces(batch)
                state["seconds"] = loop.elapsed
                state["loss_window"][1] += 1
                if state["step"] % loss_every == 0 or state["batch"] == len(epoch_batches):
                    state["train_loss"].append({"step": state["step"],
                                                "loss": float(loss_sum) / state["loss_window"][1]})
                    loss_sum.zero_()
                    state["loss_window"] = [0.0, 0]
                if on_step is not None:
                    on_step(state)
                loop.after_step(report, work=n_pieces(batch), periodic=state["batch"] < len(epoch_batches))
            dev_scores = {lang: score(task, dev[lang], dev_predictions(model, task, feats, settings["batch_size"],
                                                                  device, backbone, run, lang),
                                      labels)[TASK_METRIC[task]][0]
                          for lang, feats in dev_features.items()}
            value = float(np.mean(list(dev_scores.values())))
            state["scores"].append({"epoch": state["epoch"] + 1, "step": state["step"], "dev": dev_scores,
                                    "selection_score": value})
            logger.info("epoch %d: dev %s %s (%s = %.2f)", state["epoch"] + 1, TASK_METRIC[task],
                        {k: round(v, 2) for k, v in dev_scores.items()}, selection, value)
            if state["best"] is None or value > state["best"]:
                state["best"], state["best_epoch"] = value, state["epoch"] + 1
                with atomic_path(best_path) as tmp:
                    torch.save(model.state_dict(), tmp)
            state["epoch"] += 1
            state["batch"] = 0
            loop.save("epoch end", force=True)
    model.load_state_dict(torch.load(best_path, map_location="cpu", weights_only=True))
    record = {"task": task, "labels": labels, "settings": settings, "seed": seed, "freeze": freeze,
              "selection": selection, "pivot": pivot, "backbone": backbone.kind,
              "rotation": {"layer": run.rotation_layer, "langs": sorted(run.rotations)} if run.rotations else None,
              "zero_mean": None if zero_mean is None else {"layer": zero_mean.layer, "positions": zero_mean.positions},
              "epochs": state["scores"], "best_epoch": state["best_epoch"], "selection_score": state["best"],
              "train_loss": state["train_loss"], "loss_every": loss_every,
              "steps": state["step"], "train_seconds": round(state["seconds"], 1),
              "pieces_per_second": state["pieces"] / max(state["seconds"], 1e-9), "trainable_parameters": n_train}
    _write_output(model, backbone, record, Path(out_dir))
    logger.info("selected epoch %d (%s %.2f); wrote %s in %s", state["best_epoch"], selection, state["best"],
                out_dir, hms(state["seconds"]))
    return record


def dev_predictions(model: nn.Module, task: str, features: list[dict], batch_size: int, device, backbone: Backbone,
                    run: FinetuneRun, lang: str) -> list:
    """`predict` on one language's dev set, through its rotation when the run has one."""
    if lang not in run.rotations:
        return predict(model, task, features, batch_size, device, backbone.pad_id)
    with rotate_layer(backbone.encoder.bert, run.rotation_layer, run.rotations[lang]):
        return predict(model, task, features, batch_size, device, backbone.pad_id)


def head_state(model: nn.Module) -> dict:
    """The weights a fine-tuned model adds to its backbone: all but the BERT encoder and the frozen vectors."""
    return {k: v for k, v in model.state_dict().items() if not k.startswith("encoder.") and k != "embed.weight"}


def _write_output(model: nn.Module, backbone: Backbone, record: dict, out_dir: Path) -> None:
    """Everything into a temp directory beside out_dir, then renamed onto it."""
    with atomic_directory(out_dir) as tmp:
        torch.save(head_state(model), tmp / "head.pt")
        if backbone.encoder is not None:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Writing model shards" bar in the job's log
            backbone.encoder.bert.save_pretrained(tmp / "encoder")
            backbone.tokenizer.save_pretrained(tmp / "encoder")
        with atomic_write(tmp / "finetune.json") as handle:
            json.dump(record, handle, indent=1)
