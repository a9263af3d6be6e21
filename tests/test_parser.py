"""The biaffine parser head and its one-root maximum-spanning-tree decoding (xling.tune.parser).

MST decoding is checked against brute force (every single-root tree, n <= 5) and, on larger graphs, against
networkx's Edmonds (maximum_spanning_arborescence, unconstrained; one root = the best over trees that may attach
only one chosen word to ROOT).
"""

import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch

from xling.data.formats import read_conllu
from xling.tune.parser import BiaffineParser, _chu_liu_edmonds, max_spanning_tree, relation_ids, relation_inventory

CONLL18 = Path(__file__).parent / "data" / "conll18"


def is_tree(heads) -> bool:
    """Heads within the sentence, none a word itself, and every word reaching ROOT (any number of ROOT children)."""
    n = len(heads)
    if not all(0 <= h <= n and h != i + 1 for i, h in enumerate(heads)):
        return False
    for word in range(1, n + 1):
        seen, node = set(), word
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


def is_tree_with_one_root(heads) -> bool:
    return is_tree(heads) and list(heads).count(0) == 1


def tree_score(scores, heads) -> float:
    return float(sum(scores[i + 1, h] for i, h in enumerate(heads)))


def brute_force(scores, one_root=True) -> tuple[float, tuple[int, ...]]:
    n = len(scores) - 1
    trees = (
        heads
        for heads in itertools.product(range(n + 1), repeat=n)
        if (not one_root or heads.count(0) == 1) and is_tree(heads)
    )
    return max((tree_score(scores, heads), heads) for heads in trees)


def random_scores(rng, n, root_bias=0.0):
    """Gaussian scores; root_bias > 0 makes ROOT arcs attractive, so the unconstrained best has many roots."""
    scores = rng.normal(size=(n + 1, n + 1))
    scores[:, 0] += root_bias
    return scores


def random_tree(rng, n) -> list[int]:
    """A random (possibly non-projective) tree with one root: words attach, in a random order, to an earlier one."""
    order = rng.permutation(np.arange(1, n + 1))
    heads = [0] * n
    for k, word in enumerate(order[1:], start=1):
        heads[word - 1] = int(order[rng.integers(k)])
    return heads


# --- maximum spanning tree -----------------------------------------------------------------------------------


@pytest.mark.parametrize("root_bias", [0.0, 3.0])
def test_mst_gives_a_tree_with_one_root_on_random_scores(root_bias):
    rng = np.random.default_rng(0)
    for n in [*range(1, 20), 35, 60, 100]:
        for _ in range(10):
            heads = max_spanning_tree(random_scores(rng, n, root_bias))
            assert len(heads) == n and is_tree_with_one_root(heads.tolist()), (n, heads)


def test_mst_equals_brute_force_on_small_sentences():
    rng = np.random.default_rng(1)
    constrained = 0
    for n in range(1, 6):
        for trial in range(30):
            scores = random_scores(rng, n, root_bias=2.0 * (trial % 2))
            best, best_heads = brute_force(scores)
            heads = max_spanning_tree(scores)
            assert tree_score(scores, heads) == pytest.approx(best)
            assert tuple(heads.tolist()) == best_heads  # continuous scores: no ties
            free_best, free_heads = brute_force(scores, one_root=False)
            assert tree_score(scores, _chu_liu_edmonds(scores)[1:]) == pytest.approx(free_best)
            constrained += free_heads.count(0) > 1
    assert constrained > 20, "the one-root constraint should have mattered in many cases"


def networkx_best(scores, only_root_child=None) -> float:
    n = len(scores) - 1
    graph = nx.DiGraph()
    graph.add_weighted_edges_from(
        (h, d, scores[d, h])
        for d in range(1, n + 1)
        for h in range(n + 1)
        if h != d and (h != 0 or only_root_child in (None, d))
    )
    tree = nx.maximum_spanning_arborescence(graph)
    return sum(scores[d, h] for h, d in tree.edges)


@pytest.mark.slow
def test_mst_equals_networkx_edmonds_on_larger_sentences():
    rng = np.random.default_rng(2)
    for n in (6, 9, 14, 25):
        for trial in range(4):
            scores = random_scores(rng, n, root_bias=1.5 * (trial % 2))
            assert tree_score(scores, _chu_liu_edmonds(scores)[1:]) == pytest.approx(networkx_best(scores))
            one_root = max(networkx_best(scores, root_child) for root_child in range(1, n + 1))
            assert tree_score(scores, max_spanning_tree(scores)) == pytest.approx(one_root)


def test_mst_recovers_the_gold_tree_from_scores_peaked_at_it():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 17, 40, 80):
        for _ in range(5):
            gold = random_tree(rng, n)
            logits = rng.normal(size=(n + 1, n + 1))
            logits[np.arange(1, n + 1), gold] += 6.0
            log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            assert max_spanning_tree(log_probs).tolist() == gold


