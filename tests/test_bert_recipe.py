"""The pretraining recipe's choices: the learning-rate schedule (linear, or Conneau et al.'s inverse square root), the
batch counted in tokens (Liu et al.'s window study) and the checkpoint of the best dev perplexity (Conneau et al.
§3), which a killed run still resumes to exactly."""

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from xling.models import bert
from xling.models.bert_hparams import as_before, blocks_per_batch, learning_rate_schedule, resolve_hparams
from xling.models.checkpoints import trajectory
from xling.models.mlm_data import SPECIAL_TOKENS, load_blocks, read_vocab
from xling.models.selection import DevSelection

REPO = Path(__file__).resolve().parents[1]
HPARAMS = {
    "hidden_size": 16,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 32,
    "window": 16,
    "batch_size": 4,
    "max_steps": 40,
    "warmup_steps": 5,
    "learning_rate": 3e-3,
    "log_every": 10,
    "checkpoint_every": 10,
    "keep_checkpoints": 2,
    "dropout": 0.1,
    "seed": 3,
}
SELECTED = {**HPARAMS, "selection": "dev_perplexity", "dev_every": 5}

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """en and fr token files, and en's held-out text (dev/en.txt) from the same pieces (p*; the vocabulary's ##q*
    are in no file)."""
    d = tmp_path_factory.mktemp("corpus")
    rng = random.Random(0)
    pieces = [f"p{i}" for i in range(60)] + [f"##q{i}" for i in range(30)]
    (d / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + pieces) + "\n")
    (d / "dev").mkdir()
    for path, n in ((d / "en.txt", 80), (d / "fr.txt", 80), (d / "dev" / "en.txt", 20)):
        path.write_text(
            "\n".join(" ".join(rng.choice(pieces[:60]) for _ in range(rng.randint(3, 40))) for _ in range(n)) + "\n"
        )
    return [d / "en.txt", d / "fr.txt"], d / "vocab.txt", d / "dev" / "en.txt"


def rates(h: dict, steps: int) -> list[float]:
    """The learning rate of each of the first `steps` optimizer steps."""
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=h["learning_rate"])
    schedule = learning_rate_schedule(optimizer, h)
    out = []
    for _ in range(steps):
        out.append(schedule.get_last_lr()[0])
        optimizer.step()
        schedule.step()
    return out


def test_inverse_sqrt_schedule_by_hand():
    """Vaswani et al.'s schedule as Conneau et al. train with it: lr * step / warmup up to the warm-up, then
    lr * sqrt(warmup / step); it never reaches 0, whatever max_steps."""
    h = resolve_hparams({"schedule": "inverse_sqrt", "warmup_steps": 4, "learning_rate": 1e-3, "max_steps": 30})
    lr = rates(h, 101)
    assert lr[:5] == pytest.approx([0, 0.25e-3, 0.5e-3, 0.75e-3, 1e-3])
    assert lr[16] == pytest.approx(1e-3 * math.sqrt(4 / 16)) == pytest.approx(0.5e-3)
    assert lr[100] == pytest.approx(1e-3 * 0.2)
    assert lr[30] > 0  # past max_steps: no decay to 0
    linear = rates({**h, "schedule": "linear"}, 31)
    assert linear[4] == pytest.approx(1e-3) and linear[17] == pytest.approx(1e-3 * 13 / 26) and linear[30] == 0


def test_unknown_schedule_or_selection_is_an_error():
    with pytest.raises(ValueError, match="schedule"):
        resolve_hparams({"schedule": "cosine"})
    with pytest.raises(ValueError, match="selection"):
        resolve_hparams({"selection": "best"})


def test_blocks_per_batch_from_batch_tokens():
    """Liu et al. §3.2: the same tokens per step at every window."""
    assert blocks_per_batch({"batch_size": 256, "batch_tokens": None, "window": 20}) == 256
    assert blocks_per_batch({"batch_size": 256, "batch_tokens": 131072, "window": 512}) == 256
    assert blocks_per_batch({"batch_size": 256, "batch_tokens": 131072, "window": 20}) == 6553  # 131,060 tokens
    with pytest.raises(ValueError, match="less than one block"):
        resolve_hparams({"batch_tokens": 100, "window": 128})


