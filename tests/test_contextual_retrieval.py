"""Contextual word retrieval (xling.evaluate.contextual_retrieval) against a direct computation of CSLS on
planted vectors, the non-contextual variant against retrieval on a hand-reduced corpus, the test filter and the
accuracy against hand counts, and the word vectors against transformers' own forward pass."""

import numpy as np
import pandas as pd
import pytest

from test_encoder import MAX_LENGTH, direct_states, save_tiny_bert
from xling.encode.encoder import Encoder
from xling.evaluate.contextual_retrieval import (
    accuracy,
    accuracy_by_pos,
    accuracy_by_rank_difference,
    evaluate,
    frequency_ranks,
    retrieve,
    word_pair_set,
)
from xling.encode.encoder import sentence_word_vectors
from xling.evaluate.contextual_retrieval import test_filter as mark_excluded  # not a test: pytest collects test_*


def planted(seed=0, lengths=((5, 4), (3, 6), (7, 7), (4, 3), (6, 5)), dim=8, noise=0.9):
    """Parallel 'sentences' whose linked target words are noisy copies of their source words (and an unlinked
    word or two per side), so some queries hit and some miss."""
    rng = np.random.default_rng(seed)
    src, tgt, links = [], [], []
    for n_src, n_tgt in lengths:
        s = rng.normal(size=(n_src, dim))
        t = rng.normal(size=(n_tgt, dim))
        pairs = set(
            zip(
                rng.permutation(n_src)[: min(n_src, n_tgt) - 1].tolist(),
                rng.permutation(n_tgt)[: min(n_src, n_tgt) - 1].tolist(),
                strict=True,
            )
        )
        for i, j in pairs:
            t[j] = s[i] + noise * rng.normal(size=dim)
        src.append(s.astype(np.float32))
        tgt.append(t.astype(np.float32))
        links.append(pairs)
    return src, tgt, links


def direct_hits(src, tgt, links, k):
    """CSLS nearest neighbour of every linked word, written out in numpy over the full score matrices."""

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def flat(side):
        keys = [(s, p) for s, v in enumerate(side) for p in range(len(v))]
        return unit(np.concatenate(side).astype(np.float64)), {key: row for row, key in enumerate(keys)}

    out = {}
    for direction, (q_side, c_side, pairs) in {
        "src-tgt": (src, tgt, [(s, i, j) for s, a in enumerate(links) for i, j in a]),
        "tgt-src": (tgt, src, [(s, j, i) for s, a in enumerate(links) for i, j in a]),
    }.items():
        (q, q_rows), (c, c_rows) = flat(q_side), flat(c_side)
        cos = q @ c.T
        r_tgt = np.sort(cos, axis=1)[:, -k:].mean(axis=1)  # each query word's k nearest candidates
        r_src = np.sort(cos.T, axis=1)[:, -k:].mean(axis=1)  # each candidate's k nearest query-side words
        csls = 2 * cos - r_tgt[:, None] - r_src[None, :]
        for s, query, gold in pairs:
            out[(direction, s, query)] = float(np.argmax(csls[q_rows[(s, query)]]) == c_rows[(s, gold)])
    return out


@pytest.mark.parametrize("k,block", [(3, 2), (10, 1024)])
def test_csls_retrieval_equals_a_direct_computation(k, block):
    src, tgt, links = planted()
    queries = retrieve(src, tgt, links, k=k, block=block)
    want = direct_hits(src, tgt, links, k)
    got = {(d, s, p): h for d, s, p, h in queries[["direction", "sentence", "position", "hit"]].itertuples(index=False)}
    assert got == want
    assert 0.2 < np.mean(list(got.values())) < 0.9  # the planted noise leaves both hits and misses
    assert len(queries) == 2 * sum(map(len, links))


