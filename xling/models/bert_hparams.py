"""The pretraining hyper-parameters: their defaults (the `bert` config schema), their checks, the BertConfig they
make, and the command line's reader of them. Apart from the trainer (xling.models.bert) so that what a setting
means can be read, and tested, without the training code."""

from __future__ import annotations

import json
from pathlib import Path

from xling.models.ablation import check_spec

#: Every hyper-parameter `pretrain` understands, with its default (mirrors the `bert` config schema).
DEFAULTS: dict = {
    "hidden_size": 768,
    "num_layers": 12,
    "num_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "dropout": 0.1,
    "batch_size": 256,
    "batch_tokens": None,
    "micro_batch_size": None,
    "max_steps": 1_000_000,
    "learning_rate": 1e-4,
    "warmup_steps": 10_000,
    "schedule": "linear",
    "weight_decay": 0.01,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-6,
    "max_grad_norm": 1.0,
    "mlm_probability": 0.15,
    "blocks": {"sentence_separator": False, "short_seq_prob": 0.0},
    "selection": "final",
    "dev_every": 5000,
    "checkpoint_every": 1000,
    "keep_checkpoints": 2,
    "log_every": 100,
    "seed": 1,
    "device": None,
    "precision": "fp32",
    "threads": 8,
}
SCHEDULES = ("linear", "inverse_sqrt")
#: final: the model at max_steps; dev_perplexity: the checkpoint of the best dev perplexity (xling.models.selection)
SELECTIONS = ("final", "dev_perplexity")
#: Not part of the `bert` config object: the block length comes from the `windows` grid.
#: ablation: the spec of a Conneau et al. (2020) ablation (xling.models.ablation); absent for a plain BERT.
EXTRA_KEYS = ("window", "ablation")


def resolve_hparams(hparams: dict) -> dict:
    """Defaults filled in; an unknown key is an error (a typo must not silently train the default)."""
    unknown = sorted(set(hparams) - set(DEFAULTS) - set(EXTRA_KEYS))
    if unknown:
        raise ValueError(f"unknown bert hyper-parameter(s) {unknown}; known: {sorted(DEFAULTS) + list(EXTRA_KEYS)}")
    h = {**DEFAULTS, **hparams}
    h["blocks"] = {**DEFAULTS["blocks"], **(hparams.get("blocks") or {})}
    if set(h["blocks"]) != set(DEFAULTS["blocks"]):
        raise ValueError(f"unknown bert.blocks setting(s) {sorted(set(h['blocks']) - set(DEFAULTS['blocks']))}")
    if not 0 <= h["blocks"]["short_seq_prob"] <= 1:
        raise ValueError(f"blocks.short_seq_prob must be in [0, 1], not {h['blocks']['short_seq_prob']}")
    if h["hidden_size"] % h["num_heads"]:
        raise ValueError(f"hidden_size {h['hidden_size']} is not a multiple of num_heads {h['num_heads']}")
    if h["precision"] not in ("bf16", "fp32"):
        raise ValueError(f"precision must be bf16 or fp32, not {h['precision']!r}")
    if "ablation" in h:
        h["ablation"] = check_spec(h["ablation"], int(h["num_layers"]))
    if h["schedule"] not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, not {h['schedule']!r}")
    if h["selection"] not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, not {h['selection']!r}")
    if not 0 < h["mlm_probability"] < 1:
        raise ValueError(f"mlm_probability must be in (0, 1), not {h['mlm_probability']}")
    for key in ("batch_size", "max_steps", "checkpoint_every", "log_every", "keep_checkpoints", "dev_every"):
        if int(h[key]) < 1:
            raise ValueError(f"{key} must be >= 1, not {h[key]}")
    if "window" in h:
        blocks_per_batch(h)
    return h


#: Settings added after checkpoints existed, at the value that trains as before them
AS_BEFORE = {
    "schedule": "linear",
    "batch_tokens": None,
    "selection": "final",
    "blocks": {"sentence_separator": False, "short_seq_prob": 0.0},
}


def as_before(h: dict) -> dict:
    """h without the settings at the value that trains as before they existed, and without dev_every where no
    checkpoint is selected on dev: what the checkpoint key hashes, so that older checkpoints keep theirs."""
    unused = {"dev_every"} if h.get("selection", "final") == "final" else set()
    return {k: v for k, v in h.items() if k not in unused and not (k in AS_BEFORE and v == AS_BEFORE[k])}


def blocks_per_batch(h: dict) -> int:
    """Blocks in one optimizer step: batch_tokens // window when the batch is counted in tokens (Liu et al. 2020
    §3.2: every window sees the same tokens per step, so the same tokens over the same steps), else batch_size."""
    if h.get("batch_tokens") is None:
        return int(h["batch_size"])
    blocks = int(h["batch_tokens"]) // int(h["window"])
    if blocks < 1:
        raise ValueError(f"batch_tokens {h['batch_tokens']} is less than one block of {h['window']} tokens")
    return blocks


def learning_rate_schedule(optimizer, h: dict):
    """The LambdaLR of `schedule`: linear warm-up over warmup_steps to learning_rate, then linear decay to 0 at
    max_steps (BERT), or the inverse square root of Vaswani et al. (2017) that Conneau et al. (2020) train with:
    learning_rate * sqrt(warmup_steps / step) after the warm-up (XLM's AdamInverseSqrtWithWarmup)."""
    from transformers import get_inverse_sqrt_schedule, get_linear_schedule_with_warmup

    if h["schedule"] == "inverse_sqrt":
        return get_inverse_sqrt_schedule(optimizer, int(h["warmup_steps"]))
    return get_linear_schedule_with_warmup(optimizer, int(h["warmup_steps"]), int(h["max_steps"]))


def model_config(hparams: dict, vocab_size: int):
    """A from-scratch BertConfig with the SDPA attention path (flash/memory-efficient kernels on GPU)."""
    from transformers import BertConfig

    h = resolve_hparams(hparams)
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=h["hidden_size"],
        num_hidden_layers=h["num_layers"],
        num_attention_heads=h["num_heads"],
        intermediate_size=h["intermediate_size"],
        max_position_embeddings=max(h["max_position_embeddings"], int(h.get("window") or 0)),
        hidden_dropout_prob=h["dropout"],
        attention_probs_dropout_prob=h["dropout"],
        attn_implementation="sdpa",
    )


def adamw(model, h: dict, fused: bool):
    """AdamW with weight decay on weights and embeddings but not on biases and LayerNorm (BERT recipe)."""
    import torch
    from torch import nn

    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen or not p.requires_grad:
                continue
            seen.add(id(p))
            (no_decay if name == "bias" or isinstance(module, nn.LayerNorm) else decay).append(p)
    groups = [{"params": decay, "weight_decay": h["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(
        groups,
        lr=h["learning_rate"],
        betas=(h["adam_beta1"], h["adam_beta2"]),
        eps=h["adam_epsilon"],
        **({"fused": True} if fused else {}),
    )


def load_hparams(value: str) -> dict:
    """--hparams: a JSON object, or a JSON/YAML file holding one."""
    path = Path(value)
    if not value.lstrip().startswith("{") and path.is_file():
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    else:
        try:
            data = json.loads(value)
        except json.JSONDecodeError as e:
            raise SystemExit(f"--hparams: neither a file nor valid JSON ({e}): {value[:200]!r}") from e
    if not isinstance(data, dict):
        raise SystemExit(f"--hparams must be a JSON object, got {type(data).__name__}")
    return data
