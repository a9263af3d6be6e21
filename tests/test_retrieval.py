"""xling.evaluate.word_retrieval.word_retrieval end to end on planted vectors in a store written by the test."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xling.data.word_lists import most_frequent_words
from xling.evaluate.word_retrieval import COLUMNS, RANK_COLUMNS, word_retrieval

N = 6
EN = [f"e{i}" for i in range(N)]
XX = [f"x{i}" for i in range(N)]
SWAP = [1, 0, 3, 2, 4, 5]  # layer 1: x_i carries e_SWAP[i]'s vector; 4 and 5 are fixed points


def _store(path, layers: dict[int, dict[str, dict[str, np.ndarray]]]):
    rows = []
    for layer, langs in layers.items():
        for lang, vectors in langs.items():
            for word, vec in vectors.items():
                rows.append(
                    {
                        "lang": lang,
                        "word": word,
                        "layer": np.int32(layer),
                        "n": 3,
                        **{f"d{j}": float(v) for j, v in enumerate(vec)},
                    }
                )
    df = pd.DataFrame(rows)
    df["layer"] = df["layer"].astype("int32")
    df.to_parquet(path, index=False)


@pytest.fixture
def setup(tmp_path):
    eye = np.eye(N + 2)
    en = {w: eye[i] for i, w in enumerate(EN)} | {"rare": eye[N], "enonly": eye[N + 1]}
    identity = {w: eye[i] for i, w in enumerate(XX)} | {"xrare": eye[N]}
    swapped = {w: eye[SWAP[i]] for i, w in enumerate(XX)} | {"xrare": eye[N]}
    store = tmp_path / "words.parquet"
    _store(store, {0: {"en": en, "xx": identity}, 1: {"en": en, "xx": swapped}})
    counts = pd.DataFrame(
        {
            "lang": ["en"] * (N + 2) + ["xx"] * (N + 2),
            "word": EN + ["rare", "enonly"] + XX + ["xrare", "novector"],
            "count": [5] * N + [1, 9] + [5] * N + [9, 9],
        }
    )
    counts.to_parquet(tmp_path / "counts.parquet", index=False)
    pairs = [(e, x) for e, x in zip(EN, XX, strict=True)]
    pairs += [
        ("rare", "x0"),  # source word below min_count
        ("enonly", "novector"),  # target word counted but without a vector
        ("missing", "xrare"),  # source word in neither counts nor store
        ("e0", "x0"),
    ]  # a duplicate line: counted once
    dictionary = tmp_path / "en-xx.test.txt"
    dictionary.write_text("".join(f"{s} {t}\n" for s, t in pairs), encoding="utf-8")
    return store, dictionary, tmp_path / "counts.parquet"


@pytest.mark.parametrize("metric, neighbourhood", [("cosine", "all_words"), ("csls", "all_words"), ("csls", "queries")])
def test_identity_and_permuted_layers(setup, metric, neighbourhood):
    store, dictionary, counts = setup
    df = word_retrieval(
        store, dictionary, "en", "xx", counts, min_count=2, metric=metric, csls_k=3, csls_neighbourhood=neighbourhood
    )
    assert list(df.columns) == COLUMNS
    assert df["layer"].tolist() == [0, 1]
    identity, swapped = df.iloc[0], df.iloc[1]
    # 9 distinct pairs, 6 covered
    for row in (identity, swapped):
        assert (row.n_pairs, row.n_covered_pairs, row.n_queries, row.n_candidates) == (9, 6, 6, 6)
        assert row.coverage == pytest.approx(6 / 9)
        assert row.chance_mrr == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6) / 6)
    assert identity.mrr == pytest.approx(1.0) and identity.p_at_1 == pytest.approx(1.0)
    # swapped: e0's nearest is x1 (score 1); gold x0 ties with x2..x5 at 0 -> rank 2..6, each with
    # probability 1/5: expected 1/rank (1/2 + ... + 1/6) / 5 = 0.29, hit@5 4/5; same for e1..e3; e4, e5 rank 1.
    # CSLS: every word has exactly one neighbour at cosine 1 in each neighbourhood, so r = 1/3 everywhere
    # (csls_k=3) and CSLS = 2 cos - 2/3 orders like cosine.
    assert swapped.mrr == pytest.approx((4 * 0.29 + 2) / 6)
    assert swapped.p_at_1 == pytest.approx(2 / 6)
    assert swapped.p_at_5 == pytest.approx((4 * 4 / 5 + 2) / 6)


def test_query_ranks_average_to_the_mrr(setup):
    """return_ranks: each query's rank per layer, the numbers the MRR by part of speech averages."""
    store, dictionary, counts = setup
    table, ranks = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, return_ranks=True)
    assert list(ranks.columns) == RANK_COLUMNS
    assert sorted(ranks["word"].unique()) == EN and len(ranks) == 2 * N
    swapped = ranks[ranks["layer"] == 1].set_index("word")
    # e0..e3: gold tied with 4 other candidates below the swapped partner (see above); e4, e5 rank 1
    assert swapped.loc["e0", ["above", "tied", "tied_gold"]].tolist() == [1, 5, 1]
    assert swapped.loc["e0", "reciprocal_rank"] == pytest.approx(0.29)
    assert swapped.loc["e4", "reciprocal_rank"] == 1.0
    assert ranks.groupby("layer")["reciprocal_rank"].mean().tolist() == pytest.approx(table["mrr"].tolist())


