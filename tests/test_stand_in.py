"""The random checkpoint that stands in for a pretrained one (xling.models.stand_in, rule random_checkpoint): a
BertForMaskedLM of the configured shape with the given vocabulary, loaded as any checkpoint, the same bytes for a
seed."""

from __future__ import annotations

import json

import pytest

from xling.models.pretrained import load_pretrained
from xling.models.stand_in import RECORD, save_random_bert

SHAPE = {"hidden_size": 8, "num_layers": 3, "num_heads": 2, "intermediate_size": 16, "max_positions": 24, "seed": 5}
PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "house", "Haus", "##s", "maison"]

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tiny models: threads only contend


@pytest.fixture
def vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(piece + "\n" for piece in PIECES), encoding="utf-8")
    return path


def test_a_random_bert_has_the_shape_and_pieces_asked_and_loads_as_a_checkpoint(vocab, tmp_path):
    out = save_random_bert(vocab, tmp_path / "models" / "tiny", SHAPE)
    model, tokenizer, _ = load_pretrained(out)
    config = model.config
    assert (
        config.hidden_size,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.intermediate_size,
        config.max_position_embeddings,
        config.vocab_size,
    ) == (8, 3, 2, 16, 24, len(PIECES))
    assert tokenizer.tokenize("houses maison") == ["house", "##s", "maison"]  # cased WordPiece of the vocabulary
    assert config.pad_token_id == tokenizer.pad_token_id == 0
    assert json.loads((out / RECORD).read_text())["settings"] == SHAPE
    assert not (tmp_path / "models" / "tiny.part").exists()


def test_the_seed_alone_decides_the_weights(vocab, tmp_path):
    weights = {
        name: (save_random_bert(vocab, tmp_path / name, {**SHAPE, "seed": seed}) / "model.safetensors").read_bytes()
        for name, seed in (("a", 5), ("b", 5), ("c", 6))
    }
    assert weights["a"] == weights["b"] != weights["c"]


def test_settings_left_out_are_named(vocab, tmp_path):
    with pytest.raises(ValueError, match=r"lack \['seed'\]"):
        save_random_bert(vocab, tmp_path / "x", {k: v for k, v in SHAPE.items() if k != "seed"})
