"""Each verdict shape on planted numbers, one test per outcome: holds, does not hold, inconclusive, not
measurable (missing, without an interval, degenerate)."""

import pytest

from xling.evaluate.uncertainty import Interval
from xling.evaluate.verdicts import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_MEASURABLE,
    Measure,
    Verdict,
    above_chance,
    all_of,
    any_of,
    at_least,
    equivalent,
    every_unit,
    greater,
    most,
    negate,
    rises,
)


def m(label, value, half_width=0.01, flag=None):
    return Measure(label, value, value - half_width, value + half_width, flag)


def paired(estimate, low, high):
    return Interval(estimate, low, high, 0.95, 1000, 0, 100, "percentile")


HIGH, LOW = m("BERT", 0.30), m("GloVe", 0.20)
CLOSE = m("GloVe", 0.295)  # overlaps HIGH
DEGENERATE = m("BERT", 0.055, flag="not above chance: 95% interval 0.055 [0.041, 0.070] holds chance 0.050")


@pytest.mark.parametrize(
    "a, b, outcome",
    [
        (HIGH, LOW, HOLDS),
        (LOW, HIGH, FAILS),
        (HIGH, CLOSE, INCONCLUSIVE),
        (DEGENERATE, LOW, NOT_MEASURABLE),
        (LOW, DEGENERATE, NOT_MEASURABLE),
        (Measure("BERT", None), LOW, NOT_MEASURABLE),
        (Measure("BERT", 0.3), LOW, NOT_MEASURABLE),  # no interval
    ],
)
def test_greater(a, b, outcome):
    assert greater(a, b).outcome == outcome


def test_greater_reasons_name_the_numbers_and_intervals():
    assert greater(HIGH, LOW).reason == "BERT 0.300 [0.290, 0.310] > GloVe 0.200 [0.190, 0.210] (intervals apart)"
    assert "overlap" in greater(HIGH, CLOSE).reason
    assert "degenerate (not above chance" in greater(DEGENERATE, LOW).reason
    assert greater(Measure("BERT", None), LOW).reason == "BERT is missing"
    assert greater(Measure("BERT", 0.3), LOW).reason == "BERT has no interval"


def test_equal_points_are_not_greater():
    zero = Measure.constant("F1", 0.0)
    assert greater(zero, Measure.constant("F1 zero-mean", 0.0)).outcome == FAILS


def test_paired_interval_decides_over_overlapping_intervals():
    """Two systems on the same items: the intervals overlap, but the paired difference excludes 0."""
    assert greater(HIGH, CLOSE, paired(0.005, 0.002, 0.008)).outcome == HOLDS
    assert greater(HIGH, CLOSE, paired(0.005, -0.002, 0.012)).outcome == INCONCLUSIVE
    assert greater(HIGH, CLOSE, paired(-0.005, -0.008, -0.002)).outcome == FAILS
    assert "paired difference +0.005 [+0.002, +0.008]" in greater(HIGH, CLOSE, paired(0.005, 0.002, 0.008)).reason


@pytest.mark.parametrize(
    "a, b, margin, outcome",
    [
        (HIGH, LOW, 0.0, HOLDS),
        (Measure.constant("MDS", 0.5), Measure.constant("zero-mean", 0.5), 0.0, HOLDS),  # an exact tie
        (LOW, HIGH, 0.0, FAILS),
        (CLOSE, HIGH, 0.0, INCONCLUSIVE),
        (CLOSE, HIGH, 0.03, HOLDS),  # no worse than 0.03 below
        (LOW, HIGH, 0.05, FAILS),  # at least 0.08 below
        (DEGENERATE, LOW, 0.0, NOT_MEASURABLE),
    ],
)
def test_at_least(a, b, margin, outcome):
    assert at_least(a, b, margin=margin).outcome == outcome


def test_at_least_with_paired_interval_and_bad_margin():
    assert at_least(CLOSE, HIGH, paired(-0.005, -0.007, -0.003)).outcome == FAILS
    assert at_least(CLOSE, HIGH, paired(-0.005, -0.007, -0.003), margin=0.01).outcome == HOLDS
    with pytest.raises(ValueError):
        at_least(HIGH, LOW, margin=-1)


