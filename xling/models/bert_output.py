"""What pretraining writes: the live training log (cut back to the resumed step) and the final model directory
(a BERT, or an ablation's views, each with its tokenizer and vocabulary), written beside out_dir and renamed onto
it so that a killed job never leaves half a model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from xling.io import atomic_write, read_lines
from xling.models.ablation import SPEC_FILE
from xling.models.anchors import write_vocab
from xling.models.checkpoints import atomic_directory

LOG_COLUMNS = ("step", "epoch", "loss", "lr", "tokens_per_s", "elapsed_s")


def restart_log(path: Path, upto_step: int) -> None:
    """Keep the log rows of steps <= upto_step (a killed run may have logged past its last checkpoint)."""
    rows = []
    if upto_step and path.exists():
        rows = [line for _, line in read_lines(path)][1:]
        rows = [r for r in rows if len(r.split("\t")) == len(LOG_COLUMNS) and int(r.split("\t")[0]) <= upto_step]
    with atomic_write(path) as handle:
        handle.write("\t".join(LOG_COLUMNS) + "\n")
        handle.writelines(r + "\n" for r in rows)


def save_model_dir(mlm, vocab_path, out_dir: Path, lowercase: bool) -> None:
    """save_pretrained + tokenizer files + the vocabulary into out_dir (what xling.encode loads)."""
    from transformers import BertTokenizerFast

    mlm.save_pretrained(out_dir)
    tok = BertTokenizerFast(
        vocab=str(vocab_path),
        do_lower_case=lowercase,
        strip_accents=lowercase,
        model_max_length=mlm.config.max_position_embeddings,
    )
    tok.save_pretrained(out_dir)
    shutil.copyfile(vocab_path, Path(out_dir) / "vocab.txt")  # byte-identical to the vocabulary used


def save_views(
    views, vocabularies: dict[str, list[str]] | None, vocab_path, out_dir: Path, spec: dict, lowercase: bool
) -> None:
    """An ablated model's directory (xling.models.ablation): ablation.json and one BERT directory per language,
    each with its language's vocabulary (language-specific vocabularies) or the joint one."""
    for lang, view in views.items():
        vocab = vocab_path
        if vocabularies is not None:
            vocab = out_dir / f".vocab-{lang}.txt"
            write_vocab(vocabularies[lang], vocab)
        save_model_dir(view, vocab, out_dir / lang, lowercase)
        if vocabularies is not None:
            vocab.unlink()
    with atomic_write(out_dir / SPEC_FILE) as handle:
        json.dump({"spec": spec, "languages": list(views)}, handle, indent=1, sort_keys=True)


def save_final(write, out_dir: Path, log: Path) -> None:
    """write(tmp) (save_pretrained + tokenizer files, or an ablation's views) into a temp dir beside out_dir,
    then rename it onto out_dir.

    The tokenizer files record `lowercase` as do_lower_case and strip_accents, so a tokenizer loaded from
    out_dir normalizes text as the token files were (xling.data.wordpiece: both or neither).
    """
    with atomic_directory(out_dir) as tmp:
        write(tmp)
        shutil.copyfile(log, tmp / "training_log.tsv")
