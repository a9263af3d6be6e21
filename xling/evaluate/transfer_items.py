"""What a transfer score is made of: per-item counts (examples, sentences) whose ratio of sums is the table's
number, the chance level of the task on that test set, and the degenerate reasons the predictions show.

Why here, in the evaluation job: the predictions exist only there. The gather step (xling.evaluate.intervals)
turns the items into bootstrap intervals, so changing the bootstrap reruns no model.

Items are fractions: the table's value is 100 * sum(numerator) / sum(denominator) over a row's items,
exactly for accuracy, UPOS and attachment (the same integer counts), and up to rounding for NER F1 (seqeval
computes F1 from precision and recall; the items give 2 correct / (predicted + gold)).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from xling.data.formats import syntactic_words
from xling.evaluate import chance
from xling.evaluate.tasks import attachment_counts, span_counts


class Checks(NamedTuple):
    """{metric: [(numerator, denominator) per item]}, {metric: Chance (percent)}, the predictions' flag."""

    items: dict[str, list[tuple[int, int]]]
    chances: dict[str, chance.Chance]
    flag: str | None


def transfer_checks(
    task: str, examples: list, predictions: list, labels: Sequence[str], ner_repair: bool = True
) -> Checks:
    """The items, chance levels and prediction flags of one scored split (xling.evaluate.transfer.score's
    arguments)."""
    if task == "xnli":
        gold, predicted = [e[2] for e in examples], [labels[p] for p in predictions]
        items = {"accuracy": [(int(g == p), 1) for g, p in zip(gold, predicted, strict=True)]}
        level = chance.classification_accuracy(gold, n_classes=len(labels))
        return Checks(items, {"accuracy": level.percent()}, chance.flag(chance.constant_predictions(predicted)))
    if task == "pos":
        gold = [[t["upos"] for t in s] for s in examples]
        predicted = [[labels[i] for i in p] for p in predictions]
        items = {
            "upos": [
                (sum(g == p for g, p in zip(gs, ps, strict=True)), len(gs))
                for gs, ps in zip(gold, predicted, strict=True)
            ]
        }
        level = chance.classification_accuracy([t for s in gold for t in s], n_classes=len(labels))
        flat = [t for s in predicted for t in s]
        return Checks(items, {"upos": level.percent()}, chance.flag(chance.constant_predictions(flat)))
    if task == "parsing":
        deprels = [[labels[i] for i in rels] for _, rels in predictions]
        counts = attachment_counts(examples, [heads for heads, _ in predictions], deprels)
        items = {
            "uas": [(attached, n) for n, attached, _ in counts],
            "las": [(labelled, n) for n, _, labelled in counts],
        }
        words = [syntactic_words(sentence) for sentence in examples]
        level = chance.attachment_las(
            [[w["head"] for w in s] for s in words], [[w["deprel"] for w in s] for s in words]
        )
        flat = [r for s in deprels for r in s]
        return Checks(items, {"las": level.percent()}, chance.flag(chance.constant_predictions(flat)))
    if task == "ner":
        predicted = [[labels[i] for i in p] for p in predictions]
        counts = span_counts([tags for _, tags in examples], predicted, repair=ner_repair)
        items = {
            "f1": [(2 * c, p + g) for c, p, g in counts],
            "precision": [(c, p) for c, p, _ in counts],
            "recall": [(c, g) for c, _, g in counts],
        }
        level = chance.span_f1().percent()
        n_predicted = sum(p for _, p, _ in counts)
        # not constant_predictions: "O" is most tags of a working tagger too; all "O" is no predicted span
        return Checks(items, dict.fromkeys(items, level), chance.flag(chance.no_predicted_spans(n_predicted)))
    raise ValueError(f"unknown task {task!r}")
