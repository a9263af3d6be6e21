"""Fine-tuning alignment (xling.tune.align, Cao et al. 2020 §3.3) on a tiny randomly initialised BERT: the loss
and its gradient against hand computations, the regulariser's fixed point, batching, resume, the input files."""

import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import BertModel
from tiny_checkpoints import save_tiny_bert

from xling.data.formats import FormatError
from xling.models.checkpoints import Interrupted
from xling.models.pretrained import load_pretrained
from xling.tune import align as al

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
EN = [f"e{i}" for i in range(10)]
XX = [f"x{i}" for i in range(10)]  # x{i} translates e{i}
SETTINGS = {
    "pairs_per_language": 2,
    "epochs": 1,
    "learning_rate": 1e-3,
    "betas": [0.9, 0.98],
    "eps": 1e-9,
    "warmup": 0.1,
    "regularization": 1.0,
    "layer": None,
}


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"), SPECIALS + EN + XX + ["##a"])


def toy_pairs(lang: str, n: int, seed: int, copy: bool = False) -> al.ParallelWords:
    """English sentences of e-words and their word-by-word translations in reversed order (x-words; with copy,
    the English sentence itself), every word linked to its translation."""
    rng = np.random.default_rng(seed)
    en, xx, links = [], [], []
    for _ in range(n):
        words = [int(w) for w in rng.integers(0, 10, rng.integers(2, 6))]
        en.append([EN[w] for w in words])
        if copy:
            xx.append(list(en[-1]))
            links.append([(i, i) for i in range(len(words))])
        else:
            xx.append([XX[w] for w in reversed(words)])
            links.append([(i, len(words) - 1 - i) for i in range(len(words))])
    return al.ParallelWords(lang, en, xx, links)


def weights(model_dir: Path) -> dict:
    return load_file(model_dir / "model.safetensors")


# ---------------------------------------------------------------------------------------------- the loss


def test_loss_and_gradient_by_hand():
    xx = torch.tensor([[1.0, 2.0], [0.0, 1.0]], requires_grad=True)
    en = torch.tensor([[0.0, 0.0], [2.0, 1.0]], requires_grad=True)
    words = torch.tensor([[1.0, 1.0], [3.0, -1.0], [0.5, 0.5]], requires_grad=True)
    initial = torch.tensor([[0.0, 1.0], [3.0, 1.0], [0.5, 0.5]])
    loss, pairs, drift = al.alignment_loss(xx, en, words, initial, regularization=0.5)
    # pairs: (1 + 4) + (4 + 0) = 9; drift: (1 + 0) + (0 + 4) + 0 = 5; loss 9 + 0.5 * 5
    assert (pairs.item(), drift.item(), loss.item()) == (9.0, 5.0, 11.5)
    loss.backward()
    assert xx.grad.tolist() == [[2.0, 4.0], [-4.0, 0.0]]  # 2 (xx - en)
    assert en.grad.tolist() == [[-2.0, -4.0], [4.0, 0.0]]  # -2 (xx - en)
    assert words.grad.tolist() == [[1.0, 0.0], [0.0, -2.0], [0.0, 0.0]]  # 2 * 0.5 * (words - initial)


