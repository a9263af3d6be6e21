"""The contextual word level of the monolingual alignment (xling.evaluate.monolingual_contextual) on a tiny
randomly initialised BERT the tests build: the map, the stitched task model, the frozen bottom, bad input; and
the workflow's new rule in the test preset's plan (not in the demo's)."""

from __future__ import annotations

import html as html_lib
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from tiny_checkpoints import save_tiny_bert

from xling.encode.encoder import Encoder
from xling.evaluate import monolingual_contextual as mc
from xling.report import expected_figures, render_report
from xling.represent.rotation import IterativeNormalizer, rotate_layer
from xling.tune.heads import load_bert

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"w{i}" for i in range(20)]
ENTITIES = set(WORDS[:5])  # a word of these is a one-word PER entity: learnable in a few steps
SETTINGS = {
    "epochs": 6,
    "batch_size": 8,
    "learning_rate": 5e-3,
    "warmup": 0.1,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "max_length": 16,
    "max_train": None,
}


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"), SPECIALS + WORDS)


def sentences(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(3, 7))] for _ in range(n)]


def toy_ner(n: int, seed: int) -> list[tuple[list[str], list[str]]]:
    return [(words, ["B-PER" if w in ENTITIES else "O" for w in words]) for words in sentences(n, seed)]


def data() -> dict:
    return {
        "train": toy_ner(160, 1),
        "dev": toy_ner(40, 2),
        "test_pivot": toy_ner(60, 3),
        "test_target": toy_ner(60, 3),
    }


