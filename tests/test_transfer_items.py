"""Transfer's per-item counts (xling.evaluate.transfer_items) reproduce the table's numbers, the gather's
intervals (xling.evaluate.intervals) bracket them, and the prediction flags fire on planted degenerate outputs."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xling.data.formats import read_conllu
from xling.evaluate.intervals import Bootstrap, with_intervals
from xling.evaluate.transfer import corpus_sentences, score
from xling.evaluate.transfer_items import transfer_checks
from xling.evaluate.uncertainty import bootstrap_ratio, Ratio
from xling.tables import gather

CONLL18 = Path(__file__).parent / "data" / "conll18"
NLI = ["entailment", "neutral", "contradiction"]
NER = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


def table_value(items) -> float:
    """The table's number from its items, as the gather reads them (percent)."""
    counts = np.asarray(items, dtype=np.int64)
    return 100.0 * counts[:, 0].sum() / counts[:, 1].sum()


def xnli(rng, n=200):
    examples = [("p", "h", NLI[i]) for i in rng.integers(0, 3, size=n)]
    predictions = [NLI.index(e[2]) if rng.random() < 0.6 else int(rng.integers(0, 3)) for e in examples]
    return examples, predictions


def test_xnli_items_reproduce_the_accuracy_exactly_and_constant_predictions_are_flagged():
    examples, predictions = xnli(np.random.default_rng(0))
    checks = transfer_checks("xnli", examples, predictions, NLI)
    assert table_value(checks.items["accuracy"]) == score("xnli", examples, predictions, NLI)["accuracy"][0]
    assert checks.flag is None and 25 < checks.chances["accuracy"].value < 50
    constant = transfer_checks("xnli", examples, [2] * len(examples), NLI)
    assert constant.flag.startswith("constant predictions: 'contradiction' is 100.0%")


def test_pos_items_count_words_by_sentence():
    tags = ["NOUN", "VERB", "DET", "ADJ"]
    rng = np.random.default_rng(1)
    examples = [[{"upos": tags[i]} for i in rng.integers(0, 4, size=n)] for n in rng.integers(1, 12, size=40)]
    predictions = [[tags.index(t["upos"]) if rng.random() < 0.7 else 0 for t in s] for s in examples]
    checks = transfer_checks("pos", examples, predictions, tags)
    assert len(checks.items["upos"]) == 40
    assert table_value(checks.items["upos"]) == score("pos", examples, predictions, tags)["upos"][0]
    assert transfer_checks("pos", examples, [[1] * len(s) for s in examples], tags).flag.startswith("constant")


def test_parsing_items_reproduce_uas_and_las_on_the_conll18_fixtures():
    gold = read_conllu(CONLL18 / "gold.conllu")
    system = read_conllu(CONLL18 / "system.conllu")
    labels = sorted({w["deprel"] for s in [*gold, *system] for w in s})
    predictions = [([w["head"] for w in s], [labels.index(w["deprel"]) for w in s]) for s in system]
    checks = transfer_checks("parsing", gold, predictions, labels)
    scores = score("parsing", gold, predictions, labels)
    for metric in ("uas", "las"):
        assert table_value(checks.items[metric]) == scores[metric][0]
    assert 0 < checks.chances["las"].value < scores["las"][0]


def ner(rng, n=60):
    examples = [(None, list(rng.choice(NER, size=k))) for k in rng.integers(1, 15, size=n)]
    predictions = [
        [NER.index(t) if rng.random() < 0.7 else int(rng.integers(0, len(NER))) for t in tags] for _, tags in examples
    ]
    return examples, predictions


@pytest.mark.parametrize("repair", [False, True])
def test_ner_items_reproduce_precision_recall_and_f1(repair):
    examples, predictions = ner(np.random.default_rng(2))
    checks = transfer_checks("ner", examples, predictions, NER, ner_repair=repair)
    scores = score("ner", examples, predictions, NER, ner_repair=repair)
    for metric in ("precision", "recall"):
        assert table_value(checks.items[metric]) == scores[metric][0]
    # seqeval's F1 is 2PR / (P + R): the same number up to rounding
    assert table_value(checks.items["f1"]) == pytest.approx(scores["f1"][0], rel=1e-12)
    assert checks.flag is None
    silent = transfer_checks("ner", examples, [[0] * len(tags) for _, tags in examples], NER)
    assert silent.flag == "no entity predicted" and table_value(silent.items["f1"]) == 0


