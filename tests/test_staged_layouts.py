"""Copies staged in a layout other than the release (XTREME's per-language XNLI and WikiAnn files, UD treebank
folders, MUSE's full dictionary alone): which layout a directory holds, what an offline run can read, and each
layout's reader on small files written here in the upstream layout."""

import gzip
from pathlib import Path

import pytest

from xling.data import upstream as U
from xling.data.formats import FormatError, read_conllu, read_dictionary, read_wikiann, read_xnli
from xling.data.sources import Sources
from xling.data.staged import STAND_INS, stand_ins, staged_layout, ud_folder_files, ud_folder_splits
from xling.data.upstream.muse import MUSE_RANKS

LABELS = ("entailment", "neutral", "contradiction")


def write_xnli_dev(folder: Path, lang: str, n_premises: int = 10, hypotheses: int = 3) -> list[str]:
    """XTREME's dev-{lang}.tsv: premise<TAB>hypothesis<TAB>label, each premise on `hypotheses` consecutive rows."""
    rows = [
        f"{lang} premise {p}\t{lang} hypothesis {p}.{h}\t{LABELS[(p + h) % 3]}"
        for p in range(n_premises)
        for h in range(hypotheses)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"dev-{lang}.tsv").write_text("\n".join(rows) + "\n", "utf-8")
    return rows


def test_xnli_stand_in_cuts_the_parallel_dev_rows_by_premise(tmp_path):
    src = tmp_path / "xnli"
    write_xnli_dev(src, "en")
    write_xnli_dev(src, "fr")
    out = {(part, lang): tmp_path / f"{part}-{lang}.tsv" for part in ("train", "dev", "test") for lang in ("en", "fr")}
    counts = U.xtreme_xnli_stand_in(src, out)
    assert counts == {"train-en": 18, "dev-en": 6, "test-en": 6, "train-fr": 18, "dev-fr": 6, "test-fr": 6}
    premises = {part: {row[0].split()[-1] for row in read_xnli(out[part, "en"])} for part in ("train", "dev", "test")}
    assert premises["train"].isdisjoint(premises["dev"] | premises["test"]) and premises["dev"].isdisjoint(
        premises["test"]
    )  # a premise's rows stay together: no test premise is trained on
    assert len(premises["train"] | premises["dev"] | premises["test"]) == 10
    for part in ("train", "dev", "test"):  # the same rows in every language (the translations of each other)
        en, fr = read_xnli(out[part, "en"]), read_xnli(out[part, "fr"])
        assert [row[1].replace("en ", "") for row in en] == [row[1].replace("fr ", "") for row in fr]
    again = tmp_path / "again.tsv"
    U.xtreme_xnli_stand_in(src, {("test", "fr"): again})  # one output alone: the same seeded cut
    assert again.read_text() == out["test", "fr"].read_text()


def test_xnli_stand_in_errors_name_file_and_line(tmp_path):
    src = tmp_path / "xnli"
    write_xnli_dev(src, "en")
    rows = write_xnli_dev(src, "de")
    rows[4] = rows[4].rsplit("\t", 1)[0] + "\tunsure"
    (src / "dev-de.tsv").write_text("\n".join(rows) + "\n", "utf-8")
    with pytest.raises(FormatError, match=r"dev-de.tsv:5: unknown label 'unsure'"):
        U.xtreme_xnli_stand_in(src, {("dev", "de"): tmp_path / "dev-de.tsv"})
    rows = write_xnli_dev(src, "ru")
    rows[1], rows[2] = rows[2], rows[1]  # another order: not the parallel dev set
    (src / "dev-ru.tsv").write_text("\n".join(rows) + "\n", "utf-8")
    with pytest.raises(FormatError, match=r"dev-ru.tsv:2: label 'contradiction', .*dev-en.tsv has 'neutral'"):
        U.xtreme_xnli_stand_in(src, {("dev", "ru"): tmp_path / "dev-ru.tsv"})
    write_xnli_dev(src, "es", n_premises=9)
    with pytest.raises(FormatError, match=r"dev-es.tsv: 27 rows, .*dev-en.tsv has 30"):
        U.xtreme_xnli_stand_in(src, {("dev", "es"): tmp_path / "dev-es.tsv"})
    assert not (tmp_path / "dev-es.tsv").exists()


