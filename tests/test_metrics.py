"""Reference tests for xling.evaluate.metrics: hand-computed values, exhaustive tie-breaking, blockwise ==
brute force, and MUSE's CSLS computed directly with numpy."""

import itertools
from math import comb

import numpy as np
import pytest

from xling.evaluate import metrics, ranks as rank_metrics
from xling.evaluate.ranks import Ranks


def untied(ranks) -> Ranks:
    """Ranks without ties: the best gold alone at each 1-based rank."""
    ranks = np.asarray(ranks)
    return Ranks(ranks - 1, np.ones_like(ranks), np.ones_like(ranks))


def test_chance_mrr_hand_values():
    assert rank_metrics.chance_mrr(1) == pytest.approx(1.0)
    assert rank_metrics.chance_mrr(2) == pytest.approx(0.75)  # (1 + 1/2) / 2
    assert rank_metrics.chance_mrr(4) == pytest.approx(25 / 48)  # (1 + 1/2 + 1/3 + 1/4) / 4
    with pytest.raises(ValueError):
        rank_metrics.chance_mrr(0)


def test_chance_mrr_matches_simulation():
    rng = np.random.default_rng(0)
    ranks = rng.integers(1, 11, size=200_000)
    assert rank_metrics.mrr(untied(ranks)) == pytest.approx(rank_metrics.chance_mrr(10), abs=3e-3)


def test_chance_mrr_counts_several_golds():
    # n=4, two golds: best rank 1, 2, 3 with probability 3/6, 2/6, 1/6 -> 1/2 + 1/6 + 1/18 = 13/18
    assert rank_metrics.chance_mrr(4, 2) == pytest.approx(13 / 18)
    assert rank_metrics.chance_mrr(5, 5) == pytest.approx(1.0)
    assert rank_metrics.chance_mrr(7, 1) == pytest.approx(rank_metrics.chance_mrr(7))
    assert rank_metrics.chance_mrr(4, [1, 2]) == pytest.approx((25 / 48 + 13 / 18) / 2)  # one count per query: mean
    rng = np.random.default_rng(0)
    best = [1 / (rng.permutation(30)[:3].min() + 1) for _ in range(40000)]
    assert rank_metrics.chance_mrr(30, 3) == pytest.approx(np.mean(best), abs=0.005)
    with pytest.raises(ValueError):
        rank_metrics.chance_mrr(3, 4)
    with pytest.raises(ValueError):
        rank_metrics.chance_mrr(3, [1, 0])


def test_mrr_and_precision_hand_values():
    ranks = untied([1, 2, 4])
    assert rank_metrics.mrr(ranks) == pytest.approx(7 / 12)
    assert rank_metrics.precision_at_k(ranks, 1) == pytest.approx(1 / 3)
    assert rank_metrics.precision_at_k(ranks, 2) == pytest.approx(2 / 3)
    assert rank_metrics.precision_at_k(ranks, 5) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="zero queries"):
        Ranks([], [], [])
    with pytest.raises(ValueError):
        Ranks([0, -1], [1, 1], [1, 1])
    with pytest.raises(ValueError):
        Ranks([0], [2], [3])  # more tied golds than tied candidates
    with pytest.raises(ValueError):
        rank_metrics.precision_at_k(ranks, 0)


def test_partial_ties_hand_values():
    # one candidate above, the gold tied with 2 non-golds: rank 2, 3 or 4, each with probability 1/3
    one = Ranks([1], [3], [1])
    assert rank_metrics.mrr(one) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert rank_metrics.precision_at_k(one, 1) == 0.0
    assert rank_metrics.precision_at_k(one, 2) == pytest.approx(1 / 3)
    assert rank_metrics.precision_at_k(one, 3) == pytest.approx(2 / 3)
    assert rank_metrics.precision_at_k(one, 4) == pytest.approx(1.0)
    # one above, 2 golds among 4 tied: first gold at tied position 1, 2, 3 with probability 3/6, 2/6, 1/6
    two = Ranks([1], [4], [2])
    assert rank_metrics.mrr(two) == pytest.approx(3 / 6 / 2 + 2 / 6 / 3 + 1 / 6 / 4)  # 29/72
    assert rank_metrics.precision_at_k(two, 2) == pytest.approx(1 / 2)
    assert rank_metrics.precision_at_k(two, 3) == pytest.approx(5 / 6)
    # not the reciprocal of the mean rank (1 + 1 + 3/2 = 3.5 -> 0.2857 for `one`)
    assert rank_metrics.mrr(one) != pytest.approx(1 / 3.5)


