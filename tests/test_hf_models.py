"""Hugging Face checkpoints beside our models (language.hf_models): a tiny checkpoint saved with save_pretrained,
whose vocabulary is not the run's, through the representation store and word retrieval, and its reference rows in
the word-retrieval report."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from transformers import BertTokenizerFast
from tiny_checkpoints import save_tiny_bert

from xling.data.wordpiece import count_words
from xling.evaluate.word_retrieval import word_retrieval
from xling.represent.store import Extraction, extract_bert_shard, reduce_shards

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
# canonical corpus: a sentence per line, a blank line between documents; "Cat" and "cat" are one word when lowercased
DOCUMENTS = [
    ["Cat sat on the mat .", "the dog ran"],
    ["a cat and a dog"],
    ["Dog sat", "the cat ran on"],
    ["the mat sat"],
]
WORDS = ["cat", "dog", "mat", "sat", "ran", "the", "a", "on", "and"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A random cased BertForMaskedLM with a character-level vocabulary (the run's has whole words)."""
    vocab = SPECIAL + list(LETTERS) + ["C", "D", "."] + ["##" + c for c in LETTERS]
    return save_tiny_bert(tmp_path_factory.mktemp("hf") / "tiny-bert", vocab)


@pytest.fixture
def corpus(tmp_path):
    """The corpus in the canonical format, and the run's token files of it (whole-word pieces)."""
    path = tmp_path / "en.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in DOCUMENTS) + "\n", encoding="utf-8")
    tokens = tmp_path / "tokens-en.txt"
    tokens.write_text("".join(" ".join(doc).lower() + "\n" for doc in DOCUMENTS), encoding="utf-8")
    return path, tokens


def _extract(model, text, out, **kw):
    extract_bert_shard(
        model,
        text,
        "en",
        WORDS,
        0,
        1,
        out / "w.parquet",
        out / "l.parquet",
        Extraction(batch_size=2, max_length=None, device="cpu", **kw),
    )
    return pd.read_parquet(out / "w.parquet").sort_values(["word", "layer"], ignore_index=True)


def test_checkpoint_reads_the_corpus_with_its_own_tokenizer(checkpoint, corpus, tmp_path):
    """corpus=True equals the store built from token files of the checkpoint's own pieces of each document (the
    path test_represent checks against direct means); the run's token files are not in its vocabulary."""
    text, run_tokens = corpus
    tokenizer = BertTokenizerFast.from_pretrained(checkpoint)
    own = tmp_path / "own.txt"
    own.write_text("".join(" ".join(tokenizer.tokenize(" ".join(doc))) + "\n" for doc in DOCUMENTS), "utf-8")
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    from_corpus = _extract(checkpoint, text, tmp_path / "a", corpus=True)
    from_tokens = _extract(checkpoint, own, tmp_path / "b")
    assert set(from_corpus["layer"]) == {0, 1, 2}
    pd.testing.assert_frame_equal(from_corpus, from_tokens)
    with pytest.raises(ValueError, match=r"tokens-en\.txt:1: piece 'cat' is not in the model's vocabulary"):
        _extract(checkpoint, run_tokens, tmp_path / "b")


def test_checkpoint_words_are_put_in_the_run_form(checkpoint, corpus, tmp_path):
    """A lowercasing run counts "Cat" as "cat" (its word lists and counts are lowercased); a cased run does not."""
    text, _ = corpus
    (tmp_path / "lower").mkdir(), (tmp_path / "cased").mkdir()
    lower = _extract(checkpoint, text, tmp_path / "lower", corpus=True, lowercase=True)
    cased = _extract(checkpoint, text, tmp_path / "cased", corpus=True, lowercase=False)
    n = {name: table[table.layer == 0].set_index("word")["n"] for name, table in (("lower", lower), ("cased", cased))}
    assert n["lower"]["cat"] == 3 and n["cased"]["cat"] == 2  # "Cat sat", "a cat", "the cat"
    assert n["lower"]["dog"] == 3 and n["cased"]["dog"] == 2
    assert n["lower"]["the"] == n["cased"]["the"] == 4


def test_checkpoint_word_retrieval_on_a_copied_language(checkpoint, corpus, tmp_path):
    """A language that is an exact copy of the pivot: the checkpoint's vectors of a word are equal in both, so
    every covered query ranks its translation first at every layer; the vocabulary is the run's counts."""
    text, run_tokens = corpus
    copy_text, copy_tokens = tmp_path / "xe.txt", tmp_path / "tokens" / "xe.txt"
    copy_tokens.parent.mkdir()
    copy_text.write_text(text.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "tokens" / "en.txt").write_text(run_tokens.read_text(encoding="utf-8"), encoding="utf-8")
    copy_tokens.write_text(run_tokens.read_text(encoding="utf-8"), encoding="utf-8")
    count_words([tmp_path / "tokens" / "en.txt", copy_tokens], tmp_path / "counts.parquet")
    shards = []
    for lang, path in (("en", text), ("xe", copy_text)):
        shards.append(tmp_path / f"{lang}.words.parquet")
        extract_bert_shard(
            checkpoint,
            path,
            lang,
            WORDS,
            0,
            1,
            shards[-1],
            tmp_path / f"{lang}.langs.parquet",
            Extraction(batch_size=3, max_length=None, device="cpu", corpus=True, lowercase=True),
        )
    reduce_shards(shards, tmp_path / "words.parquet")
    dictionary = tmp_path / "en-xe.test.txt"
    dictionary.write_text("".join(f"{w} {w}\n" for w in ["cat", "dog", "mat", "ran", "zebra"]), encoding="utf-8")
    table = word_retrieval(tmp_path / "words.parquet", dictionary, "en", "xe", tmp_path / "counts.parquet", min_count=2)
    assert table["layer"].tolist() == [0, 1, 2]
    assert (table["mrr"] == 1.0).all() and (table["n_queries"] == 4).all()  # "zebra" is in no corpus
    # "mat" occurs twice: kept at min_count 2, dropped at 3 (the run's counts, not the checkpoint's pieces)
    table = word_retrieval(tmp_path / "words.parquet", dictionary, "en", "xe", tmp_path / "counts.parquet", min_count=3)
    assert (table["n_queries"] == 2).all()  # cat 3, dog 3; mat 2, ran 2