def write_panx(path: Path, sentences: list[list[tuple[str, str]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("".join(f"{tok}\t{tag}\n" for tok, tag in s) + "\n" for s in sentences), "utf-8")


def test_wikiann_stand_in_copies_the_pivot_train_and_cuts_each_dev_set(tmp_path):
    src, out = tmp_path / "panx", tmp_path / "wikiann"
    write_panx(src / "train-en.tsv", [[("Paris", "B-LOC"), ("is", "O")], [("Ann", "B-PER")]])
    dev = [[(f"w{i}", "O"), ("Lyon", "B-LOC")] for i in range(6)]
    write_panx(src / "dev-en.tsv", dev[:2])
    write_panx(src / "dev-fr.tsv", dev)
    counts = U.xtreme_wikiann_stand_in(src, out, ["en", "fr"])
    assert counts == {"en.train": 2, "en.dev": 1, "en.test": 1, "fr.dev": 3, "fr.test": 3}
    assert read_wikiann(out / "en.train.tsv") == [(["Paris", "is"], ["B-LOC", "O"]), (["Ann"], ["B-PER"])]
    fr = read_wikiann(out / "fr.dev.tsv") + read_wikiann(out / "fr.test.tsv")
    assert sorted(tokens[0] for tokens, _ in fr) == [f"w{i}" for i in range(6)]  # each sentence once
    assert not (out / "fr.train.tsv").exists()  # XTREME's layout stages the pivot's train only


def test_wikiann_stand_in_errors_name_file_and_line(tmp_path):
    src = tmp_path / "panx"
    write_panx(src / "train-en.tsv", [[("Paris", "B-LOC")]])
    write_panx(src / "dev-de.tsv", [[("Berlin", "B-CITY")], [("x", "O")]])
    with pytest.raises(FormatError, match=r"dev-de.tsv:1: unknown tag 'B-CITY'"):
        U.xtreme_wikiann_stand_in(src, tmp_path / "out", ["de"])
    write_panx(src / "dev-sw.tsv", [[("x", "O")]])
    with pytest.raises(FormatError, match=r"dev-sw.tsv: 1 sentence\(s\), too few for dev and test"):
        U.xtreme_wikiann_stand_in(src, tmp_path / "out", ["sw"])


def test_muse_full_dictionary_alone_stands_in_for_train_and_test_by_frequency_rank(tmp_path):
    last = MUSE_RANKS["test"][1]
    lines = [f"w{i} t{i}" for i in range(last + 10)]
    lines.insert(1, "w0 t0bis")  # a source word's pairs are contiguous
    src = tmp_path / "muse"
    src.mkdir()
    with gzip.open(src / "en-fr.txt.gz", "wt", encoding="utf-8") as handle:  # staged gzipped, read as en-fr.txt
        handle.write("\n".join(lines) + "\n")
    U.muse_full_to_split(src, "fr", "train", tmp_path / "train.txt")
    U.muse_full_to_split(src, "fr", "test", tmp_path / "test.txt")
    train, test = read_dictionary(tmp_path / "train.txt"), read_dictionary(tmp_path / "test.txt")
    assert train[:3] == [("w0", "t0"), ("w0", "t0bis"), ("w1", "t1")] and len(train) == MUSE_RANKS["train"][1] + 1
    assert test[0] == ("w5000", "t5000") and test[-1] == (f"w{last - 1}", f"t{last - 1}") and len(test) == 1500
    (src / "en-fr.txt.gz").unlink()
    (src / "en-fr.txt").write_text("the le\nand et\nthe la\n", "utf-8")
    with pytest.raises(FormatError, match=r"en-fr.txt:3: source word 'the' seen before .*not in frequency order"):
        U.muse_full_to_split(src, "fr", "train", tmp_path / "bad.txt")


def conllu_sentence(words: list[str], upos: str = "NOUN") -> str:
    lines = [
        f"{i}\t{w}\t{w}\t{upos}\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
        for i, w in enumerate(words, start=1)
    ]
    return "\n".join(lines) + "\n\n"


@pytest.fixture
def ud_folders(tmp_path) -> Path:
    """The staged UD layout: one folder per treebank, a gzipped train (as UD_English-EWT's) and PUD beside."""
    root = tmp_path / "ud"
    (root / "UD_English-EWT").mkdir(parents=True)
    with gzip.open(root / "UD_English-EWT/en_ewt-ud-train.conllu.gz", "wt", encoding="utf-8") as handle:
        handle.write(conllu_sentence(["a", "b"]) * 3)
    (root / "UD_English-EWT/en_ewt-ud-dev.conllu").write_text(conllu_sentence(["c"]), "utf-8")
    (root / "UD_English-EWT/en_ewt-ud-test.conllu").write_text(conllu_sentence(["d"]) * 2, "utf-8")
    (root / "UD_French-GSD").mkdir()
    (root / "UD_French-GSD/fr_gsd-ud-test.conllu").write_text(conllu_sentence(["le"]), "utf-8")
    (root / "pud").mkdir()
    (root / "pud/fr_pud-ud-test.conllu").write_text(conllu_sentence(["x"]), "utf-8")
    return root


def test_ud_treebank_folders_are_read_where_they_lie(tmp_path, ud_folders):
    data = {"staged": str(tmp_path), "paths": {"ud": "ud"}}
    assert staged_layout(data, "ud") == "folders"
    treebanks, splits = {"en": ["UD_English-EWT"], "fr": ["UD_French-GSD"]}, {"en": ["train", "test"], "fr": ["test"]}
    files = ud_folder_files(data, treebanks, splits)
    assert [Path(f).name for f in files] == [
        "en_ewt-ud-train.conllu.gz",
        "en_ewt-ud-test.conllu",
        "fr_gsd-ud-test.conllu",
    ]
    counts = U.ud_to_canonical(ud_folders, tmp_path / "out", treebanks, splits)
    assert counts["en.train"] == 3 and counts["fr.test"] == 1
    assert [t["form"] for t in read_conllu(tmp_path / "out/en.train.conllu")[0]] == ["a", "b"]
    with pytest.raises(FileNotFoundError, match=r"no dev file for fr in .*UD_French-GSD"):
        ud_folder_files(data, {"fr": ["UD_French-GSD"]}, {"fr": ["dev"]})
    (ud_folders / "UD_French-GSD/fr_gsd-ud-test.conllu").write_text(conllu_sentence(["le"], upos="NOM"), "utf-8")
    with pytest.raises(FormatError, match=r"UD_French-GSD/fr_gsd-ud-test.conllu:1: unknown UPOS 'NOM'"):
        U.ud_to_canonical(ud_folders, tmp_path / "out", {"fr": ["UD_French-GSD"]}, {"fr": ["test"]})


def test_offline_run_reads_only_what_is_staged(tmp_path, ud_folders):
    write_xnli_dev(tmp_path / "xnli", "en")
    write_xnli_dev(tmp_path / "xnli", "fr")
    write_panx(tmp_path / "wikiann/dev-fr.tsv", [[("x", "O")]])
    (tmp_path / "europarl").mkdir()
    (tmp_path / "europarl/sample.fr").write_text("bonjour\n", "utf-8")
    paths = {"xnli": "xnli", "wikiann": "wikiann", "ud": "ud", "europarl": {"fr": {"path": "europarl/sample.fr"}}}
    staged = Sources({"source": "real", "staged": str(tmp_path), "paths": paths, "offline": True})
    assert staged.available("xnli", ["en", "fr", "de"]) == ["en", "fr"]  # the dev files the directory has
    assert staged.available("wikiann", ["en", "fr", "de"]) == ["fr"]
    assert staged.available("ud", ["en", "fr", "de"]) == ["en", "fr"]  # UD_German-GSD: no folder
    assert staged.parallel_sources(["fr", "de", "ar"]) == {"fr": "europarl"}  # nothing is downloaded instead
    needed = staged.needed(["en", "fr"])
    assert needed["xnli"] == needed["wikiann"] == needed["ud"] == []  # read where they lie, not fetched
    online = Sources({"source": "real", "staged": str(tmp_path), "paths": paths})
    assert online.parallel_sources(["fr", "de", "ar"]) == {"fr": "europarl", "de": "europarl", "ar": "multiun"}
    assert online.available("xnli", ["en", "de"]) == ["en"]  # a directory in another layout stands for the release
    assert ud_folder_splits(online.config, ["UD_English-EWT"], ["train", "dev", "test"]) == ["train", "dev", "test"]
    assert ud_folder_splits(online.config, ["UD_French-GSD"], ["train", "dev", "test"]) == ["test"]
    assert staged_layout({"staged": str(tmp_path), "paths": {"xnli": "europarl"}}, "xnli") is None


def test_stand_ins_name_what_the_run_reads_in_a_stand_in_form(tmp_path):
    write_xnli_dev(tmp_path / "xnli", "en")
    full = {"fr": {"path": "muse/full/en-fr.txt.gz", "sha256": None}}
    run = Sources({"source": "real", "staged": str(tmp_path), "paths": {"xnli": "xnli", "muse": {"test": full}}})
    assert stand_ins(run) == {"xnli": STAND_INS["xnli"], "muse": STAND_INS["muse"]}
    release = {"fr": {"path": "muse/en-fr.5000-6500.txt", "sha256": None}}  # MUSE's own test split: no stand-in
    assert stand_ins(Sources({"source": "real", "paths": {"muse": {"test": release}}})) == {}