def test_tie_breaking_equals_the_mean_over_every_order():
    """Exhaustive reference: average 1/rank and hit@k over all orders of the tied candidates."""
    cases = [(a, t, g) for a in range(3) for t in range(1, 6) for g in range(1, t + 1)]
    ranks = Ranks(*zip(*cases, strict=True))
    rr = rank_metrics.expected_reciprocal_rank(ranks)
    hits = {k: rank_metrics.expected_hit_at_k(ranks, k) for k in (1, 2, 3, 5)}
    for i, (above, tied, n_gold) in enumerate(cases):
        orders = list(itertools.permutations([True] * n_gold + [False] * (tied - n_gold)))
        best = [above + 1 + order.index(True) for order in orders]
        assert rr[i] == pytest.approx(np.mean([1 / r for r in best])), cases[i]
        for k, hit in hits.items():
            assert hit[i] == pytest.approx(np.mean([r <= k for r in best])), (cases[i], k)


def test_nn_ranks_hand_case_and_partial_ties():
    candidates = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # cos(q, c0) = 0.995, cos(q, c2) = 0.774, cos(q, c1) = 0.0995
    q = np.array([[1.0, 0.1]])
    assert metrics.nn_ranks(q, candidates, [{1}]).above.tolist() == [2]
    assert metrics.nn_ranks(q, candidates, [{1, 2}]).above.tolist() == [1]  # best-ranked gold counts
    assert rank_metrics.mrr(metrics.nn_ranks(q, candidates, [{0}])) == 1.0
    # tie: c0 and c1 both at cosine 0.707 from (2, 2), c2 (cosine 1) above them
    tie = np.array([[2.0, 2.0]])
    ranks = metrics.nn_ranks(tie, candidates, [{1}])
    assert (ranks.above.tolist(), ranks.tied.tolist(), ranks.tied_gold.tolist()) == ([1], [2], [1])
    assert rank_metrics.mrr(ranks) == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert rank_metrics.precision_at_k(ranks, 1) == 0.0 and rank_metrics.precision_at_k(ranks, 2) == pytest.approx(0.5)
    both = metrics.nn_ranks(tie, candidates, [{0, 1}])  # both tied candidates are gold: rank 2 for sure
    assert both.tied_gold.tolist() == [2] and rank_metrics.mrr(both) == pytest.approx(1 / 2)
    alone = metrics.nn_ranks(tie, candidates[:2], [{1}])
    assert rank_metrics.mrr(alone) == pytest.approx(3 / 4) and rank_metrics.precision_at_k(alone, 1) == pytest.approx(
        0.5
    )


def _chance_p_at_k(n, golds, k):
    """P@k of a random ranking: 1 - P(none of a query's golds among the first k), by hand."""
    return np.mean([1 - comb(n - k, g) / comb(n, g) for g in golds])


@pytest.mark.parametrize("metric", ["cosine", "csls"])
@pytest.mark.parametrize("collapse", ["equal", "zero"])
@pytest.mark.parametrize("several_golds", [False, True])
def test_collapsed_vectors_score_chance(metric, collapse, several_golds):
    rng = np.random.default_rng(3)
    n_queries, n, dim = 50, 40, 768
    if collapse == "equal":  # one random vector everywhere; its cosines differ in the last bits by position
        vec = rng.normal(size=dim)
        queries, candidates = np.tile(vec, (n_queries, 1)), np.tile(3 * vec, (n, 1))
    else:
        queries, candidates = np.zeros((n_queries, dim)), np.zeros((n, dim))
    sizes = rng.integers(1, 5, size=n_queries) if several_golds else np.ones(n_queries, dtype=int)
    gold = [set(rng.choice(n, size=s, replace=False).tolist()) for s in sizes]
    ranks = metrics.nn_ranks(queries, candidates, gold, block=16, metric=metric, csls_k=5)
    assert (ranks.above == 0).all() and (ranks.tied == n).all()
    assert rank_metrics.mrr(ranks) == pytest.approx(rank_metrics.chance_mrr(n, sizes), rel=1e-12)
    assert rank_metrics.precision_at_k(ranks, 1) == pytest.approx(np.mean(sizes / n), rel=1e-9)
    assert rank_metrics.precision_at_k(ranks, 5) == pytest.approx(_chance_p_at_k(n, sizes, 5), rel=1e-9)
    if not several_golds:
        assert rank_metrics.mrr(ranks) == pytest.approx(sum(1 / r for r in range(1, n + 1)) / n)


