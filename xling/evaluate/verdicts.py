"""Verdicts that say how far a run's numbers support a claim: holds, does not hold, inconclusive, not measurable.

Why four outcomes: "does not hold" on two numbers that resampling the test set could swap is as wrong as
"holds" on them, and a number at chance or from a model that did not learn supports neither. So:
- not measurable: a compared number is missing, has no interval, or is degenerate (its flag from
  xling.evaluate.chance): never holds on a degenerate number;
- inconclusive: the numbers' uncertainty leaves both answers open;
- holds / does not hold: the interval of the difference lies on one side.

How two numbers a, b are compared: by the interval of a - b. With the paired bootstrap of the two systems on
the same items (uncertainty.paired_difference) that interval is the paired one; without it, it is
[a.low - b.high, a.high - b.low], which excludes 0 exactly when the two intervals do not overlap (a
conservative test: two disjoint 95 % intervals mean a difference at about the 0.5 % level).
- a > b (strict: "overtakes", "improves", "hurts"): holds when the whole difference interval is above 0, does not
  hold when it is at or below 0, else inconclusive;
- a >= b (non-strict: "at least as well", "not better than", "matches"): a non-inferiority test with a margin
  m >= 0 in the metric's units: holds when the difference interval's lower bound is at least -m (a is no worse
  than b by more than m), does not hold when its upper bound is below -m, else inconclusive. With m = 0 and
  overlapping intervals it is inconclusive: a tie the data cannot tell from a loss is not a tie.
- a ~ b within m (an equivalence: "matches", "disappears", "drops only around 1 point"): two one-sided tests
  (TOST) on the difference's interval: holds when the whole interval lies inside [-m, m] (both a loss and a gain
  beyond m ruled out), does not hold when it lies wholly outside (below -m or above m), else inconclusive. The
  interval is the claims' two-sided one (95 %), not TOST's customary 90 %: a conservative equivalence test. With
  m = 0 it can never hold, so every equivalence claim has a margin > 0 (the paper's words or a default per metric).
Claims over several comparisons combine them with `all_of` (every comparison), `every_unit` (the paper's "every
language": the measurable languages, the others named with why), `any_of`, `negate` and `most` (most languages);
`rises` judges a trend over a grid (alpha, data size, window).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from xling.evaluate.uncertainty import Interval

HOLDS, FAILS, INCONCLUSIVE, NOT_MEASURABLE = "holds", "does not hold", "inconclusive", "not measurable"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE, NOT_MEASURABLE)


@dataclass(frozen=True)
class Measure:
    """One number a claim compares: its label, value, interval and degenerate flag (None: not degenerate)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    flag: str | None = None

    @classmethod
    def of(cls, label: str, interval: Interval | None, flag: str | None = None) -> "Measure":
        """A measured number from its bootstrap interval (None: the run lacks it)."""
        if interval is None:
            return cls(label, None, flag=flag)
        return cls(label, interval.estimate, interval.low, interval.high, flag)

    @classmethod
    def constant(cls, label: str, value: float) -> "Measure":
        """An exact number (a chance level, a threshold): an interval of zero width."""
        return cls(label, float(value), float(value), float(value))

    def problem(self) -> str | None:
        """Why this number cannot be compared, or None."""
        if self.value is None or math.isnan(self.value):
            return f"{self.label} is missing"
        if self.flag:
            return f"{self.label} is degenerate ({self.flag})"
        if self.low is None or self.high is None or math.isnan(self.low) or math.isnan(self.high):
            return f"{self.label} has no interval"
        return None

    def __str__(self) -> str:
        if self.value is None or math.isnan(self.value):
            return f"{self.label} missing"
        if self.low is None or self.high is None or self.low == self.high == self.value:
            return f"{self.label} {_fmt(self.value)}"
        return f"{self.label} {_fmt(self.value)} [{_fmt(self.low)}, {_fmt(self.high)}]"


@dataclass(frozen=True)
class Verdict:
    outcome: str
    reason: str

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value != 0 and abs(value) < 0.01 else f"{value:.3f}"


def _not_measurable(*measures: Measure) -> Verdict | None:
    problems = [p for p in (m.problem() for m in measures) if p]
    return Verdict(NOT_MEASURABLE, "; ".join(problems)) if problems else None


def _difference(a: Measure, b: Measure, paired: Interval | None) -> tuple[float, float, str]:
    """(low, high, text) of the interval of a - b: the paired one when given, else from the two intervals."""
    if paired is not None:
        return (
            paired.low,
            paired.high,
            f"paired difference {paired.estimate:+.3g} [{paired.low:+.3g}, {paired.high:+.3g}]",
        )
    low, high = a.low - b.high, a.high - b.low  # contains 0 exactly when the two intervals overlap
    return low, high, "intervals overlap" if low <= 0 <= high else "intervals apart"