@pytest.mark.parametrize(
    "a, outcome",
    [
        (m("no-anchors", 45.0, 3.0), HOLDS),
        (m("no-anchors", 30.0, 2.0), FAILS),
        (m("no-anchors", 35.0, 4.0), INCONCLUSIVE),
        (m("no-anchors", 45.0, 3.0, flag="constant predictions"), FAILS),
        (Measure("no-anchors", None), NOT_MEASURABLE),
    ],
)
def test_above_chance(a, outcome):
    assert above_chance(a, 100 / 3).outcome == outcome


def test_all_of_and_any_of_order_the_outcomes():
    holds, fails = Verdict(HOLDS, "h"), Verdict(FAILS, "f")
    open_, unmeasurable = Verdict(INCONCLUSIVE, "i"), Verdict(NOT_MEASURABLE, "n")
    assert all_of([holds, holds]).outcome == HOLDS
    assert all_of([holds, fails, unmeasurable]).outcome == FAILS
    assert all_of([holds, open_, unmeasurable]).outcome == NOT_MEASURABLE
    assert all_of([holds, open_]).outcome == INCONCLUSIVE
    assert all_of([]).outcome == NOT_MEASURABLE
    assert all_of([holds, fails], ["de", "fr"]).reason == "de: h; fr: f"
    assert any_of([fails, holds]).outcome == HOLDS
    assert any_of([fails, fails]).outcome == FAILS
    assert any_of([fails, open_]).outcome == INCONCLUSIVE
    assert any_of([fails, unmeasurable, open_]).outcome == NOT_MEASURABLE


def test_negate():
    assert negate(Verdict(HOLDS, "x")) == Verdict(FAILS, "not (x)")
    assert negate(Verdict(FAILS, "x")).outcome == HOLDS
    assert negate(Verdict(INCONCLUSIVE, "x")).outcome == INCONCLUSIVE
    assert negate(Verdict(NOT_MEASURABLE, "x")).outcome == NOT_MEASURABLE


def _outcomes(*outcomes):
    return [Verdict(o, o) for o in outcomes], [f"l{i}" for i in range(len(outcomes))]


@pytest.mark.parametrize(
    "outcomes, expected",
    [
        ((HOLDS, HOLDS, FAILS), HOLDS),
        ((HOLDS, FAILS, FAILS), FAILS),
        ((HOLDS, HOLDS, FAILS, FAILS), FAILS),  # half is not most
        ((HOLDS, INCONCLUSIVE, FAILS), INCONCLUSIVE),
        ((HOLDS, HOLDS, FAILS, NOT_MEASURABLE), HOLDS),  # 2 of 3 measurable
        ((NOT_MEASURABLE, NOT_MEASURABLE), NOT_MEASURABLE),
    ],
)
def test_most(outcomes, expected):
    verdict = most(*_outcomes(*outcomes))
    assert verdict.outcome == expected


def test_most_reason_counts_units():
    verdict = most(*_outcomes(HOLDS, HOLDS, FAILS, NOT_MEASURABLE), unit="pairs")
    assert verdict.reason.startswith("holds in 2 of 3 pairs") and "; not measurable: l3 (" in verdict.reason


def test_most_says_why_each_unit_left_out_is_not_measurable():
    """A unit left out is named with its own reason (as every_unit does), so a claim no unit measures says what
    its numbers are, not only which units they were."""
    verdicts = [
        Verdict(NOT_MEASURABLE, "xd LAS is degenerate (at or below chance: 5.9 <= chance 25.9)"),
        Verdict(NOT_MEASURABLE, "xe LAS is degenerate (at or below chance: 1.8 <= chance 29.2)"),
    ]
    verdict = most(verdicts, ["xd", "xe"])
    assert verdict.outcome == NOT_MEASURABLE
    assert verdict.reason == (
        "no languages measurable; not measurable: xd (xd LAS is degenerate (at or below "
        "chance: 5.9 <= chance 25.9)); xe (xe LAS is degenerate (at or below chance: 1.8 <= "
        "chance 29.2))"
    )


