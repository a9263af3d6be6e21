"""The chance level of every kind of number the report uses, and the checks that flag a degenerate number.

Why: a number is evidence only when it is above what a model with no signal scores on the same test set. A
BERT at MRR 0.055 against chance 0.050, an XNLI classifier that predicts one class (33.4 % on a balanced set),
BUCC F1 0 with nothing mined or an MLM head that emits one token cannot support any claim, and the findings
must say so instead of comparing them.

Every chance level is a `Chance` (the value and how it was obtained, for the report's note), as a fraction
(0-1) like the retrieval tables; the transfer tables are in percent: multiply by 100 (`Chance.percent`).

Every check returns a reason (a short sentence the report prints beside the cell) or None; `flag` joins the
reasons of one number into its `flag` column.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

import numpy as np

from xling.evaluate.ranks import Ranks, chance_mrr, expected_hit_at_k
from xling.evaluate.tasks import universal_relation
from xling.evaluate.uncertainty import Interval

#: one class at least this share of the predictions: the classifier is constant
CONSTANT_SHARE = 0.95
#: one output piece at least this share of a translation's pieces: the head repeats one token (a working MLM's
#: commonest piece, "the" or ",", is about 5 %)
REPEATED_TOKEN_SHARE = 0.5


@dataclass(frozen=True)
class Chance:
    """A chance level (a fraction) and how it was obtained."""

    value: float
    how: str

    def percent(self) -> "Chance":
        return Chance(100.0 * self.value, self.how)

    def __str__(self) -> str:
        return f"{_fmt(self.value)} ({self.how})"


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value != 0 and abs(value) < 0.01 else f"{value:.3f}"


def _gold_counts(n_candidates: int, n_gold) -> np.ndarray:
    n_gold = np.atleast_1d(np.asarray(n_gold, dtype=np.int64))
    if n_candidates < 1 or n_gold.size == 0 or np.any(n_gold < 1) or np.any(n_gold > n_candidates):
        raise ValueError(
            f"chance needs n_candidates >= 1 and 1 <= golds <= n_candidates per query, got "
            f"{n_candidates} candidates and golds {n_gold[:5].tolist()}"
        )
    return n_gold


# ---------------------------------------------------------------------------------------------- chance levels


def retrieval_mrr(n_candidates: int, n_gold=1) -> Chance:
    """MRR of the best of each query's golds placed at random among the candidates (ranks.chance_mrr)."""
    golds = _gold_counts(n_candidates, n_gold)
    return Chance(
        chance_mrr(n_candidates, golds), f"best of {_span(golds)} gold(s) at random among {n_candidates} candidates"
    )


def retrieval_precision_at_k(n_candidates: int, k: int, n_gold=1) -> Chance:
    """P@k with the golds at random among the candidates: 1 - P(no gold in the top k), a hypergeometric
    probability averaged over queries (k / n with one gold); the P@k of collapsed vectors (every score tied)."""
    golds = _gold_counts(n_candidates, n_gold)
    tied = Ranks(np.zeros_like(golds), np.full_like(golds, n_candidates), golds)
    return Chance(
        float(np.mean(expected_hit_at_k(tied, k))),
        f"P@{k} with {_span(golds)} gold(s) at random among {n_candidates} candidates",
    )


def retrieval_accuracy(n_candidates: int, n_gold=1) -> Chance:
    """Top-1 retrieval accuracy (Tatoeba, contextual word retrieval, monolingual P@1) of a random pick: the
    mean over queries of golds / candidates (1 / n with one gold). Contextual retrieval averages its two
    directions, each with its own candidates: average their chance levels the same way."""
    golds = _gold_counts(n_candidates, n_gold)
    return Chance(float(np.mean(golds / n_candidates)), f"a random pick among {n_candidates} candidates")


def _span(values: np.ndarray) -> str:
    low, high = int(values.min()), int(values.max())
    return str(low) if low == high else f"{low}-{high}"


