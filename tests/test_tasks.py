"""Task metrics (xling.evaluate.tasks) against hand computations, the CoNLL 2018 shared task's evaluation
script and seqeval.

The attachment scores are checked against values printed by the official script, conll18_ud_eval.py of
github.com/ufal/conll2018 (evaluation_script/, commit f2bc4dd16326d149d68bb53b427d3266fbe6a00a, the file's
last change 1a2c3733b3ce0b2779c4aba5fe77309f8e858481). The script is MPL-2.0 and not part of this project: it
was run outside the test suite, `python3 conll18_ud_eval.py -v GOLD SYSTEM` (percents, two decimals) and
`-c` (counts), and its output is written down below beside each case.
"""

from pathlib import Path

import numpy as np
import pytest
from seqeval.metrics import classification_report
from shared_files import require_shared

from xling.data.formats import read_conllu, syntactic_words, universal_relation
from xling.evaluate.tasks import accuracy, attachment_scores, repair_spans, span_f1, upos_accuracy

CONLL18 = Path(__file__).parent / "data" / "conll18"


def test_accuracy_by_hand():
    assert accuracy(
        ["entailment", "neutral", "contradiction", "neutral"],
        ["entailment", "contradiction", "contradiction", "entailment"],
    ) == (50.0, 4)
    with pytest.raises(ValueError, match="3 gold labels but 2 predicted"):
        accuracy(["a", "b", "c"], ["a", "b"])
    with pytest.raises(ValueError, match="no examples"):
        accuracy([], [])


def test_upos_accuracy_counts_words_not_sentences():
    gold = [["PRON", "VERB", "PUNCT"], ["NOUN"]]
    predicted = [["PRON", "NOUN", "PUNCT"], ["VERB"]]
    assert upos_accuracy(gold, predicted) == (50.0, 4)  # 2 of 4 words; per sentence it would be 33.3
    with pytest.raises(ValueError, match="tags in sentence 1"):
        upos_accuracy(gold, [["PRON", "NOUN", "PUNCT"], ["VERB", "X"]])


# --- attachment scores -------------------------------------------------------------------------------------


def predictions(sentences):
    """(heads, relations) per sentence, as a system file states them."""
    words = [syntactic_words(s) for s in sentences]
    return [[w["head"] for w in ws] for ws in words], [[w["deprel"] for w in ws] for ws in words]


@pytest.mark.parametrize("keep_multiword", [False, True])
def test_attachment_scores_match_the_official_script_on_fixtures(keep_multiword):
    """tests/data/conll18: a French sentence with two multiword tokens (au = à le, du = de le), an English one
    with an empty node (5.1), relation subtypes changed on either side, punctuation attached wrongly.
    conll18_ud_eval.py -c: Words 23, UAS correct 20, LAS correct 17; -v: UAS 86.96, LAS 73.91 (P = R = F1 =
    AligndAcc). By hand: wrong heads on village, '.', 's (3); wrong relations with a right head on de (mark),
    tea (obj), My (det:poss vs nmod:poss) (3); subtype-only changes (det:poss, obl, cc:preconj, nmod,
    compound) count as right."""
    gold = read_conllu(CONLL18 / "gold.conllu", keep_multiword=keep_multiword, keep_empty=keep_multiword)
    heads, deprels = predictions(read_conllu(CONLL18 / "system.conllu"))
    scores = attachment_scores(gold, heads, deprels)
    assert scores.n == 23
    assert scores.uas == pytest.approx(100 * 20 / 23) and round(scores.uas, 2) == 86.96
    assert scores.las == pytest.approx(100 * 17 / 23) and round(scores.las, 2) == 73.91
    assert attachment_scores(gold, *predictions(gold)) == (100.0, 100.0, 23)


def subtree(heads, root):
    """Word ids (1-based) in the subtree of `root` under `heads` (heads[i] = head of word i + 1)."""
    inside = {root}
    grown = True
    while grown:
        new = {i + 1 for i, h in enumerate(heads) if h in inside} - inside
        grown = bool(new)
        inside |= new
    return inside


def planted_predictions(sentences):
    """Gold heads and relations with errors planted at fixed positions, keeping every sentence a tree with one
    root (the official script rejects anything else): every 7th word (not the root) is attached to the first
    word outside its own subtree that is not its head; every 5th relation loses its subtype (still right);
    every 11th other one becomes `dep` (`nmod` where it was `dep`). Returns heads, relations, words moved."""
    all_heads, all_deprels, moved, k = [], [], 0, 0
    for sentence in sentences:
        heads, deprels = (values[0] for values in predictions([sentence]))
        for i in range(len(heads)):
            k += 1
            if k % 7 == 3 and heads[i] != 0:
                outside = subtree(heads, i + 1)
                new = next((j for j in range(1, len(heads) + 1) if j not in outside and j != heads[i]), None)
                if new is not None:
                    heads[i], moved = new, moved + 1
            if k % 5 == 1:
                deprels[i] = universal_relation(deprels[i])
            elif k % 11 == 2:
                deprels[i] = "dep" if universal_relation(deprels[i]) != "dep" else "nmod"
        all_heads.append(heads)
        all_deprels.append(deprels)
    return all_heads, all_deprels, moved


