"""A killed pretraining job is harmless: the rerun resumes and ends with bit-identical weights (CPU).
A changed setting trains beside the old checkpoints; a changed runtime setting resumes from them."""

import json
import logging
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
from tiny_checkpoints import one_torch_thread

from xling.models import bert, checkpoints

REPO = Path(__file__).resolve().parents[1]
# dropout on and gradient accumulation on: both must replay exactly after a resume
HPARAMS = {
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 64,
    "window": 16,
    "batch_size": 8,
    "micro_batch_size": 4,
    "max_steps": 120,
    "warmup_steps": 20,
    "learning_rate": 1e-3,
    "log_every": 10,
    "checkpoint_every": 10,
    "keep_checkpoints": 2,
    "dropout": 0.1,
    "seed": 7,
}


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


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
    with one_torch_thread():  # module-scoped: the torch_one_thread fixture is not active yet
        bert.pretrain(*corpus, d / "model", d / "ckpt", HPARAMS)
    return load_file(d / "model" / "model.safetensors")


def cli(corpus, d: Path) -> subprocess.Popen:
    tokens, vocab = corpus
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "xling.models.bert",
        "--tokens",
        *map(str, tokens),
        "--vocab",
        str(vocab),
        "--out",
        str(d / "model"),
        "--checkpoint-dir",
        str(d / "ckpt"),
        "--hparams",
        json.dumps(HPARAMS),
        "--log",
        str(d / "log.tsv"),
    ]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)


def checkpoint_dirs(root: Path) -> list[Path]:
    """The per-setting checkpoint directories the trainer made under `root`."""
    return sorted(d for d in root.iterdir() if d.is_dir()) if root.is_dir() else []


def kill_after_first_checkpoint(proc: subprocess.Popen, ckpt: Path, sig: int) -> str:
    deadline = time.monotonic() + 45
    while not any(ckpt.glob("*/ckpt-*.pt")):
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


@pytest.mark.slow
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
        while not any(ckpt.glob("*/ckpt-*.pt")):
            time.sleep(0.002)
        os.kill(os.getpid(), signal.SIGUSR1)

    threading.Thread(target=signal_after_first_checkpoint, daemon=True).start()
    previous = signal.getsignal(signal.SIGUSR1)
    with pytest.raises(bert.Interrupted) as stopped:
        bert.pretrain(*corpus, tmp_path / "model", ckpt, HPARAMS)
    assert stopped.value.code == 128 + signal.SIGUSR1
    assert signal.getsignal(signal.SIGUSR1) is previous  # handlers restored
    [keyed] = checkpoint_dirs(ckpt)
    steps = [s for s, _ in checkpoints.list_checkpoints(keyed)]
    assert 0 < steps[-1] < HPARAMS["max_steps"] and len(steps) <= HPARAMS["keep_checkpoints"]
    assert not (tmp_path / "model").exists()


