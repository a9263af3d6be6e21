"""BERT pretraining: block packing, masking (against HF's collator), learning, and the saved model."""

import logging
import random

import pytest
import torch

from xling.models import bert, mlm, mlm_data

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY = {
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 64,
    "window": 16,
    "batch_size": 16,
    "max_steps": 150,
    "warmup_steps": 10,
    "learning_rate": 1e-2,
    "log_every": 10,
    "checkpoint_every": 100,
    "dropout": 0.0,
    "seed": 3,
}


def write_vocab(path, pieces):
    path.write_text("\n".join(SPECIALS + pieces) + "\n", encoding="utf-8")
    return {p: i for i, p in enumerate(SPECIALS + pieces)}


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


@pytest.fixture
def topics(tmp_path):
    """Two languages whose documents each use the 5 pieces of one topic: context predicts a masked piece."""
    rng = random.Random(0)
    paths = []
    for lang in ("en", "xx"):
        pieces = [f"{lang}{i}" for i in range(40)] + [f"##{lang}{i}" for i in range(40)]
        docs = []
        for _ in range(60):
            topic = rng.randrange(16)
            docs.append(" ".join(rng.choice(pieces[5 * topic : 5 * topic + 5]) for _ in range(rng.randint(20, 60))))
        path = tmp_path / f"{lang}.txt"
        path.write_text("\n".join(docs) + "\n", encoding="utf-8")
        paths.append(path)
    pieces = [f"{lang}{i}" for lang in ("en", "xx") for i in range(40)]
    pieces += [f"##{lang}{i}" for lang in ("en", "xx") for i in range(40)] + ["Cased"]
    write_vocab(tmp_path / "vocab.txt", pieces)
    return paths, tmp_path / "vocab.txt"


def test_load_blocks_packs_per_language(tmp_path, caplog):
    ids = write_vocab(tmp_path / "vocab.txt", ["a", "b", "c", "d", "e", "x", "y", "##z"])
    (tmp_path / "en.txt").write_text("a b c\nd e a b e\n\nc\n", encoding="utf-8")  # 9 pieces, 1 empty line
    (tmp_path / "de.txt").write_text("x y ##z x y\nunknown\n", encoding="utf-8")  # 6 pieces, one unknown
    with caplog.at_level(logging.INFO, logger="xling.models.bert"):
        blocks, langs = mlm_data.load_blocks([tmp_path / "en.txt", tmp_path / "de.txt"], tmp_path / "vocab.txt", 6)
    assert blocks.dtype == torch.long and blocks.shape == (3, 6)
    assert langs == ["en", "en", "de"]
    assert (blocks[:, 0] == ids["[CLS]"]).all() and (blocks[:, -1] == ids["[SEP]"]).all()
    expect = [["a", "b", "c", "d"], ["e", "a", "b", "e"], ["x", "y", "##z", "x"]]  # en "c" and de "y [UNK]" dropped
    assert blocks[:, 1:-1].tolist() == [[ids[p] for p in row] for row in expect]
    assert "1 not in the vocabulary" in caplog.text


def test_load_blocks_never_mixes_languages(tmp_path):
    ids = write_vocab(tmp_path / "vocab.txt", [f"{l}{i}" for l in "ab" for i in range(30)])
    rng = random.Random(1)
    for lang in "ab":
        docs = [" ".join(f"{lang}{rng.randrange(30)}" for _ in range(rng.randint(1, 25))) for _ in range(50)]
        (tmp_path / f"{lang}.tok").write_text("\n".join(docs) + "\n", encoding="utf-8")
    blocks, langs = mlm_data.load_blocks([tmp_path / "a.tok", tmp_path / "b.tok"], tmp_path / "vocab.txt", 16)
    n_a = sum(len(line.split()) for line in (tmp_path / "a.tok").read_text().splitlines())
    assert langs.count("a") == n_a // 14
    inverse = {i: p for p, i in ids.items()}
    for row, lang in zip(blocks[:, 1:-1].tolist(), langs, strict=True):
        assert {inverse[i][0] for i in row} == {lang}


