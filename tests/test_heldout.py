"""The BERTs' dev text is held out: no document of it is in any sample up to the largest size."""

import pytest

from xling.data.corpus import sample
from xling.data.heldout import sample_heldout


@pytest.fixture
def prepared(tmp_path):
    """30 documents of 1-6 sentences, each sentence unique (document d, sentence s)."""
    docs = [[f"d{d} s{s}" for s in range(1 + d % 6)] for d in range(30)]
    path = tmp_path / "all.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in docs) + "\n")
    return path, sum(map(len, docs))


def documents(path) -> set[str]:
    return {line.split()[0] for line in path.read_text().splitlines() if line}


def test_heldout_text_shares_no_document_with_the_largest_sample(prepared, tmp_path):
    path, total = prepared
    largest = total - 20
    sample(path, tmp_path / "largest.txt", largest, seed=3)
    sample(path, tmp_path / "small.txt", 10, seed=3)
    counts = sample_heldout(path, tmp_path / "dev.txt", 8, seed=3, disjoint_from=largest)
    dev = (tmp_path / "dev.txt").read_text().splitlines()
    assert counts["sentences"] == 8 == len([line for line in dev if line])
    assert not documents(tmp_path / "dev.txt") & documents(tmp_path / "largest.txt")
    assert not documents(tmp_path / "dev.txt") & documents(tmp_path / "small.txt")
    sample_heldout(path, tmp_path / "again.txt", 8, seed=3, disjoint_from=10)
    assert (tmp_path / "again.txt").read_text() == (tmp_path / "dev.txt").read_text()  # not a function of the size


def test_a_corpus_too_small_for_both_is_an_error(prepared, tmp_path):
    path, total = prepared
    with pytest.raises(ValueError, match="cannot hold"):
        sample_heldout(path, tmp_path / "dev.txt", 10, seed=3, disjoint_from=total - 5)
    with pytest.raises(ValueError, match="documents"):  # enough sentences, but the cut documents would be shared
        sample_heldout(path, tmp_path / "dev.txt", 2, seed=3, disjoint_from=total - 2)