def test_min_count_changes_coverage(setup):
    store, dictionary, counts = setup
    df = word_retrieval(store, dictionary, "en", "xx", counts, min_count=1)
    # now ("rare", "x0") is covered too: 7 of 9 pairs, still 6 candidates, 7 queries
    row = df.iloc[0]
    assert (row.n_covered_pairs, row.n_queries, row.n_candidates) == (7, 7, 6)
    assert row.coverage == pytest.approx(7 / 9)
    # "rare" (one-hot 6) is orthogonal to all 6 candidates: all tie with gold x0 -> rank 1..6 at random
    assert row.mrr == pytest.approx((6 + (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6) / 6) / 7)
    assert row.p_at_1 == pytest.approx((6 + 1 / 6) / 7)


def test_multiple_gold_translations(setup, tmp_path):
    """words: each source word once, by its best gold (MUSE)."""
    store, _, counts = setup
    dictionary = tmp_path / "multi.txt"
    dictionary.write_text("e0 x1\ne0 x0\ne1 x1\n", encoding="utf-8")
    df = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, mrr_over="words").set_index("layer")
    # candidates {x0, x1}; layer 1: e0 -> x1 has e0's vector (gold) -> rank 1; e1 -> x0 has e1's vector,
    # gold x1 (= e0) scores 0 < 1 -> rank 2
    assert df.loc[0, "mrr"] == pytest.approx(1.0)
    assert df.loc[1, "mrr"] == pytest.approx((1 + 1 / 2) / 2)
    # chance counts each query's golds: e0 has both candidates as gold (1.0), e1 one of two (0.75)
    assert df.loc[1, "n_candidates"] == 2 and df.loc[1, "chance_mrr"] == pytest.approx((1.0 + 0.75) / 2)


def test_mrr_over_pairs_and_over_words_on_a_many_to_many_dictionary(setup, tmp_path):
    """Liu et al. eq. 1-2 (pairs): 1/rank(y_i) of every pair (x_i, y_i) among the dictionary's targets, by hand;
    e0 has two translations (x0, x1) and x1 two sources (e0, e1)."""
    store, _, counts = setup
    dictionary = tmp_path / "multi.txt"
    dictionary.write_text("e0 x1\ne0 x0\ne1 x1\ne1 x1\n", encoding="utf-8")  # a repeated line counts once
    by = {
        over: word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, mrr_over=over, return_ranks=True)
        for over in ("pairs", "words")
    }
    pairs, words = (by[over][0].set_index("layer") for over in ("pairs", "words"))
    # layer 0 (x_i = e_i): (e0, x0) rank 1; (e0, x1) rank 2, x0 is e0's nearest; (e1, x1) rank 1
    assert pairs.loc[0, "mrr"] == pytest.approx((1 + 1 / 2 + 1) / 3) and words.loc[0, "mrr"] == pytest.approx(1.0)
    # layer 1 (x0 carries e1's vector, x1 e0's): (e0, x0) rank 2; (e0, x1) rank 1; (e1, x1) rank 2
    assert pairs.loc[1, "mrr"] == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    assert words.loc[1, "mrr"] == pytest.approx((1 + 1 / 2) / 2)
    assert pairs.loc[1, "p_at_1"] == pytest.approx(1 / 3) and words.loc[1, "p_at_1"] == pytest.approx(1 / 2)
    # every pair has one gold among the 2 candidates: chance H_2 / 2
    assert pairs.loc[1, "chance_mrr"] == pytest.approx((1 + 1 / 2) / 2)
    assert words.loc[1, "chance_mrr"] == pytest.approx((1.0 + 0.75) / 2)
    assert (pairs.loc[1, "n_queries"], words.loc[1, "n_queries"]) == (3, 2)
    assert (pairs.loc[1, "n_covered_pairs"], words.loc[1, "n_covered_pairs"]) == (3, 3)
    # the per-query ranks are the same units: one row per pair (its target named), their mean the MRR
    ranks = by["pairs"][1]
    layer1 = ranks[ranks["layer"] == 1].set_index(["word", "target"])["reciprocal_rank"]
    assert layer1.to_dict() == {("e0", "x0"): 0.5, ("e0", "x1"): 1.0, ("e1", "x1"): 0.5}
    assert ranks.groupby("layer")["reciprocal_rank"].mean().tolist() == pytest.approx(pairs["mrr"].tolist())
    assert (by["words"][1]["target"] == "").all()
    with pytest.raises(ValueError, match="mrr_over"):
        word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, mrr_over="queries")


