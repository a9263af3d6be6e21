"""xling.represent.store: map/reduce means == direct numpy means of each chunk run alone."""

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertModel
from tiny_checkpoints import save_tiny_bert

from xling.data.words import chunk_words, word_spans, word_text
from xling.encode import encoder as encode
from xling.represent import store as represent

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = list("abcdefgh")
PIECES = LETTERS + ["##" + x for x in LETTERS]


def _random_document(rng, n_pieces):
    out = []
    for i in range(n_pieces):
        cont = i > 0 and rng.random() < 0.4
        out.append(("##" if cont else "") + LETTERS[rng.integers(len(LETTERS))])
    return out


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A random BertForMaskedLM saved like the pretraining step does (save_pretrained + tokenizer + vocab.txt)."""
    return save_tiny_bert(tmp_path_factory.mktemp("bert"), SPECIAL + PIECES, positions=16, hidden_dropout_prob=0.1)


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    rng = np.random.default_rng(7)
    docs = [" ".join(_random_document(rng, int(rng.integers(1, 40)))) for _ in range(11)]
    docs[4] = ""  # an empty document keeps its line (shard assignment is by line)
    docs[6] = "a ##b ##c ##d ##e ##f ##g ##h ##a b"  # a 9-piece word: longer than a chunk, dropped
    path = tmp_path_factory.mktemp("tok") / "xx.txt"
    path.write_text("\n".join(docs) + "\n", encoding="utf-8")
    return path


def _direct_means(model_dir, token_path, words, max_length, positions):
    """Reference: every chunk run alone (no padding, no batching), averaged in numpy float64; the language
    means over the wordpieces (positions "words") or every position of the chunk ("all")."""
    model = BertModel.from_pretrained(model_dir, add_pooling_layer=False).eval()
    vocab = {p: i for i, p in enumerate(SPECIAL + PIECES)}
    word_sum, word_n, tok_sum, sent_sum = {}, {}, 0.0, 0.0
    n_tok = n_sent = 0
    for line in token_path.read_text(encoding="utf-8").splitlines():
        pieces = line.split()
        chunks, _ = chunk_words(word_spans(pieces), max_length - 2)
        for chunk in chunks:
            chunk_pieces = pieces[chunk[0][0] : chunk[-1][1]]
            ids = [vocab["[CLS]"]] + [vocab[p] for p in chunk_pieces] + [vocab["[SEP]"]]
            with torch.no_grad():
                hs = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
            states = np.stack([h[0].double().numpy() for h in hs])  # [layers, pieces + 2, hidden]
            averaged = states[:, 1:-1] if positions == "words" else states
            tok_sum = tok_sum + averaged.sum(axis=1)
            sent_sum = sent_sum + averaged.mean(axis=1)
            n_tok += averaged.shape[1]
            n_sent += 1
            for start, end in chunk:
                text = word_text(pieces[start:end])
                if text in words:
                    offset = 1 - chunk[0][0]  # [CLS] is position 0
                    word_sum[text] = word_sum.get(text, 0.0) + states[:, start + offset : end + offset].mean(axis=1)
                    word_n[text] = word_n.get(text, 0) + 1
    means = {w: word_sum[w] / word_n[w] for w in word_sum}
    return means, word_n, tok_sum / n_tok, n_tok, sent_sum / n_sent, n_sent


def _matrix(df, layer_count):
    dcols = [c for c in df.columns if c.startswith("d")]
    return df.sort_values("layer")[dcols].to_numpy().reshape(layer_count, len(dcols))


@pytest.mark.slow
@pytest.mark.parametrize("positions", ["words", "all"])
def test_map_reduce_equals_direct_mean(tiny_model, token_file, tmp_path, monkeypatch, positions):
    monkeypatch.setattr(represent, "ROWS_PER_GROUP", 7)  # shard files of several row groups
    all_words = {
        word_text(line.split()[s:e])
        for line in token_file.read_text().splitlines()
        for s, e in word_spans(line.split())
    }
    words = set(sorted(all_words)[::2]) | {"abcdefgha", "notthere"}
    max_length = 8
    n_shards = 3
    word_shards, lang_shards = [], []
    for shard in range(n_shards):
        word_shards.append(tmp_path / f"w{shard}.parquet")
        lang_shards.append(tmp_path / f"l{shard}.parquet")
        represent.extract_bert_shard(
            tiny_model,
            token_file,
            "xx",
            words,
            shard,
            n_shards,
            word_shards[-1],
            lang_shards[-1],
            represent.Extraction(batch_size=3, max_length=max_length, mean_positions=positions),
        )
    represent.reduce_shards(word_shards, tmp_path / "words.parquet")
    represent.reduce_shards(lang_shards, tmp_path / "langs.parquet")

    means, counts, tok, n_tok, sent, n_sent = _direct_means(tiny_model, token_file, words, max_length, positions)
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
        np.testing.assert_allclose(
            represent.read_lang_mean(tmp_path / "langs.parquet", "xx", 1, stat), ref[1], atol=1e-6, rtol=0
        )
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
        represent.extract_bert_shard(
            tiny_model, token_file, "xx", words, shard, 12, w, l, represent.Extraction(batch_size=4, max_length=8)
        )
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
    represent.extract_bert_shard(
        tiny_model,
        token_file,
        "xx",
        {"a"},
        0,
        2,
        tmp_path / "w.parquet",
        tmp_path / "l.parquet",
        represent.Extraction(batch_size=4, max_length=8),
    )
    with pytest.raises(ValueError, match="differ"):
        represent.reduce_shards([tmp_path / "w.parquet", tmp_path / "l.parquet"], tmp_path / "out.parquet")
    with pytest.raises(ValueError):
        represent.reduce_shards([], tmp_path / "out.parquet")


def test_unknown_piece_names_file_and_line(tiny_model, tmp_path):
    tokens = tmp_path / "bad.txt"
    tokens.write_text("a ##b\nc zz\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: piece 'zz'"):
        represent.extract_bert_shard(
            tiny_model,
            tokens,
            "xx",
            {"a"},
            0,
            1,
            tmp_path / "w.parquet",
            tmp_path / "l.parquet",
            represent.Extraction(batch_size=4, max_length=8),
        )
    assert not (tmp_path / "w.parquet").exists()


def test_max_documents_equals_a_truncated_corpus(tiny_model, token_file, tmp_path):
    head = tmp_path / "head.txt"
    head.write_text("\n".join(token_file.read_text(encoding="utf-8").splitlines()[:5]) + "\n", encoding="utf-8")
    words = {"a", "b", "c", "d"}
    represent.extract_bert_shard(
        tiny_model,
        token_file,
        "xx",
        words,
        1,
        2,
        tmp_path / "w1.parquet",
        tmp_path / "l1.parquet",
        represent.Extraction(batch_size=4, max_length=8, max_documents=5),
    )
    represent.extract_bert_shard(
        tiny_model,
        head,
        "xx",
        words,
        1,
        2,
        tmp_path / "w2.parquet",
        tmp_path / "l2.parquet",
        represent.Extraction(batch_size=4, max_length=8),
    )
    for name in ("w", "l"):
        capped, truncated = (pd.read_parquet(tmp_path / f"{name}{i}.parquet") for i in (1, 2))
        pd.testing.assert_frame_equal(capped, truncated)
    full = pd.read_parquet(tmp_path / "l1.parquet")
    represent.extract_bert_shard(
        tiny_model,
        token_file,
        "xx",
        words,
        1,
        2,
        tmp_path / "w3.parquet",
        tmp_path / "l3.parquet",
        represent.Extraction(batch_size=4, max_length=8),
    )
    assert pd.read_parquet(tmp_path / "l3.parquet")["n"].iloc[0] > full["n"].iloc[0]


def test_progress_is_logged(tiny_model, token_file, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(encode, "LOG_EVERY_S", 0.0)
    with caplog.at_level("INFO", logger="xling.encode.encoder"):
        represent.extract_bert_shard(
            tiny_model,
            token_file,
            "xx",
            {"a"},
            0,
            1,
            tmp_path / "w.parquet",
            tmp_path / "l.parquet",
            represent.Extraction(batch_size=2, max_length=8),
        )
    assert any("pieces/s, ETA" in r.message for r in caplog.records)
    assert any("longer than 6 pieces were left out" in r.message for r in caplog.records)
