"""Conneau et al. (2020) ablations' vocabularies (Default anchors, no anchors on language-specific vocabularies,
sizes in BPE merges) and extra anchors drawn anew in every batch."""

import json
import random

import numpy as np
import pytest
import torch

from xling.data.merges_vocab import start_size, train_merges_vocab
from xling.models import anchors, bert
from xling.models.switching import BatchSwitch, write_table

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY = {
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 64,
    "window": 16,
    "batch_size": 8,
    "warmup_steps": 2,
    "learning_rate": 1e-2,
    "log_every": 1,
    "checkpoint_every": 100,
    "dropout": 0.0,
    "seed": 3,
}

pytestmark = pytest.mark.usefixtures("torch_one_thread")

BLOCKS = {"en": ["the", "cat", "##s", "x3", "x4"], "xa": ["ka", "##ta", "x3", "x4", "cat"]}


def test_default_anchors_keep_a_shared_string_once_and_each_language_its_own_segmentation():
    views = anchors.view_vocabularies(SPECIALS, BLOCKS, shared=True)
    en, xa = views["en"], views["xa"]
    assert len(en) == len(xa) == 5 + 7  # the, cat, ##s, x3, x4, ka, ##ta: the union, each string once
    assert en[:5] == xa[:5] == SPECIALS
    for piece in ("cat", "x3", "x4"):  # in both vocabularies: one id (an anchor), spelled so in both views
        assert en.index(piece) == xa.index(piece)
    assert "ka" not in en and en[xa.index("ka")] == "xa@ka"  # English text cannot segment into xa's pieces
    assert "the" not in xa and xa[en.index("the")] == "en@the"
    assert all(len(set(v)) == len(v) for v in views.values())


def test_no_anchors_vocabularies_share_no_entry():
    views = anchors.view_vocabularies(SPECIALS, BLOCKS, shared=False)
    en, xa = views["en"], views["xa"]
    assert len(en) == len(xa) == 5 + 10  # both blocks whole
    plain = [i for i in range(5, len(en)) if en[i] == xa[i]]
    assert plain == []  # beyond the special tokens, no id is spelled alike in the two views
    assert en.index("x3") != xa.index("x3") and en[xa.index("x3")] == "xa@x3"


def test_view_vocabularies_of_reads_one_vocabulary_per_language(tmp_path):
    paths = []
    for lang, block in BLOCKS.items():
        (tmp_path / f"{lang}.vocab").mkdir()
        paths.append(tmp_path / f"{lang}.vocab" / f"{lang}.txt")
        paths[-1].write_text("\n".join(SPECIALS + block) + "\n", encoding="utf-8")
    tokens = [tmp_path / "en.txt", tmp_path / "xa.txt"]
    got = anchors.view_vocabularies_of("union", paths, tokens, SPECIALS)
    assert got == anchors.view_vocabularies(SPECIALS, BLOCKS, shared=True)
    assert anchors.view_vocabularies_of("default", paths[:1], tokens, SPECIALS) is None
    with pytest.raises(ValueError, match="in their order"):
        anchors.view_vocabularies_of("none", paths[::-1], tokens, SPECIALS)


def test_a_vocabulary_of_n_merges_has_its_start_and_n_entries_more(tmp_path):
    rng = random.Random(1)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 7))) for _ in range(300)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(400)) + "\n")
    assert start_size([corpus], lowercase=False, limit_alphabet=1000) == 5 + 2 * 8
    for merges in (10, 40):
        train_merges_vocab(
            [corpus], tmp_path / f"v{merges}.txt", merges, min_frequency=2, lowercase=False, limit_alphabet=1000
        )
        assert len((tmp_path / f"v{merges}.txt").read_text().splitlines()) == 5 + 2 * 8 + merges


def test_default_anchors_trainer_shares_the_anchor_ids_only(tmp_path):
    from transformers import AutoTokenizer

    rng = random.Random(0)
    vocab_paths, token_paths = [], []
    for lang, block in BLOCKS.items():
        (tmp_path / lang).mkdir()
        vocab_paths.append(tmp_path / lang / f"{lang}.txt")
        vocab_paths[-1].write_text("\n".join(SPECIALS + block + ["a", "##a"]) + "\n", encoding="utf-8")
        words = [p for p in block if not p.startswith("##")]
        token_paths.append(tmp_path / f"{lang}.txt")
        token_paths[-1].write_text("\n".join(" ".join(rng.choice(words) for _ in range(40)) for _ in range(20)) + "\n")
    out = tmp_path / "model"
    bert.pretrain(
        token_paths, vocab_paths, out, tmp_path / "ckpt", {**TINY, "max_steps": 2, "ablation": {"anchors": "union"}}
    )
    tokenizers = {lang: AutoTokenizer.from_pretrained(out / lang) for lang in BLOCKS}
    ids = {
        lang: {w: tok(w, add_special_tokens=False)["input_ids"] for w in ("x3", "cat", "ka", "the")}
        for lang, tok in tokenizers.items()
    }
    assert ids["en"]["x3"] == ids["xa"]["x3"] and ids["en"]["cat"] == ids["xa"]["cat"]  # anchors: one id
    unk = tokenizers["en"].convert_tokens_to_ids("[UNK]")
    assert ids["en"]["ka"] == [unk] and ids["xa"]["the"] == [unk]  # the other's pieces are not a language's own


