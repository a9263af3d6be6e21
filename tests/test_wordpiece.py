"""Tests for xling.data.wordpiece: vocabulary training, mBERT vocabulary, token files and word counts."""

import pandas as pd
import pytest

from xling.data.wordpiece import (
    SPECIAL_TOKENS,
    count_words,
    load_tokenizer,
    normalize_word,
    tokenize_corpus,
    train_vocab,
    word_pieces,
)
from xling.data.words import word_text

TEXT = ("the lowest tower is lower than the newest tower .\nthe newer towers were low .\n\n") * 50 + "Hello World\n"


def greedy_longest_match(word, vocab):
    """Reference WordPiece for one whitespace/punctuation-free word (BERT's greedy longest match)."""
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return ["[UNK]"]
    return pieces


@pytest.fixture
def trained(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    vocab = tmp_path / "out" / "vocab.txt"
    train_vocab([corpus], vocab, vocab_size=60, min_frequency=2)
    return corpus, vocab


def test_train_vocab_special_tokens_first_and_round_trip(trained):
    _, vocab_path = trained
    vocab = vocab_path.read_text(encoding="utf-8").splitlines()
    assert vocab[:5] == SPECIAL_TOKENS
    assert len(vocab) == len(set(vocab)) <= 60
    assert {"lowest", "tower", "the"} <= set(vocab)  # frequent words become whole tokens
    tokenizer = load_tokenizer(vocab_path)
    assert tokenizer.get_vocab_size() == len(vocab)
    assert [tokenizer.id_to_token(i) for i in range(len(vocab))] == vocab
    assert word_pieces(tokenizer, "lowest") == ["lowest"]
    for word in ["lowtower", "towerslow", "newlow", "Hello", "thewer"]:
        pieces = word_pieces(tokenizer, word)
        assert pieces == greedy_longest_match(word, set(vocab)), word
        assert word_text(pieces) == word
    assert len(word_pieces(tokenizer, "lowtower")) > 1
    assert word_pieces(tokenizer, "xyz") == ["[UNK]"]
    assert tokenizer.encode("the tower").tokens == ["[CLS]", "the", "tower", "[SEP]"]


def test_cased_by_default_and_lowercase_option(trained):
    corpus, vocab_path = trained
    assert word_pieces(load_tokenizer(vocab_path), "THE") == ["[UNK]"]
    assert word_pieces(load_tokenizer(vocab_path, lowercase=True), "THE") == ["the"]
    lower_vocab = vocab_path.parent / "lower.txt"
    train_vocab([corpus], lower_vocab, vocab_size=60, min_frequency=2, lowercase=True)
    assert "H" not in lower_vocab.read_text(encoding="utf-8").splitlines()


def test_load_tokenizer_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_tokenizer(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("[PAD]\n[UNK]\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.txt: .*\[CLS\]"):
        load_tokenizer(bad)


def test_tokenize_corpus_one_document_per_line(trained, tmp_path):
    _, vocab_path = trained
    corpus = tmp_path / "en.txt"
    corpus.write_text("the lowest tower .\nHello lowtower\n\nthe newer\n\n\x01\n\nxyz were\n", encoding="utf-8")
    out = tmp_path / "tokens" / "en.txt"
    stats = tokenize_corpus(corpus, vocab_path, out, batch_sentences=2)
    tokenizer = load_tokenizer(vocab_path)
    expected_doc1 = word_pieces(tokenizer, "the lowest tower .") + word_pieces(tokenizer, "Hello lowtower")
    assert out.read_text(encoding="utf-8").splitlines() == [" ".join(expected_doc1), "the newer", "[UNK] were"]
    assert "[CLS]" not in out.read_text(encoding="utf-8")
    assert stats["documents"] == 3 and stats["sentences"] == 5 and stats["empty_documents"] == 1
    assert stats["tokens"] == len(expected_doc1) + 4 and stats["unk"] == 1


def test_count_words(tmp_path):
    (tmp_path / "en.txt").write_text("Un ##beli ##eva ##bly good good\ngood [UNK] x\n", encoding="utf-8")
    (tmp_path / "de.txt").write_text("gut ##en gut\n##x ##y\n", encoding="utf-8")  # a leading "##" loses it too
    out = tmp_path / "counts.parquet"
    count_words([tmp_path / "en.txt", tmp_path / "de.txt"], out)
    table = pd.read_parquet(out)
    assert list(table.columns) == ["lang", "word", "count"]
    assert table["count"].dtype == "int64"
    rows = set(table.itertuples(index=False, name=None))
    assert rows == {
        ("en", "good", 3),
        ("en", "Unbelievably", 1),
        ("en", "x", 1),
        ("de", "guten", 1),
        ("de", "gut", 1),
        ("de", "xy", 1),
    }
    with pytest.raises(ValueError, match="already counted"):
        count_words([tmp_path / "en.txt", tmp_path / "en.txt"], out)


def test_mbert_vocab(shared_data, tmp_path):
    vocab_path = shared_data / "mbert" / "vocab-cased.txt"
    with open(vocab_path, encoding="utf-8") as handle:
        assert sum(1 for _ in handle) == 119547
    tokenizer = load_tokenizer(vocab_path)
    assert tokenizer.get_vocab_size() == 119547
    assert word_pieces(tokenizer, "Hello") == ["Hello"]
    assert word_pieces(tokenizer, "Unbelievably") == ["Un", "##beli", "##eva", "##bly"]
    assert word_pieces(tokenizer, "北京") == ["北", "京"]  # CJK characters split
    assert word_pieces(tokenizer, "naïve") == ["na", "##ï", "##ve"]  # cased mBERT keeps accents
    corpus = tmp_path / "de.txt"
    corpus.write_text("Hello world.\nUnbelievably good!\n\nStraße\n", encoding="utf-8")
    tokenize_corpus(corpus, vocab_path, tmp_path / "tok.txt")
    assert (tmp_path / "tok.txt").read_text(encoding="utf-8").splitlines() == [
        "Hello world . Un ##beli ##eva ##bly good !",
        "Straße",
    ]


def test_mbert_matches_reference_python_tokenizer(shared_data):
    """The Rust tokenizer agrees with transformers' pure-Python BERT tokenizer on real sentences."""
    from transformers.models.bert import BertTokenizerLegacy as legacy

    vocab_path = shared_data / "mbert" / "vocab-cased.txt"
    reference = legacy(str(vocab_path), do_lower_case=False)
    tokenizer = load_tokenizer(vocab_path)
    for name in ("eng_wikipedia_2016_10K-sentences.txt", "rus_wikipedia_2021_10K-sentences.txt"):
        with open(shared_data / "wiki" / name, encoding="utf-8") as handle:
            lines = [next(handle).rstrip("\n").split("\t", 1)[1] for _ in range(300)]
        for line, encoding in zip(lines, tokenizer.encode_batch(lines, add_special_tokens=False), strict=True):
            assert encoding.tokens == reference.tokenize(line), line


def test_trained_vocabulary_is_identical_on_every_run(tmp_path):
    """tokenizers' trainer alone tie-breaks in hash-map order (huggingface/tokenizers#1794)."""
    from xling.data.synthetic import generate

    spec = {
        "seed": 3,
        "sentences": 1500,
        "concepts": 200,
        "topics": 10,
        "dictionary": {"train": [0, 100], "test": [100, 150]},
        "languages": {"xa": {"script": "cyrillic", "anchors": 0.2}, "xb": {"script": "greek"}},
    }
    generate(spec, ["en", "xa", "xb"], tmp_path / "data")
    corpora = sorted((tmp_path / "data" / "corpus").glob("*.txt"))
    vocabs = []
    for run in range(4):
        out = tmp_path / f"vocab{run}.txt"
        train_vocab(corpora, out, vocab_size=1200, min_frequency=2)
        vocabs.append(out.read_text(encoding="utf-8"))
    assert len(set(vocabs)) == 1
    assert vocabs[0].split("\n")[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


LOWER_TEXT = "Éclair Über alles .\nDas éclair ist über dem Tisch .\n\n" * 40


@pytest.fixture
def lowercased_run(tmp_path):
    """A lowercased run at library level: vocabulary, token file and a 2-step BERT, all with lowercase=True."""
    from xling.models import bert

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(LOWER_TEXT, encoding="utf-8")
    vocab, tokens = tmp_path / "vocab.txt", tmp_path / "xx.txt"
    train_vocab([corpus], vocab, vocab_size=60, min_frequency=2, lowercase=True)
    tokenize_corpus(corpus, vocab, tokens, lowercase=True)
    hparams = {
        "hidden_size": 16,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_size": 32,
        "window": 8,
        "batch_size": 4,
        "max_steps": 2,
        "warmup_steps": 1,
        "log_every": 1,
        "checkpoint_every": 2,
    }
    bert.pretrain([tokens], vocab, tmp_path / "bert", tmp_path / "ckpt", hparams, lowercase=True)
    return vocab, tokens, tmp_path / "bert"


def test_lowercase_training_vocabulary_and_token_files_agree(lowercased_run):
    vocab, tokens, _ = lowercased_run
    pieces = vocab.read_text(encoding="utf-8").split()[len(SPECIAL_TOKENS) :]
    assert not any(c.isupper() or c in "éÉüÜ" for p in pieces for c in p)  # lowercased AND accents stripped
    tokenizer = load_tokenizer(vocab, lowercase=True)
    first_line = tokens.read_text(encoding="utf-8").splitlines()[0].split()
    expected = [p for w in "Éclair Über alles .".split() for p in word_pieces(tokenizer, w)]
    assert first_line[: len(expected)] == expected
    assert word_pieces(tokenizer, "Éclair") == word_pieces(tokenizer, "eclair") and "[UNK]" not in expected
    assert word_text(word_pieces(tokenizer, "Über")) == normalize_word("Über", True) == "uber"


def test_lowercase_static_word_lookup_uses_the_same_pieces(lowercased_run, tmp_path):
    import numpy as np

    from xling.models.static import train_word2vec, word_vectors

    vocab, tokens, _ = lowercased_run
    vectors = tmp_path / "w2v.bin"
    train_word2vec([tokens], vectors, window=2, dim=4, epochs=1, min_count=1, sg=1, negative=2, seed=1, threads=1)
    lower = word_vectors(vectors, vocab, {"xx": ["Éclair", "eclair"]}, lowercase=True)
    assert list(lower.word) == ["Éclair", "eclair"]
    np.testing.assert_array_equal(lower.iloc[0, 4:].to_numpy(float), lower.iloc[1, 4:].to_numpy(float))
    # read cased, "É" is not in the lowercased vocabulary: the capitalised word would be lost
    assert list(word_vectors(vectors, vocab, {"xx": ["Éclair", "eclair"]}).word) == ["eclair"]


@pytest.mark.parametrize("use_fast", [True, False])
def test_lowercase_is_recorded_for_bert_inference(lowercased_run, use_fast):
    import json

    from transformers import AutoTokenizer

    vocab, _, model = lowercased_run
    config = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["do_lower_case"] is True and config["strip_accents"] is True
    inference = AutoTokenizer.from_pretrained(model, use_fast=use_fast)
    training = load_tokenizer(vocab, lowercase=True)
    for text in ["Éclair", "ÜBER alles", "Das Éclair ist über dem Tisch ."]:
        assert inference.tokenize(text) == training.encode(text, add_special_tokens=False).tokens, text


def test_cased_bert_keeps_case_even_with_a_lowercase_only_vocabulary(tmp_path):
    """The model records the run's setting, not a guess from the vocabulary (all lowercase here)."""
    from transformers import AutoTokenizer

    from xling.models import bert

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n\n" * 40, encoding="utf-8")
    vocab, tokens = tmp_path / "vocab.txt", tmp_path / "xx.txt"
    train_vocab([corpus], vocab, vocab_size=40, min_frequency=2)
    tokenize_corpus(corpus, vocab, tokens)
    hparams = {
        "hidden_size": 16,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_size": 32,
        "window": 8,
        "batch_size": 4,
        "max_steps": 1,
        "warmup_steps": 0,
        "log_every": 1,
        "checkpoint_every": 1,
    }
    bert.pretrain([tokens], vocab, tmp_path / "bert", tmp_path / "ckpt", hparams)
    inference = AutoTokenizer.from_pretrained(tmp_path / "bert")
    assert inference.tokenize("The cat") == word_pieces(load_tokenizer(vocab), "The") + ["cat"]
    assert inference.tokenize("The cat")[0] != "the"
