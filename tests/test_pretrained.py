"""The one BERT loader (xling.models.pretrained) on a tiny BERT directory and an ablated model made of two views:
the masked LM or its encoder alone with the same weights, the view of the text's language, and transformers'
logging as it was after loading."""

import json
from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM, BertModel
from transformers.utils import logging as hf_logging
from tiny_checkpoints import save_tiny_bert

from xling.models.ablation import SPEC_FILE
from xling.models.pretrained import load_pretrained

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"]


def _tiny_bert(out: Path, seed: int) -> Path:
    out.mkdir(parents=True)  # a fresh directory
    return save_tiny_bert(out, VOCAB, seed=seed, hidden=8, layers=1, positions=16)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    return _tiny_bert(tmp_path_factory.mktemp("loader") / "bert", seed=0)


def test_masked_lm_and_encoder_alone_share_the_weights(bert_dir):
    masked_lm, tokenizer, name = load_pretrained(bert_dir)
    encoder, _, _ = load_pretrained(bert_dir, masked_lm=False)
    assert isinstance(masked_lm, BertForMaskedLM) and type(encoder) is BertModel and encoder.pooler is None
    assert name == str(bert_dir) and tokenizer.convert_tokens_to_ids("##c") == VOCAB.index("##c")
    mlm_weights = masked_lm.bert.state_dict()
    assert all(torch.equal(tensor, mlm_weights[key]) for key, tensor in encoder.state_dict().items())


def test_an_ablated_model_loads_the_view_of_the_texts_language(tmp_path):
    views = {lang: _tiny_bert(tmp_path / "ablated" / lang, seed) for seed, lang in enumerate(("en", "xa"))}
    (tmp_path / "ablated" / SPEC_FILE).write_text(json.dumps({"spec": {}, "languages": ["en", "xa"]}))
    model, _, name = load_pretrained(tmp_path / "ablated", language="xa")
    assert name == str(views["xa"])
    view = BertForMaskedLM.from_pretrained(views["xa"])
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, view.bert.embeddings.word_embeddings.weight)
    with pytest.raises(ValueError, match="say which language"):
        load_pretrained(tmp_path / "ablated")


def test_transformers_logging_is_restored(bert_dir):
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_info()
    hf_logging.enable_progress_bar()
    try:
        load_pretrained(bert_dir)
        assert hf_logging.get_verbosity() == hf_logging.INFO and hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.set_verbosity(verbosity)
        if not bars:
            hf_logging.disable_progress_bar()
