"""Cao et al.'s baselines: the rotations (word- and sentence-aligned Procrustes, learned block by block, applied
inside a forward pass and before the XNLI classifier) and the sentence-augmented fastText, against planted
rotations, hand computations and direct runs of transformers' BertModel."""

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group
from transformers import BertForMaskedLM
from tiny_checkpoints import save_tiny_bert

from xling.represent import fasttext
from xling.represent.rotation import CrossCovariance, learn_rotations, linked_rows, mean_rows, procrustes, rotate_layer
from xling.tune.heads import collate

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + [f"w{i}" for i in range(20)] + ["##s", "##t"]


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"), VOCAB, positions=16)


# ---------------------------------------------------------------------------------------------- procrustes


def test_cross_covariance_over_blocks_gives_procrustes_on_all_rows():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(90, 8)), rng.normal(size=(90, 8))
    covariance = CrossCovariance(8)
    for start in range(0, 90, 25):
        covariance.add(x[start : start + 25], y[start : start + 25])
    w = covariance.rotation()
    assert covariance.n == 90
    np.testing.assert_allclose(w, procrustes(x, y), atol=1e-10)
    np.testing.assert_allclose(w.T @ w, np.eye(8), atol=1e-10)
    with pytest.raises(ValueError, match="no pair"):
        CrossCovariance(8).rotation()


def test_linked_rows_pair_other_with_pivot_and_skip_words_without_vectors():
    pivot = [np.array([[0.0, 0], [1, 1], [2, 2]]), np.array([[3.0, 3]])]
    other = [np.array([[10.0, 10], [np.nan, np.nan]]), np.array([[13.0, 13], [14, 14]])]
    x, y = linked_rows(pivot, other, [{(2, 0), (0, 1)}, {(0, 1)}])
    np.testing.assert_array_equal(x, [[10, 10], [14, 14]])  # 0-1 of the first pair links a word without vector
    np.testing.assert_array_equal(y, [[2, 2], [3, 3]])
    with pytest.raises(ValueError, match="link 1-0 outside"):
        linked_rows(pivot[1:], other[1:], [{(1, 0)}])


# ---------------------------------------------------------------------------------------------- the two rotations


def planted_vectors(rotation: np.ndarray, dim: int):
    """word_vectors(sentences) of two planted languages: a pivot word "e{i}" has a fixed random vector, the
    other language's "x{i}" that vector rotated (v @ rotation); "?" has no vector (a NaN row)."""
    table = np.random.default_rng(8).normal(size=(50, dim))

    def word_vectors(sentences):
        out = []
        for sentence in sentences:
            rows = np.full((len(sentence), dim), np.nan)
            for position, word in enumerate(sentence):
                if word != "?":
                    vector = table[int(word[1:])]
                    rows[position] = vector @ rotation if word[0] == "x" else vector
            out.append(rows)
        return out

    return word_vectors


def test_both_rotations_recover_a_planted_rotation_whatever_the_blocks():
    rotation = ortho_group.rvs(6, random_state=9)
    rng = np.random.default_rng(10)
    pivot = [[f"e{i}" for i in rng.integers(0, 50, size=rng.integers(2, 7))] for _ in range(40)]
    other = [[f"x{w[1:]}" for w in reversed(sentence)] + ["?"] for sentence in pivot]  # reordered, one unknown
    links = [{(i, len(s) - 1 - i) for i in range(len(s))} | {(0, len(s))} for s in pivot]  # one link to "?"
    word_vectors = planted_vectors(rotation, 6)
    found = learn_rotations(word_vectors, pivot, other, links, block=7)
    for kind in ("word", "sentence"):
        np.testing.assert_allclose(found[kind][0], rotation.T, atol=1e-8)  # x_other @ W = x_pivot
    assert found["word"][1] == sum(map(len, pivot)) and found["sentence"][1] == 40  # links to "?" left out
    at_once = learn_rotations(word_vectors, pivot, other, links, block=100)
    shuffled = [[f"x{rng.integers(0, 50)}" for _ in s] for s in other]  # no planted map: blocks must still agree
    for kind in ("word", "sentence"):
        np.testing.assert_allclose(found[kind][0], at_once[kind][0], atol=1e-10)
        np.testing.assert_allclose(
            learn_rotations(word_vectors, pivot, shuffled, links, block=7)[kind][0],
            learn_rotations(word_vectors, pivot, shuffled, links, block=40)[kind][0],
            atol=1e-10,
        )