def test_mst_rejects_bad_scores():
    with pytest.raises(ValueError, match="square"):
        max_spanning_tree(np.zeros((3, 4)))
    scores = np.zeros((4, 4))
    scores[2, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        max_spanning_tree(scores)
    scores[2, 1] = 0.0
    scores[2, 2] = scores[0, 1] = -np.inf  # ignored: the diagonal and ROOT's own row
    assert is_tree_with_one_root(max_spanning_tree(scores).tolist())


# --- relations ------------------------------------------------------------------------------------------------


def test_relation_inventory_is_universal_and_unknown_relations_get_an_unpredictable_id():
    inventory = relation_inventory(read_conllu(CONLL18 / "gold.conllu"))
    assert inventory == sorted(
        ["nsubj", "root", "case", "det", "obl", "nmod", "punct", "obj", "cc", "conj", "orphan", "compound"]
    )
    assert relation_ids(["nmod:poss", "root", "flat:name"], inventory) == [
        inventory.index("nmod"),
        inventory.index("root"),
        len(inventory),
    ]


# --- the parser head ------------------------------------------------------------------------------------------


def toy_batch(seed=0, lengths=(5, 3, 7, 1), dim=16, n_relations=4):
    rng = np.random.default_rng(seed)
    n_words = max(lengths)
    mask = torch.arange(n_words)[None, :] < torch.tensor(lengths)[:, None]
    heads = torch.zeros(len(lengths), n_words, dtype=torch.long)
    for b, n in enumerate(lengths):
        heads[b, :n] = torch.tensor(random_tree(rng, n))
    relations = torch.from_numpy(rng.integers(n_relations, size=(len(lengths), n_words)))
    words = torch.from_numpy(rng.normal(size=(len(lengths), n_words, dim))).float()
    return words, mask, heads, relations


@pytest.mark.slow
def test_loss_decreases_and_the_parser_learns_a_toy_batch():
    torch.manual_seed(0)
    words, mask, heads, relations = toy_batch()
    parser = BiaffineParser(16, 4, arc_dim=32, label_dim=16, dropout=0.0)
    optimizer = torch.optim.Adam(parser.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = parser(words, mask, heads, relations)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]
    predicted_heads, predicted_relations = parser.eval().predict(words, mask)
    lengths = mask.sum(1).tolist()
    assert predicted_heads == [heads[b, :n].tolist() for b, n in enumerate(lengths)]
    assert predicted_relations == [relations[b, :n].tolist() for b, n in enumerate(lengths)]


def test_the_first_loss_is_uniform_over_heads_and_relations():
    """Zero biaffine weights: each word's head is uniform over ROOT and the other words, its relation uniform."""
    words, mask, heads, relations = toy_batch()
    loss = BiaffineParser(16, 4, arc_dim=8, label_dim=8)(words, mask, heads, relations)
    lengths = mask.sum(1)
    expected = torch.repeat_interleave(lengths, lengths).double().log().mean() + np.log(4)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


def test_padding_is_never_a_head_and_does_not_change_the_scores():
    torch.manual_seed(1)
    words, mask, heads, relations = toy_batch(seed=1)
    parser = BiaffineParser(16, 4, arc_dim=32, label_dim=16).eval()
    with torch.no_grad():  # an untrained parser whose padding vectors would win every arc
        parser.arc_weight.normal_()
        parser.arc_head_bias.normal_()
    noisy = words.clone()
    noisy[~mask] = 1e3 * torch.randn(int((~mask).sum()), 16)
    predicted_heads, _ = parser.predict(noisy, mask)
    for sentence in predicted_heads:
        assert is_tree_with_one_root(sentence)  # heads within the sentence (no padding slot), one root
    assert parser.predict(words, mask) == parser.predict(noisy, mask)
    assert parser(words, mask, heads, relations).item() == pytest.approx(parser(noisy, mask, heads, relations).item())
    for b, n in enumerate(mask.sum(1).tolist()):  # alone, unpadded: the same parse
        alone = parser.predict(words[b : b + 1, :n], mask[b : b + 1, :n])
        assert alone == ([predicted_heads[b]], [parser.predict(words, mask)[1][b]])


def test_parser_rejects_gold_heads_at_padding_and_unaligned_masks():
    words, mask, heads, relations = toy_batch()
    parser = BiaffineParser(16, 4, arc_dim=8, label_dim=8)
    bad = heads.clone()
    bad[1, 0] = 5  # sentence 1 has 3 words: slot 5 is padding
    with pytest.raises(ValueError, match="gold head is padding"):
        parser(words, mask, bad, relations)
    bad = heads.clone()
    bad[0, 2] = 3  # word 3 headed by itself
    with pytest.raises(ValueError, match="the word itself"):
        parser(words, mask, bad, relations)
    with pytest.raises(ValueError, match="left-aligned"):
        parser.predict(words, mask.flip(1))
