"""Tiny random masked LMs of three architectures, saved as Hugging Face checkpoints (no hub access): a
BertForMaskedLM with a WordPiece tokenizer ("##" continuations, [CLS]/[SEP], pad 0), an XLMRobertaForMaskedLM
with a SentencePiece Unigram tokenizer trained here by `tokenizers` ("▁" word starts, <s>/</s>, pad 1), and a
DistilBertForMaskedLM (DistilmBERT's layout: no token types, blocks in .transformer, its own MLM head). All read
the toy languages of `sentences`: English-like words and their "xx" translations, some cut into several pieces."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np

EN_WORDS = ["cat", "dog", "house", "tree", "runs", "sleeps", "big", "small", "the", "a", "sees", "water"]
XX_WORDS = ["kot", "pies", "dom", "drzewo", "biega", "spi", "duzy", "maly", "ten", "jeden", "widzi", "woda"]
ARCHITECTURES = ("bert", "xlm-roberta", "distilbert")
HIDDEN, LAYERS, POSITIONS = 16, 2, 40


@contextmanager
def one_torch_thread():
    """torch on one intra-op thread within the block (tiny models: threads only contend for the shared cores; one
    thread is also what the CLI runs get through OMP_NUM_THREADS: same kernels, same bits)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def sentences(lang: str, n: int, seed: int) -> list[str]:
    """n sentences of 2-7 words of `lang` ("en" or "xx"); the same seed gives translations word by word."""
    rng = np.random.default_rng(seed)
    words = EN_WORDS if lang == "en" else XX_WORDS
    return [" ".join(words[int(i)] for i in rng.integers(0, len(words), rng.integers(2, 8))) for _ in range(n)]


def _model_config(architecture: str, vocab_size: int, pad_id: int):
    """The config of the tiny "distilbert" or "xlm-roberta" (the "bert" one is tiny_bert's)."""
    from transformers import DistilBertConfig, XLMRobertaConfig

    if architecture == "distilbert":
        return DistilBertConfig(
            vocab_size=vocab_size,
            dim=HIDDEN,
            n_layers=LAYERS,
            n_heads=2,
            hidden_dim=32,
            max_position_embeddings=POSITIONS,
            pad_token_id=pad_id,
        )
    # RoBERTa numbers positions from pad_id + 1: POSITIONS pieces need POSITIONS + 2 embeddings
    return XLMRobertaConfig(
        max_position_embeddings=POSITIONS + pad_id + 1,
        type_vocab_size=1,
        bos_token_id=0,
        eos_token_id=2,
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=2,
        intermediate_size=32,
        pad_token_id=pad_id,
    )


def _wordpieces() -> list[str]:
    """The specials, then each toy word's first three letters and its "##" rest."""
    pieces = sorted({w[:3] for w in EN_WORDS + XX_WORDS} | {"##" + w[3:] for w in EN_WORDS + XX_WORDS if w[3:]})
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *pieces]


def _distilbert_tokenizer(out: Path):
    from transformers import DistilBertTokenizerFast

    (out / "vocab.txt").write_text("".join(piece + "\n" for piece in _wordpieces()), encoding="utf-8")
    return DistilBertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=False, strip_accents=False)


def _xlmr_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import XLMRobertaTokenizerFast

    backend = Tokenizer(models.Unigram())
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=80,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        unk_token="<unk>",
        show_progress=False,
    )
    backend.train_from_iterator(sentences("en", 200, 0) + sentences("xx", 200, 0), trainer)
    return XLMRobertaTokenizerFast(tokenizer_object=backend)


def tiny_bert(vocab_size: int, hidden: int = 16, layers: int = 2, positions: int = 32, **config):
    """A random BertForMaskedLM of two heads and a feed-forward twice `hidden` wide, from torch's current seed;
    `config`: further BertConfig fields (dropouts, attention implementation)."""
    from transformers import BertConfig, BertForMaskedLM

    return BertForMaskedLM(
        BertConfig(
            vocab_size=vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            intermediate_size=2 * hidden,
            max_position_embeddings=positions,
            **config,
        )
    )


def save_tiny_bert(out: Path, vocab: list[str] | Path, seed: int = 0, **shape) -> Path:
    """A tiny_bert (`shape`: its arguments) seeded with `seed` and its BertTokenizerFast (cased) saved to `out`:
    `vocab` is its pieces, written to out/vocab.txt, or a vocab.txt read as it is."""
    import torch
    from transformers import BertTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    if not isinstance(vocab, Path):
        (out / "vocab.txt").write_text("".join(piece + "\n" for piece in vocab), encoding="utf-8")
        vocab = out / "vocab.txt"
    BertTokenizerFast(vocab=str(vocab), do_lower_case=False, strip_accents=False).save_pretrained(out)
    torch.manual_seed(seed)
    with open(vocab, encoding="utf-8") as lines:
        tiny_bert(sum(1 for _ in lines), **shape).save_pretrained(out)
    return out


def save_checkpoint(architecture: str, out: Path, seed: int = 0) -> Path:
    """A random masked LM of `architecture` (one of ARCHITECTURES) and its tokenizer, saved to `out`."""
    import torch
    from transformers import DistilBertForMaskedLM, XLMRobertaForMaskedLM

    if architecture == "bert":
        return save_tiny_bert(out, _wordpieces(), seed, hidden=HIDDEN, layers=LAYERS, positions=POSITIONS)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _xlmr_tokenizer() if architecture == "xlm-roberta" else _distilbert_tokenizer(out)
    tokenizer.save_pretrained(out)
    torch.manual_seed(seed)
    config = _model_config(architecture, len(tokenizer), tokenizer.pad_token_id)
    model_class = {"xlm-roberta": XLMRobertaForMaskedLM, "distilbert": DistilBertForMaskedLM}[architecture]
    model_class(config).eval().save_pretrained(out)
    return out
