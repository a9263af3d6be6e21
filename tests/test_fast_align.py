"""xling.data.fast_align against the original fast_align: its recorded links on 500 Europarl en-fr pairs
(tests/data/fast_align/, read from ../shared), the whole lexical table it decodes from, and its decoding by hand."""

import hashlib
import math
import random
from pathlib import Path

import pytest
from shared_files import SHARED, require_shared

from xling.data import fast_align
from xling.data.alignment import parse_links, tokenize, word_pairs
from xling.data.formats import read_parallel

REFERENCE = Path(__file__).parent / "data" / "fast_align"
EUROPARL = SHARED / "data" / "europarl"
#: per recorded run (tests/data/fast_align/README.md): the pairs, fast_align's options, our settings for them, the
#: sha256 of the input it was given and the number of word pairs
RUNS = {
    "d-o-v": (500, {}, "e653409e7e48d0a2d525421dd69c42c319ed00d07bb1edf4034ee770d7b04ff4", 8537),
    "v": (
        200,
        dict(favor_diagonal=False, optimize_tension=False),
        "ebda2011df7ba1acb617049872bb37012c08b084e88678b25d860f501560ec87",
        1754,
    ),
}


def reference_links(n: int, options: str, direction: str) -> list[set[tuple[int, int]]]:
    path = REFERENCE / f"europarl-en-fr.1-{n}.{options}.{direction}.align"
    return [parse_links(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("options", RUNS)
def test_links_equal_the_original_fast_aligns_on_europarl_en_fr(options):
    """`fast_align -d -o -v` (and -r), the workflow's settings, and `fast_align -v` (no diagonal), recorded on the
    first pairs of the staged Europarl en-fr sample: ours are the same links in both directions and the same word
    pairs. With -d -o -v from a table cut at systran-align's default beam they were not (164 and 136 of 500
    sentences the same; 8,463 word pairs against 8,537); with -v, decoded with p0 for NULL instead of model 1's
    uniform prior, 51 and 47 of 200."""
    n, settings, input_sha256, n_pairs = RUNS[options]
    europarl = require_shared(EUROPARL)
    pairs = read_parallel(europarl / "europarl-v7.fr-en.head3000.en", europarl / "europarl-v7.fr-en.head3000.fr")[:n]
    en, fr = tokenize((s for s, _ in pairs), "en"), tokenize((t for _, t in pairs), "fr")
    corpus = "".join(" ".join(s) + " ||| " + " ".join(t) + "\n" for s, t in zip(en, fr, strict=True))
    assert hashlib.sha256(corpus.encode("utf-8")).hexdigest() == input_sha256, (
        "the tokenized input differs from the one the reference links were made from (tokenizer or data changed)"
    )
    expected_fwd, expected_rev = reference_links(n, options, "forward"), reference_links(n, options, "reverse")
    fwd, rev = fast_align.links(en, fr, **settings)
    assert len(fwd) == len(expected_fwd) == n
    assert [k for k in range(n) if fwd[k] != expected_fwd[k]] == []
    assert [k for k in range(n) if rev[k] != expected_rev[k]] == []
    assert word_pairs(fwd, rev) == word_pairs(expected_fwd, expected_rev)
    assert sum(map(len, word_pairs(fwd, rev))) == n_pairs


def test_tables_hold_every_pair_of_words_that_share_a_sentence_pair(tmp_path):
    """fast_align's table has an entry for every (source word, target word) of a sentence pair and for NULL with
    every target word, and decodes from all of them; systran-align's default beam would drop the unlikely ones."""
    rng = random.Random(0)  # 200 pairs of 4-12 words drawn from 300 a side: many pairs of words meet once
    src = [[f"e{rng.randrange(300)}" for _ in range(rng.randint(4, 12))] for _ in range(200)]
    tgt = [[f"f{rng.randrange(300)}" for _ in range(rng.randint(4, 12))] for _ in range(200)]
    fwd_table, rev_table, _, ids = fast_align.train(src, tgt, tmp_path, fast_align.STANDARD)
    for table, given, predicted in ((fwd_table, src, tgt), (rev_table, tgt, src)):
        expected = {}
        for s, t in zip(given, predicted, strict=True):
            for word in [fast_align.NULL] + [ids[w] for w in s]:
                expected.setdefault(word, set()).update(ids[w] for w in t)
        assert {word: set(row) for word, row in table.items()} == expected
        assert min(math.log(p) for row in table.values() for p in row.values()) < -4  # the beam would cut these
    with pytest.raises(ValueError, match="beam_threshold is not a setting"):
        fast_align.links([["a"]], [["b"]], beam_threshold=-4)


def test_viterbi_links_by_hand():
    """Two words each side, tension 4, p0 0.08. Target word j's prior on source word i is proportional to
    exp(-4 |(j+1)/2 - (i+1)/2|): 1 on the diagonal, e^-2 off it, so 0.92 / (1 + e^-2) = 0.8103 and 0.1097.
    x: a 0.6 * 0.8103 = 0.486 beats b 0.2 * 0.1097 = 0.022 and NULL 0.08 * 0.1 = 0.008 -> (0, 0).
    y: b 0.01 * 0.8103 = 0.0081 beats a 0.05 * 0.1097 = 0.0055 and NULL 0.08 * 0.05 = 0.004 -> (1, 1); with b's
    entry for y missing (as a beam of -4 drops it: log 0.01 < -4), a wins -> (0, 1); with a's missing too, NULL."""
    table = {"a": {"x": 0.6, "y": 0.05}, "b": {"x": 0.2, "y": 0.01}, fast_align.NULL: {"x": 0.1, "y": 0.05}}
    decode = dict(tension=4.0, favor_diagonal=True, prob_align_null=0.08)
    assert fast_align.viterbi_links(table, ["a", "b"], ["x", "y"], **decode) == {(0, 0), (1, 1)}
    del table["b"]["y"]
    assert fast_align.viterbi_links(table, ["a", "b"], ["x", "y"], **decode) == {(0, 0), (0, 1)}
    del table["a"]["y"]
    assert fast_align.viterbi_links(table, ["a", "b"], ["x", "y"], **decode) == {(0, 0)}
    # without the diagonal every p is 1 / 3 (IBM model 1), NULL's too: with b's entry back, y goes to a (0.05 beats
    # b's 0.01 and NULL's 0.04); with NULL's entry at 0.05 too, a ties NULL, and a tie goes to NULL
    table["a"]["y"], table["b"]["y"] = 0.05, 0.01
    model1 = dict(tension=4.0, favor_diagonal=False, prob_align_null=0.08)
    table[fast_align.NULL]["y"] = 0.04
    assert fast_align.viterbi_links(table, ["a", "b"], ["x", "y"], **model1) == {(0, 0), (0, 1)}
    table[fast_align.NULL]["y"] = 0.05
    assert fast_align.viterbi_links(table, ["a", "b"], ["x", "y"], **model1) == {(0, 0)}