def test_csls_corrects_a_hub_that_cosine_would_pick():
    """A target word close to every source word (a hub) is the cosine nearest neighbour of a query whose gold
    is a little farther; CSLS penalises the hub's dense neighbourhood and finds the gold (k = 3):
    CSLS(q, gold) = 1.6 - r(q) - (0.8 - 0.12 - 0.12) / 3 > CSLS(q, hub) = 1.8 - r(q) - 0.85 (about)."""
    query = [1.0, 0.0, 0.0]
    others = [[0.5, 0.866, 0.05 * i] for i in (-2, -1, 1, 2)]  # the rest of the source side
    gold, hub = [0.8, -0.6, 0.0], [0.9, 0.436, 0.0]
    src = [np.array([query, *others], dtype=np.float32)]
    tgt = [np.array([gold, hub, [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]], dtype=np.float32)]
    cos = np.array(gold) @ query, np.array(hub) @ query / np.linalg.norm(hub)
    assert cos[1] > cos[0]  # cosine picks the hub
    hits = retrieve(src, tgt, [{(0, 0)}], k=3)
    assert hits.loc[hits["direction"] == "src-tgt", "hit"].tolist() == [1.0]
    assert direct_hits(src, tgt, [{(0, 0)}], 3)[("src-tgt", 0, 0)] == 1.0


def test_non_contextual_keeps_first_occurrences_on_both_sides():
    src, tgt, links = planted(seed=1, lengths=((4, 4), (4, 4), (4, 4)))
    src_words = [["a", "b", "c", "d"], ["a", "e", "f", "b"], ["g", "h", "a", "i"]]
    tgt_words = [["A", "B", "C", "D"], ["E", "A", "F", "G"], ["H", "I", "J", "C"]]
    got = retrieve(src, tgt, links, k=2, contextual=False, words=(src_words, tgt_words))
    # the same retrieval on the corpus reduced by hand to the first occurrences, links remapped
    keep_src = [[0, 1, 2, 3], [1, 2], [0, 1, 3]]
    keep_tgt = [[0, 1, 2, 3], [0, 2, 3], [0, 1, 2]]
    red_links = [
        {(keep_src[s].index(i), keep_tgt[s].index(j)) for i, j in a if i in keep_src[s] and j in keep_tgt[s]}
        for s, a in enumerate(links)
    ]
    want = retrieve(
        [v[k] for v, k in zip(src, keep_src, strict=True)],
        [v[k] for v, k in zip(tgt, keep_tgt, strict=True)],
        red_links,
        k=2,
    )
    assert len(got) == len(want) == 2 * sum(map(len, red_links)) > 0
    np.testing.assert_array_equal(got["hit"].to_numpy(), want["hit"].to_numpy())
    keep = {"src-tgt": keep_src, "tgt-src": keep_tgt}
    assert got["position"].tolist() == [
        keep[d][s][p] for d, s, p in want[["direction", "sentence", "position"]].itertuples(index=False)
    ]
    assert got["word"].tolist() == [
        (src_words if d == "src-tgt" else tgt_words)[s][p]
        for d, s, p in got[["direction", "sentence", "position"]].itertuples(index=False)
    ]
    with pytest.raises(ValueError, match="needs the words"):
        retrieve(src, tgt, links, contextual=False)


def test_words_without_vectors_are_neither_queries_nor_candidates():
    src, tgt, links = planted(seed=2)
    tgt_nan = [v.copy() for v in tgt]
    (s, (i, j)) = next((s, sorted(a)[0]) for s, a in enumerate(links) if a)
    tgt_nan[s][j] = np.nan
    got = retrieve(src, tgt_nan, links, k=3)
    assert len(got) == 2 * sum(map(len, links)) - 2
    dropped = [{(a, b) for a, b in pairs if (n, b) != (s, j)} for n, pairs in enumerate(links)]
    removed = [np.delete(v, j, axis=0) if n == s else v for n, v in enumerate(tgt)]
    shift = [{(a, b - (b > j) if n == s else b) for a, b in pairs} for n, pairs in enumerate(dropped)]
    want = retrieve(src, removed, shift, k=3)
    np.testing.assert_array_equal(got["hit"].to_numpy(), want["hit"].to_numpy())


