"""Tests for xling.data.corpus: cleaning, deduplication, document structure and nested sampling."""

import random

import pytest

from xling.data.corpus import clean_sentence, prepare, sample


def read_docs(path):
    """Documents of a canonical corpus as lists of sentences (blank line = separator)."""
    text = path.read_text(encoding="utf-8")
    return [block.split("\n") for block in text.strip("\n").split("\n\n")] if text.strip() else []


def test_clean_sentence_nfc_composes_and_keeps_compatibility_characters():
    assert clean_sentence("cafe\u0301") == "caf\u00e9"
    # NFC keeps ligatures and full-width forms (they are distinct characters in mBERT's cased vocabulary)
    assert clean_sentence("\ufb01ne \uff21") == "\ufb01ne \uff21"


def test_clean_sentence_nfkc_folds_compatibility_characters():
    assert clean_sentence("\ufb01ne \uff21\u2460", "NFKC") == "fine A1"
    assert clean_sentence("cafe\u0301", None) == "cafe\u0301"


def test_clean_sentence_whitespace_and_control_characters():
    assert clean_sentence("  a\t b\u00a0\u2003c \r") == "a b c"
    assert clean_sentence("a\x00b\x07c\ufeff") == "abc"
    assert clean_sentence("\x00\x01 \t") == ""
    # zero-width joiner (a format character) is meaningful in Indic scripts and must survive
    assert clean_sentence("\u0915\u094d\u200d\u0937") == "\u0915\u094d\u200d\u0937"


def test_prepare_counts_dedup_and_document_structure(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "First  sentence.\n"
        "Second\tsentence.\n"
        "\n\n\n"  # several blank lines: still one document break
        "First sentence.\n"  # duplicate of doc 1 after whitespace cleanup
        "\x00\x01\n"  # nothing left after cleaning -> empty
        "Cafe\u0301 au lait.\n"
        "   \n"  # whitespace-only line separates documents
        "Café au lait.\n"  # NFC-equal to the decomposed form above -> duplicate
        "Second sentence.\n"  # duplicate -> this whole document becomes empty and is dropped
        "\n"
        "Last one.\n",
        encoding="utf-8",
    )
    out = tmp_path / "out" / "prepared.txt"
    counts = prepare(raw, out)
    assert read_docs(out) == [["First sentence.", "Second sentence."], ["Café au lait."], ["Last one."]]
    assert out.read_text(encoding="utf-8") == "First sentence.\nSecond sentence.\n\nCafé au lait.\n\nLast one.\n"
    assert counts == dict(read=8, kept=4, duplicates=3, empty=1, documents=3, documents_read=4, documents_dropped=1)


def test_prepare_without_dedup_keeps_repeats(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("a b\na b\n\na b\n", encoding="utf-8")
    counts = prepare(raw, tmp_path / "out.txt", dedup=False)
    assert counts["kept"] == 3 and counts["duplicates"] == 0
    assert read_docs(tmp_path / "out.txt") == [["a b", "a b"], ["a b"]]


def test_prepare_nfkc_changes_dedup(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("\ufb01ne\nfine\n", encoding="utf-8")
    assert prepare(raw, tmp_path / "nfc.txt")["kept"] == 2
    assert prepare(raw, tmp_path / "nfkc.txt", normalization="NFKC")["kept"] == 1


def test_prepare_errors(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("\x00\n\n  \n", encoding="utf-8")
    out = tmp_path / "out.txt"
    with pytest.raises(ValueError, match=r"raw\.txt: no sentences left"):
        prepare(raw, out)
    assert not out.exists() and list(tmp_path.iterdir()) == [raw]
    with pytest.raises(ValueError, match="normalization"):
        prepare(raw, out, normalization="NFX")


@pytest.fixture
def corpus(tmp_path):
    """A prepared corpus of 60 documents with 1-7 sentences each; sentence text names doc and index."""
    rng = random.Random(0)
    docs = [[f"doc{d} sentence{s}" for s in range(rng.randint(1, 7))] for d in range(60)]
    path = tmp_path / "prepared.txt"
    path.write_text("\n".join("\n".join(doc) + "\n" for doc in docs), encoding="utf-8")
    return path, docs


def test_sample_exact_count_and_documents_intact(corpus, tmp_path):
    path, docs = corpus
    stats = sample(path, tmp_path / "s.txt", 37, seed=5)
    out = read_docs(tmp_path / "s.txt")
    assert sum(len(d) for d in out) == 37 == stats["sentences"]
    assert stats["documents"] == len(out)
    assert stats["sentences_available"] == sum(len(d) for d in docs)
    by_name = {doc[0].split()[0]: doc for doc in docs}
    names = [d[0].split()[0] for d in out]
    assert len(set(names)) == len(names)  # each document taken at most once
    for doc in out[:-1]:
        assert doc == by_name[doc[0].split()[0]]  # whole documents, in their order
    last = by_name[out[-1][0].split()[0]]
    assert out[-1] == last[: len(out[-1])]  # the last one cut, from its start
    assert stats["cut"] == len(last) - len(out[-1])


def test_sample_is_deterministic_and_nested(corpus, tmp_path):
    path, _ = corpus
    for n in (5, 37, 120):
        sample(path, tmp_path / f"a{n}.txt", n, seed=11)
    sample(path, tmp_path / "again.txt", 37, seed=11)
    sample(path, tmp_path / "other.txt", 37, seed=12)
    small, mid, large = (tmp_path / f"a{n}.txt" for n in (5, 37, 120))
    assert (tmp_path / "again.txt").read_bytes() == mid.read_bytes()
    assert (tmp_path / "other.txt").read_bytes() != mid.read_bytes()
    assert mid.read_bytes().startswith(small.read_bytes())
    assert large.read_bytes().startswith(mid.read_bytes())


def test_sample_whole_corpus_is_a_permutation_of_documents(corpus, tmp_path):
    path, docs = corpus
    total = sum(len(d) for d in docs)
    stats = sample(path, tmp_path / "all.txt", total, seed=1)
    out = read_docs(tmp_path / "all.txt")
    assert stats["cut"] == 0 and stats["documents"] == len(docs)
    assert sorted(map(tuple, out)) == sorted(map(tuple, docs))
    assert out != docs


def test_sample_too_small_corpus_names_file_and_counts(corpus, tmp_path):
    path, docs = corpus
    total = sum(len(d) for d in docs)
    message = rf"prepared\.txt: corpus has {total} sentences in 60 documents, fewer than the 100000 requested"
    with pytest.raises(ValueError, match=message):
        sample(path, tmp_path / "s.txt", 100000, seed=1)
    assert not (tmp_path / "s.txt").exists()
    with pytest.raises(ValueError, match="positive integer"):
        sample(path, tmp_path / "s.txt", 0, seed=1)