def test_load_blocks_separates_documents_and_pads_short_blocks(tmp_path):
    """bert.blocks: [SEP] after every line of the stream (BERT's segments, XLM's </s>); a short block is [CLS],
    2..window-2 stream ids, [SEP], then [PAD]; the blocks hold the stream in order, nothing skipped."""
    ids = write_vocab(tmp_path / "vocab.txt", [f"p{i}" for i in range(50)])
    rng = random.Random(2)
    lines = [[f"p{rng.randrange(50)}" for _ in range(rng.randint(1, 12))] for _ in range(400)]
    (tmp_path / "en.txt").write_text("\n".join(" ".join(line) for line in lines) + "\n", encoding="utf-8")
    stream = [i for line in lines for i in [ids[p] for p in line] + [ids["[SEP]"]]]
    separated, _ = mlm_data.load_blocks(
        [tmp_path / "en.txt"], tmp_path / "vocab.txt", 10, blocks={"sentence_separator": True}
    )
    assert separated[:, 1:-1].reshape(-1).tolist() == stream[: len(separated) * 8]
    plain, _ = mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "vocab.txt", 10)
    assert ids["[SEP]"] not in plain[:, 1:-1].reshape(-1).tolist()

    fmt = {"sentence_separator": True, "short_seq_prob": 0.3}
    short, _ = mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "vocab.txt", 10, blocks=fmt, seed=5)
    again, _ = mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "vocab.txt", 10, blocks=fmt, seed=5)
    other, _ = mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "vocab.txt", 10, blocks=fmt, seed=6)
    assert torch.equal(short, again) and not torch.equal(short, other)
    lengths = (short != ids["[PAD]"]).sum(1) - 2  # stream ids per block
    assert (short[:, 0] == ids["[CLS]"]).all() and short[torch.arange(len(short)), lengths + 1].eq(ids["[SEP]"]).all()
    assert lengths.min() >= 2 and lengths.max() == 8 and 0.2 < (lengths < 8).float().mean() < 0.4
    for row, n in zip(short.tolist(), lengths.tolist(), strict=True):  # [PAD] only after the block's [SEP]
        assert ids["[PAD]"] not in row[: n + 2] and set(row[n + 2 :]) <= {ids["[PAD]"]}
    body = [i for row, n in zip(short.tolist(), lengths.tolist(), strict=True) for i in row[1 : n + 1]]
    assert body == stream[: len(body)] and len(stream) - len(body) < 8
    with pytest.raises(ValueError, match="short_seq_prob"):
        mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "vocab.txt", 10, blocks={"short_seq_prob": 1.5})


def test_load_blocks_errors_name_file_and_line(tmp_path):
    write_vocab(tmp_path / "vocab.txt", ["a"])
    (tmp_path / "en.txt").write_text("a a\na  a\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"en.txt:2: empty wordpiece"):
        mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "vocab.txt", 8)
    (tmp_path / "bad_vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        mlm_data.load_blocks([tmp_path / "en.txt"], tmp_path / "bad_vocab.txt", 8)


def test_masking_matches_hf_collator_and_proportions(tmp_path):
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    ids = write_vocab(tmp_path / "vocab.txt", [f"p{i}" for i in range(300)])
    special = [ids[t] for t in SPECIALS]
    g = torch.Generator().manual_seed(0)
    x = torch.randint(5, len(ids), (400, 128), generator=g)
    x[:, 0], x[:, -1], x[::3, 7] = ids["[CLS]"], ids["[SEP]"], ids["[UNK]"]

    # the very same numbers as HF's collator with the same seed (it draws in the same order)
    tok = BertTokenizerFast(vocab=str(tmp_path / "vocab.txt"), do_lower_case=False)
    hf = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=11)([{"input_ids": r} for r in x[:50]])
    ours = mlm_data.mask_tokens(x[:50], special, ids["[MASK]"], len(ids), 0.15, torch.Generator().manual_seed(11))
    assert torch.equal(ours[0], hf["input_ids"]) and torch.equal(ours[1], hf["labels"])

    x_before = x.clone()
    inputs, labels = mlm_data.mask_tokens(x, special, ids["[MASK]"], len(ids), 0.15, torch.Generator().manual_seed(5))
    assert torch.equal(x, x_before)  # masks a copy
    is_special = torch.isin(x, torch.tensor(special))
    chosen = labels != -100
    assert not chosen[is_special].any() and torch.equal(inputs[is_special], x[is_special])
    assert torch.equal(labels[chosen], x[chosen]) and torch.equal(inputs[~chosen], x[~chosen])
    rate = chosen.sum().item() / (~is_special).sum().item()
    assert abs(rate - 0.15) < 0.005
    n = chosen.sum().item()
    to_mask = (inputs[chosen] == ids["[MASK]"]).sum().item() / n
    kept = (inputs[chosen] == x[chosen]).sum().item() / n
    randomized = 1 - to_mask - kept
    assert abs(to_mask - 0.8) < 0.01 and abs(kept - 0.1) < 0.01 and abs(randomized - 0.1) < 0.01


def test_batch_order_is_a_permutation_per_epoch():
    order = mlm_data.BatchOrder(n_blocks=10, batch_size=4, seed=1)
    seen = torch.cat([order.indices(s) for s in range(5)])  # 20 = two epochs
    assert sorted(seen[:10].tolist()) == list(range(10)) and sorted(seen[10:].tolist()) == list(range(10))
    assert not torch.equal(seen[:10], seen[10:])
    assert order.position(3) == (1, 2)
    assert torch.equal(mlm_data.BatchOrder(10, 4, 1).indices(3), order.indices(3))


