"""Orthogonal maps between two representation spaces, and the normalisation that precedes them.

Why: Cao et al. (2020) use a rotation learned on word pairs (or sentence pairs) as the baseline that their
fine-tuning alignment must beat; Conneau et al. (2020) align separately trained monolingual BERTs with one
(after iterative normalisation, Zhang et al. 2019). Both are the same two functions, here once:

* `procrustes(x, y)`: the orthogonal W minimising ||x W - y||_F (rows are paired vectors), the SVD solution
  of the orthogonal Procrustes problem (scipy.linalg.orthogonal_procrustes computes the same W);
* `iterative_normalize(x, n_iter)`: unit length, then mean centring, repeated; each step undoes a little of the
  other, and a few rounds leave vectors that are both (to float precision), which makes the two spaces'
  geometry comparable before the map is learned.

Cao et al.'s two rotation baselines learn W from pairs that are too many to hold at once (every linked word of
250K sentence pairs), so `CrossCovariance` adds up x^T y block by block and `orthogonal` turns it into W (the
same W as `procrustes` on all rows). `rotate_layer` applies a rotation inside a BERT's forward pass (as
xling.encode.transforms.shift_layer applies a shift), so the layers above and a task head see rotated states.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import numpy as np


def procrustes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Orthogonal W (d x d) minimising ||x @ W - y||_F for paired rows x[i] <-> y[i]."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape:
        raise ValueError(f"procrustes needs two matrices of the same shape, got {x.shape} and {y.shape}")
    if len(x) == 0:
        raise ValueError("procrustes needs at least one pair of vectors")
    return orthogonal(x.T @ y)


def orthogonal(cross: np.ndarray) -> np.ndarray:
    """The orthogonal W maximising trace(W^T M) for a cross-covariance M = x^T y: U V^T of M's SVD."""
    u, _, vt = np.linalg.svd(np.asarray(cross, dtype=np.float64))
    return u @ vt


class CrossCovariance:
    """x^T y added up over blocks of paired rows (float64), and the number of pairs seen."""

    def __init__(self, dim: int):
        self.matrix = np.zeros((dim, dim), dtype=np.float64)
        self.n = 0

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape or x.ndim != 2 or x.shape[1] != len(self.matrix):
            raise ValueError(f"expected two [n, {len(self.matrix)}] blocks, got {x.shape} and {y.shape}")
        self.matrix += x.T @ y
        self.n += len(x)

    def rotation(self) -> np.ndarray:
        if self.n == 0:
            raise ValueError("no pair of vectors was added: no rotation can be learned")
        return orthogonal(self.matrix)


def iterative_normalize(x: np.ndarray, n_iter: int = 5, eps: float = 1e-12) -> np.ndarray:
    """Unit length then mean centring, `n_iter` times, then unit length (Zhang et al. 2019), as float64."""
    return IterativeNormalizer.fit(x, n_iter, eps)(np.asarray(x, dtype=np.float64))


class IterativeNormalizer:
    """Iterative normalisation as a fitted transform: the mean subtracted in each round, learned on a sample
    and replayed on other vectors (unit length, minus that round's mean, ..., unit length). Why: a map learned
    between normalised spaces must see new vectors (a model's states at test time) normalised the same way;
    on its own sample it gives exactly `iterative_normalize`."""

    def __init__(self, means: np.ndarray, eps: float = 1e-12):
        self.means, self.eps = np.asarray(means, dtype=np.float64), eps

    @classmethod
    def fit(cls, x: np.ndarray, n_iter: int = 5, eps: float = 1e-12) -> "IterativeNormalizer":
        if n_iter < 1:
            raise ValueError(f"n_iter must be >= 1, got {n_iter}")
        x = np.array(x, dtype=np.float64)
        if x.ndim != 2 or not len(x):
            raise ValueError(f"iterative normalisation needs a non-empty [n, d] matrix, got shape {x.shape}")
        means = []
        for _ in range(n_iter):
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), eps)
            means.append(x.mean(axis=0))
            x -= means[-1]
        return cls(np.stack(means), eps)

    def __call__(self, h):
        """h [..., d] (numpy, or a torch tensor: the result keeps its dtype and device) normalised."""
        if isinstance(h, np.ndarray):

            def unit(v):
                return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), self.eps)

            means = self.means
        else:

            def unit(v):
                return v / v.norm(dim=-1, keepdim=True).clamp_min(self.eps)

            import torch

            means = torch.as_tensor(self.means, dtype=h.dtype, device=h.device)
        for mean in means:
            h = unit(h) - mean
        return unit(h)


KINDS = ("word", "sentence")


