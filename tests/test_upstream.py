"""Upstream parsers, each on a tiny fixture in its upstream layout made here (archives included)."""

import io
import json
import logging
import tarfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xling.data import upstream as U
from xling.data.formats import (
    FormatError,
    read_bucc,
    read_conllu,
    read_corpus,
    read_dictionary,
    read_parallel,
    read_tatoeba,
    read_wikiann,
    read_xnli,
)


def make_tar(path: Path, members: dict[str, str | bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            data = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def make_zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def cut_in_half(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def filler(n: int) -> str:
    """Incompressible-ish text so archives cut in half lose real content."""
    return "".join(f"{i} {i * 7919 % 10007} {i * 104729 % 1000003}\n" for i in range(n))


# ============================================================================ archives
@pytest.mark.parametrize("kind", ["tar.gz", "tar.bz2", "tar", "zip"])
def test_truncated_archive_names_the_file(tmp_path, kind):
    members = {"dir/a.txt": filler(20000), "dir/b.txt": filler(20000)}
    path = tmp_path / f"release.{kind}"
    if kind == "zip":
        make_zip(path, members)
    else:
        make_tar(path, members, {"tar.gz": "w:gz", "tar.bz2": "w:bz2", "tar": "w"}[kind])
    with U.archive_errors(path):
        assert sum(1 for name, h in U.iter_members(path, lambda n: True) for _ in U.member_lines(h, name)) == 40000
    cut_in_half(path)
    with pytest.raises(FormatError, match=rf"^{path}: truncated or corrupt archive"):
        with U.archive_errors(path):
            for name, handle in U.iter_members(path, lambda n: True):
                for _ in U.member_lines(handle, name):
                    pass


def test_member_lines_bad_utf8_names_line():
    data = io.BytesIO(b"one\ntwo\r\nthr\xffee\n")
    with pytest.raises(FormatError, match=r"^x\[m\]:3: not valid UTF-8"):
        list(U.member_lines(data, "x[m]"))
    assert list(U.member_lines(io.BytesIO(b"\xef\xbb\xbfa\r\nb"), "m")) == [(1, "a"), (2, "b")]


# ============================================================================ Wikipedia
ARTICLES = [
    "Alpha is a letter. It comes first.\n\nHistory\n\nThe letter is old. Dr. Smith used it!\n"
    "* a list item without an end\nShort.",
    "Beta\n\nBeta is the second letter. It is Greek.",
    "See also",
    "Gamma is third. Delta is fourth. Epsilon is fifth.",
]


def make_wiki_shard(path: Path, texts: list[str], row_group_size: int = 2) -> Path:
    table = pa.table(
        {
            "id": [str(i) for i in range(len(texts))],
            "url": [f"https://example.org/{i}" for i in range(len(texts))],
            "title": [f"T{i}" for i in range(len(texts))],
            "text": texts,
        }
    )
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def test_wikipedia_parquet_to_corpus(tmp_path):
    shards = [
        make_wiki_shard(tmp_path / "train-00000.parquet", ARTICLES[:2]),
        make_wiki_shard(tmp_path / "train-00001.parquet", ARTICLES[2:]),
    ]
    out = tmp_path / "corpus" / "en.txt"
    counts = U.wikipedia_to_corpus(shards, out, "en", n_sentences=None)
    assert read_corpus(out) == [
        ["Alpha is a letter.", "It comes first.", "The letter is old.", "Dr. Smith used it!"],
        ["Beta is the second letter.", "It is Greek."],
        ["Gamma is third.", "Delta is fourth.", "Epsilon is fifth."],
    ]
    assert counts["articles"] == 4 and counts["documents"] == 3 and counts["sentences"] == 9
    assert counts["empty_articles"] == 1  # "See also"
    assert counts["short_lines"] == 4  # History, Short., Beta, See also
    assert counts["unpunctuated_lines"] == 1  # the list item


def test_wikipedia_reads_only_what_it_needs(tmp_path):
    shards = [make_wiki_shard(tmp_path / "a.parquet", ARTICLES), tmp_path / "does-not-exist.parquet"]
    out = tmp_path / "en.txt"
    counts = U.wikipedia_to_corpus(shards, out, "en", n_sentences=5)
    assert counts["articles"] == 2 and counts["sentences"] == 6  # whole documents: 4 + 2
    assert len(read_corpus(out)) == 2


def test_wikipedia_too_few_sentences_is_an_error(tmp_path):
    shard = make_wiki_shard(tmp_path / "a.parquet", ARTICLES)
    out = tmp_path / "en.txt"
    with pytest.raises(ValueError, match=r"en: got 9 sentences but 100 were asked"):
        U.wikipedia_to_corpus([shard], out, "en", n_sentences=100)
    assert not out.exists()
    counts = U.wikipedia_to_corpus([shard], out, "en", n_sentences=10, min_fraction=0.8)
    assert counts["sentences"] == 9


def test_wikipedia_thai_uses_length_not_punctuation(tmp_path):
    text = "ประวัติ\n\nวันนี้อากาศดีมาก ฉันจะไปเที่ยวทะเล เธอจะไปด้วยไหม"
    shard = make_wiki_shard(tmp_path / "th.parquet", [text])
    out = tmp_path / "th.txt"
    counts = U.wikipedia_to_corpus([shard], out, "th", n_sentences=None)
    assert read_corpus(out) == [["วันนี้อากาศดีมาก", "ฉันจะไปเที่ยวทะเล", "เธอจะไปด้วยไหม"]]
    assert counts["short_lines"] == 1


def test_wikipedia_bad_inputs(tmp_path):
    shard = make_wiki_shard(tmp_path / "a.parquet", ARTICLES)
    with pytest.raises(ValueError, match="no sentence splitter"):
        U.wikipedia_to_corpus([shard], tmp_path / "x.txt", "xx", 10)
    pq.write_table(pa.table({"id": ["1"], "body": ["A b."]}), tmp_path / "other.parquet")
    with pytest.raises(FormatError, match=r"other.parquet: no 'text' column"):
        U.wikipedia_to_corpus([tmp_path / "other.parquet"], tmp_path / "x.txt", "en", 10)
    cut_in_half(shard)
    with pytest.raises(FormatError, match=rf"^{shard}: cannot read Parquet"):
        U.wikipedia_to_corpus([shard], tmp_path / "x.txt", "en", 10)
    assert not (tmp_path / "x.txt").exists()


# ============================================================================ Leipzig
LEIPZIG = "1\tFirst sentence.\n2\tSecond  one.\n3\t\n4\tFourth.\n"


@pytest.mark.parametrize("archived", [False, True])
def test_leipzig_to_corpus(tmp_path, archived):
    if archived:
        source = make_tar(
            tmp_path / "eng_wikipedia_2016_10K.tar.gz",
            {
                "eng_wikipedia_2016_10K/eng_wikipedia_2016_10K-words.txt": "1\tx\t3\n",
                "eng_wikipedia_2016_10K/eng_wikipedia_2016_10K-sentences.txt": LEIPZIG,
            },
        )
    else:
        source = tmp_path / "eng_wikipedia_2016_10K-sentences.txt"
        source.write_text(LEIPZIG, encoding="utf-8")
    out = tmp_path / "en.txt"
    counts = U.leipzig_to_corpus(source, out)
    assert read_corpus(out) == [["First sentence."], ["Second one."], ["Fourth."]]
    assert counts == {"sentences": 3, "empty": 1}
    assert U.leipzig_to_corpus(source, out, n_sentences=2)["sentences"] == 2


def test_leipzig_malformed(tmp_path):
    source = tmp_path / "x-sentences.txt"
    source.write_text("1\tok.\nno id here\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{source}:2: expected 'id<TAB>sentence'"):
        U.leipzig_to_corpus(source, tmp_path / "out.txt")


# ============================================================================ Europarl
EP_EN = "Resumption of the session\n\nI declare the session resumed, on Friday.\nOnly English.\nOK.\n"
EP_FR = "Reprise de la session\n\nJe déclare la session reprise, vendredi.\n\nD'accord.\n"


def test_europarl_from_tgz(tmp_path):
    source = make_tar(tmp_path / "fr-en.tgz", {"europarl-v7.fr-en.en": EP_EN, "europarl-v7.fr-en.fr": EP_FR})
    out_en, out_fr = tmp_path / "parallel" / "en-fr.en", tmp_path / "parallel" / "en-fr.fr"
    counts = U.europarl_to_parallel(
        source, "fr", out_en, out_fr, corpus_out={"fr": tmp_path / "corpus" / "fr.txt"}, doc_lines=2
    )
    assert counts == {"pairs": 3, "empty_pairs": 2}
    assert read_parallel(out_en, out_fr) == [
        ("Resumption of the session", "Reprise de la session"),
        ("I declare the session resumed , on Friday .", "Je déclare la session reprise , vendredi ."),
        ("OK .", "D'accord ."),
    ]
    assert read_corpus(tmp_path / "corpus" / "fr.txt") == [
        ["Reprise de la session", "Je déclare la session reprise, vendredi."],
        ["D'accord."],
    ]
    assert not list(out_en.parent.glob(".europarl.*"))  # temporary extraction removed


def test_europarl_plain_files_untokenized_and_length_mismatch(tmp_path):
    en = tmp_path / "europarl-v7.de-en.en"
    de = tmp_path / "europarl-v7.de-en.de"
    en.write_text("A b, c.\nD.\n", encoding="utf-8")
    de.write_text("X y, z.\n", encoding="utf-8")
    with pytest.raises(FormatError) as err:
        U.europarl_to_parallel((en, de), "de", tmp_path / "o.en", tmp_path / "o.de")
    assert str(err.value).startswith(f"{en}: 2 lines, but {de}: 1 lines")
    de.write_text("X y, z.\nW.", encoding="utf-8")  # no final newline, as in the real files
    U.europarl_to_parallel(tmp_path, "de", tmp_path / "o.en", tmp_path / "o.de", tokenize=None)
    assert read_parallel(tmp_path / "o.en", tmp_path / "o.de") == [("A b, c.", "X y, z."), ("D.", "W.")]
    with pytest.raises(FormatError, match="missing europarl-v7.es-en.en"):
        U.europarl_to_parallel(tmp_path, "es", tmp_path / "o.en", tmp_path / "o.es")


def test_europarl_sample_staged_as_one_side_with_english_beside_it(tmp_path):
    """The shared copies are samples under their own names (europarl-v7.fr-en.head3000.fr): data.paths names the
    foreign side, the fetch links it into the cache, and the English side is read from beside the real file."""
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "sample.head3.en").write_text(EP_EN, encoding="utf-8")
    (staged / "sample.head3.fr").write_text(EP_FR, encoding="utf-8")
    link = tmp_path / "cache" / "sample.head3.fr"
    link.parent.mkdir()
    link.symlink_to(staged / "sample.head3.fr")
    counts = U.europarl_to_parallel(link, "fr", tmp_path / "o.en", tmp_path / "o.fr", tokenize=None)
    assert counts == {"pairs": 3, "empty_pairs": 2}
    assert read_parallel(tmp_path / "o.en", tmp_path / "o.fr")[0] == (
        "Resumption of the session",
        "Reprise de la session",
    )
    with pytest.raises(FormatError, match=r"must end in \.es"):
        U.europarl_to_parallel(link, "es", tmp_path / "o.en", tmp_path / "o.es")
    (staged / "sample.head3.en").unlink()
    with pytest.raises(FormatError, match="no English side"):
        U.europarl_to_parallel(link, "fr", tmp_path / "o.en", tmp_path / "o.fr")


# ============================================================================ OPUS (MultiUN, Tanzil)
def test_opus_moses_zip_en_second_and_en_first(tmp_path):
    """OPUS names the pair in alphabetical order: ar-en (English second) and en-zh (English first)."""
    source = make_zip(
        tmp_path / "ar-en.txt.zip",
        {
            "README": "MultiUN ...",
            "LICENSE": "...",
            "MultiUN.ar-en.ar": "مرحبا، العالم.\n\nسطر ثالث\n",
            "MultiUN.ar-en.en": "Hello, world.\nOnly English.\nThird line\n",
        },
    )
    out_en, out_ar = tmp_path / "parallel" / "en-ar.en", tmp_path / "parallel" / "en-ar.ar"
    counts = U.opus_to_parallel(source, "MultiUN", "ar", out_en, out_ar)
    assert counts == {"pairs": 2, "empty_pairs": 1}
    assert read_parallel(out_en, out_ar) == [("Hello , world .", "مرحبا، العالم ."), ("Third line", "سطر ثالث")]
    assert not list(out_en.parent.glob(".multiun.*"))  # temporary extraction removed
    source = make_zip(
        tmp_path / "en-zh.txt.zip",
        {"MultiUN.en-zh.en": "The UN, 2010.\nTwo.\n", "MultiUN.en-zh.zh": "联合国，2010年。\n二。\n"},
    )
    U.opus_to_parallel(source, "MultiUN", "zh", tmp_path / "o.en", tmp_path / "o.zh", tokenize_xx="zh", max_pairs=1)
    # sacrebleu's zh tokenizer: every Chinese character (and punctuation) a token of its own
    assert read_parallel(tmp_path / "o.en", tmp_path / "o.zh") == [("The UN , 2010 .", "联 合 国 ， 2010 年 。")]


def test_opus_missing_member_or_unequal_sides_name_the_archive(tmp_path):
    source = make_zip(tmp_path / "en-ur.txt.zip", {"Tanzil.en-ur.en": "In the name of God\n"})
    with pytest.raises(FormatError, match=r"en-ur\.txt\.zip: missing Tanzil\.en-ur\.ur"):
        U.opus_to_parallel(source, "Tanzil", "ur", tmp_path / "o.en", tmp_path / "o.ur")
    source = make_zip(tmp_path / "en-ur2.txt.zip", {"Tanzil.en-ur.en": "a\nb\n", "Tanzil.en-ur.ur": "x\n"})
    with pytest.raises(FormatError, match=r"Tanzil\.en-ur\.en\]: 2 lines, but .*Tanzil\.en-ur\.ur\]: 1 lines"):
        U.opus_to_parallel(source, "Tanzil", "ur", tmp_path / "o.en", tmp_path / "o.ur")


# ============================================================================ UD
def conllu(words: list[str], upos: str = "NOUN") -> str:
    lines = [f"# text = {' '.join(words)}"]
    for i, word in enumerate(words, start=1):
        lines.append(f"{i}\t{word}\t{word}\t{upos}\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_")
    return "\n".join(lines) + "\n\n"


UD_RELEASE = {
    "ud-treebanks-v2.5/UD_English-EWT/en_ewt-ud-train.conllu": conllu(["a", "b"]) * 3,
    "ud-treebanks-v2.5/UD_English-EWT/en_ewt-ud-dev.conllu": conllu(["c"]),
    "ud-treebanks-v2.5/UD_English-EWT/en_ewt-ud-test.conllu": conllu(["d"]) * 2,
    "ud-treebanks-v2.5/UD_English-EWT/README.md": "not data",
    "ud-treebanks-v2.5/UD_English-GUM/en_gum-ud-test.conllu": conllu(["g"]).rstrip("\n"),  # no final blank line
    "ud-treebanks-v2.5/UD_Thai-PUD/th_pud-ud-test.conllu": conllu(["ก"]) * 4,
    "ud-treebanks-v2.5/UD_German-GSD/de_gsd-ud-test.conllu": conllu(["x"]),
}


def test_ud_release_to_canonical(tmp_path):
    source = make_tar(tmp_path / "ud-treebanks-v2.5.tgz", UD_RELEASE)
    out = tmp_path / "ud"
    counts = U.ud_to_canonical(
        source, out, {"en": "UD_English-EWT", "th": ["UD_Thai-PUD"]}, {"en": ["train", "dev", "test"], "th": ["test"]}
    )
    assert counts["en.train"] == 3 and counts["en.dev"] == 1 and counts["en.test"] == 2
    assert counts["th.test"] == 4
    assert sorted(p.name for p in out.iterdir()) == [
        "en.dev.conllu",
        "en.test.conllu",
        "en.train.conllu",
        "th.test.conllu",
    ]
    assert (
        out.joinpath("en.train.conllu").read_text()
        == UD_RELEASE["ud-treebanks-v2.5/UD_English-EWT/en_ewt-ud-train.conllu"]
    )  # verbatim copy
    assert [t["form"] for t in read_conllu(out / "th.test.conllu")[0]] == ["ก"]


def test_ud_concatenates_listed_treebanks_in_order(tmp_path):
    source = make_tar(tmp_path / "ud.tgz", UD_RELEASE)
    counts = U.ud_to_canonical(source, tmp_path, {"en": ["UD_English-GUM", "UD_English-EWT"]}, ["test"])
    assert counts["en.test"] == 3
    assert [s[0]["form"] for s in read_conllu(tmp_path / "en.test.conllu")] == ["g", "d", "d"]


def test_ud_missing_split_and_bad_member(tmp_path):
    source = make_tar(tmp_path / "ud.tgz", UD_RELEASE)
    with pytest.raises(FormatError, match=r"no train file for th in UD_Thai-PUD \(found: UD_Thai-PUD.test\)"):
        U.ud_to_canonical(source, tmp_path / "ud", {"th": "UD_Thai-PUD"})
    broken = dict(UD_RELEASE)
    broken["ud-treebanks-v2.5/UD_German-GSD/de_gsd-ud-test.conllu"] = conllu(["x"], upos="NOUNS")
    source = make_tar(tmp_path / "broken.tgz", broken)
    with pytest.raises(
        FormatError,
        match=r"broken.tgz\[ud-treebanks-v2.5/UD_German-GSD/de_gsd-ud-test.conllu\]"
        r":2: unknown UPOS 'NOUNS'",
    ):
        U.ud_to_canonical(source, tmp_path / "ud", {"de": "UD_German-GSD"}, ["test"])
    assert not (tmp_path / "ud" / "de.test.conllu").exists()


def test_ud_truncated_release(tmp_path):
    big = dict(UD_RELEASE)
    big["ud-treebanks-v2.5/UD_Zulu-X/zu_x-ud-test.conllu"] = filler(30000)
    source = cut_in_half(make_tar(tmp_path / "ud.tgz", big))
    with pytest.raises(FormatError, match=rf"^{source}: truncated or corrupt archive"):
        U.ud_to_canonical(source, tmp_path / "ud", {"zu": "UD_Zulu-Y"}, ["test"])


# ============================================================================ MUSE
def test_muse_full_train_test(tmp_path):
    src = tmp_path / "dictionaries"
    src.mkdir()
    (src / "en-de.txt").write_text("the der\nthe\tdie\ncat Katze\n", encoding="utf-8")
    (src / "en-de.0-5000.txt").write_text("the der\n", encoding="utf-8")
    (src / "en-de.5000-6500.txt").write_text("cat\tKatze\n", encoding="utf-8")
    out = {split: tmp_path / f"dict/en-de.{split}.txt" for split in ("full", "train", "test")}
    assert U.muse_to_canonical(src, "de", out) == {"full": 3, "train": 1, "test": 1}
    assert out["full"].read_text() == "the der\nthe die\ncat Katze\n"
    assert read_dictionary(out["test"]) == [("cat", "Katze")]
    archive = make_tar(
        tmp_path / "dictionaries.tar.gz", {f"dictionaries/{p.name}": p.read_text() for p in src.iterdir()}
    )
    assert U.muse_to_canonical(archive, "de", {"train": tmp_path / "t.txt"}) == {"train": 1}
    (src / "en-de.5000-6500.txt").write_text("cat Katze\nbroken\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"en-de.5000-6500.txt:2: expected 2 fields"):
        U.muse_to_canonical(src, "de", out)
    with pytest.raises(FormatError, match=r"missing en-fr.txt"):
        U.muse_to_canonical(src, "fr", {"full": tmp_path / "x.txt"})
    with pytest.raises(ValueError, match="unknown MUSE split"):
        U.muse_to_canonical(src, "de", {"dev": tmp_path / "x.txt"})


def test_muse_annotated_union(tmp_path, caplog):
    src = tmp_path / "annotated"
    src.mkdir()
    (src / "en-es.5000-6500.o.txt").write_text("the el\nof de\n", encoding="utf-8")
    (src / "en-es.5000-6500.pn.txt").write_text("paris parís\nthe el\n", encoding="utf-8")
    out = tmp_path / "en-es.test.txt"
    counts = U.muse_annotated_to_test(src, "es", out)
    assert read_dictionary(out) == [("the", "el"), ("of", "de"), ("paris", "parís")]
    assert counts["pairs"] == 3 and counts["repeated"] == 1
    assert "no categories a, n, nw, v" in caplog.text
    with pytest.raises(FormatError, match="none of"):
        U.muse_annotated_to_test(src, "de", out)


# ============================================================================ XNLI, MultiNLI
XNLI_HEADER = (
    "language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
    "sentence2_parse\tsentence1\tsentence2\tpromptID\tpairID\tgenre"
)


def xnli_row(lang, label, s1, s2):
    return f"{lang}\t{label}\t( x )\t( y )\t(ROOT x)\t(ROOT y)\t{s1}\t{s2}\t1\t1\tfiction"


def make_xnli_zip(path, rows_dev, rows_test=None):
    members = {"XNLI-1.0/xnli.dev.tsv": "\n".join([XNLI_HEADER] + rows_dev) + "\n", "XNLI-1.0/xnli.dev.jsonl": "{}\n"}
    if rows_test is not None:
        members["XNLI-1.0/xnli.test.tsv"] = "\n".join([XNLI_HEADER] + rows_test) + "\n"
    return make_zip(path, members)


def test_xnli_zip_to_canonical(tmp_path):
    rows = [
        xnli_row("en", "entailment", "A man sleeps.", "A person rests."),
        xnli_row("de", "contradictory", "Ein Mann.", "Keine  Frau."),
        xnli_row("zh", "neutral", "一个人。", "两个人。"),
        xnli_row("en", "contradictory", "Yes.", "No."),
    ]
    source = make_xnli_zip(tmp_path / "XNLI-1.0.zip", rows, rows[:2])
    counts = U.xnli_to_canonical(source, tmp_path / "xnli", ["en", "de"])
    assert counts["dev-en"] == 2 and counts["dev-de"] == 1 and counts["dev-other_languages_skipped"] == 1
    assert counts["test-en"] == 1
    assert read_xnli(tmp_path / "xnli/dev-en.tsv") == [
        ("A man sleeps.", "A person rests.", "entailment"),
        ("Yes.", "No.", "contradiction"),
    ]
    assert read_xnli(tmp_path / "xnli/dev-de.tsv") == [("Ein Mann.", "Keine Frau.", "contradiction")]


def test_xnli_errors(tmp_path):
    source = make_xnli_zip(tmp_path / "x.zip", [xnli_row("en", "entailment", "A.", "B.")])
    with pytest.raises(FormatError, match=r"xnli.dev.tsv has no rows for fr"):
        U.xnli_to_canonical(source, tmp_path / "o", ["en", "fr"], ["dev"])
    with pytest.raises(FormatError, match=r"missing xnli.test.tsv"):
        U.xnli_to_canonical(source, tmp_path / "o", ["en"], ["test"])
    source = make_xnli_zip(
        tmp_path / "y.zip", [xnli_row("en", "entailment", "A.", "B."), xnli_row("en", "sure", "A.", "B.")]
    )
    with pytest.raises(FormatError, match=r"y.zip\[XNLI-1.0/xnli.dev.tsv\]:3: unknown label 'sure'"):
        U.xnli_to_canonical(source, tmp_path / "o", ["en"], ["dev"])
    assert not (tmp_path / "o" / "dev-en.tsv").exists()
    source = make_xnli_zip(tmp_path / "z.zip", [xnli_row("en", "entailment", "A.", "B.") + "\textra"])
    with pytest.raises(FormatError, match=r":2: 12 fields, header has 11"):
        U.xnli_to_canonical(source, tmp_path / "o", ["en"], ["dev"])
    big = make_xnli_zip(
        tmp_path / "big.zip", [xnli_row("en", "entailment", line, "B.") for line in filler(20000).splitlines()]
    )
    cut_in_half(big)
    with pytest.raises(FormatError, match=rf"^{big}: truncated or corrupt archive"):
        U.xnli_to_canonical(big, tmp_path / "o", ["en"], ["dev"])


def test_multinli_train(tmp_path, caplog):
    rows = [
        {"gold_label": "neutral", "sentence1": "Conceptually cream\tskimming.", "sentence2": "Product."},
        {"gold_label": "-", "sentence1": "x", "sentence2": "y"},
        {"gold_label": "contradiction", "sentence1": "A.", "sentence2": "B.", "genre": "gov"},
    ]
    source = make_zip(
        tmp_path / "multinli_1.0.zip",
        {
            "multinli_1.0/multinli_1.0_dev_matched.jsonl": json.dumps(rows[0]) + "\n",
            "multinli_1.0/multinli_1.0_train.jsonl": "".join(json.dumps(r) + "\n" for r in rows),
        },
    )
    out = tmp_path / "train-en.tsv"
    assert U.multinli_to_train(source, out) == {"pairs": 2, "no_gold_label": 1}
    assert read_xnli(out) == [("Conceptually cream skimming.", "Product.", "neutral"), ("A.", "B.", "contradiction")]
    plain = tmp_path / "multinli_1.0_train.jsonl"
    plain.write_text(json.dumps(rows[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{plain}:2: not a MultiNLI JSON row"):
        U.multinli_to_train(plain, out)


def test_xtreme_copy_normalises_and_validates(tmp_path):
    src = tmp_path / "dev-ur.tsv"
    src.write_text("A.\tB.\tcontradictory\n", encoding="utf-8")
    U.xtreme_xnli_copy(src, tmp_path / "out" / "dev-ur.tsv")
    assert (tmp_path / "out" / "dev-ur.tsv").read_text() == "A.\tB.\tcontradiction\n"
    src.write_text("A.\tB.\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{src}:1:"):
        U.xtreme_xnli_copy(src, tmp_path / "out" / "x.tsv")


# ============================================================================ WikiAnn
PANX_EN = "en:Sioux\tB-ORG\nen:Falls\tI-ORG\nen:(\tO\nen:10:30\tO\n\n\nen:Ana\tB-PER\n"
PANX_ZH = "zh:北京\tB-LOC\nzh:是\tO\n\n"


def test_wikiann_zip_to_canonical(tmp_path, panx_zip, caplog):
    source = panx_zip(
        tmp_path / "panx_dataset.zip",
        {
            "en": {"train": PANX_EN, "dev": PANX_EN, "test": "en:x\tO\n", "extra": "en:y\tO\n"},
            "zh": {"dev": PANX_ZH, "test": PANX_ZH, "train": PANX_ZH},
            "de": {"train": "not even read\n"},
        },
    )
    with caplog.at_level(logging.INFO, logger="xling.data.upstream"):
        counts = U.wikiann_to_canonical(source, tmp_path / "wikiann", ["en", "zh"])
    assert counts == {
        "en.train": 2,
        "en.dev": 2,
        "en.test": 1,
        "en.other_members_skipped": 1,
        "zh.dev": 1,
        "zh.test": 1,
        "zh.train": 1,
    }
    # the prefix stripped up to its own colon only; one blank line ends each sentence
    assert (tmp_path / "wikiann" / "en.train.tsv").read_text() == (
        "Sioux\tB-ORG\nFalls\tI-ORG\n(\tO\n10:30\tO\n\nAna\tB-PER\n\n"
    )
    assert read_wikiann(tmp_path / "wikiann" / "zh.test.tsv") == [(["北京", "是"], ["B-LOC", "O"])]
    assert not (tmp_path / "wikiann" / "de.train.tsv").exists()
    assert "en.other_members_skipped=1" in caplog.text


def test_wikiann_from_a_directory_of_language_archives(tmp_path, panx_zip):
    source = panx_zip(tmp_path / "panx.zip", {"en": {s: PANX_EN for s in ("train", "dev", "test")}})
    unpacked = tmp_path / "panx_dataset"
    with zipfile.ZipFile(source) as zf:
        zf.extractall(unpacked)
    U.wikiann_to_canonical(unpacked, tmp_path / "out", ["en"])
    assert len(read_wikiann(tmp_path / "out" / "en.dev.tsv")) == 2


@pytest.mark.parametrize(
    "member, message",
    [
        ("en:Paris\tB-MISC\n", r"\[en.tar.gz\]\[test\]:1: unknown tag 'B-MISC'"),
        ("en:a\tO\nfr:Paris\tB-LOC\n", r"\[en.tar.gz\]\[test\]:2: token 'fr:Paris' lacks the 'en:' prefix"),
        ("en:Paris B-LOC\n", r"\[en.tar.gz\]\[test\]:1: expected 2 tab-separated fields"),
        ("en:\tO\n", r"\[en.tar.gz\]\[test\]:1: empty token"),
        ("\n\n", r"\[en.tar.gz\]\[test\]: no sentences"),
    ],
)
def test_wikiann_bad_member_names_archive_member_and_line(tmp_path, panx_zip, member, message):
    source = panx_zip(tmp_path / "p.zip", {"en": {"train": PANX_EN, "dev": PANX_EN, "test": member}})
    with pytest.raises(FormatError, match=rf"^{source}" + message):
        U.wikiann_to_canonical(source, tmp_path / "out", ["en"])


def test_wikiann_missing_language_split_or_truncated(tmp_path, panx_zip):
    source = panx_zip(tmp_path / "p.zip", {"en": {"train": PANX_EN, "test": PANX_EN}})
    with pytest.raises(FormatError, match=r"p.zip: no fr.tar.gz, sw.tar.gz"):
        U.wikiann_to_canonical(source, tmp_path / "out", ["en", "fr", "sw"])
    with pytest.raises(FormatError, match=r"p.zip\[en.tar.gz\]: no dev member \(found: train, test\)"):
        U.wikiann_to_canonical(source, tmp_path / "out", ["en"])
    U.wikiann_to_canonical(source, tmp_path / "out", ["en"], ["train", "test"])  # what a caller asks for
    big = panx_zip(tmp_path / "big.zip", {"en": {"train": "".join(f"en:{w}\tO\n" for w in filler(20000).split())}})
    cut_in_half(big)
    with pytest.raises(FormatError, match=rf"^{big}.*truncated or corrupt archive"):
        U.wikiann_to_canonical(big, tmp_path / "out", ["en"], ["train"])


# ============================================================================ Tatoeba
def test_tatoeba_renames_to_study_codes(tmp_path):
    src = tmp_path / "v1"
    src.mkdir()
    (src / "tatoeba.cmn-eng.cmn").write_text("你好。\n再见。\n", encoding="utf-8")
    (src / "tatoeba.cmn-eng.eng").write_text("Hello.\nBye.\n", encoding="utf-8")
    assert U.tatoeba_to_canonical(src, "zh", tmp_path / "tatoeba")["pairs"] == 2
    assert read_tatoeba(tmp_path / "tatoeba/tatoeba.zh-eng.zh", tmp_path / "tatoeba/tatoeba.zh-eng.eng") == [
        ("你好。", "Hello."),
        ("再见。", "Bye."),
    ]
    laser = make_zip(
        tmp_path / "master.zip", {f"LASER-master/data/tatoeba/v1/{p.name}": p.read_text() for p in src.iterdir()}
    )
    assert U.tatoeba_to_canonical(laser, "zh", tmp_path / "t2")["pairs"] == 2


def test_tatoeba_errors(tmp_path):
    with pytest.raises(ValueError, match="no Tatoeba code for language 'xx'"):
        U.tatoeba_to_canonical(tmp_path, "xx", tmp_path / "out")
    assert U.tatoeba_code("sw") == "swh" and set(U.TATOEBA_CODES) >= {"ar", "th", "ur", "zh"}
    (tmp_path / "tatoeba.deu-eng.deu").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"missing tatoeba.deu-eng.eng"):
        U.tatoeba_to_canonical(tmp_path, "de", tmp_path / "out")
    (tmp_path / "tatoeba.deu-eng.eng").write_text("a\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"tatoeba.deu-eng.deu: 2 lines, but .*tatoeba.deu-eng.eng: 1 lines"):
        U.tatoeba_to_canonical(tmp_path, "de", tmp_path / "out")


# ============================================================================ BUCC
def bucc_members(split: str, gold: str) -> dict[str, str]:
    base = f"bucc2018/de-en/de-en.{split}"
    return {
        f"{base}.de": "de-000000001\tHallo Welt.\nde-000000002\tTschüss.\n",
        f"{base}.en": "en-000000001\tBye.\nen-000000002\tHello world.\nen-000000003\tNoise.\n",
        f"{base}.gold": gold,
    }


def test_bucc_tar_bz2_renames_splits(tmp_path):
    gold = "de-000000001\ten-000000002\nde-000000002\ten-000000001\n"
    sample = make_tar(tmp_path / "bucc2018-de-en.sample-gold.tar.bz2", bucc_members("sample", gold), "w:bz2")
    training = make_tar(tmp_path / "bucc2018-de-en.training-gold.tar.bz2", bucc_members("training", gold), "w:bz2")
    out = tmp_path / "bucc"
    assert U.bucc_to_canonical(sample, "de", out) == {"dev.de": 2, "dev.en": 3, "dev.gold": 2}
    assert U.bucc_to_canonical(training, "de", out)["test.gold"] == 2
    src, en, pairs = read_bucc(out / "de-en.dev.de", out / "de-en.dev.en", out / "de-en.dev.gold")
    assert pairs == {("de-000000001", "en-000000002"), ("de-000000002", "en-000000001")}
    assert en["en-000000003"] == "Noise."
    assert (out / "de-en.test.de").exists()


def test_bucc_errors(tmp_path):
    bad_gold = make_tar(tmp_path / "a.tar.bz2", bucc_members("sample", "de-000000001\ten-000000099\n"), "w:bz2")
    with pytest.raises(FormatError, match=r"de-en.sample.gold\]:1: unknown id 'en-000000099'"):
        U.bucc_to_canonical(bad_gold, "de", tmp_path / "out")
    with pytest.raises(FormatError, match=r"no BUCC fr-en files"):
        U.bucc_to_canonical(bad_gold, "fr", tmp_path / "out")
    members = bucc_members("sample", "")
    members["bucc2018/de-en/de-en.sample.en"] = "de-000000001\tWrong side.\n"
    wrong = make_tar(tmp_path / "b.tar.bz2", members, "w:bz2")
    with pytest.raises(FormatError, match=r"de-en.sample.en\]:1: expected 'en-<number><TAB>sentence'"):
        U.bucc_to_canonical(wrong, "de", tmp_path / "out")
    members = bucc_members("sample", "")
    del members["bucc2018/de-en/de-en.sample.gold"]
    with pytest.raises(FormatError, match=r"BUCC de-en sample lacks its gold file"):
        U.bucc_to_canonical(make_tar(tmp_path / "c.tar.bz2", members, "w:bz2"), "de", tmp_path / "out")
    big = bucc_members("sample", "")
    big["bucc2018/de-en/de-en.sample.de"] = "".join(
        f"de-{i:09d}\t{line}\n" for i, line in enumerate(filler(30000).splitlines())
    )
    cut = cut_in_half(make_tar(tmp_path / "d.tar.bz2", big, "w:bz2"))
    with pytest.raises(FormatError, match=rf"^{cut}: truncated or corrupt archive"):
        U.bucc_to_canonical(cut, "de", tmp_path / "out")


# ============================================================================ mBERT vocabulary
VOCAB = "[PAD]\n[unused1]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n!\nthe\n##s\n"


def test_mbert_vocab_from_zip_and_plain(tmp_path, caplog):
    source = make_zip(
        tmp_path / "multi_cased_L-12_H-768_A-12.zip",
        {"multi_cased_L-12_H-768_A-12/bert_config.json": "{}", "multi_cased_L-12_H-768_A-12/vocab.txt": VOCAB},
    )
    out = tmp_path / "vocab.txt"
    assert U.mbert_vocab(source, out, expected_size=9)["tokens"] == 9
    assert out.read_text() == VOCAB
    with pytest.raises(FormatError, match=r"9 tokens, expected 119547"):
        U.mbert_vocab(source, out)
    with caplog.at_level(logging.WARNING):
        U.mbert_vocab(source, out, strict=False)
    assert "expected 119547" in caplog.text
    plain = tmp_path / "vocab-cased.txt"
    plain.write_text(VOCAB.replace("[MASK]\n", ""), encoding="utf-8")
    with pytest.raises(FormatError, match=r"special tokens missing: \[MASK\]"):
        U.mbert_vocab(plain, out, expected_size=None)
    plain.write_text(VOCAB + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{plain}:10: empty token"):
        U.mbert_vocab(plain, out, expected_size=None)
