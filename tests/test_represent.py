"""xling.represent.store: chunking at word boundaries, and map/reduce means == direct numpy means."""

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertModel

from xling.represent import store as represent

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = list("abcdefgh")
PIECES = LETTERS + ["##" + x for x in LETTERS]


def test_group_words_and_word_string():
    pieces = ["##x", "a", "##b", "c", "##d", "##e", "f"]
    words = represent.group_words(pieces)
    assert words == [["##x"], ["a", "##b"], ["c", "##d", "##e"], ["f"]]
    assert [represent.word_string(w) for w in words] == ["x", "ab", "cde", "f"]


def test_chunk_words_hand_cases():
    words = [["a", "##b"], ["c", "##d", "##e"], ["f"]]
    assert represent.chunk_words(words, 3) == ([[["a", "##b"]], [["c", "##d", "##e"]], [["f"]]], 0)
    assert represent.chunk_words(words, 5) == ([[["a", "##b"], ["c", "##d", "##e"]], [["f"]]], 0)
    # a word longer than a chunk is dropped and counted, never split
    assert represent.chunk_words(words, 2) == ([[["a", "##b"]], [["f"]]], 1)
    with pytest.raises(ValueError):
        represent.chunk_words(words, 0)


def test_chunking_never_splits_a_word():
    rng = np.random.default_rng(3)
    for _ in range(200):
        pieces = _random_document(rng, int(rng.integers(1, 60)))
        max_pieces = int(rng.integers(1, 12))
        words = represent.group_words(pieces)
        chunks, dropped = represent.chunk_words(words, max_pieces)
        kept = [w for w in words if len(w) <= max_pieces]
        assert dropped == len(words) - len(kept)
        assert [w for chunk in chunks for w in chunk] == kept  # order kept, every word whole
        for chunk in chunks:
            assert 1 <= sum(map(len, chunk)) <= max_pieces
        # greedy: the next chunk's first word would not have fitted
        for a, b in zip(chunks, chunks[1:]):
            assert sum(map(len, a)) + len(b[0]) > max_pieces


