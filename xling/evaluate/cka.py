"""Linear centered kernel alignment (CKA; Kornblith et al. 2019), the similarity index Conneau et al. (2020)
track by layer between two models' representations of the same (parallel) sentences.

    CKA(X, Y) = HSIC(X, Y) / sqrt(HSIC(X, X) HSIC(Y, Y)),   X [n, d1], Y [n, d2], rows paired

with the linear kernel. Why CKA and not a map's accuracy: it needs no training, and it is invariant to an
orthogonal transform and to isotropic scaling of either side (not to every invertible linear map), so two
models whose spaces differ by a rotation score as similar.

Two estimators of HSIC:
* biased (the paper's formula): centre the columns, then HSIC ~ ||Y^T X||_F^2 and CKA =
  ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F);
* debiased (`debiased=True`): the U-statistic of Song et al. (2012), which is unbiased for HSIC (the ratio
  stays slightly biased) and matters when n is not much larger than the dimension. Written in feature space
  (d x d products, never an n x n Gram matrix), from the Gram-matrix form with a zero diagonal K~:
  HSIC_u = [tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n(n-3)).

`cka_table` runs the models: the mean-pooled wordpiece vectors (no [CLS]/[SEP]) of parallel XNLI sentences at
every layer, compared layer by layer. Its `cka` column is the configured estimator (`cka.debiased`; the paper's
biased one by default, so the figure stays comparable with Figure 7); its intervals, and the claims judged on
them, are of the debiased CKA (`cka_debiased`), always. Why: at the presets' sizes the biased CKA sits far
above its population value (independent 100 x 32 vectors, population CKA 0: biased 0.24, debiased 0.00), so an
interval around it, however right its width, misses the value it estimates (in simulations at n = 100, d = 32
a jackknife interval around the biased CKA covered it 0-36 % of the time; around the debiased one >= 90 %,
tests/test_cka_coverage.py).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import torch

from xling.data.formats import read_xnli
from xling.evaluate.cka_intervals import interval_rows, left_out_cka
from xling.evaluate.uncertainty import DEFAULT_LEVEL, DEFAULT_SEED

logger = logging.getLogger(__name__)


def _matrix(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array [examples, features], got shape {x.shape}")
    return x


def _hsic_biased(x: np.ndarray, y: np.ndarray) -> float:
    """||Y^T X||_F^2 of column-centred X, Y: HSIC times (n-1)^2, a factor that cancels in CKA."""
    return float(np.linalg.norm(y.T @ x) ** 2)


def _hsic_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """Song et al.'s unbiased HSIC with linear kernels K = XX^T, L = YY^T, in feature space (needs n >= 4).

    With K~ = K - diag(K): tr(K~L~) = ||X^T Y||^2 - sum_i |x_i|^2 |y_i|^2, K~1 = X (X^T 1) - diag(K),
    1'K~1 = |X^T 1|^2 - tr(K)."""
    n = x.shape[0]
    sq_x, sq_y = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", y, y)
    trace = np.linalg.norm(x.T @ y) ** 2 - sq_x @ sq_y
    k_rows = x @ x.sum(axis=0) - sq_x  # K~ 1
    l_rows = y @ y.sum(axis=0) - sq_y  # L~ 1
    total = k_rows.sum() * l_rows.sum() / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * (k_rows @ l_rows)
    return float((trace + total) / (n * (n - 3)))


def linear_cka(x, y, debiased: bool = False) -> float:
    """Linear CKA of paired rows x [n, d1] and y [n, d2] (see the module docstring); in [0, 1] when biased.

    Raises ValueError on unpaired rows, on fewer than 2 rows (4 when debiased) and on a side without any
    variance (CKA is 0/0 there)."""
    x, y = _matrix("x", x), _matrix("y", y)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"CKA needs paired rows: x has {x.shape[0]}, y has {y.shape[0]}")
    n = x.shape[0]
    if n < (4 if debiased else 2):
        raise ValueError(f"CKA needs at least {4 if debiased else 2} examples, got {n}")
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)
    hsic = _hsic_unbiased if debiased else _hsic_biased
    xx, yy = hsic(x, x), hsic(y, y)
    if xx <= 0 or yy <= 0:
        raise ValueError("CKA is undefined when one side has no variance (every row the same)")
    return hsic(x, y) / np.sqrt(xx * yy)


def cka_by_layer(x, y, debiased: bool = False) -> list[float]:
    """CKA at each layer of two stacks of paired representations x [n, L, d1] and y [n, L, d2]."""
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 3 or y.ndim != 3 or x.shape[:2] != y.shape[:2]:
        raise ValueError(
            f"CKA by layer needs [n, layers, dim] arrays with equal n and layers, got {x.shape} and {y.shape}"
        )
    return [linear_cka(x[:, layer], y[:, layer], debiased) for layer in range(x.shape[1])]


# ---------------------------------------------------------------------------------------------- models


