"""Chance levels worked out by hand, and each degenerate check on planted numbers (flagged and not flagged)."""

import numpy as np
import pytest

from xling.evaluate import chance
from xling.evaluate.ranks import Ranks, mrr, precision_at_k
from xling.evaluate.uncertainty import Interval


def _interval(estimate, low, high):
    return Interval(estimate, low, high, 0.95, 1000, 0, 100, "percentile")


def test_retrieval_chance_levels():
    assert chance.retrieval_mrr(4).value == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)  # H_4 / 4
    # P@k with g golds among n: 1 - C(n-g, k) / C(n, k); one gold: k / n
    assert chance.retrieval_precision_at_k(10, 5).value == pytest.approx(0.5)
    assert chance.retrieval_precision_at_k(10, 1, n_gold=[1, 2]).value == pytest.approx((0.1 + 0.2) / 2)
    assert chance.retrieval_precision_at_k(5, 2, n_gold=2).value == pytest.approx(1 - 3 / 10)
    # the chance levels are what collapsed vectors score (every candidate tied with the gold)
    tied = Ranks(np.zeros(2), np.full(2, 10), np.array([1, 3]))
    assert chance.retrieval_mrr(10, [1, 3]).value == pytest.approx(mrr(tied))
    assert chance.retrieval_precision_at_k(10, 5, [1, 3]).value == pytest.approx(precision_at_k(tied, 5))
    assert chance.retrieval_accuracy(200).value == pytest.approx(1 / 200)
    assert chance.retrieval_accuracy(4, [1, 2]).value == pytest.approx(3 / 8)
    with pytest.raises(ValueError):
        chance.retrieval_mrr(3, 4)


def test_accuracy_floor_is_the_higher_of_uniform_and_majority():
    balanced = ["entailment", "neutral", "contradiction"] * 10
    assert chance.classification_accuracy(balanced).value == pytest.approx(1 / 3)
    skewed = ["NOUN"] * 6 + ["VERB"] * 3 + ["ADP"]
    level = chance.classification_accuracy(skewed, n_classes=17)
    assert level.value == pytest.approx(0.6) and "'NOUN'" in level.how
    assert chance.classification_accuracy(["a", "b"], n_classes=4).value == pytest.approx(0.5)
    assert chance.classification_accuracy(["a", "a", "b", "c"], n_classes=2).value == pytest.approx(0.5)
    assert chance.classification_accuracy(["a"] * 5 + ["b"] * 3 + ["c"] * 2, n_classes=2).value == 0.5
    assert chance.classification_accuracy(balanced).percent().value == pytest.approx(100 / 3)


def test_las_floor_by_hand():
    """Sentence 1: 1 <-nsubj- 2 (root) -obj-> 3; sentence 2: 1 (root) -obj-> 2. The commonest non-root
    relation is obj (2 of 3, obj:lvc counting as obj). Predecessor chain: heads 0, 1, 2 / 0, 1 labelled
    root, obj, obj / root, obj: right are word 3 of sentence 1 and both words of sentence 2, 3 of 5.
    Successor chain: heads 2, 3, 0 / 2, 0: only word 1 of sentence 1 has its head, labelled obj not nsubj: 0."""
    heads = [[2, 0, 2], [0, 1]]
    deprels = [["nsubj", "root", "obj"], ["root", "obj:lvc"]]
    level = chance.attachment_las(heads, deprels)
    assert level.value == pytest.approx(3 / 5)
    assert "predecessor" in level.how and "'obj'" in level.how
    head_final = chance.attachment_las([[2, 3, 0]], [["obj", "obj", "root"]])
    assert head_final.value == pytest.approx(1.0) and "successor" in head_final.how


def test_bucc_and_ner_and_cka_floors():
    # 4 source, 5 English, 2 gold: c = 2/5, mined 4, F1 = 2 * 0.4 / (4 + 2)
    assert chance.bucc_f1(4, 5, 2).value == pytest.approx(0.8 / 6)
    assert chance.bucc_f1(400_000, 400_000, 2_000).value < 1e-7
    assert chance.span_f1().value == 0.0
    assert chance.cka(0.31).value == 0.31


def test_at_or_below_chance():
    level = chance.Chance(0.05, "test")
    assert chance.at_or_below_chance(_interval(0.30, 0.25, 0.35), level) is None
    holds_chance = chance.at_or_below_chance(_interval(0.055, 0.041, 0.070), level)
    assert holds_chance.startswith("not above chance") and "[0.041, 0.070]" in holds_chance
    assert chance.at_or_below_chance(_interval(0.04, 0.03, 0.05), 0.05).startswith("at or below chance")
    assert chance.at_or_below_chance(0.05, 0.05).startswith("at or below chance")
    assert chance.at_or_below_chance(0.06, 0.05) is None


def test_did_not_learn():
    assert chance.did_not_learn(_interval(80.0, 77.0, 83.0), 33.4) is None
    reason = chance.did_not_learn(_interval(0.0, 0.0, 0.0), chance.span_f1().percent())
    assert reason.startswith("the fine-tuning did not learn English")


def test_constant_predictions_and_repeated_token():
    assert (
        chance.constant_predictions(["contradiction"] * 96 + ["neutral"] * 4)
        == "constant predictions: 'contradiction' is 96.0% of 100"
    )
    assert chance.constant_predictions(["a"] * 94 + ["b"] * 6) is None
    assert chance.constant_predictions([]) is None
    assert "'бон'" in chance.repeated_token("бон бон бон бон da".split())
    assert chance.repeated_token("le chat est sur le tapis".split()) is None


def test_nothing_mined_no_spans_and_ties():
    assert chance.nothing_mined(0).startswith("nothing mined")
    assert "none of 12" in chance.nothing_mined(12, 0)
    assert chance.nothing_mined(12, 3) is None
    assert chance.no_predicted_spans(0) == "no entity predicted"
    assert chance.no_predicted_spans(5) is None
    assert chance.all_tied([0.7, 0.7, 0.7 + 1e-12]) == "all 3 scores tied at 0.700"
    assert chance.all_tied([0.7, 0.71]) is None
    assert chance.all_tied([1.0]) is None
    assert "all 50 candidates" in chance.all_candidates_tied([50, 50], 50)
    assert chance.all_candidates_tied([50, 3], 50) is None


def test_flag_joins_reasons():
    assert chance.flag(None, None) is None
    assert chance.flag("a", None, "b", "a") == "a; b"
    assert chance.is_degenerate("a; b") and not chance.is_degenerate(None) and not chance.is_degenerate("")
    assert not chance.is_degenerate(float("nan"))
