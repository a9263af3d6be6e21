"""xling.evaluate.word_retrieval.word_retrieval end to end on planted vectors in a store written by the test."""

import numpy as np
import pandas as pd
import pytest

from xling.evaluate import metrics
from xling.evaluate.word_retrieval import COLUMNS, word_retrieval

N = 6
EN = [f"e{i}" for i in range(N)]
XX = [f"x{i}" for i in range(N)]
SWAP = [1, 0, 3, 2, 4, 5]  # layer 1: x_i carries e_SWAP[i]'s vector; 4 and 5 are fixed points


def _store(path, layers: dict[int, dict[str, dict[str, np.ndarray]]]):
    rows = []
    for layer, langs in layers.items():
        for lang, vectors in langs.items():
            for word, vec in vectors.items():
                rows.append({"lang": lang, "word": word, "layer": np.int32(layer), "n": 3,
                             **{f"d{j}": float(v) for j, v in enumerate(vec)}})
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
    counts = pd.DataFrame({"lang": ["en"] * (N + 2) + ["xx"] * (N + 2),
                           "word": EN + ["rare", "enonly"] + XX + ["xrare", "novector"],
                           "count": [5] * N + [1, 9] + [5] * N + [9, 9]})
    counts.to_parquet(tmp_path / "counts.parquet", index=False)
    pairs = [(e, x) for e, x in zip(EN, XX)]
    pairs += [("rare", "x0"),          # source word below min_count
              ("enonly", "novector"),  # target word counted but without a vector
              ("missing", "xrare"),    # source word in neither counts nor store
              ("e0", "x0")]            # a duplicate line: counted once
    dictionary = tmp_path / "en-xx.test.txt"
    dictionary.write_text("".join(f"{s} {t}\n" for s, t in pairs), encoding="utf-8")
    return store, dictionary, tmp_path / "counts.parquet"


@pytest.mark.parametrize("metric", ["cosine", "csls"])
def test_identity_and_permuted_layers(setup, metric):
    store, dictionary, counts = setup
    df = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2, metric=metric, csls_k=3)
    assert list(df.columns) == COLUMNS
    assert df["layer"].tolist() == [0, 1]
    identity, swapped = df.iloc[0], df.iloc[1]
    # 9 distinct pairs, 6 covered
    for row in (identity, swapped):
        assert (row.n_pairs, row.n_covered_pairs, row.n_queries, row.n_candidates) == (9, 6, 6, 6)
        assert row.coverage == pytest.approx(6 / 9)
        assert row.chance_mrr == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6) / 6)
    assert identity.mrr == pytest.approx(1.0) and identity.p_at_1 == pytest.approx(1.0)
    # swapped: e0's nearest is x1 (score 1), gold x0 ties with the rest at 0 -> rank 2 (optimistic ties);
    # e0..e3 rank 2, e4, e5 rank 1 -> MRR (4 * 1/2 + 2) / 6 = 2/3, P@1 = 2/6, P@5 = 1
    assert swapped.mrr == pytest.approx(2 / 3)
    assert swapped.p_at_1 == pytest.approx(1 / 3)
    assert swapped.p_at_5 == pytest.approx(1.0)


def test_min_count_changes_coverage(setup):
    store, dictionary, counts = setup
    df = word_retrieval(store, dictionary, "en", "xx", counts, min_count=1)
    # now ("rare", "x0") is covered too: 7 of 9 pairs, still 6 candidates, 7 queries
    row = df.iloc[0]
    assert (row.n_covered_pairs, row.n_queries, row.n_candidates) == (7, 7, 6)
    assert row.coverage == pytest.approx(7 / 9)
    # "rare" (one-hot 6) is orthogonal to all candidates: every candidate ties with gold x0 -> rank 1
    assert row.mrr == pytest.approx(1.0)


def test_multiple_gold_translations(setup, tmp_path):
    store, _, counts = setup
    dictionary = tmp_path / "multi.txt"
    dictionary.write_text("e0 x1\ne0 x0\ne1 x1\n", encoding="utf-8")
    df = word_retrieval(store, dictionary, "en", "xx", counts, min_count=2).set_index("layer")
    # candidates {x0, x1}; layer 1: e0 -> x1 has e0's vector (gold) -> rank 1; e1 -> x0 has e1's vector,
    # gold x1 (= e0) scores 0 < 1 -> rank 2
    assert df.loc[0, "mrr"] == pytest.approx(1.0)
    assert df.loc[1, "mrr"] == pytest.approx((1 + 1 / 2) / 2)
    # chance counts each query's golds: e0 has both candidates as gold (1.0), e1 one of two (0.75)
    assert df.loc[1, "n_candidates"] == 2 and df.loc[1, "chance_mrr"] == pytest.approx((1.0 + 0.75) / 2)


def test_no_coverage_is_an_error(setup, tmp_path):
    store, _, counts = setup
    dictionary = tmp_path / "none.txt"
    dictionary.write_text("missing x0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no pair covered"):
        word_retrieval(store, dictionary, "en", "xx", counts, min_count=2)


def test_lowercase_compares_dictionary_words_in_the_token_files_form(setup, tmp_path):
    """In a lowercased run the store and counts hold "e0"; the dictionary's "É0" is that word, and the
    "E0"/"É0" lines collapse into one pair. Cased, neither is covered."""
    from xling.tables import dictionary_words

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