def xnli_parallel(
    pivot_path, target_path, max_sentences: int | None = None, example_order: bool = False
) -> list[tuple[str, str]]:
    """The distinct (pivot, target) sentence pairs of two line-aligned XNLI files (premises, then hypotheses,
    in file order; XNLI repeats each premise for its three hypotheses), the first `max_sentences`.
    example_order: each example's premise (where new) then its hypothesis, so that a cap keeps both kinds in
    the test set's proportion (token translation: "each sentence in XNLI test-set")."""
    pivot, target = read_xnli(pivot_path), read_xnli(target_path)
    if len(pivot) != len(target):
        raise ValueError(
            f"{pivot_path}: {len(pivot)} examples, but {target_path}: {len(target)}; the XNLI "
            "files of two languages must be line-aligned translations"
        )
    if example_order:
        pairs = dict.fromkeys(pair for p, t in zip(pivot, target, strict=True) for pair in ((p[0], t[0]), (p[1], t[1])))
    else:
        pairs = dict.fromkeys(
            [(p[0], t[0]) for p, t in zip(pivot, target, strict=True)]
            + [(p[1], t[1]) for p, t in zip(pivot, target, strict=True)]
        )
    return list(pairs)[:max_sentences] if max_sentences else list(pairs)


def mean_pooled(encoder, sentences: list[str], batch_size: int, what: str) -> np.ndarray:
    """Mean-pooled wordpiece vectors (no [CLS]/[SEP]) [n, layers, H] of every layer, as float64."""
    vectors, counts = encoder.sentence_vectors(sentences, batch_size, pooling="mean_words", what=what)
    if not counts.all():
        raise ValueError(f"{what}: {int((counts == 0).sum())} sentences have no wordpiece")
    return vectors.astype(np.float64)


def random_encoder(like, seed: int):
    """An encoder with the architecture and tokenizer of `like` (an xling.encode Encoder; its masked-LM class,
    BertForMaskedLM, XLMRobertaForMaskedLM, ...) and freshly initialised weights (HF's initialisation under torch
    seed `seed`): the untrained lower bound of CKA."""
    from xling.encode.encoder import Encoder

    torch.manual_seed(seed)
    model = type(like.model)(like.model.config).to(like.device).eval()
    return Encoder(model, like.tokenizer, like.device, like.dtype, like.max_length, f"random({like.name})")


def cka_table(
    encoders: tuple,
    pairs: list[tuple[str, str]],
    *,
    multilingual=None,
    random_seed: int,
    debiased: bool,
    batch_size: int,
    ci_level: float = DEFAULT_LEVEL,
    ci_seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Linear CKA per layer of the parallel sentences `pairs` (pivot, target): 'monolingual' = the pivot's model on
    the pivot side vs the target's model on the target side; 'multilingual' = one model on both sides (when
    given); 'random' = the pivot's model vs a random encoder of the target's architecture on the target side
    (the lower bound; the paper runs the random encoder on the non-English side only). `multilingual` is one
    encoder, or a (pivot, target) pair of them: an ablated bilingual model's views of the two languages. `cka`
    (and `layer_mean`, its mean over the layers) is the `debiased` estimator's; `cka_debiased` (and
    `layer_mean_debiased`) the debiased one, which the jackknife intervals over the sentences (groups drawn from
    ci_seed, at ci_level) and the paired ones of xling.evaluate.cka_intervals.interval_rows surround (module
    docstring)."""

    def pooled(encoder, side: int, what: str) -> np.ndarray:
        return mean_pooled(encoder, [p[side] for p in pairs], batch_size, what)

    vectors = {
        "pivot": pooled(encoders[0], 0, "pivot sentences"),
        "target": pooled(encoders[1], 1, "target sentences"),
        "random target": pooled(random_encoder(encoders[1], random_seed), 1, "target sentences, random encoder"),
    }
    comparisons = {"monolingual": ("pivot", "target"), "random": ("pivot", "random target")}
    if multilingual is not None:
        sides = multilingual if isinstance(multilingual, tuple) else (multilingual, multilingual)
        vectors["multilingual pivot"] = pooled(sides[0], 0, "pivot sentences, multilingual model")
        vectors["multilingual target"] = pooled(sides[1], 1, "target sentences, multilingual model")
        comparisons["multilingual"] = ("multilingual pivot", "multilingual target")
    rows = [
        {"comparison": comparison, "layer": layer, "cka": value}
        for comparison, (a, b) in comparisons.items()
        for layer, value in enumerate(cka_by_layer(vectors[a], vectors[b], debiased))
    ]
    table = pd.DataFrame(rows).assign(debiased=debiased, n_sentences=len(pairs))
    values = left_out_cka(vectors, comparisons, seed=ci_seed, debiased=True)
    intervals = pd.DataFrame(interval_rows(values, len(pairs), level=ci_level, seed=ci_seed))
    intervals = intervals.rename(columns={"layer_mean": "layer_mean_debiased"}).assign(
        cka_debiased=[float(values[row["comparison"]][0, row["layer"]]) for _, row in intervals.iterrows()]
    )
    table = table.merge(intervals, on=["comparison", "layer"], how="left", validate="one_to_one")
    # the layers' mean of the CKA column itself (the Gram form's estimate differs from it in the last digits)
    return table.assign(layer_mean=table.groupby("comparison")["cka"].transform("mean"))
