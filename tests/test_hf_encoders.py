"""Any Hugging Face masked LM through the one encoder: the tiny BERT (WordPiece), XLM-R (SentencePiece) and
DistilBERT checkpoints of tests/tiny_checkpoints.py (the `tiny_checkpoint` fixture runs each test on each) through token
translation, Tatoeba, XNLI fine-tuning, CKA and alignment, each read with its own tokenizer, special tokens and
subword convention."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from tiny_checkpoints import EN_WORDS, XX_WORDS, sentences

from xling.data.words import SENTENCEPIECE, WORDPIECE
from xling.encode.encoder import Encoder, Shift, sentence_word_vectors
from xling.evaluate import transfer
from xling.evaluate.cka import cka_table, random_encoder
from xling.evaluate.intervals import INTERVAL_COLUMNS
from xling.evaluate.sentence_retrieval import run_tatoeba
from xling.evaluate.translation import TranslationSettings, translate_pair
from xling.tune import align as al
from xling.tune import finetune as ft
from xling.tune.heads import collate, load_bert

pytestmark = pytest.mark.usefixtures("torch_one_thread")
LABEL_WORD = {"entailment": "water", "neutral": "tree", "contradiction": "house"}


@pytest.fixture
def encoder(tiny_checkpoint):
    return Encoder.from_pretrained(tiny_checkpoint, device="cpu")


def test_subword_conventions_group_pieces_into_words():
    assert WORDPIECE.spans(["Un", "##beli", "##eva", "bly", "##s"]) == [(0, 3), (3, 5)]
    pieces = ["\u2581Un", "beli", "eva", "\u2581", "(", "bly", "\u2581x"]
    assert SENTENCEPIECE.spans(pieces) == [(0, 3), (3, 6), (6, 7)]
    assert SENTENCEPIECE.detokenize(pieces) == "Unbelieva (bly x"
    assert SENTENCEPIECE.spans(["beli", "\u2581x"]) == [(0, 1), (1, 2)]  # a sequence's first piece starts a word
    assert SENTENCEPIECE.whole_word("cat") == "\u2581cat" and WORDPIECE.whole_word("cat") == "cat"


def test_encoder_reads_the_checkpoint_with_its_own_tokenizer(encoder, tiny_checkpoint):
    """Its special tokens frame each chunk, its convention makes the words (every word of the text, though
    both tokenizers cut most words into several pieces), and a shift at layer 1 reaches the layers above
    (DistilBERT: blocks in .transformer)."""
    expected = {
        "bert": ("[CLS]", "[SEP]", "[PAD]", WORDPIECE),
        "xlm-roberta": ("<s>", "</s>", "<pad>", SENTENCEPIECE),
        "distilbert": ("[CLS]", "[SEP]", "[PAD]", WORDPIECE),
    }
    cls, sep, pad, convention = expected[tiny_checkpoint.name]
    assert encoder.subwords == convention
    assert encoder.max_length == 40  # XLM-R: 42 position embeddings, numbered from its pad id + 1
    texts = sentences("en", 6, 1) + sentences("xx", 6, 1)
    batch = next(encoder.batches(texts, batch_size=12))
    assert sorted(batch.words) == sorted(w for text in texts for w in text.split())
    tokens = [encoder.tokenizer.convert_ids_to_tokens(row) for row in batch.input_ids.tolist()]
    assert all(row[0] == cls and row[int(batch.attention_mask[i].sum()) - 1] == sep for i, row in enumerate(tokens))
    assert {row[-1] for row in tokens} <= {sep, pad} and any(row[-1] == pad for row in tokens)
    assert batch.n_pieces > len(batch.words)
    plain = encoder.run(batch).hidden_states
    shifted = encoder.run(batch, shift=Shift(1, np.full(16, 3.0, np.float32))).hidden_states
    assert torch.equal(plain[:1], shifted[:1]) and not torch.allclose(plain[2], shifted[2])
    vectors = sentence_word_vectors(encoder, [t.split() for t in texts], layer=2, batch_size=4)
    assert [len(v) for v in vectors] == [len(t.split()) for t in texts] and not np.isnan(np.vstack(vectors)).any()


def test_token_translation(tiny_checkpoint, tmp_path):
    """Both directions at two layers, vocabularies counted with the checkpoint's own tokenizer (its special
    tokens left out), one output piece per input piece, outputs glued into words by its convention."""
    encoder = Encoder.from_pretrained(tiny_checkpoint, device="cpu")
    corpora = {}
    for lang in ("en", "xx"):
        corpora[lang] = tmp_path / f"{lang}.txt"
        corpora[lang].write_text("\n".join(sentences(lang, 30, 2) + ["qqq zzz"]) + "\n", encoding="utf-8")
    pairs = list(zip(sentences("en", 10, 3), sentences("xx", 10, 3), strict=True))
    for unit in ("wordpieces", "words"):
        settings = TranslationSettings(
            layers=[1, 2],
            alphas=[0, 2],
            batch_size=4,
            device="cpu",
            min_count=1,
            n_samples=3,
            bleu_unit=unit,
            bleu_tokenize="13a",
        )
        table, samples = translate_pair(tiny_checkpoint, "en", "xx", pairs, settings, corpus_files=corpora)
        assert len(table) == 2 * 2 * 2 and set(table["direction"]) == {"en->xx", "xx->en"}
        n_pieces = {
            "en->xx": sum(map(len, encoder.tokenize([p for p, _ in pairs]))),
            "xx->en": sum(map(len, encoder.tokenize([x for _, x in pairs]))),
        }
        assert (table["n_tokens"] == table["direction"].map(n_pieces)).all()
        assert table["bleu1"].between(0, 100).all() and (table["src_vocab_size"] > 0).all()
    assert len(samples) == 2 * 3  # per direction
    assert all(encoder.subwords.marker not in text for text in samples["output"])  # markers removed
    specials = set(encoder.tokenizer.all_special_tokens)
    from xling.evaluate.translation import corpus_piece_counts

    assert not specials & set(corpus_piece_counts(corpora["en"], encoder))  # "qqq": unknown pieces


def test_tatoeba(tiny_checkpoint):
    """Every sentence finds itself among copies at every layer (mean_all pools its own <s></s> or [CLS][SEP]);
    the toy translations give accuracies in [0, 1]."""
    english = sentences("en", 12, 4)
    table = run_tatoeba(tiny_checkpoint, list(zip(english, english, strict=True)), batch_size=5, device="cpu")
    assert sorted(set(table["layer"])) == [0, 1, 2] and (table["accuracy"] == 1.0).all()
    table = run_tatoeba(
        tiny_checkpoint,
        list(zip(sentences("xx", 12, 4), english, strict=True)),
        batch_size=5,
        device="cpu",
        pooling="cls",
    )
    assert table["accuracy"].between(0, 1).all() and (table["max_length"] == 40).all()


def toy_xnli(n: int, seed: int, words=EN_WORDS) -> list[tuple[str, str, str]]:
    """The label is named by one word of the hypothesis (LABEL_WORD)."""
    rng = random.Random(seed)
    plain = [w for w in words if w not in LABEL_WORD.values()]
    out = []
    for i in range(n):
        label = list(LABEL_WORD)[i % 3]
        hypothesis = [rng.choice(plain) for _ in range(rng.randint(1, 3))] + [LABEL_WORD[label]]
        rng.shuffle(hypothesis)
        out.append((" ".join(rng.choice(plain) for _ in range(rng.randint(2, 5))), " ".join(hypothesis), label))
    return out


def test_xnli_fine_tuning(tiny_checkpoint, tmp_path):
    """Pairs framed as the tokenizer frames them (XLM-R: <s> a </s></s> b </s>, no token types), a few steps
    that learn the toy task, the fine-tuned encoder saved as its own class and scored zero-shot."""
    backbone = load_bert(tiny_checkpoint)
    tokenizer = backbone.tokenizer
    examples = toy_xnli(6, 9)
    features = backbone.featurizer("xnli", 40, list(LABEL_WORD))(examples)
    batch = collate("xnli", features, backbone.pad_id, pair=True)
    framed = tokenizer([e[0] for e in examples], [e[1] for e in examples], padding=True, return_tensors="pt")
    assert torch.equal(batch["input_ids"], framed["input_ids"])
    assert ("token_type_ids" in batch) == (tiny_checkpoint.name == "bert")
    if "token_type_ids" in batch:
        assert torch.equal(batch["token_type_ids"], framed["token_type_ids"])
    settings = {
        "epochs": 5,
        "batch_size": 8,
        "learning_rate": 3e-3,
        "warmup": 0.1,
        "weight_decay": 0.01,
        "dropout": 0.1,
        "max_length": 40,
        "max_train": None,
    }
    record = ft.finetune(
        "xnli",
        backbone,
        toy_xnli(150, 1),
        {"en": toy_xnli(30, 2)},
        tmp_path / "model",
        tmp_path / "ckpt",
        settings,
        ft.FinetuneRun(seed=3, freeze=0, checkpoint_every=1000),
        score=transfer.score,
    )
    assert record["selection_score"] > 60  # chance 33.3
    saved = json.loads((tmp_path / "model" / "encoder" / "config.json").read_text(encoding="utf-8"))
    assert saved["model_type"] == tiny_checkpoint.name
    translated = [
        (" ".join(XX_WORDS[EN_WORDS.index(w)] for w in p.split()), h, label) for p, h, label in toy_xnli(30, 5)
    ]
    table = transfer.evaluate(
        tmp_path / "model",
        {"en": {"dev": toy_xnli(30, 2), "test": toy_xnli(30, 5)}, "xx": {"dev": translated, "test": translated}},
        transfer.TransferTest(
            pivot="en",
            layer=1,
            alphas=[1.0],
            positions="all",
            mds=True,
            finetuned_means={"en": np.zeros(16, np.float32), "xx": np.ones(16, np.float32)},
            batch_size=8,
            device="cpu",
        ),
    )
    assert {"en", "xx"} <= set(table["lang"]) and table["value"].between(0, 100).all()
    assert "mds" in set(table[table["lang"] == "xx"]["transform"])


def test_cka_and_its_random_encoder(encoder, tiny_checkpoint):
    """The same sentences on both sides: CKA 1 at every layer; the random lower bound is a fresh model of the
    checkpoint's own class and tokenizer, below 1."""
    pairs = [(s, s) for s in sentences("en", 16, 6)]
    table = cka_table((encoder, encoder), pairs, multilingual=encoder, random_seed=1, debiased=False, batch_size=4)
    same = table[table["comparison"] != "random"]
    assert np.allclose(same["cka"], 1.0) and len(same) == 2 * 3
    # every row with its jackknife interval over the 16 sentences (identical sides: 1 with any group left out)
    assert table[list(INTERVAL_COLUMNS)].notna().all().all() and (table["n_items"] == 16).all()
    assert np.allclose(same[["ci_low", "ci_high", "layer_mean_ci_low", "layer_mean_ci_high"]], 1.0)
    assert np.allclose(same[same["comparison"] == "multilingual"][["vs_monolingual_low", "vs_monolingual_high"]], 0.0)
    assert (table[table["comparison"] == "random"]["cka"] < 0.999).any()
    fresh = random_encoder(encoder, 1)
    assert type(fresh.model) is type(encoder.model) and fresh.subwords == encoder.subwords


def test_alignment(tiny_checkpoint, tmp_path):
    """Cao et al.'s alignment fine-tuning on word-linked pairs: written as the checkpoint's class, read back by
    the encoder."""
    en = [s.split() for s in sentences("en", 8, 7)]
    xx = [s.split() for s in sentences("xx", 8, 7)]
    data = [al.ParallelWords("xx", en, xx, [[(i, i) for i in range(len(s))] for s in en])]
    settings = {
        "pairs_per_language": 2,
        "epochs": 1,
        "learning_rate": 1e-3,
        "betas": [0.9, 0.98],
        "eps": 1e-9,
        "warmup": 0.1,
        "regularization": 1.0,
        "layer": None,
    }
    record = al.align(tiny_checkpoint, data, tmp_path / "aligned", tmp_path / "ckpt", settings, seed=1)
    assert record["steps"] == 4
    aligned = Encoder.from_pretrained(tmp_path / "aligned", device="cpu")
    assert aligned.model.config.model_type == tiny_checkpoint.name
    before = Encoder.from_pretrained(tiny_checkpoint, device="cpu").sentence_vectors(sentences("xx", 3, 8), 3)[0]
    assert not np.allclose(aligned.sentence_vectors(sentences("xx", 3, 8), 3)[0], before)
