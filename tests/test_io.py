import gzip

import pytest

from xling import io
from xling.io import atomic_path, atomic_write, read_lines, read_word2vec_binary


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as handle:
            handle.write("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target]
    with atomic_write(target) as handle:
        handle.write("new")
    assert target.read_text() == "new"


def test_atomic_path_creates_parent(tmp_path):
    target = tmp_path / "a" / "b.bin"
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"x")
    assert target.read_bytes() == b"x"


def test_read_lines_numbers_and_gzip(tmp_path):
    plain = tmp_path / "x.txt"
    plain.write_text("a\r\nb\n")
    assert list(read_lines(plain)) == [(1, "a"), (2, "b")]
    packed = tmp_path / "x.txt.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write("é\n")
    assert list(read_lines(packed)) == [(1, "é")]


def test_atomic_outputs_respect_umask(tmp_path):
    import os
    import stat

    from xling import io

    target = tmp_path / "shared.txt"
    with atomic_write(target) as handle:
        handle.write("x")
    mode = stat.S_IMODE(os.stat(target).st_mode)
    assert mode == 0o666 & ~io._UMASK


def test_word2vec_binary_reads_what_gensim_reads(tmp_path):
    """Our reader replaces gensim's in the jobs (a second of start-up): the same keys, in order, and the
    same float32 bytes, multi-byte keys included; a short file fails."""
    import numpy as np
    from gensim.models import KeyedVectors

    keys = ["the", "##s", "ბი", "αβγ", "[UNK]"]
    vectors = np.random.default_rng(0).normal(size=(len(keys), 7)).astype(np.float32)
    kv = KeyedVectors(vector_size=7, dtype=np.float32)
    kv.add_vectors(keys, vectors)
    path = tmp_path / "vectors.bin"
    kv.save_word2vec_format(str(path), binary=True)
    theirs = KeyedVectors.load_word2vec_format(str(path), binary=True)
    ours_keys, ours = read_word2vec_binary(path)
    assert ours_keys == list(theirs.index_to_key) == keys
    assert ours.dtype == np.float32 and ours.tobytes() == theirs.vectors.tobytes()
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(EOFError):
        read_word2vec_binary(path)


def test_a_killed_attempts_temporaries_are_removed_by_the_next(tmp_path):
    """A kill leaves the temporary file (and an extraction folder) in the output's scratch folder; the next
    attempt at that output removes them, and a finished one leaves nothing beside its output."""
    target = tmp_path / "out" / "table.tsv"
    folder = io.scratch_path(target)
    folder.mkdir(parents=True)
    (folder / ".table.tsv.abc123.tmp").write_text("half a table")  # what SIGKILL left
    (folder / "extracted").mkdir()
    (folder / "extracted" / "corpus.txt").write_text("a copy of a corpus")
    with io.atomic_write(target) as handle:
        handle.write("a\tb\n")
    assert target.read_text() == "a\tb\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["table.tsv"]


def test_atomic_path_syncs_before_the_rename(tmp_path, monkeypatch):
    order = []
    real_fsync, real_replace = io.os.fsync, io.os.replace
    monkeypatch.setattr(io.os, "fsync", lambda fd: order.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(io.os, "replace", lambda a, b: order.append("rename") or real_replace(a, b))
    with io.atomic_write(tmp_path / "f.txt") as handle:
        handle.write("x")
    assert order[:2] == ["fsync", "rename"]