def test_no_coverage_is_an_error(setup, tmp_path):
    store, _, counts = setup
    dictionary = tmp_path / "none.txt"
    dictionary.write_text("missing x0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no pair covered"):
        word_retrieval(store, dictionary, "en", "xx", counts, min_count=2)


def _counts(path, words: dict[str, dict[str, int]]):
    rows = [(lang, w, c) for lang, counts in words.items() for w, c in counts.items()]
    pd.DataFrame(rows, columns=["lang", "word", "count"]).to_parquet(path, index=False)
    return path


def test_vocabulary_candidates_include_words_outside_the_dictionary(tmp_path):
    eye = np.eye(4)
    en = {"e0": eye[0], "e1": eye[1], "e2": eye[2]}
    # "xnear" is not in the dictionary and lies exactly on e0; e0's gold x0 is slightly off it
    xx = {"x0": eye[0] + 0.1 * eye[3], "x1": eye[1], "x2": eye[2], "xnear": eye[0]}
    store = tmp_path / "words.parquet"
    _store(store, {0: {"en": en, "xx": xx}})
    counts = _counts(tmp_path / "counts.parquet", {"en": dict.fromkeys(en, 5), "xx": dict.fromkeys(xx, 5)})
    dictionary = tmp_path / "en-xx.txt"
    dictionary.write_text("e0 x0\ne1 x1\ne2 x2\n", encoding="utf-8")
    in_dict = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2).iloc[0]
    in_vocab = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, candidates="vocabulary").iloc[0]
    assert (in_dict.n_candidates, in_dict.mrr, in_dict.p_at_1) == (3, 1.0, 1.0)
    assert in_dict.chance_mrr == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert in_vocab.n_candidates == 4 and in_vocab.n_queries == 3
    assert in_vocab.mrr == pytest.approx((1 / 2 + 1 + 1) / 3) and in_vocab.p_at_1 == pytest.approx(2 / 3)
    assert in_vocab.chance_mrr == pytest.approx(25 / 48)
    with pytest.raises(ValueError, match="candidates"):
        word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, candidates="all")
    with pytest.raises(ValueError, match="csls_neighbourhood"):
        word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, csls_neighbourhood="all")


def _muse_csls_retrieval(src, tgt, pairs, candidates, sources, targets, k=10):
    """MRR and P@1 by MUSE's definition, on the full score matrix: CSLS(x, y) = 2 cos(x, y) - r_tgt(x) - r_src(y),
    r_tgt(x) = mean cosine of x's k nearest `targets`, r_src(y) = mean cosine of y's k nearest `sources`."""

    def unit(m):
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    def knn_mean(x, y):
        return np.sort(unit(x) @ unit(y).T, axis=1)[:, -k:].mean(axis=1)

    queries = sorted({s for s, _ in pairs})
    q = np.array([src[w] for w in queries])
    c = np.array([tgt[w] for w in candidates])
    scores = 2 * unit(q) @ unit(c).T - knn_mean(q, targets)[:, None] - knn_mean(c, sources)[None, :]
    ranks = []
    for i, word in enumerate(queries):
        best = max(scores[i, candidates.index(t)] for s, t in pairs if s == word)
        ranks.append(1 + np.sum(scores[i] > best))
    ranks = np.array(ranks)
    return np.mean(1 / ranks), np.mean(ranks == 1)