def test_rises():
    rising = [m("alpha 0", 0.1), m("alpha 1", 0.3), m("alpha 2", 0.5)]
    assert rises(rising).outcome == HOLDS
    flat_then_up = [m("alpha 0", 0.1), m("alpha 1", 0.1), m("alpha 2", 0.5)]
    assert rises(flat_then_up).outcome == INCONCLUSIVE  # the flat step could be a step down
    assert rises(flat_then_up, margin=0.05).outcome == HOLDS
    dip = [m("alpha 0", 0.1), m("alpha 1", 0.4), m("alpha 2", 0.2)]
    assert rises(dip).outcome == FAILS
    flat = [m("alpha 0", 0.1), m("alpha 1", 0.105)]
    assert rises(flat).outcome == INCONCLUSIVE
    collapsed = [m("alpha 0", 0.1), m("alpha 1", 0.9, flag="one token repeated: 'da' is 98.0% of 400 output pieces")]
    assert rises(collapsed).outcome == NOT_MEASURABLE
    assert rises([m("alpha 0", 0.1)]).outcome == NOT_MEASURABLE
    paired_steps = [paired(0.001, 0.0005, 0.0015)]
    assert rises([m("w 5", 0.100), m("w 10", 0.101)], paired_steps, paired(0.001, 0.0005, 0.0015)).outcome == HOLDS
    assert "first -> last" in rises(rising).reason


def test_measure_text_and_constructors():
    interval = paired(0.5, 0.4, 0.6)
    assert Measure.of("BERT", interval) == Measure("BERT", 0.5, 0.4, 0.6)
    assert Measure.of("BERT", None).problem() == "BERT is missing"
    assert str(Measure.constant("chance", 0.05)) == "chance 0.050"
    assert str(Measure("BERT", 0.001, 0.0005, 0.002)) == "BERT 0.001 [0.0005, 0.002]"
    with pytest.raises(ValueError):
        Verdict("maybe", "")


@pytest.mark.parametrize(
    "a, b, margin, outcome",
    [
        (m("a", 0.500), m("b", 0.505), 0.03, HOLDS),  # difference [-0.025, +0.015] inside +-0.03
        (m("a", 0.500), m("b", 0.505), 0.02, INCONCLUSIVE),  # -0.025 beyond -0.02, +0.015 inside
        (m("a", 0.500), m("b", 0.600), 0.03, FAILS),  # [-0.12, -0.08] wholly below -0.03
        (m("a", 0.600), m("b", 0.500), 0.03, FAILS),  # wholly above +0.03: a gain is no equivalence either
        (DEGENERATE, m("b", 0.055), 0.03, NOT_MEASURABLE),
    ],
)
def test_equivalent_is_two_one_sided_tests_on_the_difference(a, b, margin, outcome):
    assert equivalent(a, b, margin=margin).outcome == outcome


def test_equivalent_needs_a_margin_and_takes_the_paired_interval():
    with pytest.raises(ValueError, match="margin > 0"):
        equivalent(m("a", 0.5), m("b", 0.5), margin=0.0)
    wide_a, wide_b = m("a", 0.50, 0.05), m("b", 0.50, 0.05)  # unpaired: [-0.1, +0.1], beyond +-0.03
    assert equivalent(wide_a, wide_b, margin=0.03).outcome == INCONCLUSIVE
    verdict = equivalent(wide_a, wide_b, paired(0.0, -0.01, 0.01), margin=0.03)
    assert verdict.outcome == HOLDS and "within +-0.030" in verdict.reason


def test_every_unit_leaves_the_unmeasurable_out_and_names_them():
    labels = ["xa", "xb", "xc"]
    verdict = every_unit(_outcomes(HOLDS, NOT_MEASURABLE, HOLDS)[0], labels)
    assert verdict.outcome == HOLDS and verdict.reason.startswith("2 of 2 languages hold")
    assert "left out, not measurable: xb (" in verdict.reason
    assert every_unit(_outcomes(HOLDS, FAILS, NOT_MEASURABLE)[0], labels).outcome == FAILS
    assert every_unit(_outcomes(HOLDS, INCONCLUSIVE, NOT_MEASURABLE)[0], labels).outcome == INCONCLUSIVE
    none = every_unit(_outcomes(NOT_MEASURABLE, NOT_MEASURABLE)[0], ["xa", "xb"])
    assert none.outcome == NOT_MEASURABLE and "no languages measurable" in none.reason
    with pytest.raises(ValueError):
        every_unit(_outcomes(HOLDS)[0], ["xa", "xb"])