def test_new_settings_at_their_old_behaviour_keep_the_checkpoint_key():
    """Checkpoints written before schedule, batch_tokens and selection existed still resume; dev_every counts
    only where checkpoints are selected on dev."""
    before = {
        k: v
        for k, v in resolve_hparams({}).items()
        if k not in ("schedule", "batch_tokens", "selection", "dev_every", "blocks")
    }
    assert trajectory(as_before(resolve_hparams({}))) == trajectory(before)
    assert trajectory(as_before(resolve_hparams({"dev_every": 7}))) == trajectory(before)
    assert "dev_every" in trajectory(as_before(resolve_hparams({"selection": "dev_perplexity"})))
    assert trajectory(as_before(resolve_hparams({"schedule": "inverse_sqrt"}))) != trajectory(before)
    assert trajectory(as_before(resolve_hparams({"blocks": {"short_seq_prob": 0.0}}))) == trajectory(before)
    assert trajectory(as_before(resolve_hparams({"blocks": {"sentence_separator": True}}))) != trajectory(before)
    with pytest.raises(ValueError, match="unknown bert.blocks"):
        resolve_hparams({"blocks": {"separator": True}})


def test_batch_tokens_trains_as_the_same_batch_in_blocks(corpus, tmp_path):
    tokens, vocab, _ = corpus
    bert.pretrain(tokens, vocab, tmp_path / "blocks", tmp_path / "ckpt", {**HPARAMS, "max_steps": 10})
    bert.pretrain(
        tokens,
        vocab,
        tmp_path / "tokens",
        tmp_path / "ckpt",
        {**HPARAMS, "max_steps": 10, "batch_size": 99, "batch_tokens": 4 * 16 + 3},
    )
    a, b = load_file(tmp_path / "blocks" / "model.safetensors"), load_file(tmp_path / "tokens" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


class Scale(torch.nn.Module):
    """A one-weight model whose dev loss is (w - 3)^2 per masked position: the best weight is 3."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))

    def score(self, inputs, positions, targets):
        return (self.w - 3) ** 2 * len(positions)


def test_selection_keeps_the_best_dev_checkpoint(tmp_path):
    blocks = torch.arange(5, 5 + 40).reshape(4, 10)
    dev = DevSelection(blocks, [0, 1, 2, 3, 4], 4, 50, 0.5, 1, 2, tmp_path, 3)
    model = Scale()
    for step, w in ((2, 1.0), (4, 2.5), (6, 4.0), (8, 6.0)):
        model.w.data.fill_(w)
        dev.evaluate(step, model, model.score, torch.device("cpu"))
        dev.prune()
    assert (dev.best_step, dev.best_perplexity) == (4, pytest.approx(math.exp(0.25)))
    assert [p.name for p in tmp_path.glob("best-*.pt")] == ["best-000000004.pt"]
    assert float(dev.best_weights()["w"]) == 2.5
    dev.write_log(tmp_path / "dev_log.tsv")
    rows = [r.split("\t") for r in (tmp_path / "dev_log.tsv").read_text().splitlines()]
    assert rows[0] == ["step", "dev_loss", "dev_perplexity", "selected"]
    assert [(r[0], r[3]) for r in rows[1:]] == [("2", "0"), ("4", "1"), ("6", "0"), ("8", "0")]
    assert float(rows[1][1]) == pytest.approx(4.0) and float(rows[1][2]) == pytest.approx(math.exp(4.0), rel=1e-5)


def test_restore_removes_best_files_written_after_the_checkpoint(tmp_path):
    blocks = torch.arange(5, 5 + 40).reshape(4, 10)
    dev = DevSelection(blocks, [0, 1, 2, 3, 4], 4, 50, 0.5, 1, 2, tmp_path, 3)
    model = Scale()
    model.w.data.fill_(1.0)
    dev.evaluate(2, model, model.score, torch.device("cpu"))
    saved = dev.state()  # the checkpoint of step 2
    model.w.data.fill_(2.0)
    dev.evaluate(4, model, model.score, torch.device("cpu"))  # killed before step 4's checkpoint
    dev.restore(saved)
    assert [p.name for p in tmp_path.glob("best-*.pt")] == ["best-000000002.pt"] and dev.best_step == 2
    (tmp_path / "best-000000002.pt").unlink()
    with pytest.raises(FileNotFoundError, match="missing"):
        dev.restore(saved)


def test_dev_perplexity_is_exp_of_hf_masked_lm_loss(corpus, tmp_path):
    """The trainer's score against BertForMaskedLM's own mean masked-LM loss on the same masked dev blocks."""
    from transformers import BertForMaskedLM

    tokens, vocab, dev_tokens = corpus
    bert.pretrain(
        tokens, vocab, tmp_path / "model", tmp_path / "ckpt", {**SELECTED, "max_steps": 5}, dev_path=dev_tokens
    )
    rows = (tmp_path / "model" / "dev_log.tsv").read_text().splitlines()
    [(step, loss, perplexity, selected)] = [r.split("\t") for r in rows[1:]]
    model = BertForMaskedLM.from_pretrained(tmp_path / "model").eval()
    blocks, _ = load_blocks([dev_tokens], vocab, 16)
    vocabulary = read_vocab(vocab)
    reference = DevSelection(
        blocks,
        [vocabulary[t] for t in SPECIAL_TOKENS],
        vocabulary["[MASK]"],
        len(vocabulary),
        0.15,
        SELECTED["seed"],
        5,
        tmp_path / "unused",
        4,
    )
    with torch.no_grad():
        hf = model(input_ids=reference.inputs, labels=reference.labels).loss
    assert (step, selected) == ("5", "1")
    assert float(loss) == pytest.approx(float(hf), rel=1e-5)
    assert float(perplexity) == pytest.approx(math.exp(float(hf)), rel=1e-5)


def test_selection_needs_a_dev_file_and_only_then(corpus, tmp_path):
    tokens, vocab, dev_tokens = corpus
    with pytest.raises(ValueError, match="dev_perplexity needs one"):
        bert.pretrain(tokens, vocab, tmp_path / "a", tmp_path / "ckpt", SELECTED)
    with pytest.raises(ValueError, match="final none"):
        bert.pretrain(tokens, vocab, tmp_path / "b", tmp_path / "ckpt", HPARAMS, dev_path=dev_tokens)


def cli(corpus, d: Path) -> subprocess.Popen:
    tokens, vocab, dev_tokens = corpus
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
        json.dumps(SELECTED),
        "--dev-tokens",
        str(dev_tokens),
    ]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)


def test_killed_selection_run_resumes_to_the_same_model_and_scores(corpus, tmp_path):
    """SIGKILL after the first checkpoint (a best file of a later step may be on disk), then a rerun: the model,
    the scores and the step selected are those of an uninterrupted run, and one best file is left."""
    tokens, vocab, dev_tokens = corpus
    bert.pretrain(tokens, vocab, tmp_path / "reference", tmp_path / "ref-ckpt", SELECTED, dev_path=dev_tokens)
    run = tmp_path / "run"
    proc = cli(corpus, run)
    deadline = time.monotonic() + 60
    while not any((run / "ckpt").glob("*/ckpt-*.pt")):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not (run / "model").exists()
    proc = cli(corpus, run)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert re.search(r"resumed from \S+: step [1-9]", err), err
    reference = load_file(tmp_path / "reference" / "model.safetensors")
    final = load_file(run / "model" / "model.safetensors")
    assert all(torch.equal(final[k], reference[k]) for k in reference)
    assert (run / "model" / "dev_log.tsv").read_text() == (tmp_path / "reference" / "dev_log.tsv").read_text()
    assert len(list((run / "ckpt").glob("*/best-*.pt"))) == 1


def test_the_selected_model_is_the_best_dev_step_not_the_last(corpus, tmp_path):
    """Dev text of pieces the training text never has: training moves probability onto the training pieces, so the
    dev perplexity rises after the first evaluation, and the model written is that step's weights, not those the
    same training has at its last step."""
    tokens, vocab, _ = corpus
    rng = random.Random(1)
    unseen = [f"##q{i}" for i in range(30)]
    assert not set(unseen) & {piece for path in tokens for piece in path.read_text().split()}
    dev_tokens = tmp_path / "dev" / "en.txt"
    dev_tokens.parent.mkdir()
    dev_tokens.write_text("\n".join(" ".join(rng.choice(unseen) for _ in range(30)) for _ in range(20)) + "\n")
    bert.pretrain(tokens, vocab, tmp_path / "selected", tmp_path / "ckpt", SELECTED, dev_path=dev_tokens)
    rows = [r.split("\t") for r in (tmp_path / "selected" / "dev_log.tsv").read_text().splitlines()[1:]]
    best = min(rows, key=lambda r: float(r[2]))
    assert best[3] == "1" and int(best[0]) < SELECTED["max_steps"], rows
    bert.pretrain(tokens, vocab, tmp_path / "final", tmp_path / "ckpt2", HPARAMS)
    selected = load_file(tmp_path / "selected" / "model.safetensors")
    final = load_file(tmp_path / "final" / "model.safetensors")
    assert not all(torch.equal(selected[k], final[k]) for k in final)
