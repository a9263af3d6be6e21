"""Canonical-format readers: good input parses, every kind of bad input fails naming file and line."""

import gzip
import logging
import re

import pytest

from xling.data.formats import (
    FormatError,
    iter_corpus_documents,
    read_alignments,
    read_bucc,
    read_conllu,
    read_corpus,
    read_dictionary,
    read_parallel,
    read_tatoeba,
    read_wikiann,
    read_xnli,
)


def write(path, text, gz=False):
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- corpus
def test_corpus_documents_and_tolerated_extra_blank_lines(tmp_path, caplog):
    path = write(tmp_path / "c.txt", "\na b.\nc d.\n\n\ne f.\n")
    with caplog.at_level(logging.INFO, logger="xling.data.formats"):
        docs = read_corpus(path)
    assert docs == [["a b.", "c d."], ["e f."]]
    assert "2 extra empty lines" in caplog.text


def test_corpus_gz_and_streaming(tmp_path):
    path = write(tmp_path / "c.txt.gz", "x\n\ny\nz\n", gz=True)
    assert list(iter_corpus_documents(path)) == [["x"], ["y", "z"]]


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_corpus_is_an_error(tmp_path, text):
    path = write(tmp_path / "c.txt", text)
    with pytest.raises(FormatError, match=rf"^{path}: empty corpus"):
        read_corpus(path)


def test_corpus_not_utf8_names_line(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"ok\nfine\n\xff\xfe broken\n")
    with pytest.raises(FormatError, match=rf"^{path}:\d+: not valid UTF-8"):
        read_corpus(path)


def test_truncated_gz_is_a_format_error(tmp_path):
    path = write(tmp_path / "c.txt.gz", "".join(f"sentence {i} with some words\n" for i in range(5000)), gz=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match=rf"^{path}:\d+: cannot read the file"):
        read_corpus(path)


# --------------------------------------------------------------------------- dictionary
def test_dictionary_space_and_tab(tmp_path):
    path = write(tmp_path / "d.txt", "the der\nthe die\ncat\tKatze\n  dog   Hund \n\n")
    assert read_dictionary(path) == [("the", "der"), ("the", "die"), ("cat", "Katze"), ("dog", "Hund")]


@pytest.mark.parametrize("line", ["lonely", "a b c", "a\tb\tc"])
def test_dictionary_line_without_two_fields(tmp_path, line):
    path = write(tmp_path / "d.txt", f"the der\n{line}\n")
    with pytest.raises(FormatError, match=rf"^{path}:2: expected 2 fields"):
        read_dictionary(path)


# --------------------------------------------------------------------------- parallel, Tatoeba
def test_parallel_pairs(tmp_path):
    en = write(tmp_path / "p.en", "a b\nc\n")
    fr = write(tmp_path / "p.fr", "x y\nz\n")
    assert read_parallel(en, fr) == [("a b", "x y"), ("c", "z")]
    assert read_tatoeba(en, fr) == [("a b", "x y"), ("c", "z")]


def test_parallel_different_lengths_names_both_files_and_counts(tmp_path):
    en = write(tmp_path / "p.en", "a\nb\nc\n")
    fr = write(tmp_path / "p.fr", "x\ny\n")
    with pytest.raises(FormatError) as err:
        read_parallel(en, fr)
    message = str(err.value)
    assert message.startswith(f"{en}: 3 lines") and f"{fr}: 2 lines" in message
    with pytest.raises(FormatError, match="3 lines"):
        read_tatoeba(en, fr)


# --------------------------------------------------------------------------- alignments
def test_alignments_sure_and_possible(tmp_path):
    path = write(tmp_path / "a.align", "0-0 1p2 2-1\n\n3-3\n")
    assert read_alignments(path) == [{(0, 0), (1, 2), (2, 1)}, set(), {(3, 3)}]
    assert read_alignments(path, possible=False) == [{(0, 0), (2, 1)}, set(), {(3, 3)}]


@pytest.mark.parametrize("garbage", ["0-", "a-1", "-1-2", "1:2", "1-2-3", "1x2", "0--1"])
def test_alignment_garbage(tmp_path, garbage):
    path = write(tmp_path / "a.align", f"0-0\n1-1 {garbage}\n")
    with pytest.raises(FormatError, match=rf"^{path}:2: malformed alignment link"):
        read_alignments(path)


# --------------------------------------------------------------------------- CoNLL-U
CONLLU = """# newdoc id = d1
# sent_id = s1
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\tSpaceAfter=No
4.1\tknew\tknow\tVERB\tVBD\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = s2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_
"""


