"""Word retrieval by part of speech (xling.evaluate.word_pos): tags from a hand-made CoNLL-U treebank (multiword
tokens, ties) and the MRR of each tag and class, against hand computations."""

import html as html_lib
import re
from pathlib import Path

import pandas as pd
import pytest

from test_report_published import CONFIG, render, word_retrieval, word_retrieval_pos
from xling.data.formats import FormatError
from xling.evaluate.word_pos import mrr_by_pos, word_tags


def conllu(*sentences: list[str]) -> str:
    """CoNLL-U text; each word line 'ID FORM UPOS HEAD' (lemma = form, deprel dep, other columns empty)."""
    blocks = []
    for sentence in sentences:
        lines = []
        for line in sentence:
            tid, form, upos, head = line.split()
            lines.append(
                "\t".join(
                    [
                        tid,
                        form,
                        "_" if "-" in tid else form,
                        upos,
                        "_",
                        "_",
                        head,
                        "_" if "-" in tid else "dep",
                        "_",
                        "_",
                    ]
                )
            )
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


TREEBANK_A = conllu(
    # "du" = de (ADP) + le (DET), both headed by "chat": the first word heading the span is de -> du ADP
    ["1-2 du _ _", "1 de ADP 3", "2 le DET 3", "3 Chat NOUN 4", "4 dort VERB 0", "5 vite ADV 4"],
    # "xy" = x (DET, headed by y inside the span) + y (NOUN, the span's head) -> xy NOUN
    ["1 le DET 2", "2 dort NOUN 0", "3-4 xy _ _", "3 x DET 4", "4 y NOUN 2"],
)
TREEBANK_B = conllu(["1 vite ADJ 2", "2 chat NOUN 0", "3 vite ADJ 2"], ["1 chat NOUN 0"])


@pytest.fixture
def treebanks(tmp_path) -> list[Path]:
    paths = [tmp_path / "en.train.conllu", tmp_path / "en.test.conllu"]
    for path, text in zip(paths, (TREEBANK_A, TREEBANK_B), strict=True):
        path.write_text(text, encoding="utf-8")
    return paths


def test_most_frequent_tag_of_each_surface_word(treebanks):
    tags = word_tags(treebanks).set_index("word")
    expected = {  # word: (tag, occurrences with it, all occurrences)
        "du": ("ADP", 1, 1),
        "xy": ("NOUN", 1, 1),  # multiword tokens: the tag of the word heading the span
        "le": ("DET", 1, 1),  # only outside "du": the words inside a multiword token are not in the text
        "Chat": ("NOUN", 1, 1),
        "chat": ("NOUN", 2, 2),  # case kept without lowercase
        "dort": ("NOUN", 1, 2),  # VERB once, NOUN once: the tie goes to the alphabetically first tag
        "vite": ("ADJ", 2, 3),  # ADV once, ADJ twice
    }
    assert {w: tuple(tags.loc[w, ["upos", "count", "occurrences"]]) for w in tags.index} == expected


def test_tags_do_not_depend_on_file_order_and_follow_lowercasing(treebanks):
    forward = word_tags(treebanks)
    pd.testing.assert_frame_equal(forward, word_tags(treebanks[::-1]))
    lowered = word_tags(treebanks, lowercase=True).set_index("word")
    assert "Chat" not in lowered.index and tuple(lowered.loc["chat", ["upos", "count", "occurrences"]]) == (
        "NOUN",
        3,
        3,
    )


def test_malformed_treebank_names_the_file_and_line(tmp_path):
    bad = tmp_path / "en.dev.conllu"
    bad.write_text(conllu(["1 chat NOUN 0"]).replace("NOUN", "NOUNS"), encoding="utf-8")
    with pytest.raises(FormatError, match=rf"{bad}:1: unknown UPOS 'NOUNS'"):
        word_tags([bad])


