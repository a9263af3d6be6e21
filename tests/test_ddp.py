"""`torchrun -m xling.models.bert` with 2 CPU processes (gloo) follows the single-process trajectory.

Each rank trains on its half of the same global batch with the same masks, and the loss is normalised
by the global number of masked tokens, so DDP (and gradient accumulation) change only the order of
floating-point sums: losses and weights agree to rounding.
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tiny_checkpoints import one_torch_thread

from xling.models import bert, checkpoints

REPO = Path(__file__).resolve().parents[1]
HPARAMS = {
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 64,
    "window": 16,
    "batch_size": 8,
    "max_steps": 6,
    "warmup_steps": 2,
    "learning_rate": 1e-3,
    "log_every": 1,
    "checkpoint_every": 4,
    "dropout": 0.0,
    "seed": 5,
    "device": "cpu",
}


def losses(log: Path) -> list[float]:
    return [float(line.split("\t")[2]) for line in log.read_text().splitlines()[1:]]


@pytest.mark.slow
def test_torchrun_two_processes_match_single_process(tmp_path):
    rng = random.Random(0)
    pieces = [f"p{i}" for i in range(150)]
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + pieces) + "\n")
    tokens = []
    for lang in ("en", "de"):
        docs = [" ".join(rng.choice(pieces) for _ in range(rng.randint(5, 40))) for _ in range(40)]
        (tmp_path / f"{lang}.txt").write_text("\n".join(docs) + "\n")
        tokens.append(tmp_path / f"{lang}.txt")
    vocab = tmp_path / "vocab.txt"

    # per rank 4 sequences in micro-batches of 2: DDP and accumulation at once
    ddp_hparams = {**HPARAMS, "micro_batch_size": 2}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "xling.models.bert",
        "--tokens",
        *map(str, tokens),
        "--vocab",
        str(vocab),
        "--out",
        str(tmp_path / "ddp"),
        "--checkpoint-dir",
        str(tmp_path / "ddp_ckpt"),
        "--hparams",
        json.dumps(ddp_hparams),
        "--log-file",
        str(tmp_path / "ddp.tsv"),
    ]  # torchrun's parser rejects --log as ambiguous
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-5000:]
    assert "global batch 8 = 2 process(es) x 2 x 2 accumulation" in run.stderr
    # a rerun on the same checkpoint dir: both ranks resume from rank 0's step-4 checkpoint
    rerun_cmd = [str(tmp_path / "ddp_again") if arg == str(tmp_path / "ddp") else arg for arg in cmd]
    rerun = subprocess.run(rerun_cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr[-5000:]
    assert "resumed from" in rerun.stderr and "step 4," in rerun.stderr, rerun.stderr[-5000:]

    with one_torch_thread():
        bert.pretrain(tokens, vocab, tmp_path / "single", tmp_path / "single_ckpt", HPARAMS, tmp_path / "single.tsv")

    ddp, single = losses(tmp_path / "ddp.tsv"), losses(tmp_path / "single.tsv")
    assert len(ddp) == len(single) == 6
    assert max(abs(a - b) for a, b in zip(ddp, single, strict=True)) < 1e-4, (ddp, single)
    a, b = load_file(tmp_path / "ddp" / "model.safetensors"), load_file(tmp_path / "single" / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)
    again = load_file(tmp_path / "ddp_again" / "model.safetensors")
    assert all(torch.equal(a[k], again[k]) for k in a)
    # only rank 0 wrote: one log row per step, one checkpoint at step 4 (in the directory of these settings)
    [keyed] = (tmp_path / "ddp_ckpt").iterdir()
    assert [s for s, _ in checkpoints.list_checkpoints(keyed)] == [4]


@pytest.mark.slow
def test_torchrun_trains_an_ablation_like_one_process(tmp_path):
    """Separate layers: a batch of one language leaves the other's parameters without a gradient, which DDP
    must be told about (find_unused_parameters); the views come out as one process trains them."""
    rng = random.Random(1)
    pieces = [f"p{i}" for i in range(60)]
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + pieces) + "\n")
    tokens = []
    for lang in ("en", "xa"):
        docs = [" ".join(rng.choice(pieces) for _ in range(rng.randint(5, 40))) for _ in range(40)]
        (tmp_path / f"{lang}.txt").write_text("\n".join(docs) + "\n")
        tokens.append(tmp_path / f"{lang}.txt")
    hparams = {**HPARAMS, "ablation": {"separate_embeddings": True, "separate_layers": 1}}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "xling.models.bert",
        "--tokens",
        *map(str, tokens),
        "--vocab",
        str(tmp_path / "vocab.txt"),
        "--out",
        str(tmp_path / "ddp"),
        "--checkpoint-dir",
        str(tmp_path / "ddp_ckpt"),
        "--hparams",
        json.dumps(hparams),
    ]
    run = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-5000:]
    with one_torch_thread():
        bert.pretrain(tokens, tmp_path / "vocab.txt", tmp_path / "single", tmp_path / "single_ckpt", hparams)
    for lang in ("en", "xa"):
        a, b = (load_file(tmp_path / run / lang / "model.safetensors") for run in ("ddp", "single"))
        assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a), lang