def test_the_sentence_vector_is_the_mean_of_the_words_that_have_one():
    sentences = [np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, 4.0]]), np.full((2, 2), np.nan)]
    means = mean_rows(sentences)
    np.testing.assert_array_equal(means[0], [2.0, 3.0])
    assert np.isnan(means[1]).all()


# ---------------------------------------------------------------------------------------------- in the forward pass


def test_rotate_layer_multiplies_the_layer_output_and_the_blocks_above_read_it(model_dir):
    model = BertForMaskedLM.from_pretrained(model_dir).eval()
    ids = torch.tensor([[2, 5, 9, 7, 3], [2, 6, 8, 3, 0]])
    w = torch.as_tensor(ortho_group.rvs(16, random_state=1), dtype=torch.float32)
    with torch.no_grad():
        states = model.bert(input_ids=ids, output_hidden_states=True).hidden_states
        expected = model.bert.encoder.layer[1](states[1] @ w)
        expected = expected[0] if isinstance(expected, tuple) else expected
        with rotate_layer(model, 1, w.numpy()):
            hooked = model.bert(input_ids=ids, output_hidden_states=True)
        after = model.bert(input_ids=ids).last_hidden_state
    torch.testing.assert_close(hooked.hidden_states[1], states[1] @ w)
    torch.testing.assert_close(hooked.last_hidden_state, expected)
    torch.testing.assert_close(after, states[2])  # the hook is gone after the context
    with pytest.raises(ValueError, match="square"):
        with rotate_layer(model, 1, np.ones((16, 4))):
            pass


def test_xnli_rotation_rows_are_the_classifier_on_rotated_states(tmp_path):
    from test_finetune import run, save_tiny_bert, toy_xnli

    from xling.evaluate import transfer

    bert = save_tiny_bert(tmp_path / "bert")
    run(bert, tmp_path, settings={"epochs": 1})
    data = {lang: {"dev": toy_xnli(30, 7), "test": toy_xnli(30, 8)} for lang in ("en", "fr")}
    w = ortho_group.rvs(16, random_state=3)
    table = transfer.evaluate(
        tmp_path / "model",
        data,
        transfer.TransferTest(
            pivot="en",
            layer=1,
            alphas=[1.0],
            positions="all",
            mds=False,
            batch_size=8,
            rotations={"word": {"fr": w}, "sentence": {"fr": np.eye(16)}},
            rotation_layer=2,
        ),
    )
    rows = table[table["metric"] == "accuracy"].set_index(["lang", "split", "transform"])["value"]
    assert set(table[table["transform"].str.startswith("rotation")]["lang"]) == {"fr"}  # never the pivot
    assert set(table[table["transform"] == "rotation-word"]["layer"]) == {2}
    _, model, backbone = transfer.load_finetuned(tmp_path / "model")
    featurize = backbone.featurizer("xnli", 16, ["contradiction", "entailment", "neutral"])
    for split in ("dev", "test"):
        assert rows["fr", split, "rotation-sentence"] == rows["fr", split, "none"]  # the identity changes nothing
        batch = collate("xnli", featurize(data["fr"][split]), backbone.pad_id, True)
        with torch.no_grad():
            states = model.encoder(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
            predicted = model.out((states @ torch.as_tensor(w, dtype=torch.float32))[:, 0]).argmax(-1)
        labels = ["contradiction", "entailment", "neutral"]
        expected = 100 * np.mean(
            [labels[p] == e[2] for p, e in zip(predicted.tolist(), data["fr"][split], strict=True)]
        )
        assert rows["fr", split, "rotation-word"] == pytest.approx(expected)


# ---------------------------------------------------------------------------------------------- fastText


def keyed_vectors(words: list[str], vectors: np.ndarray):
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=vectors.shape[1])
    kv.add_vectors(words, vectors.astype(np.float32))
    return kv


def test_normalise_centre_normalise_by_hand():
    raw = np.array([[3.0, 4.0], [0.0, 2.0], [1.0, 0.0]])
    normalised = fasttext.Normalised(keyed_vectors(["a", "b", "c"], raw))
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)  # [.6 .8], [0 1], [1 0]
    mean = unit.mean(axis=0)  # [1.6/3, 1.8/3]
    centred = unit[[0, 2]] - mean
    np.testing.assert_allclose(normalised(["a", "c"]), centred / np.linalg.norm(centred, axis=1, keepdims=True))