@pytest.mark.parametrize("candidates", ["dictionary", "vocabulary"])
def test_csls_neighbourhoods_equal_muse(tmp_path, candidates):
    """csls_neighbourhood all_words = MUSE: the hubness terms average over every word of each vocabulary
    (here 120 English and 100 foreign words, two of them below min_count and so left out), not only over
    the 30 queries and their candidates."""
    rng = np.random.default_rng(11)
    src = {f"e{i}": rng.normal(size=8) for i in range(120)}
    tgt = {f"x{i}": rng.normal(size=8) for i in range(100)}
    store = tmp_path / "words.parquet"
    _store(store, {0: {"en": src, "xx": tgt}})
    en_counts, xx_counts = dict.fromkeys(src, 5), dict.fromkeys(tgt, 5)
    en_counts["e119"] = xx_counts["x99"] = 1  # below min_count: outside the vocabularies
    counts = _counts(tmp_path / "counts.parquet", {"en": en_counts, "xx": xx_counts})
    pairs = sorted({(f"e{i}", f"x{rng.integers(0, 99)}") for i in range(30)} | {("e0", "x98"), ("e1", "x97")})
    dictionary = tmp_path / "en-xx.txt"
    dictionary.write_text("".join(f"{s} {t}\n" for s, t in pairs), encoding="utf-8")
    vocab_src = np.array([v for w, v in src.items() if w != "e119"])
    vocab_tgt = np.array([v for w, v in tgt.items() if w != "x99"])
    cands = sorted({t for _, t in pairs}) if candidates == "dictionary" else sorted(w for w in tgt if w != "x99")
    queries = np.array([src[w] for w in sorted({s for s, _ in pairs})])
    expected = {
        "all_words": _muse_csls_retrieval(src, tgt, pairs, cands, vocab_src, vocab_tgt),
        "queries": _muse_csls_retrieval(src, tgt, pairs, cands, queries, np.array([tgt[w] for w in cands])),
    }
    for neighbourhood, (mrr, p_at_1) in expected.items():
        row = word_retrieval(
            store,
            dictionary,
            "en",
            "xx",
            counts,
            min_count=2,
            metric="csls",
            csls_k=10,
            candidates=candidates,
            csls_neighbourhood=neighbourhood,
            mrr_over="words",
            block=7,
        ).iloc[0]
        assert row.n_candidates == len(cands)
        assert row.mrr == pytest.approx(mrr, rel=1e-12) and row.p_at_1 == pytest.approx(p_at_1, rel=1e-12)
    assert expected["all_words"][0] != pytest.approx(expected["queries"][0])  # the setting matters here


def test_collapsed_vectors_score_chance(setup, tmp_path):
    _, dictionary, counts = setup
    zero = np.zeros(4)
    store = tmp_path / "zero.parquet"
    _store(store, {0: {"en": {w: zero for w in EN + ["enonly"]}, "xx": {w: zero for w in XX + ["xrare"]}}})
    multi = tmp_path / "multi.txt"
    multi.write_text("e0 x0\ne0 x1\ne0 x2\ne1 x1\ne2 x3\n", encoding="utf-8")
    for path in (dictionary, multi):
        for candidates in ("dictionary", "vocabulary"):
            for over in ("pairs", "words"):
                row = word_retrieval(
                    store, path, "en", "xx", counts, min_count=2, candidates=candidates, mrr_over=over
                ).iloc[0]
                assert row.mrr == pytest.approx(row.chance_mrr, rel=1e-12)
    row = word_retrieval(store, multi, "en", "xx", counts, min_count=2, candidates="vocabulary", mrr_over="words").iloc[
        0
    ]
    # 7 candidates (x0..x5, xrare); e0 has 3 golds, e1 and e2 one each: P@1 = (3/7 + 1/7 + 1/7) / 3
    assert row.n_candidates == 7 and row.p_at_1 == pytest.approx(5 / 21)


def test_most_frequent_words(tmp_path):
    counts = _counts(
        tmp_path / "counts.parquet", {"en": {"the": 9, "b": 4, "a": 4, "rare": 1}, "xx": {"le": 20, "la": 3}}
    )
    assert most_frequent_words(counts, "en", 3) == ["the", "a", "b"]  # equal counts: by word
    assert most_frequent_words(counts, "en", 10) == ["the", "a", "b", "rare"]
    assert most_frequent_words(counts, "xx", 1) == ["le"]


