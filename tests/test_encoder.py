"""xling.encode: the one wordpiece -> word grouping, and the one encoder against hand computations with
transformers' own BertModel / BertForMaskedLM on a tiny randomly initialised BERT."""

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM, BertModel
import tiny_checkpoints

from xling.data.words import chunk_words, detokenize, word_spans, word_text
from xling.encode import encoder as encoder_module
from xling.encode.encoder import Encoder, Shift, best_pieces
from xling.evaluate.sentence_retrieval import run_tatoeba
from xling.evaluate.translation import TranslationSettings, translate_pair
from xling.models.pretrained import load_pretrained, mlm_head

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + [f"w{i}" for i in range(20)] + ["##s", "##t", "##u"]
MAX_LENGTH = 8  # chunks of 6 pieces


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


def save_tiny_bert(out: Path) -> Path:
    """A randomly initialised Hugging Face BertForMaskedLM + BertTokenizerFast with its own small vocabulary."""
    return tiny_checkpoints.save_tiny_bert(out, VOCAB, positions=16)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def encoder(model_dir) -> Encoder:
    return Encoder.from_pretrained(model_dir, device="cpu", max_length=MAX_LENGTH)


def direct_states(model_dir, pieces: list[str]) -> np.ndarray:
    """Reference: [CLS] pieces [SEP] run alone through transformers' BertModel -> [layers + 1, n + 2, H]."""
    model = BertModel.from_pretrained(model_dir, add_pooling_layer=False).eval()
    ids = torch.tensor([[VOCAB.index("[CLS]")] + [VOCAB.index(p) for p in pieces] + [VOCAB.index("[SEP]")]])
    with torch.no_grad():
        states = model(input_ids=ids, output_hidden_states=True).hidden_states
    return np.stack([h[0].double().numpy() for h in states])


# ---------------------------------------------------------------------------------------------- words


def test_word_spans_and_the_leading_continuation_marker():
    pieces = ["##x", "##y", "a", "##b", "c", "##d", "##e", "f"]
    spans = word_spans(pieces)
    assert spans == [(0, 2), (2, 4), (4, 7), (7, 8)]  # a leading "##" piece starts a word
    assert [word_text(pieces[s:e]) for s, e in spans] == ["xy", "ab", "cde", "f"]  # ... and loses its marker
    assert word_spans([]) == []
    assert word_text(["Un", "##beli", "##eva", "##bly"]) == "Unbelievably"
    assert detokenize(["##x", "un", "##believ", "##able", "!"]) == "x unbelievable !"


def test_chunk_words_hand_cases():
    spans = [(0, 2), (2, 5), (5, 6)]  # words of 2, 3 and 1 pieces
    assert chunk_words(spans, 3) == ([[(0, 2)], [(2, 5)], [(5, 6)]], 0)
    assert chunk_words(spans, 5) == ([[(0, 2), (2, 5)], [(5, 6)]], 0)
    # a word longer than a chunk: dropped and counted, or cut into parts (the rest packed with what follows)
    assert chunk_words(spans, 2) == ([[(0, 2)], [(5, 6)]], 1)
    assert chunk_words(spans, 2, "split") == ([[(0, 2)], [(2, 4)], [(4, 5), (5, 6)]], 1)
    assert chunk_words([(0, 7)], 3, "split") == ([[(0, 3)], [(3, 6)], [(6, 7)]], 1)
    with pytest.raises(ValueError):
        chunk_words(spans, 0)
    with pytest.raises(ValueError, match="long_words"):
        chunk_words(spans, 3, "truncate")


def test_chunking_never_splits_a_word_that_fits():
    rng = np.random.default_rng(3)
    for _ in range(200):
        pieces = [
            ("##" if i and rng.random() < 0.4 else "") + "abcdefgh"[rng.integers(8)]
            for i in range(int(rng.integers(1, 60)))
        ]
        max_pieces = int(rng.integers(1, 12))
        spans = word_spans(pieces)
        chunks, dropped = chunk_words(spans, max_pieces)
        kept = [s for s in spans if s[1] - s[0] <= max_pieces]
        assert dropped == len(spans) - len(kept)
        assert [w for chunk in chunks for w in chunk] == kept  # order kept, every word whole
        for chunk in chunks:
            assert 1 <= sum(e - s for s, e in chunk) <= max_pieces
        for a, b in zip(chunks, chunks[1:], strict=False):  # greedy: the next chunk's first word would not have fitted
            assert sum(e - s for s, e in a) + b[0][1] - b[0][0] > max_pieces
        split, _ = chunk_words(spans, max_pieces, "split")
        assert [i for chunk in split for s, e in chunk for i in range(s, e)] == list(range(len(pieces)))


