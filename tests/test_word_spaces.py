"""One language's word spaces for the monolingual alignment (xling.represent.word_spaces): the vocabulary, a
BERT's contextual word means over a token file (against the encoder run by hand), fastText's vectors."""

import numpy as np
import pandas as pd
import torch

from tests.test_encoder import save_tiny_bert
from xling.encode.encoder import Encoder
from xling.represent.store import read_vectors
from xling.represent.word_spaces import fasttext_vectors, vocabulary, word_means


def test_vocabulary_most_frequent_first_ties_by_word(tmp_path):
    counts = tmp_path / "counts.parquet"
    pd.DataFrame({"lang": ["en"] * 5 + ["xa"], "word": ["b", "a", "c", "d", "e", "z"],
                  "count": [5, 5, 9, 1, 2, 99]}).to_parquet(counts)
    assert vocabulary(counts, "en", min_count=2, size=10) == ["c", "a", "b", "e"]
    assert vocabulary(counts, "en", min_count=2, size=2) == ["c", "a"]
    assert vocabulary(counts, "xa", min_count=100, size=10) == []


def test_word_means_are_the_means_of_the_occurrence_vectors(tmp_path):
    model = save_tiny_bert(tmp_path / "bert")
    tokens = tmp_path / "en.txt"
    tokens.write_text("w1 w2 ##s w3\nw2 ##s w1\nw4 w1\n", encoding="utf-8")
    out = tmp_path / "words.parquet"
    word_means(model, tokens, "en", {"w1", "w2s"}, out, batch_size=2, max_length=8, device="cpu", max_documents=None)
    encoder = Encoder.from_pretrained(model, device="cpu", max_length=8)
    sums, counts = {}, {}
    for batch in encoder.encode([line.split() for line in tokens.read_text().splitlines()], 1):
        vectors = batch.word_vectors("mean", torch.float64).numpy()
        for i, word in enumerate(batch.batch.words):
            sums[word] = sums.get(word, 0) + vectors[:, i]
            counts[word] = counts.get(word, 0) + 1
    for layer in range(3):
        words, means = read_vectors(out, "en", layer)
        assert words == ["w1", "w2s"]
        np.testing.assert_allclose(means, [sums[w][layer] / counts[w] for w in words], atol=1e-6)


def test_fasttext_vectors_in_the_store_layout_deterministic(tmp_path):
    tokens = tmp_path / "xa.txt"
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    tokens.write_text("".join(" ".join(rng.choice(words, 12)) + "\n" for _ in range(200)) + "ab ##cd\n",
                      encoding="utf-8")
    settings = dict(dim=8, epochs=2, window=2, min_count=1, seed=3)
    table = fasttext_vectors(tokens, "xa", ["w1", "abcd", "never"], **settings)
    assert table["word"].tolist() == ["w1", "abcd"]  # pieces joined into words; an unseen word has no vector
    again = fasttext_vectors(tokens, "xa", ["w1", "abcd", "never"], **settings)
    pd.testing.assert_frame_equal(table, again)
    path = tmp_path / "ft.parquet"
    table.to_parquet(path)
    stored_words, vectors = read_vectors(path, "xa", 0)
    assert stored_words == ["abcd", "w1"] and vectors.shape == (2, 8)