def test_hparams_and_config():
    with pytest.raises(ValueError, match="unknown bert hyper-parameter.*hiden_size"):
        bert.resolve_hparams({"hiden_size": 64})
    with pytest.raises(ValueError, match="multiple of num_heads"):
        bert.resolve_hparams({"hidden_size": 50, "num_heads": 4})
    config = bert.model_config({**TINY, "window": 600}, 123)
    assert config._attn_implementation == "sdpa"
    assert (config.vocab_size, config.hidden_size, config.max_position_embeddings) == (123, 32, 600)


def test_pretrain_learns_and_saves_loadable_model(topics, tmp_path):
    from transformers import AutoModel, AutoModelForMaskedLM, BertTokenizerFast

    paths, vocab = topics
    out = tmp_path / "model"
    bert.pretrain(paths, vocab, out, tmp_path / "ckpt", TINY, log_path=tmp_path / "train.tsv")

    rows = [line.split("\t") for line in (tmp_path / "train.tsv").read_text().splitlines()]
    assert rows[0] == ["step", "epoch", "loss", "lr", "tokens_per_s", "elapsed_s"]
    losses = [float(r[2]) for r in rows[1:]]
    assert [int(r[0]) for r in rows[1:]] == list(range(10, 151, 10))
    # from about ln(166) (uniform) to well below the unigram entropy ln(160): it uses the context
    assert losses[0] > 4.8 and sum(losses[-3:]) / 3 < losses[0] - 0.8, losses
    assert (out / "training_log.tsv").read_text() == (tmp_path / "train.tsv").read_text()

    model = AutoModelForMaskedLM.from_pretrained(out).eval()
    assert model.config.num_hidden_layers == 2 and AutoModel.from_pretrained(out).config.hidden_size == 32
    tok = BertTokenizerFast.from_pretrained(out)
    assert len(tok) == 166 and not tok.do_lower_case
    assert tok.tokenize("en3 Cased") == ["en3", "Cased"]
    # the saved weights are the trained ones: far better than a fresh initialisation on the same masks
    blocks, _ = mlm_data.load_blocks(paths, vocab, 16)
    inputs, labels = mlm_data.mask_tokens(blocks[:64], list(range(5)), 4, 166, 0.15, torch.Generator().manual_seed(0))
    fresh = type(model)(model.config).eval()
    with torch.no_grad():
        trained_loss, fresh_loss = (m(input_ids=inputs, labels=labels).loss.item() for m in (model, fresh))
    assert trained_loss < fresh_loss - 0.8


def test_masked_lm_loss_equals_hf_loss_and_gradients():
    """Projecting only masked positions onto the vocabulary changes nothing but the cost."""
    from transformers import BertForMaskedLM

    torch.manual_seed(0)
    model = BertForMaskedLM(bert.model_config({**TINY, "dropout": 0.0}, 50))
    x = torch.randint(5, 50, (4, 16))
    inputs, labels = mlm_data.mask_tokens(x, range(5), 4, 50, 0.3, torch.Generator().manual_seed(1))
    positions = (labels.reshape(-1) != -100).nonzero().squeeze(1)
    ours = mlm.MaskedLMLoss(model)(inputs, positions, labels.reshape(-1)[positions])
    ours.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    hf = model(input_ids=inputs, labels=labels).loss * len(positions)
    hf.backward()
    assert torch.allclose(ours, hf, rtol=1e-5)
    assert all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, model.parameters(), strict=True))


def test_encoder_runs_a_saved_model(topics, tmp_path):
    """The model directory pretrain writes is what xling.encode loads: its tokenizer (cased, as the
    vocabulary) and every layer over the token files' pieces."""
    from xling.encode.encoder import Encoder

    paths, vocab = topics
    out = tmp_path / "model"
    bert.pretrain(paths, vocab, out, tmp_path / "ckpt", {**TINY, "max_steps": 2})
    docs = [d.split() for d in paths[0].read_text().splitlines()[:5]]
    encoder = Encoder.from_pretrained(out, device="cpu", max_length=10)
    assert encoder.tokenize(["en3 Cased"]) == [["en3", "Cased"]]
    chunks = 0
    for encoded in encoder.encode(docs, batch_size=8):
        assert encoded.hidden_states.shape[:2] == (3, len(encoded.batch.items))
        assert encoded.hidden_states.shape[-1] == 32 and encoded.batch.input_ids.shape[1] <= 10
        chunks += len(encoded.batch.items)
    assert chunks >= sum(len(d) for d in docs) // 8
