"""Reference tests for xling.evaluate.metrics: hand-computed values and blockwise == brute force."""

import numpy as np
import pytest

from xling.evaluate import metrics


def test_chance_mrr_hand_values():
    assert metrics.chance_mrr(1) == pytest.approx(1.0)
    assert metrics.chance_mrr(2) == pytest.approx(0.75)  # (1 + 1/2) / 2
    assert metrics.chance_mrr(4) == pytest.approx(25 / 48)  # (1 + 1/2 + 1/3 + 1/4) / 4
    with pytest.raises(ValueError):
        metrics.chance_mrr(0)


def test_chance_mrr_matches_simulation():
    rng = np.random.default_rng(0)
    ranks = rng.integers(1, 11, size=200_000)
    assert metrics.mrr(ranks) == pytest.approx(metrics.chance_mrr(10), abs=3e-3)


def test_mrr_and_precision_hand_values():
    ranks = [1, 2, 4]
    assert metrics.mrr(ranks) == pytest.approx(7 / 12)
    assert metrics.precision_at_k(ranks, 1) == pytest.approx(1 / 3)
    assert metrics.precision_at_k(ranks, 2) == pytest.approx(2 / 3)
    assert metrics.precision_at_k(ranks, 5) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        metrics.mrr([])
    with pytest.raises(ValueError):
        metrics.mrr([0, 1])


def test_nn_ranks_hand_case_and_tie_rule():
    candidates = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # cos(q, c0) = 0.995, cos(q, c2) = 0.774, cos(q, c1) = 0.0995
    q = np.array([[1.0, 0.1]])
    assert metrics.nn_ranks(q, candidates, [{1}]).tolist() == [3]
    assert metrics.nn_ranks(q, candidates, [{1, 2}]).tolist() == [2]  # best-ranked gold counts
    assert metrics.nn_ranks(q, candidates, [{0}]).tolist() == [1]
    # tie: c0 and c1 both at cosine 0.707 from (1, 1) -> optimistic, rank 1 + #strictly higher = 2 (c2 is higher)
    tie = np.array([[2.0, 2.0]])
    assert metrics.nn_ranks(tie, candidates, [{1}]).tolist() == [2]
    assert metrics.nn_ranks(tie, candidates[:2], [{1}]).tolist() == [1]


def test_nn_ranks_rejects_bad_gold():
    x = np.eye(3)
    with pytest.raises(ValueError, match="query 1 has no gold"):
        metrics.nn_ranks(x, x, [{0}, set(), {2}])
    with pytest.raises(ValueError, match="outside"):
        metrics.nn_ranks(x, x, [{0}, {3}, {2}])
    with pytest.raises(ValueError):
        metrics.nn_ranks(x, x, [{0}, {1}, {2}], metric="dot")


def _brute_force_ranks(q, c, gold, metric, k):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    s = qn @ cn.T  # the full matrix, on purpose
    if metric == "csls":
        r_src = np.sort(s, axis=1)[:, ::-1][:, :k].mean(axis=1)
        r_tgt = np.sort(s.T, axis=1)[:, ::-1][:, :k].mean(axis=1)
        s = 2 * s - r_src[:, None] - r_tgt[None, :]
    ranks = []
    for i, g in enumerate(gold):
        best = max(s[i, j] for j in g)
        ranks.append(1 + int(np.sum(s[i] > best)))
    return np.array(ranks)


@pytest.mark.parametrize("metric", ["cosine", "csls"])
@pytest.mark.parametrize("block", [1, 7, 64, 1024])
def test_nn_ranks_blockwise_equals_brute_force(metric, block):
    rng = np.random.default_rng(42)
    q, c = rng.normal(size=(137, 12)), rng.normal(size=(211, 12))
    gold = [set(rng.choice(211, size=rng.integers(1, 4), replace=False).tolist()) for _ in range(137)]
    expected = _brute_force_ranks(q, c, gold, metric, k=5)
    got = metrics.nn_ranks(q, c, gold, block=block, metric=metric, csls_k=5)
    np.testing.assert_array_equal(got, expected)
    assert got.min() >= 1 and got.max() <= 211


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
    assert cos[0] == 2 and csls[0] == 1
    np.testing.assert_array_equal(csls, _brute_force_ranks(queries, candidates, gold, "csls", 2))


def test_chance_mrr_counts_several_golds():
    # n=4, two golds: best rank 1, 2, 3 with probability 3/6, 2/6, 1/6 -> 1/2 + 1/6 + 1/18 = 13/18
    assert metrics.chance_mrr(4, 2) == pytest.approx(13 / 18)
    assert metrics.chance_mrr(5, 5) == pytest.approx(1.0)
    assert metrics.chance_mrr(7, 1) == pytest.approx(metrics.chance_mrr(7))
    rng = np.random.default_rng(0)
    best = [1 / (rng.permutation(30)[:3].min() + 1) for _ in range(40000)]
    assert metrics.chance_mrr(30, 3) == pytest.approx(np.mean(best), abs=0.005)
    with pytest.raises(ValueError):
        metrics.chance_mrr(3, 4)
