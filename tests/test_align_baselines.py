"""Cao et al.'s baselines: the rotations (word- and sentence-aligned Procrustes, learned block by block, applied
inside a forward pass and before the XNLI classifier), the words of tokenized sentences through the encoder,
and the sentence-augmented fastText, against hand computations and direct runs of transformers' BertModel."""

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast

from xling.encode.encoder import Encoder
from xling.encode.tokenized import encode_tokenized
from xling.models.heads import collate
from xling.models import fasttext
from xling.represent.rotation import CrossCovariance, learn_rotations, linked_rows, procrustes, rotate_layer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + [f"w{i}" for i in range(20)] + ["##s", "##t"]
MAX_LENGTH = 8  # chunks of 6 pieces


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    (out / "vocab.txt").write_text("".join(v + "\n" for v in VOCAB), encoding="utf-8")
    BertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=False, strip_accents=False).save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    BertForMaskedLM(config).eval().save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def encoder(model_dir) -> Encoder:
    return Encoder.from_pretrained(model_dir, device="cpu", max_length=MAX_LENGTH)


def direct_states(model_dir, pieces: list[str], layer: int) -> np.ndarray:
    """Reference: [CLS] pieces [SEP] run alone through transformers' BertModel -> [n + 2, H] at `layer`."""
    model = BertModel.from_pretrained(model_dir, add_pooling_layer=False).eval()
    ids = torch.tensor([[VOCAB.index("[CLS]")] + [VOCAB.index(p) for p in pieces] + [VOCAB.index("[SEP]")]])
    with torch.no_grad():
        return model(input_ids=ids, output_hidden_states=True).hidden_states[layer][0].double().numpy()


# ---------------------------------------------------------------------------------------------- procrustes

def test_cross_covariance_over_blocks_gives_procrustes_on_all_rows():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(90, 8)), rng.normal(size=(90, 8))
    covariance = CrossCovariance(8)
    for start in range(0, 90, 25):
        covariance.add(x[start:start + 25], y[start:start + 25])
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


# ---------------------------------------------------------------------------------------------- tokenized words

def test_a_tokenized_word_gets_its_last_piece_vector_whatever_the_encoder_grouping(model_dir, encoder):
    # "w1-w2" is three encoder words (w1, [UNK] for "-", w2): its vector is w2's; "w6s" is w6 ##s, its vector
    # ##s's; the second sentence (8 pieces) runs as two chunks, [w1 .. w5] and [w6 ##s w7]; "\x07" has no piece
    sentences = [["w3", "w1-w2", "w4s"], ["w1", "w2", "w3", "w4", "w5", "w6s", "w7"], ["w8", "\x07"]]
    words, sentence_vectors = encode_tokenized(encoder, sentences, layer=2, batch_size=2)
    first = direct_states(model_dir, ["w3", "w1", "[UNK]", "w2", "w4", "##s"], 2)
    np.testing.assert_allclose(words[0], first[[1, 4, 6]], atol=1e-5)
    np.testing.assert_allclose(sentence_vectors[0], first[1:-1].mean(axis=0), atol=1e-5)
    chunk1 = direct_states(model_dir, ["w1", "w2", "w3", "w4", "w5"], 2)
    chunk2 = direct_states(model_dir, ["w6", "##s", "w7"], 2)
    np.testing.assert_allclose(words[1], np.vstack([chunk1[1:6], chunk2[[2, 3]]]), atol=1e-5)
    np.testing.assert_allclose(sentence_vectors[1], np.vstack([chunk1[1:-1], chunk2[1:-1]]).mean(axis=0), atol=1e-5)
    np.testing.assert_allclose(words[2][0], direct_states(model_dir, ["w8"], 2)[1], atol=1e-5)
    assert np.isnan(words[2][1]).all()