def test_conllu_parses_and_counts_skipped_lines(tmp_path, caplog):
    path = write(tmp_path / "x.conllu", CONLLU)
    with caplog.at_level(logging.INFO, logger="xling.data.formats"):
        sentences = read_conllu(path)
    assert [len(s) for s in sentences] == [5, 1]
    first = sentences[0]
    assert [t["form"] for t in first] == ["I", "do", "n't", "know", "."]
    assert [t["upos"] for t in first] == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert [t["head"] for t in first] == [4, 4, 4, 0, 4]
    assert first[3]["feats"] == {"VerbForm": "Inf"}
    assert first.metadata["sent_id"] == "s1" and first.metadata["text"] == "I don't know."
    assert "1 multiword tokens" in caplog.text and "1 empty nodes" in caplog.text
    assert "4 comment lines" in caplog.text
    kept = read_conllu(path, keep_multiword=True, keep_empty=True)[0]
    assert [t["id"] for t in kept] == [1, (2, "-", 3), 2, 3, 4, (4, ".", 1), 5]


def test_conllu_first_sentences_are_parsed_no_further(tmp_path, caplog):
    """read_conllu(first=N) stops after N sentences: a malformed line after them is not read (a run that trains on
    the first N never sees it), and the whole file still fails on it. The log still counts what was read and
    skipped, and says where it stopped."""
    lines = CONLLU.splitlines()
    yes = next(i for i, line in enumerate(lines) if line.startswith("1\tYes"))
    lines[yes] = "1\tYes"
    path = write(tmp_path / "x.conllu", "\n".join(lines) + "\n")
    with caplog.at_level(logging.INFO, logger="xling.data.formats"):
        (first,) = read_conllu(path, first=1)
    assert "1 sentences, 5 words (the first 1: read no further); skipped" in caplog.text
    assert "1 multiword tokens" in caplog.text
    assert [t["form"] for t in first] == ["I", "do", "n't", "know", "."]
    with pytest.raises(FormatError, match=rf"^{path}:{yes + 1}: expected 10 tab-separated columns"):
        read_conllu(path)
    assert len(read_conllu(write(tmp_path / "y.conllu", CONLLU), first=5)) == 2


def test_conllu_gz(tmp_path):
    path = write(tmp_path / "x.conllu.gz", CONLLU, gz=True)
    assert len(read_conllu(path)) == 2


def _break_line(lineno, replacement):
    lines = CONLLU.splitlines()
    lines[lineno - 1] = replacement
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "lineno, replacement, message",
    [
        (4, "1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_", "expected 10 tab-separated columns, got 9"),
        (4, "1 I I PRON PRP _ 4 nsubj _ _", "expected 10 tab-separated columns, got 1"),
        (4, "x\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_", "bad ID 'x'"),
        (4, "2\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_", "word ID 2 out of sequence"),
        (4, "1\tI\tI\tPRONOUN\tPRP\t_\t4\tnsubj\t_\t_", "unknown UPOS 'PRONOUN'"),
        (4, "1\tI\tI\t_\tPRP\t_\t4\tnsubj\t_\t_", "unknown UPOS '_'"),
        (4, "1\tI\tI\tPRON\tPRP\t_\tfour\tnsubj\t_\t_", "HEAD 'four' is not a non-negative integer"),
        (4, "1\tI\tI\tPRON\tPRP\t_\t_\tnsubj\t_\t_", "HEAD '_' is not a non-negative integer"),
        (4, "1\tI\tI\tPRON\tPRP\t_\t9\tnsubj\t_\t_", "HEAD 9 points outside the sentence"),
        (4, "1\tI\tI\tPRON\tPRP\t_\t4\t_\t_\t_", "DEPREL is empty"),
        (6, "# a comment in the middle", "comment line after the token lines"),
    ],
)
def test_malformed_conllu_line(tmp_path, lineno, replacement, message):
    path = write(tmp_path / "x.conllu", _break_line(lineno, replacement))
    with pytest.raises(FormatError) as err:
        read_conllu(path)
    assert str(err.value).startswith(f"{path}:{lineno}: ")
    assert message in str(err.value)


def test_conllu_sentence_without_words(tmp_path):
    path = write(tmp_path / "x.conllu", CONLLU + "\n# sent_id = s3\n# text = nothing\n")
    with pytest.raises(FormatError, match=rf"^{path}:15: sentence without words"):
        read_conllu(path)


def test_conllu_empty_file(tmp_path):
    path = write(tmp_path / "x.conllu", "\n")
    with pytest.raises(FormatError, match=rf"^{path}: no sentences"):
        read_conllu(path)


# --------------------------------------------------------------------------- XNLI
def test_xnli_rows_and_contradictory(tmp_path):
    path = write(tmp_path / "dev-en.tsv", "A man.\tA person.\tentailment\nX.\tY.\tcontradictory\nP.\tQ.\tneutral\n")
    assert read_xnli(path) == [
        ("A man.", "A person.", "entailment"),
        ("X.", "Y.", "contradiction"),
        ("P.", "Q.", "neutral"),
    ]