def test_test_filter_and_accuracy_by_hand():
    queries = pd.DataFrame(
        {
            "direction": ["src-tgt", "src-tgt", "src-tgt", "tgt-src", "tgt-src", "tgt-src"],
            "sentence": [0, 0, 1, 0, 0, 1],
            "position": [0, 1, 0, 0, 1, 0],
            "gold_position": [0, 1, 0, 0, 1, 0],
            "word": ["cat", "5", "dog", "Katze", "5", "Hund"],
            "gold_word": ["Katze", "5", "Hund", "cat", "5", "dog"],
            "hit": [1.0, 1.0, 0.0, 0.0, 1.0, 0.5],
        }
    )
    train = word_pair_set([["the", "dog"]], [["der", "Hund"]], [{(0, 0), (1, 1)}])
    assert train == {("the", "der"), ("dog", "Hund")}
    marked = mark_excluded(queries, train)
    assert marked["seen"].tolist() == [False, False, True, False, False, True]  # (dog, Hund) both ways
    assert marked["exact"].tolist() == [False, True, False, False, True, False]
    table = accuracy(marked)
    row = table.iloc[0]
    assert (row["accuracy_src_tgt"], row["accuracy_tgt_src"]) == (1.0, 0.0)  # only cat/Katze is scored
    assert row["accuracy"] == 0.5 and (row["n_queries"], row["n_seen"], row["n_exact"]) == (2, 2, 2)
    everything = accuracy(marked, exclude_seen=False, exclude_exact=False).iloc[0]
    assert everything["accuracy"] == pytest.approx((2 / 3 + 1.5 / 3) / 2) and everything["n_queries"] == 6
    by_sentence = accuracy(marked, by=["sentence"], exclude_exact=False).set_index("sentence")
    assert by_sentence.loc[0, "accuracy"] == pytest.approx((1.0 + 0.5) / 2)
    assert np.isnan(by_sentence.loc[1, "accuracy"]) and by_sentence.loc[1, "n_queries"] == 0


def test_word_vectors_are_the_last_subword_at_the_layer(tmp_path, torch_one_thread):
    model_dir = save_tiny_bert(tmp_path / "tiny")
    encoder = Encoder.from_pretrained(model_dir, device="cpu", max_length=MAX_LENGTH)
    # given words: "w1st" is three pieces (one model word); "w2,w3" three model words (w2 , w3: BERT splits at
    # punctuation), its last piece w3
    sentences = [["w1st", "w2,w3"], ["w5u"], ["w6", "w7", "w8", "w9", "w10", "w11", "w12"]]
    vectors = sentence_word_vectors(encoder, sentences, layer=2, batch_size=2)
    first = direct_states(model_dir, ["w1", "##s", "##t", "w2", "[UNK]", "w3"])[2]
    np.testing.assert_allclose(vectors[0], first[[3, 6]], atol=2e-5, rtol=0)
    np.testing.assert_allclose(vectors[1], direct_states(model_dir, ["w5", "##u"])[2][[2]], atol=2e-5, rtol=0)
    # seven one-piece words in chunks of MAX_LENGTH - 2 = 6 pieces: the seventh runs alone
    long = direct_states(model_dir, ["w6", "w7", "w8", "w9", "w10", "w11"])[2][1:7]
    np.testing.assert_allclose(vectors[2][:6], long, atol=2e-5, rtol=0)
    np.testing.assert_allclose(vectors[2][6], direct_states(model_dir, ["w12"])[2][1], atol=2e-5, rtol=0)


def test_a_word_without_pieces_has_no_vector(tmp_path, caplog):
    model_dir = save_tiny_bert(tmp_path / "tiny")
    encoder = Encoder.from_pretrained(model_dir, device="cpu", max_length=MAX_LENGTH)
    vectors = sentence_word_vectors(encoder, [["w1", "\u200b", "w2"]], layer=1, batch_size=2)
    assert np.isnan(vectors[0][1]).all() and not np.isnan(vectors[0][[0, 2]]).any()
    assert "1 words have no vector" in caplog.text


def hand_queries(rows):
    """Queries of both directions from (src word, tgt word, forward hit, backward hit) rows, one sentence each."""
    out = []
    for s, (src, tgt, forward, backward) in enumerate(rows):
        out.append(("src-tgt", s, 0, src, 0, tgt, forward))
        out.append(("tgt-src", s, 0, tgt, 0, src, backward))
    queries = pd.DataFrame(
        out, columns=["direction", "sentence", "position", "word", "gold_position", "gold_word", "hit"]
    )
    return mark_excluded(queries, set())