def _batch(rng, words, n_blocks=8, window=32):
    vocab = {p: i for i, p in enumerate(SPECIALS + words + ["t", "##1", "##2"])}
    body = [[vocab[rng.choice(words)] for _ in range(window - 2)] for _ in range(n_blocks)]
    return vocab, np.array([[vocab["[CLS]"]] + b + [vocab["[SEP]"]] for b in body])


def test_per_batch_switching_rate_cap_and_seed():
    rng = random.Random(3)
    words = [f"w{i}" for i in range(20)]
    vocab, blocks = _batch(rng, words)
    table = {"en": {w: ["t ##1", "t ##2"] for w in words}}  # every word has a translation of two pieces
    switch = BatchSwitch(table, vocab, rate=0.3, max_fraction=0.15, seed=7)
    out, counts = switch(blocks, "en", step=4)
    assert counts["words"] == 8 * 29 and counts["candidates"] == 8 * 29  # the last word of a block never
    assert counts["switched"] == int(0.15 * counts["words"])  # 30 % drawn, capped at 15 % of the batch's words
    t, tail = np.nonzero(out == vocab["t"])
    assert 0 < len(t) <= counts["switched"]  # two pieces for one: the longer blocks are cut back to their length
    assert set(out[t, tail + 1].tolist()) <= {vocab["##1"], vocab["##2"], vocab["[SEP]"]}
    assert out.shape == blocks.shape and (out[:, 0] == vocab["[CLS]"]).all()
    again, _ = BatchSwitch(table, vocab, rate=0.3, max_fraction=0.15, seed=7)(blocks, "en", step=4)
    assert np.array_equal(out, again)  # a pure function of (seed, step)
    other, _ = switch(blocks, "en", step=5)
    assert not np.array_equal(out, other)  # drawn anew in the next batch
    unchanged, none = switch(blocks, "xa", step=4)  # no translations for this language
    assert np.array_equal(unchanged, blocks) and none["switched"] == 0


def test_per_batch_switching_below_the_cap_switches_at_the_rate():
    rng = random.Random(4)
    words = [f"w{i}" for i in range(20)]
    vocab, blocks = _batch(rng, words, n_blocks=64)
    table = {"en": {f"w{i}": ["t"] for i in range(4)}}  # about a fifth of the words
    switch = BatchSwitch(table, vocab, rate=0.3, max_fraction=0.15, seed=1)
    out, counts = switch(blocks, "en", step=0)
    n = counts["candidates"]
    assert abs(counts["switched"] / n - 0.3) < 4 * np.sqrt(0.3 * 0.7 / n)
    assert counts["switched"] <= 0.15 * counts["words"]
    assert (out == vocab["t"]).sum() == counts["switched"]  # one piece for one: the blocks keep their length


def test_trainer_draws_the_switches_per_batch_reproducibly(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(10)]
    vocab = SPECIALS + words + ["t", "##1"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    paths = []
    for lang in ("en", "xa"):
        paths.append(tmp_path / f"{lang}.txt")
        paths[-1].write_text("\n".join(" ".join(rng.choice(words) for _ in range(40)) for _ in range(10)) + "\n")
    write_table(
        tmp_path / "table.json",
        {"en": {w: ["t1"] for w in words}, "xa": {}},
        lambda w: [w[0], "##" + w[1:]] if w.startswith("t") else [w],
    )
    assert json.loads((tmp_path / "table.json").read_text())["en"]["w1"] == ["t ##1"]
    spec = {"anchors": "extra", "code_switch": {"rate": 0.5, "max_fraction": 0.15, "seed": 1}}
    states = []
    for run in ("a", "b"):
        bert.pretrain(
            paths,
            tmp_path / "vocab.txt",
            tmp_path / run,
            tmp_path / f"ckpt{run}",
            {**TINY, "max_steps": 3, "ablation": spec},
            switch_table=tmp_path / "table.json",
        )
        states.append(_weights(tmp_path / run / "en"))
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
    plain = tmp_path / "plain"
    bert.pretrain(
        paths,
        tmp_path / "vocab.txt",
        plain,
        tmp_path / "ckptp",
        {**TINY, "max_steps": 3, "ablation": {"anchors": "extra"}},
    )
    assert not all(torch.equal(states[0][k], _weights(plain / "en")[k]) for k in states[0])


def _weights(path):
    from transformers import BertForMaskedLM

    return BertForMaskedLM.from_pretrained(path).state_dict()
