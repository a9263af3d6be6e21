"""Sentence retrieval: Tatoeba accuracy and BUCC mining/threshold on planted vectors, and a tiny BERT run."""

from pathlib import Path

import numpy as np
import pytest
from tiny_checkpoints import save_tiny_bert

from xling.evaluate.sentence_retrieval import (
    BUCC_DIRECTION,
    bucc_split_vectors,
    bucc_table,
    extract,
    language_mean,
    mine,
    optimize_threshold,
    prf,
    retrieval_accuracy,
    tatoeba,
    tatoeba_table,
    text_gold,
    vector_spread,
)
from xling.encode.encoder import Encoder


def planted(n=60, dim=16, offset=6.0, noise=0.05, seed=0):
    """Targets = sources + a language offset (+ noise): the offset dominates cosine similarity."""
    rng = np.random.default_rng(seed)
    src = rng.normal(size=(n, dim))
    shift = np.zeros(dim)
    shift[0] = offset * 3
    tgt = src + shift + noise * rng.normal(size=(n, dim))
    return src + rng.normal(size=dim) * offset, tgt


def test_language_mean_stats():
    v = np.array([[1.0, 0.0], [3.0, 2.0], [9.0, 9.0]])
    counts = np.array([1, 3, 0])  # the empty sentence is left out
    np.testing.assert_allclose(language_mean(v, counts, "sentence"), [2.0, 1.0])
    np.testing.assert_allclose(language_mean(v, counts, "token"), [2.5, 1.5])
    with pytest.raises(ValueError):
        language_mean(v, counts, "median")


def test_tatoeba_planted_offset():
    src, tgt = planted()
    assert retrieval_accuracy(src, tgt) < 0.5
    ones = np.ones(len(src), dtype=int)
    table = tatoeba_table(src[:, None], ones, tgt[:, None], ones, [8], "sentence", alpha=1.0)
    acc = table.set_index(["variant", "direction"])["accuracy"]
    assert acc["original", "xx->en"] < 1.0 and acc["original", "en->xx"] < 1.0
    assert acc["zero_mean", "xx->en"] == 1.0 and acc["zero_mean", "en->xx"] == 1.0
    assert acc["mds", "xx->en"] == 1.0 and acc["mds", "en->xx"] == 1.0
    assert set(table["layer"]) == {8} and (table["n_queries"] == len(src)).all()


def test_tatoeba_directions_against_numpy_argmax():
    """en->xx = English queries searching the xx sentences (XTREME's direction), xx->en the other way; the two
    differ on these planted vectors, and each equals a direct numpy argmax over cosine similarities."""
    rng = np.random.default_rng(3)
    xx = rng.normal(size=(40, 8))
    en = xx + 1.2 * rng.normal(size=(40, 8))  # noisy translations: some queries miss, differently per side

    def numpy_accuracy(queries, candidates):
        q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        c = candidates / np.linalg.norm(candidates, axis=1, keepdims=True)
        return float(np.mean((q @ c.T).argmax(axis=1) == np.arange(len(q))))

    ones = np.ones(len(xx), dtype=int)
    table = tatoeba_table(xx[:, None], ones, en[:, None], ones, [8], "sentence", alpha=1.0)
    acc = table[table["variant"] == "original"].set_index("direction")["accuracy"]
    assert acc["en->xx"] == numpy_accuracy(en, xx)
    assert acc["xx->en"] == numpy_accuracy(xx, en)
    assert acc["en->xx"] != acc["xx->en"] and 0 < acc["en->xx"] < 1


def test_vector_spread_flags_collapsed_vectors():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(30, 5))
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    cos = unit @ unit.T
    brute = 1 - (cos.sum() - np.trace(cos)) / (30 * 29)
    assert vector_spread(v) == pytest.approx(brute)
    assert vector_spread(v, block=7) == pytest.approx(brute)  # blocks of rows sum to the same
    same = np.tile(rng.normal(size=5), (30, 1)) * rng.uniform(1, 2, size=(30, 1))  # one direction, any length
    assert vector_spread(same) == pytest.approx(0, abs=1e-12)
    ones = np.ones(30, dtype=int)
    collapsed = tatoeba_table(same[:, None], ones, same[:, None], ones, [1], "sentence", alpha=1.0)
    assert (collapsed["vector_spread"] < 1e-9).all()
    normal = tatoeba_table(v[:, None], ones, v[:, None] + 0.1, ones, [1], "sentence", alpha=1.0)
    assert (normal["vector_spread"] > 0.5).all()


def test_accuracy_ties_and_duplicate_texts():
    same = np.ones((5, 3))
    assert retrieval_accuracy(same, same) == pytest.approx(1 / 5)  # a degenerate model is not perfect
    assert text_gold(["a", "b", "a"]) == [{0, 2}, {1}, {0, 2}]
    q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1]])
    c = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # candidates 0 and 2 say the same thing
    assert retrieval_accuracy(q, c) == pytest.approx(2 / 3)
    assert retrieval_accuracy(q, c, text_gold(["a", "b", "a"])) == 1.0