def greater(a: Measure, b: Measure, paired: Interval | None = None, by: float = 0.0) -> Verdict:
    """a > b (module docstring); `paired`: the paired bootstrap interval of a - b on the same items. `by`: a gain
    of more than `by` (superiority by a margin: the whole interval of a - b above it), as "a gain of at least 1%"."""
    if by < 0:
        raise ValueError(f"by must be >= 0, got {by}")
    blocked = _not_measurable(a, b)
    if blocked:
        return blocked
    low, high, how = _difference(a, b, paired)
    gain = f" by more than {_fmt(by)}" if by else ""
    if low > by:
        return Verdict(HOLDS, f"{a} > {b}{gain} ({how})")
    if high <= by:
        return Verdict(FAILS, f"{a} not > {b}{gain} ({how})")
    return Verdict(
        INCONCLUSIVE,
        f"{a} vs {b}: {how}, a gain{gain} is not resolved" if by else f"{a} vs {b}: {how}, the order is not resolved",
    )


def at_least(a: Measure, b: Measure, paired: Interval | None = None, margin: float = 0.0) -> Verdict:
    """a >= b within `margin` (a non-inferiority test, module docstring)."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    blocked = _not_measurable(a, b)
    if blocked:
        return blocked
    low, high, how = _difference(a, b, paired)
    within = f" within a margin of {_fmt(margin)}" if margin else ""
    if low >= -margin:
        return Verdict(HOLDS, f"{a} >= {b}{within} ({how})")
    if high < -margin:
        return Verdict(FAILS, f"{a} < {b}{within} ({how})")
    return Verdict(INCONCLUSIVE, f"{a} vs {b}: {how}, a loss{within} is not ruled out")


def equivalent(a: Measure, b: Measure, paired: Interval | None = None, margin: float = 0.0) -> Verdict:
    """a ~ b within `margin` (TOST on the interval of a - b, module docstring); margin must be > 0."""
    if not margin > 0:
        raise ValueError(f"an equivalence needs a margin > 0, got {margin}")
    blocked = _not_measurable(a, b)
    if blocked:
        return blocked
    low, high, how = _difference(a, b, paired)
    span = f"[{low:+.3g}, {high:+.3g}]"
    within = f"within +-{_fmt(margin)}"
    if -margin <= low and high <= margin:
        return Verdict(HOLDS, f"{a} ~ {b}: difference {span} {within} ({how})")
    if high < -margin or low > margin:
        return Verdict(FAILS, f"{a} vs {b}: difference {span} wholly outside +-{_fmt(margin)} ({how})")
    return Verdict(INCONCLUSIVE, f"{a} vs {b}: difference {span} not {within} nor outside it ({how})")


def above_chance(a: Measure, chance: float) -> Verdict:
    """a is above chance. The claim is about chance itself, so pass a's flags other than the chance check (a
    constant classifier, a fine-tuning that did not learn): such a flag makes the claim fail rather than be
    unmeasurable, as such a model cannot be above chance."""
    if a.value is None or math.isnan(a.value) or a.low is None or a.high is None:
        return _not_measurable(a)
    level = Measure.constant("chance", chance)
    verdict = greater(Measure(a.label, a.value, a.low, a.high), level)
    if a.flag and verdict.outcome != FAILS:
        return Verdict(FAILS, f"{a} is degenerate ({a.flag})")
    return verdict


def _combine(verdicts: Sequence[Verdict], labels: Sequence[str] | None, order: tuple[str, ...]) -> Verdict:
    """The first outcome of `order` that any part has, with every part's reason (labelled)."""
    if not verdicts:
        return Verdict(NOT_MEASURABLE, "nothing to compare")
    labels = labels or [""] * len(verdicts)
    reasons = "; ".join(
        dict.fromkeys(
            f"{label}: {v.reason}" if label else v.reason  # a shared reason once
            for label, v in zip(labels, verdicts, strict=True)
        )
    )
    for outcome in order:
        if any(v.outcome == outcome for v in verdicts):
            return Verdict(outcome, reasons)
    raise AssertionError("unreachable: every verdict has one of the outcomes")


def all_of(verdicts: Iterable[Verdict], labels: Sequence[str] | None = None) -> Verdict:
    """Every part must hold ("in every language", "at every layer"): one part that does not hold decides;
    else a part that cannot be measured makes the whole not measurable; else an open part leaves it
    inconclusive."""
    return _combine(list(verdicts), labels, (FAILS, NOT_MEASURABLE, INCONCLUSIVE, HOLDS))