@pytest.mark.slow
def test_sigkill_resumes_from_last_periodic_checkpoint(corpus, reference, tmp_path):
    proc = cli(corpus, tmp_path)
    kill_after_first_checkpoint(proc, tmp_path / "ckpt", signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    step = resume_and_compare(corpus, tmp_path, reference)
    assert step % HPARAMS["checkpoint_every"] == 0


SMALL = {**HPARAMS, "max_steps": 30, "hidden_size": 16, "intermediate_size": 32}


def weights(d: Path) -> dict:
    return load_file(d / "model.safetensors")


def test_changed_setting_trains_beside_the_old_checkpoints(corpus, tmp_path, caplog):
    """A new hyper-parameter or a new corpus starts its own checkpoint directory instead of stopping the run;
    going back to the first setting resumes from its checkpoints and ends with the same weights."""
    root = tmp_path / "ckpt"
    bert.pretrain(*corpus, tmp_path / "a", root, SMALL)
    [first] = checkpoint_dirs(root)
    bert.pretrain(*corpus, tmp_path / "b", root, {**SMALL, "learning_rate": 2e-3})
    assert len(checkpoint_dirs(root)) == 2
    assert not all(torch.equal(weights(tmp_path / "a")[k], v) for k, v in weights(tmp_path / "b").items())
    tokens, vocab = corpus
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    for path in tokens:  # the same languages, half of each corpus
        lines = path.read_text().splitlines()
        (fewer / path.name).write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    bert.pretrain([fewer / p.name for p in tokens], vocab, tmp_path / "c", root, SMALL)
    assert len(checkpoint_dirs(root)) == 3
    with caplog.at_level(logging.INFO, logger="xling.models.bert"):
        bert.pretrain(*corpus, tmp_path / "a_again", root, SMALL)
    assert f"resumed from {first}" in caplog.text
    assert all(torch.equal(weights(tmp_path / "a")[k], v) for k, v in weights(tmp_path / "a_again").items())


def test_changed_runtime_settings_resume_from_the_same_checkpoints(corpus, tmp_path, caplog):
    root = tmp_path / "ckpt"
    bert.pretrain(*corpus, tmp_path / "a", root, SMALL)
    runtime = {"log_every": 5, "checkpoint_every": 7, "keep_checkpoints": 1, "device": "cpu"}
    assert set(runtime) | {"threads"} == checkpoints.RESUMABLE_CHANGES  # every runtime setting at once
    with caplog.at_level(logging.INFO, logger="xling.models.bert"):
        bert.pretrain(*corpus, tmp_path / "b", root, {**SMALL, **runtime})
    assert len(checkpoint_dirs(root)) == 1
    assert re.search(r"resumed from \S+: step 20,", caplog.text), caplog.text
    assert all(torch.equal(weights(tmp_path / "a")[k], v) for k, v in weights(tmp_path / "b").items())


def test_micro_batches_change_the_weights_with_dropout(corpus, tmp_path):
    """Why micro_batch_size is a hyper-parameter, not a runtime setting: each micro-batch draws its own
    dropout masks, so splitting a step's batch differently trains other weights (without dropout it
    changes only the order of the gradient sums)."""

    def difference(dropout: float) -> float:
        h = {**SMALL, "max_steps": 5, "dropout": dropout}
        bert.pretrain(*corpus, tmp_path / f"two{dropout}", tmp_path / "ckpt", h)
        bert.pretrain(*corpus, tmp_path / f"one{dropout}", tmp_path / "ckpt", {**h, "micro_batch_size": 8})
        a, b = weights(tmp_path / f"two{dropout}"), weights(tmp_path / f"one{dropout}")
        return max(float((a[k] - b[k]).abs().max()) for k in a)

    assert difference(0.1) > 1e-4  # 7e-4 after 5 warm-up steps
    assert difference(0.0) < 1e-6  # float rounding
    assert len(checkpoint_dirs(tmp_path / "ckpt")) == 4


def test_checkpoints_of_other_settings_refuse_to_resume(corpus, tmp_path):
    """A checkpoint directory moved under another setting's name is refused, not silently resumed."""
    root = tmp_path / "ckpt"
    bert.pretrain(*corpus, tmp_path / "model", root, SMALL)
    [keyed] = checkpoint_dirs(root)
    _, path = checkpoints.list_checkpoints(keyed)[-1]
    state = torch.load(path, weights_only=True)
    state["hparams"]["max_steps"] = 40
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"ckpt-000000020\.pt: hyper-parameters differ.*max_steps"):
        bert.pretrain(*corpus, tmp_path / "model2", root, SMALL)


def test_bf16_autocast_resumes_exactly_and_trains_beside_fp32(corpus, tmp_path, caplog):
    """precision bf16 (CPU autocast) changes the numbers, so it trains in its own checkpoint directory; its
    weights stay fp32, and a run resumed from a mid-run checkpoint ends with the uninterrupted run's bits."""
    h = {**SMALL, "precision": "bf16", "keep_checkpoints": 5}
    root = tmp_path / "ckpt"
    bert.pretrain(*corpus, tmp_path / "whole", root, h)
    [keyed] = checkpoint_dirs(root)
    assert [s for s, _ in checkpoints.list_checkpoints(keyed)] == [10, 20]
    checkpoints.list_checkpoints(keyed)[-1][1].unlink()  # as if killed between steps 20 and 30
    with caplog.at_level(logging.INFO, logger="xling.models.bert"):
        bert.pretrain(*corpus, tmp_path / "resumed", root, h)
    assert re.search(r"resumed from \S+: step 10,", caplog.text), caplog.text
    whole, resumed = weights(tmp_path / "whole"), weights(tmp_path / "resumed")
    assert all(v.dtype == torch.float32 and torch.equal(resumed[k], v) for k, v in whole.items())

    bert.pretrain(*corpus, tmp_path / "fp32", root, SMALL)
    assert len(checkpoint_dirs(root)) == 2
    fp32 = weights(tmp_path / "fp32")
    difference = max(float((fp32[k] - v).abs().max()) for k, v in whole.items())
    assert 0 < difference < 0.05  # bf16 rounding of the forward pass, not another trajectory


def test_precision_must_be_fp32_or_bf16():
    with pytest.raises(ValueError, match="precision must be bf16 or fp32, not 'auto'"):
        bert.resolve_hparams({"precision": "auto"})