def random_rotation(dim: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return q * np.sign(np.diag(r))


def test_the_map_recovers_a_planted_rotation_of_contextual_vectors(bert_dir):
    """The target model is the pivot's with its states at layer 1 rotated by R: W must undo R (W = R^T), the
    pivot's map is the identity, and every linked pair (the same word on both sides) is counted."""
    pivot, target = (Encoder.from_pretrained(bert_dir, device="cpu") for _ in range(2))
    words = sentences(40, 7)
    links = [{(i, i) for i in range(len(s))} for s in words]
    planted = random_rotation(16, 3)
    with rotate_layer(target.model, 1, planted):
        maps = mc.layer_maps((pivot, target), words, words, links, [1], n_iter=5, batch_size=16)
    pivot_map, target_map = maps[1]
    np.testing.assert_array_equal(pivot_map.w, np.eye(16))
    np.testing.assert_allclose(target_map.w, planted.T, atol=1e-4)
    assert target_map.n_pairs == sum(map(len, words))
    # the normalisers replay on new states what they did to the map's vectors: rotated space, rotated means
    np.testing.assert_allclose(target_map.normalizer.means, pivot_map.normalizer.means @ planted, atol=1e-5)


def test_normalizer_replays_iterative_normalisation_on_torch_states():
    x = np.random.default_rng(0).normal(size=(50, 8)) + 2.0
    normalizer = IterativeNormalizer.fit(x, 4)
    out = normalizer(torch.tensor(x, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=0.05)  # zero mean up to the last unit-length step
    np.testing.assert_allclose(out, normalizer(x), atol=1e-6)


def _pivot_map(bert_dir, layer: int) -> mc.LayerMap:
    encoder = Encoder.from_pretrained(bert_dir, device="cpu")
    vectors = mc.sentence_word_vectors(encoder, sentences(30, 9), layer, 16)
    return mc.LayerMap(IterativeNormalizer.fit(np.concatenate(vectors), 5), np.eye(16))


def test_target_equal_to_the_pivot_with_the_identity_map_scores_the_pivot_score(bert_dir, tmp_path):
    """Stitching end to end: the target path (the target model's bottom, its normaliser, W, the trained task
    layers) with target = pivot model and W = I reproduces the pivot's predictions exactly; a rotation as W
    changes them, so the target path does apply the map."""
    same = _pivot_map(bert_dir, 1)
    common = dict(task_layers=1, settings=SETTINGS, seed=1, pivot="en", batch_size=16, device="cpu", ner_repair=True)
    result = mc.transfer_layer(
        "ner",
        data(),
        1,
        pivot_model=bert_dir,
        target_model=bert_dir,
        maps=(same, same),
        checkpoint_dir=tmp_path / "ckpt",
        **common,
    )
    assert result["pivot"]["f1"][0] > 50  # the task was learned through the stitched model (chance: far below)
    assert result["target"] == result["pivot"]
    rotated = mc.LayerMap(same.normalizer, random_rotation(16, 5))
    again = mc.transfer_layer(
        "ner",
        data(),
        1,
        pivot_model=bert_dir,
        target_model=bert_dir,
        maps=(same, rotated),
        checkpoint_dir=tmp_path / "ckpt",
        **common,
    )
    assert again["pivot"] == result["pivot"]  # the same training (resumed from its finished checkpoint)
    assert again["target"]["f1"] != result["pivot"]["f1"]


@pytest.mark.parametrize("layer", [0, 1])
def test_the_pivot_models_first_layers_are_bit_identical_after_training(bert_dir, tmp_path, layer):
    backbone = mc.stitched_backbone(bert_dir, layer, 1, seed=1)
    before = {k: v.clone() for k, v in backbone.encoder.bert.state_dict().items()}
    mc.train_task_layers(
        "ner",
        backbone,
        layer,
        data(),
        tmp_path / "out",
        tmp_path / "ckpt",
        pivot_map=_pivot_map(bert_dir, layer),
        settings=SETTINGS,
        seed=1,
        pivot="en",
        device="cpu",
        identity={},
    )
    after = backbone.encoder.bert.state_dict()
    pretrained = load_bert(bert_dir).encoder.bert.state_dict()
    bottom = [
        k
        for k in after
        if k.startswith("embeddings.") or any(k.startswith(f"encoder.layer.{i}.") for i in range(layer))
    ]
    assert bottom and all(torch.equal(after[k], pretrained[k]) for k in bottom)
    top = [k for k in after if k.startswith(f"encoder.layer.{layer}.") and k.endswith("weight")]
    assert top and all(not torch.equal(after[k], before[k]) for k in top)  # the task layer did train


def test_no_word_pair_is_a_clear_error(monkeypatch, bert_dir):
    pairs = [("w1 w2 w3", "w4 w5"), ("w6 w7", "w8 w9")]
    monkeypatch.setattr(mc, "directional_links", lambda src, tgt, *_: ([set()] * len(src), [set()] * len(src)))
    with pytest.raises(ValueError, match=r"dev-en.tsv / dev-xa.tsv: fast_align linked no word pair in 2 sentence"):
        mc.xnli_word_pairs(
            pairs, "en", "xa", tokenizer="whitespace", aligner="fast_align", settings={}, what="dev-en.tsv / dev-xa.tsv"
        )
    with pytest.raises(ValueError, match="no parallel sentence pair with words"):
        mc.xnli_word_pairs(
            [("", "w1")], "en", "xa", tokenizer="whitespace", aligner="fast_align", settings={}, what="x"
        )
    encoder = Encoder.from_pretrained(bert_dir, device="cpu")
    with pytest.raises(ValueError, match="none of the 0 word pairs has a vector"):
        mc.layer_maps((encoder, encoder), [["w1"]], [["w2"]], [set()], [1], n_iter=5, batch_size=4)


def contextual_table() -> pd.DataFrame:
    rows = []
    for task, metrics in (("ner", ("f1", "precision", "recall")), ("parsing", ("uas", "las"))):
        for kind, offset in (("mlm-align", 0.0), ("bimlm", 7.0)):
            for layer in range(3):
                rows += [
                    dict(
                        task=task,
                        kind=kind,
                        layer=layer,
                        metric=metric,
                        value=40.0 + 10 * layer + offset + m,
                        n=100,
                        pivot_value=80.0 + m,
                        pivot_n=120,
                        n_map_pairs=900 if kind == "mlm-align" else 0,
                        best_epoch=1,
                        trainable_parameters=5000,
                        lm_src="mono/en/100-w8" if kind == "mlm-align" else "bert/100-w8",
                        lm_tgt="mono/xa/100-w8" if kind == "mlm-align" else "bert/100-w8",
                    )
                    for m, metric in enumerate(metrics)
                ]
    return pd.DataFrame(rows).assign(
        pair="en-xa", src="en", tgt="xa", task_layers=4, map_split="dev", normalize_iterations=5, n_map_sentences=300
    )


def test_report_draws_figure_5_with_every_number(tmp_path):
    tables = {"monolingual_contextual": contextual_table()}
    config = {"run": "t", "languages": ["en", "xa"]}
    expected = [f["name"] for f in expected_figures(config, tables)]
    assert expected == ["monolingual_contextual"]
    saved = render_report(
        tables,
        config,
        tmp_path / "report.html",
        tmp_path / "figures",
        paper_results=tmp_path / "none.yaml",
        expected=expected,
    )
    assert saved["monolingual_contextual"].stat().st_size > 1000
    page = html_lib.unescape((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert "Transfer through the map: all numbers" in page
    assert "67.0<" in page  # biMLM parsing LAS at layer 2: 40 + 20 + 7 + 1 (LAS is metric 1)
    assert "No published numbers recorded" in page  # the paper draws Figure 5 only
    with pytest.raises(ValueError, match="<monolingual_contextual table>: missing column.*pivot_value"):
        render_report(
            {"monolingual_contextual": contextual_table().drop(columns="pivot_value")},
            config,
            tmp_path / "r.html",
            tmp_path,
        )