# ---------------------------------------------------------------------------------------------- pooling

SENTENCES = ["w1 w2s w3", "w4 w5t w6 w7u w8 w9 w10", "w11", ""]
# the hand-made chunks of each sentence (at most 6 pieces, cut between words)
CHUNKS = [[["w1", "w2", "##s", "w3"]], [["w4", "w5", "##t", "w6", "w7", "##u"], ["w8", "w9", "w10"]], [["w11"]], []]


@pytest.mark.parametrize(
    "pooling, expected_counts", [("mean_words", [4, 9, 1, 0]), ("mean_all", [6, 13, 3, 0]), ("cls", [1, 2, 1, 0])]
)
def test_sentence_pooling_equals_hand_means(encoder, model_dir, pooling, expected_counts):
    vectors, counts = encoder.sentence_vectors(SENTENCES, batch_size=3, pooling=pooling)
    assert counts.tolist() == expected_counts
    for i, chunks in enumerate(CHUNKS):
        if not chunks:
            assert not vectors[i].any()  # no piece: a zero vector
            continue
        states = [direct_states(model_dir, chunk) for chunk in chunks]
        pick = {"mean_words": lambda s: s[:, 1:-1], "mean_all": lambda s: s, "cls": lambda s: s[:, :1]}[pooling]
        expected = np.concatenate([pick(s) for s in states], axis=1).mean(axis=1)
        np.testing.assert_allclose(vectors[i], expected, atol=2e-5, rtol=0)
    some_layers, _ = encoder.sentence_vectors(SENTENCES, batch_size=2, layers=[2, 0], pooling=pooling)
    np.testing.assert_allclose(some_layers, vectors[:, [2, 0]], atol=2e-5, rtol=0)
    with pytest.raises(ValueError, match="pooling"):
        encoder.sentence_vectors(SENTENCES, 2, pooling="max")


def test_word_pooling_first_last_mean(encoder, model_dir):
    pieces = ["w1", "##s", "##t", "w2", "w3", "##u"]
    (out,) = encoder.encode([pieces], batch_size=4)
    assert out.batch.words == ["w1st", "w2", "w3u"]
    assert out.batch.word_index[0].tolist() == [-1, 0, 0, 0, 1, 2, 2, -1]
    states = direct_states(model_dir, pieces)  # [layers, 8, H]: position 0 is [CLS]
    expected = {
        "first": states[:, [1, 4, 5]],
        "last": states[:, [3, 4, 6]],
        "mean": np.stack([states[:, 1:4].mean(1), states[:, 4], states[:, 5:7].mean(1)], axis=1),
    }
    for pooling, want in expected.items():
        np.testing.assert_allclose(out.word_vectors(pooling).numpy(), want, atol=2e-5, rtol=0)
    with pytest.raises(ValueError, match="word pooling"):
        out.word_vectors("max")


def test_positions_masks(encoder):
    (out,) = encoder.encode([["w1", "##s"], ["w2", "w3", "w4"]], batch_size=2, layers=[])
    assert out.hidden_states is None
    batch = out.batch  # sorted by length: the 2-piece item first, padded to 5
    assert batch.items == [0, 1]
    assert batch.positions("words").tolist() == [[False, True, True, False, False], [False, True, True, True, False]]
    assert batch.positions("all").tolist() == [[True, True, True, True, False], [True] * 5]
    assert batch.positions("cls").tolist() == [[True, False, False, False, False], [True, False, False, False, False]]
    with pytest.raises(ValueError, match="positions"):
        batch.positions("pieces")


# ---------------------------------------------------------------------------------------------- batching


