"""A random checkpoint that stands in for a pretrained one (language.random_models): a BertForMaskedLM of random
weights with a BERT tokenizer of the run's WordPiece vocabulary, saved in the layout a hub checkpoint is staged in
(config, weights, tokenizer files), so every job reads it as it reads a staged mBERT.

Why: where the real checkpoint cannot be had (CI has no hub; mBERT-base on the CPU is hours a job), a tiny random
BERT with mBERT's vocabulary runs every rule of a checkpoint row through the real pieces. Its numbers are a random
encoder's, which the report says (xling.plan: stand_ins). Deterministic for its seed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

#: the settings of one language.random_models entry (schemas/config.schema.yaml)
SETTINGS = ("hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions", "seed")
#: what the directory records of itself beside the checkpoint files
RECORD = "stand_in.json"


def save_random_bert(vocab: str | Path, out_dir: str | Path, settings: dict) -> Path:
    """Write a random BertForMaskedLM (`settings`: SETTINGS) and its cased BertTokenizerFast of `vocab` (a vocab.txt)
    to `out_dir`, which appears only complete (a `.part` sibling is written first)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    missing = [key for key in SETTINGS if key not in settings]
    if missing:
        raise ValueError(f"random checkpoint {out_dir}: settings lack {missing} (have {sorted(settings)})")
    out_dir = Path(out_dir)
    part = out_dir.with_name(out_dir.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    tokenizer = BertTokenizerFast(vocab=str(vocab), do_lower_case=False, strip_accents=False)
    tokenizer.save_pretrained(part)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=settings["hidden_size"],
        num_hidden_layers=settings["num_layers"],
        num_attention_heads=settings["num_heads"],
        intermediate_size=settings["intermediate_size"],
        max_position_embeddings=settings["max_positions"],
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(settings["seed"])
    BertForMaskedLM(config).eval().save_pretrained(part)
    (part / RECORD).write_text(
        json.dumps(
            {"stand_in": "random weights", "vocab": str(vocab), "settings": {key: settings[key] for key in SETTINGS}},
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    logger.info(
        "random BertForMaskedLM (%s) with %d pieces of %s -> %s",
        ", ".join(f"{key} {settings[key]}" for key in SETTINGS),
        len(tokenizer),
        vocab,
        out_dir,
    )
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(part, out_dir)
    return out_dir
