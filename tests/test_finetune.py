"""The fine-tuning layer (xling.tune.finetune, xling.tune.heads) and zero-shot evaluation
(xling.evaluate.transfer) on a tiny randomly initialised BERT and toy tasks the tests make."""

import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
import tiny_checkpoints

from xling.encode.encoder import Shift
from xling.evaluate import transfer
from xling.tune import finetune as ft
from xling.tune.heads import load_bert

REPO = Path(__file__).resolve().parents[1]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"w{i}" for i in range(20)]
LABEL_WORD = {"entailment": "w10", "neutral": "w11", "contradiction": "w12"}
SETTINGS = {
    "epochs": 2,
    "batch_size": 8,
    "learning_rate": 3e-3,
    "warmup": 0.1,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "max_length": 16,
    "max_train": None,
}


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


def save_tiny_bert(out: Path, layers: int = 2) -> Path:
    return tiny_checkpoints.save_tiny_bert(out, SPECIALS + WORDS, layers=layers)


def toy_xnli(n: int, seed: int) -> list[tuple[str, str, str]]:
    """The label is named by one word of the hypothesis: learnable in a few steps."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = list(LABEL_WORD)[i % 3]
        premise = " ".join(rng.choice(WORDS[:10]) for _ in range(rng.randint(3, 6)))
        words = [rng.choice(WORDS[:10]) for _ in range(rng.randint(1, 3))] + [LABEL_WORD[label]]
        rng.shuffle(words)
        out.append((premise, " ".join(words), label))
    return out


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"))


def run(bert_dir: Path, out: Path, **kwargs) -> dict:
    options = {"seed": 3, "freeze": 0, "checkpoint_every": 1000, **kwargs}
    settings = {**SETTINGS, **options.pop("settings", {})}
    on_step = options.pop("on_step", None)
    return ft.finetune(
        "xnli",
        load_bert(bert_dir),
        toy_xnli(240, 1),
        {"en": toy_xnli(60, 2)},
        out / "model",
        out / "ckpt",
        settings,
        ft.FinetuneRun(**options),
        score=transfer.score,
        on_step=on_step,
    )


def test_learns_the_toy_task_and_selects_on_english_dev(bert_dir, tmp_path):
    record = run(bert_dir, tmp_path, settings={"epochs": 5})
    assert record["selection_score"] > 80  # chance is 33.3
    assert record["best_epoch"] == 1 + int(np.argmax([e["selection_score"] for e in record["epochs"]]))
    table, items = transfer.evaluate_items(
        tmp_path / "model",
        {"en": {"dev": toy_xnli(60, 2), "test": toy_xnli(60, 5)}},
        transfer.TransferTest(pivot="en", layer=1, alphas=[1.0], positions="all", mds=False, batch_size=16),
    )
    dev = table[(table["split"] == "dev") & (table.metric == "accuracy")].value.item()
    assert dev == pytest.approx(record["selection_score"])  # the saved model is the selected one
    # the per-example items give each row's number exactly; the learned model is not flagged
    sums = items.groupby(["split", "metric"])[["numerator", "denominator"]].sum()
    for row in table.itertuples():
        assert 100.0 * sums.numerator[row.split, row.metric] / sums.denominator[row.split, row.metric] == row.value
    assert table.learn_check.tolist() == [True, False] and table.flag.isna().all()


def test_the_training_loss_is_recorded_every_few_steps_and_at_each_epoch_s_end(bert_dir, tmp_path):
    """240 examples in batches of 7: 35 steps an epoch, 70 in all, so a point every 2 steps (about 50 points),
    and one at step 35 where the first epoch ends (its dev score's step)."""
    record = run(bert_dir, tmp_path, settings={"epochs": 2, "batch_size": 7})
    assert record["loss_every"] == 2 and record["steps"] == 70
    steps = [point["step"] for point in record["train_loss"]]
    assert steps == [*range(2, 35, 2), 35, *range(36, 71, 2)]
    assert [e["step"] for e in record["epochs"]] == [35, 70]
    losses = [point["loss"] for point in record["train_loss"]]
    assert all(np.isfinite(losses)) and min(losses) > 0 and losses[-1] < losses[0]
    assert json.loads((tmp_path / "model" / "finetune.json").read_text())["train_loss"] == record["train_loss"]


def test_frozen_layers_are_bit_identical_after_fine_tuning(bert_dir, tmp_path):
    run(bert_dir, tmp_path, freeze=1, settings={"epochs": 1})
    before = load_file(bert_dir / "model.safetensors")
    after = load_file(tmp_path / "model" / "encoder" / "model.safetensors")
    frozen = [k for k in after if k.startswith("embeddings.") or k.startswith("encoder.layer.0.")]
    trained = [k for k in after if k.startswith("encoder.layer.1.")]
    assert frozen and trained
    assert all(torch.equal(after[k], before[f"bert.{k}"]) for k in frozen)
    assert not all(torch.equal(after[k], before[f"bert.{k}"]) for k in trained)


def test_same_seed_same_weights_other_seed_other_weights(bert_dir, tmp_path):
    heads = [
        torch.load(tmp_path / name / "model" / "head.pt")
        for name, seed in (("a", 3), ("b", 3), ("c", 4))
        if run(bert_dir, tmp_path / name, seed=seed, settings={"epochs": 1})
    ]
    assert all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])
    assert not all(torch.equal(heads[0][k], heads[2][k]) for k in heads[0])


