"""Word pairs (xling.data.alignment): tokenization, the intersection and one-to-one links, the splits, the
alignment error rate against hand computations, eflomal's and fast_align's intersection against the gold of
synthetic text and of the real Europarl de-en sample (skipped without ../shared/data), fast_align's links the same
on every run, and the files of each split."""

import numpy as np
import pytest

from xling.data import synthetic
from xling.data.alignment import (
    align_corpus,
    alignment_error,
    directional_links,
    eflomal_links,
    fast_align_links,
    one_to_one,
    read_gold,
    read_split,
    split_indices,
    tokenize,
    word_pairs,
    write_split,
)
from xling.data.formats import FormatError


def test_moses_tokenization_splits_punctuation_and_does_not_escape():
    (words,) = tokenize(["Mr. Smith's car costs 5,000 euros & more."], "en")
    assert words == ["Mr.", "Smith", "'s", "car", "costs", "5,000", "euros", "&", "more", "."]
    assert tokenize(["a  b\tc"], "xa", "whitespace") == [["a", "b", "c"]]
    with pytest.raises(ValueError, match="tokenizer must be one of"):
        tokenize(["a"], "en", "spacy")


def test_intersection_and_one_to_one_by_hand():
    fwd = [{(0, 0), (1, 1), (2, 1), (3, 3)}]  # tgt 1 linked from two source words
    rev = [{(0, 0), (1, 1), (2, 1), (3, 2)}]
    assert word_pairs(fwd, rev) == [{(0, 0)}]  # (1, 1) and (2, 1) share tgt 1; (3, 3) is in one direction only
    assert one_to_one({(0, 0), (0, 1), (2, 2), (3, 2), (4, 4)}) == {(4, 4)}


def test_splits_take_test_then_dev_from_the_end_and_nest_train():
    splits = split_indices(12, test=2, dev=3, train=[4, 2])
    assert splits == {"test": [10, 11], "dev": [7, 8, 9], "train2": [6, 5], "train4": [6, 5, 4, 3]}
    assert splits["train4"][:2] == splits["train2"]
    with pytest.raises(ValueError, match="need 10"):
        split_indices(9, test=2, dev=3, train=[5])


def test_alignment_error_rate_by_hand():
    predicted = [{(0, 0), (1, 1), (2, 3)}, {(0, 1)}]
    sure = [{(0, 0), (1, 2)}, {(0, 1)}]
    possible = [{(1, 1)}, {(1, 1)}]  # sure links count as possible too
    got = alignment_error(predicted, sure, possible)
    # |A| = 4, |S| = 3, |A & S| = 2 ((0,0), (0,1)), |A & P| = 3 ((1,1) as well)
    assert got["precision"] == pytest.approx(3 / 4)
    assert got["recall"] == pytest.approx(2 / 3)
    assert got["aer"] == pytest.approx(1 - (2 + 3) / (4 + 3))
    assert alignment_error([set()], [{(0, 0)}], [set()])["aer"] == 1.0
    with pytest.raises(ValueError, match="undefined"):
        alignment_error([set()], [set()], [set()])


def test_split_files_round_trip_and_bad_links_name_the_line(tmp_path):
    src, tgt, links = [["a", "b"], ["c"]], [["x"], ["y", "z"]], [{(1, 0)}, {(0, 0), (0, 1)}]
    write_split(tmp_path, "test", "en", "xa", src, tgt, links)
    assert (tmp_path / "test.align").read_text() == "1-0\n0-0 0-1\n"
    assert read_split(tmp_path, "test", "en", "xa") == (src, tgt, links)
    (tmp_path / "test.align").write_text("1-0\n0-2\n")
    with pytest.raises(FormatError, match=r"test.align:2: link 0-2 outside"):
        read_split(tmp_path, "test", "en", "xa")


