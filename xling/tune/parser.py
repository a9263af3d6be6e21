"""The biaffine dependency parser head (Dozat & Manning 2017) over word vectors, as Conneau et al. (2020) and Liu
et al. use it on each word's first-subword vector, and maximum-spanning-tree decoding with exactly one root.

Words and ROOT: the head reads the W word vectors of each sentence ([B, W, H], left-aligned, padded at the end)
and puts a learned ROOT vector in slot 0 in front of them, so slot i is word i and head indices are CoNLL-U HEAD
values (0 = ROOT) as they stand in the treebank. A learned vector, rather than [CLS], serves every backbone
alike (BERT and the static vectors' BiLSTM).

Relations: the parser predicts universal relations (subtypes stripped, `nmod:poss` -> `nmod`), which is all LAS
compares. The inventory is the English training treebank's (relation_inventory); a relation it lacks, met in
another language's test set, gets UNKNOWN's id, which the parser never predicts, so it counts as wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import conllu
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from xling.data.formats import syntactic_words, universal_relation


def relation_inventory(sentences: Iterable[conllu.TokenList]) -> list[str]:
    """The universal relations of a (training) treebank's words, sorted: the parser's label ids."""
    return sorted({universal_relation(word["deprel"]) for sentence in sentences for word in syntactic_words(sentence)})


def relation_ids(deprels: Sequence[str], inventory: Sequence[str]) -> list[int]:
    """Label ids of relations; one outside the inventory gets len(inventory), an id the parser never predicts."""
    index = {relation: i for i, relation in enumerate(inventory)}
    return [index.get(universal_relation(deprel), len(inventory)) for deprel in deprels]


def _mlp(input_dim: int, output_dim: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(input_dim, output_dim), nn.LeakyReLU(0.1), nn.Dropout(dropout))


class BiaffineParser(nn.Module):
    """Arc scores s(d <- h) = a_d^T U a_h + u^T a_h over MLP projections of dependents (a_d) and heads (a_h), and
    relation scores at a given head s_r(d <- h) = l_d^T U_r l_h + w_r^T [l_d; l_h] + b_r (Dozat & Manning 2017).

    arc_dim, label_dim: the MLP sizes (D&M: 500 and 100); dropout after each MLP (D&M: 0.33). The biaffine
    weights start at zero, so every head is equally likely before training.
    """

    def __init__(
        self, input_dim: int, n_relations: int, arc_dim: int = 500, label_dim: int = 100, dropout: float = 0.33
    ):
        super().__init__()
        self.root = nn.Parameter(torch.randn(input_dim))  # N(0, 1): the scale of layer-normalised states
        self.arc_dep, self.arc_head = _mlp(input_dim, arc_dim, dropout), _mlp(input_dim, arc_dim, dropout)
        self.label_dep, self.label_head = _mlp(input_dim, label_dim, dropout), _mlp(input_dim, label_dim, dropout)
        self.arc_weight = nn.Parameter(torch.zeros(arc_dim, arc_dim))
        self.arc_head_bias = nn.Parameter(torch.zeros(arc_dim))
        self.label_weight = nn.Parameter(torch.zeros(n_relations, label_dim, label_dim))
        self.label_linear = nn.Linear(2 * label_dim, n_relations)
        nn.init.zeros_(self.label_linear.weight)
        nn.init.zeros_(self.label_linear.bias)

    def _scores(self, words: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Arc scores [B, W, W + 1] (dependent word i + 1, head slot j), -inf where the head is padding or the
        word itself; and the label projections of dependents [B, W, L] and of head slots [B, W + 1, L]."""
        if mask.shape != words.shape[:2]:
            raise ValueError(f"mask {tuple(mask.shape)} does not match words {tuple(words.shape)}")
        slots = torch.cat([self.root.expand(len(words), 1, -1).to(words.dtype), words], dim=1)
        dep, head = self.arc_dep(words), self.arc_head(slots)
        arcs = dep @ self.arc_weight @ head.transpose(1, 2) + (head @ self.arc_head_bias)[:, None, :]
        n_words = words.shape[1]
        candidate = torch.cat([mask.new_ones(len(mask), 1), mask], dim=1)[:, None, :].expand(-1, n_words, -1)
        slot = torch.arange(n_words + 1, device=mask.device)
        itself = slot[None, :] == slot[1:, None]  # word i + 1 in slot i + 1
        arcs = arcs.masked_fill(~candidate | itself, float("-inf"))
        return arcs, self.label_dep(words), self.label_head(slots)

    def _label_scores(self, dep: torch.Tensor, head_slots: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """Relation scores [B, W, R] of each word given its head slot (heads [B, W], any value at padding)."""
        at_head = head_slots.gather(1, heads.clamp(0, head_slots.shape[1] - 1)[..., None].expand_as(dep))
        return torch.einsum("bwi,rij,bwj->bwr", dep, self.label_weight, at_head) + self.label_linear(
            torch.cat([dep, at_head], dim=-1)
        )

    def forward(
        self, words: torch.Tensor, mask: torch.Tensor, heads: torch.Tensor, relations: torch.Tensor
    ) -> torch.Tensor:
        """Training loss: cross-entropy of each word's gold head over the ROOT and the sentence's other words,
        plus cross-entropy of its gold relation given the gold head, each averaged over the words.

        words [B, W, H]; mask [B, W] (True at words); heads [B, W] CoNLL-U HEADs; relations [B, W] label ids.
        """
        mask = mask.bool()
        arcs, dep, head_slots = self._scores(words, mask)
        heads = heads.long()
        gold_arcs = arcs.gather(2, heads.clamp(0, arcs.shape[2] - 1)[..., None])[..., 0]
        if not torch.isfinite(gold_arcs[mask]).all():
            raise ValueError("a gold head is padding, the word itself or outside the sentence")
        arc_loss = F.cross_entropy(arcs[mask], heads[mask])
        label_loss = F.cross_entropy(self._label_scores(dep, head_slots, heads)[mask], relations.long()[mask])
        return arc_loss + label_loss

    @torch.no_grad()
    def predict(self, words: torch.Tensor, mask: torch.Tensor) -> tuple[list[list[int]], list[list[int]]]:
        """Per sentence, each word's head (a tree with one root: max_spanning_tree over the log-probabilities of
        the heads) and its relation id (argmax given that head). The mask must be a prefix of each row; dropout is
        the caller's to switch off (eval())."""
        mask = mask.bool()
        lengths = mask.sum(1)
        if not torch.equal(mask, torch.arange(mask.shape[1], device=mask.device)[None, :] < lengths[:, None]):
            raise ValueError("word mask is not left-aligned (padding must follow the words)")
        arcs, dep, head_slots = self._scores(words, mask)
        log_probs = arcs.double().log_softmax(-1).cpu().numpy()
        heads = torch.zeros(mask.shape, dtype=torch.long)
        for b, n in enumerate(lengths.tolist()):
            scores = np.zeros((n + 1, n + 1))
            scores[1:] = log_probs[b, :n, : n + 1]
            heads[b, :n] = torch.from_numpy(max_spanning_tree(scores))
        relations = self._label_scores(dep, head_slots, heads.to(dep.device)).argmax(-1).cpu()
        return (
            [heads[b, :n].tolist() for b, n in enumerate(lengths.tolist())],
            [relations[b, :n].tolist() for b, n in enumerate(lengths.tolist())],
        )


def max_spanning_tree(scores: np.ndarray) -> np.ndarray:
    """Heads of the highest-scoring dependency tree in which exactly one word depends on ROOT.

    scores[d, h] ([n + 1, n + 1], index 0 = ROOT) scores word h as the head of word d (log-probabilities, say);
    row 0 and the diagonal are ignored, every other entry must be finite. Returns heads[i] for word i + 1.

    Chu-Liu/Edmonds (Chu & Liu 1965, Edmonds 1967) finds the best arborescence rooted at ROOT. For one root,
    every ROOT arc is first lowered by a constant larger than the score gap between any two trees: a tree with
    k >= 2 ROOT arcs then scores below every tree with one, and the trees with one keep their order (all lose
    the same constant). This is exact, with a single Chu-Liu/Edmonds run instead of one per candidate root
    word (Zmigrod et al. 2020 discuss both). Written here because the packages at hand decode without the
    one-root constraint and are either GPL (ufal.chu_liu_edmonds) or general graph code in pure Python
    (networkx, 30-250x slower on dense sentence graphs of 10-120 words; the tests use it as the reference).
    """
    scores = np.array(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or len(scores) < 1:
        raise ValueError(f"scores must be a square [n + 1, n + 1] matrix, got shape {scores.shape}")
    n = len(scores) - 1
    arcs = scores[1:][~np.eye(n, n + 1, 1, dtype=bool)]
    if not np.isfinite(arcs).all():
        raise ValueError("scores must be finite off the diagonal and below row 0")
    if n <= 1:
        return np.zeros(n, dtype=np.int64)
    scores[1:, 0] -= n * (arcs.max() - arcs.min()) + 1.0
    return _chu_liu_edmonds(scores)[1:]


def _cycle(heads: np.ndarray) -> np.ndarray | None:
    """The nodes of a cycle in the head graph (heads[0] = -1 for ROOT), or None when it is a tree."""
    state = np.zeros(len(heads), dtype=np.int8)  # 0 unvisited, 1 on the current path, 2 leads to ROOT
    state[0] = 2
    for start in range(1, len(heads)):
        path, node = [], start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node]
        if state[node] == 1:
            return np.array(path[path.index(node) :])
        state[path] = 2
    return None


def _chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Maximum spanning arborescence rooted at node 0: every node takes its best head; while that makes a cycle,
    contract the cycle into one node (arcs into it scored by what they gain over the cycle arc they replace),
    solve the smaller graph, then expand: the cycle keeps all its arcs but the one the entering arc replaces.
    Returns heads with heads[0] = -1."""
    scores = scores.copy()
    np.fill_diagonal(scores, -np.inf)
    scores[0] = -np.inf
    contractions = []
    while True:
        heads = scores.argmax(axis=1)
        heads[0] = -1
        cycle = _cycle(heads)
        if cycle is None:
            break
        outside = np.setdiff1d(np.arange(len(scores)), cycle)  # ROOT stays node 0; the cycle becomes node c
        c = len(outside)
        gain = scores[np.ix_(cycle, outside)] - scores[cycle, heads[cycle]][:, None]  # [cycle dep, outside head]
        leaving = scores[np.ix_(outside, cycle)]  # [outside dep, cycle head]
        contracted = np.full((c + 1, c + 1), -np.inf)
        contracted[:c, :c] = scores[np.ix_(outside, outside)]
        contracted[c, :c] = gain.max(axis=0)
        contracted[:c, c] = leaving.max(axis=1)
        contractions.append((outside, cycle, heads, gain.argmax(axis=0), leaving.argmax(axis=1)))
        scores = contracted
    for outside, cycle, cycle_heads, entering, leaving in reversed(contractions):
        c = len(outside)
        expanded = cycle_heads.copy()  # cycle nodes keep their cycle arcs
        words, word_heads = outside[1:], heads[1:c]
        from_cycle = word_heads == c
        expanded[words[from_cycle]] = cycle[leaving[1:][from_cycle]]
        expanded[words[~from_cycle]] = outside[word_heads[~from_cycle]]
        expanded[cycle[entering[heads[c]]]] = outside[heads[c]]
        heads = expanded
    return heads
