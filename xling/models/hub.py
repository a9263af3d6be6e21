"""Staging a Hugging Face hub checkpoint (language.hf_models) into the run's folder, at its pinned revision.

Compute nodes often have no internet, and the jobs run with HF_HUB_OFFLINE=1 (rules/common.smk): a local rule
downloads each hub checkpoint on the login node, as `fetch` does the data, and every job loads the directory.
Only what a PyTorch masked LM loads is fetched: config, tokenizer and vocabulary files and the weights once
(safetensors, else PyTorch's .bin), not the TensorFlow, Flax or ONNX copies (mBERT's repository holds four).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

#: files besides the weights that transformers reads: configs, tokenizer files, vocabularies, sentencepiece models
_SIDE_FILES = (".json", ".txt", ".model")
#: what `staged.json` records in the directory: which checkpoint, asked at which revision, is which commit
RECORD = "staged.json"


def checkpoint_files(files: list[str]) -> list[str]:
    """The repository files (paths in it) a PyTorch masked LM loads: top-level side files and one copy of the
    weights. Raises ValueError when there is none (a TensorFlow-only repository)."""
    top = [name for name in files if "/" not in name]
    weights = [name for name in top if name.endswith(".safetensors")]
    if not weights:
        weights = [name for name in top if name.startswith("pytorch_model") and name.endswith(".bin")]
    if not weights:
        raise ValueError(f"no PyTorch weights (*.safetensors, pytorch_model*.bin) among {sorted(files)}")
    return sorted(weights + [name for name in top if name.endswith(_SIDE_FILES)])


def stage_checkpoint(name: str, revision: str | None, out_dir: str | Path) -> str:
    """Download hub checkpoint `name` at `revision` (commit, tag or branch; None: the default branch, warned)
    into `out_dir`, which appears only complete (a `.part` sibling is written first and resumed by a rerun).
    The hub is HF_ENDPOINT's (huggingface.co by default). Returns the commit staged, recorded in staged.json."""
    from huggingface_hub import HfApi, snapshot_download

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        raise RuntimeError(f"{name}: HF_HUB_OFFLINE is set in this process; staging a checkpoint downloads it")
    if not revision:
        logger.warning("%s: no pinned revision (language.hf_revisions); staging the default branch's commit", name)
    info = HfApi().model_info(name, revision=revision)
    files = checkpoint_files([sibling.rfilename for sibling in info.siblings or []])
    out_dir = Path(out_dir)
    part = out_dir.with_name(out_dir.name + ".part")
    logger.info("%s@%s (commit %s): %s -> %s", name, revision, info.sha, ", ".join(files), out_dir)
    snapshot_download(name, revision=info.sha, local_dir=part, allow_patterns=files)
    missing = [file for file in files if not (part / file).is_file()]
    if missing:
        raise RuntimeError(f"{name}@{info.sha}: not downloaded: {missing}")
    shutil.rmtree(part / ".cache", ignore_errors=True)  # huggingface_hub's resume metadata, done with
    (part / RECORD).write_text(
        json.dumps({"name": name, "revision": revision, "commit": info.sha, "files": files}, indent=1) + "\n",
        encoding="utf-8",
    )
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(part, out_dir)
    return info.sha