def test_xnli_bad_label(tmp_path):
    path = write(tmp_path / "dev-en.tsv", "A.\tB.\tentailment\nA.\tB.\tmaybe\n")
    with pytest.raises(FormatError, match=rf"^{path}:2: unknown label 'maybe'"):
        read_xnli(path)


def test_xnli_wrong_field_count(tmp_path):
    path = write(tmp_path / "dev-en.tsv", "A.\tB.\n")
    with pytest.raises(FormatError, match=rf"^{path}:1: expected 3 tab-separated fields"):
        read_xnli(path)


# --------------------------------------------------------------------------- WikiAnn
def test_wikiann_sentences_tags_and_counts(tmp_path, caplog):
    path = write(
        tmp_path / "en.dev.tsv",
        "\nSioux\tB-ORG\nFalls\tI-ORG\nArena\tI-ORG\n(\tO\n,\tI-LOC\n\n\n"
        "Ana\tB-PER\nin\tO\nNew York\tB-LOC\nCity\tI-LOC\nIBM\tB-ORG\n",
    )
    with caplog.at_level(logging.INFO, logger="xling.data.formats"):
        sentences = read_wikiann(path)
    assert sentences == [
        (["Sioux", "Falls", "Arena", "(", ","], ["B-ORG", "I-ORG", "I-ORG", "O", "I-LOC"]),
        (["Ana", "in", "New York", "City", "IBM"], ["B-PER", "O", "B-LOC", "I-LOC", "B-ORG"]),
    ]
    # an I- after O is kept (silver data has it) and counted as a span of its own
    assert "2 sentences, 10 tokens, spans PER 1, ORG 2, LOC 2 (1 starting with I-)" in caplog.text
    assert "skipped 2 extra empty lines" in caplog.text


@pytest.mark.parametrize(
    "line, message",
    [
        ("Paris", "expected 2 tab-separated fields (token, tag), got 1"),
        ("Paris\tB-LOC\tx", "expected 2 tab-separated fields (token, tag), got 3"),
        ("Paris\tB-MISC", "unknown tag 'B-MISC'"),
        ("Paris\tb-loc", "unknown tag 'b-loc'"),
        ("Paris\t", "unknown tag ''"),
        (" \tO", "empty token"),
        ("\tO", "empty token"),
    ],
)
def test_wikiann_bad_line_names_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "fr.test.tsv", f"Le\tO\n\n{line}\n")
    with pytest.raises(FormatError, match="^" + re.escape(f"{path}:3: {message}")):
        read_wikiann(path)


def test_wikiann_empty_file(tmp_path):
    path = write(tmp_path / "fr.test.tsv", "\n\n")
    with pytest.raises(FormatError, match=rf"^{path}: no sentences"):
        read_wikiann(path)


# --------------------------------------------------------------------------- BUCC
def bucc_files(tmp_path, gold):
    zh = write(tmp_path / "zh-en.dev.zh", "zh-000000001\t你好。\nzh-000000002\t再见。\n")
    en = write(tmp_path / "zh-en.dev.en", "en-000000001\tGoodbye.\nen-000000002\tHello.\nen-000000003\tNoise.\n")
    return zh, en, write(tmp_path / "zh-en.dev.gold", gold)


def test_bucc(tmp_path):
    zh, en, gold = bucc_files(tmp_path, "zh-000000001\ten-000000002\nzh-000000002\ten-000000001\n")
    src, tgt, pairs = read_bucc(zh, en, gold)
    assert src["zh-000000002"] == "再见。" and len(tgt) == 3
    assert pairs == {("zh-000000001", "en-000000002"), ("zh-000000002", "en-000000001")}
    assert read_bucc(zh, en)[2] == set()


@pytest.mark.parametrize(
    "gold, bad", [("zh-000000009\ten-000000001\n", "zh-000000009"), ("zh-000000001\ten-000000042\n", "en-000000042")]
)
def test_bucc_gold_with_unknown_id(tmp_path, gold, bad):
    zh, en, gold_path = bucc_files(tmp_path, gold)
    with pytest.raises(FormatError, match=rf"^{gold_path}:1: unknown id '{bad}'"):
        read_bucc(zh, en, gold_path)


def test_bucc_malformed_and_duplicate_ids(tmp_path):
    zh = write(tmp_path / "x.zh", "zh-1\ta\nno tab here\n")
    en = write(tmp_path / "x.en", "en-1\tb\n")
    with pytest.raises(FormatError, match=rf"^{zh}:2: expected 'id<TAB>sentence'"):
        read_bucc(zh, en)
    write(zh, "zh-1\ta\nzh-1\tb\n")
    with pytest.raises(FormatError, match=rf"^{zh}:2: duplicate id 'zh-1'"):
        read_bucc(zh, en)