def test_batch_loss_on_a_tiny_bert_by_hand(bert_dir):
    """The batch loss is the formula on the vectors of each word's LAST piece, read off a separate forward
    pass; its gradient in the embeddings is the finite-difference one (float64)."""
    model, tokenizer, _ = load_pretrained(bert_dir)
    bert = model.bert.double().eval()
    bert0 = BertModel(bert.config).double().eval()  # another "initial" model, so the drift term is not zero
    en_words, xx_words = [["e1", "e2a", "e3"], ["e5"]], [["x3", "x2a", "x1", "x4a"], ["x5"]]
    links = [[(0, 2), (1, 1)], [(0, 0)]]  # e3 and x4a have no link; the drift term still counts e3
    en, xx = al.encode_words(tokenizer, en_words, 16), al.encode_words(tokenizer, xx_words, 16)
    # [CLS] e1 e2 ##a e3 [SEP]: the last pieces of the three words are at 1, 3, 4 (x4a ends 2 pieces later)
    assert [f["last"].tolist() for f in en] == [[1, 3, 4], [1]]
    assert [f["last"].tolist() for f in xx] == [[1, 3, 4, 6], [1]]

    def loss_of(b):
        return al.batch_loss(b, bert0, en, xx, links, pad_id=0, layer=2, regularization=0.7, device=torch.device("cpu"))

    loss, pairs, drift, n_links = loss_of(bert)

    def states(model, f):  # each sentence on its own, unpadded
        return model(torch.as_tensor(f["ids"], dtype=torch.long)[None], output_hidden_states=True).hidden_states[2][0]

    h_en, h_xx, h0 = [states(bert, f) for f in en], [states(bert, f) for f in xx], [states(bert0, f) for f in en]
    hand_pairs = (
        ((h_xx[0][4] - h_en[0][1]) ** 2).sum()
        + ((h_xx[0][3] - h_en[0][3]) ** 2).sum()
        + ((h_xx[1][1] - h_en[1][1]) ** 2).sum()
    )
    hand_drift = sum(((h_en[0][p] - h0[0][p]) ** 2).sum() for p in (1, 3, 4)) + ((h_en[1][1] - h0[1][1]) ** 2).sum()
    assert n_links == 3
    torch.testing.assert_close(pairs, hand_pairs)
    torch.testing.assert_close(drift, hand_drift)
    torch.testing.assert_close(loss, hand_pairs + 0.7 * hand_drift)

    loss.backward()
    table = bert.embeddings.word_embeddings.weight
    rows = [tokenizer.convert_tokens_to_ids(t) for t in ("e1", "##a", "x3")]
    eps = 1e-6
    with torch.no_grad():
        for row in rows:
            for col in (0, 7):
                table[row, col] += eps
                up = loss_of(bert)[0].item()
                table[row, col] -= 2 * eps
                down = loss_of(bert)[0].item()
                table[row, col] += eps
                assert table.grad[row, col].item() == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-8)


def test_words_cut_off_by_max_length_lose_their_links(bert_dir):
    _, tokenizer, _ = load_pretrained(bert_dir)
    encoded = al.encode_words(tokenizer, [["e1", "e2a", "e3", "e4"]], max_length=4)  # [CLS] e1 e2 [SEP]
    assert encoded[0]["ids"][-1] == tokenizer.sep_token_id
    assert encoded[0]["last"].tolist() == [1, -1, -1, -1]  # e2a lost its last piece: no vector


# ---------------------------------------------------------------------------------------------- batching


def test_every_step_takes_equal_batches_and_an_epoch_visits_every_pair():
    sizes, k = [7, 3], 2
    steps = [al.step_pairs(sizes, k, seed=5, step=s) for s in range(4)]  # ceil(7 / 2) = 4 steps per epoch
    assert all(len(rows) == k for step in steps for rows in step)
    first = [i for step in steps for i in step[0]]
    assert len(first) == 8 and set(first) == set(range(7))  # 8 slots: every pair, one of them twice
    assert set(i for step in steps for i in step[1]) == {0, 1, 2}  # the smaller language wraps around
    assert al.step_pairs(sizes, k, seed=5, step=4) != steps[0]  # the next epoch is another permutation
    assert al.step_pairs(sizes, k, seed=5, step=2) == steps[2]  # a function of (seed, step) only


# ---------------------------------------------------------------------------------------------- training


def test_identical_source_and_target_leave_the_model_unchanged(bert_dir, tmp_path):
    """Source = target: every link joins a word to itself (L = 0) and f = f0 at the start (R = 0), so the
    gradient is zero and Adam moves nothing."""
    record = al.align(
        bert_dir, [toy_pairs("xe", 8, 1, copy=True)], tmp_path / "model", tmp_path / "ckpt", SETTINGS, seed=1
    )
    assert record["steps"] == 4 and record["last_loss"] == 0.0
    before, after = weights(bert_dir), weights(tmp_path / "model")
    assert before.keys() == after.keys()
    assert all(torch.equal(before[name], after[name]) for name in before)