def test_mrr_by_tag_and_class_is_the_mean_reciprocal_rank_of_its_queries():
    tags = pd.DataFrame(
        {
            "word": ["cat", "dog", "the", "run", "of"],
            "upos": ["NOUN", "NOUN", "DET", "VERB", "ADP"],
            "count": 1,
            "occurrences": 1,
        }
    )
    rr = {
        0: {"cat": 1.0, "dog": 0.5, "the": 0.25, "run": 1 / 3, "of": 0.2, "zzz": 1.0},
        1: {"cat": 0.5, "dog": 0.5, "the": 1.0, "run": 1.0, "of": 1.0, "zzz": 0.1},
    }
    ranks = pd.DataFrame(
        [
            {
                "layer": layer,
                "word": w,
                "reciprocal_rank": r,
                "above": 0,
                "tied": 1,
                "tied_gold": 1,
                "model": "bert",
                "pair": "en-xa",
                "represent_settings": None,
            }
            for layer, words in rr.items()
            for w, r in words.items()
        ]
    )
    table = mrr_by_pos(ranks, tags, ["NOUN", "VERB", "ADJ", "ADV"])
    assert list(table.columns) == [
        "layer",
        "model",
        "pair",
        "represent_settings",
        "pos",
        "pos_class",
        "mrr",
        "n_queries",
        "ci_low",
        "ci_high",
    ]
    got = {(r.layer, r.pos): (r.pos_class, r.mrr, r.n_queries) for r in table.itertuples()}
    expected = {
        (0, "NOUN"): ("open", 0.75, 2),
        (0, "VERB"): ("open", 1 / 3, 1),
        (0, "DET"): ("closed", 0.25, 1),
        (0, "ADP"): ("closed", 0.2, 1),
        (0, "open"): ("open", (1 + 0.5 + 1 / 3) / 3, 3),
        (0, "closed"): ("closed", (0.25 + 0.2) / 2, 2),
        (0, "untagged"): ("untagged", 1.0, 1),
        (1, "NOUN"): ("open", 0.5, 2),
        (1, "VERB"): ("open", 1.0, 1),
        (1, "DET"): ("closed", 1.0, 1),
        (1, "ADP"): ("closed", 1.0, 1),
        (1, "open"): ("open", 2 / 3, 3),
        (1, "closed"): ("closed", 1.0, 2),
        (1, "untagged"): ("untagged", 0.1, 1),
    }
    assert got.keys() == expected.keys()
    for key, (pos_class, mrr, n) in expected.items():
        assert got[key][0] == pos_class and got[key][1] == pytest.approx(mrr) and got[key][2] == n, key
    assert table["represent_settings"].isna().all()  # a missing setting is kept as a group, not dropped
    # another open and closed class move the tags between the classes, not the tags' own MRR
    closed_nouns = mrr_by_pos(ranks, tags, ["VERB"], ["NOUN", "DET", "ADP"]).set_index(["layer", "pos"])
    assert closed_nouns.loc[(0, "NOUN"), "pos_class"] == "closed"
    assert closed_nouns.loc[(0, "closed"), "mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.2) / 4)
    neither = mrr_by_pos(ranks, tags, ["VERB"]).set_index(["layer", "pos"])  # NOUN in no class by default
    assert neither.loc[(0, "NOUN"), "pos_class"] == "other"
    assert neither.loc[(0, "closed"), "mrr"] == pytest.approx((0.25 + 0.2) / 2)


def test_english_ewt_tags_function_and_content_words(shared_data):
    """The real pivot treebank (EWT dev, from ../shared/data): function words closed, content words open."""
    tags = word_tags([shared_data / "ud/UD_English-EWT/en_ewt-ud-dev.conllu"]).set_index("word")["upos"]
    assert (tags["the"], tags["of"], tags["and"], tags["people"], tags["said"]) == (
        "DET",
        "ADP",
        "CCONJ",
        "NOUN",
        "VERB",
    )


def test_report_shows_table_1_layout_at_the_largest_size(tmp_path):
    """The report section: Table 1's rows per model at the largest size, BERT at the report layer, with the
    tags' source, the closed tags present and the untagged share."""
    html = render(tmp_path, {"word_retrieval": word_retrieval(), "word_retrieval_pos": word_retrieval_pos()}, CONFIG)
    start = html.index("MRR by part of speech (metric cosine, dictionary split test, BERT layer 2)")
    block = html[start : html.index("</table>", start)]
    rows = [
        [
            " ".join(re.sub(r"<[^>]+>", " ", cell).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", block.split("</thead>")[1], flags=re.S)
    ]
    assert [r[:3] for r in rows if r[2] == "closed"] == [
        ["GloVe 12k w128", "0", "closed"],
        ["GloVe 12k w16", "0", "closed"],
        ["BERT 12k w128", "2", "closed"],
        ["BERT 12k w16", "2", "closed"],
    ]
    assert [r[2] for r in rows[:6]] == ["closed", "open", "noun", "verb", "adverb", "adjective"]
    (bert_closed,) = [r for r in rows if r[0] == "BERT 12k w128" and r[2] == "closed"]
    assert bert_closed[3:] == ["0.321 n 10", "0.100 n 10", f"{(0.321 + 0.1) / 2:.3f}"]  # en-de, en-fr, avg
    text = html_lib.unescape(html)
    assert "Tags: UD_English-EWT (train, dev, test), 100 words tagged" in text
    assert "closed class: every other tag (here DET)" in text
    assert "10 per model and pair, 33.3 % of the queries" in text  # one number where the range is one, in %


def test_report_refuses_to_mix_two_settings_in_one_cell(tmp_path):
    pos = word_retrieval_pos()
    tables = {"word_retrieval": word_retrieval(), "word_retrieval_pos": pd.concat([pos, pos.assign(min_count=5)])}
    with pytest.raises(
        ValueError, match="several rows for glove 4000 w128 layer 0 en-de NOUN: they differ in a setting"
    ):
        render(tmp_path, tables, CONFIG)


def test_report_shows_a_checkpoint_at_its_own_layer(tmp_path):
    """A Hugging Face checkpoint (size 0) is shown at the layer the word-retrieval section shows it (counted from
    its own last layer), not at our BERT's layer, which it may not even have."""
    pos, retrieval = word_retrieval_pos(), word_retrieval()

    def checkpoint(df):  # one BERT's rows at one layer, as a checkpoint's layers 2 and 5
        one = df[
            (df["model"] == "bert")
            & (df["window"] == df["window"].max())
            & (df["size"] == df["size"].max())
            & (df["layer"] == 2)
        ]
        return pd.concat([one.assign(model="tiny-ckpt", size=0, window=0, layer=layer) for layer in (2, 5)])

    ckpt_rows, checkpoint_pos = checkpoint(retrieval), checkpoint(pos)
    config = {**CONFIG, "retrieval": {**CONFIG.get("retrieval", {}), "report_layer": -1}}
    html = render(
        tmp_path,
        {"word_retrieval": pd.concat([retrieval, ckpt_rows]), "word_retrieval_pos": pd.concat([pos, checkpoint_pos])},
        config,
    )
    start = html.index("MRR by part of speech (")
    block = html[start : html.index("</table>", start)]
    assert "tiny-ckpt layer 5" in html_lib.unescape(block[:300])
    rows = [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in re.findall(r"<tr>(.*?)</tr>", block, flags=re.S)]
    assert [r.split(" closed")[0] for r in rows if "tiny-ckpt" in r and " closed " in f"{r} "] == ["tiny-ckpt 5"]
