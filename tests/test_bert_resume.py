"""A killed pretraining job is harmless: the rerun resumes and ends with bit-identical weights (CPU)."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from xling.models import bert

REPO = Path(__file__).resolve().parents[1]
# dropout on and gradient accumulation on: both must replay exactly after a resume
HPARAMS = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64,
           "window": 16, "batch_size": 8, "micro_batch_size": 4, "max_steps": 120, "warmup_steps": 20,
           "learning_rate": 1e-3, "log_every": 10, "checkpoint_every": 10, "keep_checkpoints": 2,
           "dropout": 0.1, "seed": 7}


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread, as the CLI runs get through OMP_NUM_THREADS: same kernels, same bits."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    rng = random.Random(0)
    pieces = [f"p{i}" for i in range(120)] + [f"##q{i}" for i in range(60)]
    (d / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + pieces) + "\n")
    for lang in ("en", "fr"):
        docs = [" ".join(rng.choice(pieces) for _ in range(rng.randint(3, 50))) for _ in range(150)]
        (d / f"{lang}.txt").write_text("\n".join(docs) + "\n")
    return [d / "en.txt", d / "fr.txt"], d / "vocab.txt"


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """(a) the uninterrupted run, in this process, on one thread like the CLI runs below."""
    d = tmp_path_factory.mktemp("reference")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # module-scoped: set here, the autouse fixture is not active yet
    try:
        bert.pretrain(*corpus, d / "model", d / "ckpt", HPARAMS)
    finally:
        torch.set_num_threads(threads)
    return load_file(d / "model" / "model.safetensors")


def cli(corpus, d: Path) -> subprocess.Popen:
    tokens, vocab = corpus
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "xling.models.bert", "--tokens", *map(str, tokens), "--vocab", str(vocab),
           "--out", str(d / "model"), "--checkpoint-dir", str(d / "ckpt"), "--hparams", json.dumps(HPARAMS),
           "--log", str(d / "log.tsv")]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)


def kill_after_first_checkpoint(proc: subprocess.Popen, ckpt: Path, sig: int) -> str:
    deadline = time.monotonic() + 45
    while not any(ckpt.glob("ckpt-*.pt")):
        assert proc.poll() is None, f"exited early with {proc.returncode}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "no checkpoint after 45 s"
        time.sleep(0.005)
    assert proc.poll() is None, "finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return err


def resume_and_compare(corpus, d: Path, reference) -> int:
    proc = cli(corpus, d)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    resumed = re.search(r"resumed from \S+: step (\d+)", err)
    assert resumed and int(resumed.group(1)) > 0, err
    final = load_file(d / "model" / "model.safetensors")
    assert final.keys() == reference.keys()
    assert all(torch.equal(final[k], reference[k]) for k in final)
    rows = (d / "log.tsv").read_text().splitlines()
    assert [int(r.split("\t")[0]) for r in rows[1:]] == list(range(10, 121, 10))  # no gap, no duplicate
    return int(resumed.group(1))


def test_sigterm_checkpoints_exits_nonzero_and_resumes_exactly(corpus, reference, tmp_path):
    err = kill_after_first_checkpoint(cli(corpus, tmp_path), tmp_path / "ckpt", signal.SIGTERM)
    saved = re.search(r"stopped by SIGTERM at step (\d+); the last checkpoint is (\S+)", err)
    assert saved, err
    assert saved.group(2).endswith(f"ckpt-{int(saved.group(1)):09d}.pt") and Path(saved.group(2)).exists()
    assert "exiting with 143" in err and not (tmp_path / "model").exists()
    step = resume_and_compare(corpus, tmp_path, reference)
    assert step == int(saved.group(1))


def test_sigusr1_checkpoints_and_raises_exit_code(corpus, tmp_path):
    """In-process: the handler catches SIGUSR1 (SLURM's --signal), saves the step it finished, exits 138."""
    ckpt = tmp_path / "ckpt"

    def signal_after_first_checkpoint():
        while not any(ckpt.glob("ckpt-*.pt")):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGUSR1)

    threading.Thread(target=signal_after_first_checkpoint, daemon=True).start()
    previous = signal.getsignal(signal.SIGUSR1)
    with pytest.raises(bert.Interrupted) as stopped:
        bert.pretrain(*corpus, tmp_path / "model", ckpt, HPARAMS)
    assert stopped.value.code == 128 + signal.SIGUSR1
    assert signal.getsignal(signal.SIGUSR1) is previous  # handlers restored
    steps = [s for s, _ in bert.list_checkpoints(ckpt)]
    assert 0 < steps[-1] < HPARAMS["max_steps"] and len(steps) <= HPARAMS["keep_checkpoints"]
    assert not (tmp_path / "model").exists()


def test_sigkill_resumes_from_last_periodic_checkpoint(corpus, reference, tmp_path):
    proc = cli(corpus, tmp_path)
    kill_after_first_checkpoint(proc, tmp_path / "ckpt", signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    step = resume_and_compare(corpus, tmp_path, reference)
    assert step % HPARAMS["checkpoint_every"] == 0


def test_changed_hyperparameters_refuse_to_resume(corpus, tmp_path):
    bert.pretrain(*corpus, tmp_path / "model", tmp_path / "ckpt",
                  {**HPARAMS, "max_steps": 30, "hidden_size": 16, "intermediate_size": 32})
    with pytest.raises(ValueError, match=r"ckpt-000000020\.pt: hyper-parameters differ.*max_steps"):
        bert.pretrain(*corpus, tmp_path / "model2", tmp_path / "ckpt",
                      {**HPARAMS, "max_steps": 40, "hidden_size": 16, "intermediate_size": 32})