def test_identical_languages_learn_the_identity_and_blocks_do_not_change_the_rotation(encoder):
    rng = np.random.default_rng(4)
    sentences = [[f"w{i}" for i in rng.integers(0, 20, size=rng.integers(2, 6))] for _ in range(40)]
    links = [{(i, i) for i in range(len(s))} for s in sentences]
    rotations = learn_rotations(encoder, sentences, sentences, links, layer=1, batch_size=8, block=7)
    for kind in ("word", "sentence"):
        w, n = rotations[kind]
        np.testing.assert_allclose(w, np.eye(16), atol=1e-4)
        assert n == (sum(map(len, sentences)) if kind == "word" else len(sentences))
    # a shuffled other side: the word rotation is Procrustes on the linked rows, learned in blocks or at once
    other = [list(reversed(s)) for s in sentences]
    links = [{(i, len(s) - 1 - i) for i in range(len(s))} for s in sentences]
    w = learn_rotations(encoder, sentences, other, links, layer=1, batch_size=8, block=7)["word"][0]
    p_words, _ = encode_tokenized(encoder, sentences, 1, 8)
    o_words, _ = encode_tokenized(encoder, other, 1, 8)
    np.testing.assert_allclose(w, procrustes(*linked_rows(p_words, o_words, links)), atol=1e-6)


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
    table = transfer.evaluate(tmp_path / "model", data, pivot="en", layer=1, alphas=[1.0], positions="all",
                              mds=False, batch_size=8, rotations={"word": {"fr": w}, "sentence": {"fr": np.eye(16)}},
                              rotation_layer=2)
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
        expected = 100 * np.mean([labels[p] == e[2] for p, e in zip(predicted.tolist(), data["fr"][split])])
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
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)          # [.6 .8], [0 1], [1 0]
    mean = unit.mean(axis=0)                                          # [1.6/3, 1.8/3]
    centred = unit[[0, 2]] - mean
    np.testing.assert_allclose(normalised(["a", "c"]), centred / np.linalg.norm(centred, axis=1, keepdims=True))


def test_sentence_augmented_vectors_by_hand():
    words = np.array([[1.0, 2.0], [3.0, 0.0]])
    np.testing.assert_array_equal(fasttext.sentence_augmented(words),
                                  [[1, 2, 2, 1, 3, 2, 1, 0], [3, 0, 2, 1, 3, 2, 1, 0]])


def test_fasttext_rotation_recovers_a_planted_rotation_through_the_normalisation():
    rng = np.random.default_rng(5)
    raw = rng.normal(size=(30, 6)) + 0.5
    rotation = ortho_group.rvs(6, random_state=6)
    pivot = fasttext.Normalised(keyed_vectors([f"e{i}" for i in range(30)], raw))
    other = fasttext.Normalised(keyed_vectors([f"x{i}" for i in range(30)], raw @ rotation))
    sentences = [list(range(i, i + 5)) for i in range(0, 30, 5)]
    w, n = fasttext.rotation(pivot, other, [[f"e{i}" for i in s] for s in sentences],
                             [[f"x{i}" for i in reversed(s)] for s in sentences],
                             [{(k, 4 - k) for k in range(5)} for _ in sentences])
    assert n == 30
    np.testing.assert_allclose(w, rotation.T, atol=1e-8)  # maps the other language back onto the pivot
    rotated = fasttext.retrieval_vectors(other, [["x0", "x1"]], w)[0]
    np.testing.assert_allclose(rotated, fasttext.retrieval_vectors(pivot, [["e0", "e1"]])[0], atol=1e-6)


def test_train_fasttext_saves_one_file_with_ngram_vectors(tmp_path):
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(7)
    corpus.write_text("".join(" ".join(f"w{i}" for i in rng.integers(0, 30, size=8)) + "\n" + ("\n" if d % 5 == 4
                                                                                               else "")
                              for d in range(200)), encoding="utf-8")
    out = tmp_path / "ft" / "en.kv"
    fasttext.train_fasttext(corpus, out, lambda lines: [line.split() for line in lines], dim=8, window=2, epochs=2,
                            min_count=2, min_n=2, max_n=3, seed=1, threads=1)
    assert [p.name for p in out.parent.iterdir()] == ["en.kv"]
    vectors = fasttext.load_vectors(out)
    assert len(vectors) == 30 and vectors.vector_size == 8
    assert np.isfinite(vectors["w999"]).all()  # a word outside the vocabulary: its character n-grams
    with pytest.raises(FileNotFoundError, match="fastText vectors not found"):
        fasttext.load_vectors(tmp_path / "missing.kv")