def classification_accuracy(gold: Sequence[Hashable], n_classes: int | None = None) -> Chance:
    """Accuracy (XNLI, UPOS over words) of the better of two floors on this test set: a uniform guess over the
    classes (1 / n_classes; default the classes the gold uses) and always predicting the test set's majority
    class (its share). The majority rate is the floor on an unbalanced set: UPOS is ~20 % NOUN, not 1/17."""
    if len(gold) == 0:
        raise ValueError("chance accuracy of no examples")
    counts = Counter(gold)
    n_classes = n_classes or len(counts)
    label, top = counts.most_common(1)[0]
    majority = top / len(gold)
    if majority >= 1 / n_classes:
        return Chance(majority, f"always {label!r}, the majority class of {len(gold)} test items")
    return Chance(1 / n_classes, f"a uniform guess over {n_classes} classes")


def attachment_las(heads: Sequence[Sequence[int]], deprels: Sequence[Sequence[str]]) -> Chance:
    """LAS of the better of two chains on the gold test set: every word attached to its predecessor (the first
    to the root), or to its successor (the last to the root; head-final languages), with the label 'root' on
    the root-attached word and the test set's commonest other universal relation on the rest. Why this floor:
    it needs no model, and a parser that learned nothing but word order and the commonest label reaches it;
    a trained parser's LAS below it carries no syntax."""
    if not heads or len(heads) != len(deprels):
        raise ValueError(f"{len(heads)} sentences of heads but {len(deprels)} of relations")
    relations = [universal_relation(r) for sentence in deprels for r in sentence]
    others = Counter(r for r in relations if r != "root")
    common = others.most_common(1)[0][0] if others else "root"
    n = len(relations)
    if n == 0:
        raise ValueError("chance LAS of no words")
    scores = {}
    for chain, step in (("predecessor", -1), ("successor", +1)):
        correct = 0
        for sentence_heads, sentence_rels in zip(heads, deprels, strict=True):
            length = len(sentence_heads)
            for i, (head, rel) in enumerate(zip(sentence_heads, sentence_rels, strict=True), start=1):
                guess = i + step if 1 <= i + step <= length else 0
                label = "root" if guess == 0 else common
                correct += head == guess and universal_relation(rel) == label
        scores[chain] = correct / n
    chain = max(scores, key=scores.get)
    return Chance(scores[chain], f"each word attached to its {chain}, labelled {common!r}, over {n} words")


def span_f1() -> Chance:
    """NER span F1 of predicting no entity: 0 (no predicted span, precision 0 by seqeval's zero_division).
    A random tagger's exact span matches are also near 0, so the floor is 0 and a degenerate NER score shows
    as an interval that reaches 0 or as no predicted span (`no_predicted_spans`)."""
    return Chance(0.0, "no entity predicted")


def bucc_f1(n_src: int, n_en: int, n_gold: int) -> Chance:
    """F1 of a random one-to-one mining of all min(n_src, n_en) pairs: each (source, English) pair is mined with
    probability 1 / max(n_src, n_en), so the expected correct pairs are c = n_gold / max(n_src, n_en) and
    F1 = 2c / (mined + gold) (mined and gold are fixed, so this is the exact expectation). On BUCC's corpora
    (~400k sentences a side) it is ~1e-8: in effect 0, so a BUCC F1 is degenerate when its interval reaches 0
    or nothing correct was mined (`nothing_mined`)."""
    if min(n_src, n_en, n_gold) < 1:
        raise ValueError(f"BUCC chance needs sentences and gold pairs, got {n_src}, {n_en}, {n_gold}")
    mined = min(n_src, n_en)
    correct = n_gold / max(n_src, n_en)
    return Chance(2 * correct / (mined + n_gold), f"a random one-to-one mining of {n_src} x {n_en} sentences")


def cka(random_cka: float) -> Chance:
    """CKA's floor is the random encoder's CKA on the same sentences at the same layer (Conneau et al. 2020):
    two unrelated spaces of paired rows are not at 0 (a shared input length and position alone give some)."""
    return Chance(float(random_cka), "a randomly initialised encoder on the same sentences")


# ---------------------------------------------------------------------------------------------- degenerate checks


def _bounds(number: Interval | float) -> tuple[float, float, str]:
    if isinstance(number, Interval):
        return number.low, number.high, f"{number.level:.0%} interval {number}"
    return float(number), float(number), _fmt(float(number))


