"""Function-word dictionaries of the synthetic data (synthetic.dictionary.function_words): the closed class of
Liu et al. 2020 Table 1 on controlled data. The grammar's function words get a dictionary of their own beside the
unchanged test dictionary, the synthetic English treebank tags them with their closed-class UPOS, and word
retrieval by part of speech then has the open- and closed-class rows the claim liu2020_what.pos.open-closed is
judged on, while the main MRR stays content-only (tests/test_retrieval.py)."""

from pathlib import Path

import pandas as pd
import pytest

from xling.data import formats, synthetic
from xling.data.synthetic.spec import FUNCTION
from xling.evaluate.findings import FAILS, HOLDS, NOT_MEASURED, judge_claims
from xling.evaluate.word_pos import CLOSED_CLASS, mrr_by_pos, word_tags
from synthetic_specs import small_spec

OPEN_CLASS = ["NOUN", "VERB", "ADJ", "ADV"]
SPEC = small_spec(
    seed=3,
    sentences=600,
    concepts=120,
    topics=6,
    dictionary=(0, 60, 100),
    parallel_sentences=20,
    ud_sentences={"train": 60, "dev": 10, "test": 20},
    languages={"xa": {"script": "cyrillic", "anchors": 0.2}},
)


def _generate(root: Path, function_words: bool) -> Path:
    spec = {**SPEC, "dictionary": {**SPEC["dictionary"], "function_words": function_words}}
    synthetic.generate(spec, ["en", "xa"], root)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[bool, Path]:
    return {flag: _generate(tmp_path_factory.mktemp(f"function{flag}"), flag) for flag in (False, True)}


def _dictionary(root: Path, split: str = "test") -> list[tuple[str, str]]:
    return formats.read_dictionary(root / "dict" / f"en-xa.{split}.txt")


def _tags(root: Path) -> pd.DataFrame:
    return word_tags([root / "ud" / f"en.{split}.conllu" for split in ("train", "dev", "test")])


def test_function_words_get_a_dictionary_of_their_own_only_when_asked(runs):
    _, world, langs = synthetic.build(SPEC, ["en", "xa"])
    function = [
        (langs["en"].lemma[c], langs["xa"].lemma[c]) for c in range(world.n_content, world.n_content + len(FUNCTION))
    ]
    assert _dictionary(runs[True], "function") == function  # every function word occurs in both corpora
    assert not (runs[False] / "dict" / "en-xa.function.txt").exists()
    assert not set(function) & set(_dictionary(runs[True]))
    for split in ("train", "test", "full"):  # the other dictionaries byte for byte as without the key
        assert (runs[True] / "dict" / f"en-xa.{split}.txt").read_bytes() == (
            runs[False] / "dict" / f"en-xa.{split}.txt"
        ).read_bytes()


def test_the_synthetic_treebank_tags_them_with_the_closed_class(runs):
    """As real data is tagged: each query's most frequent UPOS in the pivot's treebank; the function words' tags
    are the closed class's (determiner, adposition, pronoun, particle, conjunction), the others the open class's."""
    _, world, langs = synthetic.build(SPEC, ["en", "xa"])
    grammar = {langs["en"].lemma[world.n_content + i]: upos for i, (_, upos, _) in enumerate(FUNCTION)}
    tags = _tags(runs[True]).set_index("word")["upos"]
    pairs = _dictionary(runs[True]) + _dictionary(runs[True], "function")
    tagged = {word: tags[word] for word, _ in pairs if word in grammar and word in tags}
    assert tagged == {word: grammar[word] for word in tagged}  # as the grammar knows them (a rare one: untagged)
    assert set(tagged.values()) == set(CLOSED_CLASS) & set(grammar.values()) and len(tagged) >= len(grammar) - 3
    assert all(tags.get(word, "NOUN") in OPEN_CLASS for word, _ in pairs if word not in grammar)


def _ranks(pairs, tags: pd.Series, open_rr: float, closed_rr: float) -> pd.DataFrame:
    """Planted per-query ranks of a dictionary: every open-class query at one reciprocal rank, every
    closed-class one at another."""
    rows = [
        dict(word=word, reciprocal_rank=closed_rr if tags.get(word) in CLOSED_CLASS else open_rr) for word, _ in pairs
    ]
    return pd.DataFrame(rows).assign(
        layer=1, pair="en-xa", model="bert", size=500, window=64, metric="cosine", dictionary_split="test"
    )