def test_attachment_scores_match_the_official_script_on_english_pud(shared_data):
    """English PUD (multiword tokens, empty nodes, subtypes) with planted errors. The system file was the
    gold file with HEAD and DEPREL replaced by planted_predictions (2881 words moved); conll18_ud_eval.py -c
    printed Words 21180, UAS correct 18299, LAS correct 16969; -v printed UAS 86.40, LAS 80.12."""
    gold = read_conllu(require_shared(shared_data / "ud" / "pud" / "en_pud-ud-test.conllu"))
    heads, deprels, moved = planted_predictions(gold)
    scores = attachment_scores(gold, heads, deprels)
    assert scores.n == 21180
    assert scores.uas == pytest.approx(100 * 18299 / 21180) and round(scores.uas, 2) == 86.40
    assert scores.las == pytest.approx(100 * 16969 / 21180) and round(scores.las, 2) == 80.12
    assert moved == 2881 == 21180 - 18299  # every moved word, and only those, loses its attachment


def test_attachment_scores_check_their_input():
    gold = read_conllu(CONLL18 / "gold.conllu")
    heads, deprels = predictions(gold)
    with pytest.raises(ValueError, match="3 gold sentences but 2 predicted"):
        attachment_scores(gold, heads[:2], deprels[:2])
    with pytest.raises(ValueError, match="9 gold words in sentence 0 but 8 predicted"):
        attachment_scores(gold, [heads[0][:-1], *heads[1:]], deprels)


# --- span F1 -----------------------------------------------------------------------------------------------


def test_span_f1_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG", "I-ORG"], ["O"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["O", "B-ORG", "O"], ["B-LOC"]]
    # gold spans: PER 0-1, LOC 3, ORG 1-2 (3); predicted: PER 0-1, ORG 3, ORG 1-1, LOC 0 (4); right: PER (1)
    p, r, f1, n = span_f1(gold, predicted)
    assert (p, r, n) == (25.0, pytest.approx(100 / 3), 3)
    assert f1 == pytest.approx(100 * 2 * (1 / 4) * (1 / 3) / (1 / 4 + 1 / 3))
    assert span_f1(gold, gold) == (100.0, 100.0, 100.0, 3)
    assert span_f1([["O", "O"]], [["O", "O"]]) == (0.0, 0.0, 0.0, 0)


def test_span_f1_equals_seqeval_classification_report_on_random_tags():
    rng = np.random.default_rng(0)
    tags = ["O", "O", "O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]  # I-X after O included
    for _ in range(20):
        lengths = rng.integers(1, 15, size=30)
        gold = [list(rng.choice(tags, size=n)) for n in lengths]
        predicted = [[g if rng.random() < 0.7 else rng.choice(tags) for g in sentence] for sentence in gold]
        micro = classification_report(gold, predicted, output_dict=True, zero_division=0)["micro avg"]
        p, r, f1, n = span_f1(gold, predicted)
        assert (p, r, f1, n) == pytest.approx(
            (100 * micro["precision"], 100 * micro["recall"], 100 * micro["f1-score"], micro["support"])
        )


@pytest.mark.parametrize("tags, repaired", [
    (["B-X", "I-Y", "I-Z"], ["B-Z", "I-Z", "I-Z"]),                       # the paper's example
    (["O", "I-X", "O"], ["O", "B-X", "O"]),                               # standalone I-X
    (["I-X", "I-Y", "B-Z", "I-Z", "O", "I-W"], ["B-Y", "I-Y", "B-Z", "I-Z", "O", "B-W"]),
    (["B-X", "B-Y", "I-Y", "O"], ["B-X", "B-Y", "I-Y", "O"]),             # valid tags stay
    (["O", "O"], ["O", "O"]),
])  # fmt: skip
def test_repair_spans(tags, repaired):
    assert repair_spans(tags) == repaired


def test_span_f1_repair_applies_to_predictions_only():
    gold = [["B-LOC", "I-LOC", "I-LOC", "O", "I-PER"]]
    predicted = [["B-PER", "I-ORG", "I-LOC", "O", "I-PER"]]
    # as tagged: PER 0, ORG 1, LOC 2, PER 4 -> only PER 4 right of 4; gold LOC 0-2 and PER 4 (an I- after O
    # starts a span, conlleval's reading)
    assert span_f1(gold, predicted) == pytest.approx((25.0, 50.0, 100 / 3, 2))
    # repaired: LOC 0-2, PER 4 -> both right
    assert span_f1(gold, predicted, repair=True) == (100.0, 100.0, 100.0, 2)


def test_span_f1_rejects_tags_outside_iob2():
    with pytest.raises(ValueError, match="predicted sentence 0: 'E-PER' is not an IOB2 tag"):
        span_f1([["B-PER"]], [["E-PER"]])
    with pytest.raises(ValueError, match="gold sentence 0: 'PER'"):
        span_f1([["PER"]], [["O"]])