def part_and_items(examples, predictions, *, lang="en", split="dev"):
    """One row of a transfer part with its items, as evaluate_items writes them."""
    checks = transfer_checks("xnli", examples, predictions, NLI)
    keys = {"lang": lang, "split": split, "transform": "none", "alpha": np.nan, "metric": "accuracy"}
    value = score("xnli", examples, predictions, NLI)["accuracy"][0]
    row = {
        **keys,
        "value": value,
        "chance": checks.chances["accuracy"].value,
        "chance_how": checks.chances["accuracy"].how,
        "flag": checks.flag,
        "learn_check": split == "dev",
    }
    counts = np.asarray(checks.items["accuracy"])
    items = pd.DataFrame(
        {**keys, "item": np.arange(len(counts)), "numerator": counts[:, 0], "denominator": counts[:, 1]}
    )
    return row, items


def test_the_gathered_interval_brackets_the_number_and_is_the_bootstrap_of_the_items():
    rng = np.random.default_rng(3)
    dev, dev_items = part_and_items(*xnli(rng))
    test, test_items = part_and_items(*xnli(rng), lang="fr", split="test")
    table = pd.DataFrame([dev, test])
    out = with_intervals(table, pd.concat([dev_items, test_items]), 100.0, Bootstrap(resamples=500, seed=7))
    assert out[list(table.columns)].equals(table.assign(flag=[None, None]))  # numbers and keys unchanged
    assert (out.ci_low < out.value).all() and (out.value < out.ci_high).all()
    assert (out.ci_resamples == 500).all() and (out.ci_seed == 7).all() and (out.n_items == 200).all()
    expected = bootstrap_ratio(
        Ratio(test_items.numerator.to_numpy(), test_items.denominator.to_numpy()), n_resamples=500, seed=7
    )
    assert out.ci_low[1] == pytest.approx(100 * expected.low) and out.ci_high[1] == pytest.approx(100 * expected.high)


def test_a_fine_tuning_at_chance_on_its_own_dev_flags_every_row():
    rng = np.random.default_rng(4)
    examples = xnli(rng)[0]
    guesses = [int(i) for i in rng.integers(0, 3, size=len(examples))]  # a model that learned nothing
    dev, dev_items = part_and_items(examples, guesses)
    test, test_items = part_and_items(*xnli(rng), lang="fr", split="test")
    out = with_intervals(pd.DataFrame([dev, test]), pd.concat([dev_items, test_items]), 100.0, Bootstrap(resamples=200))
    assert all("the fine-tuning did not learn en" in flag for flag in out.flag)
    assert out.flag[0].startswith("not above chance") or out.flag[0].startswith("at or below chance")
    assert out.flag[1].count("did not learn") == 1


def test_items_that_name_no_row_of_the_table_are_refused():
    row, items = part_and_items(*xnli(np.random.default_rng(5)))
    with pytest.raises(ValueError, match="columns the table lacks"):
        with_intervals(pd.DataFrame([row]).drop(columns="transform"), items)


def test_gather_adds_each_part_s_intervals_and_keeps_its_rows(tmp_path):
    rng = np.random.default_rng(6)
    parts = []
    for seed in (1, 2):
        row, items = part_and_items(*xnli(rng))
        parts.append(tmp_path / f"seed{seed}.parquet")
        pd.DataFrame([row]).assign(seed=seed).to_parquet(parts[-1])
        items.to_parquet(tmp_path / f"seed{seed}.items.parquet")

    def intervals(part, table):
        items = pd.read_parquet(part.with_suffix(".items.parquet"))
        return with_intervals(table, items, 100.0, Bootstrap(resamples=100))

    table = gather(parts, tmp_path / "transfer.parquet", tmp_path / "transfer.csv", each=intervals)
    assert table.seed.tolist() == [1, 2] and (table.ci_low < table.value).all() and (table.value < table.ci_high).all()
    assert pd.read_csv(tmp_path / "transfer.csv").ci_high.tolist() == pytest.approx(table.ci_high.tolist())


def test_language_mean_text_is_capped_in_sentences_and_in_tokens(tmp_path):
    """transfer.mean_sentences and transfer.mean_tokens: the first sentences, across documents, up to whichever cap
    comes first; the sentence that reaches the token cap is kept."""
    corpus = tmp_path / "en.txt"
    corpus.write_text("a b c\nd e\n\nf g h i\nj\n", encoding="utf-8")  # 3, 2 | 4, 1 tokens
    assert corpus_sentences(corpus, None, None) == ["a b c", "d e", "f g h i", "j"]
    assert corpus_sentences(corpus, 3, None) == ["a b c", "d e", "f g h i"]
    assert corpus_sentences(corpus, None, 5) == ["a b c", "d e"]  # 5 tokens reached after the second
    assert corpus_sentences(corpus, None, 6) == ["a b c", "d e", "f g h i"]  # 9 >= 6: the third kept
    assert corpus_sentences(corpus, 1, 6) == ["a b c"]
    assert corpus_sentences(corpus, None, 1) == ["a b c"]  # never empty