def _claim(root: Path, open_rr: float, closed_rr: float) -> str:
    tags = _tags(root)
    splits = ["test", "function"] if (root / "dict" / "en-xa.function.txt").exists() else ["test"]
    # the main ranks and the function words' (rule word_retrieval_pos reads both files)
    ranks = pd.concat(
        [_ranks(_dictionary(root, split), tags.set_index("word")["upos"], open_rr, closed_rr) for split in splits],
        ignore_index=True,
    )
    pos = mrr_by_pos(ranks, tags, OPEN_CLASS, n_resamples=200).drop(columns="reciprocal_rank", errors="ignore")
    lm = dict(
        model="bert",
        window=64,
        layer=1,
        metric="cosine",
        dictionary_split="test",
        pair="en-xa",
        mrr=0.5,
        chance_mrr=0.01,
    )
    retrieval = pd.DataFrame([dict(lm, size=size) for size in (100, 500)])
    tables = {"word_retrieval": retrieval, "word_retrieval_pos": pos}
    return (
        judge_claims(tables, "en", resamples=200, shown_layer=1)
        .set_index("id")
        .loc["liu2020_what.pos.open-closed", "outcome"]
    )


def test_the_claim_is_judged_on_the_synthetic_classes(runs):
    """Planted ranks: open class retrieved better -> holds; worse -> does not hold; without function words in the
    dictionary there is no closed-class row, so the claim is not measured (the demo without this key)."""
    assert _claim(runs[True], 0.8, 0.2) == HOLDS
    assert _claim(runs[True], 0.2, 0.8) == FAILS
    assert _claim(runs[False], 0.8, 0.2) == NOT_MEASURED


def test_function_words_must_be_a_boolean():
    with pytest.raises(ValueError, match=r"synthetic\.dictionary\.function_words"):
        synthetic.resolve_spec({"dictionary": {"function_words": "yes"}}, ["en"])


def test_the_plan_ranks_function_words_on_synthetic_data_with_the_key_only():
    """The word_retrieval rule's function dictionaries (rules/evaluate.smk) and the generator's files."""
    from plan_configs import make_plan

    on = make_plan(data={"source": "synthetic"}, synthetic={"dictionary": {"function_words": True}})
    assert on.function_dictionaries() == [on.dictionary(lang, "function") for lang in ("de", "fr")]
    assert all(
        path.endswith(f"dict/en-{lang}.function.txt")
        for path, lang in zip(on.function_dictionaries(), ("de", "fr"), strict=True)
    )
    assert set(on.function_dictionaries()) <= set(on.layout.synthetic(["en", "de", "fr"], True))
    assert not set(on.function_dictionaries()) & set(on.layout.synthetic(["en", "de", "fr"]))
    assert make_plan(data={"source": "synthetic"}).function_dictionaries() == []
    real = make_plan(data={"source": "real"}, synthetic={"dictionary": {"function_words": True}})
    assert real.function_dictionaries() == []  # MUSE has no function-word dictionary of its own


@pytest.mark.parametrize(
    "retrieval",
    [
        {"candidates": "vocabulary", "vocabulary_size": 50},
        {"metric": "csls", "csls_neighbourhood": "all_words", "vocabulary_size": 50},
    ],
)
def test_a_search_space_the_function_words_would_join_is_refused(retrieval):
    """The store holds the function words' vectors: where the main retrieval searches the store (vocabulary
    candidates, CSLS neighbourhoods of all words) those outside the retrieval vocabulary would change the main MRR,
    so the plan stops."""
    from plan_configs import make_plan

    plan = make_plan(
        data={"source": "synthetic"}, synthetic={"dictionary": {"function_words": True}}, retrieval=retrieval
    )
    with pytest.raises(ValueError, match=r"function_words.*search space"):
        plan.function_dictionaries()
    csls_over_queries = make_plan(
        data={"source": "synthetic"},
        synthetic={"dictionary": {"function_words": True}},
        retrieval={"metric": "csls", "csls_neighbourhood": "queries"},
    )
    assert csls_over_queries.function_dictionaries()
