"""Alignment of monolingual models (xling.evaluate.monolingual): the pipeline's Procrustes with iterative
normalisation recovers a planted rotation at word and sentence level (and only in the right direction), the
XNLI parallel sentences, the single-piece embedding rows and the random encoder."""

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group

from tests.test_encoder import VOCAB, save_tiny_bert
from xling.encode.encoder import Encoder
from xling.evaluate.cka import random_encoder, xnli_parallel
from xling.evaluate.monolingual import embedding_words, sentence_retrieval, word_translation
from xling.represent.rotation import iterative_normalize


def planted(n=300, dim=12, seed=0):
    """Pivot vectors off-centre with uneven norms, and the target = pivot @ R (R a random rotation)."""
    rng = np.random.default_rng(seed)
    pivot = rng.normal(size=(n, dim)) * rng.uniform(0.5, 3.0, size=(n, 1)) + 2.0
    rotation = ortho_group.rvs(dim, random_state=seed + 1)
    return pivot, pivot @ rotation, rotation


def test_normalisation_commutes_with_the_rotation():
    """Why the pipeline can normalise each space alone: the planted map survives it."""
    pivot, target, rotation = planted()
    np.testing.assert_allclose(iterative_normalize(target, 5), iterative_normalize(pivot, 5) @ rotation, atol=1e-10)


def test_word_translation_recovers_a_planted_rotation():
    pivot, target, _ = planted()
    src_words = [f"e{i}" for i in range(len(pivot))]
    tgt_words = [f"x{i}" for i in range(len(target))][::-1]  # another order: pairs go by word, not by row
    target = target[::-1]
    train = [(f"e{i}", f"x{i}") for i in range(0, 100)]
    test = [(f"e{i}", f"x{i}") for i in range(200, 300)] + [("e5", "missing")]
    result = word_translation((src_words, pivot), (tgt_words, target), train, test, n_iter=5, csls_k=10)
    assert result["p_at_1"] == pytest.approx(1.0)
    assert result["n_train_pairs"] == 100 and result["n_test_pairs"] == 100 and result["n_queries"] == 100
    assert result["coverage"] == pytest.approx(100 / 101)
    # a map learned on shuffled pairs has nothing to recover: near chance (1/300)
    shuffled = [(f"e{i}", f"x{(i * 7 + 3) % 100}") for i in range(100)]
    hits = []
    wrong = word_translation((src_words, pivot), (tgt_words, target), shuffled, test, n_iter=5, csls_k=10, hits=hits)
    assert wrong["p_at_1"] < 0.1
    assert len(hits[0]) == wrong["n_queries"] and hits[0].mean() == pytest.approx(wrong["p_at_1"])  # its items


def test_word_translation_needs_covered_pairs():
    pivot, target, _ = planted(n=20)
    words = [f"w{i}" for i in range(20)]
    with pytest.raises(ValueError, match="no covered train"):
        word_translation((words, pivot), (words, target), [("a", "b")], [("w1", "w1")], n_iter=3)


def test_sentence_retrieval_through_the_map():
    pivot, target, _ = planted(n=400, dim=16, seed=3)
    rng = np.random.default_rng(4)
    target = target + 0.05 * rng.normal(size=target.shape)
    result = sentence_retrieval((pivot[:300], target[:300]), (pivot[300:], target[300:]), n_iter=5)
    p_at_1 = {method: {d: hits.mean() for d, hits in by.items()} for method, by in result.items()}
    assert p_at_1["procrustes"] == {"en->xx": pytest.approx(1.0), "xx->en": pytest.approx(1.0)}
    assert max(p_at_1["none"].values()) < 0.5  # unmapped, the rotated space does not retrieve
    assert {len(hits) for by in result.values() for hits in by.values()} == {100}  # a hit per test sentence


def test_xnli_parallel_distinct_pairs_and_errors(tmp_path):
    en, xx = tmp_path / "test-en.tsv", tmp_path / "test-xx.tsv"
    en.write_text("a b\tc\tneutral\na b\td\tentailment\ne\tf\tcontradiction\n", encoding="utf-8")
    xx.write_text("A B\tC\tneutral\nA B\tD\tentailment\nE\tF\tcontradiction\n", encoding="utf-8")
    assert xnli_parallel(en, xx) == [("a b", "A B"), ("e", "E"), ("c", "C"), ("d", "D"), ("f", "F")]
    assert xnli_parallel(en, xx, max_sentences=2) == [("a b", "A B"), ("e", "E")]
    # token translation's order: example by example, so a cap keeps premises and hypotheses
    assert xnli_parallel(en, xx, example_order=True) == [("a b", "A B"), ("c", "C"), ("d", "D"), ("e", "E"), ("f", "F")]
    assert xnli_parallel(en, xx, max_sentences=2, example_order=True) == [("a b", "A B"), ("c", "C")]
    xx.write_text("A B\tC\tneutral\n", encoding="utf-8")
    with pytest.raises(ValueError, match="test-en.tsv: 3 examples, but .*test-xx.tsv: 1"):
        xnli_parallel(en, xx)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return Encoder.from_pretrained(save_tiny_bert(tmp_path_factory.mktemp("tiny")), device="cpu")