def test_nn_ranks_rejects_bad_gold():
    x = np.eye(3)
    with pytest.raises(ValueError, match="query 1 has no gold"):
        metrics.nn_ranks(x, x, [{0}, set(), {2}])
    with pytest.raises(ValueError, match="outside"):
        metrics.nn_ranks(x, x, [{0}, {3}, {2}])
    with pytest.raises(ValueError):
        metrics.nn_ranks(x, x, [{0}, {1}, {2}], metric="dot")
    with pytest.raises(ValueError, match="target_space"):
        metrics.nn_ranks(x, x, [{0}, {1}, {2}], metric="csls", target_space=np.ones((2, 4)))


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _knn_mean(x, y, k):
    """Mean cosine of each row of x to its k nearest rows of y: the full matrix, on purpose."""
    return np.sort(_unit(x) @ _unit(y).T, axis=1)[:, ::-1][:, :k].mean(axis=1)


def _brute_force_above(q, c, gold, metric, k, sources=None, targets=None):
    """MUSE's scores (csls = 2 cos - r_tgt(x) - r_src(y)) over the full matrix; candidates above the best gold."""
    s = _unit(q) @ _unit(c).T
    if metric == "csls":
        r_tgt = _knn_mean(q, c if targets is None else targets, k)
        r_src = _knn_mean(c, q if sources is None else sources, k)
        s = 2 * s - r_tgt[:, None] - r_src[None, :]
    return np.array([int(np.sum(s[i] > max(s[i, j] for j in g))) for i, g in enumerate(gold)])


@pytest.mark.parametrize("metric", ["cosine", "csls"])
@pytest.mark.parametrize("block", [1, 7, 64, 1024])
def test_nn_ranks_blockwise_equals_brute_force(metric, block):
    rng = np.random.default_rng(42)
    q, c = rng.normal(size=(137, 12)), rng.normal(size=(211, 12))
    gold = [set(rng.choice(211, size=rng.integers(1, 4), replace=False).tolist()) for _ in range(137)]
    expected = _brute_force_above(q, c, gold, metric, k=5)
    got = metrics.nn_ranks(q, c, gold, block=block, metric=metric, csls_k=5)
    np.testing.assert_array_equal(got.above, expected)
    assert (got.tied == 1).all() and (got.tied_gold == 1).all()  # random vectors: no ties, MUSE's ranks
    assert rank_metrics.mrr(got) == pytest.approx(np.mean(1 / (expected + 1)))


def test_csls_neighbourhoods_over_all_words_equal_muse():
    """MUSE: r_src(y) over ALL source words, r_tgt(x) over ALL target words, not the queries / candidates."""
    rng = np.random.default_rng(7)
    sources, targets = rng.normal(size=(300, 16)), rng.normal(size=(250, 16))
    q_idx, c_idx = rng.choice(300, size=60, replace=False), rng.choice(250, size=80, replace=False)
    q, c = sources[q_idx], targets[c_idx]
    gold = [set(rng.choice(80, size=rng.integers(1, 3), replace=False).tolist()) for _ in range(60)]
    muse = _brute_force_above(q, c, gold, "csls", 10, sources=sources, targets=targets)
    got = metrics.nn_ranks(q, c, gold, block=13, metric="csls", csls_k=10, source_space=sources, target_space=targets)
    np.testing.assert_array_equal(got.above, muse)
    within = metrics.nn_ranks(q, c, gold, block=13, metric="csls", csls_k=10)
    assert not np.array_equal(within.above, muse)  # the neighbourhood set changes the ranks
    np.testing.assert_array_equal(within.above, _brute_force_above(q, c, gold, "csls", 10))


def test_csls_demotes_a_hub():
    # candidate 2 is a hub: close to every query; cosine ranks it first for query 0, CSLS does not
    queries = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    # cos(q0, hub) = 0.870 > cos(q0, c0) = 0.857, but the hub's mean top-2 cosine to the queries is
    # 0.887 against 0.8245 for c0, so CSLS(q0, hub) = 2(0.870) - 0.887 < CSLS(q0, c0) = 2(0.857) - 0.8245
    hub = [1.0, 0.4, 0.4]
    candidates = np.array([[1.0, 0.6, 0.0], [0.0, 1.0, 0.0], hub, [0.0, 0.0, 1.0]])
    gold = [{0}, {1}, {3}, {2}]
    cos = metrics.nn_ranks(queries, candidates, gold, metric="cosine", csls_k=2)
    csls = metrics.nn_ranks(queries, candidates, gold, metric="csls", csls_k=2)
    assert cos.above[0] == 1 and csls.above[0] == 0
    np.testing.assert_array_equal(csls.above, _brute_force_above(queries, candidates, gold, "csls", 2))