def test_accuracy_by_pos_group_by_hand():
    queries = hand_queries(
        [
            ("5", "5", 1.0, 1.0),
            ("Paris", "Parigi", 1.0, 0.0),
            ("the", "il", 0.0, 0.0),
            ("cat", "gatto", 1.0, 1.0),
            ("runs", "corre", 0.0, 1.0),
            ("not", "non", 1.0, 1.0),
            ("unknown", "ignoto", 1.0, 1.0),
        ]
    )
    tags = {"5": "NUM", "Paris": "PROPN", "the": "DET", "cat": "NOUN", "runs": "VERB", "not": "PART"}
    groups = {"lexical_overlap": ["NUM", "PUNCT", "PROPN"], "closed_class": ["DET"], "open_class": ["NOUN", "VERB"]}
    table = accuracy_by_pos(queries, tags, groups, by=[], exclude_seen=False, exclude_exact=False)
    got = {(g, p): (a, n) for g, p, a, n in table[["group", "pos", "accuracy", "n_queries"]].itertuples(index=False)}
    assert got == {
        ("lexical_overlap", "NUM"): (1.0, 2),
        ("lexical_overlap", "PROPN"): (0.5, 2),
        ("closed_class", "DET"): (0.0, 2),
        ("open_class", "NOUN"): (1.0, 2),
        ("open_class", "VERB"): (0.5, 2),
        ("lexical_overlap", "average"): (0.75, 4),
        ("closed_class", "average"): (0.0, 2),
        ("open_class", "average"): (0.75, 4),
    }  # PART (no group) and the untagged word are left out


def test_accuracy_by_frequency_rank_difference_by_hand():
    src_ranks = frequency_ranks([["a", "b", "a"], ["c", "b", "a"]])
    assert src_ranks == {"a": 1, "b": 2, "c": 3}
    tgt_ranks = {"x": 1, "y": 12, "z": 3}
    queries = hand_queries([("a", "x", 1.0, 1.0), ("b", "y", 0.0, 1.0), ("c", "z", 1.0, 0.0), ("a", "z", 0.0, 0.0)])
    table = accuracy_by_rank_difference(
        queries, src_ranks, tgt_ranks, [0, 1, 5], by=[], exclude_seen=False, exclude_exact=False
    )
    # differences 0, 10, 0, 2 -> bins 0-0, 5+, 0-0, 1-4
    got = {label: (a, n) for label, a, n in table[["rank_difference", "accuracy", "n_queries"]].itertuples(index=False)}
    assert got == {"0-0": ((1.0 + 0.5) / 2, 4), "1-4": (0.0, 2), "5+": (0.5, 2)}  # the mean of both directions
    with pytest.raises(ValueError, match="start at 0"):
        accuracy_by_rank_difference(
            queries, src_ranks, tgt_ranks, [1, 5], by=[], exclude_seen=False, exclude_exact=False
        )


def test_evaluate_applies_each_rotation_to_the_target_side(tmp_path):
    model_dir = save_tiny_bert(tmp_path / "tiny")
    encoder = Encoder.from_pretrained(model_dir, device="cpu", max_length=MAX_LENGTH)
    sentences = [["w1", "w2", "w3"], ["w4", "w5st"], ["w6", "w7", "w1"]]
    links = [{(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1)}, {(0, 0), (1, 1), (2, 2)}]
    rotation = np.linalg.qr(np.random.default_rng(0).normal(size=(16, 16)))[0]
    table, queries = evaluate(
        encoder,
        {"xa": (sentences, sentences, links)},
        {"xa": {("w4", "w4")}},
        layer=2,
        k=2,
        block=4,
        batch_size=2,
        exclude_exact=False,
        rotations={("rotation-word", 7): {"xa": rotation}},
    )
    rows = table.set_index(["method", "contextual"])
    assert rows.loc[("none", True), "accuracy"] == 1.0  # the same sentences on both sides
    assert rows.loc[("none", True), "n_seen"] == 2 and rows.loc[("none", True), "n_queries"] == 14
    assert rows.loc[("rotation-word", True), "parallel_sentences"] == 7
    vectors = sentence_word_vectors(encoder, sentences, 2, 2)
    want = retrieve(vectors, [v @ rotation for v in vectors], links, k=2, words=(sentences, sentences))
    got = queries[(queries["method"] == "rotation-word") & queries["contextual"]]
    np.testing.assert_allclose(got["hit"].to_numpy(), want["hit"].to_numpy(), atol=1e-6)
    # non-contextual: the second "w1" is no query and no candidate
    assert len(queries[(queries["method"] == "none") & ~queries["contextual"]]) == 2 * 7