def linked_rows(
    pivot: list[np.ndarray], other: list[np.ndarray], links: list[set[tuple[int, int]]]
) -> tuple[np.ndarray, np.ndarray]:
    """The paired word vectors of a block of sentence pairs: (other-language rows, pivot rows), one per link
    i-j (i a pivot position, j the other language's); links to a word without a vector (NaN) are left out."""
    x, y = [], []
    for p_vectors, o_vectors, pairs in zip(pivot, other, links, strict=True):
        for i, j in sorted(pairs):
            if i >= len(p_vectors) or j >= len(o_vectors):
                raise ValueError(f"link {i}-{j} outside a sentence pair of {len(p_vectors)} and {len(o_vectors)} words")
            x.append(o_vectors[j])
            y.append(p_vectors[i])
    if not x:
        dim = next((v.shape[1] for v in pivot), 0)
        return np.zeros((0, dim)), np.zeros((0, dim))
    x, y = np.stack(x), np.stack(y)
    keep = ~(np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1))
    return x[keep], y[keep]


def mean_rows(sentences: list[np.ndarray]) -> np.ndarray:
    """Per sentence the mean of its word vectors that exist (not NaN): Aldarmaki and Diab's sentence vector, "the
    average word vector over the sentence" (Cao et al. 2020, section 2); NaN for a sentence without any."""
    out = np.full((len(sentences), next((v.shape[1] for v in sentences), 0)), np.nan)
    for row, vectors in enumerate(sentences):
        kept = vectors[~np.isnan(vectors).any(axis=1)]
        if len(kept):
            out[row] = kept.mean(axis=0)
    return out


def learn_rotations(
    word_vectors: Callable[[list[list[str]]], list[np.ndarray]],
    pivot: list[list[str]],
    other: list[list[str]],
    links: list[set[tuple[int, int]]],
    *,
    block: int,
) -> dict[str, tuple[np.ndarray, int]]:
    """Cao et al.'s two rotation baselines for one language, from word-aligned parallel sentences (tokenized):
    {"word": (W, pairs), "sentence": (W, pairs)}, W mapping the other language onto the pivot (x_other @ W ~
    x_pivot). Word: Procrustes on the linked words' vectors (Wang et al. 2019); sentence: on the sentences' mean
    word vectors (Aldarmaki and Diab 2019). word_vectors(sentences) gives each sentence's [n_words, H] vectors
    (NaN rows: no vector); `block` sentence pairs are encoded at a time (memory, not the result)."""
    if not (len(pivot) == len(other) == len(links)):
        raise ValueError(f"{len(pivot)} pivot sentences, {len(other)} others and {len(links)} link lines differ")
    covariances: dict[str, CrossCovariance] = {}
    for start in range(0, len(pivot), block):
        p_words, o_words = word_vectors(pivot[start : start + block]), word_vectors(other[start : start + block])
        p_sentences, o_sentences = mean_rows(p_words), mean_rows(o_words)
        both = ~(np.isnan(p_sentences).any(axis=1) | np.isnan(o_sentences).any(axis=1))
        for kind, (x, y) in (
            ("word", linked_rows(p_words, o_words, links[start : start + block])),
            ("sentence", (o_sentences[both], p_sentences[both])),
        ):
            covariances.setdefault(kind, CrossCovariance(x.shape[1])).add(x, y)
    if not covariances:
        raise ValueError("no sentence pair: no rotation can be learned")
    return {kind: (cov.rotation(), cov.n) for kind, cov in covariances.items()}


@contextlib.contextmanager
def rotate_layer(model, layer: int, w, normalizer: Callable | None = None) -> Iterator[None]:
    """Within the context, multiply the output hidden states of `layer` by w (h @ w, at every position) in every
    forward pass; `layer` indexes as xling.encode.transforms.layer_module (0 = the embeddings). With a
    `normalizer` (an IterativeNormalizer fitted on the space w was learned in), normalizer(h) @ w."""
    import torch

    from xling.encode.transforms import layer_module

    module = layer_module(model, layer)
    w_t = torch.as_tensor(np.asarray(w, dtype=np.float32))
    if w_t.ndim != 2 or w_t.shape[0] != w_t.shape[1]:
        raise ValueError(f"a rotation must be a square matrix, got shape {tuple(w_t.shape)}")

    def hook(_module, _args, output):
        states = output[0] if isinstance(output, tuple) else output
        if normalizer is not None:
            states = normalizer(states)
        rotated = states @ w_t.to(device=states.device, dtype=states.dtype)
        return (rotated,) + tuple(output[1:]) if isinstance(output, tuple) else rotated

    handle = module.register_forward_hook(hook, prepend=True)
    try:
        yield
    finally:
        handle.remove()