RUNNER = """
import sys, torch
from pathlib import Path
torch.set_num_threads(1)
sys.path.insert(0, {tests!r})
import test_finetune as t
t.run(Path({bert!r}), Path({out!r}), checkpoint_every=5, settings={{"epochs": 3, "batch_size": 2}})
"""


@pytest.mark.slow
def test_resumes_after_sigkill_with_the_same_weights(bert_dir, tmp_path):
    reference = run(bert_dir, tmp_path / "ref", checkpoint_every=5, settings={"epochs": 3, "batch_size": 2})
    code = RUNNER.format(tests=str(REPO / "tests"), bert=str(bert_dir), out=str(tmp_path / "killed"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list((tmp_path / "killed" / "ckpt").glob("*/ckpt-*.pt")):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (tmp_path / "killed" / "model").exists()
    resumed = run(bert_dir, tmp_path / "killed", checkpoint_every=5, settings={"epochs": 3, "batch_size": 2})
    assert resumed["epochs"] == reference["epochs"]
    assert resumed["train_loss"] == reference["train_loss"]  # the loss summed so far is in the checkpoint
    a, b = (load_file(tmp_path / d / "model" / "encoder" / "model.safetensors") for d in ("ref", "killed"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    ha, hb = (torch.load(tmp_path / d / "model" / "head.pt") for d in ("ref", "killed"))
    assert all(torch.equal(ha[k], hb[k]) for k in ha)


def test_a_finished_fine_tuning_called_again_trains_no_step(bert_dir, tmp_path):
    """rules/transfer.smk fine-tunes and scores in one job, so a scoring setting reruns it: Snakemake removes the
    model directory, and the fine-tuning must resume from its last checkpoint and rewrite the same model without a
    step. A changed fine-tuning setting trains anew beside it."""
    first = run(bert_dir, tmp_path, settings={"epochs": 2})
    encoder, head = (
        load_file(tmp_path / "model" / "encoder" / "model.safetensors"),
        torch.load(tmp_path / "model" / "head.pt"),
    )
    shutil.rmtree(tmp_path / "model")
    steps = []
    again = run(bert_dir, tmp_path, settings={"epochs": 2}, on_step=lambda state: steps.append(state["step"]))
    assert steps == [] and again == first
    rewritten = load_file(tmp_path / "model" / "encoder" / "model.safetensors")
    assert all(torch.equal(encoder[k], v) for k, v in rewritten.items())
    assert all(torch.equal(head[k], v) for k, v in torch.load(tmp_path / "model" / "head.pt").items())
    run(bert_dir, tmp_path, settings={"epochs": 1}, on_step=lambda state: steps.append(state["step"]))
    assert steps[0] == 1 and len(steps) == 30  # 240 examples in batches of 8


def test_mds_goes_through_the_shared_hook_and_alpha_is_chosen_on_dev_only(bert_dir, tmp_path, monkeypatch):
    """Planted data: dev rewards alpha 2 and test rewards alpha 1 (a stub scorer keyed by the shift used);
    the chosen alpha must be dev's, and every shift must pass through xling.encode.transforms.shift_layer."""
    run(bert_dir, tmp_path, settings={"epochs": 1})
    calls = []
    real_shift_layer = transfer_shift_layer()

    def spy(model, layer, delta, positions=None):
        calls.append((layer, np.asarray(delta).copy()))
        return real_shift_layer(model, layer, delta, positions)

    monkeypatch.setattr("xling.tune.heads.shift_layer", spy)
    planted = {"dev": {2.0: 90.0, 1.0: 50.0}, "test": {2.0: 40.0, 1.0: 99.0}}

    def score(task, examples, predictions, labels, ner_repair=True):
        split = examples[0][0]  # the split's name is planted in the premise
        alpha = None if not calls else round(float(np.linalg.norm(calls[-1][1]) / unit), 6)
        calls.clear()
        return {"accuracy": (planted[split].get(alpha, 10.0), len(examples))}

    monkeypatch.setattr(transfer, "score", score)
    means = {"en": np.ones(16), "fr": np.zeros(16)}
    unit = float(np.linalg.norm(means["en"] - means["fr"]))
    data = {
        "fr": {"dev": [("dev", "w1 w10", "entailment")], "test": [("test", "w1 w10", "entailment")]},
        "en": {"dev": [("dev", "w1 w10", "entailment")], "test": [("test", "w1 w10", "entailment")]},
    }
    table = transfer.evaluate(
        tmp_path / "model",
        data,
        transfer.TransferTest(
            pivot="en", layer=1, alphas=[1.0, 2.0], positions="all", mds=True, finetuned_means=means, batch_size=4
        ),
    )
    chosen = table[(table["transform"] == "mds") & table.selected]
    assert set(chosen["split"]) == {"dev", "test"} and set(chosen["alpha"]) == {2.0}
    assert chosen[chosen["split"] == "test"].value.item() == 40.0  # dev's choice, although test prefers 1.0
    assert set(table[table["transform"] == "mds"]["lang"]) == {"fr"}  # no shift of the pivot toward itself


def transfer_shift_layer():
    from xling.encode.transforms import shift_layer

    return shift_layer


def test_static_vectors_xnli_with_infersent(tmp_path):
    from gensim.models import KeyedVectors

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(v + "\n" for v in SPECIALS + WORDS), encoding="utf-8")
    kv = KeyedVectors(vector_size=8)
    rng = np.random.default_rng(0)
    kv.add_vectors(WORDS, rng.normal(size=(len(WORDS), 8)).astype(np.float32))
    kv.save_word2vec_format(str(tmp_path / "vectors.bin"), binary=True)
    from xling.tune.heads import load_static

    backbone = load_static(tmp_path / "vectors.bin", vocab, lowercase=False)
    record = ft.finetune(
        "xnli",
        backbone,
        toy_xnli(240, 1),
        {"en": toy_xnli(60, 2)},
        tmp_path / "model",
        tmp_path / "ckpt",
        {**SETTINGS, "static_hidden": 16, "learning_rate": 1e-2},
        ft.FinetuneRun(seed=1),
        score=transfer.score,
    )
    assert record["selection_score"] > 80
    assert json.loads((tmp_path / "model" / "finetune.json").read_text())["backbone"] == "static"
    table = transfer.evaluate(
        tmp_path / "model",
        {"en": {"dev": toy_xnli(60, 2), "test": toy_xnli(30, 3)}},
        transfer.TransferTest(pivot="en", layer=1, alphas=[1.0], positions="all", mds=True, batch_size=8),
        vectors=tmp_path / "vectors.bin",
        vocab=vocab,
    )
    assert set(table["transform"]) == {"none"} and len(table) == 2


def save_mbert_vocab_bert(out: Path, vocab: Path) -> Path:
    """A tiny random BERT on the mBERT cased vocabulary (the real tokenizer, a small network)."""
    return tiny_checkpoints.save_tiny_bert(out, vocab, positions=64)


@functools.lru_cache(maxsize=1)
def ewt(root: Path) -> tuple[list, list]:
    """The first 64 training and 32 dev sentences of UD English-EWT (read once for both tasks)."""
    from xling.data.formats import read_conllu

    ewt = root / "ud" / "UD_English-EWT"
    return read_conllu(ewt / "en_ewt-ud-train.conllu.gz")[:64], read_conllu(ewt / "en_ewt-ud-dev.conllu")[:32]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["pos", "parsing"])
def test_a_few_steps_on_ud_ewt_then_zero_shot_on_pud(shared_data, tmp_path, task):
    from xling.tune.heads import read_examples

    bert = save_mbert_vocab_bert(tmp_path / "bert", shared_data / "mbert" / "vocab-cased.txt")
    train, dev = ewt(shared_data)[0], {"en": ewt(shared_data)[1]}
    settings = {**SETTINGS, "epochs": 1, "max_length": 64, "arc_dim": 16, "label_dim": 8}
    record = ft.finetune(
        task,
        load_bert(bert),
        train,
        dev,
        tmp_path / "model",
        tmp_path / "ckpt",
        settings,
        ft.FinetuneRun(seed=1),
        score=transfer.score,
    )
    assert record["steps"] == 8
    data = {
        lang: {"test": read_examples(task, shared_data / "ud" / "pud" / f"{lang}_pud-ud-test.conllu")}
        for lang in ("en", "de")
    }
    table = transfer.evaluate(
        tmp_path / "model",
        data,
        transfer.TransferTest(pivot="en", layer=1, alphas=[1.0], positions="all", mds=False, batch_size=64),
    )
    words = {"en": 21180, "de": 21332}  # syntactic words of the PUD test files (multiword tokens expanded)
    metrics = {"pos": {"upos"}, "parsing": {"uas", "las"}}[task]
    assert set(table["metric"]) == metrics and set(table["lang"]) == {"en", "de"}
    for row in table.itertuples():
        assert row.n == words[row.lang] and 0 <= row.value <= 100


def test_xnli_dev_is_read_and_scored(shared_data, tmp_path, bert_dir):
    from xling.tune.heads import read_examples

    run(bert_dir, tmp_path, settings={"epochs": 1})
    data = {
        lang: {"dev": read_examples("xnli", shared_data / "xnli" / f"dev-{lang}.tsv")[:300]}
        for lang in ("en", "de", "zh")
    }
    table = transfer.evaluate(
        tmp_path / "model",
        data,
        transfer.TransferTest(pivot="en", layer=1, alphas=[1.0], positions="all", mds=False, batch_size=64),
    )
    assert list(table["n"]) == [300, 300, 300] and table["value"].between(0, 100).all()
    labels = read_examples("xnli", shared_data / "xnli" / "dev-de.tsv")
    assert len(labels) == 2490 and {label for *_, label in labels} == {"entailment", "neutral", "contradiction"}


def test_zero_mean_subtracts_the_pivot_mean_in_training_and_each_language_mean_in_testing(
    bert_dir, tmp_path, monkeypatch
):
    """Zero-mean (Liu et al. 2020b §5.1): the English mean at layer l while fine-tuning, each language's own mean
    when testing, both through the shared hook; the rows say so."""
    seen = []
    real = transfer_shift_layer()

    def spy(model, layer, delta, positions=None):
        seen.append((layer, np.asarray(delta).copy()))
        return real(model, layer, delta, positions)

    monkeypatch.setattr("xling.tune.heads.shift_layer", spy)
    means = {"en": np.full(16, 0.5), "fr": np.full(16, -0.25)}
    record = run(bert_dir, tmp_path, zero_mean=Shift(1, -means["en"], "all"), settings={"epochs": 1})
    assert record["zero_mean"] == {"layer": 1, "positions": "all"}
    assert seen and all(layer == 1 and np.allclose(delta, -0.5) for layer, delta in seen)
    seen.clear()
    data = {lang: {"test": toy_xnli(30, 4)} for lang in ("en", "fr")}
    table = transfer.evaluate(
        tmp_path / "model",
        data,
        transfer.TransferTest(
            pivot="en", layer=1, alphas=[1.0], positions="all", mds=True, pretrained_means=means, batch_size=64
        ),
    )
    assert set(table["transform"]) == {"zero_mean"} and set(table["train_transform"]) == {"zero_mean"}
    assert {round(float(delta[0]), 6) for _, delta in seen} == {-0.5, 0.25}


def test_a_language_without_dev_split_gets_no_mds_rows(bert_dir, tmp_path):
    """Real UD: Thai has a test split only. Alpha is chosen on dev, so no dev means no MDS (and no crash)."""
    run(bert_dir, tmp_path, settings={"epochs": 1})
    means = {"en": np.ones(16), "th": np.zeros(16)}
    data = {"en": {"dev": toy_xnli(20, 2), "test": toy_xnli(20, 3)}, "th": {"test": toy_xnli(20, 4)}}
    table = transfer.evaluate(
        tmp_path / "model",
        data,
        transfer.TransferTest(
            pivot="en", layer=1, alphas=[1.0], positions="all", mds=True, finetuned_means=means, batch_size=16
        ),
    )
    assert set(table["transform"]) == {"none"} and set(table[table["lang"] == "th"]["split"]) == {"test"}


def test_a_low_resource_language_gets_mds_at_the_rules_alpha_and_its_rows_are_marked(bert_dir, tmp_path, monkeypatch):
    """Liu et al. short §5.2's treebanks without a dev split (transfer.parsing.low_resource): scored after the
    languages with dev, MDS at the mean of the alphas they select on dev rounded to the grid, every row of theirs
    low_resource = True; another language without dev (Thai) still gets no MDS row."""
    run(bert_dir, tmp_path, settings={"epochs": 1})
    calls = []
    real_shift_layer = transfer_shift_layer()

    def spy(model, layer, delta, positions=None):
        calls.append(np.asarray(delta).copy())
        return real_shift_layer(model, layer, delta, positions)

    monkeypatch.setattr("xling.tune.heads.shift_layer", spy)
    # dev rewards alpha 2.0 in fr and 1.0 in de: the rule's mean 1.5 is a grid value
    planted = {("fr", "dev"): {2.0: 90.0}, ("de", "dev"): {1.0: 90.0}}

    def score(task, examples, predictions, labels, ner_repair=True):
        lang, split = examples[0][0].split("-")  # planted in the premise
        alpha = None if not calls else round(float(np.linalg.norm(calls[-1]) / unit), 6)
        calls.clear()
        return {"accuracy": (planted.get((lang, split), {}).get(alpha, 10.0 + (alpha or 0)), len(examples))}

    monkeypatch.setattr(transfer, "score", score)
    means = {
        lang: np.full(16, value) for lang, value in (("en", 1.0), ("fr", 0.0), ("de", 0.0), ("kk", 0.0), ("th", 0.0))
    }
    unit = float(np.linalg.norm(means["en"] - means["fr"]))

    def example(lang, split):
        return [(f"{lang}-{split}", "w1 w10", "entailment")]

    data = {lang: {split: example(lang, split) for split in ("dev", "test")} for lang in ("en", "fr", "de")}
    data.update({lang: {"test": example(lang, "test")} for lang in ("kk", "th")})
    test = transfer.TransferTest(
        pivot="en",
        layer=1,
        alphas=[1.0, 1.5, 2.0],
        positions="all",
        mds=True,
        finetuned_means=means,
        batch_size=4,
        low_resource=["kk"],
    )
    table = transfer.evaluate(tmp_path / "model", data, test)
    mds = table[(table["transform"] == "mds") & (table["split"] == "test")]
    assert dict(zip(mds["lang"], mds["alpha"], strict=True)) == {"de": 1.0, "fr": 2.0, "kk": 1.5}
    assert mds.set_index("lang").loc["kk", "value"] == 11.5 and mds.set_index("lang").loc["kk", "selected"]
    assert set(table[table["low_resource"]]["lang"]) == {"kk"} and set(table[table["lang"] == "kk"]["split"]) == {
        "test"
    }
    fixed = transfer.evaluate(
        tmp_path / "model", data, transfer.TransferTest(**{**test.__dict__, "low_resource_alpha": 2.0})
    )
    assert fixed[(fixed["lang"] == "kk") & (fixed["transform"] == "mds")]["alpha"].tolist() == [2.0]
    alone = transfer.evaluate(tmp_path / "model", {lang: data[lang] for lang in ("en", "kk")}, test)
    assert set(alone["transform"]) == {"none"}, "no language selected an alpha: no MDS row of kk"


def test_the_alpha_without_dev_is_the_grid_value_nearest_the_dev_languages_mean():
    grid = [0.1, 0.2, 0.3, 0.4]
    assert transfer.alpha_without_dev("dev_languages", [0.1, 0.3], grid) == 0.2
    assert transfer.alpha_without_dev("dev_languages", [0.2, 0.3], grid) == 0.2, "a tie: the smaller"
    assert transfer.alpha_without_dev("dev_languages", [0.4, 0.4, 0.1], grid) == 0.3
    assert transfer.alpha_without_dev("dev_languages", [], grid) is None
    assert transfer.alpha_without_dev(1.7, [0.1], grid) == 1.7, "a number is the alpha itself"
    with pytest.raises(ValueError, match="unknown alpha rule 'pivot'"):
        transfer.alpha_without_dev("pivot", [0.1], grid)


def test_a_treebanks_text_is_its_sentences_text_capped_as_a_corpus(tmp_path):
    """The language mean of a low-resource treebank reads its train split: each sentence's `# text`, else its
    words; capped in sentences and in whitespace tokens as corpus_sentences."""

    def sentence(text, words):
        lines = ([f"# text = {text}"] if text else []) + [
            f"{i}\t{w}\t_\tNOUN\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
            for i, w in enumerate(words, 1)
        ]
        return "\n".join(lines) + "\n\n"

    path = tmp_path / "kk.train.conllu"
    path.write_text(
        sentence("Бұл үй.", ["Бұл", "үй", "."])
        + sentence(None, ["a", "b"])
        + sentence("c d e f", ["c", "d", "e", "f"]),
        encoding="utf-8",
    )
    assert transfer.treebank_sentences(path, None) == ["Бұл үй.", "a b", "c d e f"]
    assert transfer.treebank_sentences(path, 2) == ["Бұл үй.", "a b"]
    assert transfer.treebank_sentences(path, None, max_tokens=3) == ["Бұл үй.", "a b"]