def test_analysis_intervals_resample_each_direction_and_each_tag_within_itself():
    """A row's interval is bootstrap_groups over its directions' hits (the accuracy is their mean); a POS group's
    average over its tags' directions (the mean of its tags' accuracies), the same draw as by hand."""
    from xling.evaluate.intervals import Bootstrap
    from xling.evaluate.uncertainty import bootstrap_groups

    rows = [(f"w{i}", f"v{i}", float(i % 3 == 0), float(i % 2 == 0)) for i in range(12)]
    queries = hand_queries(rows)
    boot = Bootstrap(resamples=200, seed=3)
    got = accuracy(queries, exclude_seen=False, exclude_exact=False, bootstrap=boot).iloc[0]
    forward, backward = (np.array([r[k] for r in rows]) for k in (2, 3))
    hand = bootstrap_groups([forward, backward], n_resamples=200, seed=3)
    assert got["accuracy"] == pytest.approx(hand.estimate)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((hand.low, hand.high))
    assert hand.low < got["accuracy"] < hand.high

    tags = {f"w{i}": ("NOUN", "VERB", "DET")[i % 3] for i in range(12)}
    groups = {"closed_class": ["DET"], "open_class": ["NOUN", "VERB"]}
    table = accuracy_by_pos(queries, tags, groups, by=[], exclude_seen=False, exclude_exact=False, bootstrap=boot)
    open_avg = table[(table["group"] == "open_class") & (table["pos"] == "average")].iloc[0]
    arrays = [np.array([r[k] for i, r in enumerate(rows) if i % 3 == t]) for t in (0, 1) for k in (2, 3)]
    hand = bootstrap_groups(arrays, n_resamples=200, seed=3)  # NOUN's two directions, then VERB's
    assert open_avg["accuracy"] == pytest.approx(hand.estimate)
    assert (open_avg["ci_low"], open_avg["ci_high"]) == pytest.approx((hand.low, hand.high))
    assert table[["ci_low", "ci_high"]].notna().all().all()

    binned = accuracy_by_rank_difference(
        queries,
        {f"w{i}": i for i in range(12)},
        {f"v{i}": i for i in range(12)},
        [0, 1],
        by=[],
        exclude_seen=False,
        exclude_exact=False,
        bootstrap=boot,
    )
    assert list(binned.columns[-2:]) == ["ci_low", "ci_high"] and len(binned) == 1  # every difference is 0
    assert (binned["ci_low"].iloc[0], binned["ci_high"].iloc[0]) == pytest.approx((got["ci_low"], got["ci_high"]))


def test_chance_is_a_random_pick_among_each_directions_candidates():
    """Each query records its candidates (all words with a vector on the other side: contextual; first
    occurrences: non-contextual); a row's chance is 1 / candidates averaged within each direction, then over the
    two, as its accuracy is; queries kept before the count have no chance level (NaN), never a wrong one."""
    src, tgt, links = planted()
    found = retrieve(src, tgt, links, k=3)
    assert set(found.loc[found["direction"] == "src-tgt", "n_candidates"]) == {sum(len(v) for v in tgt)}
    assert set(found.loc[found["direction"] == "tgt-src", "n_candidates"]) == {sum(len(v) for v in src)}
    queries = hand_queries([("a", "x", 1.0, 0.0), ("b", "y", 0.0, 0.0)]).assign(
        n_candidates=lambda q: np.where(q["direction"] == "src-tgt", 4, 10)
    )
    row = accuracy(queries, exclude_seen=False, exclude_exact=False).iloc[0]
    assert row["chance"] == pytest.approx((1 / 4 + 1 / 10) / 2)
    assert np.isnan(
        accuracy(queries.drop(columns="n_candidates"), exclude_seen=False, exclude_exact=False).iloc[0]["chance"]
    )