def test_embedding_words_are_single_piece_rows(encoder):
    words, vectors = embedding_words(encoder, {"w3", "w1", "##s", "[CLS]", "w1s", "unknown"})
    assert words == ["w1", "w3"]
    weight = encoder.model.get_input_embeddings().weight.detach().double().numpy()
    np.testing.assert_array_equal(vectors, weight[[VOCAB.index("w1"), VOCAB.index("w3")]])


def test_random_encoder_same_architecture_new_weights(encoder):
    first, again, other = random_encoder(encoder, 7), random_encoder(encoder, 7), random_encoder(encoder, 8)
    assert first.model.config.to_dict() == encoder.model.config.to_dict()
    state, trained = first.model.state_dict(), encoder.model.state_dict()
    assert all(torch.equal(state[k], again.model.state_dict()[k]) for k in state)  # deterministic for a seed
    layer = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(state[layer], trained[layer]) and not torch.equal(
        state[layer], other.model.state_dict()[layer]
    )
    vectors, counts = first.sentence_vectors([["w1", "w2"], ["w3"]], batch_size=2)
    assert vectors.shape == (2, 3, 16) and counts.tolist() == [2, 1]


def test_cka_table_compares_each_side_layer_by_layer(encoder):
    from xling.evaluate.cka import cka_table, linear_cka, mean_pooled

    pairs = [(f"w{i} w{i + 1}", f"w{i + 2} ##s w{(3 * i) % 20}") for i in range(12)]
    table = cka_table([encoder, encoder], pairs, multilingual=encoder, random_seed=1, debiased=False, batch_size=4)
    assert sorted(table["comparison"].unique()) == ["monolingual", "multilingual", "random"]
    assert table.groupby("comparison").size().tolist() == [3, 3, 3] and (table["n_sentences"] == 12).all()
    x = mean_pooled(encoder, [p[0] for p in pairs], 4, "x")
    y = mean_pooled(encoder, [p[1] for p in pairs], 4, "y")
    mono = table[table["comparison"] == "monolingual"].set_index("layer")["cka"]
    assert mono.tolist() == pytest.approx([linear_cka(x[:, layer], y[:, layer]) for layer in range(3)])
    # one model on both sides is the monolingual comparison when both "models" are that model
    assert table[table["comparison"] == "multilingual"]["cka"].tolist() == pytest.approx(mono.tolist())
    assert not np.allclose(table[table["comparison"] == "random"]["cka"], mono)
    # the intervals (and the claims) surround the debiased CKA, whatever estimator the figure's `cka` is
    rows = table[table["comparison"] == "monolingual"].set_index("layer")
    debiased = [linear_cka(x[:, layer], y[:, layer], debiased=True) for layer in range(3)]
    assert rows["cka_debiased"].tolist() == pytest.approx(debiased) and debiased != pytest.approx(mono.tolist())
    assert ((rows["ci_low"] + rows["ci_high"]) / 2).tolist() == pytest.approx(debiased)
    assert rows["layer_mean_debiased"].iloc[0] == pytest.approx(np.mean(debiased))
    assert rows["layer_mean"].iloc[0] == pytest.approx(mono.mean())


def test_cka_of_a_bilingual_model_reads_each_side_with_its_own_view(encoder):
    """An ablated bilingual model's views (pivot, target): the pivot's sentences through the first, the target's
    through the second."""
    from xling.evaluate.cka import cka_table, linear_cka, mean_pooled, random_encoder

    pairs = [(f"w{i} w{i + 1}", f"w{i + 2} ##s w{(3 * i) % 20}") for i in range(12)]
    other = random_encoder(encoder, 5)
    table = cka_table(
        [encoder, encoder], pairs, multilingual=(encoder, other), random_seed=1, debiased=False, batch_size=4
    )
    x = mean_pooled(encoder, [p[0] for p in pairs], 4, "x")
    y = mean_pooled(other, [p[1] for p in pairs], 4, "y")
    views = table[table["comparison"] == "multilingual"].set_index("layer")["cka"]
    assert views.tolist() == pytest.approx([linear_cka(x[:, layer], y[:, layer]) for layer in range(3)])
    mono = table[table["comparison"] == "monolingual"]["cka"]
    assert not np.allclose(views, mono)
