"""Unsupervised token translation: BLEU-1, convert rate, decoding, and the language switch by MDS."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sacrebleu.metrics import BLEU
from transformers import BertTokenizerFast
from tiny_checkpoints import one_torch_thread, tiny_bert

from xling.encode.encoder import Encoder
from xling.evaluate.translation import (
    TranslationSettings,
    bleu1,
    bleu_tokenizer,
    convert_rate,
    piece_counts,
    sentence_means,
    store_means,
    token_translation,
    translate_pair,
    vocabulary,
)
from xling.report.language import convert_rate_by_alpha, translation_flags

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = "bcdfghklmnprstvzjqwx"
A_WORDS = [f"a{c}" for c in LETTERS]  # language "a"
B_WORDS = [f"o{c}" for c in LETTERS]  # language "b": word i of b translates word i of a


def save_model(model, vocab, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.txt").write_text("".join(v + "\n" for v in vocab), encoding="utf-8")
    BertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=False, strip_accents=False).save_pretrained(out)
    model.save_pretrained(out)
    return out


def tiny_model(vocab_size):
    """A random tiny BERT without dropout (from torch's current seed)."""
    return tiny_bert(vocab_size, hidden=32, positions=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def sentences(lang, n, rng, length=8):
    words = A_WORDS if lang == "a" else B_WORDS
    out = []
    for _ in range(n):
        topic = rng.integers(0, 4)
        out.append([words[i] for i in rng.integers(0, 5, length) + 5 * topic])
    return out


# ---------------------------------------------------------------------------------------------- metrics


def test_bleu1_hand_computed_and_equal_to_sacrebleu():
    # 4 of 5 hypothesis unigrams match (the, cat, on, mat); BP = exp(1 - 6/5)
    assert bleu1(["the cat sat on mat"], ["the cat is on the mat"]) == pytest.approx(100 * 0.8 * math.exp(1 - 6 / 5))
    hyps = ["a b c d", "the the the", "x y"]
    refs = ["a c b e f", "the cat", "x y z"]
    expected = BLEU(max_ngram_order=1).corpus_score(hyps, [refs]).score
    assert bleu1(hyps, refs) == pytest.approx(expected)
    # clipping: "the the the" against "the cat" counts one match only
    assert bleu1(["the the the"], ["the cat the"]) == pytest.approx(100 * 2 / 3)
    with pytest.raises(ValueError):
        bleu1(["a"], ["a", "b"])
    assert bleu_tokenizer("zh") == "zh" and bleu_tokenizer("fr") == "13a" and bleu_tokenizer("fr", "none") == "none"


def test_convert_rate_hand_computed():
    src, tgt = {"le", "chat", "un"}, {"the", "cat", "un"}
    # y: the(t) cat(t) le(s) un(shared) dog(neither) -> 2 / (5 - 1)
    rate, counts = convert_rate(["the", "cat", "le", "un", "dog"], src, tgt)
    assert rate == pytest.approx(0.5)
    assert counts == dict(n_tokens=5, n_tgt_only=2, n_src_only=1, n_shared=1, n_neither=1)
    rate, counts = convert_rate(["un", "un"], src, tgt)  # every output piece shared: undefined
    assert math.isnan(rate) and counts["n_shared"] == 2
    assert math.isnan(convert_rate([], src, tgt)[0])


def test_vocabulary(tmp_path):
    path = tmp_path / "xa.txt"
    path.write_text("a b ##c [UNK]\na a\n", encoding="utf-8")
    counts = piece_counts(path)
    assert counts["a"] == 3 and counts["##c"] == 1
    assert vocabulary(counts, 1) == {"a", "b", "##c"}
    assert vocabulary(counts, 2) == {"a"}


def test_store_means(tmp_path):
    rows = [
        dict(lang=lang, layer=layer, stat=stat, n=10, d0=float(layer), d1=1.0 if stat == "token" else 2.0)
        for lang in ("en", "xa")
        for stat in ("token", "sentence")
        for layer in (1, 0, 2)
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "langs.parquet")
    means = store_means(tmp_path / "langs.parquet", "xa", "sentence")
    np.testing.assert_allclose(means, [[0, 2], [1, 2], [2, 2]])
    with pytest.raises(ValueError, match="no token mean"):
        store_means(tmp_path / "langs.parquet", "zz", "token")


# ---------------------------------------------------------------------------------------------- decoding


@pytest.fixture(scope="module")
def random_model(tmp_path_factory):
    torch.manual_seed(0)
    vocab = SPECIALS + A_WORDS + B_WORDS + ["##s"]
    return save_model(tiny_model(len(vocab)).eval(), vocab, tmp_path_factory.mktemp("rand"))


def test_token_translation_table_and_samples(random_model):
    encoder = Encoder.from_pretrained(random_model, device="cpu", max_length=6)  # 4 pieces a chunk: sentences are cut
    rng = np.random.default_rng(0)
    src = [" ".join(s) for s in sentences("a", 7, rng, length=9)] + [""]
    ref = [" ".join(s) for s in sentences("b", 8, rng)]
    means = sentence_means(encoder, src, batch_size=3)
    assert means["token"].shape == (3, 32)
    mean_b = means["token"] + 1.0
    table, samples = token_translation(
        encoder,
        src,
        ref,
        "a",
        "b",
        means["token"],
        mean_b,
        set(A_WORDS),
        set(B_WORDS),
        TranslationSettings(layers=[0, 1, 2], alphas=[-1, 0, 2], batch_size=3, n_samples=2),
    )
    assert len(table) == 9 and set(table["alpha"]) == {-1.0, 0.0, 2.0}
    base = table[table["alpha"] == 0]
    assert base["bleu1"].nunique() == 1 and base["convert_rate"].nunique() <= 1
    assert (table["n_tokens"] == 7 * 9).all()  # one output piece per input piece, all chunks kept
    assert (table["n_sentences"] == 8).all()
    assert len(samples) == 2 and samples["alpha"].iloc[0] == 2.0
    assert len(samples["output"].iloc[0].split()) <= 9
    with pytest.raises(ValueError, match="shape"):
        token_translation(
            encoder,
            src,
            ref,
            "a",
            "b",
            mean_b[:2],
            mean_b,
            set(),
            set(),
            TranslationSettings(layers=[0], alphas=[1], batch_size=3),
        )


@pytest.fixture(scope="module")
def constant_model(tmp_path_factory):
    """A planted degenerate MLM: its prediction head ignores the hidden state (the transform's LayerNorm
    outputs 0) and its bias favours one piece, so it predicts "ab" whatever the input and the shift."""
    torch.manual_seed(0)
    vocab = SPECIALS + A_WORDS + B_WORDS + ["##s"]
    model = tiny_model(len(vocab)).eval()
    with torch.no_grad():
        model.cls.predictions.transform.LayerNorm.weight.zero_()
        model.cls.predictions.transform.LayerNorm.bias.zero_()
        model.cls.predictions.bias.zero_()
        model.cls.predictions.bias[vocab.index("ab")] = 10.0
    return save_model(model, vocab, tmp_path_factory.mktemp("constant"))


def constant_translation(model_dir, **kwargs):
    encoder = Encoder.from_pretrained(model_dir, device="cpu")
    mean_a = np.zeros((3, 32))
    return token_translation(
        encoder,
        ["ab ac ad"],
        ["ab abs ob"],
        "a",
        "b",
        mean_a,
        mean_a + 1.0,
        set(A_WORDS),
        set(B_WORDS),
        TranslationSettings(layers=[1, 2], alphas=[-1, 0, 1, 2], batch_size=2, **kwargs),
    )[0]


def test_token_sets_of_the_translated_sentences_count_every_pair(constant_model):
    """language.data xnli: without token files or corpora, V_s and V_t are the pieces (count >= min_count) of every
    pair's sentences, not only the first max_sentences translated (Liu et al. Table 6: the XNLI test set's)."""
    pairs = [("ab ac", "ob oc"), ("ab ad", "ob"), ("af", "of og")]
    for min_count, (src, tgt) in {1: ({"ab", "ac", "ad", "af"}, {"ob", "oc", "of", "og"}), 2: ({"ab"}, {"ob"})}.items():
        table, _ = translate_pair(
            constant_model,
            "a",
            "b",
            pairs,
            TranslationSettings(
                directions=["en-xx"], layers=[1], alphas=[0], batch_size=2, max_sentences=1, min_count=min_count
            ),
        )
        row = table.iloc[0]
        assert (row.src_vocab_size, row.tgt_vocab_size, row.shared_vocab_size) == (len(src), len(tgt), 0)
        assert row.n_sentences == 1


def test_bleu1_units_against_sacrebleu(constant_model):
    """The constant model outputs "ab ab ab" (one piece per input piece). Against "ab abs ob":
    wordpieces: hypothesis pieces ab ab ab, reference pieces ab ab ##s ob -> 2 of 3 clipped matches, BP
    exp(1 - 4/3); words: hypothesis words ab ab ab, reference words ab abs ob -> 1 of 3, BP 1."""
    pieces = constant_translation(constant_model)
    assert (pieces["bleu_unit"] == "wordpieces").all() and (pieces["bleu_tokenize"] == "none").all()
    expected = BLEU(max_ngram_order=1, tokenize="none").corpus_score(["ab ab ab"], [["ab ab ##s ob"]]).score
    assert expected == pytest.approx(100 * 2 / 3 * math.exp(1 - 4 / 3))
    assert pieces["bleu1"].to_numpy() == pytest.approx(expected)
    words = constant_translation(constant_model, bleu_unit="words")
    assert (words["bleu_unit"] == "words").all() and (words["bleu_tokenize"] == "13a").all()
    expected = BLEU(max_ngram_order=1, tokenize="13a").corpus_score(["ab ab ab"], [["ab abs ob"]]).score
    assert expected == pytest.approx(100 / 3)
    assert words["bleu1"].to_numpy() == pytest.approx(expected)
    with pytest.raises(ValueError, match="BLEU unit"):
        constant_translation(constant_model, bleu_unit="characters")


def test_constant_model_is_flagged(constant_model, random_model):
    table = constant_translation(constant_model)
    assert (table["distinct_predictions"] == 1).all() and (table["changed_share"] == 0).all()
    assert (table["n_src_only"] == 3).all() and (table["convert_rate"] == 0).all()  # "ab" is a source piece
    flags = translation_flags(table)
    assert "constant predictions" in flags and "do not depend on" in flags
    normal = constant_translation(random_model)  # a random (untrained) model: its outputs follow its input
    assert (normal["distinct_predictions"] > 1).all() and translation_flags(normal) == ""


def test_items_reproduce_the_convert_rate_and_the_repeated_token_is_flagged(constant_model, random_model):
    """Per-sentence convert counts: their ratio of sums is each row's convert rate; the constant model's rows
    say one token is repeated (and, shifted, that the shift changed nothing), the random model's unshifted
    ones say nothing (its shifted ones may: a shift of 2 x (mean_b - mean_a) swamps an untrained model);
    alpha 0 is the chance of the shifted rows."""
    encoder = Encoder.from_pretrained(random_model, device="cpu", max_length=6)
    rng = np.random.default_rng(1)
    src, ref = [" ".join(s) for s in sentences("a", 6, rng)], [" ".join(s) for s in sentences("b", 6, rng)]
    means = sentence_means(encoder, src, batch_size=3)["token"]
    items = []
    table, _ = token_translation(
        encoder,
        src,
        ref,
        "a",
        "b",
        means,
        means + 1.0,
        set(A_WORDS),
        set(B_WORDS),
        TranslationSettings(layers=[1, 2], alphas=[0, 2], batch_size=3),
        items,
    )
    sums = pd.concat(items).groupby(["layer", "alpha"])[["numerator", "denominator"]].sum()
    for row in table.itertuples():
        assert sums.numerator[row.layer, row.alpha] / sums.denominator[row.layer, row.alpha] == row.convert_rate
    assert table[table.alpha == 0].flag.isna().all()
    base = table[table.alpha == 0].convert_rate.iloc[0]
    assert table[table.alpha == 0].chance.isna().all() and (table[table.alpha == 2].chance == base).all()
    flags = constant_translation(constant_model).set_index("alpha").flag
    assert flags.str.startswith("one token repeated: 'ab' is 100.0%").all()
    assert flags[2.0].str.contains("the shift changed no output piece").all() and "shift" not in flags[0.0].iloc[0]


def test_layer_average_counts_dropped_layers():
    table = pd.DataFrame(
        dict(
            model="bert",
            size=1,
            window=8,
            src="a",
            tgt="b",
            alpha=1.0,
            layer=[1, 2, 3],
            convert_rate=[0.2, math.nan, 0.6],
            bleu1=[1.0, 2.0, 6.0],
        )
    )
    (row,) = convert_rate_by_alpha(table).to_dict("records")
    assert row["convert_rate"] == pytest.approx(0.4) and row["bleu1"] == pytest.approx(3.0)
    assert row["n_layers"] == 3 and row["n_layers_undefined"] == 1


# ---------------------------------------------------------------------------------------------- acceptance


def check_language_switch(table: pd.DataFrame, tolerance: float = 0.02) -> None:
    """The studies' claim: the convert rate rises with alpha, and a negative alpha keeps the output in the
    source language (no more target pieces than without the shift). Per model x pair x direction, the
    convert rate averaged over layers."""
    summary = convert_rate_by_alpha(table)
    for key, part in summary.groupby(["model", "size", "window", "src", "tgt"], dropna=False):
        rates = part.set_index("alpha")["convert_rate"].sort_index()
        positive = rates[rates.index >= 0]
        assert (positive.diff().dropna() >= -tolerance).all(), f"{key}: convert rate does not rise with alpha: {rates}"
        assert positive.iloc[-1] > positive.iloc[0] + tolerance, f"{key}: largest alpha converts no more: {rates}"
        if 0 in rates.index:
            for alpha in rates.index[rates.index < 0]:
                assert rates[alpha] <= rates[0] + tolerance, f"{key}: alpha {alpha} leaves the source language"


def train_two_languages(out: Path, steps: int, seed: int = 0) -> Path:
    """A tiny MLM on two languages with disjoint vocabularies and the same grammar (topic blocks)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    vocab = SPECIALS + A_WORDS + B_WORDS
    index = {w: i for i, w in enumerate(vocab)}
    model = tiny_model(len(vocab))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(steps):
        batch = [
            [2] + [index[w] for w in sentences("a" if rng.random() < 0.5 else "b", 1, rng)[0]] + [3] for _ in range(32)
        ]
        ids = torch.tensor(batch)
        masked = torch.rand(ids.shape) < 0.15
        masked[:, [0, -1]] = False
        labels = torch.where(masked, ids, torch.full_like(ids, -100))
        r = torch.rand(ids.shape)
        inputs = torch.where(masked & (r < 0.8), torch.full_like(ids, 4), ids)
        swap = masked & (r >= 0.8) & (r < 0.9)
        inputs[swap] = torch.randint(5, len(vocab), (int(swap.sum()),))
        model(input_ids=inputs, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return save_model(model.eval(), vocab, out)


@pytest.fixture(scope="module")
def trained_model(tmp_path_factory):
    with one_torch_thread():
        return train_two_languages(tmp_path_factory.mktemp("trained"), steps=500)


@pytest.mark.parametrize("positions", ["all", "words"])  # the means' and the shift's positions
def test_mds_switches_language_on_a_tiny_trained_model(trained_model, torch_one_thread, positions):
    encoder = Encoder.from_pretrained(trained_model, device="cpu")
    rng = np.random.default_rng(7)
    mean_a = sentence_means(encoder, [" ".join(s) for s in sentences("a", 200, rng)], 64, positions)["token"]
    mean_b = sentence_means(encoder, [" ".join(s) for s in sentences("b", 200, rng)], 64, positions)["token"]
    src = [" ".join(s) for s in sentences("a", 40, rng)]
    ref = [" ".join("o" + w[1:] for w in s.split()) for s in src]
    table, _ = token_translation(
        encoder,
        src,
        ref,
        "a",
        "b",
        mean_a,
        mean_b,
        set(A_WORDS),
        set(B_WORDS),
        TranslationSettings(layers=[0, 1, 2], alphas=[-1, 0, 1, 2, 3], batch_size=64, shift_positions=positions),
    )
    table = table.assign(model="bert", size=0, window=0, src="a", tgt="b")
    check_language_switch(table)
    assert translation_flags(table) == ""  # a working model is not flagged
    summary = convert_rate_by_alpha(table).set_index("alpha")["convert_rate"]
    assert summary[3.0] > 0.5 and summary[-1.0] < 0.1


def test_report_sections_render(tmp_path):
    """The language sections render from tidy tables, with figures and published numbers beside ours."""
    import yaml

    import xling.report.language  # noqa: F401  (registers the sections)
    from xling.report.core import render_report

    rng = np.random.default_rng(0)
    translation = pd.DataFrame(
        [
            dict(
                model=model,
                size=size,
                window=window,
                src=s,
                tgt=t,
                pair="en-xa",
                direction=d,
                layer=layer,
                alpha=float(a),
                bleu1=rng.uniform(0, 30),
                convert_rate=rng.uniform(),
                n_sentences=3,
                n_tokens=9,
                mean_stat="token",
                mean_source="store",
                bleu_tokenize="13a",
            )
            for model, size, window in (("bert", 500, 32), ("bert-base-multilingual-cased", 0, 0))
            for d, (s, t) in {"en->xx": ("en", "xa"), "xx->en": ("xa", "en")}.items()
            for layer in (1, 2)
            for a in (-1, 0, 1, 2)
        ]
    )
    tatoeba = pd.DataFrame(
        [
            dict(
                model="bert-base-multilingual-cased",
                size=0,
                window=0,
                lang="de",
                pair="en-de",
                direction=d,
                layer=layer,
                variant=v,
                accuracy=0.25 if v == "original" else 0.5,
                n_queries=4,
                n_candidates=4,
                mds_alpha=1.0,
                mean_stat="sentence",
            )
            for d in ("xx->en", "en->xx")
            for layer in (7, 8)
            for v in ("original", "zero_mean", "mds")
        ]
    )
    published = tmp_path / "paper_results.yaml"
    published.write_text(
        yaml.safe_dump(
            {
                "tatoeba": [
                    {
                        "source": "A test (2020)",
                        "id": "Table 0",
                        "metric": "accuracy",
                        "scale": 100,
                        "settings": {"variant": "original"},
                        "rows": [{"model": "bert-base-multilingual-cased", "lang": "de", "value": 30.0}],
                    }
                ]
            }
        )
    )
    config = {
        "run": "t",
        "languages": ["en", "xa", "de"],
        "data": {"source": "synthetic"},
        "models": ["bert"],
        "windows": [32],
        "language": {"sentence_retrieval": {"layer": 8}},
    }
    saved = render_report(
        {"token_translation": translation, "tatoeba": tatoeba},
        config,
        tmp_path / "r.html",
        tmp_path / "figures",
        paper_results=published,
    )
    assert {
        "language_translation_convert_rate",
        "language_translation_bleu1",
        "language_translation_alpha",
        "language_tatoeba_layers",
    } <= set(saved)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Best layer and" in html and "Tatoeba accuracy (%, xx\u2192en, layer 8)" in html
    assert "A test (2020)" in html and "25.0" in html  # ours (0.25 x 100) beside the published 30.0


def test_report_names_degenerate_results(tmp_path):
    """An undefined convert rate prints its piece counts, layer means say how many layers they dropped, and a
    constant model (one piece, unmoved by alpha) and collapsed sentence vectors are flagged beside their numbers;
    a working model is not."""
    import html as html_lib

    import xling.report.language  # noqa: F401  (registers the sections)
    from xling.report.core import render_report

    rows = []
    for model, size in (("bert", 500), ("bert", 900)):
        constant = size == 500
        for d, (s, t) in {"en->xx": ("en", "xa"), "xx->en": ("xa", "en")}.items():
            for layer in (1, 2):
                for a in (0.0, 1.0, 2.0):
                    undefined = constant or (layer == 2 and a == 1.0)
                    rows.append(
                        dict(
                            model=model,
                            size=size,
                            window=32,
                            src=s,
                            tgt=t,
                            pair="en-xa",
                            direction=d,
                            layer=layer,
                            alpha=a,
                            bleu1=5.0,
                            convert_rate=math.nan if undefined else 0.25 * a,
                            n_sentences=3,
                            n_tokens=12,
                            n_src_only=0 if undefined else 6,
                            n_tgt_only=0 if undefined else 2,
                            n_shared=12 if undefined else 4,
                            n_neither=0,
                            distinct_predictions=1 if constant else 7,
                            changed_share=0.0 if constant or a == 0 else 0.5,
                            bleu_unit="wordpieces",
                            mean_stat="token",
                            mean_source="store",
                            flag="one token repeated: 'ab' is 100.0% of 12 output pieces"
                            if constant and a > 0
                            else None,
                        )
                    )
    tatoeba = pd.DataFrame(
        [
            dict(
                model="bert",
                size=size,
                window=32,
                lang="xa",
                pair="en-xa",
                direction=d,
                layer=layer,
                variant=v,
                accuracy=0.1,
                n_queries=10,
                n_candidates=10,
                vector_spread=0.0 if size == 500 else 0.3,
                mds_alpha=1.0,
                mean_stat="token",
            )
            for size in (500, 900)
            for d in ("en->xx", "xx->en")
            for layer in (1, 2)
            for v in ("original", "zero_mean", "mds")
        ]
    )
    config = {
        "run": "t",
        "languages": ["en", "xa"],
        "data": {"source": "synthetic"},
        "models": ["bert"],
        "windows": [32],
        "language": {"sentence_retrieval": {"layer": 2}},
    }
    render_report(
        {"token_translation": pd.DataFrame(rows), "tatoeba": tatoeba},
        config,
        tmp_path / "r.html",
        tmp_path / "figures",
        paper_results=tmp_path / "none.yaml",
    )
    html = html_lib.unescape((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "undefined: 0 source-only, 0 target-only, 12 shared output pieces" in html
    assert html.count("constant predictions: one output piece whatever the input") == 2  # both directions of 500
    assert html.count("predictions do not depend on α") == 2
    # the degenerate cells of Table 1, each reason once: the findings flag every α of a model with one distinct
    # prediction (xling.report.flags: the table shows the findings' own flags), α 0 included
    assert html.count("every α: one token repeated") == 2
    assert "undefined at every layer" in html  # the constant model's means over layers
    assert "1 of 2" in html  # the working model at alpha 1: layer 2 undefined, left out of the mean
    assert html.count("xa: collapsed vectors: spread 0.000 < 0.001") == 6  # 3 variants x 2 direction tables
    assert html.count(">none<") >= 2  # the working model: no flag in either table


def test_table1_flags_list_each_reason_once_with_its_alphas_in_order():
    """The cells shown come in the order their best layers won; the flags name the alphas sorted."""
    from xling.report.language import _cell_flags

    cells = pd.DataFrame(
        {
            "flag": [
                "one token repeated: 'da' is 96%",
                None,
                "one token repeated: 'da' is 100%; at or below chance: 0.0",
            ]
        },
        index=[3.0, 0.0, -1.0],
    )
    assert _cell_flags(cells, "") == "α -1, 3: one token repeated; α -1: at or below chance"
    assert _cell_flags(cells.assign(flag="one token repeated: 'da' is 96%"), "") == "every α: one token repeated"
    assert _cell_flags(cells.iloc[[1]], "constant predictions") == "constant predictions"
