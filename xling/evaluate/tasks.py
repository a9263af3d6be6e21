"""Metrics of the zero-shot transfer tasks, as the papers print them: percents, with the number of scored units.

XNLI: accuracy over examples. UD POS: accuracy over words. Parsing: UAS and LAS with the CoNLL 2018 shared
task's semantics. NER: span-level micro F1 with seqeval. Every function takes plain Python sequences, so the
fine-tuning code decides how it turns model outputs into labels (first subwords, MST decoding) and this module
only counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import conllu

from xling.data.formats import syntactic_words, universal_relation


class Score(NamedTuple):
    value: float  # percent, 0-100
    n: int  # scored units


class AttachmentScores(NamedTuple):
    uas: float  # percent
    las: float  # percent
    n: int  # syntactic words scored


class SpanScores(NamedTuple):
    precision: float  # percent
    recall: float  # percent
    f1: float  # percent
    n: int  # gold spans


def _check_lengths(gold: Sequence, predicted: Sequence, what: str) -> None:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold {what} but {len(predicted)} predicted")


def accuracy(gold: Sequence, predicted: Sequence) -> Score:
    """Percent of examples whose predicted label equals the gold one (XNLI), and the number of examples."""
    _check_lengths(gold, predicted, "labels")
    if not gold:
        raise ValueError("accuracy of no examples")
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    return Score(100.0 * correct / len(gold), len(gold))


def upos_accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> Score:
    """Percent of words whose predicted UPOS tag equals the gold one, over all sentences (each a list of
    per-word tags), and the number of words."""
    _check_lengths(gold, predicted, "sentences")
    for i, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        _check_lengths(g, p, f"tags in sentence {i}")
    return accuracy([t for s in gold for t in s], [t for s in predicted for t in s])


def attachment_scores(
    gold_sentences: Sequence[conllu.TokenList],
    predicted_heads: Sequence[Sequence[int]],
    predicted_deprels: Sequence[Sequence[str]],
) -> AttachmentScores:
    """UAS and LAS as the CoNLL 2018 shared task's evaluation script (conll18_ud_eval.py) computes them on a
    system file with the gold tokenization.

    Scored units are syntactic words: a multiword token counts as the words it expands to, empty nodes are
    ignored, punctuation is scored like any word. The predictions are per gold word (HEAD as in CoNLL-U:
    0 = root, i = the i-th word), so the script's alignment of system to gold words is the identity and its
    precision, recall and F1 all equal these accuracies. UAS: percent of words with the gold HEAD; LAS: percent
    with the gold HEAD and the gold universal relation (subtypes ignored on both sides: `nmod:poss` ==
    `nmod`). A gold relation the parser cannot predict (absent from the English training treebank) simply
    never matches.
    """
    counts = attachment_counts(gold_sentences, predicted_heads, predicted_deprels)
    n, attached, labelled = (sum(column) for column in zip(*counts, strict=True)) if counts else (0, 0, 0)
    if not n:
        raise ValueError("attachment scores of no words")
    return AttachmentScores(100.0 * attached / n, 100.0 * labelled / n, n)


def attachment_counts(
    gold_sentences: Sequence[conllu.TokenList],
    predicted_heads: Sequence[Sequence[int]],
    predicted_deprels: Sequence[Sequence[str]],
) -> list[tuple[int, int, int]]:
    """(words, attached, labelled) of each sentence, as attachment_scores counts them: the items its bootstrap
    resamples (their sums are its counts, so the scores are the same numbers)."""
    _check_lengths(gold_sentences, predicted_heads, "sentences")
    _check_lengths(gold_sentences, predicted_deprels, "sentences")
    counts = []
    for i, (sentence, heads, deprels) in enumerate(
        zip(gold_sentences, predicted_heads, predicted_deprels, strict=True)
    ):
        words = syntactic_words(sentence)
        _check_lengths(words, heads, f"words in sentence {i}")
        _check_lengths(words, deprels, f"words in sentence {i}")
        attached = labelled = 0
        for word, head, deprel in zip(words, heads, deprels, strict=True):
            if word["head"] == head:
                attached += 1
                labelled += universal_relation(word["deprel"]) == universal_relation(deprel)
        counts.append((len(words), attached, labelled))
    return counts


def _check_iob2(sentences: Sequence[Sequence[str]], which: str) -> None:
    for i, tags in enumerate(sentences):
        for tag in tags:
            if tag != "O" and not (tag[:2] in ("B-", "I-") and len(tag) > 2):
                raise ValueError(f"{which} sentence {i}: {tag!r} is not an IOB2 tag (O, B-X, I-X)")


def repair_spans(tags: Sequence[str]) -> list[str]:
    """Conneau et al. (2020)'s post-processing into valid IOB2 spans: a standalone I-X becomes B-X, and a span
    whose tags change type takes its final type (B-X I-Y I-Z -> B-Z I-Z I-Z).

    A span starts at B-* or at an I-* that follows O or the sentence start, and runs through the I-* tags that
    follow it.
    """
    repaired = list(tags)
    start = None
    for i, tag in enumerate([*tags, "O"]):
        if start is not None and not tag.startswith("I-"):  # the span start..i-1 ends here
            kind = tags[i - 1][2:]
            repaired[start:i] = [f"B-{kind}"] + [f"I-{kind}"] * (i - 1 - start)
            start = None
        if tag != "O" and start is None:
            start = i
    return repaired


def span_f1(
    gold_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]], repair: bool = False
) -> SpanScores:
    """Span-level micro precision, recall and F1 over all entity types (percents), and the number of gold
    spans, with seqeval's default (conlleval) span reading of IOB2 tags.

    A predicted span counts when its type, start and end equal a gold span's. `repair=True` first rewrites the
    predictions with Conneau et al.'s heuristic (repair_spans); gold tags are scored as given. No predicted
    span gives precision 0, no gold span recall 0 (and F1 0).
    """
    gold, predicted = _span_tags(gold_tags, predicted_tags, repair)
    # imported here: seqeval pulls in scikit-learn (~1 s), which only NER needs
    from seqeval.metrics import f1_score, precision_score, recall_score
    from seqeval.metrics.sequence_labeling import get_entities

    return SpanScores(
        100.0 * precision_score(gold, predicted, zero_division=0),
        100.0 * recall_score(gold, predicted, zero_division=0),
        100.0 * f1_score(gold, predicted, zero_division=0),
        len(get_entities(gold)),
    )


def _span_tags(
    gold_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]], repair: bool
) -> tuple[list[list[str]], list[list[str]]]:
    """The checked gold tags and the (repaired) predicted ones span_f1 scores."""
    _check_lengths(gold_tags, predicted_tags, "sentences")
    for i, (g, p) in enumerate(zip(gold_tags, predicted_tags, strict=True)):
        _check_lengths(g, p, f"tags in sentence {i}")
    _check_iob2(gold_tags, "gold")
    _check_iob2(predicted_tags, "predicted")
    return [list(tags) for tags in gold_tags], [repair_spans(tags) if repair else list(tags) for tags in predicted_tags]


def span_counts(
    gold_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]], repair: bool = False
) -> list[tuple[int, int, int]]:
    """(correct, predicted, gold) spans of each sentence, read as span_f1 reads them: the items of its
    bootstrap (micro F1 = 2 sum(correct) / (sum(predicted) + sum(gold)))."""
    from seqeval.metrics.sequence_labeling import get_entities

    gold, predicted = _span_tags(gold_tags, predicted_tags, repair)
    counts = []
    for g, p in zip(gold, predicted, strict=True):
        gold_spans, predicted_spans = set(get_entities(g)), set(get_entities(p))
        counts.append((len(gold_spans & predicted_spans), len(predicted_spans), len(gold_spans)))
    return counts