def every_unit(verdicts: Iterable[Verdict], labels: Sequence[str], unit: str = "languages") -> Verdict:
    """The claim holds in every measurable unit ("on all of the languages"): units that cannot be measured are
    left out and named with why (one degenerate language does not void the others); of the rest, one that does
    not hold decides, else one open leaves it inconclusive, else it holds. None measurable: not measurable."""
    verdicts = list(verdicts)
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(labels)} labels for {len(verdicts)} verdicts")
    measured = [(label, v) for label, v in zip(labels, verdicts, strict=True) if v.outcome != NOT_MEASURABLE]
    left = [f"{label} ({v.reason})" for label, v in zip(labels, verdicts, strict=True) if v.outcome == NOT_MEASURABLE]
    left_out = f"; left out, not measurable: {'; '.join(left)}" if left else ""
    if not measured:
        return Verdict(NOT_MEASURABLE, f"no {unit} measurable{left_out}")
    combined = all_of([v for _, v in measured], [label for label, _ in measured])
    count = f"{sum(v.outcome == HOLDS for _, v in measured)} of {len(measured)} {unit} hold"
    return Verdict(combined.outcome, f"{count}: {combined.reason}{left_out}")


def any_of(verdicts: Iterable[Verdict], labels: Sequence[str] | None = None) -> Verdict:
    """One part holding is enough; the whole does not hold only when every part does not."""
    return _combine(list(verdicts), labels, (HOLDS, NOT_MEASURABLE, INCONCLUSIVE, FAILS))


def negate(verdict: Verdict) -> Verdict:
    """The opposite claim ("not better than"): holds and does not hold swap, the other outcomes stay."""
    swapped = {HOLDS: FAILS, FAILS: HOLDS}.get(verdict.outcome, verdict.outcome)
    return Verdict(swapped, f"not ({verdict.reason})")


def most(verdicts: Iterable[Verdict], labels: Sequence[str], unit: str = "languages") -> Verdict:
    """The claim holds in most (more than half) of the measurable units ("better in most languages"): holds
    when more than half hold, does not hold when more than half could not hold even if every open unit held,
    else inconclusive. Units that cannot be measured are left out and named with why, as `every_unit` names
    them (a claim that no unit can measure says what each one's numbers are); none left: not measurable."""
    verdicts = list(verdicts)
    if len(labels) != len(verdicts):
        raise ValueError(f"{len(labels)} labels for {len(verdicts)} verdicts")
    by = {
        outcome: [label for label, v in zip(labels, verdicts, strict=True) if v.outcome == outcome]
        for outcome in OUTCOMES
    }
    measured = len(verdicts) - len(by[NOT_MEASURABLE])
    left = [f"{label} ({v.reason})" for label, v in zip(labels, verdicts, strict=True) if v.outcome == NOT_MEASURABLE]
    left_out = f"; not measurable: {'; '.join(left)}" if left else ""
    if measured == 0:
        return Verdict(NOT_MEASURABLE, f"no {unit} measurable{left_out}")
    count = f"holds in {len(by[HOLDS])} of {measured} {unit}"
    details = "; ".join(
        f"{label}: {v.reason}" for label, v in zip(labels, verdicts, strict=True) if v.outcome != NOT_MEASURABLE
    )
    if 2 * len(by[HOLDS]) > measured:
        return Verdict(HOLDS, f"{count} ({details}){left_out}")
    if 2 * (len(by[HOLDS]) + len(by[INCONCLUSIVE])) <= measured:
        return Verdict(FAILS, f"{count} ({details}){left_out}")
    return Verdict(INCONCLUSIVE, f"{count}, {len(by[INCONCLUSIVE])} open ({details}){left_out}")


def rises(
    points: Sequence[Measure],
    steps: Sequence[Interval | None] | None = None,
    overall: Interval | None = None,
    margin: float = 0.0,
) -> Verdict:
    """A number rises over a grid (alpha, data size, window), in the grid's order: no step down beyond the
    margin (each step at_least the one before) and the last point above the first (greater). steps: the
    paired intervals of each point minus the one before; overall: of the last minus the first."""
    if len(points) < 2:
        return Verdict(NOT_MEASURABLE, f"a trend needs two points, got {len(points)}")
    steps = list(steps) if steps is not None else [None] * (len(points) - 1)
    if len(steps) != len(points) - 1:
        raise ValueError(f"{len(steps)} step intervals for {len(points)} points")
    parts = [at_least(b, a, paired, margin) for a, b, paired in zip(points, points[1:], steps, strict=False)]
    parts.append(greater(points[-1], points[0], overall))
    labels = [f"{a.label} -> {b.label}" for a, b in zip(points, points[1:], strict=False)] + ["first -> last"]
    return all_of(parts, labels)
