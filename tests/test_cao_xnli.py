"""Cao et al.'s XNLI fine-tunings (xling.tune.finetune with alignment.xnli's recipe): Adam's betas and epsilon
reach the optimizer, and the rotation baselines select their epoch on rotated dev sets and are tested rotated,
on a tiny BERT and the toy XNLI of test_finetune: the identity rotation gives exactly the base model's scores, a
non-identity one changes only the rotated language's, and a rotation planted in the other language's space is
learned back (learn_rotations) and undone in front of the classifier."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group
from test_finetune import SETTINGS, bert_dir, toy_xnli  # noqa: F401  (bert_dir: a fixture)

from xling.evaluate import transfer
from xling.represent.rotation import learn_rotations, rotate_layer
from xling.tune import finetune as ft
from xling.tune.heads import collate, load_bert

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend

LAYERS = 2  # the tiny BERT's depth: the rotation at its output, as Cao et al.'s (alignment.layer null)
DEV = {"en": toy_xnli(60, 2), "fr": toy_xnli(60, 3)}
TEST = {lang: {"dev": examples, "test": toy_xnli(60, 5 + i)} for i, (lang, examples) in enumerate(DEV.items())}


def cao_run(model_dir, out, rotations=None, **settings) -> dict:
    run = ft.FinetuneRun(
        seed=3, selection="avg_dev", rotations=rotations or {}, rotation_layer=LAYERS, checkpoint_every=1000
    )
    return ft.finetune(
        "xnli",
        load_bert(model_dir),
        toy_xnli(240, 1),
        DEV,
        out / "model",
        out / "ckpt",
        {**SETTINGS, "epochs": 2, **settings},
        run,
        score=transfer.score,
    )


def scores(path, rotations=None) -> dict:
    table = transfer.evaluate(
        path, TEST, transfer.TransferTest(pivot="en", batch_size=16, rotations=rotations, rotation_layer=LAYERS)
    )
    return table[table["metric"] == "accuracy"].set_index(["lang", "split", "transform"])["value"].to_dict()


def test_adam_betas_and_eps_reach_the_optimizer(bert_dir, tmp_path, monkeypatch):  # noqa: F811
    made, optimizer_for = [], ft.optimizer_for
    monkeypatch.setattr(
        ft, "optimizer_for", lambda *args, **kwargs: made.append(optimizer_for(*args, **kwargs)) or made[-1]
    )
    cao_run(bert_dir, tmp_path / "cao", betas=[0.9, 0.98], eps=1e-9, weight_decay=0.0)
    assert {(g["betas"], g["eps"], g["weight_decay"]) for g in made[0].param_groups} == {((0.9, 0.98), 1e-9, 0.0)}
    cao_run(bert_dir, tmp_path / "default")  # without the keys: torch's AdamW defaults, decay on weights only
    assert {(g["betas"], g["eps"]) for g in made[1].param_groups} == {((0.9, 0.999), 1e-8)}
    assert sorted(g["weight_decay"] for g in made[1].param_groups) == [0.0, SETTINGS["weight_decay"]]


def test_identity_rotation_gives_exactly_the_base_models_scores(bert_dir, tmp_path):  # noqa: F811
    base = cao_run(bert_dir, tmp_path / "base")
    identity = cao_run(bert_dir, tmp_path / "identity", rotations={"fr": np.eye(16)})
    assert [e["dev"] for e in identity["epochs"]] == [e["dev"] for e in base["epochs"]]
    assert identity["best_epoch"] == base["best_epoch"] and identity["rotation"] == {"layer": LAYERS, "langs": ["fr"]}
    ours = scores(tmp_path / "identity" / "model", {"word": {"fr": np.eye(16)}})
    theirs = scores(tmp_path / "base" / "model")
    for split in ("dev", "test"):
        assert ours["fr", split, "rotation-word"] == theirs["fr", split, "none"]
        assert ours["en", split, "none"] == theirs["en", split, "none"]
    # a real rotation: the same training (English is never rotated), other fr dev scores to select on
    turned = cao_run(bert_dir, tmp_path / "turned", rotations={"fr": ortho_group.rvs(16, random_state=4)})
    assert [e["dev"]["en"] for e in turned["epochs"]] == [e["dev"]["en"] for e in base["epochs"]]
    assert [e["dev"]["fr"] for e in turned["epochs"]] != [e["dev"]["fr"] for e in base["epochs"]]


def states_of(backbone, planted=None):
    """word_vectors for learn_rotations: each sentence's states at the model's output, one row per word (the
    toy words are one piece each), with the rotation `planted` in the space when given."""
    bert, tokenizer = backbone.encoder.bert, backbone.tokenizer

    def word_vectors(sentences: list[list[str]]) -> list[np.ndarray]:
        out = []
        for words in sentences:
            ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", *words, "[SEP]"])])
            with torch.no_grad(), rotate_layer(bert, LAYERS, planted) if planted is not None else nullcontext():
                out.append(bert(input_ids=ids).last_hidden_state[0, 1:-1].numpy().astype(np.float64))
        return out

    return word_vectors


def test_a_rotation_planted_in_the_other_language_is_learned_and_undone(bert_dir, tmp_path):  # noqa: F811
    """ "fr" is English in a space turned by Q at the layer the classifier reads: the word rotation learned on
    parallel pairs is Q's inverse, and the classifier reads fr through it exactly as it reads English."""
    cao_run(bert_dir, tmp_path)
    _, model, backbone = transfer.load_finetuned(tmp_path / "model")
    model.eval()
    planted = ortho_group.rvs(16, random_state=7)
    sentences = [premise.split() for premise, _, _ in toy_xnli(40, 9)]
    links = [{(i, i) for i in range(len(words))} for words in sentences]
    found = learn_rotations(pivot_then_other(backbone, planted), sentences, sentences, links, block=16)
    w = found["word"][0]
    np.testing.assert_allclose(w, planted.T, atol=1e-5)  # fr @ W = en: the inverse of the planted turn
    labels = ["contradiction", "entailment", "neutral"]
    features = backbone.featurizer("xnli", 16, labels)(TEST["en"]["test"])
    batch = collate("xnli", features, backbone.pad_id, True)

    def logits(*rotations):
        hooks = [rotate_layer(backbone.encoder.bert, LAYERS, r) for r in rotations]
        with torch.no_grad(), hooks[0] if hooks else nullcontext(), hooks[1] if len(hooks) > 1 else nullcontext():
            return model.out(model.encoder(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])[:, 0])

    english, turned, undone = logits(), logits(planted), logits(planted, w)
    torch.testing.assert_close(undone, english, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(turned, english, atol=1e-2), "the planted turn must change what the classifier reads"


def pivot_then_other(backbone, planted):
    """word_vectors for learn_rotations, which encodes each block's pivot side, then its other side: the
    unturned states on odd calls, the planted language's on even ones."""
    calls = {"n": 0}
    english, other = states_of(backbone), states_of(backbone, planted)

    def word_vectors(block):
        calls["n"] += 1
        return english(block) if calls["n"] % 2 else other(block)

    return word_vectors