def test_sentence_augmented_vectors_by_hand():
    words = np.array([[1.0, 2.0], [3.0, 0.0]])
    np.testing.assert_array_equal(
        fasttext.sentence_augmented(words), [[1, 2, 2, 1, 3, 2, 1, 0], [3, 0, 2, 1, 3, 2, 1, 0]]
    )


def test_fasttext_rotation_recovers_a_planted_rotation_through_the_normalisation():
    rng = np.random.default_rng(5)
    raw = rng.normal(size=(30, 6)) + 0.5
    rotation = ortho_group.rvs(6, random_state=6)
    pivot = fasttext.Normalised(keyed_vectors([f"e{i}" for i in range(30)], raw))
    other = fasttext.Normalised(keyed_vectors([f"x{i}" for i in range(30)], raw @ rotation))
    sentences = [list(range(i, i + 5)) for i in range(0, 30, 5)]
    w, n = fasttext.rotation(
        pivot,
        other,
        [[f"e{i}" for i in s] for s in sentences],
        [[f"x{i}" for i in reversed(s)] for s in sentences],
        [{(k, 4 - k) for k in range(5)} for _ in sentences],
    )
    assert n == 30
    np.testing.assert_allclose(w, rotation.T, atol=1e-8)  # maps the other language back onto the pivot
    rotated = fasttext.retrieval_vectors(other, [["x0", "x1"]], w)[0]
    np.testing.assert_allclose(rotated, fasttext.retrieval_vectors(pivot, [["e0", "e1"]])[0], atol=1e-6)


def test_train_fasttext_saves_one_file_with_ngram_vectors(tmp_path):
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(7)
    corpus.write_text(
        "".join(
            " ".join(f"w{i}" for i in rng.integers(0, 30, size=8)) + "\n" + ("\n" if d % 5 == 4 else "")
            for d in range(200)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "ft" / "en.kv"
    fasttext.train_fasttext(
        corpus,
        out,
        lambda lines: [line.split() for line in lines],
        dim=8,
        window=2,
        epochs=2,
        min_count=2,
        min_n=2,
        max_n=3,
        seed=1,
        threads=1,
    )
    assert [p.name for p in out.parent.iterdir()] == ["en.kv"]
    vectors = fasttext.load_vectors(out)
    assert len(vectors) == 30 and vectors.vector_size == 8
    assert np.isfinite(vectors["w999"]).all()  # a word outside the vocabulary: its character n-grams
    with pytest.raises(FileNotFoundError, match="fastText vectors not found"):
        fasttext.load_vectors(tmp_path / "missing.kv")


def test_fasttext_baseline_retrieves_every_word_of_a_planted_rotated_language():
    """The other language is the pivot rotated: after the learned rotation every word (contextual: every
    occurrence, told apart by its sentence's mean, max and min) retrieves its translation."""
    from xling.evaluate.contextual_retrieval import evaluate_fasttext

    rng = np.random.default_rng(11)
    raw = rng.normal(size=(40, 8)) + 0.3
    rotation = ortho_group.rvs(8, random_state=12)
    pivot = fasttext.Normalised(keyed_vectors([f"e{i}" for i in range(40)], raw))
    other = fasttext.Normalised(keyed_vectors([f"x{i}" for i in range(40)], raw @ rotation))

    def split(n_sentences, seed):
        order = np.random.default_rng(seed)
        sentences = [list(order.choice(40, size=5, replace=False)) for _ in range(n_sentences)]
        return (
            [[f"e{i}" for i in s] for s in sentences],
            [[f"x{i}" for i in reversed(s)] for s in sentences],
            [{(k, 4 - k) for k in range(5)} for _ in sentences],
        )

    test = split(12, 13)
    table, queries = evaluate_fasttext(
        pivot,
        other,
        test,
        set(),
        {30: split(30, 14), 1: split(1, 15)},
        k=3,
        block=16,
        exclude_seen=True,
        exclude_exact=True,
    )
    assert set(table["method"]) == {"rotation-word"} and set(table["parallel_sentences"]) == {1, 30}
    best = table[table["parallel_sentences"] == 30].set_index("contextual")["accuracy"]
    assert best[True] == pytest.approx(1.0) and best[False] == pytest.approx(1.0)
    assert table.loc[table["parallel_sentences"] == 1, "accuracy"].max() < 0.9  # 5 pairs cannot fix 8 dimensions
    assert len(queries[(queries["parallel_sentences"] == 30) & queries["contextual"]]) == 2 * 12 * 5
