"""Function words in the synthetic test dictionaries (synthetic.dictionary.function_words): the closed class of
Liu et al. 2020 Table 1 on controlled data. The grammar's function words enter the test dictionary, the synthetic
English treebank tags them with their closed-class UPOS, and word retrieval by part of speech then has the open-
and closed-class rows the claim liu2020_what.pos.open-closed is judged on."""

from pathlib import Path

import pandas as pd
import pytest

from xling.data import formats, synthetic
from xling.data.synthetic.spec import FUNCTION
from xling.evaluate.findings import FAILS, HOLDS, NOT_MEASURED, judge_claims
from xling.evaluate.word_pos import CLOSED_CLASS, mrr_by_pos, word_tags

OPEN_CLASS = ["NOUN", "VERB", "ADJ", "ADV"]
SPEC = {"seed": 3, "sentences": 600, "document_length": [2, 6], "concepts": 120, "topics": 6,
        "dictionary": {"train": [0, 60], "test": [60, 100]}, "parallel_sentences": 20,
        "ud_sentences": {"train": 60, "dev": 10, "test": 20}, "tatoeba_sentences": 10,
        "bucc_sentences": {"dev": 40, "test": 40}, "xnli_pairs": {"train": 9, "dev": 3, "test": 3},
        "ner_sentences": {"train": 5, "dev": 5, "test": 5},
        "languages": {"xa": {"script": "cyrillic", "anchors": 0.2}}}


def _generate(root: Path, function_words: bool) -> Path:
    spec = {**SPEC, "dictionary": {**SPEC["dictionary"], "function_words": function_words}}
    synthetic.generate(spec, ["en", "xa"], root)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[bool, Path]:
    return {flag: _generate(tmp_path_factory.mktemp(f"function{flag}"), flag) for flag in (False, True)}


def _test_dictionary(root: Path) -> list[tuple[str, str]]:
    return formats.read_dictionary(root / "dict" / "en-xa.test.txt")


def _tags(root: Path) -> pd.DataFrame:
    return word_tags([root / "ud" / f"en.{split}.conllu" for split in ("train", "dev", "test")])


def test_function_words_join_the_test_dictionary_only_when_asked(runs):
    _, world, langs = synthetic.build(SPEC, ["en", "xa"])
    function = {(langs["en"].lemma[c], langs["xa"].lemma[c])
                for c in range(world.n_content, world.n_content + len(FUNCTION))}
    without, with_ = _test_dictionary(runs[False]), _test_dictionary(runs[True])
    assert not function & set(without)
    assert with_[:len(without)] == without  # the content pairs unchanged, the function words after them
    assert set(with_[len(without):]) == function  # every function word of the grammar occurs in both corpora
    for split in ("train", "full"):  # only the test split changes
        assert (runs[True] / "dict" / f"en-xa.{split}.txt").read_bytes() == \
            (runs[False] / "dict" / f"en-xa.{split}.txt").read_bytes()


def test_the_synthetic_treebank_tags_them_with_the_closed_class(runs):
    """As real data is tagged: each query's most frequent UPOS in the pivot's treebank; the function words' tags
    are the closed class's (determiner, adposition, pronoun, particle, conjunction), the others the open class's."""
    _, world, langs = synthetic.build(SPEC, ["en", "xa"])
    grammar = {langs["en"].lemma[world.n_content + i]: upos for i, (_, upos, _) in enumerate(FUNCTION)}
    tags = _tags(runs[True]).set_index("word")["upos"]
    pairs = _test_dictionary(runs[True])
    tagged = {word: tags[word] for word, _ in pairs if word in grammar and word in tags}
    assert tagged == {word: grammar[word] for word in tagged}  # as the grammar knows them (a rare one: untagged)
    assert set(tagged.values()) == set(CLOSED_CLASS) & set(grammar.values()) and len(tagged) >= len(grammar) - 3
    assert all(tags.get(word, "NOUN") in OPEN_CLASS for word, _ in pairs if word not in grammar)


def _ranks(pairs, tags: pd.Series, open_rr: float, closed_rr: float) -> pd.DataFrame:
    """Planted per-query ranks of the test dictionary: every open-class query at one reciprocal rank, every
    closed-class one at another."""
    rows = [dict(word=word, reciprocal_rank=closed_rr if tags.get(word) in CLOSED_CLASS else open_rr)
            for word, _ in pairs]
    return pd.DataFrame(rows).assign(layer=1, pair="en-xa", model="bert", size=500, window=64, metric="cosine",
                                     dictionary_split="test")


def _claim(root: Path, open_rr: float, closed_rr: float) -> str:
    tags = _tags(root)
    ranks = _ranks(_test_dictionary(root), tags.set_index("word")["upos"], open_rr, closed_rr)
    pos = mrr_by_pos(ranks, tags, OPEN_CLASS, n_resamples=200).drop(columns="reciprocal_rank", errors="ignore")
    lm = dict(model="bert", window=64, layer=1, metric="cosine", dictionary_split="test", pair="en-xa", mrr=0.5,
              chance_mrr=0.01)
    retrieval = pd.DataFrame([dict(lm, size=size) for size in (100, 500)])
    tables = {"word_retrieval": retrieval, "word_retrieval_pos": pos}
    return judge_claims(tables, "en", resamples=200, shown_layer=1).set_index("id").loc[
        "liu2020_what.pos.open-closed", "outcome"]


def test_the_claim_is_judged_on_the_synthetic_classes(runs):
    """Planted ranks: open class retrieved better -> holds; worse -> does not hold; without function words in the
    dictionary there is no closed-class row, so the claim is not measured (the demo before this key)."""
    assert _claim(runs[True], 0.8, 0.2) == HOLDS
    assert _claim(runs[True], 0.2, 0.8) == FAILS
    assert _claim(runs[False], 0.8, 0.2) == NOT_MEASURED


def test_function_words_must_be_a_boolean():
    with pytest.raises(ValueError, match=r"synthetic\.dictionary\.function_words"):
        synthetic.resolve_spec({"dictionary": {"function_words": "yes"}}, ["en"])
