"""Tests for xling.models.static: GloVe and word2vec on WordPiece token files, and word vectors from pieces."""

import logging
import random

import numpy as np
import pytest
from gensim.models import KeyedVectors

from xling.models.static import train_glove, train_word2vec, word_vectors
from xling.data.wordpiece import SPECIAL_TOKENS

FREQUENT = [f"w{i}" for i in range(20)] + [f"##s{i}" for i in range(5)]


@pytest.fixture
def token_files(tmp_path):
    """Two tiny token files (en, de): 150 documents of 30 frequent pieces each, plus one rare piece."""
    rng = random.Random(0)
    paths = []
    for lang in ("en", "de"):
        path = tmp_path / "tokens" / f"{lang}.txt"
        path.parent.mkdir(exist_ok=True)
        lines = [" ".join(rng.choice(FREQUENT) + lang for _ in range(30)) for _ in range(150)]
        lines[0] += f" rare{lang}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def load(path):
    return KeyedVectors.load_word2vec_format(str(path), binary=True)


def test_word2vec_vectors_min_count_and_determinism(token_files, tmp_path):
    args = dict(dim=12, window=4, epochs=2, min_count=3, sg=1, negative=3, threads=1)
    train_word2vec(token_files, tmp_path / "a.bin", seed=7, **args)
    train_word2vec(token_files, tmp_path / "b.bin", seed=7, **args)
    train_word2vec(token_files, tmp_path / "c.bin", seed=8, **args)
    a, b, c = load(tmp_path / "a.bin"), load(tmp_path / "b.bin"), load(tmp_path / "c.bin")
    expected = {piece + lang for piece in FREQUENT for lang in ("en", "de")}
    assert set(a.index_to_key) == expected  # both languages; rare pieces dropped
    assert a.vectors.shape == (len(expected), 12)
    assert np.isfinite(a.vectors).all()
    assert a.index_to_key == b.index_to_key and np.array_equal(a.vectors, b.vectors)
    assert not np.allclose(a.vectors, c[a.index_to_key])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.bin", "c.bin", "tokens"]  # temp file removed


def test_word2vec_long_document_is_chunked_with_warning(tmp_path, caplog):
    path = tmp_path / "xx.txt"
    path.write_text(" ".join(f"t{i % 7}" for i in range(10_050)) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="xling.models.static"):
        train_word2vec(
            [path], tmp_path / "v.bin", dim=4, window=2, epochs=1, min_count=1, sg=0, negative=2, threads=1, seed=1
        )
    assert "1 documents exceed gensim's 10000-token line limit" in caplog.text
    assert len(load(tmp_path / "v.bin")) == 7


def test_word2vec_empty_vocabulary_is_an_error(token_files, tmp_path):
    with pytest.raises(ValueError, match=r"en\.txt.*min_count=100000"):
        train_word2vec(
            token_files,
            tmp_path / "v.bin",
            dim=4,
            window=2,
            epochs=1,
            min_count=100_000,
            sg=0,
            negative=2,
            threads=1,
            seed=1,
        )
    assert [p.name for p in tmp_path.iterdir()] == ["tokens"]  # no output, no temporary corpus left


def test_glove_vectors_min_count_and_determinism(token_files, tmp_path):
    args = dict(dim=10, window=3, epochs=3, learning_rate=0.05, min_count=3, threads=1)
    train_glove(token_files, tmp_path / "a.bin", seed=3, **args)
    train_glove(token_files, tmp_path / "b.bin", seed=3, **args)
    a, b = load(tmp_path / "a.bin"), load(tmp_path / "b.bin")
    expected = {piece + lang for piece in FREQUENT for lang in ("en", "de")}
    assert set(a.index_to_key) == expected
    assert a.vectors.shape == (len(expected), 10)
    assert np.isfinite(a.vectors).all() and np.abs(a.vectors).sum() > 0
    assert np.array_equal(a.vectors, b.vectors)
    # en and de pieces never share a document, so cross-language co-occurrence is zero: the pieces of one
    # language are closer to each other than to the other language
    vectors = a[sorted(expected)]
    langs = np.array([key.endswith("en") for key in sorted(expected)])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    same = sims[np.equal.outer(langs, langs) & ~np.eye(len(langs), dtype=bool)].mean()
    other = sims[~np.equal.outer(langs, langs)].mean()
    assert same > other
    with pytest.raises(ValueError, match="min_count=1000"):
        train_glove(token_files, tmp_path / "c.bin", seed=3, **{**args, "min_count": 1000})


def test_word_vectors_mean_of_pieces(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        "\n".join(SPECIAL_TOKENS + ["un", "##believ", "##able", "good", "bad", "x"]) + "\n", encoding="utf-8"
    )
    kv = KeyedVectors(vector_size=3)
    table = {"un": [1, 2, 3], "##believ": [4, 0, -1], "##able": [0.5, 0.25, 2], "good": [-1, 1, 0], "[UNK]": [9, 9, 9]}
    kv.add_vectors(list(table), np.array(list(table.values()), dtype=np.float32))
    vectors = tmp_path / "v.bin"
    kv.save_word2vec_format(str(vectors), binary=True)

    frame = word_vectors(vectors, vocab, {"en": ["unbelievable", "good", "bad", "zzz", "good"], "de": ["un"]})
    assert list(frame.columns) == ["lang", "word", "layer", "n", "d0", "d1", "d2"]
    assert str(frame["layer"].dtype) == "int32" and str(frame["n"].dtype) == "int64"
    assert all(str(frame[f"d{i}"].dtype) == "float64" for i in range(3))
    # "bad" has no vector, "zzz" is [UNK]: both absent; the repeated "good" appears once
    assert list(zip(frame["lang"], frame["word"], strict=True)) == [
        ("en", "unbelievable"),
        ("en", "good"),
        ("de", "un"),
    ]
    assert (frame["layer"] == 0).all() and (frame["n"] == 1).all()
    expected = np.array([(1 + 4 + 0.5) / 3, (2 + 0 + 0.25) / 3, (3 - 1 + 2) / 3])
    np.testing.assert_allclose(frame.iloc[0][["d0", "d1", "d2"]].to_numpy(float), expected, rtol=1e-6)
    np.testing.assert_allclose(frame.iloc[1][["d0", "d1", "d2"]].to_numpy(float), [-1, 1, 0])
    np.testing.assert_allclose(frame.iloc[2][["d0", "d1", "d2"]].to_numpy(float), [1, 2, 3])
    empty = word_vectors(vectors, vocab, {"en": ["zzz"]})
    assert len(empty) == 0 and list(empty.columns) == ["lang", "word", "layer", "n", "d0", "d1", "d2"]