def test_batching_by_length_equals_one_by_one(encoder):
    rng = np.random.default_rng(1)
    items = [
        " ".join(f"w{i}" + ("s" if rng.random() < 0.3 else "") for i in rng.integers(0, 20, n))
        for n in rng.integers(1, 12, 15)
    ]

    def by_chunk(batch_size):
        states, lengths = {}, []
        for out in encoder.encode(items, batch_size=batch_size):
            lengths.append(int(out.batch.attention_mask.sum(1).max()))
            for row, key in enumerate(zip(out.batch.items, out.batch.chunks, strict=True)):
                states[key] = out.hidden_states[:, row, out.batch.attention_mask[row]]
        return states, lengths

    batched, lengths = by_chunk(4)
    alone, _ = by_chunk(1)
    assert lengths == sorted(lengths) and len(lengths) < len(alone)  # length-sorted, several chunks per batch
    assert batched.keys() == alone.keys() and len(alone) > len(items)  # some items run in two chunks
    for key, states in alone.items():
        torch.testing.assert_close(batched[key], states, atol=2e-5, rtol=0)


# ---------------------------------------------------------------------------------------------- shift, head


@pytest.mark.parametrize("positions", ["words", "all"])
def test_shift_only_at_the_chosen_positions(encoder, positions):
    batch = next(encoder.batches([["w1", "##s"], ["w2", "w3", "w4", "w5"]], batch_size=2))
    delta = torch.randn(16, generator=torch.Generator().manual_seed(4))
    plain = encoder.run(batch).hidden_states
    shifted = encoder.run(batch, shift=Shift(1, delta, positions)).hidden_states
    mask = batch.positions(positions)
    torch.testing.assert_close(shifted[1][mask], plain[1][mask] + delta)
    torch.testing.assert_close(shifted[1][~mask], plain[1][~mask])  # padding (and [CLS]/[SEP] for "words") untouched
    torch.testing.assert_close(shifted[0], plain[0])  # below the shifted layer: nothing changes
    assert not torch.allclose(shifted[2], plain[2], atol=1e-3)  # above it, the shift propagates
    # each row alone (no padding) gives the same shifted states at its real positions
    for row, item in enumerate([["w1", "##s"], ["w2", "w3", "w4", "w5"]]):
        alone = next(encoder.batches([item], batch_size=1))
        got = encoder.run(alone, shift=Shift(1, delta, positions)).hidden_states[:, 0]
        torch.testing.assert_close(shifted[:, row, batch.attention_mask[row]], got, atol=2e-5, rtol=0)


def test_words_and_all_shift_differ(encoder):
    batch = next(encoder.batches(["w1 w2 w3"], batch_size=1))
    delta = torch.full((16,), 2.0)
    words, every = (encoder.run(batch, shift=Shift(1, delta, p)).hidden_states[2] for p in ("words", "all"))
    assert not torch.allclose(words, every, atol=1e-3)  # [CLS]/[SEP] are attended to: including them matters