def at_or_below_chance(number: Interval | float, chance: Chance | float) -> str | None:
    """The number cannot be told from chance: its interval's lower bound at or below the chance level (a bare
    number: the number itself). Why the lower bound: a number whose interval still holds chance (0.055
    [0.041, 0.070] against chance 0.050) carries no signal any comparison could rest on."""
    level = chance.value if isinstance(chance, Chance) else float(chance)
    low, high, text = _bounds(number)
    if high <= level:
        return f"at or below chance: {text} <= chance {_fmt(level)}"
    if low <= level:
        return f"not above chance: {text} holds chance {_fmt(level)}"
    return None


def did_not_learn(dev: Interval | float, chance: Chance | float, language: str = "English") -> str | None:
    """A fine-tuning whose score on its own language's dev split is not above chance learned nothing: its
    zero-shot numbers are degenerate whatever they are."""
    reason = at_or_below_chance(dev, chance)
    return None if reason is None else f"the fine-tuning did not learn {language} ({language} dev {reason})"


def dominant_share(items: Iterable[Hashable], threshold: float) -> tuple[Hashable, float, int] | None:
    """(item, share, total) of the commonest item when its share is >= threshold, else None."""
    counts = Counter(items)
    total = sum(counts.values())
    if total == 0:
        return None
    item, top = counts.most_common(1)[0]
    return (item, top / total, total) if top / total >= threshold else None


def constant_predictions(predictions: Iterable[Hashable], threshold: float = CONSTANT_SHARE) -> str | None:
    """One class is at least `threshold` of the predictions (flatten tag sequences first): XNLI at 33.40 % on a
    balanced set with every prediction 'contradiction' is a constant, not a model."""
    found = dominant_share(predictions, threshold)
    if found is None:
        return None
    label, share, total = found
    return f"constant predictions: {label!r} is {share:.1%} of {total}"


def repeated_token(pieces: Iterable[str], threshold: float = REPEATED_TOKEN_SHARE) -> str | None:
    """One output piece is at least `threshold` of a decoder's output ("бон бон бон …"): its convert rate
    measures that one token's vocabulary, not a translation."""
    found = dominant_share(pieces, threshold)
    if found is None:
        return None
    piece, share, total = found
    return f"one token repeated: {piece!r} is {share:.1%} of {total} output pieces"


def nothing_mined(n_extracted: int, n_correct: int | None = None) -> str | None:
    """BUCC mined no pair above the threshold, or none of the mined pairs is gold (F1 0 either way)."""
    if n_extracted == 0:
        return "nothing mined: no candidate pair above the dev threshold"
    if n_correct == 0:
        return f"nothing mined correctly: none of {n_extracted} mined pairs is gold"
    return None


def no_predicted_spans(n_predicted_spans: int) -> str | None:
    """An NER model that predicts no entity scores F1 0 by construction."""
    return "no entity predicted" if n_predicted_spans == 0 else None


def all_tied(scores: Sequence[float] | np.ndarray, rtol: float = 1e-9) -> str | None:
    """Every score the same (collapsed vectors, a constant head): any ranking of them is arbitrary."""
    values = np.asarray(scores, dtype=np.float64).ravel()
    if values.size < 2:
        return None
    spread = values.max() - values.min()
    if spread <= rtol * max(1.0, float(np.abs(values).max())):
        return f"all {values.size} scores tied at {_fmt(float(values[0]))}"
    return None


def all_candidates_tied(tied: Sequence[int] | np.ndarray, n_candidates: int) -> str | None:
    """Retrieval whose gold ties with every candidate for every query (ranks.Ranks.tied == candidates): the
    vectors collapsed and the MRR is chance by construction."""
    tied = np.asarray(tied)
    if tied.size and np.all(tied >= n_candidates):
        return f"all scores tied: every query's gold ties with all {n_candidates} candidates"
    return None


def flag(*reasons: str | None) -> str | None:
    """One number's `flag` column: its reasons joined, or None when nothing is wrong with it."""
    found = [r for r in reasons if r]
    return "; ".join(dict.fromkeys(found)) if found else None


def is_degenerate(flag_value: str | None) -> bool:
    """Whether a table's `flag` cell marks its number degenerate (None, NaN and "" do not)."""
    return isinstance(flag_value, str) and flag_value.strip() != ""