def test_schema_requires_a_stored_vocabulary_for_vocabulary_candidates():
    import jsonschema
    import yaml

    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "schemas/config.schema.yaml").read_text())
    validator = jsonschema.Draft202012Validator(schema["properties"]["retrieval"])
    assert validator.is_valid({"candidates": "vocabulary", "vocabulary_size": 5000})
    assert validator.is_valid({"candidates": "dictionary", "vocabulary_size": 0})
    assert not validator.is_valid({"candidates": "vocabulary"})
    assert not validator.is_valid({"candidates": "vocabulary", "vocabulary_size": 0})
    assert not validator.is_valid({"csls_neighbourhood": "sources"})


def test_lowercase_compares_dictionary_words_in_the_token_files_form(setup, tmp_path):
    """In a lowercased run the store and counts hold "e0"; the dictionary's "É0" is that word, and the
    "E0"/"É0" lines collapse into one pair. Cased, neither is covered."""
    from xling.data.word_lists import dictionary_words

    store, _, counts = setup
    dictionary = tmp_path / "en-xx.test.txt"
    dictionary.write_text("É0 X0\nE0 x0\ne1 X1\n", encoding="utf-8")
    lower = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, lowercase=True).iloc[0]
    assert (lower.n_pairs, lower.n_covered_pairs, lower.mrr) == (2, 2, pytest.approx(1.0))
    with pytest.raises(ValueError, match="no pair covered"):
        word_retrieval(store, dictionary, "en", "xx", counts, min_count=2)
    assert dictionary_words([dictionary], "en", "en", lowercase=True) == ["e0", "e1"]
    assert dictionary_words([dictionary], "xx", "en", lowercase=True) == ["x0", "x1"]
    assert dictionary_words([dictionary], "en", "en") == ["E0", "e1", "É0"]


def test_function_word_queries_are_ranked_apart_and_leave_the_main_mrr_alone(tmp_path):
    """A function-word dictionary (synthetic.dictionary.function_words): its queries are ranked among the main
    candidates plus the function words' targets, in a table of their own; the main table and ranks are the same
    as without it (a function word leaking into them would change both)."""
    eye = np.eye(N + 2)
    function_en, function_xx = {"the": eye[N], "of": eye[N + 1]}, {"tha": eye[N + 1], "ov": eye[N]}  # swapped
    en = {w: eye[i] for i, w in enumerate(EN)} | function_en
    xx = {w: eye[i] for i, w in enumerate(XX)} | function_xx
    store = tmp_path / "words.parquet"
    _store(store, {0: {"en": en, "xx": xx}})
    words = [*en, *xx]
    pd.DataFrame({"lang": ["en"] * len(en) + ["xx"] * len(xx), "word": words, "count": 5}).to_parquet(
        tmp_path / "counts.parquet", index=False
    )
    dictionary, function = tmp_path / "en-xx.test.txt", tmp_path / "en-xx.function.txt"
    dictionary.write_text("".join(f"{e} {x}\n" for e, x in zip(EN, XX, strict=True)), encoding="utf-8")
    function.write_text("the tha\nof ov\ne0 x0\n", encoding="utf-8")  # a pair of the main dictionary: not again
    args = (store, dictionary, "en", "xx", tmp_path / "counts.parquet")
    table, ranks = word_retrieval(*args, min_count=2, return_ranks=True)
    with_table, with_ranks, function_ranks = word_retrieval(
        *args, min_count=2, return_ranks=True, function_dictionary_path=function
    )
    pd.testing.assert_frame_equal(table, with_table)
    pd.testing.assert_frame_equal(ranks, with_ranks)
    assert table.loc[0, "mrr"] == pytest.approx(1.0) and table.loc[0, "n_candidates"] == N
    assert list(function_ranks.columns) == RANK_COLUMNS
    assert sorted(function_ranks["word"]) == ["of", "the"]
    # "the" -> its gold "tha" is orthogonal, "ov" is identical: rank 1 + 1 + uniform over the 7 orthogonal
    # candidates (6 content targets and "tha"): E[1/rank] = (1/2 + ... + 1/8) / 7
    expected = sum(1 / r for r in range(2, 9)) / 7
    assert function_ranks["reciprocal_rank"].tolist() == pytest.approx([expected, expected])
    with pytest.raises(ValueError, match="return_ranks"):
        word_retrieval(*args, min_count=2, function_dictionary_path=function)