# ---------------------------------------------------------------------------------------------- report


def _with_checkpoint(layers=(0, 1, 2, 3, 4), planted=0.777, at=2):
    from test_report import PAIRS, word_retrieval_table

    table = word_retrieval_table(metrics=("cosine",))
    rows = []
    for layer in layers:
        for pair in PAIRS:
            src, tgt = pair.split("-")
            mrr = planted if (layer, pair) == (at, "en-de") else 0.5 + 0.01 * layer
            rows.append(
                dict(
                    model="bert-base-multilingual-cased",
                    size=0,
                    window=0,
                    layer=layer,
                    src=src,
                    tgt=tgt,
                    pair=pair,
                    mrr=mrr,
                    p_at_1=mrr,
                    p_at_5=mrr,
                    coverage=0.9,
                    n_pairs=500,
                    n_covered_pairs=450,
                    n_queries=300,
                    n_candidates=400,
                    chance_mrr=0.016,
                    metric="cosine",
                    dictionary_split="test",
                    csls_k=10,
                    min_count=5,
                    dim=768,
                    seed=None,
                    source="synthetic",
                    vocab="train",
                    run="unit-test-run",
                    hparams="{}",
                    data_settings=table["data_settings"].iloc[0],
                )
            )
    return pd.concat([table, pd.DataFrame(rows)], ignore_index=True)


def _render(tmp_path, table, **report_settings):
    from test_report import make_config

    from xling.report.core import expected_figures, render_report

    path = tmp_path / "word_retrieval.parquet"
    table.to_parquet(path, index=False)
    config = make_config(**report_settings)
    saved = render_report(
        {"word_retrieval": path},
        config,
        tmp_path / "report.html",
        tmp_path / "figures",
        paper_results=tmp_path / "absent.yaml",
        expected=[f["name"] for f in expected_figures(config, ["word_retrieval"])],
    )
    return (tmp_path / "report.html").read_text(encoding="utf-8"), saved


def _main_table_rows(html: str) -> list[str]:
    table = re.search(r"<(?:h3|summary)>MRR by language pair.*?</table>", html, re.S).group(0)  # long: collapsed
    return re.findall(r"<tr>.*?</tr>", table, re.S)


def test_checkpoint_is_a_reference_row_at_the_report_layer_counted_like_ours(tmp_path):
    """report.layer -1: each BERT's last layer (ours 2, the checkpoint's 4), in the main table with no size or
    window of ours and beside every window's figure; a layer the checkpoint lacks is an error naming it."""
    html, saved = _render(tmp_path, _with_checkpoint(planted=0.888, at=4), layer=-1)
    assert "BERT layer 2" in html and "bert-base-multilingual-cased layer 4" in html
    rows = [r for r in _main_table_rows(html) if "bert-base-multilingual-cased" in r]
    assert len(rows) == 1 and ">0.888<" in rows[0]  # layer 4 of the checkpoint, en-de
    cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[0], re.S)
    assert cells[1:4] == ["\u2014", "\u2014", "4"]
    assert set(saved) == {
        "word_retrieval_mrr_by_pair_w512",
        "word_retrieval_mrr_by_pair_w20",
        "word_retrieval_window_effect",
        "word_retrieval_bert_layers",
    }  # no figure of its own
    with pytest.raises(ValueError, match=r"BERT layer 2 .*bert-base-multilingual-cased have layers \[0, 1\]"):
        _render(tmp_path, _with_checkpoint(layers=(0, 1), at=1), layer=2)


def test_checkpoint_bars_in_the_figures(tmp_path):
    """Figure 1 layout: a panel of reference bars for the checkpoint; Figure 3 layout: one bar per size panel."""
    from test_report import PAIRS

    from xling.report import figures

    summary = _with_checkpoint().query("layer == 2 or model != 'bert' and model != 'bert-base-multilingual-cased'")
    summary = (
        summary[(summary["window"] != 20)]
        .groupby(["model", "size", "window", "layer", "pair"], as_index=False)[["mrr", "chance_mrr"]]
        .mean()
    )
    fig = figures.mrr_by_pair(summary, settings="")
    axes = fig.get_axes()
    assert [ax.get_title(loc="left") for ax in axes] == [
        "GloVe",
        "Word2Vec",
        "BERT (layer 2)",
        "bert-base-multilingual-cased (checkpoint, layer 2)",
    ]
    heights = sorted(round(p.get_height(), 3) for p in axes[-1].patches)
    assert heights == sorted([0.777] + [0.52] * (len(PAIRS) - 1))
    fig = figures.window_effect(summary, settings="")
    for ax in fig.get_axes():
        label = ax.get_xticklabels()[-1].get_text()
        assert " ".join(label.replace("-\n", "-").split()) == "bert-base-multilingual-cased (checkpoint, layer 2)"
        assert round(ax.patches[-1].get_height(), 4) == round((0.777 + 0.52 * (len(PAIRS) - 1)) / len(PAIRS), 4)