def test_alignment_brings_translations_together_and_keeps_english(bert_dir, tmp_path):
    train, test = [toy_pairs("xa", 200, 1)], toy_pairs("xa", 30, 2)
    settings = {**SETTINGS, "learning_rate": 3e-3}
    record = al.align(bert_dir, train, tmp_path / "model", tmp_path / "ckpt", settings, seed=1)
    assert record["languages"]["xa"]["pairs"] == 200 and record["steps"] == 100

    def held_out(model_dir):
        model, tokenizer, _ = load_pretrained(model_dir)
        en = al.encode_words(tokenizer, test.en, 32)
        xx = al.encode_words(tokenizer, test.xx, 32)
        with torch.no_grad():
            _, pairs, _, _ = al.batch_loss(
                model.bert.eval(),
                model.bert,
                en,
                xx,
                test.links,
                pad_id=0,
                layer=2,
                regularization=1.0,
                device=torch.device("cpu"),
            )
        return pairs.item()

    assert held_out(tmp_path / "model") < 0.2 * held_out(bert_dir)
    # the regulariser holds English in place: its words move much less than their translations
    moved = {}
    for side in ("en", "xx"):
        states = []
        for model_dir in (bert_dir, tmp_path / "model"):
            model, tokenizer, _ = load_pretrained(model_dir)
            encoded = al.encode_words(tokenizer, getattr(test, side), 32)
            with torch.no_grad():
                rows = al.word_states(model.bert.eval(), [f["ids"] for f in encoded], 0, 2, torch.device("cpu"))
            states.append(torch.cat([rows[r, f["last"][f["last"] >= 0]] for r, f in enumerate(encoded)]))
        moved[side] = ((states[1] - states[0]) ** 2).sum().item()
    assert moved["en"] < 0.25 * moved["xx"]
    log = (tmp_path / "model" / "training_log.tsv").read_text().splitlines()
    assert log[0].split("\t") == list(al.LOG_COLUMNS) and len(log) == 101
    assert record["last_loss"] < record["first_loss"]


def test_resume_after_a_signal_gives_the_same_weights(bert_dir, tmp_path):
    data = [toy_pairs("xa", 20, 1), toy_pairs("xb", 14, 3)]
    whole = al.align(bert_dir, data, tmp_path / "whole", tmp_path / "ckpt-whole", SETTINGS, seed=2)

    def stop_at_4(state):
        if state["step"] == 4:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Interrupted) as stopped:
        al.align(
            bert_dir, data, tmp_path / "cut", tmp_path / "ckpt", SETTINGS, seed=2, checkpoint_every=3, on_step=stop_at_4
        )
    assert stopped.value.code == 128 + signal.SIGTERM and not (tmp_path / "cut").exists()
    resumed = al.align(bert_dir, data, tmp_path / "cut", tmp_path / "ckpt", SETTINGS, seed=2, checkpoint_every=3)
    assert resumed["steps"] == whole["steps"] == 10
    a, b = weights(tmp_path / "whole"), weights(tmp_path / "cut")
    assert all(torch.equal(a[name], b[name]) for name in a)
    assert (tmp_path / "whole" / "training_log.tsv").read_text() == (tmp_path / "cut" / "training_log.tsv").read_text()


def test_a_changed_setting_does_not_resume_another_settings_checkpoint(bert_dir, tmp_path):
    data = [toy_pairs("xa", 8, 1)]
    al.align(bert_dir, data, tmp_path / "a", tmp_path / "ckpt", SETTINGS, seed=1, checkpoint_every=1)
    al.align(
        bert_dir,
        data,
        tmp_path / "b",
        tmp_path / "ckpt",
        {**SETTINGS, "regularization": 0.5},
        seed=1,
        checkpoint_every=1,
    )
    assert len(list((tmp_path / "ckpt").iterdir())) == 2


# ---------------------------------------------------------------------------------------------- files


def write_split(d: Path, en: str, xx: str, align: str) -> list[Path]:
    paths = [d / "train4.en", d / "train4.xa", d / "train4.align"]
    for path, text in zip(paths, (en, xx, align), strict=True):
        path.write_text(text, encoding="utf-8")
    return paths


def test_reads_a_split(tmp_path):
    data = al.read_parallel_words("xa", *write_split(tmp_path, "a b c\nd e\n", "x y\nz w v\n", "0-1 2-0\n1-2\n"))
    assert data.en == [["a", "b", "c"], ["d", "e"]] and data.xx == [["x", "y"], ["z", "w", "v"]]
    assert data.links == [[(0, 1), (2, 0)], [(1, 2)]]


def test_bad_split_files_name_the_file_and_line(tmp_path):
    with pytest.raises(FormatError, match=r"train4\.align:2: link 2-0 outside the sentence pair"):
        al.read_parallel_words("xa", *write_split(tmp_path, "a b c\nd e\n", "x y\nz w v\n", "0-1\n2-0\n"))
    with pytest.raises(FormatError, match=r"train4\.align: 1 lines, but .*train4\.en: 2 lines"):
        al.read_parallel_words("xa", *write_split(tmp_path, "a b c\nd e\n", "x y\nz w v\n", "0-1\n"))
