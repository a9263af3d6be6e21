"""Empty and undecodable inputs are errors that name the file (and the exact line): a reader that finds nothing
raises instead of handing a step zero items, whose scores would then look like results."""

from __future__ import annotations

import gzip

import pytest

from xling.data.formats import (
    FormatError,
    read_alignments,
    read_bucc,
    read_bucc_sentences,
    read_corpus,
    read_parallel,
    read_tatoeba,
)
from xling.data.upstream.tatoeba import tatoeba_to_canonical


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("bad_line", [1, 2, 2000, 4321])
def test_bad_utf8_byte_is_reported_at_its_line(tmp_path, gz, bad_line):
    lines = [f"sentence number {i} with some words ü".encode() for i in range(1, 5001)]
    lines[bad_line - 1] = b"fine until \xff here"
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / ("c.txt.gz" if gz else "c.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(FormatError, match=rf"^{path}:{bad_line}: not valid UTF-8 \(invalid start byte at byte 11"):
        read_corpus(path)


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_empty_parallel_files_name_the_file(tmp_path):
    a, b = _write(tmp_path / "a.txt", ""), _write(tmp_path / "b.txt", "")
    for reader in (read_parallel, read_tatoeba):
        with pytest.raises(FormatError, match=rf"^{a}: no sentence pairs"):
            reader(a, b)


def test_empty_alignment_file_names_the_file(tmp_path):
    path = _write(tmp_path / "links.txt", "")
    with pytest.raises(FormatError, match=rf"^{path}: no alignment lines"):
        read_alignments(path)
    assert read_alignments(_write(tmp_path / "one.txt", "\n")) == [set()]  # one pair without links is data


def test_empty_bucc_sentences_and_gold_name_the_file(tmp_path):
    src, en = _write(tmp_path / "fr.txt", "fr-1\tBonjour\n"), _write(tmp_path / "en.txt", "en-1\tHello\n")
    empty = _write(tmp_path / "empty.txt", "")
    with pytest.raises(FormatError, match=rf"^{empty}: no sentences"):
        read_bucc_sentences(empty)
    with pytest.raises(FormatError, match=rf"^{empty}: no gold pairs"):
        read_bucc(src, en, empty)
    assert read_bucc(src, en, _write(tmp_path / "gold.txt", "fr-1\ten-1\n"))[2] == {("fr-1", "en-1")}
    assert read_bucc(src, en)[2] == set()  # no gold asked for: the mining-only case


def test_tatoeba_upstream_with_no_pairs_writes_nothing(tmp_path):
    release = tmp_path / "laser"
    release.mkdir()
    _write(release / "tatoeba.fra-eng.fra", "")
    _write(release / "tatoeba.fra-eng.eng", "")
    with pytest.raises(FormatError, match="tatoeba.fra-eng.fra.*no sentence pairs"):
        tatoeba_to_canonical(release, "fr", tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