def test_predictions_are_the_mlm_argmax_over_real_pieces(encoder, model_dir):
    pieces = ["w1", "##s", "w2", "w3", "##u"]
    (out,) = encoder.encode([pieces], batch_size=1, layers=[], predict=True)
    model = BertForMaskedLM.from_pretrained(model_dir).eval()
    ids = torch.tensor([[VOCAB.index("[CLS]")] + [VOCAB.index(p) for p in pieces] + [VOCAB.index("[SEP]")]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    logits[:, : len(SPECIALS)] = -torch.inf  # the special tokens are never an output
    assert out.predictions[0].tolist() == [-1] + logits[1:-1].argmax(-1).tolist() + [-1]


def test_best_pieces_block_by_block_equal_the_full_argmax(monkeypatch):
    """Blocks of 3 positions x 5 pieces (not dividing 7 x 23) against argmax of the whole logits, the excluded ids
    left out; a piece whose row repeats a lower id's in another block loses the tie, as with argmax."""
    monkeypatch.setattr(encoder_module, "HEAD_POSITIONS", 3)
    monkeypatch.setattr(encoder_module, "HEAD_PIECES", 5)
    torch.manual_seed(0)
    decoder = torch.nn.Linear(4, 23)
    states = torch.randn(7, 4)
    with torch.no_grad():
        decoder.weight[[2, 17]] = 10 * states[0]  # position 0's best: piece 2, tied by 17 (another block)
        decoder.bias[17] = decoder.bias[2]
        logits = decoder(states)
    excluded = [0, 4, 9]
    expected = logits.index_fill(1, torch.tensor(excluded), -torch.inf).argmax(-1)
    with torch.no_grad():
        got = best_pieces(states, decoder, excluded)
    assert got.tolist() == expected.tolist() and got[0] == 2
    assert best_pieces(states, decoder, excluded=[2, 17])[0] not in (2, 17)


def test_the_head_in_two_parts_gives_the_model_s_logits(tiny_checkpoint):
    """mlm_head's transform and decoder (BERT, XLM-R, DistilBERT): decoder(transform(last states)) is the
    masked LM's own output."""
    model = load_pretrained(tiny_checkpoint).model.eval()
    ids = torch.arange(5, 12)[None]
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
        transform, decoder = mlm_head(model)
        assert torch.allclose(decoder(transform(out.hidden_states[-1])), out.logits, atol=1e-5)


# ---------------------------------------------------------------------------------------------- HF checkpoints


def test_language_entry_points_run_a_hf_checkpoint_by_path(tmp_path):
    """A Hugging Face checkpoint given by local path, offline: token translation and Tatoeba through the encoder."""
    model = save_tiny_bert(tmp_path / "hf-bert")
    rng = np.random.default_rng(0)
    en = [" ".join(f"w{i}" for i in rng.permutation(10)[: rng.integers(2, 7)]) for _ in range(10)]
    xx = [" ".join(f"w{i + 10}" for i in map(int, s.replace("w", "").split())) for s in en]
    for code, lines in (("en", en), ("xx", xx)):
        (tmp_path / f"{code}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = TranslationSettings(
        layers=[1, 2],
        alphas=[0, 1],
        min_count=1,
        batch_size=4,
        max_length=MAX_LENGTH,
        device="cpu",
        n_samples=2,
        mean_positions="words",
        shift_positions="all",
    )
    table, samples = translate_pair(
        model,
        "en",
        "xx",
        list(zip(en, xx, strict=True)),
        settings,
        corpus_files={c: tmp_path / f"{c}.txt" for c in ("en", "xx")},
    )
    assert len(table) == 2 * 2 * 2 and set(table["direction"]) == {"en->xx", "xx->en"}
    assert (table["mean_source"] == "eval").all() and (table["mean_positions"] == "words").all()
    assert (table["shift_positions"] == "all").all() and (table["n_tokens"] == sum(len(s.split()) for s in en)).all()
    assert table["convert_rate"].between(0, 1).all() and len(samples) == 4

    # the same sentence on both sides: every query finds itself, whatever the (random) model
    tatoeba = run_tatoeba(model, list(zip(en, en, strict=True)), layers=[1], pooling="cls", batch_size=4, device="cpu")
    assert len(tatoeba) == 3 * 2 and (tatoeba["pooling"] == "cls").all()
    assert (tatoeba[tatoeba["variant"] == "original"]["accuracy"] == 1.0).all()


def test_revision_reaches_from_pretrained(model_dir, monkeypatch, caplog):
    calls = []
    load_tokenizer, load_model = AutoTokenizer.from_pretrained, BertForMaskedLM.from_pretrained
    load_config = AutoConfig.from_pretrained

    def spy(load):
        def wrapped(name, **kwargs):
            if name != model_dir:  # not the tokenizer's own reading of the config
                calls.append((name, kwargs))
            return load(model_dir)  # whatever the name: the hub is out of reach here

        return wrapped

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", spy(load_tokenizer))
    monkeypatch.setattr(BertForMaskedLM, "from_pretrained", spy(load_model))
    monkeypatch.setattr(AutoConfig, "from_pretrained", spy(load_config))  # which class the checkpoint names
    encoder = Encoder.from_pretrained("org/bert-hub-name", revision="0123abcd", device="cpu")
    assert calls == [("org/bert-hub-name", {"revision": "0123abcd"})] * 3 and encoder.revision == "0123abcd"
    calls.clear()
    with caplog.at_level(logging.WARNING, logger="xling.encode.encoder"):
        Encoder.from_pretrained("org/bert-hub-name", device="cpu")
    assert calls == [("org/bert-hub-name", {})] * 3 and "without a pinned revision" in caplog.text
