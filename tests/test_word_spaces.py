"""One language's word spaces for the monolingual alignment (xling.represent.word_spaces): the vocabulary, a
BERT's contextual word means over a token file (against the encoder run by hand), fastText's vectors."""

import numpy as np
import pandas as pd
import torch

from tests.test_encoder import save_tiny_bert
from xling.encode.encoder import Encoder
from xling.represent.store import read_vectors
from xling.represent.word_spaces import SentenceCap, fasttext_vectors, first_sentences, vocabulary, word_means


def test_vocabulary_most_frequent_first_ties_by_word(tmp_path):
    counts = tmp_path / "counts.parquet"
    pd.DataFrame(
        {"lang": ["en"] * 5 + ["xa"], "word": ["b", "a", "c", "d", "e", "z"], "count": [5, 5, 9, 1, 2, 99]}
    ).to_parquet(counts)
    assert vocabulary(counts, "en", min_count=2, size=10) == ["c", "a", "b", "e"]
    assert vocabulary(counts, "en", min_count=2, size=2) == ["c", "a"]
    assert vocabulary(counts, "xa", min_count=100, size=10) == []


def test_word_means_are_the_means_of_the_occurrence_vectors(tmp_path):
    model = save_tiny_bert(tmp_path / "bert")
    tokens = tmp_path / "en.txt"
    tokens.write_text("w1 w2 ##s w3\nw2 ##s w1\nw4 w1\n", encoding="utf-8")
    out = tmp_path / "words.parquet"
    word_means(model, tokens, "en", {"w1", "w2s"}, out, batch_size=2, max_length=8, device="cpu")
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


def test_a_sentence_cap_averages_over_the_first_sentences_tokenized_as_the_token_file(tmp_path):
    """monolingual.max_sentences: the first n sentences across documents (the last document cut), tokenized by the
    run's vocabulary, are what the means average over: the same store as a token file of them written by hand."""
    model = save_tiny_bert(tmp_path / "bert")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("w1 w2s w3\nw2s w1\n\nw4 w1\nw1 w3\n\nw1\n", encoding="utf-8")  # 2 + 2 + 1 sentences
    assert not first_sentences(corpus, 5, tmp_path / "all.txt")  # no more than 5: nothing is cut
    assert first_sentences(corpus, 4, tmp_path / "four.txt")
    assert (tmp_path / "four.txt").read_text() == "w1 w2s w3\nw2s w1\n\nw4 w1\nw1 w3\n"
    by_hand = tmp_path / "tokens.txt"
    by_hand.write_text("w1 w2 ##s w3 w2 ##s w1\nw4 w1\n", encoding="utf-8")  # the first 3 sentences
    whole = tmp_path / "whole.txt"
    whole.write_text("w1 w2 ##s w3 w2 ##s w1\nw4 w1 w1 w3\nw1\n", encoding="utf-8")
    words, kw = {"w1", "w2s", "w3"}, dict(batch_size=2, max_length=8, device="cpu")
    word_means(model, by_hand, "en", words, tmp_path / "expected.parquet", **kw)
    cap = SentenceCap(3, corpus, tmp_path / "bert" / "vocab.txt")
    word_means(model, whole, "en", words, tmp_path / "capped.parquet", cap=cap, **kw)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "capped.parquet"), pd.read_parquet(tmp_path / "expected.parquet")
    )
    word_means(model, whole, "en", words, tmp_path / "all.parquet", cap=SentenceCap(5, corpus, cap.vocab), **kw)
    word_means(model, whole, "en", words, tmp_path / "uncapped.parquet", **kw)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "all.parquet"), pd.read_parquet(tmp_path / "uncapped.parquet")
    )
    assert not pd.read_parquet(tmp_path / "all.parquet").equals(pd.read_parquet(tmp_path / "capped.parquet"))


def test_fasttext_vectors_in_the_store_layout_deterministic(tmp_path):
    tokens = tmp_path / "xa.txt"
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    tokens.write_text(
        "".join(" ".join(rng.choice(words, 12)) + "\n" for _ in range(200)) + "ab ##cd\n", encoding="utf-8"
    )
    settings = dict(dim=8, epochs=2, window=2, min_count=1, seed=3)
    table = fasttext_vectors(tokens, "xa", ["w1", "abcd", "never"], **settings)
    assert table["word"].tolist() == ["w1", "abcd"]  # pieces joined into words; an unseen word has no vector
    again = fasttext_vectors(tokens, "xa", ["w1", "abcd", "never"], **settings)
    pd.testing.assert_frame_equal(table, again)
    path = tmp_path / "ft.parquet"
    table.to_parquet(path)
    stored_words, vectors = read_vectors(path, "xa", 0)
    assert stored_words == ["abcd", "w1"] and vectors.shape == (2, 8)