def test_threshold_selection_hand_case():
    gold = {("a", "x"), ("c", "z"), ("d", "w")}
    cands = {("a", "x"): 0.9, ("b", "y"): 0.8, ("c", "z"): 0.7, ("e", "v"): 0.6}
    # F1 after each: 0.5, 0.4, 2/3, 4/7 -> best after the third, threshold between 0.7 and 0.6
    threshold, f1 = optimize_threshold(cands, gold)
    assert threshold == pytest.approx(0.65) and f1 == pytest.approx(2 / 3)
    assert extract(cands, threshold) == {("a", "x"), ("b", "y"), ("c", "z")}
    assert prf(extract(cands, threshold), gold) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    assert prf(set(), gold) == (0.0, 0.0, 0.0)
    threshold, _ = optimize_threshold({("a", "x"): 0.9}, gold)  # best is the last candidate: keep it
    assert extract({("a", "x"): 0.9}, threshold) == {("a", "x")}


def brute_force_mine(x, y, k):
    """LASER's max retrieval with ratio margin, with the full similarity matrix (small inputs only)."""
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = y / np.linalg.norm(y, axis=1, keepdims=True)
    sim = x @ y.T
    x2y_ind = np.argsort(-sim, axis=1)[:, :k]
    y2x_ind = np.argsort(-sim.T, axis=1)[:, :k]
    x2y_mean = np.take_along_axis(sim, x2y_ind, 1).mean(1)
    y2x_mean = np.take_along_axis(sim.T, y2x_ind, 1).mean(1)
    margin = sim / ((x2y_mean[:, None] + y2x_mean[None, :]) / 2)
    fwd = [(i, int(x2y_ind[i][np.argmax(margin[i, x2y_ind[i]])])) for i in range(len(x))]
    bwd = [(int(y2x_ind[j][np.argmax(margin[y2x_ind[j], j])]), j) for j in range(len(y))]
    pairs = [(margin[i, j], i, j) for i, j in fwd + bwd]
    out, seen_s, seen_t = {}, set(), set()
    for score, i, j in sorted(pairs, key=lambda p: -p[0]):
        if i not in seen_s and j not in seen_t:
            seen_s.add(i)
            seen_t.add(j)
            out[(i, j)] = score
    return out


def test_mine_matches_brute_force():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(23, 8)), rng.normal(size=(31, 8))
    got = mine(x, y, k=4, score="margin", block=5)
    want = brute_force_mine(x, y, 4)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-5)
    cos = mine(x, y, score="cosine", block=7)
    assert len({s for s, _ in cos}) == len(cos) == len({t for _, t in cos})  # one-to-one


def bucc_split(seed, n_gold=15, n_src=25, n_en=35, dim=16, offset=4.0):
    rng = np.random.default_rng(seed)
    src = rng.normal(size=(n_src, dim))
    en = rng.normal(size=(n_en, dim))
    en[:n_gold] = src[:n_gold] + 0.05 * rng.normal(size=(n_gold, dim))
    src = src + offset * rng.normal(size=dim)  # a language offset on the source side
    src_ids, en_ids = [f"xx-{i}" for i in range(n_src)], [f"en-{j}" for j in range(n_en)]
    gold = {(src_ids[i], en_ids[i]) for i in range(n_gold)}
    ones = lambda n: np.ones(n, dtype=int)  # noqa: E731
    return (src_ids, src[:, None], ones(n_src), en_ids, en[:, None], ones(n_en)), gold


def test_bucc_planted_threshold_from_dev_applied_to_test():
    dev, dev_gold = bucc_split(0)
    test, test_gold = bucc_split(1)
    table = bucc_table(dev, test, dev_gold, test_gold, [7], "sentence", alpha=1.0, k=4, block=8).set_index("variant")
    assert table.loc["zero_mean", "f1"] == 1.0 and table.loc["zero_mean", "dev_f1"] == 1.0
    assert table.loc["original", "f1"] < 1.0
    assert table.loc["mds", "f1"] > table.loc["original", "f1"]  # the means differ a little: non-gold sentences
    assert (table["n_gold"] == 15).all() and (table["n_src"] == 25).all()
    assert (table["direction"] == BUCC_DIRECTION).all()  # symmetric mining: no query direction


# ---------------------------------------------------------------------------------------------- tiny BERT


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)] + ["##s"]
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"), vocab, hidden=32, positions=16)


def test_tatoeba_and_bucc_with_a_tiny_bert(tiny_model):
    encoder = Encoder.from_pretrained(tiny_model, device="cpu", max_length=8)
    rng = np.random.default_rng(0)
    xx = [" ".join(f"w{i}" for i in rng.integers(0, 20, rng.integers(1, 12))) for _ in range(12)]
    en = [" ".join(f"w{i}s" for i in map(int, s.replace("w", "").split())) for s in xx]
    table = tatoeba(encoder, xx, en, layers=None, mean_stat="token", alpha=1.0, batch_size=5)
    assert len(table) == 3 * 3 * 2 and table["accuracy"].between(0, 1).all()
    src = {f"xx-{i}": s for i, s in enumerate(xx)}
    eng = {f"en-{i}": s for i, s in enumerate(en)}
    split = bucc_split_vectors(encoder, src, eng, [1], batch_size=4)
    gold = {(f"xx-{i}", f"en-{i}") for i in range(6)}
    result = bucc_table(split, split, gold, gold, [1], "sentence", alpha=1.0)
    assert set(result["variant"]) == {"original", "zero_mean", "mds"}
    assert result["f1"].between(0, 1).all()