def _random_document(rng, n_pieces):
    out = []
    for i in range(n_pieces):
        cont = i > 0 and rng.random() < 0.4
        out.append(("##" if cont else "") + LETTERS[rng.integers(len(LETTERS))])
    return out


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A random BertForMaskedLM saved like the pretraining step does (save_pretrained + vocab.txt)."""
    root = tmp_path_factory.mktemp("bert")
    vocab = SPECIAL + PIECES
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.1)
    BertForMaskedLM(config).save_pretrained(root)
    return root


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    rng = np.random.default_rng(7)
    docs = [" ".join(_random_document(rng, int(rng.integers(1, 40)))) for _ in range(11)]
    docs[4] = ""  # an empty document keeps its line (shard assignment is by line)
    docs[6] = "a ##b ##c ##d ##e ##f ##g ##h ##a b"  # a 9-piece word: longer than a chunk, dropped
    path = tmp_path_factory.mktemp("tok") / "xx.txt"
    path.write_text("\n".join(docs) + "\n", encoding="utf-8")
    return path


def _direct_means(model_dir, token_path, words, max_length):
    """Reference: every chunk run alone (no padding, no batching), averaged in numpy float64."""
    model = BertModel.from_pretrained(model_dir, add_pooling_layer=False).eval()
    vocab = represent.read_vocab(model_dir / "vocab.txt")
    word_sum, word_n, tok_sum, sent_sum = {}, {}, 0.0, 0.0
    n_tok = n_sent = 0
    for line in token_path.read_text(encoding="utf-8").splitlines():
        chunks, _ = represent.chunk_words(represent.group_words(line.split()), max_length - 2)
        for chunk in chunks:
            pieces = [p for w in chunk for p in w]
            ids = [vocab["[CLS]"]] + [vocab[p] for p in pieces] + [vocab["[SEP]"]]
            with torch.no_grad():
                hs = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
            states = np.stack([h[0].double().numpy() for h in hs])[:, 1:-1]  # [layers, pieces, hidden]
            tok_sum = tok_sum + states.sum(axis=1)
            sent_sum = sent_sum + states.mean(axis=1)
            n_tok += len(pieces)
            n_sent += 1
            pos = 0
            for w in chunk:
                text = represent.word_string(w)
                if text in words:
                    word_sum[text] = word_sum.get(text, 0.0) + states[:, pos : pos + len(w)].mean(axis=1)
                    word_n[text] = word_n.get(text, 0) + 1
                pos += len(w)
    means = {w: word_sum[w] / word_n[w] for w in word_sum}
    return means, word_n, tok_sum / n_tok, n_tok, sent_sum / n_sent, n_sent


def _matrix(df, layer_count):
    dcols = [c for c in df.columns if c.startswith("d")]
    return df.sort_values("layer")[dcols].to_numpy().reshape(layer_count, len(dcols))


def test_map_reduce_equals_direct_mean(tiny_model, token_file, tmp_path, monkeypatch):
    monkeypatch.setattr(represent, "ROWS_PER_GROUP", 7)  # shard files of several row groups
    all_words = {represent.word_string(w) for line in token_file.read_text().splitlines()
                 for w in represent.group_words(line.split())}
    words = set(sorted(all_words)[::2]) | {"abcdefgha", "notthere"}
    max_length = 8
    n_shards = 3
    word_shards, lang_shards = [], []
    for shard in range(n_shards):
        word_shards.append(tmp_path / f"w{shard}.parquet")
        lang_shards.append(tmp_path / f"l{shard}.parquet")
        represent.extract_bert_shard(tiny_model, token_file, "xx", words, shard, n_shards, word_shards[-1],
                                     lang_shards[-1], batch_size=3, max_length=max_length)
    represent.reduce_shards(word_shards, tmp_path / "words.parquet")
    represent.reduce_shards(lang_shards, tmp_path / "langs.parquet")

    means, counts, tok, n_tok, sent, n_sent = _direct_means(tiny_model, token_file, words, max_length)
    got = pd.read_parquet(tmp_path / "words.parquet")
    assert list(got.columns[:4]) == ["lang", "word", "layer", "n"] and got.shape[1] == 4 + 16
    assert set(got["word"]) == set(means)  # every seen word of `words`, nothing else
    assert "notthere" not in means and "abcdefgha" not in means and len(means) > 5
    for word, ref in means.items():
        rows = got[got["word"] == word]
        assert rows["n"].tolist() == [counts[word]] * 3
        np.testing.assert_allclose(_matrix(rows, 3), ref, atol=1e-6, rtol=0)

    langs = pd.read_parquet(tmp_path / "langs.parquet")
    for stat, ref, n in (("token", tok, n_tok), ("sentence", sent, n_sent)):
        rows = langs[langs["stat"] == stat]
        assert rows["n"].tolist() == [n] * 3
        np.testing.assert_allclose(_matrix(rows, 3), ref, atol=1e-6, rtol=0)
        np.testing.assert_allclose(represent.read_lang_mean(tmp_path / "langs.parquet", "xx", 1, stat), ref[1],
                                   atol=1e-6, rtol=0)
    assert not np.allclose(tok, sent)  # the two statistics are really different

    # read_vectors: one (lang, layer), words sorted
    vec_words, vecs = represent.read_vectors(tmp_path / "words.parquet", "xx", 2)
    assert vec_words == sorted(means)
    np.testing.assert_allclose(vecs, np.stack([means[w][2] for w in vec_words]), atol=1e-6, rtol=0)
    assert represent.read_vectors(tmp_path / "words.parquet", "yy", 2)[0] == []


def test_shards_hold_sums_and_empty_shards_reduce(tiny_model, token_file, tmp_path):
    words = {"a", "b", "c"}
    paths = []
    for shard in (0, 11):  # 11 docs, 12 shards: shard 11 is empty
        w, l = tmp_path / f"w{shard}.parquet", tmp_path / f"l{shard}.parquet"
        represent.extract_bert_shard(tiny_model, token_file, "xx", words, shard, 12, w, l, 4, 8)
        paths.append((w, l))
    empty_words, empty_langs = (pd.read_parquet(p) for p in paths[1])
    assert len(empty_words) == 0 and len(empty_langs) == 0
    represent.reduce_shards([p[0] for p in paths], tmp_path / "words.parquet")
    represent.reduce_shards([p[1] for p in paths], tmp_path / "langs.parquet")
    shard_langs = pd.read_parquet(paths[0][1])
    reduced = pd.read_parquet(tmp_path / "langs.parquet")
    dcols = [f"d{j}" for j in range(16)]
    key = ["layer", "stat"]
    a = shard_langs.sort_values(key).reset_index(drop=True)
    b = reduced.sort_values(key).reset_index(drop=True)
    np.testing.assert_allclose(b[dcols].to_numpy(), a[dcols].to_numpy() / a[["n"]].to_numpy())


def test_reduce_rejects_mismatched_shards(tiny_model, token_file, tmp_path):
    represent.extract_bert_shard(tiny_model, token_file, "xx", {"a"}, 0, 2, tmp_path / "w.parquet",
                                 tmp_path / "l.parquet", 4, 8)
    with pytest.raises(ValueError, match="differ"):
        represent.reduce_shards([tmp_path / "w.parquet", tmp_path / "l.parquet"], tmp_path / "out.parquet")
    with pytest.raises(ValueError):
        represent.reduce_shards([], tmp_path / "out.parquet")


def test_unknown_piece_names_file_and_line(tiny_model, tmp_path):
    tokens = tmp_path / "bad.txt"
    tokens.write_text("a ##b\nc zz\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: piece 'zz'"):
        represent.extract_bert_shard(tiny_model, tokens, "xx", {"a"}, 0, 1, tmp_path / "w.parquet",
                                     tmp_path / "l.parquet", 4, 8)
    assert not (tmp_path / "w.parquet").exists()


def test_max_documents_equals_a_truncated_corpus(tiny_model, token_file, tmp_path):
    head = tmp_path / "head.txt"
    head.write_text("\n".join(token_file.read_text(encoding="utf-8").splitlines()[:5]) + "\n", encoding="utf-8")
    words = {"a", "b", "c", "d"}
    represent.extract_bert_shard(tiny_model, token_file, "xx", words, 1, 2, tmp_path / "w1.parquet",
                                 tmp_path / "l1.parquet", 4, 8, max_documents=5)
    represent.extract_bert_shard(tiny_model, head, "xx", words, 1, 2, tmp_path / "w2.parquet",
                                 tmp_path / "l2.parquet", 4, 8)
    for name in ("w", "l"):
        capped, truncated = (pd.read_parquet(tmp_path / f"{name}{i}.parquet") for i in (1, 2))
        pd.testing.assert_frame_equal(capped, truncated)
    full = pd.read_parquet(tmp_path / "l1.parquet")
    represent.extract_bert_shard(tiny_model, token_file, "xx", words, 1, 2, tmp_path / "w3.parquet",
                                 tmp_path / "l3.parquet", 4, 8)
    assert pd.read_parquet(tmp_path / "l3.parquet")["n"].iloc[0] > full["n"].iloc[0]


def test_progress_is_logged(tiny_model, token_file, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(represent, "LOG_EVERY_S", 0.0)
    with caplog.at_level("INFO", logger="xling.represent.store"):
        represent.extract_bert_shard(tiny_model, token_file, "xx", {"a"}, 0, 1, tmp_path / "w.parquet",
                                     tmp_path / "l.parquet", 2, 8)
    assert any("tokens/s, ETA" in r.message for r in caplog.records)
    assert any("longer than 6 pieces were left out" in r.message for r in caplog.records)