@pytest.fixture(scope="module")
def synthetic_parallel(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    spec = {
        "seed": 3,
        "sentences": 300,
        "concepts": 150,
        "dictionary": {"train": [0, 20], "test": [20, 30]},
        "parallel_sentences": 400,
        "tatoeba_sentences": 10,
        "bucc_sentences": {"dev": 40, "test": 40},
        "ud_sentences": {"train": 10, "dev": 5, "test": 5},
        "xnli_pairs": {"train": 10, "dev": 5, "test": 5},
        "ner_sentences": {"train": 10, "dev": 5, "test": 5},
        "languages": {"xa": {"script": "greek", "order": "SOV", "adjective": "after"}},
    }
    synthetic.generate(spec, ["en", "xa"], out)
    return out / "parallel"


def test_word_pairs_of_synthetic_text_against_its_gold(synthetic_parallel, tmp_path):
    table = align_corpus(
        synthetic_parallel / "en-xa.en",
        synthetic_parallel / "en-xa.xa",
        tmp_path,
        "en",
        "xa",
        tokenizer="moses",
        test=100,
        dev=50,
        train=[100, 250],
        aligner="eflomal",
        gold_path=synthetic_parallel / "en-xa.align",
    )
    rows = table.set_index(["split", "links_from"])
    assert rows.loc[("test", "pairs"), "sentence_pairs"] == 100
    assert rows.loc[("train250", "pairs"), "sentence_pairs"] == 250
    # the intersection trades coverage for precision (Och and Ney 2003), and is precise on this clean text: as
    # precise as the better direction within a point (fast_align: 0.9860 against 0.9864 on test)
    for split in ("test", "dev", "train250"):
        assert (
            rows.loc[(split, "pairs"), "precision"]
            > max(rows.loc[(split, "forward"), "precision"], rows.loc[(split, "reverse"), "precision"]) - 0.01
        )
        assert rows.loc[(split, "pairs"), "links"] < rows.loc[(split, "forward"), "links"]
        assert rows.loc[(split, "pairs"), "aer"] < 0.2
    # the files: the last 100 lines are test, train100 is train250's first 100 pairs, links are one-to-one
    lines = (synthetic_parallel / "en-xa.en").read_text().splitlines()
    assert (tmp_path / "test.en").read_text().splitlines() == lines[-100:]
    assert (tmp_path / "dev.en").read_text().splitlines() == lines[-150:-100]
    assert (tmp_path / "train250.en").read_text().splitlines() == lines[-151:-401:-1]
    small, large = read_split(tmp_path, "train100", "en", "xa"), read_split(tmp_path, "train250", "en", "xa")
    assert all(a == b[:100] for a, b in zip(small, large, strict=True))
    gold_sure, gold_possible = read_gold(synthetic_parallel / "en-xa.align")
    _, _, test_links = read_split(tmp_path, "test", "en", "xa")
    assert alignment_error(test_links, gold_sure[-100:], gold_possible[-100:])["aer"] == pytest.approx(
        rows.loc[("test", "pairs"), "aer"]
    )
    assert all(links == one_to_one(links) for links in test_links)


def test_gold_links_need_tokens_the_tokenizer_keeps(tmp_path):
    (tmp_path / "s.en").write_text("a b\nHe said: hi\n")
    (tmp_path / "s.xa").write_text("x y\nu v w\n")
    (tmp_path / "s.align").write_text("0-0\n0-0\n")
    with pytest.raises(FormatError, match=r"s.en:2: the moses tokenizer changes the tokens"):
        align_corpus(
            tmp_path / "s.en",
            tmp_path / "s.xa",
            tmp_path / "out",
            "en",
            "xa",
            tokenizer="moses",
            test=1,
            dev=1,
            train=[],
            gold_path=tmp_path / "s.align",
        )


def de_en_gold_sample(shared_data, tmp_path):
    """The RWTH Europarl de-en gold sample (5 sentence pairs; SimAlign's copy): English and German words, the
    sure and possible gold links (i: English word, j: German word) and the diagonal alignment's scores."""
    sample = shared_data / "europarl" / "alignment-sample-de-en"

    def column(name):  # "<id>\t<text>" lines
        return [line.split("\t", 1)[1] for line in (sample / name).read_text(encoding="utf-8").splitlines()]

    en, de = (
        tokenize(column("sample_eng.txt"), "en", "whitespace"),
        tokenize(column("sample_deu.txt"), "de", "whitespace"),
    )
    (tmp_path / "gold").write_text("".join(line + "\n" for line in column("sample_eng_deu.gold")))
    sure, possible = read_gold(tmp_path / "gold")
    assert max(i for links in possible for i, _ in links) < max(map(len, en))
    diagonal = [{(i, int(np.round(i * len(d) / len(e)))) for i in range(len(e))} for e, d in zip(en, de, strict=True)]
    return en, de, sure, possible, alignment_error(diagonal, sure, possible)


def test_eflomal_intersection_against_the_real_de_en_gold(shared_data, tmp_path):
    """eflomal's intersection is more precise than either direction and beats the diagonal alignment. eflomal has
    no seed: the bounds hold with a margin over the spread of runs (25 runs: AER 0.55-0.67 against the diagonal's
    0.73; precision +0.10 or more)."""
    en, de, sure, possible, diagonal = de_en_gold_sample(shared_data, tmp_path)
    fwd, rev = eflomal_links(en, de)
    pairs = word_pairs(fwd, rev)
    scores = {
        name: alignment_error(links, sure, possible)
        for name, links in (("forward", fwd), ("reverse", rev), ("pairs", pairs))
    }
    assert scores["pairs"]["aer"] < diagonal["aer"]
    assert scores["pairs"]["precision"] > max(scores["forward"]["precision"], scores["reverse"]["precision"])
    assert 0 < scores["pairs"]["links"] < min(scores["forward"]["links"], scores["reverse"]["links"])


def test_too_little_parallel_text_names_the_files(synthetic_parallel, tmp_path):
    with pytest.raises(FormatError, match=r"en-xa.en / .*en-xa.xa: 400 sentence pairs, but .* need 1100"):
        align_corpus(
            synthetic_parallel / "en-xa.en",
            synthetic_parallel / "en-xa.xa",
            tmp_path,
            "en",
            "xa",
            tokenizer="whitespace",
            test=100,
            dev=0,
            train=[1000],
        )


def test_fast_align_intersection_against_the_real_de_en_gold(shared_data, tmp_path):
    """fast_align (-d -o -v) on the same 5 pairs: its intersection is more precise than either direction and
    beats the diagonal alignment (AER 0.687 against 0.734; eflomal's 0.62-0.64 in three runs: 5 sentences are
    little text for either, and eflomal's Markov and fertility models use it better)."""
    en, de, sure, possible, diagonal = de_en_gold_sample(shared_data, tmp_path)
    fwd, rev = fast_align_links(en, de)
    scores = {
        name: alignment_error(links, sure, possible)
        for name, links in (("forward", fwd), ("reverse", rev), ("pairs", word_pairs(fwd, rev)))
    }
    assert scores["pairs"]["aer"] == pytest.approx(0.687, abs=0.005)
    assert scores["pairs"]["aer"] < diagonal["aer"] - 0.03
    assert scores["pairs"]["precision"] > max(scores["forward"]["precision"], scores["reverse"]["precision"])


def test_fast_align_gives_the_same_links_on_every_run(synthetic_parallel):
    """Two runs on the same parallel text give identical links in both directions (fast_align trains on one
    thread: with two, its counts are added in varying order and its tables differ from run to run)."""
    src = tokenize((synthetic_parallel / "en-xa.en").read_text().splitlines(), "en", "whitespace")
    tgt = tokenize((synthetic_parallel / "en-xa.xa").read_text().splitlines(), "xa", "whitespace")
    first, second = fast_align_links(src, tgt), fast_align_links(src, tgt)
    assert first == second
    fwd, rev = first
    assert all(len({i for i, _ in links}) == len(links) for links in rev)  # each src word to at most one tgt word
    assert all(len({j for _, j in links}) == len(links) for links in fwd)  # each tgt word to at most one src word
    assert fwd != rev


def test_fast_align_word_pairs_of_synthetic_text_against_its_gold(synthetic_parallel, tmp_path):
    table = align_corpus(
        synthetic_parallel / "en-xa.en",
        synthetic_parallel / "en-xa.xa",
        tmp_path,
        "en",
        "xa",
        tokenizer="whitespace",
        test=100,
        dev=50,
        train=[250],
        aligner="fast_align",
        gold_path=synthetic_parallel / "en-xa.align",
    )
    rows = table.set_index(["split", "links_from"])
    for split in ("test", "dev", "train250"):
        assert (
            rows.loc[(split, "pairs"), "precision"]
            >= max(rows.loc[(split, "forward"), "precision"], rows.loc[(split, "reverse"), "precision"]) - 1e-9
        )
        assert rows.loc[(split, "pairs"), "aer"] < 0.3
    with pytest.raises(ValueError, match="aligner must be one of fast_align, eflomal, got 'giza'"):
        directional_links([["a"]], [["b"]], "giza", {})


def test_fast_align_decoding_agrees_with_systran_aligners_own(synthetic_parallel, tmp_path):
    """Our decoding of each direction, at the start tension 4 that systran_align.Aligner decodes with, against
    the Aligner's grow-diag-final-and links: these contain the intersection of its two directions and lie in
    their union, so ours must (up to float rounding)."""
    import systran_align

    from xling.data import fast_align

    src = tokenize((synthetic_parallel / "en-xa.en").read_text().splitlines(), "en", "whitespace")
    tgt = tokenize((synthetic_parallel / "en-xa.xa").read_text().splitlines(), "xa", "whitespace")
    fwd_table, rev_table, _, ids = fast_align.train(src, tgt, tmp_path, fast_align.STANDARD)
    aligner = systran_align.Aligner(str(tmp_path / "fwd"), str(tmp_path / "rev"))
    both = dict(tension=4.0, favor_diagonal=True, prob_align_null=0.08)
    inside = in_union = n_intersection = n_theirs = 0
    for s, t in zip(src, tgt, strict=True):
        s_ids, t_ids = [ids[w] for w in s], [ids[w] for w in t]
        fwd = fast_align.viterbi_links(fwd_table, s_ids, t_ids, **both)
        rev = {(i, j) for j, i in fast_align.viterbi_links(rev_table, t_ids, s_ids, **both)}
        theirs = set(aligner.align(s_ids, t_ids)["alignments"])
        inside, n_intersection = inside + len(fwd & rev & theirs), n_intersection + len(fwd & rev)
        in_union, n_theirs = in_union + len(theirs & (fwd | rev)), n_theirs + len(theirs)
    assert n_intersection > 1000
    assert inside / n_intersection > 0.999 and in_union / n_theirs > 0.999
